//! What a builder has read or checked once and keeps for the rest of its command: each
//! release's series from `patches/` (read once, however many targets and flavours build
//! from it), the releases whose series the guard passed, and each target's compiler (its
//! tools found, `$CC --version` run). A `verify` cell asks its builder for the same inputs
//! four times (two sysroots, the key and the tree of glibc's tests); `sysroot --target
//! all --flavour both` eight times.
//!
//! A series is kept by its `patches/` and release, so a builder given another `patches/`
//! (bench's edited copy, by struct update) reads that one; a clone starts with nothing
//! remembered.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Result;
use model::{Release, Target};

use crate::series::Series;

#[derive(Default)]
pub(crate) struct Memo {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    series: BTreeMap<(PathBuf, Release), Series>,
    guarded: BTreeSet<(PathBuf, Release)>,
    compilers: BTreeMap<Target, String>,
}

impl Clone for Memo {
    fn clone(&self) -> Memo {
        Memo::default()
    }
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

impl Memo {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        // A panic elsewhere leaves only complete entries behind: each is inserted whole.
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The series of `release` in `patches`, from `load` the first time. A failure is not
    /// kept: the command ends with it, or asks again.
    pub(crate) fn series(
        &self,
        patches: &Path,
        release: Release,
        load: impl FnOnce() -> Result<Series>,
    ) -> Result<Series> {
        let key = (patches.to_path_buf(), release);
        if let Some(series) = self.kept().series.get(&key) {
            return Ok(series.clone());
        }
        let series = load()?;
        self.kept().series.insert(key, series.clone());
        Ok(series)
    }

    /// Runs the guard of `release`'s series the first time it is asked for; once passed,
    /// it is not run again.
    pub(crate) fn guard(
        &self,
        patches: &Path,
        release: Release,
        check: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let key = (patches.to_path_buf(), release);
        if self.kept().guarded.contains(&key) {
            return Ok(());
        }
        check()?;
        self.kept().guarded.insert(key);
        Ok(())
    }

    /// The compiler of `target` (its version line), from `find` the first time.
    pub(crate) fn compiler(
        &self,
        target: Target,
        find: impl FnOnce() -> Result<String>,
    ) -> Result<String> {
        if let Some(version) = self.kept().compilers.get(&target) {
            return Ok(version.clone());
        }
        let version = find()?;
        self.kept().compilers.insert(target, version.clone());
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each input is asked for once per key; a failure is not kept; a clone remembers
    /// nothing.
    #[test]
    fn each_input_is_read_once_per_key() {
        let memo = Memo::default();
        let calls = std::cell::Cell::new(0);
        let find = |version: &str| {
            calls.set(calls.get() + 1);
            Ok(version.to_string())
        };
        let failing = || -> Result<String> {
            calls.set(calls.get() + 1);
            anyhow::bail!("no compiler")
        };
        assert!(memo.compiler(Target::Aarch64, failing).is_err());
        assert_eq!(
            memo.compiler(Target::X86_64, || find("gcc 12")).unwrap(),
            "gcc 12"
        );
        assert_eq!(
            memo.compiler(Target::X86_64, || find("gcc 13")).unwrap(),
            "gcc 12"
        );
        assert_eq!(
            memo.compiler(Target::Aarch64, || find("cross 12")).unwrap(),
            "cross 12"
        );
        assert_eq!(calls.get(), 3);
        let guards = std::cell::Cell::new(0);
        let newest = Release::newest();
        for _ in 0..3 {
            memo.guard(Path::new("/p"), newest, || {
                guards.set(guards.get() + 1);
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(guards.get(), 1);
        let clone = memo.clone();
        assert_eq!(
            clone.compiler(Target::X86_64, || find("gcc 13")).unwrap(),
            "gcc 13"
        );
    }
}
