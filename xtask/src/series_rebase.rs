//! The engine of `cargo xtask rebase-glibc`: commit a series on its release, cherry-pick each
//! commit onto another release with git's 3-way merge, and stop at a conflict the way
//! `git rebase` does, with a work tree to resolve and state to `--continue` from.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository};

use crate::paths;
use crate::release::{Release, SUPPORTED};
use crate::series::Series;
use crate::store::SourceStore;

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

/// What happened to one patch of the source series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Applied as this commit on the target release.
    Applied(Oid),
    /// Its cherry-pick changed nothing: the target release already has it.
    Dropped,
}

/// Where picking stopped.
pub enum Picked {
    Done {
        head: Oid,
    },
    Conflict {
        at: usize,
        head: Oid,
        index: git2::Index,
    },
}

/// Cherry-picks `commits[start..]` onto `head` (3-way merge with each commit's parent as the
/// ancestor), recording a [`Step`] per commit until the first conflict.
pub fn pick(
    repo: &Repository,
    commits: &[Oid],
    start: usize,
    mut head: Oid,
    steps: &mut Vec<Step>,
) -> Result<Picked> {
    for (at, id) in commits.iter().enumerate().skip(start) {
        let commit = repo.find_commit(*id)?;
        let ours = repo.find_commit(head)?;
        let mut index = repo
            .cherrypick_commit(&commit, &ours, 0, None)
            .with_context(|| format!("cannot cherry-pick {id}"))?;
        if index.has_conflicts() {
            return Ok(Picked::Conflict { at, head, index });
        }
        let tree = index
            .write_tree_to(repo)
            .context("cannot write the merged tree")?;
        match commit_like(repo, &commit, head, tree)? {
            Some(new) => {
                head = new;
                steps.push(Step::Applied(new));
            }
            None => steps.push(Step::Dropped),
        }
    }
    Ok(Picked::Done { head })
}

/// Commits `tree` on `parent` with `like`'s author and message (committer = author, so the
/// result is deterministic); `None` if the tree is the parent's (nothing left to change).
pub fn commit_like(
    repo: &Repository,
    like: &git2::Commit<'_>,
    parent: Oid,
    tree: Oid,
) -> Result<Option<Oid>> {
    let parent = repo.find_commit(parent)?;
    if parent.tree_id() == tree {
        return Ok(None);
    }
    let author = like.author();
    let message = like.message().context("commit message is not UTF-8")?;
    let id = repo.commit(
        None,
        &author,
        &author,
        message,
        &repo.find_tree(tree)?,
        &[&parent],
    )?;
    Ok(Some(id))
}

/// The commits that [`Step::Applied`] records, in order.
pub fn applied(steps: &[Step]) -> Vec<Oid> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Applied(id) => Some(*id),
            Step::Dropped => None,
        })
        .collect()
}
