//! A release the table has no row for yet, brought in: imported from its source, whatever
//! tree that makes pinned in a new row of data/releases.json (with the Debian version that
//! carries it, where one does), and the row made the process's, so that every step after
//! takes the release as any other. The row is written before the rebase: a run that stops
//! later leaves a supported release without a series, which `rebase-glibc --check` names with
//! the command that makes it (this one again), never a series without a release.

use anyhow::{bail, Result};
use model::{Facts, Release};

use crate::store::import::{self, Source};
use crate::store::SourceStore;
use crate::util::{paths, release_table};

/// What the command line named: a release of the table, or a version it does not hold yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    Supported(Release),
    New(String),
}

/// `X.Y`: a supported release, or any other glibc version (one this command adds).
pub(crate) fn parse_asked(text: &str) -> Result<Asked, String> {
    let version = text.strip_prefix("glibc-").unwrap_or(text);
    if let Ok(release) = Release::parse(version) {
        return Ok(Asked::Supported(release));
    }
    model::version_numbers(version).map_err(|e| e.to_string())?;
    Ok(Asked::New(version.to_string()))
}

/// Imports glibc `version` from `source`, writes its row (its tree as imported, `debian` or
/// the newest Debian version the archive lists when it comes from Debian) and returns it as a
/// supported release.
pub(crate) fn admit(
    store: &SourceStore,
    version: &str,
    source: &Source,
    debian: Option<String>,
) -> Result<Release> {
    let table = release_table::read()?;
    if let Some(newest) = table.rows().last() {
        let (at, last) = (
            model::version_numbers(version)?,
            model::version_numbers(&newest.version)?,
        );
        if at < last {
            diagln!(
                "glibc {version} is older than the newest supported release, {}: adding it all the same",
                newest.version
            );
        }
    }
    let debian = match (debian, source) {
        (Some(named), _) => Some(named),
        (None, Source::Debian) => {
            let found = import::debian::newest_version(version, &paths::downloads_dir()?)?;
            if found.is_none() {
                bail!(
                    "Debian's source index lists no glibc {version}: import it from tarball:<path> or git:<url> (--source), \
                     or name a Debian version with --debian-version"
                );
            }
            found
        }
        (None, _) => None,
    };
    if let Some(debian) = &debian {
        diagln!("glibc {version}: Debian's source package {debian}");
    }
    let stored = store.import_unpinned(version, debian.as_deref(), source)?;
    let facts = Facts {
        version: version.to_string(),
        debian,
        tree: stored.tree.to_string(),
        elf_tests_unpatched: Default::default(),
        hardcoded_path_in_tests: Vec::new(),
        nixpkgs: None,
    };
    let no_debian = facts.debian.is_none();
    release_table::write(&table.with(facts)?)?;
    diagln!(
        "glibc {version} pinned at tree {} in {}{}",
        stored.tree,
        release_table::path().display(),
        if no_debian {
            " (no Debian version: set `debian` in the row once Debian carries the release; the stable-branch check skips it until then)"
        } else {
            ""
        }
    );
    Ok(Release::parse(version)?)
}
