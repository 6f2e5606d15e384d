//! Release tarballs: extracted with the system `tar`, whatever the compression.
//!
//! tar's output goes to a log file (a full disk makes it print a line per remaining file,
//! some 20,000 for glibc), and tar dies with us: a killed import must not leave it writing
//! into a staging directory nobody will clean while it runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::store::release::Release;
use crate::util::{child, durable, logged, paths};
use loader_tests::host::{self, tools};

/// Extracts `tarball` into the empty directory `into` and returns its single top-level
/// directory (`glibc-X.Y/`).
pub fn extract(tarball: &Path, into: &Path, release: Release) -> Result<PathBuf> {
    host::require(&[tools::TAR, tools::XZ])?;
    if !tarball.is_file() {
        bail!("tarball {} does not exist", tarball.display());
    }
    let log = log_path(into, release);
    let _ = std::fs::remove_file(&log);
    let mut cmd = Command::new("tar");
    cmd.arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(into)
        .arg("--no-same-owner");
    child::dies_with_us(&mut cmd);
    if let Err(err) = logged::run(&mut cmd, &log, &format!("extract glibc {release}"), |_| {
        None
    }) {
        let full = err
            .downcast_ref::<logged::Failure>()
            .is_some_and(|f| f.tail.iter().any(|l| l.contains(durable::DISK_FULL)));
        if full {
            let dir = into.parent().unwrap_or(into);
            return Err(err).with_context(|| {
                format!(
                    "the disk holding {} is full: tar ran out of space extracting {} (nothing is wrong with the tarball); \
                     free space there, or point the store (--store) at another disk",
                    dir.display(),
                    tarball.display()
                )
            });
        }
        return Err(err).with_context(|| {
            format!(
                "cannot extract {}: is it a complete, uncorrupted tarball?",
                tarball.display()
            )
        });
    }
    let mut tops = std::fs::read_dir(into)
        .and_then(|entries| {
            entries
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<Vec<_>>>()
        })
        .with_context(|| format!("cannot read {}", into.display()))?;
    match tops.as_slice() {
        [top] if top.is_dir() => Ok(tops.remove(0)),
        _ => bail!(
            "{} does not hold a single top-level directory like glibc-X.Y/",
            tarball.display()
        ),
    }
}

/// `<cache>/logs/import-glibc-X.Y.log`, else beside the staging directory.
fn log_path(into: &Path, release: Release) -> PathBuf {
    let name = format!("import-glibc-{release}.log");
    let logs = paths::cache_dir().map(|c| c.join("logs"));
    match logs {
        Ok(dir) if std::fs::create_dir_all(&dir).is_ok() => dir.join(name),
        _ => into.parent().unwrap_or(into).join(name),
    }
}
