//! Debian's `glibc_X.Y.orig.tar.xz`, fetched through apt without touching the system's apt
//! configuration: a private sources dir with one `deb-src` entry and private index/cache dirs.
//! The mirror is the machine's own, read from `/etc/apt/sources.list.d/*.sources` at run time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};

use crate::store::release::Release;
use crate::util::logged;
use loader_tests::host::{self, tools};

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
        eprintln!("waiting for another download into {}", downloads.display());
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
        eprintln!("retrying with a refreshed source index");
        apt.update()?;
        apt.download(release, &tarball)?;
    }
    Ok(tarball)
}

/// `glibc_X.Y.orig.tar.xz`
pub fn orig_name(release: Release) -> String {
    format!("glibc_{}.orig.tar.xz", release.version)
}

struct PrivateApt {
    root: PathBuf,
}

impl PrivateApt {
    fn new(root: &Path) -> Result<PrivateApt> {
        let (uri, signed_by) = system_mirror()?;
        for dir in ["parts", "lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(root.join(dir))
                .with_context(|| format!("cannot create {}", root.join(dir).display()))?;
        }
        let mut entry =
            format!("Types: deb-src\nURIs: {uri}\nSuites: {SUITES}\nComponents: main\n");
        if let Some(keyring) = signed_by {
            entry.push_str(&format!("Signed-By: {keyring}\n"));
        }
        std::fs::write(root.join("parts/src.sources"), entry)
            .context("cannot write the private apt source entry")?;
        Ok(PrivateApt {
            root: root.to_path_buf(),
        })
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("apt-get");
        let root = &self.root;
        for opt in [
            "Dir::Etc::SourceList=/dev/null".to_string(),
            format!("Dir::Etc::SourceParts={}", root.join("parts").display()),
            format!("Dir::State::Lists={}", root.join("lists").display()),
            format!("Dir::Cache={}", root.join("cache").display()),
        ] {
            cmd.arg("-o").arg(opt);
        }
        cmd
    }

    fn index_is_stale(&self) -> bool {
        let newest = std::fs::read_dir(self.root.join("lists"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("_source_Sources"))
            .filter_map(|e| e.metadata().ok()?.modified().ok())
            .max();
        match newest {
            Some(time) => {
                SystemTime::now().duration_since(time).unwrap_or_default() > INDEX_MAX_AGE
            }
            None => true,
        }
    }

    fn update(&self) -> Result<()> {
        let mut cmd = self.command();
        cmd.arg("update");
        logged::run(
            &mut cmd,
            &self.root.join("update.log"),
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
        let log = self.root.join(format!("source-{}.log", release.version));
        let apt = self.command();
        // apt's exit status 100 ("some files failed") is judged below by whether the orig
        // tarball arrived; any other failure is reported as is.
        let mut cmd = Command::new("sh");
        cmd.current_dir(staging.path())
            .args([
                "-c",
                "\"$@\"; s=$?; [ $s -eq 100 ] && exit 0; exit $s",
                "sh",
            ])
            .arg(apt.get_program())
            .args(apt.get_args())
            .args(["source", "--download-only"])
            .arg(format!("glibc={}", release.debian_version));
        logged::run(
            &mut cmd,
            &log,
            &format!("download glibc {} source", release.debian_version),
            |_| None,
        )?;
        let got = staging.path().join(orig_name(release));
        if !got.is_file() {
            logged::print_tail(&log);
            bail!(
                "apt did not download {} (full log: {}). If Debian no longer lists glibc={}, \
                 set another Debian revision of {} as debian_version in xtask/src/release.rs (they \
                 share the orig tarball), or import with --from tarball:<path>",
                orig_name(release),
                log.display(),
                release.debian_version,
                release.version
            );
        }
        std::fs::rename(&got, dest)
            .with_context(|| format!("cannot move the tarball to {}", dest.display()))
    }
}

/// The first Debian mirror URI of the machine's deb822 sources (not the security archive).
fn system_mirror() -> Result<(String, Option<String>)> {
    let dir = Path::new("/etc/apt/sources.list.d");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sources"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        if let Some(found) = mirror_in(&text) {
            return Ok(found);
        }
    }
    bail!(
        "no Debian mirror found in {}/*.sources: cannot download glibc sources through apt",
        dir.display()
    )
}

fn mirror_in(text: &str) -> Option<(String, Option<String>)> {
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        let Some(uri) = field("URIs:") else { continue };
        let Some(uri) = uri.split_whitespace().next().map(str::to_string) else {
            continue;
        };
        if uri.contains("security") {
            continue;
        }
        return Some((uri, field("Signed-By:")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_skips_the_security_archive() {
        let text = "Types: deb\nURIs: http://sec.example.invalid/debian-security\nSuites: bookworm-security\n\n\
                    Types: deb\nURIs: http://mirror.example.invalid/debian\nSuites: bookworm\nSigned-By: /k.gpg\n";
        assert_eq!(
            mirror_in(text),
            Some((
                "http://mirror.example.invalid/debian".into(),
                Some("/k.gpg".into())
            ))
        );
    }
}
