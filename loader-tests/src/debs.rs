//! Debian binary packages fetched once through a private apt (the machine's own mirror, see
//! [`crate::apt`]) and unpacked with `dpkg-deb -x` into the project cache, never into the
//! checkout: NVIDIA's real CUDA libraries ([`crate::nvidia`]) and the real host libraries of
//! the Jetson replay ([`crate::replay::host`]).
//!
//! A set lives in `<cache>/<name>/<arch>/` (`root/` the unpacked tree, `versions` what was
//! fetched) and is published by a rename once complete, so a reader sees the old set, the new
//! one, or none.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use crate::apt::{self, PrivateApt};
use crate::host::{self, tools};

/// The start of every reason that means the archive could not be reached: outside CI a skip
/// for this reason (a missing input: the cell it happens in is incomplete); under CI a failure
/// (see loader-tests/README.md).
pub const UNREACHABLE: &str = "Debian archive unreachable";

/// Which packages, from which suites and components.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackageSet {
    /// The cache directory's name (`nvidia`, `jetson-host`).
    pub name: &'static str,
    pub packages: &'static [&'static str],
    /// Suites of the main archive (`bookworm bookworm-updates`).
    pub suites: &'static str,
    /// Suites of the security archive (`bookworm-security`).
    pub security_suites: &'static str,
    /// `main`, `non-free`, ...
    pub components: &'static str,
    /// Bump when what is unpacked, or how, changes: an old unpack is then fetched again.
    pub layout: &'static str,
}

/// A set, unpacked.
#[derive(Debug, Clone)]
pub(crate) struct Unpacked {
    /// `dpkg-deb -x` of every package.
    pub root: PathBuf,
    /// `package version (size bytes)` of each, as fetched.
    pub versions: Vec<String>,
    /// Seconds the fetch took (index and download); 0 for a cache hit.
    pub fetch_seconds: f64,
}

/// Why there are no packages: an input is missing here (the archive could not be reached, a
/// tool to fetch with is not installed: a skip outside CI, a failure under it), or something
/// that should have worked did not (a failure everywhere).
#[derive(Debug)]
pub enum Unavailable {
    Unreachable(String),
    MissingTool(String),
    Failed(anyhow::Error),
}

impl Unavailable {
    /// Whether what needs the packages is skipped (and says why) rather than failed: only for
    /// a missing input, and never under CI, where the archive and the tools are part of the
    /// setup and a skip would pass for proof.
    pub fn is_skip(&self) -> bool {
        self.skips(host::in_ci())
    }

    fn skips(&self, in_ci: bool) -> bool {
        !matches!(self, Unavailable::Failed(_)) && !in_ci
    }

    /// Why there are no packages, as a skipped scenario gives it, or a failed one.
    pub fn reason(&self) -> String {
        let under_ci = if host::in_ci() {
            "; under CI the Debian packages must be fetched, so this fails"
        } else {
            ""
        };
        match self {
            Unavailable::Unreachable(why) => format!("{UNREACHABLE}: {why}{under_ci}"),
            Unavailable::MissingTool(why) => {
                format!("Debian packages cannot be fetched here: {why}{under_ci}")
            }
            Unavailable::Failed(err) => format!("Debian packages unavailable: {err:#}"),
        }
    }
}

impl PackageSet {
    /// The set for Debian architecture `arch` from `<cache>/<name>/<arch>`, fetched first if
    /// it is missing or incomplete. `required` are paths relative to the unpacked root that
    /// must exist (a package that changed its layout is a failure, not a quiet gap).
    pub(crate) fn ensure(
        &self,
        cache: &Path,
        arch: &str,
        required: &[&str],
    ) -> Result<Unpacked, Unavailable> {
        let base = cache.join(self.name);
        let dir = base.join(arch);
        if let Ok(set) = self.read(&dir, required, 0.0) {
            return Ok(set);
        }
        fs::create_dir_all(&base)
            .with_context(|| format!("cannot create {}", base.display()))
            .map_err(Unavailable::Failed)?;
        // One fetch at a time per set (tests run in threads and processes at once).
        let lock_path = base.join(".fetch.lock");
        let lock = fs::File::create(&lock_path)
            .with_context(|| format!("cannot create {}", lock_path.display()))
            .map_err(Unavailable::Failed)?;
        lock.lock()
            .with_context(|| format!("cannot lock {}", lock_path.display()))
            .map_err(Unavailable::Failed)?;
        if let Ok(set) = self.read(&dir, required, 0.0) {
            return Ok(set);
        }
        let started = Instant::now();
        self.fetch(&base, arch)?;
        self.read(&dir, required, started.elapsed().as_secs_f64())
            .map_err(Unavailable::Failed)
    }

    /// A finished unpack in `dir`.
    fn read(&self, dir: &Path, required: &[&str], fetch_seconds: f64) -> Result<Unpacked> {
        let marker = dir.join(".complete");
        let layout = fs::read_to_string(&marker)
            .with_context(|| format!("cannot read {}", marker.display()))?;
        if layout.trim() != self.layout {
            bail!("{} was unpacked by another layout", dir.display());
        }
        let root = dir.join("root");
        for rel in required {
            if !root.join(rel).exists() {
                bail!(
                    "{rel} is missing from the unpacked packages in {}",
                    root.display()
                );
            }
        }
        Ok(Unpacked {
            root,
            versions: fs::read_to_string(dir.join("versions"))
                .with_context(|| format!("cannot read {}/versions", dir.display()))?
                .lines()
                .map(str::to_string)
                .collect(),
            fetch_seconds,
        })
    }

    /// Index, download and unpack every package into `<base>/<arch>`, published by a rename.
    fn fetch(&self, base: &Path, arch: &str) -> Result<(), Unavailable> {
        let failed = Unavailable::Failed;
        host::require(&[tools::APT_GET, tools::DPKG_DEB])
            .map_err(|err| Unavailable::MissingTool(format!("{err:#}")))?;
        let mirrors =
            apt::system_mirrors().map_err(|err| Unavailable::Unreachable(format!("{err:#}")))?;
        let sources: String = mirrors
            .iter()
            .map(|m| {
                let suites = if m.is_security() {
                    self.security_suites
                } else {
                    self.suites
                };
                m.stanza("deb", suites, self.components)
            })
            .collect::<Vec<_>>()
            .join("\n");
        if sources.is_empty() {
            return Err(Unavailable::Unreachable(format!(
                "no Debian mirror in {}",
                apt::sources_described()
            )));
        }
        let apt = PrivateApt::new(&base.join(format!("apt-{arch}")), &sources, Some(arch))
            .map_err(failed)?;
        let log = apt.root().join("fetch.log");
        let mut update = apt.command();
        update.args(["-q", "update"]);
        let out = run_logged(&mut update, &log).map_err(failed)?;
        // apt-get update exits 0 with an index it could not fetch (an `Err:` line).
        if !out.status.success() || out.text.lines().any(|l| l.starts_with("Err:")) {
            return Err(apt_failure(
                &format!("apt-get update of the {} {arch} index", self.components),
                &out,
                &log,
            ));
        }
        let staging = tempfile::Builder::new()
            .prefix(&format!(".staging-{arch}-"))
            .tempdir_in(base)
            .with_context(|| format!("cannot create a staging directory in {}", base.display()))
            .map_err(failed)?;
        let debs = staging.path().join("debs");
        fs::create_dir_all(&debs)
            .with_context(|| format!("cannot create {}", debs.display()))
            .map_err(failed)?;
        let mut download = apt.command();
        download
            .current_dir(&debs)
            .args(["-q", "download"])
            .args(self.packages);
        let out = run_logged(&mut download, &log).map_err(failed)?;
        if !out.status.success() {
            return Err(apt_failure(
                &format!("apt-get download {} ({arch})", self.packages.join(" ")),
                &out,
                &log,
            ));
        }
        self.unpack(
            &debs,
            &staging.path().join("root"),
            &staging.path().join("versions"),
        )
        .map_err(failed)?;
        fs::write(staging.path().join(".complete"), self.layout)
            .with_context(|| format!("cannot mark the {} packages complete", self.name))
            .map_err(failed)?;
        let dir = base.join(arch);
        if dir.exists() {
            fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot remove the incomplete {}", dir.display()))
                .map_err(failed)?;
        }
        let staged = staging.keep();
        fs::rename(&staged, &dir)
            .with_context(|| format!("cannot publish {}", dir.display()))
            .map_err(failed)
    }

    /// `dpkg-deb -x` of every `.deb` in `debs` into `root`; `package version size` lines into
    /// `versions`.
    fn unpack(&self, debs: &Path, root: &Path, versions: &Path) -> Result<()> {
        let mut files: Vec<PathBuf> = fs::read_dir(debs)
            .with_context(|| format!("cannot read {}", debs.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "deb"))
            .collect();
        files.sort();
        if files.len() != self.packages.len() {
            bail!(
                "expected {} .deb files in {}, found {}",
                self.packages.len(),
                debs.display(),
                files.len()
            );
        }
        let mut lines = String::new();
        for deb in files {
            let show = Command::new("dpkg-deb")
                .args(["-W", "--showformat=${Package} ${Version}"])
                .arg(&deb)
                .output()
                .context("cannot run dpkg-deb -W")?;
            if !show.status.success() {
                bail!("dpkg-deb -W {} failed", deb.display());
            }
            let size = fs::metadata(&deb)
                .with_context(|| format!("cannot stat {}", deb.display()))?
                .len();
            lines.push_str(&format!(
                "{} ({size} bytes)\n",
                String::from_utf8_lossy(&show.stdout).trim()
            ));
            let status = Command::new("dpkg-deb")
                .arg("-x")
                .arg(&deb)
                .arg(root)
                .status()
                .context("cannot run dpkg-deb -x")?;
            if !status.success() {
                bail!("dpkg-deb -x {} failed ({status})", deb.display());
            }
        }
        fs::write(versions, lines).with_context(|| format!("cannot write {}", versions.display()))
    }
}

struct Logged {
    status: std::process::ExitStatus,
    text: String,
}

/// Runs `cmd` to the end, appending its output to `log`.
fn run_logged(cmd: &mut Command, log: &Path) -> Result<Logged> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut previous = fs::read_to_string(log).unwrap_or_default();
    previous.push_str(&format!("$ {cmd:?}\n{text}"));
    fs::write(log, previous).with_context(|| format!("cannot write {}", log.display()))?;
    Ok(Logged {
        status: out.status,
        text,
    })
}

/// Why `what` (an apt-get run, logged in `log`) failed: the archive unreachable, or a failure.
fn apt_failure(what: &str, out: &Logged, log: &Path) -> Unavailable {
    let why = format!(
        "{what} failed: {} (log: {})",
        first_error(&out.text),
        log.display()
    );
    if unreachable(&out.text) {
        Unavailable::Unreachable(why)
    } else {
        Unavailable::Failed(anyhow!(why))
    }
}

/// Whether apt's output says the archive could not be reached at all (no name, no route, no
/// answer). An answer that is an error (a suite or package the archive does not have: `404
/// Not Found`, a bad signature) is a failure: the archive was there, and what was asked of it
/// is wrong.
fn unreachable(text: &str) -> bool {
    text.lines().any(|l| {
        l.contains("Temporary failure resolving")
            || l.contains("Connection refused")
            || l.contains("Could not resolve")
            || l.contains("Could not connect")
            || l.contains("Connection timed out")
            || l.contains("Network is unreachable")
    })
}

fn first_error(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("E:") || l.starts_with("Err:") || l.starts_with("W: Failed"))
        .unwrap_or("see the log")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outside CI a missing input is a skip with its reason; under CI it fails; a failure is
    /// never a skip.
    #[test]
    fn missing_inputs_are_skips_outside_ci_only_and_failures_never() {
        let missing = Unavailable::MissingTool("`apt-get` (package apt)".into());
        let unreachable = Unavailable::Unreachable("no mirror".into());
        let failed = Unavailable::Failed(anyhow!("gone from the index"));
        assert!(missing.skips(false) && unreachable.skips(false) && !failed.skips(false));
        assert!(!missing.skips(true) && !unreachable.skips(true) && !failed.skips(true));
        assert!(missing
            .reason()
            .contains("cannot be fetched here: `apt-get`"));
    }

    #[test]
    fn network_errors_are_unreachable_and_missing_packages_are_not() {
        assert!(unreachable(
            "Err:1 http://mirror.example.invalid/debian bookworm InRelease\n  Temporary failure resolving 'mirror.example.invalid'\n"
        ));
        assert!(unreachable(
            "Err:1 http://127.0.0.1:9/debian bookworm InRelease\n  Could not connect to 127.0.0.1:9 (127.0.0.1). - connect (111: Connection refused)\n"
        ));
        assert!(!unreachable("E: Unable to locate package libcuda1\n"));
        // The archive answered: the suite asked for is not there.
        assert!(!unreachable(
            "Err:2 http://mirror.example.invalid/debian bookwormx Release\n  404  Not Found [IP: 192.0.2.1 80]\nE: The repository 'http://mirror.example.invalid/debian bookwormx Release' does not have a Release file.\n"
        ));
    }

    #[test]
    fn an_unpack_missing_a_required_file_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let set = PackageSet {
            name: "test",
            packages: &["a"],
            suites: "s",
            security_suites: "s-security",
            components: "main",
            layout: "test-v1",
        };
        let unpacked = dir.path().join("arm64");
        std::fs::create_dir_all(unpacked.join("root/usr/lib")).unwrap();
        std::fs::write(unpacked.join("versions"), "a 1 (10 bytes)\n").unwrap();
        std::fs::write(unpacked.join(".complete"), "test-v1").unwrap();
        assert!(set.read(&unpacked, &["usr/lib"], 0.0).is_ok());
        let err = set.read(&unpacked, &["usr/lib/libx.so"], 0.0).unwrap_err();
        assert!(format!("{err:#}").contains("usr/lib/libx.so is missing"));
        std::fs::write(unpacked.join(".complete"), "test-v0").unwrap();
        assert!(set.read(&unpacked, &["usr/lib"], 0.0).is_err());
    }
}
