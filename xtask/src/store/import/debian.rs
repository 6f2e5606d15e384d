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

/// The release's orig tarball in `downloads`, downloaded first if it is not there yet.
pub fn fetch_orig(release: Release, downloads: &Path) -> Result<PathBuf> {
    let tarball = downloads.join(orig_name(release));
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
    if let Err(e) = apt.download(release, &tarball) {
        if refreshed {
            return Err(e);
        }
        // A fresh-enough index can still predate a new Debian revision: refresh once.
        diagln!("retrying with a refreshed source index");
        apt.update()?;
        apt.download(release, &tarball)?;
    }
    Ok(tarball)
}

/// `glibc_X.Y.orig.tar.xz`
pub(crate) fn orig_name(release: Release) -> String {
    format!("glibc_{}.orig.tar.xz", release.version())
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
    fn download(&self, release: Release, dest: &Path) -> Result<()> {
        let staging =
            crate::util::staging::tempdir_in(dest.parent().expect("downloads dir"), "download")?;
        let log = self
            .apt
            .root()
            .join(format!("source-{}.log", release.version()));
        let apt_get = self.command();
        let (apt, apt_options) = (apt_get.get_program(), apt_get.get_args());
        let version = release.debian_version();
        // apt's exit status 100 ("some files failed") is judged below by whether the orig
        // tarball arrived; any other failure is reported as is.
        let tolerate_100 = "\"$@\"; s=$?; [ $s -eq 100 ] && exit 0; exit $s";
        let sh = shell::in_dir(staging.path())?;
        let mut cmd = Command::from(cmd!(
            sh,
            "sh -c {tolerate_100} sh {apt} {apt_options...} source --download-only glibc={version}"
        ));
        logged::run(
            &mut cmd,
            &log,
            &format!("download glibc {} source", release.debian_version()),
            |_| None,
        )?;
        let got = staging.path().join(orig_name(release));
        if !got.is_file() {
            logged::print_tail(&log);
            bail!(
                "apt did not download {} (full log: {}). If Debian no longer lists glibc={}, \
                 set another Debian revision of {} as debian_version in model/src/release.rs (they \
                 share the orig tarball), or import with --from tarball:<path>",
                orig_name(release),
                log.display(),
                release.debian_version(),
                release.version()
            );
        }
        std::fs::rename(&got, dest)
            .with_context(|| format!("cannot move the tarball to {}", dest.display()))
    }
}
