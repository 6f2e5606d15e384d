//! Where things live: the project checkout, and the cache outside it (whose root
//! `loader_tests::host::cache_dir` decides, for xtask and the harness alike).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use loader_tests::host::non_empty_env;

/// The variable that asks to compile glibc through ccache (`sysroot::compiler_cache`).
pub(crate) const COMPILER_CACHE_VAR: &str = "LD_FALLBACK_CCACHE";

/// Whether the environment asks for the compiler cache: `LD_FALLBACK_CCACHE=1` yes, unset or
/// `0` no, anything else an error (a typo must not silently build without it).
pub(crate) fn compiler_cache_asked() -> Result<bool> {
    compiler_cache_asked_by(non_empty_env(COMPILER_CACHE_VAR).map(PathBuf::into_os_string))
}

fn compiler_cache_asked_by(value: Option<std::ffi::OsString>) -> Result<bool> {
    let Some(value) = value else {
        return Ok(false);
    };
    match value.to_str() {
        Some("0") => Ok(false),
        Some("1") => Ok(true),
        _ => anyhow::bail!(
            "{COMPILER_CACHE_VAR}={value:?}: set it to 1 to compile glibc through ccache, or to \
             0 (or leave it unset) not to"
        ),
    }
}

/// The cache root (`loader_tests::host::cache_dir`: `$LD_FALLBACK_CACHE`, else under
/// `$XDG_CACHE_HOME` or `$HOME`). A `$LD_FALLBACK_CACHE` that leads to something other than
/// a directory (a file, a symlink loop) is bad input, said naming the variable: every store
/// and build under it would otherwise read as not there yet. (One that does not exist yet is
/// made when something is written there.)
pub(crate) fn cache_dir() -> Result<PathBuf> {
    let dir = loader_tests::host::cache_dir()?;
    let named_by = match non_empty_env("LD_FALLBACK_CACHE") {
        Some(_) => "`$LD_FALLBACK_CACHE`",
        None => "`$XDG_CACHE_HOME` (or `$HOME`), where the cache is placed,",
    };
    printable_path(&dir, named_by)?;
    if non_empty_env("LD_FALLBACK_CACHE").as_deref() == Some(dir.as_path()) {
        match std::fs::metadata(&dir) {
            Ok(meta) if !meta.is_dir() => anyhow::bail!(
                "`$LD_FALLBACK_CACHE` names {}, which is not a directory: name the cache's directory",
                dir.display()
            ),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| {
                    format!(
                        "`$LD_FALLBACK_CACHE` names {}, which cannot be looked at",
                        dir.display()
                    )
                })
            }
            _ => {}
        }
    }
    Ok(dir)
}

/// The environment variables that name a path to the commands (the cache's own, and those of
/// `$XDG_CACHE_HOME` and `$HOME` where the cache is placed by them, are looked at where it is
/// placed: [`cache_dir`]).
const PATH_VARIABLES: &[&str] = &[
    "LD_FALLBACK_STORE",
    "LD_FALLBACK_PATCHES",
    "LD_FALLBACK_GLIBC_UPSTREAM",
    "LD_FALLBACK_MANUAL_PATCH",
    "LD_FALLBACK_NIXPKGS",
    "LD_FALLBACK_APT_SOURCES",
];

/// Refuses a path an environment variable names that holds a control character (a newline,
/// a tab): every message quotes its paths on one line, and one of these would break or
/// shift it (a list of the mails written, one a line, would list other files). Said escaped.
pub(crate) fn named_paths_printable() -> Result<()> {
    for variable in PATH_VARIABLES {
        if let Some(path) = non_empty_env(variable) {
            printable_path(&path, &format!("`${variable}`"))?;
        }
    }
    Ok(())
}

/// Refuses `path`, which `named_by` names, if it holds a control character (see
/// [`named_paths_printable`]).
pub(crate) fn printable_path(path: &Path, named_by: &str) -> Result<()> {
    let text = path.to_string_lossy();
    if text.chars().any(char::is_control) {
        anyhow::bail!(
            "{named_by} names {}, which holds a control character: a path named to cargo xtask holds none (each message says it on one line); rename it, or name another",
            model::printable(&text)
        );
    }
    Ok(())
}

/// The root of the ld-fallback checkout the commands read and write (data/, patches/,
/// docs/, the workflow): `$LD_FALLBACK_CHECKOUT`, else the one this binary was built from.
/// The variable lets one binary act on a copy of the checkout, as the rehearsal of a new
/// release does, without building the copy.
pub(crate) fn project_root() -> PathBuf {
    non_empty_env("LD_FALLBACK_CHECKOUT").unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask lives one level below the workspace root")
            .to_path_buf()
    })
}

/// `patches/` of the checkout: one directory per supported release. `$LD_FALLBACK_PATCHES`
/// names another (tests run the real binary on synthetic series that way).
pub(crate) fn patches_dir() -> PathBuf {
    non_empty_env("LD_FALLBACK_PATCHES").unwrap_or_else(|| project_root().join("patches"))
}

/// Fails when `$LD_FALLBACK_PATCHES` names `dir` and nothing is there: a path the user named
/// that does not exist is bad input (exit status 1), for every command alike, not a series
/// missing for every release. (The checkout's own `patches/` gone is a finding about the
/// series, which the checks report.)
pub(crate) fn named_patches_dir_exists(dir: &Path) -> Result<()> {
    if non_empty_env("LD_FALLBACK_PATCHES").as_deref() != Some(dir) {
        return Ok(());
    }
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "`$LD_FALLBACK_PATCHES` names {}, which does not exist: name the directory of the series (or unset it for the checkout's patches/)",
            dir.display()
        ),
        _ => Ok(()),
    }
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

/// The entries of `dir`, or `None` when it does not exist; any other failure to list it is an
/// error that names it.
pub(crate) fn entries_if_exists(dir: &Path) -> Result<Option<Vec<std::fs::DirEntry>>> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
    };
    let entries = listing
        .map(|entry| entry.with_context(|| format!("cannot read {}", dir.display())))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(entries))
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

#[cfg(test)]
mod compiler_cache_tests {
    use super::*;

    #[test]
    fn only_one_asks_for_the_compiler_cache_and_anything_else_is_refused() {
        assert!(!compiler_cache_asked_by(None).unwrap());
        assert!(!compiler_cache_asked_by(Some("0".into())).unwrap());
        assert!(compiler_cache_asked_by(Some("1".into())).unwrap());
        let err = compiler_cache_asked_by(Some("yes".into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"yes\"") && err.contains("set it to 1"),
            "{err}"
        );
    }
}
