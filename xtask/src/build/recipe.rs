//! How a glibc build is made: the toolchain per target, configure flags, and the make steps.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use loader_tests::Target;

use crate::logged;
use crate::tools::{self, Tool};

/// Bump when anything in the recipe changes the installed result without changing the other
/// key inputs (new steps, fix-ups after install): every cached build then becomes a miss.
pub const RECIPE_VERSION: u32 = 1;

/// The configure flags shared by every target.
const COMMON_FLAGS: &[&str] = &[
    "--prefix=/usr",
    "--disable-werror",
    "--disable-nscd",
    "--disable-timezone-tools",
    "--disable-profile",
    "--without-selinux",
];

/// The Debian cross toolchain's Linux headers.
const AARCH64_HEADERS: &str = "/usr/aarch64-linux-gnu/include";

/// The compilers and flags that build glibc for one target.
#[derive(Debug, Clone)]
pub struct Toolchain {
    pub target: Target,
    pub cc: Tool,
    /// Only glibc's test programs use C++. Always named for the target: left unset, configure
    /// would pick the host's `g++` and link x86_64 objects into aarch64 programs. A cross
    /// `g++` that is not installed is fine: configure then disables C++.
    pub cxx: &'static str,
}

impl Toolchain {
    pub fn for_target(target: Target) -> Toolchain {
        match target {
            Target::X86_64 => Toolchain {
                target,
                cc: Tool::new("gcc", "gcc"),
                cxx: "g++",
            },
            Target::Aarch64 => Toolchain {
                target,
                cc: Tool::new("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
                cxx: "aarch64-linux-gnu-g++",
            },
        }
    }

    /// Every host tool a build needs; glibc's configure would otherwise fail late and cryptically.
    pub fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            Tool::new("make", "make"),
            Tool::new("gawk", "gawk"),
            Tool::new("bison", "bison"),
            Tool::new("python3", "python3"),
            // A cross build still compiles its helper programs with the host compiler.
            Tool::new("gcc", "gcc"),
        ];
        if self.cc.program != "gcc" {
            tools.push(self.cc);
        }
        tools
    }

    /// Fails before any work, naming the Debian packages to install.
    pub fn require(&self) -> Result<()> {
        tools::require(&self.tools())?;
        if self.target == Target::Aarch64 && !Path::new(AARCH64_HEADERS).is_dir() {
            bail!(
                "missing Linux headers for aarch64 at {AARCH64_HEADERS}\n\
                 install with: apt-get install linux-libc-dev-arm64-cross"
            );
        }
        Ok(())
    }

    /// `$CC --version`'s first line: a compiler upgrade must not reuse old builds.
    pub fn compiler_version(&self) -> Result<String> {
        let out = Command::new(self.cc.program)
            .arg("--version")
            .output()
            .with_context(|| format!("cannot run {} --version", self.cc.program))?;
        if !out.status.success() {
            bail!("{} --version failed ({})", self.cc.program, out.status);
        }
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text.lines().next().unwrap_or_default().trim().to_string())
    }

    pub fn configure_flags(&self) -> Vec<String> {
        let mut flags: Vec<String> = COMMON_FLAGS.iter().map(|f| f.to_string()).collect();
        if self.target == Target::Aarch64 {
            flags.push(format!("--host={}", self.target.triplet()));
            flags.push(format!("--with-headers={AARCH64_HEADERS}"));
        }
        flags
    }

    /// What configure sees besides its flags: part of the cache key and the configure marker.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        vec![
            ("CC", self.cc.program.to_string()),
            ("CXX", self.cxx.to_string()),
        ]
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir);
        // A caller's flags or make settings would silently change what gets built.
        for var in [
            "CFLAGS",
            "CPPFLAGS",
            "CXXFLAGS",
            "LDFLAGS",
            "MAKEFLAGS",
            "MFLAGS",
            "MAKELEVEL",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(self.environment());
        cmd
    }

    pub fn configure(&self, src: &Path, build: &Path, log: &Path, label: &str) -> Result<()> {
        let mut cmd = self.command(src.join("configure"), build);
        cmd.args(self.configure_flags());
        logged::run(
            &mut cmd,
            log,
            &format!("{label}: configure"),
            configure_status,
        )
    }

    pub fn make(&self, build: &Path, jobs: usize, log: &Path, label: &str) -> Result<()> {
        let mut cmd = self.command("make", build);
        cmd.arg(format!("-j{jobs}"));
        logged::run(&mut cmd, log, &format!("{label}: compile"), make_status)
    }

    pub fn install(
        &self,
        build: &Path,
        destdir: &Path,
        jobs: usize,
        log: &Path,
        label: &str,
    ) -> Result<()> {
        let mut cmd = self.command("make", build);
        cmd.arg(format!("-j{jobs}"))
            .arg("install")
            .arg(format!("DESTDIR={}", destdir.display()));
        logged::run(&mut cmd, log, &format!("{label}: install"), make_status)
    }
}

fn configure_status(line: &str) -> Option<String> {
    let check = line.strip_prefix("checking ")?;
    let check = check.split("... ").next().unwrap_or(check);
    Some(check.chars().take(60).collect())
}

/// `make[2]: Entering directory '/.../glibc/elf'` -> `elf`: which glibc subdir is building.
pub fn make_status(line: &str) -> Option<String> {
    let rest = line.strip_prefix("make")?;
    let dir = rest.split_once("Entering directory ")?.1;
    let dir = dir.trim_matches(|c| matches!(c, '\'' | '`' | '"'));
    let name = Path::new(dir).file_name()?.to_string_lossy().into_owned();
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_status_names_the_subdir() {
        assert_eq!(
            make_status("make[2]: Entering directory '/work/src/glibc-2.44/elf'").as_deref(),
            Some("elf")
        );
        assert_eq!(
            make_status("make[1]: Entering directory `/x/nptl'").as_deref(),
            Some("nptl")
        );
        assert_eq!(make_status("gcc -c dl-load.c"), None);
        assert_eq!(make_status("make[2]: Leaving directory '/x/elf'"), None);
    }

    #[test]
    fn configure_status_shows_the_check() {
        assert_eq!(
            configure_status("checking for gcc... gcc").as_deref(),
            Some("for gcc")
        );
        assert_eq!(
            configure_status("config.status: creating config.make"),
            None
        );
    }

    #[test]
    fn aarch64_is_a_cross_build_with_the_debian_toolchain() {
        let chain = Toolchain::for_target(Target::Aarch64);
        let flags = chain.configure_flags();
        assert!(flags.contains(&"--host=aarch64-linux-gnu".to_string()));
        assert!(flags.contains(&"--prefix=/usr".to_string()));
        assert_eq!(chain.cc.package, "gcc-aarch64-linux-gnu");
        for (var, value) in chain.environment() {
            assert!(value.starts_with("aarch64-linux-gnu-"), "{var}={value}");
        }
        let programs: Vec<&str> = chain.tools().iter().map(|t| t.program).collect();
        assert!(programs.contains(&"aarch64-linux-gnu-gcc"), "{programs:?}");
        assert!(programs.contains(&"gcc"), "{programs:?}");
        assert!(!Toolchain::for_target(Target::X86_64)
            .configure_flags()
            .iter()
            .any(|f| f.starts_with("--host")));
    }

    #[test]
    fn missing_compiler_is_reported_before_any_work() {
        let chain = Toolchain {
            target: Target::X86_64,
            cc: Tool::new("ld-fallback-no-such-cc", "gcc-ld-fallback-test"),
            cxx: "g++",
        };
        let err = chain.require().unwrap_err().to_string();
        assert!(
            err.contains("`ld-fallback-no-such-cc` (package gcc-ld-fallback-test)"),
            "{err}"
        );
        assert!(chain.compiler_version().is_err());
    }
}
