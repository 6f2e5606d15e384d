//! The glibc releases this project supports, and what is pinned about each.

use std::fmt;

/// One supported glibc release: a handle into [`PINS`], so it is `Copy` and cheap to compare,
/// and orders oldest first. Only [`Release::parse`] and [`SUPPORTED`] make one, so every
/// release in the program is a supported one.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Release(u8);

/// What is pinned about a release.
struct Pins {
    /// `X.Y`, as in the upstream tag `glibc-X.Y`.
    version: &'static str,
    /// The Debian source package version whose `.orig.tar.xz` is this release.
    debian_version: &'static str,
    /// The git tree id of the release as stored: the upstream tag's tree minus `manual/`
    /// (Debian's orig tarballs drop it for licensing; git imports drop it to agree).
    tree: &'static str,
}

/// Oldest first: a release's handle is its row.
const PINS: [Pins; 6] = [
    Pins {
        version: "2.36",
        debian_version: "2.36-9+deb12u14",
        tree: "a546e5bcde59319e8b4e8b0b003436507fab5cb0",
    },
    Pins {
        version: "2.40",
        debian_version: "2.40-5",
        tree: "3f92bd5eb4b453265b7c61752606c13f4807bc22",
    },
    Pins {
        version: "2.41",
        debian_version: "2.41-12+deb13u5",
        tree: "1eb2ab87021ce79bc0aa92c3bdc7ef13689a09a6",
    },
    Pins {
        version: "2.42",
        debian_version: "2.42-17",
        tree: "753c4a4594f0fb36bf93e334476a885b33f7ad5b",
    },
    Pins {
        version: "2.43",
        debian_version: "2.43-7",
        tree: "1fbcd978e2051d72273231f03b921b1503e0e424",
    },
    Pins {
        version: "2.44",
        debian_version: "2.44-3",
        tree: "1ee46ca3668e9ff3226d5796530d933b2ede128a",
    },
];

/// Every supported release, oldest first.
pub const SUPPORTED: &[Release] = &{
    let mut all = [Release(0); PINS.len()];
    let mut row = 0;
    while row < PINS.len() {
        all[row] = Release(row as u8);
        row += 1;
    }
    all
};

/// Text that names no supported release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedRelease {
    /// What was asked for, without a leading `glibc-`.
    pub asked: String,
}

impl fmt::Display for UnsupportedRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "glibc {} is not a supported release; supported: {}",
            self.asked,
            supported_list()
        )
    }
}

impl std::error::Error for UnsupportedRelease {}

impl Release {
    /// The newest supported release: what commands use when none is named.
    pub fn newest() -> Release {
        *SUPPORTED.last().expect("at least one supported release")
    }

    /// Looks up `X.Y` (a leading `glibc-` is accepted).
    pub fn parse(text: &str) -> Result<Release, UnsupportedRelease> {
        let version = text.strip_prefix("glibc-").unwrap_or(text);
        SUPPORTED
            .iter()
            .copied()
            .find(|r| r.version() == version)
            .ok_or_else(|| UnsupportedRelease {
                asked: version.to_string(),
            })
    }

    fn pins(self) -> &'static Pins {
        &PINS[usize::from(self.0)]
    }

    /// `X.Y`.
    pub fn version(self) -> &'static str {
        self.pins().version
    }

    /// The Debian source package version whose `.orig.tar.xz` is this release.
    pub fn debian_version(self) -> &'static str {
        self.pins().debian_version
    }

    /// The pinned git tree id of the release as stored (the upstream tag minus `manual/`).
    pub fn pinned_tree(self) -> &'static str {
        self.pins().tree
    }

    /// The store's tag for this release, the same name as upstream's.
    pub fn tag(self) -> String {
        format!("glibc-{}", self.version())
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.version())
    }
}

/// As its version: `2.44`, not the row it is.
impl fmt::Debug for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Release({})", self.version())
    }
}

/// A release is written as its version (`"2.44"`) in reports; reading one back accepts only a
/// supported release, so a report of another is an error, not a row.
impl serde::Serialize for Release {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.version())
    }
}

impl<'de> serde::Deserialize<'de> for Release {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Release, D::Error> {
        let text = String::deserialize(deserializer)?;
        Release::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `2.36, 2.40, ...`: every supported release, for error messages.
pub fn supported_list() -> String {
    listed(SUPPORTED)
}

/// `2.41, 2.42`: releases in a sentence.
pub fn listed(releases: &[Release]) -> String {
    releases
        .iter()
        .map(|r| r.version())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_release_lists_supported_ones() {
        let err = Release::parse("2.39").unwrap_err().to_string();
        assert_eq!(
            err,
            "glibc 2.39 is not a supported release; supported: 2.36, 2.40, 2.41, 2.42, 2.43, 2.44"
        );
    }

    #[test]
    fn tag_prefix_is_accepted() {
        assert_eq!(Release::parse("glibc-2.41").unwrap().version(), "2.41");
    }

    #[test]
    fn releases_order_oldest_first_and_the_newest_is_last() {
        let versions: Vec<&str> = SUPPORTED.iter().map(|r| r.version()).collect();
        assert_eq!(versions, ["2.36", "2.40", "2.41", "2.42", "2.43", "2.44"]);
        assert!(SUPPORTED.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Release::newest().version(), "2.44");
    }

    #[test]
    fn every_pin_is_a_tree_id() {
        for release in SUPPORTED {
            let tree = release.pinned_tree();
            assert!(
                tree.len() == 40 && tree.bytes().all(|b| b.is_ascii_hexdigit()),
                "{release}: {tree}"
            );
            assert!(
                release.debian_version().starts_with(release.version()),
                "{release}"
            );
        }
    }

    /// Tables pad it like the text it replaced (`build-glibc list`).
    #[test]
    fn a_release_pads_in_a_table() {
        assert_eq!(format!("[{:<6}]", Release::newest()), "[2.44  ]");
        assert_eq!(
            format!(
                "[{:<8}|{:>9}]",
                crate::Target::X86_64,
                crate::Flavour::Patched
            ),
            "[x86_64  |  patched]"
        );
    }

    #[test]
    fn a_report_of_an_unsupported_release_does_not_read() {
        let read = |text: &str| serde_json::from_str::<Release>(text).map_err(|e| e.to_string());
        assert_eq!(read("\"2.41\""), Ok(Release::parse("2.41").unwrap()));
        assert_eq!(
            serde_json::to_string(&Release::newest()).unwrap(),
            "\"2.44\""
        );
        let err = read("\"2.39\"").unwrap_err();
        assert!(
            err.contains("glibc 2.39 is not a supported release"),
            "{err}"
        );
    }
}
