//! Advisory file locks (flock(2), the same lock the `flock` command takes).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Held by every glibc configure, make and make install on this machine, by this tool and by
/// hand-run builds (`flock /run/lock/ld-fallback-glibc-build.lock ...`): two glibc builds at
/// once would starve each other on the 2-core machines this project runs on.
pub(crate) const MACHINE_LOCK: &str = "/run/lock/ld-fallback-glibc-build.lock";

/// A held lock; released when dropped (or when the process dies, so a killed build never
/// leaves a stale lock behind).
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    /// How long acquiring it blocked.
    pub waited: Duration,
}

/// Takes the exclusive lock on `path`, creating the file; says on stderr what it waits for
/// when someone else holds it.
pub fn acquire(path: &Path, what: &str) -> Result<FileLock> {
    let file = open(path)?;
    let started = Instant::now();
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            diagln!("waiting for {what} ({})...", path.display());
            file.lock()
                .with_context(|| format!("cannot lock {}", path.display()))?;
            let secs = started.elapsed().as_secs();
            diagln!("got {what} after {}:{:02}", secs / 60, secs % 60);
        }
        Err(TryLockError::Error(err)) => {
            return Err(err).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
    Ok(FileLock {
        _file: file,
        waited: started.elapsed(),
    })
}

/// Takes the lock on `path` only if nobody holds it.
pub(crate) fn try_acquire(path: &Path) -> Result<Option<FileLock>> {
    let file = open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(FileLock {
            _file: file,
            waited: Duration::ZERO,
        })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(err)) => {
            Err(err).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// Opens (creating it and its directory) the file whose flock is the lock.
fn open(path: &Path) -> Result<File> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open lock file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_waits_until_the_first_releases() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/key.lock");
        let first = acquire(&path, "test lock").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let lock = acquire(&path, "test lock").unwrap();
                tx.send(()).unwrap();
                lock.waited
            })
        };
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        assert!(try_acquire(&path).unwrap().is_none());
        drop(first);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(waiter.join().unwrap() >= Duration::from_millis(200));
    }
}
