//! What this machine provides: the cache directory, the host tools each step needs (and the
//! Debian package of each), and the toolchain that compiles for a target.
//!
//! Every tool the project runs is declared here once, with its package, so that a missing
//! one is named with the `apt-get install` line that provides it, and so that a test can check
//! that `scripts/install-deps` installs every package named here.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use model::Target;

/// A program and the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    pub program: &'static str,
    pub package: &'static str,
}

impl Tool {
    pub const fn new(program: &'static str, package: &'static str) -> Tool {
        Tool { program, package }
    }
}

/// The host tools, by the step that needs them.
pub mod tools {
    use super::Tool;

    pub const GCC: Tool = Tool::new("gcc", "gcc");
    pub const AARCH64_GCC: Tool = Tool::new("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu");
    pub const MAKE: Tool = Tool::new("make", "make");
    pub const GAWK: Tool = Tool::new("gawk", "gawk");
    pub const BISON: Tool = Tool::new("bison", "bison");
    pub const PYTHON3: Tool = Tool::new("python3", "python3");
    pub(crate) const TAR: Tool = Tool::new("tar", "tar");
    pub const XZ: Tool = Tool::new("xz", "xz-utils");
    pub const GIT: Tool = Tool::new("git", "git");
    pub const APT_GET: Tool = Tool::new("apt-get", "apt");
    pub(crate) const DPKG_DEB: Tool = Tool::new("dpkg-deb", "dpkg");
    pub const BWRAP: Tool = Tool::new("bwrap", "bubblewrap");
    pub const CHROOT: Tool = Tool::new("chroot", "coreutils");
    pub const QEMU_AARCH64: Tool = Tool::new("qemu-aarch64-static", "qemu-user-static");
    pub(crate) const QUILT: Tool = Tool::new("quilt", "quilt");
    pub(crate) const PATCH: Tool = Tool::new("patch", "patch");
    /// Gives fixtures and NVIDIA's libraries the RUNPATH and DT_NEEDED entries Nix gives them.
    pub const PATCHELF: Tool = Tool::new("patchelf", "patchelf");

    /// Every tool above: what `scripts/install-deps` must provide.
    pub const ALL: &[Tool] = &[
        GCC,
        AARCH64_GCC,
        MAKE,
        GAWK,
        BISON,
        PYTHON3,
        TAR,
        XZ,
        GIT,
        APT_GET,
        DPKG_DEB,
        BWRAP,
        CHROOT,
        QEMU_AARCH64,
        QUILT,
        PATCH,
        PATCHELF,
    ];
}

/// A directory that a Debian package provides (no program to look for on `$PATH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackagedDir {
    pub path: &'static str,
    pub package: &'static str,
    pub what: &'static str,
}

/// The aarch64 Linux headers glibc and the fixtures are compiled against. The cross compiler
/// recommends, but does not depend on, the package: `--no-install-recommends` leaves it out.
pub(crate) const AARCH64_KERNEL_HEADERS: PackagedDir = PackagedDir {
    path: "/usr/aarch64-linux-gnu/include",
    package: "linux-libc-dev-arm64-cross",
    what: "Linux headers for aarch64",
};

/// Debian's aarch64 cross glibc with its headers and start files: a stock 2.36 loader for
/// aarch64 programs the host's compiler builds, the search model's reference when no built
/// sysroot is at hand (loader-tests/tests/explain_host.rs).
pub const AARCH64_CROSS_LIBC: PackagedDir = PackagedDir {
    path: "/usr/aarch64-linux-gnu/include/sys",
    package: "libc6-dev-arm64-cross",
    what: "Debian's aarch64 cross glibc (headers and libraries)",
};

/// Every directory above: also what `scripts/install-deps` must provide.
pub const PACKAGED_DIRS: &[PackagedDir] = &[AARCH64_KERNEL_HEADERS, AARCH64_CROSS_LIBC];

/// How to compile for a target: glibc itself and the C fixtures use the same compiler.
#[derive(Debug, Clone, Copy)]
pub struct Toolchain {
    pub target: Target,
    pub cc: Tool,
    /// Only glibc's test programs use C++. Always named for the target: left unset, glibc's
    /// configure would pick the host's `g++` and link x86_64 objects into aarch64 programs.
    /// A cross `g++` that is not installed is fine: configure then disables C++.
    pub cxx: &'static str,
    /// The Linux headers (`linux/`, `asm/`) the target's glibc headers include.
    pub kernel_headers: &'static [&'static str],
    /// A directory that must exist for this toolchain to work, besides the compiler.
    pub needs_dir: Option<PackagedDir>,
}

impl Toolchain {
    pub fn for_target(target: Target) -> Toolchain {
        match target {
            Target::X86_64 => Toolchain {
                target,
                cc: tools::GCC,
                cxx: "g++",
                kernel_headers: &["/usr/include/x86_64-linux-gnu", "/usr/include"],
                needs_dir: None,
            },
            Target::Aarch64 => Toolchain {
                target,
                cc: tools::AARCH64_GCC,
                cxx: "aarch64-linux-gnu-g++",
                kernel_headers: &[AARCH64_KERNEL_HEADERS.path],
                needs_dir: Some(AARCH64_KERNEL_HEADERS),
            },
        }
    }

    /// Fails, naming the packages to install, unless the compiler and its headers are there.
    pub fn require(&self) -> Result<()> {
        require(&[self.cc])?;
        require_dirs(self.needs_dir.as_slice())
    }
}

/// The QEMU user-mode emulator that runs `target`'s programs here, if the target is not native.
pub(crate) fn emulator(target: Target) -> Option<Tool> {
    match target {
        _ if target.is_native() => None,
        Target::Aarch64 => Some(tools::QEMU_AARCH64),
        Target::X86_64 => None,
    }
}

/// Fails naming every missing tool and one `apt-get install` line that provides them all.
pub fn require(tools: &[Tool]) -> Result<()> {
    let missing: Vec<&Tool> = tools
        .iter()
        .filter(|t| find_program(t.program).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = missing
        .iter()
        .map(|t| format!("`{}` (package {})", t.program, t.package))
        .collect();
    let mut packages: Vec<&str> = missing.iter().map(|t| t.package).collect();
    packages.sort();
    packages.dedup();
    bail!(
        "missing tool{}: {}\ninstall with: apt-get install {} (or run scripts/install-deps)",
        if missing.len() == 1 { "" } else { "s" },
        names.join(", "),
        packages.join(" ")
    )
}

/// Fails naming the package of every directory that is missing.
pub fn require_dirs(dirs: &[PackagedDir]) -> Result<()> {
    let missing: Vec<&PackagedDir> = dirs
        .iter()
        .filter(|d| !Path::new(d.path).is_dir())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = missing
        .iter()
        .map(|d| format!("{} at {} (package {})", d.what, d.path, d.package))
        .collect();
    let packages: Vec<&str> = missing.iter().map(|d| d.package).collect();
    bail!(
        "missing {}\ninstall with: apt-get install {} (or run scripts/install-deps)",
        names.join(", "),
        packages.join(" ")
    )
}

/// The first `program` on `$PATH`, like `command -v`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| program.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The cache root, outside the repository so that builds survive a fresh clone:
/// `$LD_FALLBACK_CACHE`, else `$XDG_CACHE_HOME/ld-fallback`, else `~/.cache/ld-fallback`.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(dir) = non_empty_env("LD_FALLBACK_CACHE") {
        return Ok(dir);
    }
    if let Some(dir) = non_empty_env("XDG_CACHE_HOME") {
        return Ok(dir.join("ld-fallback"));
    }
    match non_empty_env("HOME") {
        Some(home) => Ok(home.join(".cache").join("ld-fallback")),
        None => bail!("cannot place the cache: set LD_FALLBACK_CACHE, XDG_CACHE_HOME or HOME"),
    }
}

/// An environment variable naming a path, unless unset or empty.
pub fn non_empty_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Whether this process runs as root (needed for the setuid secure-mode scenarios).
pub(crate) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(2).map(|euid| euid == "0")
        })
        .unwrap_or(false)
}

/// Whether this runs in CI (`$CI` set, as every CI engine does): tests whose inputs are
/// missing must then fail instead of passing without looking.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tool_names_its_package() {
        let err = require(&[
            Tool::new("sh", "dash"),
            Tool::new("ld-fallback-no-such-tool", "ld-fallback-pkg"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`ld-fallback-no-such-tool` (package ld-fallback-pkg)"),
            "{err}"
        );
        assert!(err.contains("apt-get install ld-fallback-pkg"), "{err}");
        assert!(!err.contains("dash"), "{err}");
    }

    #[test]
    fn missing_dir_names_its_package() {
        let err = require_dirs(&[PackagedDir {
            path: "/nonexistent/ld-fallback",
            package: "ld-fallback-headers",
            what: "test headers",
        }])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("test headers at /nonexistent/ld-fallback (package ld-fallback-headers)"),
            "{err}"
        );
    }
}
