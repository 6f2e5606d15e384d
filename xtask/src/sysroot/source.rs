//! The sources a build starts from: a release from the source store, plus the patch series.

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository};
use model::Flavour;

use crate::series::Series;
use crate::store::{worktree, SourceStore};
use model::Release;

/// A resolved build input: which tree and which series, ready to be written out.
pub(crate) struct BuildSource {
    store: SourceStore,
    release: Release,
    commit: Oid,
    /// The git tree id of the release: the store commit's tree, which its import verified.
    pub tree_id: String,
    pub series: Option<Series>,
}

impl BuildSource {
    /// The release from `store`, imported first if it lacks it (a read-only store imports
    /// nothing: a release it lacks is an error), with `series` to apply.
    pub(crate) fn resolve_in(
        store: SourceStore,
        release: Release,
        series: Option<Series>,
    ) -> Result<BuildSource> {
        let commit = store.ensure_release(release)?;
        // The import verified this tree against the pin: for a real release it is the pin.
        let tree_id = store
            .repo()
            .find_commit(commit)
            .context("release commit missing from the store")?
            .tree_id()
            .to_string();
        Ok(BuildSource {
            store,
            release,
            commit,
            tree_id,
            series,
        })
    }

    /// `commit` of `store`'s repository as it is, with no series to apply: a commit that is
    /// no release (it carries the series already, or none). `release` names it.
    pub(crate) fn of_commit(
        store: SourceStore,
        release: Release,
        commit: Oid,
    ) -> Result<BuildSource> {
        let tree_id = store
            .repo()
            .find_commit(commit)
            .with_context(|| format!("commit {commit} cannot be read"))?
            .tree_id()
            .to_string();
        Ok(BuildSource {
            store,
            release,
            commit,
            tree_id,
            series: None,
        })
    }

    pub(crate) fn series_id(&self) -> Option<String> {
        self.series.as_ref().map(Series::content_id)
    }

    pub(crate) fn repo(&self) -> &Repository {
        self.store.repo()
    }

    /// The tree the build's sources must equal: the release with the series committed on top.
    pub(crate) fn source_tree(&self) -> Result<Oid> {
        let repo = self.store.repo();
        let mut head = self.commit;
        if let Some(series) = &self.series {
            let commits = series.commit_on(repo, self.commit).with_context(|| {
                match series.series_text.contains("# variant: ") {
                    // The series itself passed rebase-glibc --check, or its own build would
                    // have said so: what does not apply is most likely the variant on top.
                    true => format!(
                        "the patch series with its variant does not apply to glibc {}; \
                         `cargo xtask rebase-glibc --check` says which part, and how to fix it",
                        self.release
                    ),
                    false => format!(
                        "the patch series does not apply to glibc {}; fix it with \
                         `cargo xtask rebase-glibc --onto {}`",
                        self.release, self.release
                    ),
                }
            })?;
            head = commits.last().copied().unwrap_or(head);
        }
        Ok(repo
            .find_commit(head)
            .context("patched commit missing from the store")?
            .tree_id())
    }

    /// Writes the release with the series applied into the empty directory `dest`.
    pub(crate) fn export(&self, dest: &Path) -> Result<()> {
        worktree::write_tree(self.store.repo(), self.source_tree()?, dest)
            .with_context(|| format!("cannot write the glibc {} sources", self.release))
    }
}

/// `patches/<X.Y>/`, or an error that says how to make it.
pub(crate) fn load_series(patches_dir: &Path, release: Release) -> Result<Series> {
    let dir = patches_dir.join(release.version());
    if !dir.is_dir() {
        bail!(
            "glibc {release} has no patch series ({} does not exist); create it with \
             `cargo xtask rebase-glibc --onto {release}`, or build with --flavour unpatched",
            dir.display()
        );
    }
    let series = Series::load(&dir)
        .with_context(|| format!("cannot load the patch series {}", dir.display()))?;
    if series.base != release {
        bail!(
            "{} is based on glibc {}, not {release}; fix it with \
             `cargo xtask rebase-glibc --onto {release}`",
            dir.display(),
            series.base
        );
    }
    Ok(series)
}

/// The series a flavour builds from: none (unpatched), `patches/<X.Y>/`, its patches that
/// only add tests and the support code they need (tests-only), or for a variant that series
/// followed by `patches/variants/<variant>/<X.Y>/*.patch` in name order. A variant's patches
/// and what tests-only leaves out are part of the series' content id, so their builds get
/// keys of their own.
pub(crate) fn series_for(
    patches_dir: &Path,
    release: Release,
    flavour: Flavour,
) -> Result<Option<Series>> {
    series_on(patches_dir, release, flavour, || {
        load_series(patches_dir, release)
    })
}

/// [`series_for`], with the release's series from `load` (a builder's, read once).
pub(crate) fn series_on(
    patches_dir: &Path,
    release: Release,
    flavour: Flavour,
    load: impl FnOnce() -> Result<Series>,
) -> Result<Option<Series>> {
    if flavour == Flavour::Unpatched {
        return Ok(None);
    }
    let mut series = load()?;
    if flavour == Flavour::TestsOnly {
        crate::series::parts::keep_tests_only(&mut series)?;
        return Ok(Some(series));
    }
    let Some(variant) = flavour.variant() else {
        return Ok(Some(series));
    };
    crate::series::variant::append(&mut series, patches_dir, variant, release)?;
    Ok(Some(series))
}
