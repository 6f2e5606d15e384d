//! What the series commands work on: `patches/` (one series per release), the source store
//! the series apply to, and where stopped rebases keep their state.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::Oid;

use crate::series::Series;
use crate::store::release::{Release, SUPPORTED};
use crate::store::SourceStore;
use crate::util::paths;

/// Everything a rebase touches, injectable so that tests use temp dirs.
pub struct Workspace {
    pub store: SourceStore,
    /// `patches/`: one series directory per release.
    pub patches_dir: PathBuf,
    /// Where interrupted rebases keep their state and work tree: `<rebase_dir>/<X.Y>/`.
    pub rebase_dir: PathBuf,
}

impl Workspace {
    /// The checkout's `patches/`, the default store, and `<cache>/rebase`.
    pub fn open_default(store: Option<&Path>) -> Result<Workspace> {
        Ok(Workspace {
            store: SourceStore::open_default(store)?,
            patches_dir: paths::patches_dir(),
            rebase_dir: paths::cache_dir()?.join("rebase"),
        })
    }

    pub fn series_dir(&self, release: Release) -> PathBuf {
        self.patches_dir.join(release.version)
    }

    /// Supported releases that have a series in `patches/`, oldest first.
    pub fn releases_with_series(&self) -> Vec<Release> {
        SUPPORTED
            .iter()
            .copied()
            .filter(|r| {
                self.series_dir(*r)
                    .join(crate::series::SERIES_FILE)
                    .is_file()
            })
            .collect()
    }

    /// Directories in `patches/` that are not a supported release (typos, dropped releases).
    pub fn unknown_series_dirs(&self) -> Result<Vec<PathBuf>> {
        let Ok(entries) = std::fs::read_dir(&self.patches_dir) else {
            return Ok(Vec::new());
        };
        let mut stray = Vec::new();
        for entry in entries {
            let entry =
                entry.with_context(|| format!("cannot read {}", self.patches_dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir()
                && !name.starts_with('.')
                && !SUPPORTED.iter().any(|r| r.version == name)
            {
                stray.push(entry.path());
            }
        }
        stray.sort();
        Ok(stray)
    }

    pub fn load_series(&self, release: Release) -> Result<Series> {
        let series = Series::load(&self.series_dir(release))?;
        if series.base.version != release.version {
            bail!(
                "{} says it applies to {}, but lives in patches/{release}",
                self.series_dir(release).join("series").display(),
                series.base.tag()
            );
        }
        Ok(series)
    }

    /// The newest series in `patches/`: the default `--from`.
    pub fn newest_series(&self) -> Result<Series> {
        match self.releases_with_series().last() {
            Some(release) => self.load_series(*release),
            None => bail!(
                "no patch series in {}: nothing to rebase",
                self.patches_dir.display()
            ),
        }
    }

    /// The series committed on its release in the store; checks the recorded base tree.
    pub fn commit_series(&self, series: &Series) -> Result<(Oid, Vec<Oid>)> {
        let base = self.store.ensure_release(series.base)?;
        let tree = self.store.repo().find_commit(base)?.tree_id();
        if tree != series.base_tree {
            bail!(
                "the series for glibc {} records base tree {}, but the store's {} has tree {tree}",
                series.base,
                series.base_tree,
                series.base.tag()
            );
        }
        Ok((base, series.commit_on(self.store.repo(), base)?))
    }
}
