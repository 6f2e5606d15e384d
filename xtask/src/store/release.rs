//! The glibc releases this project supports, and what is pinned about each.

use std::fmt;

use anyhow::{bail, Result};

/// One supported glibc release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Release {
    /// `X.Y`, as in the upstream tag `glibc-X.Y`.
    pub version: &'static str,
    /// The Debian source package version whose `.orig.tar.xz` is this release.
    pub debian_version: &'static str,
    /// The git tree id of the release as stored: the upstream tag's tree minus `manual/`
    /// (Debian's orig tarballs drop it for licensing; git imports drop it to agree).
    pub tree: &'static str,
}

/// Oldest first.
pub const SUPPORTED: &[Release] = &[
    Release {
        version: "2.36",
        debian_version: "2.36-9+deb12u14",
        tree: "a546e5bcde59319e8b4e8b0b003436507fab5cb0",
    },
    Release {
        version: "2.40",
        debian_version: "2.40-5",
        tree: "3f92bd5eb4b453265b7c61752606c13f4807bc22",
    },
    Release {
        version: "2.41",
        debian_version: "2.41-12+deb13u5",
        tree: "1eb2ab87021ce79bc0aa92c3bdc7ef13689a09a6",
    },
    Release {
        version: "2.42",
        debian_version: "2.42-17",
        tree: "753c4a4594f0fb36bf93e334476a885b33f7ad5b",
    },
    Release {
        version: "2.43",
        debian_version: "2.43-7",
        tree: "1fbcd978e2051d72273231f03b921b1503e0e424",
    },
    Release {
        version: "2.44",
        debian_version: "2.44-3",
        tree: "1ee46ca3668e9ff3226d5796530d933b2ede128a",
    },
];

impl Release {
    /// The newest supported release: what commands use when none is named.
    pub fn newest() -> Release {
        *SUPPORTED.last().expect("at least one supported release")
    }

    /// Looks up `X.Y` (a leading `glibc-` is accepted).
    pub fn parse(text: &str) -> Result<Release> {
        let version = text.strip_prefix("glibc-").unwrap_or(text);
        match SUPPORTED.iter().find(|r| r.version == version) {
            Some(release) => Ok(*release),
            None => bail!(
                "glibc {version} is not a supported release; supported: {}",
                supported_list()
            ),
        }
    }

    /// The store's tag for this release, the same name as upstream's.
    pub fn tag(&self) -> String {
        format!("glibc-{}", self.version)
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version)
    }
}

/// A release is written as its version (`"2.44"`) in reports; reading one back accepts only a
/// supported release, so a report of another is an error, not a row.
impl serde::Serialize for Release {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.version)
    }
}

impl<'de> serde::Deserialize<'de> for Release {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Release, D::Error> {
        let text = String::deserialize(deserializer)?;
        Release::parse(&text).map_err(|err| serde::de::Error::custom(format!("{err:#}")))
    }
}

impl Release {
    /// Where the release stands among the supported ones, oldest first: the order of tables
    /// (one that is not supported, which only tests make, comes last).
    pub fn position(self) -> usize {
        SUPPORTED
            .iter()
            .position(|r| *r == self)
            .unwrap_or(usize::MAX)
    }
}

/// `2.36, 2.40, ...` for error messages.
pub fn supported_list() -> String {
    SUPPORTED
        .iter()
        .map(|r| r.version)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `X.Y` or `all` into the releases it names.
pub fn parse_selection(text: &str) -> Result<Vec<Release>> {
    if text == "all" {
        return Ok(SUPPORTED.to_vec());
    }
    Ok(vec![Release::parse(text)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_release_lists_supported_ones() {
        let err = Release::parse("2.39").unwrap_err().to_string();
        assert!(err.contains("2.36, 2.40, 2.41, 2.42, 2.43, 2.44"), "{err}");
    }

    #[test]
    fn tag_prefix_is_accepted() {
        assert_eq!(Release::parse("glibc-2.41").unwrap().version, "2.41");
    }
}
