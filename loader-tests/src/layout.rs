//! Where the scenarios put things inside a hermetic root: absolute paths as the loader
//! under test sees them.

use anyhow::{bail, Result};

use model::{Sysroot, Target};

/// Directories of a scenario root, named after their role in the contract's matrix.
#[derive(Debug, Clone)]
pub struct Layout {
    pub target: Target,
    /// glibc's `slibdir` (where `libc.so.6` lives): a default system directory.
    pub slibdir: String,
    /// glibc's `libdir`: the other default system directory.
    pub libdir: String,
    /// T: the Jetson driver directory (older `libcuda.so.1`, `libnvrm_*`).
    pub tegra: String,
    /// C: a cuda_compat directory, in the DT_RUNPATH of probes and shims.
    pub compat: String,
    /// A Nix-store-like cuda_compat directory, in the RUNPATH of the `libcudart` shim: the
    /// package's `compat/` directory, where nixpkgs' cuda_compat keeps its `libcuda.so.1`.
    pub nix_compat: String,
    /// Where the real-binary scenarios put NVIDIA's real `libcudart.so.11.0`.
    pub real_cudart: String,
    /// Where the Jetson app finds `libcudart.so.12` (its RUNPATH).
    pub nix_cudart: String,
    /// A directory listed in `/etc/ld.so.conf` (an `ld.so.cache` entry, not a default dir).
    pub cached: String,
    /// A: an LD_LIBRARY_PATH directory without a copy.
    pub empty: String,
    /// U: a second fallback directory.
    pub other: String,
    /// T32: holds an ELFCLASS32 `libcuda.so.1`.
    pub tegra32: String,
    /// The working directory of every run.
    pub cwd: String,
    /// Probes and shims.
    pub bin: String,
    pub shims: String,
}

impl Layout {
    pub fn new(sysroot: &Sysroot) -> Result<Layout> {
        let slibdir = ["lib64", "lib"]
            .into_iter()
            .find(|d| sysroot.path.join(d).join("libc.so.6").exists());
        let libdir = ["usr/lib64", "usr/lib"]
            .into_iter()
            .find(|d| sysroot.path.join(d).join("libc.so").exists());
        let (Some(slibdir), Some(libdir)) = (slibdir, libdir) else {
            bail!(
                "{} has no lib64/libc.so.6 and usr/lib64/libc.so (or lib/, usr/lib/): \
                 not a glibc installed with --prefix=/usr",
                sysroot.path.display()
            );
        };
        Ok(Layout::for_target(
            sysroot.target,
            &format!("/{slibdir}"),
            &format!("/{libdir}"),
        ))
    }

    /// The layout of a root for `target` whose glibc has these `slibdir` and `libdir`.
    pub(crate) fn for_target(target: Target, slibdir: &str, libdir: &str) -> Layout {
        let triplet = target.triplet();
        Layout {
            target,
            slibdir: slibdir.to_string(),
            libdir: libdir.to_string(),
            tegra: format!("/usr/lib/{triplet}/tegra"),
            compat: "/opt/cuda_compat/lib".into(),
            nix_compat: "/nix/store/0c5n1jv6x7l0q2hkyxgm1z1m7wd3mi0a-cuda_compat-12.2/compat"
                .into(),
            real_cudart: "/nix/store/1f0kz2m4y1b9p0d8l2c3x4v5n6m7q8r9-cuda_cudart-11.8/lib".into(),
            nix_cudart: "/nix/store/9fvgbhaq2r3zvv1wzbb6kbr3qbyl4ma8-cuda_cudart-12.2/lib".into(),
            cached: "/opt/cached".into(),
            empty: "/opt/empty".into(),
            other: "/opt/other".into(),
            tegra32: "/opt/tegra32".into(),
            cwd: "/work".into(),
            bin: "/opt/probe/bin".into(),
            shims: "/opt/probe/shims".into(),
        }
    }

    /// The loader's path inside a root.
    pub fn loader(&self) -> &'static str {
        self.target.loader_path()
    }
}
