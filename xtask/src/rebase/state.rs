//! A rebase stopped at a conflict: `<rebase_dir>/<X.Y>/` holds `state` (where it stopped),
//! `from/` (a copy of the series being moved) and `tree/` (the target release with the
//! patches so far, and conflict markers in the files the next patch could not merge).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Index, IndexEntry, MergeFileOptions, Oid, Repository};

use crate::rebase::engine::Step;
use crate::series::Series;
use crate::series::Workspace;
use crate::store::release::Release;
use crate::store::worktree;

pub struct RebaseState {
    pub onto: Release,
    /// The target-release commit the conflicting patch is being picked onto.
    pub head: Oid,
    /// Index of the conflicting patch in the source series.
    pub at: usize,
    /// What happened to the patches before it.
    pub steps: Vec<Step>,
    /// Paths that had conflicts when the rebase stopped.
    pub conflicts: Vec<String>,
}

/// One conflicting file: its path and each conflict region, with its first line number.
pub struct ConflictFile {
    pub path: String,
    pub hunks: Vec<(usize, String)>,
}

pub fn state_dir(ws: &Workspace, onto: Release) -> PathBuf {
    ws.rebase_dir.join(onto.version)
}

pub fn tree_dir(ws: &Workspace, onto: Release) -> PathBuf {
    state_dir(ws, onto).join("tree")
}

/// Target releases with a rebase in progress.
pub fn in_progress(ws: &Workspace) -> Vec<Release> {
    crate::store::release::SUPPORTED
        .iter()
        .copied()
        .filter(|r| state_dir(ws, *r).join("state").is_file())
        .collect()
}

impl RebaseState {
    /// Writes state, series copy and conflict work tree into a temp dir, then renames it
    /// into place: the state either exists whole or not at all.
    pub fn save(
        &self,
        ws: &Workspace,
        from: &Series,
        index: &Index,
        labels: (&str, &str),
    ) -> Result<Vec<ConflictFile>> {
        std::fs::create_dir_all(&ws.rebase_dir)
            .with_context(|| format!("cannot create {}", ws.rebase_dir.display()))?;
        let staging = crate::util::staging::tempdir_in(&ws.rebase_dir, "rebase")?;
        from.write(&staging.path().join("from"))?;
        let conflicts =
            write_conflict_tree(ws.store.repo(), index, &staging.path().join("tree"), labels)?;
        let mut text = format!(
            "onto {}\nhead {}\nat {}\n",
            self.onto.version, self.head, self.at
        );
        for c in &conflicts {
            text.push_str(&format!("conflict {}\n", c.path));
        }
        for step in &self.steps {
            match step {
                Step::Applied(id) => text.push_str(&format!("step applied {id}\n")),
                Step::Dropped => text.push_str("step dropped\n"),
            }
        }
        std::fs::write(staging.path().join("state"), text)
            .context("cannot write the rebase state")?;
        let dest = state_dir(ws, self.onto);
        remove(&dest)?;
        std::fs::rename(staging.keep(), &dest)
            .with_context(|| format!("cannot move the rebase state to {}", dest.display()))?;
        Ok(conflicts)
    }

    pub fn load(ws: &Workspace, onto: Release) -> Result<(RebaseState, Series)> {
        let dir = state_dir(ws, onto);
        let path = dir.join("state");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no rebase onto glibc {onto} in progress ({} missing)",
                path.display()
            )
        })?;
        let mut state = RebaseState {
            onto,
            head: Oid::zero(),
            at: 0,
            steps: Vec::new(),
            conflicts: Vec::new(),
        };
        for line in text.lines() {
            let (key, value) = line.split_once(' ').context("malformed rebase state")?;
            match key {
                "onto" => {}
                "head" => state.head = Oid::from_str(value)?,
                "at" => state.at = value.parse()?,
                "conflict" => state.conflicts.push(value.to_string()),
                "step" if value == "dropped" => state.steps.push(Step::Dropped),
                "step" => state.steps.push(Step::Applied(Oid::from_str(
                    value
                        .strip_prefix("applied ")
                        .context("malformed rebase step")?,
                )?)),
                _ => bail!("malformed rebase state line `{line}` in {}", path.display()),
            }
        }
        let from = Series::load(&dir.join("from"))?;
        Ok((state, from))
    }

    /// Conflicting files that still hold conflict markers.
    pub fn unresolved(&self, tree: &Path) -> Vec<String> {
        self.conflicts
            .iter()
            .filter(|p| {
                std::fs::read(tree.join(p))
                    .map(|bytes| has_markers(&bytes))
                    .unwrap_or(false)
            })
            .cloned()
            .collect()
    }
}

pub fn remove(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    Ok(())
}

fn has_markers(bytes: &[u8]) -> bool {
    bytes.split(|b| *b == b'\n').any(|line| {
        line.starts_with(b"<<<<<<< ")
            || line.starts_with(b">>>>>>> ")
            || line.starts_with(b"||||||| ")
    })
}

/// Writes the merged index into `dest`: merged files as they are, conflicting files with
/// diff3-style markers (ours = the target release so far, theirs = the patch).
fn write_conflict_tree(
    repo: &Repository,
    index: &Index,
    dest: &Path,
    (ours, theirs): (&str, &str),
) -> Result<Vec<ConflictFile>> {
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    for entry in index.iter() {
        if (entry.flags >> 12) & 3 != 0 {
            continue;
        }
        let path = dest.join(std::ffi::OsStr::from_bytes(&entry.path));
        write_blob(repo, &path, entry.id, entry.mode)?;
    }
    let mut files = Vec::new();
    for conflict in index.conflicts()? {
        let conflict = conflict?;
        let any = conflict
            .our
            .as_ref()
            .or(conflict.their.as_ref())
            .or(conflict.ancestor.as_ref())
            .context("empty conflict")?;
        let rel = String::from_utf8_lossy(&any.path).into_owned();
        let path = dest.join(&rel);
        let hunks = match (&conflict.ancestor, &conflict.our, &conflict.their) {
            (Some(base), Some(our), Some(their)) => {
                let mut opts = MergeFileOptions::new();
                opts.ancestor_label("original release")
                    .our_label(ours)
                    .their_label(theirs)
                    .style_diff3(true);
                let merged = repo.merge_file_from_index(base, our, their, Some(&mut opts))?;
                write_file(&path, merged.content(), our.mode)?;
                marker_hunks(merged.content())
            }
            (_, our, their) => {
                let kept: &IndexEntry = our
                    .as_ref()
                    .or(their.as_ref())
                    .context("deleted on both sides")?;
                write_blob(repo, &path, kept.id, kept.mode)?;
                let what = if our.is_none() {
                    "the patch changes a file the release deleted"
                } else {
                    "the patch deletes or adds a file the release changed"
                };
                vec![(
                    0,
                    format!(
                        "{what}; the work tree has {}'s version",
                        if our.is_some() { ours } else { theirs }
                    ),
                )]
            }
        };
        files.push(ConflictFile { path: rel, hunks });
    }
    Ok(files)
}

fn write_blob(repo: &Repository, path: &Path, id: Oid, mode: u32) -> Result<()> {
    let blob = repo
        .find_blob(id)
        .with_context(|| format!("blob of {} is missing", path.display()))?;
    write_file(path, blob.content(), mode)
}

fn write_file(path: &Path, content: &[u8], mode: u32) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    worktree::write_file(path, content, mode as i32)
}

/// Each `<<<<<<<` .. `>>>>>>>` region with its 1-based starting line.
fn marker_hunks(content: &[u8]) -> Vec<(usize, String)> {
    let text = String::from_utf8_lossy(content);
    let mut hunks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("<<<<<<< ") {
            current = Some((n + 1, String::new()));
        }
        if let Some((_, hunk)) = current.as_mut() {
            hunk.push_str(line);
            hunk.push('\n');
        }
        if line.starts_with(">>>>>>> ") {
            hunks.extend(current.take());
        }
    }
    hunks
}
