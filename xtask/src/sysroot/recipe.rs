//! How a glibc build is made: the toolchain per target, configure flags, and the make steps.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use loader_tests::host::{self, tools, Tool, Toolchain};
use model::Target;
use xshell::cmd;

use super::compiler_cache::CompilerCache;
use crate::util::{logged, shell};

/// Bump when anything in the recipe changes the installed result without changing the other
/// key inputs (new steps, fix-ups after install): every cached build then becomes a miss.
pub(crate) const RECIPE_VERSION: u32 = 1;

/// The configure flags shared by every target. What nothing here reads is not built: nscd,
/// the timezone tools, profiling libraries, and libmvec (the vector math library: ~5% of an
/// x86_64 build, used by no scenario, no replay and no `elf` test). The rest of a build is
/// libc, libm and the loader, which everything links, and glibc's build has no clean switch
/// for its smaller parts (iconvdata's modules are 3%).
const COMMON_FLAGS: &[&str] = &[
    "--prefix=/usr",
    "--disable-werror",
    "--disable-nscd",
    "--disable-timezone-tools",
    "--disable-profile",
    "--disable-mathvec",
    "--without-selinux",
];

/// How glibc's tests are linked: glibc's default (run through the build tree's `ld.so
/// --library-path`), or `--enable-hardcoded-path-in-tests`, which links each test with the
/// build tree's loader and library directories (as DT_RPATH) so that it runs directly, as
/// many maintainers configure their test builds. Only the tests differ: the installed glibc
/// is the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Configuration {
    #[default]
    Default,
    HardcodedPathInTests,
}

impl Configuration {
    /// The configure flag, where there is one.
    pub(crate) fn flag(self) -> Option<&'static str> {
        match self {
            Configuration::Default => None,
            Configuration::HardcodedPathInTests => Some("--enable-hardcoded-path-in-tests"),
        }
    }

    /// What a build tree's directory name adds: each configuration has a tree of its own, as
    /// configure's flags hold for the whole tree.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Configuration::Default => "",
            Configuration::HardcodedPathInTests => "-hardcoded-path-in-tests",
        }
    }
}

/// How glibc is built for one target, with the target's toolchain.
#[derive(Debug, Clone)]
pub(crate) struct Recipe {
    pub toolchain: Toolchain,
    pub configuration: Configuration,
    /// What configure and make compile through, if anything: never part of a build's key
    /// (the objects are the same; see `compiler_cache`).
    pub compiler_cache: Option<CompilerCache>,
}

impl Recipe {
    pub(crate) fn for_target(target: Target) -> Recipe {
        Recipe {
            toolchain: Toolchain::for_target(target),
            configuration: Configuration::Default,
            compiler_cache: None,
        }
    }

    pub(crate) fn configured(self, configuration: Configuration) -> Recipe {
        Recipe {
            configuration,
            ..self
        }
    }

    pub(crate) fn compiled_through(self, compiler_cache: Option<CompilerCache>) -> Recipe {
        Recipe {
            compiler_cache,
            ..self
        }
    }

    pub(crate) fn target(&self) -> Target {
        self.toolchain.target
    }

    /// Every host tool a build needs; glibc's configure would otherwise fail late and cryptically.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        // A cross build still compiles its helper programs with the host compiler.
        let mut tools = vec![
            tools::MAKE,
            tools::GAWK,
            tools::BISON,
            tools::PYTHON3,
            tools::GCC,
        ];
        if self.toolchain.cc != tools::GCC {
            tools.push(self.toolchain.cc);
        }
        tools
    }

    /// Fails before any work, naming the Debian packages to install.
    pub(crate) fn require(&self) -> Result<()> {
        host::require(&self.tools())?;
        self.toolchain.require()
    }

    /// `$CC --version`'s first line: a compiler upgrade must not reuse old builds.
    pub(crate) fn compiler_version(&self) -> Result<String> {
        let cc = self.toolchain.cc.program;
        let sh = shell::here()?;
        let out = cmd!(sh, "{cc} --version")
            .output()
            .with_context(|| format!("cannot run {cc} --version"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text.lines().next().unwrap_or_default().trim().to_string())
    }

    pub(crate) fn configure_flags(&self) -> Vec<String> {
        let mut flags: Vec<String> = COMMON_FLAGS.iter().map(|f| f.to_string()).collect();
        flags.extend(self.configuration.flag().map(str::to_string));
        if !self.target().is_native() {
            flags.push(format!("--host={}", self.target().triplet()));
            for dir in self.toolchain.kernel_headers {
                flags.push(format!("--with-headers={dir}"));
            }
        }
        flags
    }

    /// What configure sees besides its flags: part of the cache key and the configure marker.
    pub(crate) fn environment(&self) -> Vec<(&'static str, String)> {
        vec![
            ("CC", self.toolchain.cc.program.to_string()),
            ("CXX", self.toolchain.cxx.to_string()),
        ]
    }

    /// `cmd` with the environment configure and make are given.
    fn command(&self, cmd: impl Into<Command>) -> Command {
        let mut cmd = cmd.into();
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

    /// `cmd` as [`Recipe::command`] makes it, through the compiler cache if there is one:
    /// for configure and the make steps that compile and install, not for test runs.
    fn compile_command(&self, cmd: impl Into<Command>) -> Result<Command> {
        let mut cmd = self.command(cmd);
        if let Some(cache) = &self.compiler_cache {
            cache.apply(&mut cmd)?;
        }
        Ok(cmd)
    }

    pub(crate) fn configure(
        &self,
        src: &Path,
        build: &Path,
        log: &Path,
        label: &str,
    ) -> Result<()> {
        let configure = src.join("configure");
        let flags = self.configure_flags();
        let sh = shell::in_dir(build)?;
        let mut cmd = self.compile_command(cmd!(sh, "{configure} {flags...}"))?;
        logged::run_timed(
            &mut cmd,
            log,
            &format!("{label}: configure"),
            configure_status,
            Some(&timeline(build, "configure")),
        )
    }

    pub(crate) fn make(&self, build: &Path, jobs: usize, log: &Path, label: &str) -> Result<()> {
        let what = format!("{label}: compile");
        self.run_make(build, jobs, &[], log, &what, "compile")
    }

    /// `make subdirs=elf`: elf's objects, the loader and the libraries made from them (see
    /// `quick`).
    pub(crate) fn make_loader(
        &self,
        build: &Path,
        jobs: usize,
        log: &Path,
        label: &str,
    ) -> Result<()> {
        let what = format!("{label}: compile (make subdirs=elf)");
        self.run_make(
            build,
            jobs,
            &["subdirs=elf".into()],
            log,
            &what,
            "compile-elf",
        )
    }

    pub(crate) fn install(
        &self,
        build: &Path,
        destdir: &Path,
        jobs: usize,
        log: &Path,
        label: &str,
    ) -> Result<()> {
        let args = ["install".into(), format!("DESTDIR={}", destdir.display())];
        self.run_make(
            build,
            jobs,
            &args,
            log,
            &format!("{label}: install"),
            "install",
        )
    }

    /// `make -j<jobs> ARGS` in `build`, logged to `log` as `what`, its progress estimated
    /// from (and recorded in) the build's timeline of `step`.
    fn run_make(
        &self,
        build: &Path,
        jobs: usize,
        args: &[String],
        log: &Path,
        what: &str,
        step: &str,
    ) -> Result<()> {
        let jobs = jobs.to_string();
        let sh = shell::in_dir(build)?;
        let mut cmd = self.compile_command(cmd!(sh, "make -j{jobs} {args...}"))?;
        let timeline = timeline(build, step);
        logged::run_timed(&mut cmd, log, what, make_status, Some(&timeline))
    }
}

/// glibc tests that cannot pass in a tree made from Debian's tarballs, each with the reason:
/// `make check` is told to expect their failure (glibc's own `test-xfail-<test>`), so they
/// are reported as XFAIL, by name, in both trees, and never hidden.
pub(crate) const EXPECTED_TO_FAIL: &[(&str, &str)] = &[(
    "tst-rtld-list-diagnostics",
    "compares ld.so --list-diagnostics with manual/dynlink.texi, which Debian's tarballs lack \
     (the build adds an empty page so that the rest of the run goes on)",
)];

impl Recipe {
    /// `make -k check subdirs=SUBDIR` in a compiled build tree: glibc's own tests of one
    /// subdirectory. Failing tests are results, so the exit status is returned, not judged.
    pub(crate) fn check(
        &self,
        build: &Path,
        subdir: &str,
        jobs: usize,
        log: &Path,
        label: &str,
    ) -> Result<std::process::ExitStatus> {
        logged::run_to_end(
            &mut self.check_command(build, subdir, jobs),
            log,
            &format!("{label}: make check subdirs={subdir}"),
            make_status,
            Some(&timeline(build, &format!("check-{subdir}"))),
        )
    }

    /// The `make -k check subdirs=SUBDIR` command of [`Recipe::check`], for a caller that
    /// runs it its own way (a foreign target's, in a sandbox where QEMU runs its programs).
    /// Built by hand, not with `cmd!`: making a shell can fail (it reads the current
    /// directory), and its caller in verify, a judging source, takes a `Command`, no `Result`.
    pub(crate) fn check_command(&self, build: &Path, subdir: &str, jobs: usize) -> Command {
        let mut cmd = Command::new("make");
        cmd.current_dir(build)
            .arg(format!("-j{jobs}"))
            .args(["-k", "check"])
            .arg(format!("subdirs={subdir}"));
        for (test, _) in EXPECTED_TO_FAIL {
            cmd.arg(format!("test-xfail-{test}=yes"));
        }
        with_a_second_group(self.command(cmd))
    }

    /// The command that installs the tree into the test container's root,
    /// `testroot.pristine`, as glibc's top-level makefile does before a whole `make check`
    /// (a subdirectory's make of single tests never makes it): the root then holds this
    /// tree's loader and libraries, not those an earlier run of another flavour left.
    pub(crate) fn test_root_command(&self, build: &Path, jobs: usize) -> Command {
        let mut cmd = Command::new("make");
        cmd.current_dir(build)
            .arg(format!("-j{jobs}"))
            .arg(build.join("testroot.pristine/install.stamp"));
        with_a_second_group(self.command(cmd))
    }

    /// The command that runs only `tests` (`elf/tst-foo`, of one subdirectory), with what
    /// each needs built first: what glibc's `make test t=elf/tst-foo` does for one test, for
    /// all of them in one make (`-k`: a failing test does not stop the others).
    pub(crate) fn tests_command(
        &self,
        src: &Path,
        build: &Path,
        subdir: &str,
        tests: &[String],
        jobs: usize,
    ) -> Command {
        let mut cmd = Command::new("make");
        cmd.current_dir(src.join(subdir))
            .arg(format!("-j{jobs}"))
            .arg("-k")
            .arg(format!("objdir={}", build.display()))
            .arg(format!("subdir={subdir}"))
            .arg("..=../");
        for test in tests {
            cmd.arg(build.join(format!("{test}.out")));
        }
        with_a_second_group(self.command(cmd))
    }
}

/// `setpriv(1)`, which gives the test run its supplementary group.
const SETPRIV: Tool = Tool::new("setpriv", "util-linux");

/// `nogroup`: the group glibc's support code itself picks for root from 2.42 on.
const NOGROUP: u32 = 65534;

/// `cmd`, run with a supplementary group when this process is root and has none besides its
/// group ID. glibc's set-group-ID tests (`support_capture_subprogram_self_sgid`) make a
/// set-group-ID copy of themselves with a group of the process other than its group ID, as a
/// developer's login has; before 2.42 they report UNSUPPORTED as root without one ("Could not
/// find a suitable GID"), from 2.42 on they take `nogroup` themselves. So every release runs
/// them, with the same group, wherever the suite runs as root (a sandbox maps every group id
/// as itself, so the group is the same there).
fn with_a_second_group(cmd: Command) -> Command {
    if !root_without_a_second_group() {
        return cmd;
    }
    let mut wrapped = Command::new(SETPRIV.program);
    wrapped
        .arg(format!("--groups={NOGROUP}"))
        .arg("--")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    wrapped
}

fn root_without_a_second_group() -> bool {
    // SAFETY: geteuid, getgid and getgroups(0, NULL) have no preconditions; getgroups is
    // given a buffer of the size it just reported.
    unsafe {
        if libc::geteuid() != 0 {
            return false;
        }
        let count = libc::getgroups(0, std::ptr::null_mut());
        let mut groups = vec![0 as libc::gid_t; count.max(0) as usize];
        let count = libc::getgroups(count, groups.as_mut_ptr());
        let gid = libc::getgid();
        groups
            .iter()
            .take(count.max(0) as usize)
            .all(|group| *group == gid)
    }
}

/// Where the times of the last successful `step` in the build tree `build` are recorded: in
/// its work directory (one per release and target, whatever the flavour), beside `build/`,
/// which a reconfigure deletes.
fn timeline(build: &Path, step: &str) -> std::path::PathBuf {
    build
        .parent()
        .unwrap_or(build)
        .join(format!("timeline-{step}"))
}

fn configure_status(line: &str) -> Option<String> {
    let check = line.strip_prefix("checking ")?;
    let check = check.split("... ").next().unwrap_or(check);
    Some(check.chars().take(60).collect())
}

/// `make[2]: Entering directory '/.../glibc/elf'` -> `elf`: which glibc subdir is building.
pub(crate) fn make_status(line: &str) -> Option<String> {
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
        let lines = [
            "make[2]: Entering directory '/work/src/glibc-2.44/elf'",
            "make[1]: Entering directory `/x/nptl'",
            "gcc -c dl-load.c",
            "make[2]: Leaving directory '/x/elf'",
        ];
        let statuses: Vec<Option<String>> = lines.into_iter().map(make_status).collect();
        assert_eq!(
            statuses,
            [Some("elf".into()), Some("nptl".into()), None, None]
        );
    }

    #[test]
    fn configure_status_shows_the_check() {
        let lines = [
            "checking for gcc... gcc",
            "config.status: creating config.make",
        ];
        let statuses: Vec<Option<String>> = lines.into_iter().map(configure_status).collect();
        assert_eq!(statuses, [Some("for gcc".into()), None]);
    }

    #[test]
    fn aarch64_is_a_cross_build_with_the_debian_toolchain() {
        let chain = Recipe::for_target(Target::Aarch64);
        let flags = chain.configure_flags();
        assert!(flags.contains(&"--host=aarch64-linux-gnu".to_string()));
        assert!(flags.contains(&"--prefix=/usr".to_string()));
        assert_eq!(chain.toolchain.cc.package, "gcc-aarch64-linux-gnu");
        for (var, value) in chain.environment() {
            assert!(value.starts_with("aarch64-linux-gnu-"), "{var}={value}");
        }
        let programs: Vec<&str> = chain.tools().iter().map(|t| t.program).collect();
        assert!(programs.contains(&"aarch64-linux-gnu-gcc"), "{programs:?}");
        assert!(programs.contains(&"gcc"), "{programs:?}");
        assert!(!Recipe::for_target(Target::X86_64)
            .configure_flags()
            .iter()
            .any(|f| f.starts_with("--host")));
    }

    #[test]
    fn missing_compiler_is_reported_before_any_work() {
        let chain = Recipe {
            toolchain: Toolchain {
                cc: Tool::new("ld-fallback-no-such-cc", "gcc-ld-fallback-test"),
                ..Toolchain::for_target(Target::X86_64)
            },
            configuration: Configuration::Default,
            compiler_cache: None,
        };
        let err = chain.require().unwrap_err().to_string();
        assert!(
            err.contains("`ld-fallback-no-such-cc` (package gcc-ld-fallback-test)"),
            "{err}"
        );
        assert!(chain.compiler_version().is_err());
    }
}
