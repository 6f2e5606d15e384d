//! The glibc releases this project supports, and the facts kept about each: one row per
//! release in `data/releases.json` ([`TABLE_PATH`]), read by [`Table`], the file's one reader
//! and writer. Adding a release is adding a row (`cargo xtask update-release X.Y` writes it);
//! no code names a release.
//!
//! A [`Release`] is a handle, its version's two numbers, so it is `Copy`, cheap to compare and
//! orders oldest first; only [`Release::parse`] and [`supported`] make one, so every release
//! in the program is one the table holds. The process's table is the one this crate was built
//! with (cargo rebuilds it when the file changes), unless the program installs another
//! ([`install`]): `cargo xtask` installs the checkout's file before it reads its command line,
//! and the commands that add or retire a row install the table they wrote, so that the steps
//! after the write see the release as the file now says.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use crate::Target;

/// The table's file, relative to the workspace root.
pub const TABLE_PATH: &str = "data/releases.json";

/// The table as this crate was built (see the module docs).
const BUILT_WITH: &str = include_str!("../../data/releases.json");

/// One supported glibc release.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Release {
    major: u8,
    minor: u8,
}

/// What is kept about a release: one row of the table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    /// `X.Y`, as in the upstream tag `glibc-X.Y`.
    pub version: String,
    /// The Debian source package version whose `.orig.tar.xz` is this release, and whose
    /// `debian/patches` are the stable branch the series is also checked on. Absent for a
    /// release Debian does not carry yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian: Option<String>,
    /// The git tree id of the release as stored: the upstream tag's tree minus `manual/`
    /// (Debian's orig tarballs drop it for licensing; git imports drop it to agree). An import
    /// that makes another tree is refused.
    pub tree: String,
    /// How many tests the unpatched tree's `make check subdirs=elf` lists, per target, as the
    /// release's first verified run counted them: a record of a cell that lists far fewer was
    /// cut short, whatever its other figures say. Absent until that run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub elf_tests_unpatched: BTreeMap<Target, usize>,
    /// The targets whose cell of this release also verifies the series in glibc's
    /// `--enable-hardcoded-path-in-tests` configuration (its elf suite and the series' tests
    /// built that way: as much again as the cell's own builds and suites, so one cell or a
    /// few, chosen, not every one). A cell's record is held to exactly what its row declares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hardcoded_path_in_tests: Vec<Target>,
    /// The nixpkgs commit whose glibc is this release, where nixpkgs has one (`cargo xtask
    /// nix-stack` applies the series on top of its patches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nixpkgs: Option<NixpkgsPin>,
}

/// A nixpkgs commit whose glibc is the row's release.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NixpkgsPin {
    /// The commit (40 hex digits) of NixOS/nixpkgs at which its glibc files were read.
    pub commit: String,
    /// What the pin stands for (the channel, where known).
    pub what: String,
}

/// The whole file: the rows, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    releases: Vec<Facts>,
}

/// A table that cannot be read or would not be one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError(pub String);

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TableError {}

impl Table {
    /// Reads the file's text: JSON as [`Table::render`] writes it, every row checked.
    pub fn parse(text: &str) -> Result<Table, TableError> {
        let table: Table =
            serde_json::from_str(text).map_err(|e| TableError(format!("not a table: {e}")))?;
        table.checked()
    }

    /// The table this crate was built with.
    pub fn built_with() -> Table {
        Table::parse(BUILT_WITH)
            .unwrap_or_else(|e| panic!("{TABLE_PATH} as built into this program: {e}"))
    }

    /// The file's text: what [`Table::parse`] reads, one field a line.
    pub fn render(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a table serialises");
        text.push('\n');
        text
    }

    /// The rows, oldest first.
    pub fn rows(&self) -> &[Facts] {
        &self.releases
    }

    /// The row of `version`.
    pub fn row(&self, version: &str) -> Option<&Facts> {
        self.releases.iter().find(|r| r.version == version)
    }

    /// The table with `facts` in place of the row of its version, or added where its version
    /// goes.
    pub fn with(&self, facts: Facts) -> Result<Table, TableError> {
        let mut releases: Vec<Facts> = self
            .releases
            .iter()
            .filter(|r| r.version != facts.version)
            .cloned()
            .collect();
        let at = version_numbers(&facts.version)?;
        let position = releases
            .iter()
            .position(|r| version_numbers(&r.version).is_ok_and(|n| n > at))
            .unwrap_or(releases.len());
        releases.insert(position, facts);
        Table { releases }.checked()
    }

    /// The table without the row of `version` (a retired release).
    pub fn without(&self, version: &str) -> Result<Table, TableError> {
        if self.row(version).is_none() {
            return Err(TableError(format!("glibc {version} has no row")));
        }
        let releases = self
            .releases
            .iter()
            .filter(|r| r.version != version)
            .cloned()
            .collect();
        Table { releases }.checked()
    }

    fn checked(self) -> Result<Table, TableError> {
        if self.releases.is_empty() {
            return Err(TableError(
                "no release: a table has one row at least".into(),
            ));
        }
        let mut last: Option<(u8, u8)> = None;
        for row in &self.releases {
            let bad = |what: String| TableError(format!("the row of {}: {what}", row.version));
            let at = version_numbers(&row.version)?;
            if last.is_some_and(|l| l >= at) {
                return Err(bad("rows go oldest first, each release once".into()));
            }
            last = Some(at);
            if let Some(debian) = &row.debian {
                if !debian.starts_with(&format!("{}-", row.version)) {
                    return Err(bad(format!(
                        "the Debian version {debian} is not one of glibc {} (`{}-N`)",
                        row.version, row.version
                    )));
                }
            }
            if !is_object_id(&row.tree) {
                return Err(bad(format!("the tree {} is not a git object id", row.tree)));
            }
            if let Some((target, _)) = row.elf_tests_unpatched.iter().find(|(_, n)| **n == 0) {
                return Err(bad(format!("{target} lists no elf test")));
            }
            let declared = &row.hardcoded_path_in_tests;
            if declared.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad(
                    "hardcoded_path_in_tests lists each target once, in the targets' order".into(),
                ));
            }
            if let Some(pin) = &row.nixpkgs {
                if !is_object_id(&pin.commit) {
                    return Err(bad(format!(
                        "the nixpkgs commit {} is not a git object id",
                        pin.commit
                    )));
                }
            }
        }
        Ok(self)
    }
}

/// 40 lower-case hex digits.
fn is_object_id(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `X.Y`'s two numbers, written as glibc writes them (no leading zero, no sign): the order of
/// releases.
pub fn version_numbers(version: &str) -> Result<(u8, u8), TableError> {
    let number = |part: &str| {
        let plain = !part.is_empty()
            && part.bytes().all(|b| b.is_ascii_digit())
            && (part == "0" || !part.starts_with('0'));
        plain.then(|| part.parse::<u8>().ok()).flatten()
    };
    version
        .split_once('.')
        .and_then(|(major, minor)| Some((number(major)?, number(minor)?)))
        .ok_or_else(|| TableError(format!("`{version}` is not a glibc version (`X.Y`)")))
}

/// The process's releases: every row it has seen (kept, so that a handle of a release retired
/// meanwhile still names its facts), and those its table holds now.
struct Registry {
    seen: Vec<&'static Facts>,
    supported: &'static [Release],
}

impl Registry {
    /// The registry of `table`, after the rows of `seen`.
    fn of(table: &Table, mut seen: Vec<&'static Facts>) -> Registry {
        let mut supported = Vec::new();
        for row in table.rows() {
            let (major, minor) = version_numbers(&row.version).expect("a checked table");
            if !seen.contains(&row) {
                // A handful of rows per process, each leaked once: a handle's facts live as
                // long as the handle.
                seen.push(Box::leak(Box::new(row.clone())));
            }
            supported.push(Release { major, minor });
        }
        Registry {
            seen,
            supported: Box::leak(supported.into_boxed_slice()),
        }
    }

    /// The release's row: the newest seen of its version.
    fn facts(&self, release: Release) -> &'static Facts {
        self.seen
            .iter()
            .rev()
            .copied()
            .find(|f| version_numbers(&f.version) == Ok((release.major, release.minor)))
            .expect("a release is made from a row")
    }
}

static REGISTRY: RwLock<Option<Registry>> = RwLock::new(None);

fn with_registry<T>(read: impl FnOnce(&Registry) -> T) -> T {
    {
        let guard = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(registry) = guard.as_ref() {
            return read(registry);
        }
    }
    let mut guard = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    let registry = guard.get_or_insert_with(|| Registry::of(&Table::built_with(), Vec::new()));
    read(registry)
}

/// Makes `table` the process's: its rows are the supported releases from now on (see the
/// module docs). Handles made before keep their facts.
pub fn install(table: &Table) {
    let mut guard = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
    let seen = guard.take().map(|r| r.seen).unwrap_or_default();
    *guard = Some(Registry::of(table, seen));
}

/// Every supported release, oldest first.
pub fn supported() -> &'static [Release] {
    with_registry(|r| r.supported)
}

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
        *supported().last().expect("a table has one row at least")
    }

    /// Looks up `X.Y` (a leading `glibc-` is accepted).
    pub fn parse(text: &str) -> Result<Release, UnsupportedRelease> {
        let version = text.strip_prefix("glibc-").unwrap_or(text);
        supported()
            .iter()
            .copied()
            .find(|r| r.version() == version)
            .ok_or_else(|| UnsupportedRelease {
                asked: version.to_string(),
            })
    }

    /// The release's row: the newest the process has seen of its version.
    pub fn facts(self) -> &'static Facts {
        with_registry(|r| r.facts(self))
    }

    /// `X.Y`.
    pub fn version(self) -> &'static str {
        &self.facts().version
    }

    /// The Debian source package version whose `.orig.tar.xz` is this release, where Debian
    /// carries it.
    pub fn debian_version(self) -> Option<&'static str> {
        self.facts().debian.as_deref()
    }

    /// The pinned git tree id of the release as stored (the upstream tag minus `manual/`).
    pub fn pinned_tree(self) -> &'static str {
        &self.facts().tree
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

/// As its version: `Release(2.44)`, not its numbers.
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
    listed(supported())
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

    /// The versions of the table this crate was built with, oldest first.
    fn built_versions() -> Vec<String> {
        Table::built_with()
            .rows()
            .iter()
            .map(|r| r.version.clone())
            .collect()
    }

    #[test]
    fn unknown_release_lists_supported_ones() {
        let err = Release::parse("2.39").unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "glibc 2.39 is not a supported release; supported: {}",
                built_versions().join(", ")
            )
        );
    }

    #[test]
    fn tag_prefix_is_accepted() {
        let newest = built_versions().pop().unwrap();
        assert_eq!(
            Release::parse(&format!("glibc-{newest}"))
                .unwrap()
                .version(),
            newest
        );
    }

    #[test]
    fn releases_order_oldest_first_and_the_newest_is_the_last_row() {
        let versions: Vec<&str> = supported().iter().map(|r| r.version()).collect();
        assert_eq!(versions, built_versions());
        assert!(supported().windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            Release::newest().version(),
            built_versions().last().unwrap()
        );
    }

    /// The file as committed is what the writer writes: an update's diff is its row alone.
    #[test]
    fn the_file_is_in_the_form_the_writer_writes() {
        assert_eq!(Table::built_with().render(), BUILT_WITH);
    }

    fn row(version: &str) -> Facts {
        Facts {
            version: version.into(),
            debian: Some(format!("{version}-1")),
            tree: "0123456789abcdef0123456789abcdef01234567".into(),
            elf_tests_unpatched: BTreeMap::new(),
            hardcoded_path_in_tests: Vec::new(),
            nixpkgs: None,
        }
    }

    /// Version numbers order the rows, not their text ("2.100" is newer than "2.99").
    #[test]
    fn a_row_goes_where_its_version_does() {
        let table = Table::parse(
            &Table {
                releases: vec![row("2.9"), row("2.99")],
            }
            .render(),
        )
        .unwrap();
        let versions =
            |t: &Table| -> Vec<String> { t.rows().iter().map(|r| r.version.clone()).collect() };
        assert_eq!(
            versions(&table.with(row("2.100")).unwrap()),
            ["2.9", "2.99", "2.100"]
        );
        assert_eq!(
            versions(&table.with(row("2.10")).unwrap()),
            ["2.9", "2.10", "2.99"]
        );
        let mut replaced = row("2.9");
        replaced.debian = Some("2.9-7".into());
        let table = table.with(replaced).unwrap();
        assert_eq!(versions(&table), ["2.9", "2.99"]);
        assert_eq!(table.row("2.9").unwrap().debian.as_deref(), Some("2.9-7"));
        assert_eq!(versions(&table.without("2.9").unwrap()), ["2.99"]);
        assert!(table.without("2.8").is_err());
    }

    /// Each way a row can be wrong is refused with the row and the field named.
    #[test]
    fn a_bad_row_is_refused_naming_it() {
        let refused = |releases: Vec<Facts>| Table { releases }.checked().unwrap_err().0;
        assert_eq!(
            refused(vec![row("2.41"), row("2.40")]),
            "the row of 2.40: rows go oldest first, each release once"
        );
        assert_eq!(
            refused(vec![row("2.41"), row("2.41")]),
            "the row of 2.41: rows go oldest first, each release once"
        );
        assert_eq!(
            refused(vec![row("2.041")]),
            "`2.041` is not a glibc version (`X.Y`)"
        );
        assert_eq!(
            refused(vec![row("2.45a")]),
            "`2.45a` is not a glibc version (`X.Y`)"
        );
        let mut debian = row("2.45");
        debian.debian = Some("2.44-3".into());
        assert_eq!(
            refused(vec![debian]),
            "the row of 2.45: the Debian version 2.44-3 is not one of glibc 2.45 (`2.45-N`)"
        );
        let mut tree = row("2.45");
        tree.tree = "1ee46ca".into();
        assert_eq!(
            refused(vec![tree]),
            "the row of 2.45: the tree 1ee46ca is not a git object id"
        );
        let mut count = row("2.45");
        count.elf_tests_unpatched.insert(Target::Aarch64, 0);
        assert_eq!(
            refused(vec![count]),
            "the row of 2.45: aarch64 lists no elf test"
        );
        assert_eq!(refused(vec![]), "no release: a table has one row at least");
        let unknown = Table::parse(r#"{"releases": [{"version": "2.45", "debain": "2.45-1"}]}"#);
        assert!(unknown.unwrap_err().0.contains("unknown field `debain`"));
    }

    /// A table installed over another supports its rows alone, and a handle made before a
    /// retirement still names its facts (on a registry of the test's own: the process's is
    /// shared by the tests running beside this one).
    #[test]
    fn an_installed_table_replaces_the_supported_releases() {
        let old = Table {
            releases: vec![row("2.43"), row("2.44")],
        };
        let registry = Registry::of(&old, Vec::new());
        let mut newer = row("2.44");
        newer.debian = Some("2.44-9".into());
        let new = old
            .without("2.43")
            .unwrap()
            .with(newer)
            .unwrap()
            .with(row("2.45"))
            .unwrap();
        let before = registry.supported;
        let registry = Registry::of(&new, registry.seen);
        let versions: Vec<&str> = registry
            .supported
            .iter()
            .map(|r| registry.facts(*r).version.as_str())
            .collect();
        assert_eq!(versions, ["2.44", "2.45"]);
        assert_eq!(registry.facts(before[0]).version, "2.43");
        assert_eq!(registry.facts(before[1]).debian.as_deref(), Some("2.44-9"));
        assert!(registry.supported[1] > before[1]);
    }

    #[test]
    fn every_pin_is_a_tree_id() {
        for release in supported() {
            assert!(is_object_id(release.pinned_tree()), "{release}");
            // A release Debian does not carry yet has none.
            let debian = release.debian_version();
            assert!(
                debian.is_none_or(|d| d.starts_with(&format!("{release}-"))),
                "{release}: {debian:?}"
            );
        }
    }

    /// Tables pad it like the text it replaced (`sysroot list`).
    #[test]
    fn a_release_pads_in_a_table() {
        let newest = Release::newest().version();
        assert_eq!(
            format!("[{:<6}]", Release::newest()),
            format!("[{newest:<6}]")
        );
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
        let newest = Release::newest();
        assert_eq!(read(&format!("\"{newest}\"")), Ok(newest));
        assert_eq!(
            serde_json::to_string(&newest).unwrap(),
            format!("\"{newest}\"")
        );
        let err = read("\"2.39\"").unwrap_err();
        assert!(
            err.contains("glibc 2.39 is not a supported release"),
            "{err}"
        );
    }
}
