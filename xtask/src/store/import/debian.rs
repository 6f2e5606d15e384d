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
    fetch(downloads, &orig_name(version), debian, None)
}

/// Debian's packaging of source package `debian` (`glibc_<debian>.debian.tar.xz`: its
/// `debian/`, the patches of the stable branch among it) in `downloads`, downloaded first if
/// it is not there yet. The orig tarball is fetched first and shown to apt, which checks it
/// against the index instead of downloading it again.
pub(crate) fn fetch_packaging(version: &str, debian: &str, downloads: &Path) -> Result<PathBuf> {
    let orig = fetch_orig(version, debian, downloads)?;
    fetch(downloads, &packaging_name(debian), debian, Some(&orig))
}

/// `name`, a file of source package `debian`, in `downloads`: downloaded through the private
/// apt when it is not there yet.
fn fetch(downloads: &Path, name: &str, debian: &str, seed: Option<&Path>) -> Result<PathBuf> {
    let file = downloads.join(name);
    if file.is_file() {
        return Ok(file);
    }
    host::require(&[tools::APT_GET])?;
    std::fs::create_dir_all(downloads)
        .with_context(|| format!("cannot create {}", downloads.display()))?;
    // One download at a time per cache: apt locks its private index, and a second process
    // wanting the same file should just wait for it.
    let lock_path = downloads.join(".apt.lock");
    let lock = std::fs::File::create(&lock_path)
        .with_context(|| format!("cannot create {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        diagln!("waiting for another download into {}", downloads.display());
        lock.lock().context("cannot lock the downloads dir")?;
    }
    if file.is_file() {
        return Ok(file);
    }
    let apt = PrivateApt::new(&downloads.join("apt"))?;
    let refreshed = apt.index_is_stale();
    if refreshed {
        apt.update()?;
    }
    if let Err(e) = apt.download(debian, name, seed, &file) {
        if refreshed {
            return Err(e);
        }
        // A fresh-enough index can still predate a new Debian revision: refresh once.
        diagln!("retrying with a refreshed source index");
        apt.update()?;
        apt.download(debian, name, seed, &file)?;
    }
    Ok(file)
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
pub(crate) fn dpkg_newer(a: &str, b: &str) -> Result<bool> {
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

/// `glibc_<debian>.debian.tar.xz` (a file name has no epoch).
pub(crate) fn packaging_name(debian: &str) -> String {
    let debian = debian.split_once(':').map_or(debian, |(_, rest)| rest);
    format!("glibc_{debian}.debian.tar.xz")
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
    /// fine: the presence of the file wanted, `name`, is what counts. `seed`, a file of the
    /// package already here, is shown to apt, which checks it instead of downloading it.
    fn download(&self, debian: &str, name: &str, seed: Option<&Path>, dest: &Path) -> Result<()> {
        let staging =
            crate::util::staging::tempdir_in(dest.parent().expect("downloads dir"), "download")?;
        if let Some(seed) = seed {
            let shown = staging
                .path()
                .join(seed.file_name().context("a file has a name")?);
            std::fs::hard_link(seed, &shown)
                .or_else(|_| std::fs::copy(seed, &shown).map(drop))
                .with_context(|| format!("cannot show {} to apt", seed.display()))?;
        }
        let log = self.apt.root().join(format!("source-{debian}.log"));
        let apt_get = self.command();
        let (apt, apt_options) = (apt_get.get_program(), apt_get.get_args());
        // apt's exit status 100 ("some files failed") is judged below by whether the file
        // arrived; any other failure is reported as is.
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
        let got = staging.path().join(name);
        if !got.is_file() {
            logged::print_tail(&log);
            let version = debian.split('-').next().unwrap_or(debian);
            bail!(
                "apt did not download {name} (full log: {}). If Debian no longer lists glibc={debian}, \
                 set another Debian revision of {version} as `debian` in its row of {} (they \
                 share the orig tarball){}",
                log.display(),
                model::TABLE_PATH,
                if seed.is_none() {
                    ", or import with --from tarball:<path>"
                } else {
                    ""
                }
            );
        }
        std::fs::rename(&got, dest)
            .with_context(|| format!("cannot move {name} to {}", dest.display()))
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

    #[test]
    fn the_packaging_s_file_name_has_no_epoch() {
        assert_eq!(
            packaging_name("2.36-9+deb12u14"),
            "glibc_2.36-9+deb12u14.debian.tar.xz"
        );
        assert_eq!(packaging_name("1:2.45-1"), "glibc_2.45-1.debian.tar.xz");
    }
}
