//! Writes that survive a crash whole or not at all: fsync before a rename publishes, and a
//! directory swapped into place with one `renameat2(RENAME_EXCHANGE)`, so that there is no
//! moment at which the destination is missing or half written.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::{Context, Result};

use crate::util::{fault, paths};

/// Writes `bytes` to `path` and flushes them to the disk before returning.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.sync_all()
        .with_context(|| format!("cannot flush {} to the disk", path.display()))
}

/// Puts `bytes` at `path` whole or not at all: written and flushed beside it, then renamed
/// over it. A killed process leaves the old file (or none) and a temporary one that the
/// next `tempfile` cleanup or a later write replaces.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no directory", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", tmp.path().display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot move a new {} into place", path.display()))?;
    sync_dir(dir)
}

/// Flushes a directory's entries (a rename or a new file in it) to the disk.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    let handle =
        std::fs::File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    handle
        .sync_all()
        .with_context(|| format!("cannot flush {} to the disk", dir.display()))
}

/// Swaps the directories `a` and `b` atomically. `Ok(false)` if the filesystem cannot (NFS,
/// old kernels): the caller falls back to two renames.
pub(crate) fn exchange(a: &Path, b: &Path) -> Result<bool> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .with_context(|| format!("{} has a NUL byte", p.display()))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => Ok(false),
        _ => Err(err).with_context(|| format!("cannot swap {} and {}", a.display(), b.display())),
    }
}

/// Publishes the complete directory `staged` as `dest`, replacing what `dest` held. A crash
/// at any point leaves `dest` either the old or the new directory; the loser of the swap
/// (old or new) is left at `staged` or at `<parent>/.old-<name>` for [`recover_old`] to handle.
pub(crate) fn replace_dir(staged: &Path, dest: &Path) -> Result<()> {
    let parent = dest.parent().context("destination has no parent")?;
    sync_dir(staged)?;
    fault::point("replace-dir:staged");
    if !dest.exists() {
        std::fs::rename(staged, dest)
            .with_context(|| format!("cannot move {} into place", dest.display()))?;
        sync_dir(parent)?;
        return Ok(());
    }
    if exchange(staged, dest)? {
        sync_dir(parent)?;
        fault::point("replace-dir:exchanged");
        return remove_tree(staged);
    }
    // Two renames: between them `dest` is missing and `.old-<name>` holds the old directory,
    // which `recover_old` puts back.
    let old = old_path(dest)?;
    let _ = std::fs::remove_dir_all(&old);
    std::fs::rename(dest, &old).with_context(|| format!("cannot move {} aside", dest.display()))?;
    std::fs::rename(staged, dest)
        .with_context(|| format!("cannot move {} into place", dest.display()))?;
    sync_dir(parent)?;
    remove_tree(&old)
}

/// `<parent>/.old-<name>`: where a replaced directory waits for its removal.
pub(crate) fn old_path(dest: &Path) -> Result<std::path::PathBuf> {
    let parent = dest.parent().context("destination has no parent")?;
    let name = dest.file_name().context("destination has no name")?;
    Ok(parent.join(format!(".old-{}", name.to_string_lossy())))
}

/// After a crash inside [`replace_dir`]'s fallback: puts `.old-<name>` back if `dest` is
/// missing, else removes it. Returns what it did, for the user, or `None` if there was nothing.
pub(crate) fn recover_old(dest: &Path) -> Result<Option<String>> {
    let old = old_path(dest)?;
    if !old.exists() {
        return Ok(None);
    }
    if dest.exists() {
        remove_tree(&old)?;
        return Ok(Some(format!(
            "removed {}, the previous version of {} left by an interrupted write",
            old.display(),
            dest.display()
        )));
    }
    std::fs::rename(&old, dest)
        .with_context(|| format!("cannot move {} back to {}", old.display(), dest.display()))?;
    Ok(Some(format!(
        "restored {} from {}: a write of it was interrupted before the new version was in place",
        dest.display(),
        old.display()
    )))
}

/// Whether `err` comes from a full disk (ENOSPC, from us, libgit2 or a tool's output).
pub(crate) fn is_disk_full(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.raw_os_error() == Some(libc::ENOSPC))
            || cause.to_string().contains(DISK_FULL)
    })
}

/// How the C library words ENOSPC, as tools and libgit2 print it.
pub(crate) const DISK_FULL: &str = "No space left on device";

/// Names the directory whose disk filled, when `err` is a full disk; else returns it as is.
pub(crate) fn explain_full_disk(err: anyhow::Error, dir: &Path) -> anyhow::Error {
    if is_disk_full(&err) {
        err.context(format!(
            "the disk holding {} is full: free space there, or point the store (--store) or the cache ($LD_FALLBACK_CACHE) at another disk",
            dir.display()
        ))
    } else {
        err
    }
}

/// The entries of `dir` that `is_own` does not claim, sorted: what replacing `dir` whole would
/// delete although no command wrote it there. None when `dir` does not exist.
pub(crate) fn foreign_entries(dir: &Path, is_own: impl Fn(&str) -> bool) -> Result<Vec<String>> {
    let Some(entries) = paths::entries_if_exists(dir)? else {
        return Ok(Vec::new());
    };
    let mut foreign = Vec::new();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().ok();
        if kind.is_some_and(|t| t.is_symlink()) {
            // Named as what it is: a link listed by the series is still not the series' own.
            foreign.push(format!("{name} (a symlink)"));
        } else if !(kind.is_some_and(|t| t.is_file()) && is_own(&name)) {
            foreign.push(name);
        }
    }
    foreign.sort();
    Ok(foreign)
}

/// Refuses to replace `dir` whole while it holds [`foreign_entries`]; `not_what` says what
/// they are not ("not part of its series").
pub(crate) fn refuse_foreign_entries(
    dir: &Path,
    not_what: &str,
    is_own: impl Fn(&str) -> bool,
) -> Result<()> {
    let foreign = foreign_entries(dir, is_own)?;
    if foreign.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{} holds {} {not_what}: {}; it is replaced whole, so nothing was written: move them elsewhere and run the command again",
        dir.display(),
        if foreign.len() == 1 { "a file that is" } else { "files that are" },
        crate::util::text::listed(&foreign)
    )
}

/// Removes a directory tree that nothing refers to any more (a crash halfway is harmless).
pub(crate) fn remove_tree(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_dir_swaps_whole_directories() {
        let tmp = tempfile::TempDir::new().unwrap();
        let dest = tmp.path().join("2.44");
        let staged = tmp.path().join(".series-1");
        std::fs::create_dir(&staged).unwrap();
        std::fs::write(staged.join("a"), "new").unwrap();
        replace_dir(&staged, &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("a")).unwrap(), "new");
        std::fs::create_dir(&staged).unwrap();
        std::fs::write(staged.join("b"), "newer").unwrap();
        replace_dir(&staged, &dest).unwrap();
        assert!(!dest.join("a").exists() && dest.join("b").exists());
        assert!(!staged.exists());
    }

    #[test]
    fn a_full_disk_is_recognised_through_context() {
        let err = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENOSPC))
            .context("cannot write blob");
        let explained = format!("{:#}", explain_full_disk(err, Path::new("/x/glibc.git")));
        assert!(
            explained.starts_with("the disk holding /x/glibc.git is full"),
            "{explained}"
        );
        let other = anyhow::anyhow!("permission denied");
        assert_eq!(
            format!("{:#}", explain_full_disk(other, Path::new("/x"))),
            "permission denied"
        );
    }

    #[test]
    fn a_symlink_is_foreign_and_named_as_one() {
        let tmp = tempfile::TempDir::new().unwrap();
        std::fs::write(tmp.path().join("series"), "").unwrap();
        std::os::unix::fs::symlink("/elsewhere", tmp.path().join("0001-a.patch")).unwrap();
        let foreign = foreign_entries(tmp.path(), |name| name != "stray").unwrap();
        assert_eq!(foreign, ["0001-a.patch (a symlink)"]);
    }

    #[test]
    fn an_interrupted_fallback_is_recovered() {
        let tmp = tempfile::TempDir::new().unwrap();
        let dest = tmp.path().join("2.44");
        let old = old_path(&dest).unwrap();
        std::fs::create_dir(&old).unwrap();
        let said = recover_old(&dest).unwrap().unwrap();
        assert!(said.contains("restored"), "{said}");
        assert!(dest.is_dir() && !old.exists());
        std::fs::create_dir(&old).unwrap();
        let said = recover_old(&dest).unwrap().unwrap();
        assert!(said.contains("removed"), "{said}");
        assert!(recover_old(&dest).unwrap().is_none());
    }
}
