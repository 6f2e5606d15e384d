//! Plain directories holding a tree's files: the build's source dir, a rebase's work tree.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{FileMode, ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

/// Writes every file of `tree` into `dest`, which must be empty or absent. Modes are kept:
/// 100755 files are executable, 120000 entries become symlinks.
pub(crate) fn write_tree(repo: &Repository, tree: Oid, dest: &Path) -> Result<()> {
    if dest.exists() {
        let mut entries =
            std::fs::read_dir(dest).with_context(|| format!("cannot read {}", dest.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} is not empty: refusing to write a source tree into it",
                dest.display()
            );
        }
    } else {
        std::fs::create_dir_all(dest)
            .with_context(|| format!("cannot create {}", dest.display()))?;
    }
    let tree = repo
        .find_tree(tree)
        .context("tree to export is missing from the store")?;
    let mut failure = None;
    let walked = tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        let path = dest
            .join(dir)
            .join(std::ffi::OsStr::from_bytes(entry.name_bytes()));
        match write_entry(repo, &path, entry.id(), entry.filemode(), entry.kind()) {
            Ok(()) => TreeWalkResult::Ok,
            Err(e) => {
                failure = Some(e);
                TreeWalkResult::Abort
            }
        }
    });
    match (failure, walked) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(e).context("cannot walk the tree to export"),
        (None, Ok(())) => Ok(()),
    }
}

fn write_entry(
    repo: &Repository,
    path: &Path,
    id: Oid,
    mode: i32,
    kind: Option<ObjectType>,
) -> Result<()> {
    if kind == Some(ObjectType::Tree) {
        return std::fs::create_dir_all(path)
            .with_context(|| format!("cannot create {}", path.display()));
    }
    let blob = repo
        .find_blob(id)
        .with_context(|| format!("blob of {} is missing", path.display()))?;
    write_file(path, blob.content(), mode)
}

/// Writes one file as the tree mode says (regular, executable, or symlink).
pub(crate) fn write_file(path: &Path, content: &[u8], mode: i32) -> Result<()> {
    if mode == i32::from(FileMode::Link) {
        std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(content), path)
            .with_context(|| format!("cannot create symlink {}", path.display()))?;
        return Ok(());
    }
    std::fs::write(path, content).with_context(|| format!("cannot write {}", path.display()))?;
    if mode == i32::from(FileMode::BlobExecutable) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot chmod {}", path.display()))?;
    }
    Ok(())
}

/// What changes from tree `old` to tree `new` of the store.
pub(crate) fn tree_diff(repo: &Repository, old: Oid, new: Oid) -> Result<git2::Diff<'_>> {
    let find = |id: Oid| {
        repo.find_tree(id)
            .with_context(|| format!("tree {id} is missing from the store"))
    };
    let (old, new) = (find(old)?, find(new)?);
    repo.diff_tree_to_tree(Some(&old), Some(&new), None)
        .context("cannot compare two trees")
}

/// Makes `dest`, which holds tree `old`, hold tree `new`: writes what differs, removes what
/// `new` lacks (and directories left empty). Files are replaced, never written in place.
pub(crate) fn update_tree(repo: &Repository, old: Oid, new: Oid, dest: &Path) -> Result<()> {
    let diff = tree_diff(repo, old, new)?;
    for delta in diff.deltas() {
        let (before, after) = (delta.old_file(), delta.new_file());
        if let Some(path) = before.path().filter(|_| before.exists()) {
            let path = dest.join(path);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot remove {}", path.display()))
                }
            }
            if !after.exists() {
                // Directories the removal emptied go too, as a checkout would leave them.
                let mut dir = path.parent();
                while let Some(d) = dir.filter(|d| *d != dest) {
                    if std::fs::remove_dir(d).is_err() {
                        break;
                    }
                    dir = d.parent();
                }
            }
        }
        if let Some(path) = after.path().filter(|_| after.exists()) {
            let path = dest.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            let blob = repo
                .find_blob(after.id())
                .with_context(|| format!("blob of {} is missing", path.display()))?;
            write_file(&path, blob.content(), i32::from(after.mode()))?;
        }
    }
    Ok(())
}
