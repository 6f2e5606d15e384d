//! Running a program inside a root, and reading what the probe says it loaded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result};

/// Where `Root::setuid_qemu` puts QEMU inside a root.
pub const SETUID_QEMU: &str = "/qemu-setuid";

/// Everything needed to run a command again (with `LD_DEBUG=libs` to explain a miss).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Invocation {
    pub root: PathBuf,
    pub cwd: String,
    pub qemu: Option<PathBuf>,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub secure: bool,
    /// (directory, role) of the `libcuda.so.1` copies in the root.
    pub placed: Vec<(String, String)>,
}

impl Invocation {
    /// The same command with `name=value` added to (or replacing it in) the environment.
    pub fn with_env(&self, name: &str, value: &str) -> Invocation {
        let mut again = self.clone();
        again.env.retain(|(n, _)| n != name);
        again.env.push((name.to_string(), value.to_string()));
        again
    }

    pub(crate) fn run(&self, placed: Vec<(String, String)>) -> Result<Output> {
        let mut cmd = self.command();
        let out = cmd
            .output()
            .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
        use std::os::unix::process::ExitStatusExt;
        Ok(Output {
            code: out.status.code(),
            signal: out.status.signal(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            placed,
        })
    }

    /// How the command line reads, for reports: `LD_FALLBACK_PATH=... /opt/probe/bin/needed needed`.
    pub fn display(&self) -> String {
        let mut words: Vec<String> = self
            .env
            .iter()
            .map(|(n, v)| {
                let v = if v.len() > 60 {
                    format!("{}...({} bytes)", &v[..40], v.len())
                } else {
                    v.clone()
                };
                format!("{n}={v}")
            })
            .collect();
        words.extend(self.argv.iter().cloned());
        if self.secure {
            words.insert(0, "[setuid, uid 65534]".into());
        }
        words.join(" ")
    }

    /// The command that runs this inside its root, as the harness runs it: bubblewrap with the
    /// root as `/` (QEMU for another target), or a chroot as nobody for a secure run.
    pub fn command(&self) -> Command {
        const PATH: &str = "/usr/bin:/bin:/usr/sbin:/sbin";
        let mut cmd;
        if self.secure {
            // chroot is a host program: the scenario's variables reach the host loader too.
            // Secure scenarios only set LD_FALLBACK_PATH, which the host loader ignores.
            static CHROOT: OnceLock<PathBuf> = OnceLock::new();
            cmd = Command::new(by_path("chroot", &CHROOT));
            cmd.arg("--userspec=65534:65534").arg(&self.root);
            cmd.env_clear().env("PATH", PATH);
            for (name, value) in &self.env {
                cmd.env(name, value);
            }
            if self.qemu.is_some() {
                // A setuid-root copy of QEMU (Root::setuid_qemu): the kernel gives QEMU
                // AT_SECURE, and QEMU passes its own AT_SECURE on to the guest.
                cmd.arg(SETUID_QEMU);
            }
        } else {
            // The variables go to the program through bwrap's --setenv, not to bwrap itself:
            // LD_AUDIT or LD_DEBUG must not act on the host loader that starts bwrap.
            static BWRAP: OnceLock<PathBuf> = OnceLock::new();
            cmd = Command::new(by_path("bwrap", &BWRAP));
            cmd.env_clear()
                .env("PATH", PATH)
                .arg("--bind")
                .arg(&self.root)
                .arg("/")
                .args(["--proc", "/proc", "--dev", "/dev", "--chdir", &self.cwd])
                .args(["--clearenv", "--setenv", "PATH", PATH]);
            for (name, value) in &self.env {
                cmd.args(["--setenv", name, value]);
            }
            if let Some(qemu) = &self.qemu {
                cmd.arg("--ro-bind").arg(qemu).arg("/qemu");
            }
            cmd.arg("--");
            if self.qemu.is_some() {
                cmd.arg("/qemu");
            }
        }
        cmd.args(&self.argv);
        cmd
    }
}

/// `program` by its path on this process's PATH (its name where none is found, for the
/// error to name). std starts a command whose environment is cleared and whose program is a
/// bare name with fork and exec, which copies this process (a test holding thousands of
/// results, on several threads) for every run; a program given by its path is started with
/// posix_spawn, which does not copy it.
fn by_path(program: &str, found: &'static OnceLock<PathBuf>) -> &'static Path {
    found.get_or_init(|| crate::host::find_program(program).unwrap_or_else(|| program.into()))
}

/// What a run printed and how it ended.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// (directory, role) of the `libcuda.so.1` copies in the root.
    pub(crate) placed: Vec<(String, String)>,
}

/// One `load ...` or `fail ...` line of the probe.
#[derive(Debug, Clone, Default)]
pub(crate) struct Record {
    pub kind: String,
    pub how: String,
    pub role: String,
    pub version: String,
    pub path: String,
    pub nvrm_mem: String,
    pub nvrm_gpu: String,
    pub error: String,
}

impl Output {
    pub(crate) fn status_text(&self) -> String {
        match (self.code, self.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "unknown status".into(),
        }
    }

    pub(crate) fn records(&self) -> Vec<Record> {
        self.stdout.lines().filter_map(parse_record).collect()
    }

    pub(crate) fn loads(&self) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| r.kind == "load")
            .collect()
    }

    /// Which copy won: a role (`compat`, `driver`, ...), `not found`, or what went wrong.
    pub(crate) fn winner(&self) -> String {
        if let Some(sig) = self.signal {
            return format!("crash (signal {sig})");
        }
        let records = self.records();
        match records.last() {
            Some(r) if r.kind == "fail" && self.code == Some(1) => return classify(&r.error),
            Some(r) if r.kind == "fail" => {
                return format!("{} but {}", classify(&r.error), self.status_text())
            }
            Some(r) if r.kind == "load" && self.code == Some(0) => return self.name(r),
            _ => {}
        }
        if self.stderr.contains("error while loading shared libraries") {
            return classify(&self.stderr);
        }
        if let Some(option) = self
            .stderr
            .split_once("unrecognized option ")
            .map(|(_, rest)| first_line(rest))
        {
            return format!("ld.so: unrecognized option {option}");
        }
        match self.loads().last() {
            Some(r) if self.code == Some(0) => self.name(r),
            _ => format!("{}: {}", self.status_text(), first_line(&self.stderr)),
        }
    }

    /// A loaded `libcuda.so.1` named by role, checked against where the root put that role.
    pub(crate) fn name(&self, load: &Record) -> String {
        self.role_at(&load.path)
            .filter(|role| *role == load.role)
            .unwrap_or_else(|| format!("{} from {}", load.role, load.path))
    }

    /// The role of the copy the root placed at `path`, if any.
    pub(crate) fn role_at(&self, path: &str) -> Option<String> {
        let dir = lexical_dir(path)?;
        self.placed
            .iter()
            .find(|(d, _)| *d == dir)
            .map(|(_, role)| role.clone())
    }

    /// `tegra` when a `libnvrm_*` report (`role@path`) names a library in `tegra_dir`.
    pub(crate) fn nvrm_place(report: &str, tegra_dir: &str) -> String {
        match report.split_once('@') {
            Some((role, path)) if Path::new(path).parent() == Some(Path::new(tegra_dir)) => {
                role.to_string()
            }
            Some((_, path)) => format!("from {path}"),
            None => report.to_string(),
        }
    }

    /// The `env LD_FALLBACK_PATH...` record: `kept` or `removed`.
    pub(crate) fn fallback_env(&self) -> &'static str {
        if self.stdout.contains("env LD_FALLBACK_PATH unset") {
            "removed"
        } else if self.stdout.contains("env LD_FALLBACK_PATH=") {
            "kept"
        } else {
            "not reported"
        }
    }

    /// What `ld.so --list` says about `libcuda.so.1`: a role, or `not found`.
    pub(crate) fn listed(&self) -> String {
        let Some(line) = self
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("libcuda.so.1 =>"))
        else {
            // `ld.so --list` stops at the first missing library, on stderr.
            return self.winner();
        };
        let target = line.split("=>").nth(1).unwrap_or("").trim();
        if target.starts_with("not found") {
            return "not found".into();
        }
        let path = target.split_whitespace().next().unwrap_or("");
        self.role_at(path)
            .unwrap_or_else(|| format!("unexpected {path}"))
    }
}

/// The directory of `path` with `.` and `..` resolved lexically: the loader keeps them in a
/// name built from `$ORIGIN/../fb`, and no root has symlinks where copies are placed.
fn lexical_dir(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in Path::new(path).parent()?.to_str()?.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

fn classify(message: &str) -> String {
    if message.contains("cannot open shared object file") {
        "not found".into()
    } else {
        format!("error: {}", first_line(message))
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

fn parse_record(line: &str) -> Option<Record> {
    let (kind, rest) = line.split_once(' ')?;
    if kind != "load" && kind != "fail" {
        return None;
    }
    let mut record = Record {
        kind: kind.to_string(),
        ..Record::default()
    };
    // `error=` is last and may contain spaces.
    let (fields, error) = match rest.split_once("error=") {
        Some((fields, error)) => (fields, error),
        None => (rest, ""),
    };
    record.error = error.to_string();
    for field in fields.split_whitespace() {
        let Some((key, value)) = field.split_once('=') else {
            continue;
        };
        let value = value.to_string();
        match key {
            "how" => record.how = value,
            "role" => record.role = value,
            "version" => record.version = value,
            "path" => record.path = value,
            "nvrm_mem" => record.nvrm_mem = value,
            "nvrm_gpu" => record.nvrm_gpu = value,
            _ => {}
        }
    }
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_record_keeps_spaces_in_the_error() {
        let r = parse_record(
            "fail how=dlopen name=libcuda.so.1 error=libcuda.so.1: cannot open shared object file: No such file or directory",
        )
        .unwrap();
        assert_eq!(r.how, "dlopen");
        assert!(r.error.ends_with("No such file or directory"));
    }

    #[test]
    fn winner_is_checked_against_the_placement() {
        let out = Output {
            code: Some(0),
            signal: None,
            stdout: "load how=dlopen name=libcuda.so.1 role=driver version=11040 path=/t/libcuda.so.1 nvrm_mem=- nvrm_gpu=-\n".into(),
            stderr: String::new(),
            placed: vec![("/t".into(), "driver".into())],
        };
        assert_eq!(out.winner(), "driver");
        let moved = Output {
            placed: vec![("/c".into(), "driver".into())],
            ..out
        };
        assert_eq!(moved.winner(), "driver from /t/libcuda.so.1");
    }

    #[test]
    fn origin_paths_are_resolved_lexically() {
        assert_eq!(
            lexical_dir("/opt/app/bin/../fb/libcuda.so.1").unwrap(),
            "/opt/app/fb"
        );
        assert_eq!(lexical_dir("/lib64/./libc.so.6").unwrap(), "/lib64");
    }
}
