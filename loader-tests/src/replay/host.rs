//! The real host libraries of the replay, from Debian 12's archive for the target's
//! architecture and built against Debian's glibc 2.36, not against the glibc under test:
//! `libnss_systemd.so.2` (and the `libcap.so.2` it needs), the NSS module an Ubuntu or
//! JetPack host's `passwd: files systemd` names; `libstdc++.so.6` and `libgcc_s.so.1`, what
//! the board's `libnvrm_*` need from outside the driver directory. Fetched once into
//! `<cache>/jetson-host/<arch>/` through the private apt of [`crate::debs`].

use std::path::{Path, PathBuf};

use crate::debs::{PackageSet, Unavailable};
use crate::nvidia::debian_arch;
use model::Target;

const SET: PackageSet = PackageSet {
    name: "jetson-host",
    packages: &["libnss-systemd", "libcap2", "libstdc++6", "libgcc-s1"],
    suites: "bookworm bookworm-updates",
    security_suites: "bookworm-security",
    components: "main",
    layout: "jetson-host-v1",
};

/// The files the replay places, by SONAME.
pub(crate) const FILES: [&str; 4] = [
    "libnss_systemd.so.2",
    "libcap.so.2",
    "libstdc++.so.6",
    "libgcc_s.so.1",
];

/// The unpacked packages of one architecture.
#[derive(Debug, Clone)]
pub struct HostLibs {
    root: PathBuf,
    triplet: &'static str,
    /// `package version (size)` of each, as fetched: part of the fixtures' cache key.
    pub versions: Vec<String>,
}

impl HostLibs {
    /// The libraries for `target`, fetched first if they are not in `cache`.
    pub fn ensure(target: Target, cache: &Path) -> Result<HostLibs, Unavailable> {
        let triplet = target.triplet();
        // Debian 12 ships some of them in /lib/<triplet>, some in /usr/lib/<triplet>.
        let unpacked = SET.ensure(cache, debian_arch(target), &[])?;
        let libs = HostLibs {
            root: unpacked.root,
            triplet,
            versions: unpacked.versions,
        };
        for name in FILES {
            if libs.find(name).is_none() {
                return Err(Unavailable::Failed(anyhow::anyhow!(
                    "{name} is in neither lib/{triplet} nor usr/lib/{triplet} of {}",
                    libs.root.display()
                )));
            }
        }
        Ok(libs)
    }

    fn find(&self, name: &str) -> Option<PathBuf> {
        ["usr/lib", "lib"]
            .iter()
            .map(|dir| self.root.join(dir).join(self.triplet).join(name))
            .find(|path| path.exists())
    }

    /// The file a host keeps as `/usr/lib/<triplet>/<name>` (one of [`FILES`]).
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.find(name)
            .unwrap_or_else(|| panic!("{name} is not one of the host libraries"))
    }

    /// The directories holding [`FILES`], to link fixtures against `libstdc++.so.6`.
    pub(crate) fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = FILES
            .iter()
            .filter_map(|name| self.find(name))
            .filter_map(|path| path.parent().map(Path::to_path_buf))
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }
}
