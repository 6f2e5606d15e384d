//! Release tarballs: extracted with the system `tar`, whatever the compression.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use loader_tests::host::{self, tools};

/// Extracts `tarball` into the empty directory `into` and returns its single top-level
/// directory (`glibc-X.Y/`).
pub fn extract(tarball: &Path, into: &Path) -> Result<PathBuf> {
    host::require(&[tools::TAR, tools::XZ])?;
    if !tarball.is_file() {
        bail!("tarball {} does not exist", tarball.display());
    }
    let sh = Shell::new()?;
    let out = cmd!(sh, "tar -xf {tarball} -C {into} --no-same-owner")
        .quiet()
        .ignore_status()
        .output()
        .context("cannot run tar")?;
    if !out.status.success() {
        bail!(
            "cannot extract {}: is it a complete, uncorrupted tarball? tar said:\n{}",
            tarball.display(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
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
