//! Debian's `glibc_X.Y.orig.tar.xz`, fetched through apt without touching the system's apt
//! configuration: a private apt (`loader_tests::apt`) with one `deb-src` entry. The mirror is
//! the machine's own, read from apt's source lists at run time (`loader_tests::apt`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use xshell::cmd;

use crate::util::{logged, shell};
use loader_tests::apt;
use loader_tests::host::{self, tools};
use model::Release;

/// Suites whose source indices hold the supported releases.
const SUITES: &str = "bookworm trixie sid experimental";
/// Source indices older than this are refreshed before a download.
const INDEX_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// The orig tarball of glibc `version` in `downloads`, downloaded first (Debian's source
/// package `debian`) if it is not there yet.
pub fn fetch_orig(version: &str, debian: &str, downloads: &Path) -> Result<PathBuf> {
    let tarball = downloads.join(orig_name(version));
    if tarball.is_file() {
        return Ok(tarball);
    }
    host::require(&[tools::APT_GET])?;
    std::fs::create_dir_all(downloads)
        .with_context(|| format!("cannot create {}", downloads.display()))?;
    // One download at a time per cache: apt locks its private index, and a second process
    // wanting the same tarball should just wait for it.
    let lock_path = downloads.join(".apt.lock");
    let lock = std::fs::File::create(&lock_path)
        .with_context(|| format!("cannot create {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        diagln!("waiting for another download into {}", downloads.display());
        lock.lock().context("cannot lock the downloads dir")?;
    }
    if tarball.is_file() {
        return Ok(tarball);
    }
    let apt = PrivateApt::new(&downloads.join("apt"))?;
    let refreshed = apt.index_is_stale();
    if refreshed {
        apt.update()?;
    }
    if let Err(e) = apt.download(version, debian, &tarball) {
        if refreshed {
            return Err(e);
        }
        // A fresh-enough index can still predate a new Debian revision: refresh once.
        diagln!("retrying with a refreshed source index");
        apt.update()?;
        apt.download(version, debian, &tarball)?;
    }
    Ok(tarball)
}

/// The newest Debian source version of glibc `version` (`X.Y-N...`) that the archive's
/// source index lists, `None` when it lists none (Debian does not carry the release yet).
/// The index is the private one of the downloads (refreshed when a day old).
pub(crate) fn newest_version(version: &str, downloads: &Path) -> Result<Option<String>> {
    host::require(&[tools::APT_GET])?;
    std::fs::create_dir_all(downloads)
        .with_context(|| format!("cannot create {}", downloads.display()))?;
    let apt = PrivateApt::new(&downloads.join("apt"))?;
    if apt.index_is_stale() {
        apt.update()?;
    }
    let out = apt
        .apt
        .cache_command()
        .args(["showsrc", "glibc"])
        .output()
        .context("cannot run apt-cache showsrc glibc")?;
    if !out.status.success() {
        bail!(
            "apt-cache showsrc glibc failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    let listed = listed_versions(&String::from_utf8_lossy(&out.stdout), version);
    let mut newest: Option<String> = None;
    for candidate in listed {
        let newer = match &newest {
            None => true,
            Some(best) => dpkg_newer(&candidate, best)?,
        };
        if newer {
            newest = Some(candidate);
        }
    }
    Ok(newest)
}

/// The `Version:` fields of `apt-cache showsrc` output that are versions of glibc `version`.
fn listed_versions(showsrc: &str, version: &str) -> Vec<String> {
    let prefix = format!("{version}-");
    showsrc
        .lines()
        .filter_map(|l| l.strip_prefix("Version:"))
        .map(str::trim)
        .filter(|v| v.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// Whether Debian version `a` is newer than `b`, as dpkg orders them (`+deb12u14` after
/// `+deb12u9`, `~` before anything).
fn dpkg_newer(a: &str, b: &str) -> Result<bool> {
    let status = Command::new("dpkg")
        .args(["--compare-versions", a, "gt", b])
        .status()
        .context("cannot run dpkg --compare-versions")?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => bail!("dpkg --compare-versions {a} gt {b} failed ({status})"),
    }
}

/// The orig tarball of a supported release: its row's Debian version's.
pub fn fetch_release_orig(release: Release, downloads: &Path) -> Result<PathBuf> {
    let debian = release.debian_version().with_context(|| {
        format!(
            "glibc {release} has no Debian version in its row of {}",
            model::TABLE_PATH
        )
    })?;
    fetch_orig(release.version(), debian, downloads)
}

/// `glibc_X.Y.orig.tar.xz`
pub(crate) fn orig_name(version: &str) -> String {
    format!("glibc_{version}.orig.tar.xz")
}

/// The private apt that downloads glibc sources (loader_tests::apt does the set-up).
struct PrivateApt {
    apt: apt::PrivateApt,
}

impl PrivateApt {
    fn new(root: &Path) -> Result<PrivateApt> {
        let mirror = apt::system_mirror().context("cannot download glibc sources through apt")?;
        let sources = mirror.stanza("deb-src", SUITES, "main");
        Ok(PrivateApt {
            apt: apt::PrivateApt::new(root, &sources, None)?,
        })
    }

    fn command(&self) -> Command {
        self.apt.command()
    }

    fn index_is_stale(&self) -> bool {
        self.apt.index_is_stale(INDEX_MAX_AGE)
    }

    fn update(&self) -> Result<()> {
        let mut cmd = self.command();
        cmd.arg("update");
        logged::run(
            &mut cmd,
            &self.apt.root().join("update.log"),
            "apt-get update (private source index)",
            |_| None,
        )
    }

    /// apt exits 100 when the `.dsc` or `.debian.tar.xz` of an older Debian revision is gone
    /// from the mirror while the orig tarball (checked against the index's hashes) downloads
    /// fine: the tarball's presence is what counts.
    fn download(&self, version: &str, debian: &str, dest: &Path) -> Result<()> {
        let staging =
            crate::util::staging::tempdir_in(dest.parent().expect("downloads dir"), "download")?;
        let log = self.apt.root().join(format!("source-{version}.log"));
        let apt_get = self.command();
        let (apt, apt_options) = (apt_get.get_program(), apt_get.get_args());
        // apt's exit status 100 ("some files failed") is judged below by whether the orig
        // tarball arrived; any other failure is reported as is.
        let tolerate_100 = "\"$@\"; s=$?; [ $s -eq 100 ] && exit 0; exit $s";
        let sh = shell::in_dir(staging.path())?;
        let mut cmd = Command::from(cmd!(
            sh,
            "sh -c {tolerate_100} sh {apt} {apt_options...} source --download-only glibc={debian}"
        ));
        logged::run(
            &mut cmd,
            &log,
            &format!("download glibc {debian} source"),
            |_| None,
        )?;
        let got = staging.path().join(orig_name(version));
        if !got.is_file() {
            logged::print_tail(&log);
            bail!(
                "apt did not download {} (full log: {}). If Debian no longer lists glibc={debian}, \
                 set another Debian revision of {version} as `debian` in its row of {} (they \
                 share the orig tarball), or import with --from tarball:<path>",
                orig_name(version),
                log.display(),
                model::TABLE_PATH
            );
        }
        std::fs::rename(&got, dest)
            .with_context(|| format!("cannot move the tarball to {}", dest.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_versions_are_those_of_the_release() {
        let showsrc = "Package: glibc\nVersion: 2.44-1\nFiles:\n x 1 glibc_2.44-1.dsc\n\n\
            Package: glibc\nVersion: 2.44-3\n\nPackage: glibc\nVersion: 2.4-2\n\n\
            Package: glibc\nVersion: 2.43-7\n";
        assert_eq!(listed_versions(showsrc, "2.44"), ["2.44-1", "2.44-3"]);
        assert!(listed_versions(showsrc, "2.45").is_empty());
    }

    #[test]
    fn debian_versions_order_as_dpkg_orders_them() {
        assert!(dpkg_newer("2.36-9+deb12u14", "2.36-9+deb12u9").unwrap());
        assert!(!dpkg_newer("2.45-1~exp1", "2.45-1").unwrap());
        assert!(dpkg_newer("2.45-10", "2.45-9").unwrap());
    }
}
