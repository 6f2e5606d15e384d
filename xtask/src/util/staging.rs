//! Temporary directories next to their destination, so that a rename publishes a result
//! atomically; leftovers of killed processes are removed by the next one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tempfile::TempDir;

/// `<parent>/.<kind>-<pid>-XXXXXX`, after removing `.<kind>-*` dirs whose process is gone.
pub(crate) fn tempdir_in(parent: &Path, kind: &str) -> Result<TempDir> {
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    for left in remove_orphans(parent, kind) {
        diagln!(
            "removed {}, left by an interrupted run (its process is gone)",
            left.display()
        );
    }
    tempfile::Builder::new()
        .prefix(&format!(".{kind}-{}-", std::process::id()))
        .tempdir_in(parent)
        .with_context(|| {
            format!(
                "cannot create a {kind} staging directory in {}",
                parent.display()
            )
        })
}

/// Removes the `.<kind>-<pid>-*` directories in `parent` whose process is gone; returns them.
pub(crate) fn remove_orphans(parent: &Path, kind: &str) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let prefix = format!(".{kind}-");
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if pid.parse::<u32>().is_ok()
            && !Path::new("/proc").join(pid).exists()
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed.push(entry.path());
        }
    }
    removed
}
