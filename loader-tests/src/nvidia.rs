//! NVIDIA's real CUDA runtime and driver library, for the real-binary scenarios: Debian 12's
//! non-free `libcudart11.0` (`libcudart.so.11.0`) and `libcuda1` (`libcuda.so.1`, driver 535,
//! which reports CUDA 12.2 without a GPU), fetched through a private apt (the machine's own
//! mirror, see [`crate::apt`]) and unpacked with `dpkg-deb -x` into the project cache, never
//! into the checkout.
//!
//! The real `libcuda.so.1` has side effects: run as root, its initialisation (reached from
//! `cudaDriverGetVersion`) creates `/dev/nvidiactl` when it is missing. Scenario runs give it
//! bwrap's private `/dev`; nothing here runs it on the host.

use std::path::{Path, PathBuf};

use crate::debs::{PackageSet, Unpacked};
use crate::host;
use model::Target;

pub use crate::debs::{Unavailable, UNREACHABLE};

/// The two packages, by name.
pub const PACKAGES: [&str; 2] = ["libcudart11.0", "libcuda1"];
/// Debian 12: the release whose non-free archive carries both (driver branch 535).
const SET: PackageSet = PackageSet {
    name: "nvidia",
    packages: &PACKAGES,
    suites: "bookworm bookworm-updates",
    security_suites: "bookworm-security",
    components: "non-free",
    // Bump when the unpacked layout below changes.
    layout: "nvidia-v1",
};

/// The unpacked packages of one architecture.
#[derive(Debug, Clone)]
pub struct NvidiaLibs {
    /// `dpkg-deb -x` of both packages.
    pub root: PathBuf,
    /// `.../libcudart.so.11.0` (a symlink to the versioned file).
    pub cudart: PathBuf,
    /// `.../nvidia/current/libcuda.so.1` (a symlink to the versioned file).
    pub libcuda: PathBuf,
    /// `package version` of each, as fetched.
    pub versions: Vec<String>,
    /// Seconds the fetch took (index and download); 0 for a cache hit.
    pub fetch_seconds: f64,
}

/// Debian's name for the target's architecture.
pub(crate) fn debian_arch(target: Target) -> &'static str {
    match target {
        Target::X86_64 => "amd64",
        Target::Aarch64 => "arm64",
    }
}

/// [`ensure`] once per process and target, in the project cache: every scenario of a run
/// gets the same answer, and an unreachable archive is asked once, not once per scenario.
pub fn ensure_once(target: Target) -> Result<&'static NvidiaLibs, &'static Unavailable> {
    static FETCHED: [std::sync::OnceLock<Result<NvidiaLibs, Unavailable>>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    FETCHED[target as usize]
        .get_or_init(|| match host::cache_dir() {
            Ok(cache) => ensure(target, &cache),
            Err(err) => Err(Unavailable::Failed(err)),
        })
        .as_ref()
}

/// The libraries for `target` from `<cache>/nvidia/<arch>`, fetched first if needed.
pub(crate) fn ensure(target: Target, cache: &Path) -> Result<NvidiaLibs, Unavailable> {
    let lib = format!("usr/lib/{}", target.triplet());
    let cudart = format!("{lib}/libcudart.so.11.0");
    let libcuda = format!("{lib}/nvidia/current/libcuda.so.1");
    let Unpacked {
        root,
        versions,
        fetch_seconds,
    } = SET.ensure(cache, debian_arch(target), &[&cudart, &libcuda])?;
    Ok(NvidiaLibs {
        cudart: root.join(cudart),
        libcuda: root.join(libcuda),
        root,
        versions,
        fetch_seconds,
    })
}
