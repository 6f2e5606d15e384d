//! What `rebase-glibc --continue` takes from the work tree, and what it refuses.
//!
//! The work tree is compared with the tree the rebase wrote when it stopped (recorded in the
//! state), and every difference has to be explained:
//!
//! - a changed file is the resolution; it must hold no conflict marker (every changed file is
//!   searched, not only the ones that conflicted);
//! - a new file is taken only if the patch being applied touches that path. Editor leftovers
//!   (`*~`, `*.orig`, `*.rej`, `*.swp`, `*.swo`, `.#*`, `#*#`) are ignored and named; any other
//!   new file is refused with its name;
//! - a missing file is taken as a deletion only if the patch being applied deletes it, or if
//!   `--delete <path>` says so; otherwise it is refused (a half-deleted tree, an `rm` by
//!   mistake).
//!
//! Refusals are findings ([`NeedsAttention`], exit status 2): the state is left as it was, so
//! the user mends the tree and runs `--continue` again.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{Delta, FileMode, Oid, Repository};

use crate::merge::file_mode;
use crate::series::markers::has_markers;
use crate::series::scope::file_path;
use crate::store::snapshot::{NotStorable, Snapshot};
use crate::util::exit::NeedsAttention;
use crate::util::text::listed;

/// The resolved tree to commit, and what the user should know about how it was read.
pub(crate) struct Taken {
    pub tree: Oid,
    pub notes: Vec<String>,
}

/// What the stopped rebase knows: where the tree is, what was written, what conflicted.
pub(crate) struct Stopped<'a> {
    pub tree_dir: &'a Path,
    /// The work tree as written (in the store).
    pub recorded: Oid,
    pub conflicts: &'a [String],
    /// The patch being applied, as a commit of the source series.
    pub patch: &'a git2::Commit<'a>,
    pub patch_name: &'a str,
    /// The store's directory, for the restore hint.
    pub store_dir: &'a Path,
}

/// Reads the work tree, checks it against the rules above, and returns the tree to commit.
pub(crate) fn take(
    repo: &Repository,
    stopped: &Stopped<'_>,
    deletions: &[String],
) -> Result<Taken> {
    let tree_dir = stopped.tree_dir;
    if !tree_dir.is_dir() {
        // Not ready either (exit status 2): a human has to choose what to do.
        return Err(NeedsAttention(format!(
            "the work tree {} is gone; drop the rebase with --abort and start it again",
            tree_dir.display()
        ))
        .into());
    }
    let snapshot = match Snapshot::of_dir(tree_dir, &[]) {
        Ok(snapshot) => snapshot,
        // A FIFO or a socket left in the tree is the tree not being ready, like a stray
        // file (exit status 2), not a failure to read it.
        Err(err) => match err.downcast::<NotStorable>() {
            Ok(special) => {
                return Err(not_ready(
                    tree_dir,
                    &[format!(
                        "{special}. Remove {} (a series holds regular files)",
                        if special.entries.len() == 1 {
                            "it"
                        } else {
                            "them"
                        }
                    )],
                ))
            }
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("cannot read the work tree {}", tree_dir.display()))
            }
        },
    };
    snapshot
        .write(
            &repo
                .odb()
                .context("cannot open the store's object database")?,
        )
        .context("cannot write the resolved work tree into the store")?;
    let recorded = repo
        .find_tree(stopped.recorded)
        .context("the work tree recorded in the rebase state is missing from the store")?;
    let now = repo
        .find_tree(snapshot.root)
        .context("the resolved work tree is missing from the store")?;

    let (touched, deleted_by_patch) = paths_of(repo, stopped.patch)?;
    let mut opts = git2::DiffOptions::new();
    opts.include_typechange(true);
    let diff = repo
        .diff_tree_to_tree(Some(&recorded), Some(&now), Some(&mut opts))
        .context("cannot compare the work tree with the one the rebase wrote")?;

    let patch_tree = stopped
        .patch
        .tree()
        .context("cannot read the patch's tree")?;
    let mut changed = Vec::new();
    let mut extra = Vec::new();
    let mut ignored = Vec::new();
    let mut missing = Vec::new();
    let mut deleted = Vec::new();
    let mut kinds = Vec::new();
    for delta in diff.deltas() {
        if delta.status() != Delta::Deleted {
            let p = file_path(&delta.new_file());
            // A new file takes the mode the patch gives its path (a plain file if none).
            let expected = match delta.status() {
                Delta::Added => patch_tree
                    .get_path(Path::new(&p))
                    .map_or(FileMode::Blob, |e| file_mode(e.filemode() as u32)),
                _ => delta.old_file().mode(),
            };
            let now = delta.new_file().mode();
            if now == FileMode::Link {
                let target = std::fs::read_link(tree_dir.join(&p))
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".to_string());
                kinds.push(format!(
                    "{p} is a symlink (to {target}): make it the file it was (a series holds regular files)"
                ));
            } else if now != expected && !is_editor_leftover(&p) {
                let fix = if now == FileMode::BlobExecutable {
                    "chmod -x"
                } else {
                    "chmod +x"
                };
                let (was, is) = (u32::from(expected), u32::from(now));
                kinds.push(if delta.status() == Delta::Added {
                    format!("{p} is new with mode {is:o}, but the patch gives it {was:o}: `{fix} {p}`")
                } else {
                    format!("{p} changed mode from {was:o} to {is:o}: `{fix} {p}` puts it back (a resolution changes text, not modes)")
                });
            }
        }
        match delta.status() {
            Delta::Added => {
                let p = file_path(&delta.new_file());
                if touched.contains(&p) {
                    changed.push(p);
                } else if is_editor_leftover(&p) {
                    ignored.push(p);
                } else {
                    extra.push(p);
                }
            }
            Delta::Deleted => {
                let p = file_path(&delta.old_file());
                if deleted_by_patch.contains(&p) || deletions.contains(&p) {
                    deleted.push(p);
                } else {
                    missing.push(p);
                }
            }
            _ => changed.push(file_path(&delta.new_file())),
        }
    }
    // `--delete` of a file still in the tree: like `git rm`, it goes.
    let mut removed_by_flag = Vec::new();
    for p in deletions {
        if recorded.get_path(Path::new(p)).is_err() {
            bail!(
                "--delete {p}: {p} is not in the work tree the rebase wrote ({}); name a path relative to it",
                tree_dir.display()
            );
        }
        if now.get_path(Path::new(p)).is_ok() {
            removed_by_flag.push(p.clone());
            if !deleted.contains(p) {
                deleted.push(p.clone());
            }
        }
    }

    let mut searched: BTreeSet<&str> = stopped.conflicts.iter().map(String::as_str).collect();
    searched.extend(changed.iter().map(String::as_str));
    let mut unresolved = Vec::new();
    for p in searched {
        if removed_by_flag.iter().any(|r| r == p) {
            continue;
        }
        // Not through a symlink (refused above): what it points at is not the tree's.
        let file = tree_dir.join(p);
        if file.is_symlink() {
            continue;
        }
        if let Ok(bytes) = std::fs::read(&file) {
            if has_markers(&bytes) {
                unresolved.push(p.to_string());
            }
        }
    }

    let mut problems = Vec::new();
    if !unresolved.is_empty() {
        problems.push(format!(
            "conflict markers remain in {}: resolve them (remove every `<<<<<<<`, `|||||||`, `=======` and `>>>>>>>` line)",
            listed(&unresolved)
        ));
    }
    problems.extend(kinds);
    if !missing.is_empty() {
        problems.push(format!(
            "{} file(s) are missing from the work tree, and {} does not delete them: {}. \
             Restore them (`git --git-dir={} archive {} | tar -x --skip-old-files -C {}` puts back every missing file \
             and leaves the others alone), or, if the rebased patch must delete them, say so with --delete <path>",
            missing.len(),
            stopped.patch_name,
            listed(&missing),
            stopped.store_dir.display(),
            stopped.recorded,
            tree_dir.display()
        ));
    }
    if !extra.is_empty() {
        problems.push(format!(
            "{} file(s) in the work tree are neither in the release (with the patches so far) nor touched by {}: {}. \
             Remove them (editor leftovers like *~, *.orig, *.rej and .#* are ignored)",
            extra.len(),
            stopped.patch_name,
            listed(&extra)
        ));
    }
    if !problems.is_empty() {
        return Err(not_ready(tree_dir, &problems));
    }

    let mut notes = Vec::new();
    let mut tree = snapshot.root;
    if !ignored.is_empty() || !removed_by_flag.is_empty() {
        let mut update = git2::build::TreeUpdateBuilder::new();
        for p in ignored.iter().chain(&removed_by_flag) {
            update.remove(p.as_str());
        }
        tree = update
            .create_updated(repo, &now)
            .context("cannot leave ignored files out of the resolved tree")?;
    }
    if !ignored.is_empty() {
        notes.push(format!(
            "ignored editor leftovers in the work tree: {}",
            listed(&ignored)
        ));
    }
    if !deleted.is_empty() {
        notes.push(format!("deleting, as asked: {}", listed(&deleted)));
    }
    let elsewhere: Vec<String> = changed
        .iter()
        .filter(|p| !touched.contains(*p) && !stopped.conflicts.contains(*p))
        .cloned()
        .collect();
    if !elsewhere.is_empty() {
        notes.push(format!(
            "taking changes to files {} did not touch: {}",
            stopped.patch_name,
            listed(&elsewhere)
        ));
    }
    Ok(Taken { tree, notes })
}

/// The finding that the work tree is not ready, with what to mend (exit status 2).
fn not_ready(tree_dir: &Path, problems: &[String]) -> anyhow::Error {
    NeedsAttention(format!(
        "the work tree {} is not ready to continue:\n  - {}\nthen run `cargo xtask rebase-glibc --continue` again (the rebase state is unchanged)",
        tree_dir.display(),
        problems.join("\n  - ")
    ))
    .into()
}

/// The paths `patch` touches (old and new names), and those it deletes.
fn paths_of(
    repo: &Repository,
    patch: &git2::Commit<'_>,
) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let parent = patch.parent(0).context("the patch commit has no parent")?;
    let diff = repo
        .diff_tree_to_tree(
            Some(
                &parent
                    .tree()
                    .context("cannot read the patch's parent tree")?,
            ),
            Some(&patch.tree().context("cannot read the patch's tree")?),
            None,
        )
        .context("cannot list what the patch changes")?;
    let mut touched = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path() {
                touched.insert(p.to_string_lossy().into_owned());
            }
        }
        if delta.status() == Delta::Deleted {
            if let Some(p) = delta.old_file().path() {
                deleted.insert(p.to_string_lossy().into_owned());
            }
        }
    }
    Ok((touched, deleted))
}

/// Backup, swap and reject files editors and `patch` leave next to the files they touch.
pub(crate) fn is_editor_leftover(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with('~')
        || name.ends_with(".orig")
        || name.ends_with(".rej")
        || name.ends_with(".swp")
        || name.ends_with(".swo")
        || name.starts_with(".#")
        || (name.len() > 1 && name.starts_with('#') && name.ends_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_leftovers_are_recognised_by_name() {
        for leftover in [
            "NEWS~",
            "elf/dl-load.c.orig",
            "elf/dl-load.c.rej",
            "elf/.dl-load.c.swp",
            "elf/.#dl-load.c",
            "elf/#dl-load.c#",
        ] {
            assert!(is_editor_leftover(leftover), "{leftover}");
        }
        for file in ["NEWS", "elf/dl-load.c", "elf/#", "elf/origin.c"] {
            assert!(!is_editor_leftover(file), "{file}");
        }
    }
}
