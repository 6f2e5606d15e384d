//! Where things live: the project checkout, and the cache outside it (whose root
//! `loader_harness::host::cache_dir` decides, for both crates).

use std::path::{Path, PathBuf};

use anyhow::Result;
pub(crate) use loader_harness::host::cache_dir;
use loader_harness::host::non_empty_env;

/// The root of the ld-fallback checkout this binary was built from.
pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// `patches/` of the checkout: one directory per supported release. `$LD_FALLBACK_PATCHES`
/// names another (tests run the real binary on synthetic series that way).
pub(crate) fn patches_dir() -> PathBuf {
    non_empty_env("LD_FALLBACK_PATCHES").unwrap_or_else(|| project_root().join("patches"))
}

/// The glibc source store: `--store`, else `$LD_FALLBACK_STORE`, else `<cache>/glibc.git`.
pub(crate) fn store_dir(flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = non_empty_env("LD_FALLBACK_STORE") {
        return Ok(dir);
    }
    Ok(cache_dir()?.join("glibc.git"))
}

/// Downloaded release tarballs, kept so that a re-import needs no network.
pub fn downloads_dir() -> Result<PathBuf> {
    Ok(cache_dir()?.join("downloads"))
}

/// The names of `dir`'s entries, sorted (so that what a recovery says comes in one order);
/// `None` where `dir` cannot be listed: for a recovery, nothing to recover there.
pub(crate) fn sorted_entry_names(dir: &Path) -> Option<Vec<String>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Some(names)
}
