//! glibc compiled through ccache, when asked: `LD_FALLBACK_CCACHE=1`.
//!
//! The build trees of one release and target differ in little that the compiler sees. The
//! `--enable-hardcoded-path-in-tests` configuration has a tree of its own, yet compiles the
//! same objects as the default one (it links the tests differently; `ld.so`, `libc.so` and
//! `libm.so` of the two were measured equal but for their debug sections): in a cold
//! `.ci/run` it compiled all of glibc again. Through ccache, with every work tree under one
//! base directory and the directory left out of the hash, an object compiled in one tree is
//! a hit in another. Measured (`cargo xtask bench compiler-cache`, docs/measurements.md): a
//! hit costs little, a miss about half as much again as the plain compile, and in a cold
//! `.ci/run` only the hardcoded-path tree would hit: so the switch is off unless set.
//!
//! ccache runs in its "masquerade" mode: a directory of links named after the compilers,
//! each to `ccache`, first on the `PATH` of configure and make; ccache then runs the next
//! program of that name on `PATH`. configure records the compiler by its name as before, so
//! the build keys, configure's fingerprint and `config.make` are the same with the cache and
//! without it, and a tree compiled one way can be compiled on the other way. glibc's test
//! runs (`make check`, single tests) are not given the cache: they compile only tests, and the
//! foreign target's run in a sandbox that does not see the cache's directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use loader_tests::host::{find_program, Tool};

use crate::util::paths::COMPILER_CACHE_VAR;

pub(crate) const CCACHE: Tool = Tool::new("ccache", "ccache");

/// Every compiler a recipe names (both targets' C and C++ compilers) and the build host's,
/// which glibc's configure picks as `BUILD_CC` for the programs it runs during the build.
const COMPILERS: &[&str] = &[
    "gcc",
    "g++",
    "cc",
    "aarch64-linux-gnu-gcc",
    "aarch64-linux-gnu-g++",
];

/// Room for the objects of a few trees (one x86_64 tree's are about 230 MB, uncompressed);
/// ccache drops the least recently used beyond it.
const MAX_SIZE: &str = "4G";

/// A ccache directory and the links that route the compilers through it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompilerCache {
    /// `ccache` itself, found on `PATH`.
    ccache: PathBuf,
    /// ccache's own directory (`CCACHE_DIR`).
    dir: PathBuf,
    /// The directory every work tree is under (`CCACHE_BASEDIR`): paths below it are hashed
    /// relative to the compiler's working directory, so that two trees share their objects.
    base: PathBuf,
}

impl CompilerCache {
    /// The cache in `dir` for the work trees under `base`; an error naming the package when
    /// `ccache` is not installed.
    pub(crate) fn new(dir: &Path, base: &Path) -> Result<CompilerCache> {
        let Some(ccache) = find_program(CCACHE.program) else {
            bail!(
                "compiling glibc through ccache ({COMPILER_CACHE_VAR}=1), which is not installed: \
                 apt-get install {} (or unset {COMPILER_CACHE_VAR})",
                CCACHE.package
            );
        };
        Ok(CompilerCache {
            ccache,
            dir: dir.to_path_buf(),
            base: base.to_path_buf(),
        })
    }

    /// The directory of links, put first on `PATH`.
    fn links(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// Writes the links that are missing or point elsewhere (each made beside its place and
    /// renamed over it, so that a build interrupted here leaves a link or none, never half).
    fn ensure_links(&self) -> Result<()> {
        let links = self.links();
        fs::create_dir_all(&links).with_context(|| format!("cannot create {}", links.display()))?;
        for name in COMPILERS {
            let link = links.join(name);
            if fs::read_link(&link).ok().as_deref() == Some(self.ccache.as_path()) {
                continue;
            }
            let fresh = links.join(format!(".{name}.new"));
            let _ = fs::remove_file(&fresh);
            std::os::unix::fs::symlink(&self.ccache, &fresh)
                .with_context(|| format!("cannot create the link {}", fresh.display()))?;
            fs::rename(&fresh, &link)
                .with_context(|| format!("cannot move the link into {}", link.display()))?;
        }
        Ok(())
    }

    /// Gives `cmd` the cache: its links first on `PATH`, and ccache's settings.
    pub(crate) fn apply(&self, cmd: &mut Command) -> Result<()> {
        self.ensure_links()?;
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path =
            std::env::join_paths(std::iter::once(self.links()).chain(std::env::split_paths(&path)))
                .context("cannot put the compiler cache's links on PATH")?;
        cmd.env("PATH", path)
            .env("CCACHE_DIR", &self.dir)
            .env("CCACHE_BASEDIR", &self.base)
            .env("CCACHE_NOHASHDIR", "1")
            .env("CCACHE_MAXSIZE", MAX_SIZE);
        Ok(())
    }

    /// What a progress line says about the cache.
    pub(crate) fn describe(&self) -> String {
        format!("through ccache ({})", self.dir.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compilers configure and make find first are links to ccache; a link that points
    /// elsewhere is replaced, and the command is told where the cache and the base are.
    #[test]
    fn a_command_finds_each_compiler_as_a_link_to_ccache_first_on_path() {
        let scratch = tempfile::tempdir().unwrap();
        let fake = scratch.path().join("ccache");
        fs::write(&fake, "").unwrap();
        let cache = CompilerCache {
            ccache: fake.clone(),
            dir: scratch.path().join("cc"),
            base: scratch.path().join("work"),
        };
        fs::create_dir_all(cache.links()).unwrap();
        std::os::unix::fs::symlink("/elsewhere", cache.links().join("gcc")).unwrap();
        let mut cmd = Command::new("make");
        cache.apply(&mut cmd).unwrap();
        for name in COMPILERS {
            assert_eq!(
                fs::read_link(cache.links().join(name)).unwrap(),
                fake,
                "{name}"
            );
        }
        let env: std::collections::BTreeMap<_, _> = cmd
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
            .collect();
        let path = env[std::ffi::OsStr::new("PATH")].clone().unwrap();
        assert_eq!(std::env::split_paths(&path).next().unwrap(), cache.links());
        assert_eq!(
            env[std::ffi::OsStr::new("CCACHE_BASEDIR")].as_deref(),
            Some(cache.base.as_os_str())
        );
        assert_eq!(
            env[std::ffi::OsStr::new("CCACHE_NOHASHDIR")].as_deref(),
            Some(std::ffi::OsStr::new("1"))
        );
    }
}
