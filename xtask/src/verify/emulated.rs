//! glibc's tests of a target this machine does not run natively (aarch64 on x86_64), run the
//! way glibc's cross testing expects: every program of the target, those a test spawns
//! included, runs under QEMU user mode through binfmt_misc. The machine's own binfmt_misc is
//! never touched: `make check` runs in a user namespace of its own with a private
//! binfmt_misc instance (Linux 6.7 and later allow one), where `qemu-aarch64-static` is
//! registered for the target's ELF files with the flags F (the interpreter is opened at
//! registration, so nothing has to be visible from the namespace) and C (a set-user-ID or
//! set-group-ID program runs with its own credentials: the secure-mode tests run in secure
//! mode, AT_SECURE included).
//!
//! Why not glibc's `test-wrapper` hook (a script that runs each test program under QEMU):
//! the wrapper runs the test, not what the test spawns, so every test that starts a program
//! of the target fails (measured: 102 such failures in 499 elf tests, against 9 with
//! binfmt_misc, and a run four times longer). A kernel that refuses the private instance is
//! said (the suite step is then unavailable on that machine, which makes the cell incomplete),
//! not worked around with a wrapper whose failures would have to be told apart from the
//! patch's.
//!
//! When this process is root the namespace maps every user and group id of its parent to
//! itself, so that the tests that switch ids (set-group-ID copies of themselves) find them;
//! otherwise only the caller's id is mapped (to root) and those tests cannot run: they end in
//! both trees alike, named as what this machine imposes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use loader_tests::host::{self, tools, Tool};
use model::Target;

/// What QEMU user mode itself keeps a test of the target from doing, told by what the test
/// printed (a line of its `.out`), with why: (what the line says, why QEMU imposes it). A
/// test that ends UNSUPPORTED with one of these reasons did not fail to look at the patch;
/// it cannot look under emulation, and is declared as such instead of leaving its cell
/// incomplete. Each entry is a fact about QEMU measured here, never a way to pass a test.
pub(crate) const IMPOSED_BY_QEMU: &[(&str, &str)] = &[
    (
        "unable to unshare user/fs: Invalid argument",
        "QEMU user mode runs the program in a process with threads of its own, and \
         unshare(CLONE_NEWUSER) refuses a multi-threaded caller (EINVAL), so test-container \
         cannot make the namespace of its container",
    ),
    (
        "copying from \"/proc/self/exe\"",
        "QEMU user mode answers stat of /proc/self/exe with QEMU's own binary, so \
         support_capture_subprogram_self_sgid copies fewer bytes than it expects",
    ),
];

/// Why QEMU user mode, not the patch or the machine, ended a test that printed `reason`.
pub(crate) fn imposed_by_qemu(reason: &str) -> Option<&'static str> {
    IMPOSED_BY_QEMU
        .iter()
        .find(|(says, _)| reason.contains(says))
        .map(|(_, why)| *why)
}

/// `unshare(1)`, which makes the namespace.
const UNSHARE: Tool = Tool::new("unshare", "util-linux");

/// What the namespace's first process does once its parent released it: mount the private
/// binfmt_misc, register the emulator, then become the command.
const SCRIPT: &str = r#"read -r go || exit 125
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || exit 125
printf '%s' "$LD_FALLBACK_BINFMT" > /proc/sys/fs/binfmt_misc/register || exit 125
unset LD_FALLBACK_BINFMT
exec "$@" </dev/null"#;

/// A way to run a foreign target's programs here, found to work by [`Sandbox::probe`].
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    /// The binfmt_misc registration (`:name:M::magic:mask:interpreter:flags`).
    registration: String,
    ids: Ids,
    /// How the target's programs run, for the record.
    pub runs: String,
}

#[derive(Debug, Clone)]
enum Ids {
    /// Root: each range of this process's own map, as itself (`uid_map`, `gid_map` text).
    Identity { uid_map: String, gid_map: String },
    /// Not root: the caller as root, nobody else (`unshare --map-root-user`).
    CallerAsRoot,
}

/// The ELF header of the target's programs (class, data, version, e_type, e_machine) and
/// the mask binfmt_misc compares it under: Debian's qemu-user-static registration.
fn elf_magic(target: Target) -> Option<(&'static str, &'static str)> {
    match target {
        Target::Aarch64 => Some((
            r"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00",
            r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff",
        )),
        Target::X86_64 => None,
    }
}

fn emulator(target: Target) -> Option<Tool> {
    match target {
        Target::Aarch64 => Some(tools::QEMU_AARCH64),
        Target::X86_64 => None,
    }
}

impl Sandbox {
    /// A sandbox for `target`, tried by running `program` (a program of the target that
    /// prints and exits 0, the tree's own loader with `--version`, say) in it: the reason it
    /// cannot be had here when it fails.
    pub(crate) fn probe(target: Target, program: &Path) -> Result<Sandbox> {
        let (Some(emulator), Some((magic, mask))) = (emulator(target), elf_magic(target)) else {
            bail!("{target} runs natively here: no emulator to register");
        };
        host::require(&[UNSHARE, emulator])?;
        let qemu = host::find_program(emulator.program).expect("required above");
        let version = qemu_version(&qemu);
        let ids = if is_root() {
            Ids::Identity {
                uid_map: identity_map("/proc/self/uid_map")?,
                gid_map: identity_map("/proc/self/gid_map")?,
            }
        } else {
            Ids::CallerAsRoot
        };
        let sandbox = Sandbox {
            registration: format!(
                ":ld-fallback-{target}:M::{magic}:{mask}:{}:FC",
                qemu.display()
            ),
            runs: format!(
                "under QEMU user mode ({version}), through a private binfmt_misc in a user namespace (flags F and C), {}",
                match ids {
                    Ids::Identity { .. } => "every user and group id mapped as itself",
                    Ids::CallerAsRoot => "only the caller's id mapped (to root: tests that switch ids cannot run)",
                }
            ),
            ids,
        };
        let mut cmd = Command::new(program);
        cmd.arg("--version");
        let mut cmd = sandbox.command(&cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", UNSHARE.program))?;
        if let Err(err) = sandbox.start(&mut child) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(err).context(kernel_says());
        }
        let out = child
            .wait_with_output()
            .context("cannot wait for the probe")?;
        if !out.status.success() {
            bail!(
                "{} ({}): {}",
                kernel_says(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(sandbox)
    }

    /// `inner` (its program, arguments, directory and environment) to be run in the
    /// sandbox; spawn it with a piped stdin and call [`Sandbox::start`] on the child.
    pub(crate) fn command(&self, inner: &Command) -> Command {
        let mut cmd = Command::new(UNSHARE.program);
        cmd.arg("--user");
        if let Ids::CallerAsRoot = self.ids {
            cmd.arg("--map-root-user");
        }
        cmd.args(["--mount", "--", "sh", "-c", SCRIPT, "sh"])
            .arg(inner.get_program())
            .args(inner.get_args());
        if let Some(dir) = inner.get_current_dir() {
            cmd.current_dir(dir);
        }
        for (name, value) in inner.get_envs() {
            match value {
                Some(value) => cmd.env(name, value),
                None => cmd.env_remove(name),
            };
        }
        cmd.env("LD_FALLBACK_BINFMT", &self.registration);
        cmd
    }

    /// Gives the namespace of `child` (spawned from [`Sandbox::command`]) its id maps and
    /// lets it go on.
    pub(crate) fn start(&self, child: &mut Child) -> Result<()> {
        if let Ids::Identity { uid_map, gid_map } = &self.ids {
            let proc = PathBuf::from(format!("/proc/{}", child.id()));
            wait_for_namespace(&proc, child)?;
            for (file, map) in [("uid_map", uid_map), ("gid_map", gid_map)] {
                std::fs::write(proc.join(file), map).with_context(|| {
                    format!("cannot write the namespace's {file} ({})", map.trim())
                })?;
            }
        }
        let mut stdin = child
            .stdin
            .take()
            .context("the sandbox's stdin is not a pipe")?;
        stdin
            .write_all(b"go\n")
            .context("the sandbox ended before it was started")
    }
}

/// What to say when the namespace or its binfmt_misc cannot be had.
fn kernel_says() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "this machine (Linux {}) gives no user namespace with a private binfmt_misc (Linux 6.7 \
         and later do, where user namespaces are allowed)",
        kernel.trim()
    )
}

/// Waits until `child` (still `unshare`, about to exec the script) is in a user namespace
/// of its own: its maps can only be written then.
fn wait_for_namespace(proc: &Path, child: &mut Child) -> Result<()> {
    let own = std::fs::read_link("/proc/self/ns/user").context("cannot read /proc/self/ns/user")?;
    let started = Instant::now();
    loop {
        if let Ok(theirs) = std::fs::read_link(proc.join("ns/user")) {
            if theirs != own {
                return Ok(());
            }
        }
        if let Some(status) = child.try_wait().context("cannot wait for unshare")? {
            bail!("unshare ended before it made the namespace ({status})");
        }
        if started.elapsed() > Duration::from_secs(10) {
            bail!("unshare made no user namespace within 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Each range of a `/proc/self/{uid,gid}_map` (`inside outside count`), as itself.
fn identity_map(path: &str) -> Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
    identity_of(&text).with_context(|| format!("{path} is not an id map: {text:?}"))
}

fn identity_of(map: &str) -> Option<String> {
    let mut out = String::new();
    for line in map.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<u64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        let [inside, _, count] = fields[..] else {
            return None;
        };
        out.push_str(&format!("{inside} {inside} {count}\n"));
    }
    (!out.is_empty()).then_some(out)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `qemu-aarch64 version 7.2.22 (Debian ...)`, the first line, or the path when it says
/// nothing.
fn qemu_version(qemu: &Path) -> String {
    Command::new(qemu)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .map(|l| l.trim().to_string())
        })
        .filter(|line| !line.is_empty())
        .unwrap_or_else(|| qemu.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An aarch64 program that prints its ids and AT_SECURE, or with `exec PROGRAM...` execs
    /// another: what a glibc test that spawns a program of the target does.
    const PROBE: &str = r#"#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
int main (int argc, char **argv)
{
  if (argc > 2 && strcmp (argv[1], "exec") == 0)
    {
      execv (argv[2], argv + 2);
      perror ("execv");
      return 127;
    }
  printf ("uid=%d euid=%d gid=%d egid=%d secure=%lu\n", (int) getuid (), (int) geteuid (),
          (int) getgid (), (int) getegid (), getauxval (AT_SECURE));
  return 0;
}
"#;

    /// The sandbox for real: a program of the target runs, execs another (which fails with
    /// exit 127 without binfmt_misc), and a set-group-ID copy runs in secure mode.
    #[test]
    fn a_foreign_program_spawns_another_and_a_set_group_id_one_runs_in_secure_mode() {
        let missing = [tools::AARCH64_GCC, tools::QEMU_AARCH64, UNSHARE]
            .into_iter()
            .filter(|t| host::find_program(t.program).is_none())
            .map(|t| t.program)
            .collect::<Vec<_>>();
        if !missing.is_empty() {
            assert!(!host::in_ci(), "missing {missing:?}");
            eprintln!("SKIPPED: missing {missing:?}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (src, prog) = (dir.path().join("probe.c"), dir.path().join("probe"));
        std::fs::write(&src, PROBE).unwrap();
        let built = Command::new(tools::AARCH64_GCC.program)
            .args(["-static", "-o"])
            .arg(&prog)
            .arg(&src)
            .status()
            .unwrap();
        assert!(built.success());
        let sandbox = match Sandbox::probe(Target::Aarch64, &prog) {
            Ok(sandbox) => sandbox,
            Err(err) => {
                assert!(!host::in_ci(), "{err:#}");
                eprintln!("SKIPPED: {err:#}");
                return;
            }
        };
        let setgid = dir.path().join("probe-sgid");
        std::fs::copy(&prog, &setgid).unwrap();
        let root = is_root();
        if root {
            std::os::unix::fs::chown(&setgid, Some(0), Some(1234)).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&setgid, std::fs::Permissions::from_mode(0o2755)).unwrap();
        }
        let mut inner = Command::new(&prog);
        inner.arg("exec").arg(&setgid);
        let mut cmd = sandbox.command(&inner);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        sandbox.start(&mut child).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let expected = if root {
            "uid=0 euid=0 gid=0 egid=1234 secure=1\n"
        } else {
            "uid=0 euid=0 gid=0 egid=0 secure=0\n"
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
        assert!(
            sandbox
                .runs
                .starts_with("under QEMU user mode (qemu-aarch64"),
            "{}",
            sandbox.runs
        );
        // The way `make check` runs in it: through the logged runner, started from outside.
        let log = dir.path().join("log");
        let status = crate::util::logged::run_to_end_started(
            &mut sandbox.command(&inner),
            &log,
            "probe",
            |_| None,
            &mut |child| sandbox.start(child),
        )
        .unwrap();
        assert!(status.success());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.ends_with(expected), "{text}");
    }

    #[test]
    fn an_id_map_is_mapped_as_itself() {
        let maps = [
            "         0          0 4294967295\n",
            "0 100000 65536\n65536 5000 1\n",
            "",
            "0 0\n",
        ];
        let identities: Vec<Option<String>> = maps.into_iter().map(identity_of).collect();
        assert_eq!(
            identities,
            [
                Some("0 0 4294967295\n".into()),
                Some("0 0 65536\n65536 65536 1\n".into()),
                None,
                None,
            ]
        );
    }

    #[test]
    fn the_command_keeps_the_inner_one_s_words_directory_and_environment() {
        let sandbox = Sandbox {
            registration: ":x:M::a:b:/q:FC".into(),
            ids: Ids::CallerAsRoot,
            runs: String::new(),
        };
        let mut inner = Command::new("make");
        inner
            .args(["-j2", "check"])
            .current_dir("/tmp")
            .env("CC", "aarch64-linux-gnu-gcc")
            .env_remove("MAKEFLAGS");
        let cmd = sandbox.command(&inner);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--user",
                "--map-root-user",
                "--mount",
                "--",
                "sh",
                "-c",
                SCRIPT,
                "sh",
                "make",
                "-j2",
                "check"
            ]
        );
        assert_eq!(cmd.get_current_dir(), Some(Path::new("/tmp")));
        let envs: Vec<(String, Option<String>)> = cmd
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        assert_eq!(
            envs,
            [
                ("CC".to_string(), Some("aarch64-linux-gnu-gcc".to_string())),
                (
                    "LD_FALLBACK_BINFMT".to_string(),
                    Some(":x:M::a:b:/q:FC".to_string())
                ),
                ("MAKEFLAGS".to_string(), None),
            ]
        );
    }
}
