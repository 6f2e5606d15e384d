//! What the series commands work on: `patches/` (one series per release), the source store
//! the series apply to, and where stopped rebases keep their state.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use git2::Oid;

use crate::cli::Env;
use crate::series::scope::Scope;
use crate::series::{defect, Series, RESOLUTIONS_DIR};
use crate::store::SourceStore;
use crate::util::lock::{self, FileLock};
use crate::util::{durable, paths, staging, together};
use model::{supported, Release};

/// What `patches/<X.Y>` is ([`Workspace::series_entry`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SeriesEntry {
    /// A directory, the series' (whatever it holds).
    Directory,
    /// Nothing.
    Absent,
    /// What no series can be, and why: a symlink (what it points at is not in the repository,
    /// or not where a reviewer reads it) or another kind of file. A defect of the series.
    Unfit(String),
    /// It cannot be looked at (why): a failure, not a finding.
    Unknown(String),
}

/// Everything a rebase touches, injectable so that tests use temp dirs.
pub struct Workspace {
    pub store: SourceStore,
    /// `patches/`: one series directory per release.
    pub patches_dir: PathBuf,
    /// Where interrupted rebases keep their state and work tree: `<rebase_dir>/<X.Y>/`.
    pub rebase_dir: PathBuf,
}

impl Workspace {
    /// The environment's `patches/` and store, and `<cache>/rebase`. Releases the store
    /// lacks are imported when needed.
    pub fn open(env: &Env) -> Result<Workspace> {
        paths::named_patches_dir_exists(&env.patches)?;
        Ok(Workspace::around(env, SourceStore::open(&env.store)?))
    }

    /// Like [`Workspace::open`], but the store is never written and nothing is imported: for
    /// checks and reports (see `store::Access::ReadOnly`).
    pub(crate) fn open_read_only(env: &Env) -> Result<Workspace> {
        paths::named_patches_dir_exists(&env.patches)?;
        Ok(Workspace::around(
            env,
            SourceStore::open_read_only(&env.store)?,
        ))
    }

    fn around(env: &Env, store: SourceStore) -> Workspace {
        Workspace {
            store,
            patches_dir: env.patches.clone(),
            rebase_dir: env.cache.join("rebase"),
        }
    }

    /// Repairs what killed runs left in `patches/` and `patches/resolutions/`: a series and
    /// its records half swapped in (rolled back), a directory moved aside and not put back
    /// (`.old-X.Y`), staging directories of processes that are gone. Returns a sentence per
    /// repair, for the user.
    pub(crate) fn recover(&self) -> Result<Vec<String>> {
        // First: a series and its records being written together are rolled back to their
        // old directories, which the staging cleanup below would otherwise delete.
        let mut said = together::recover(&self.patches_dir)?;
        for (dir, kind) in [
            (self.patches_dir.clone(), "series"),
            (self.patches_dir.join(RESOLUTIONS_DIR), "resolutions"),
        ] {
            let Some(names) = paths::sorted_entry_names(&dir) else {
                continue;
            };
            for name in names {
                let Some(series) = name.strip_prefix(".old-") else {
                    continue;
                };
                // Moved aside by a live writer (between its two renames) is no leftover: the
                // writer holds that release's lock.
                let _held = match Release::parse(series) {
                    Ok(release) => match lock::try_acquire(&self.release_lock_path(release))? {
                        Some(lock) => Some(lock),
                        None => continue,
                    },
                    Err(_) => None,
                };
                said.extend(durable::recover_old(&dir.join(series))?);
            }
            for left in staging::remove_orphans(&dir, kind) {
                said.push(format!(
                    "removed {}, left by an interrupted write (the {kind} in {} are whole)",
                    left.display(),
                    dir.display()
                ));
            }
        }
        Ok(said)
    }

    /// The lock of `patches/<release>/` and of the rebase onto `release`: held for the whole
    /// of every command that writes that series or starts, continues or aborts that rebase
    /// (`rebase-glibc`, `update-release`, `series import`). A second one waits: an `--abort`
    /// while a `--continue` writes would drop the state under it and say patches/ is
    /// unchanged. Released when dropped, or when the process dies.
    pub(crate) fn lock_release(&self, release: Release) -> Result<FileLock> {
        lock::acquire(
            &self.release_lock_path(release),
            &format!(
                "another cargo xtask working on the rebase onto glibc {release} (or its series)"
            ),
        )
    }

    /// The file whose flock is [`Workspace::lock_release`] (beside the rebases' states).
    /// The lock of [`Workspace::lock_release`] if no other command holds it now (`None`
    /// while one does): for recovery, which never touches what a live command is doing.
    pub(crate) fn try_lock_release(&self, release: Release) -> Result<Option<FileLock>> {
        lock::try_acquire(&self.release_lock_path(release))
    }

    fn release_lock_path(&self, release: Release) -> PathBuf {
        self.rebase_dir.join(format!("{}.lock", release.version()))
    }

    /// What the series may change: `patches/scope`.
    pub(crate) fn scope(&self) -> Result<Scope> {
        Scope::load(&self.patches_dir)
    }

    /// Every directory of `patches/` named after a supported release, with a series file
    /// or without (a series that lost its file must not drop out of a check); a symlink is
    /// none ([`Workspace::series_entry`]).
    pub(crate) fn series_dirs(&self) -> Vec<Release> {
        supported()
            .iter()
            .copied()
            .filter(|r| self.series_entry(*r) == SeriesEntry::Directory)
            .collect()
    }

    /// What `patches/<release>` is, as every command that reads a series judges it.
    pub(crate) fn series_entry(&self, release: Release) -> SeriesEntry {
        let dir = self.series_dir(release);
        match std::fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => SeriesEntry::Absent,
            Err(e) => SeriesEntry::Unknown(format!("cannot tell whether it exists: {e}")),
            Ok(meta) if meta.is_dir() => SeriesEntry::Directory,
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&dir)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|e| format!("unreadable: {e}"));
                SeriesEntry::Unfit(format!(
                    "it is a symlink (to {target}): a series lives in a directory of patches/ itself, so that what is checked, built and mailed is what the repository holds; put the directory there in place of the link"
                ))
            }
            Ok(_) => SeriesEntry::Unfit(format!(
                "not a directory: the series of glibc {release} lives in a directory of that name"
            )),
        }
    }

    pub fn series_dir(&self, release: Release) -> PathBuf {
        self.patches_dir.join(release.version())
    }

    /// Supported releases that have a series in `patches/`, oldest first.
    pub fn releases_with_series(&self) -> Vec<Release> {
        supported()
            .iter()
            .copied()
            .filter(|r| {
                self.series_entry(*r) == SeriesEntry::Directory
                    && self
                        .series_dir(*r)
                        .join(crate::series::SERIES_FILE)
                        .is_file()
            })
            .collect()
    }

    /// Directories in `patches/` that are not a supported release (typos, dropped releases),
    /// besides `resolutions/`, `stable/` (the stable branch's resolutions) and `variants/`
    /// (variants of the series, see `sysroot::source::series_for`).
    pub(crate) fn unknown_series_dirs(&self) -> Result<Vec<PathBuf>> {
        // No patches/ at all: the check says so, release by release.
        let Some(entries) = paths::entries_if_exists(&self.patches_dir)? else {
            return Ok(Vec::new());
        };
        let mut stray = Vec::new();
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir()
                && !name.starts_with('.')
                && name != RESOLUTIONS_DIR
                && name != crate::series::STABLE_DIR
                && name != "variants"
                && !supported().iter().any(|r| r.version() == name)
            {
                stray.push(entry.path());
            }
        }
        stray.sort();
        Ok(stray)
    }

    pub fn load_series(&self, release: Release) -> Result<Series> {
        match self.series_entry(release) {
            SeriesEntry::Directory | SeriesEntry::Absent => {}
            SeriesEntry::Unfit(why) => {
                return Err(defect(format!(
                    "{}: {why}",
                    self.series_dir(release).display()
                )))
            }
            SeriesEntry::Unknown(why) => {
                bail!("{}: {why}", self.series_dir(release).display())
            }
        }
        let series = Series::load(&self.series_dir(release))?;
        if series.base != release {
            return Err(defect(format!(
                "{} says it applies to {}, but lives in patches/{release}",
                self.series_dir(release).join("series").display(),
                series.base.tag()
            )));
        }
        Ok(series)
    }

    /// The newest series in `patches/`: the default `--from`.
    pub fn newest_series(&self) -> Result<Series> {
        self.load_series(self.newest_release_with_series()?)
    }

    /// The release of the newest series in `patches/`.
    pub(crate) fn newest_release_with_series(&self) -> Result<Release> {
        match self.releases_with_series().last() {
            Some(release) => Ok(*release),
            None => bail!(
                "no patch series in {}: nothing to rebase",
                self.patches_dir.display()
            ),
        }
    }

    /// The series committed on its release in the store; checks the recorded base tree, and
    /// holds every patch to the rules of [`super::guard`].
    pub fn commit_series(&self, series: &Series) -> Result<(Oid, Vec<Oid>)> {
        let base = self.store.ensure_release(series.base)?;
        let tree = self
            .store
            .repo()
            .find_commit(base)
            .with_context(|| format!("the store's {} is not a commit", series.base.tag()))?
            .tree_id();
        if tree != series.base_tree {
            return Err(defect(format!(
                "the series for glibc {} records base tree {}, but the store's {} has tree {tree}",
                series.base,
                series.base_tree,
                series.base.tag()
            )));
        }
        let commits = series.commit_on(self.store.repo(), base)?;
        let named: Vec<(String, Oid)> = series
            .patches
            .iter()
            .map(|p| p.name.clone())
            .zip(commits.iter().copied())
            .collect();
        super::guard(&self.scope()?, self.store.repo(), &named)?;
        Ok((base, commits))
    }
}
