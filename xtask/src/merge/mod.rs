//! The 3-way apply engine, neutral between the stages that use it: cherry-pick a commit of a
//! series onto another release with git's 3-way merge (NEWS entries placed by rule, see
//! [`news`]), stopping at the first conflict. `rebase-glibc` builds its rebase on it (recorded
//! resolutions, checks, a work tree to resolve); `series status` asks it whether the newest
//! series would merge; the bench times it. It knows git and NEWS, and no stage.

pub mod news;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git2::{Oid, Repository};

/// What happened to one patch of the source series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchFate {
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

/// Cherry-picks `commits[start..]` onto `head` ([`merge_commit`]), recording a [`PatchFate`] per
/// commit until the first conflict. Nothing else: no recorded resolution, no check (the
/// rebase itself does those; this is what `series status` and the bench need).
pub fn pick(
    repo: &Repository,
    commits: &[Oid],
    start: usize,
    mut head: Oid,
    steps: &mut Vec<PatchFate>,
) -> Result<Picked> {
    for (at, id) in commits.iter().enumerate().skip(start) {
        let commit = repo
            .find_commit(*id)
            .with_context(|| format!("commit {id} of the series is missing from the store"))?;
        let tree = match merge_commit(repo, &commit, head)? {
            Merged::Clean(tree) => tree,
            Merged::Conflict(index) => return Ok(Picked::Conflict { at, head, index }),
        };
        match commit_like(repo, &commit, head, tree)? {
            Some(new) => {
                head = new;
                steps.push(PatchFate::Applied(new));
            }
            None => steps.push(PatchFate::Dropped),
        }
    }
    Ok(Picked::Done { head })
}

/// How one commit merged onto a head.
pub(crate) enum Merged {
    /// Every path merged: the resulting tree.
    Clean(Oid),
    /// Some path conflicts: the whole merged index, conflicts included (what the work tree
    /// is written from).
    Conflict(git2::Index),
}

/// The cherry-pick of `commit` onto `head`.
///
/// A commit that adds one entry to NEWS and changes NEWS in no other way gets its entry
/// placed by rule ([`news::place`]) into `head`'s NEWS instead of merged: every release
/// rewrites the lines around the entry, so a merge would conflict on every rebase although
/// nothing about the entry changed. Every other path, and NEWS changed any other way, is
/// merged the usual way.
pub(crate) fn merge_commit(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    head: Oid,
) -> Result<Merged> {
    let placed = placed_news(repo, commit, head)?;
    let skip = placed.map(|_| Path::new(news::PATH));
    if let Some(tree) = merge_touched(repo, commit, head, skip)
        .with_context(|| format!("cannot merge {} onto {head}", commit.id()))?
    {
        let Some((blob, mode)) = placed else {
            return Ok(Merged::Clean(tree));
        };
        let mut update = git2::build::TreeUpdateBuilder::new();
        update.upsert(news::PATH, blob, file_mode(mode));
        let tree = repo
            .find_tree(tree)
            .context("a merged tree is missing from the store")?;
        return Ok(Merged::Clean(
            update
                .create_updated(repo, &tree)
                .context("cannot put the placed NEWS into the merged tree")?,
        ));
    }
    // The full cherry-pick gives the whole merged index the work tree needs.
    let ours = repo
        .find_commit(head)
        .context("the commit being picked onto is missing from the store")?;
    let mut index = repo
        .cherrypick_commit(commit, &ours, 0, Some(&merge_options()))
        .with_context(|| format!("cannot cherry-pick {}", commit.id()))?;
    if let Some((blob, mode)) = placed {
        settle_in_index(&mut index, news::PATH, blob, mode)?;
    }
    Ok(Merged::Conflict(index))
}

/// Whether `commit` adds one NEWS entry and changes NEWS in no other way: the commits whose
/// NEWS [`merge_commit`] places by rule.
pub(crate) fn adds_news_entry(repo: &Repository, commit: &git2::Commit<'_>) -> Result<bool> {
    Ok(news_entry(repo, commit)?.is_some())
}

/// The entry `commit` adds to NEWS, when that is all it does there.
fn news_entry(repo: &Repository, commit: &git2::Commit<'_>) -> Result<Option<String>> {
    let parent = commit
        .parent(0)
        .with_context(|| format!("commit {} has no parent", commit.id()))?;
    let parent_tree = parent
        .tree()
        .context("cannot read a parent commit's tree")?;
    let tree = commit.tree().context("cannot read a commit's tree")?;
    let (Some((before, _)), Some((after, _))) = (
        text_at(repo, &parent_tree, news::PATH)?,
        text_at(repo, &tree, news::PATH)?,
    ) else {
        return Ok(None);
    };
    // Any other edit of NEWS is merged: only one whole inserted block is an entry.
    Ok(news::entry_added(&before, &after).ok().flatten())
}

/// `head`'s NEWS with `commit`'s entry placed by rule, stored as a blob, and its mode; `None`
/// when the rule does not apply (see [`merge_commit`]).
fn placed_news(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    head: Oid,
) -> Result<Option<(Oid, u32)>> {
    let Some(entry) = news_entry(repo, commit)? else {
        return Ok(None);
    };
    let ours = repo
        .find_commit(head)
        .and_then(|c| c.tree())
        .context("the tree being picked onto is missing from the store")?;
    let Some((text, mode)) = text_at(repo, &ours, news::PATH)? else {
        return Ok(None);
    };
    // A NEWS without a version section has no place for the entry: merged the usual way.
    let Ok(placed) = news::place(&text, &entry) else {
        return Ok(None);
    };
    let blob = repo
        .blob(placed.as_bytes())
        .context("cannot store the placed NEWS")?;
    Ok(Some((blob, mode)))
}

/// The UTF-8 text of `path` in `tree` and its mode; `None` if absent or not UTF-8.
fn text_at(repo: &Repository, tree: &git2::Tree<'_>, path: &str) -> Result<Option<(String, u32)>> {
    let Ok(entry) = tree.get_path(Path::new(path)) else {
        return Ok(None);
    };
    let blob = repo
        .find_blob(entry.id())
        .with_context(|| format!("the blob of {path} is missing from the store"))?;
    Ok(String::from_utf8(blob.content().to_vec())
        .ok()
        .map(|text| (text, entry.filemode() as u32)))
}

/// Makes `path` merged in `index`, as blob `id`: its conflict stages go.
pub(crate) fn settle_in_index(
    index: &mut git2::Index,
    path: &str,
    id: Oid,
    mode: u32,
) -> Result<()> {
    match index.conflict_remove(Path::new(path)) {
        Ok(()) => {}
        Err(e) if e.code() == git2::ErrorCode::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot settle {path} in the merge")),
    }
    let entry = git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        // The low 12 bits hold the path length; stage 0.
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    };
    index
        .add(&entry)
        .with_context(|| format!("cannot settle {path} in the merge"))
}

/// The cherry-pick of `commit` onto `head` as a tree, or `None` on conflict. `skip` is a path
/// left out of the merge (the caller sets it).
///
/// Same 3-way merge as `cherrypick_commit` (ancestor = the commit's parent), restricted to
/// the paths the commit touches: every other path is unchanged on the commit's side, so the
/// merge keeps `head`'s version anyway. Merging three small trees instead of three whole
/// glibc trees makes a pick take milliseconds instead of a quarter second.
fn merge_touched(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    head: Oid,
    skip: Option<&Path>,
) -> Result<Option<Oid>> {
    let parent_tree = commit.parent(0)?.tree()?;
    let theirs_tree = commit.tree()?;
    let ours_tree = repo.find_commit(head)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&parent_tree), Some(&theirs_tree), None)?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path() {
                if Some(path) != skip && !paths.iter().any(|p| p == path) {
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
pub(crate) fn file_mode(mode: u32) -> git2::FileMode {
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
    let parent = repo
        .find_commit(parent)
        .context("the commit to pick onto is missing from the store")?;
    if parent.tree_id() == tree {
        return Ok(None);
    }
    let author = like.author();
    let message = like.message().context("commit message is not UTF-8")?;
    let id = repo
        .commit(
            None,
            &author,
            &author,
            message,
            &repo
                .find_tree(tree)
                .context("the tree to commit is missing from the store")?,
            &[&parent],
        )
        .context("cannot write a rebased commit into the store")?;
    Ok(Some(id))
}

/// The commits that [`PatchFate::Applied`] records, in order.
pub(crate) fn applied(steps: &[PatchFate]) -> Vec<Oid> {
    steps
        .iter()
        .filter_map(|s| match s {
            PatchFate::Applied(id) => Some(*id),
            PatchFate::Dropped => None,
        })
        .collect()
}
