//! The engine of `cargo xtask rebase-glibc`: commit a series on its release, cherry-pick each
//! commit onto another release with git's 3-way merge, and stop at a conflict the way
//! `git rebase` does, with a work tree to resolve and state to `--continue` from.

use std::path::PathBuf;

use anyhow::{Context, Result};
use git2::{Oid, Repository};

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
        let tree = match merge_touched(repo, &commit, head)? {
            Some(tree) => tree,
            None => {
                // The full cherry-pick gives the whole merged index the work tree needs.
                let ours = repo.find_commit(head)?;
                let index = repo
                    .cherrypick_commit(&commit, &ours, 0, Some(&merge_options()))
                    .with_context(|| format!("cannot cherry-pick {id}"))?;
                return Ok(Picked::Conflict { at, head, index });
            }
        };
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

/// The cherry-pick of `commit` onto `head` as a tree, or `None` on conflict.
///
/// Same 3-way merge as `cherrypick_commit` (ancestor = the commit's parent), restricted to
/// the paths the commit touches: every other path is unchanged on the commit's side, so the
/// merge keeps `head`'s version anyway. Merging three small trees instead of three whole
/// glibc trees makes a pick take milliseconds instead of a quarter second.
fn merge_touched(repo: &Repository, commit: &git2::Commit<'_>, head: Oid) -> Result<Option<Oid>> {
    let parent_tree = commit.parent(0)?.tree()?;
    let theirs_tree = commit.tree()?;
    let ours_tree = repo.find_commit(head)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&parent_tree), Some(&theirs_tree), None)?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path() {
                if !paths.iter().any(|p| p == path) {
                    paths.push(path.to_path_buf());
                }
            }
        }
    }
    let empty = repo.find_tree(repo.treebuilder(None)?.write()?)?;
    let reduce = |tree: &git2::Tree<'_>| -> Result<git2::Tree<'_>> {
        let mut update = git2::build::TreeUpdateBuilder::new();
        for path in &paths {
            if let Ok(entry) = tree.get_path(path) {
                update.upsert(path, entry.id(), file_mode(entry.filemode() as u32));
            }
        }
        Ok(repo.find_tree(update.create_updated(repo, &empty)?)?)
    };
    let (ancestor, ours, theirs) = (
        reduce(&parent_tree)?,
        reduce(&ours_tree)?,
        reduce(&theirs_tree)?,
    );
    let index = repo.merge_trees(&ancestor, &ours, &theirs, Some(&merge_options()))?;
    if index.has_conflicts() {
        return Ok(None);
    }
    let mut update = git2::build::TreeUpdateBuilder::new();
    for path in &paths {
        match index.get_path(path, 0) {
            Some(entry) => update.upsert(path, entry.id, file_mode(entry.mode)),
            None => update.remove(path),
        };
    }
    Ok(Some(update.create_updated(repo, &ours_tree)?))
}

/// The tree entry mode of an index or tree entry's raw mode.
pub fn file_mode(mode: u32) -> git2::FileMode {
    match mode {
        0o100755 => git2::FileMode::BlobExecutable,
        0o120000 => git2::FileMode::Link,
        0o160000 => git2::FileMode::Commit,
        0o040000 => git2::FileMode::Tree,
        _ => git2::FileMode::Blob,
    }
}

/// Rename detection would compare every file added and removed between two releases for
/// each patch (seconds per pick); glibc moves files rarely, and a patch on a moved file then
/// shows up as a conflict to resolve by hand, which is the safe failure.
fn merge_options() -> git2::MergeOptions {
    let mut opts = git2::MergeOptions::new();
    opts.find_renames(false);
    opts
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
