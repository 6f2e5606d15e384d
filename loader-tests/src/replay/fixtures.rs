//! The replay's fake CUDA stack (`c-fixtures/jetson*.c`), compiled against the glibc under
//! test and cached like the matrix's fixtures: one build per board release, cuda_compat
//! version and way of loading `libnvrm_*`, and runtime version the columns use.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Board, Compat, Linkage, BOARDS, COMPATS, RUNTIMES};
use crate::fixtures::{ensure_set, Compiler, FixtureSet};
use crate::layout::Layout;
use crate::Sysroot;

/// Bump when the recipe below changes in a way the sources hash cannot see.
const RECIPE: &str = "jetson-v1";

const SOURCES: &[&str] = &[
    "jetson.h",
    "jetson-nvos.c",
    "jetson-nvrm.c",
    "jetson-libcuda.c",
    "jetson-cudart.c",
    "jetson-saxpy.c",
    "jetson-nss-impostor.c",
];

/// The compiled stack for one sysroot.
#[derive(Debug, Clone)]
pub struct JetsonFixtures {
    pub dir: PathBuf,
}

impl JetsonFixtures {
    pub fn ensure(sysroot: &Sysroot, layout: &Layout, cache: &Path) -> Result<JetsonFixtures> {
        let fixtures = ensure_set(
            FixtureSet {
                prefix: "jetson-",
                recipe: RECIPE,
                sources: SOURCES,
                build: &build_all,
            },
            sysroot,
            layout,
            cache,
        )?;
        Ok(JetsonFixtures { dir: fixtures.dir })
    }

    /// `libnvos.so`, `libnvrm_gpu.so` or `libnvrm_mem.so` of an L4T release (no RUNPATH).
    pub fn board_lib(&self, l4t: u32, name: &str) -> PathBuf {
        self.dir.join(format!("r{l4t}/{name}"))
    }

    /// The board's `libcuda.so.1.1` (SONAME `libcuda.so.1`, DT_NEEDED `libnvrm_*`).
    pub fn board_cuda(&self, board: Board) -> PathBuf {
        self.dir.join(board_dir(board)).join("libcuda.so.1.1")
    }

    /// cuda_compat's `libcuda.so.1`.
    pub fn compat_cuda(&self, compat: Compat, linkage: Linkage) -> PathBuf {
        self.dir
            .join(compat_dir(compat, linkage))
            .join("libcuda.so.1")
    }

    /// `libcudart.so.12` needing a driver of at least `version`.
    pub fn cudart(&self, version: u32) -> PathBuf {
        self.dir.join(format!("cudart-{version}/libcudart.so.12"))
    }

    /// The app, without RUNPATH (the scene gives it Nix's).
    pub fn saxpy(&self) -> PathBuf {
        self.dir.join("saxpy")
    }

    /// The JetPack host glibc's `libnss_compat.so.2`, as far as anyone can tell.
    pub fn host_nss_compat(&self) -> PathBuf {
        self.dir.join("host/libnss_compat.so.2")
    }
}

fn board_dir(board: Board) -> String {
    format!("board-{}-r{}", board.driver, board.l4t)
}

fn compat_dir(compat: Compat, linkage: Linkage) -> String {
    format!(
        "compat-{}-r{}-{}",
        compat.version,
        compat.l4t,
        linkage.name()
    )
}

fn build_all(c: &Compiler) -> Result<()> {
    let out = c.out().to_path_buf();
    let path = |rel: &str| out.join(rel).display().to_string();
    let mut releases: Vec<u32> = BOARDS.iter().map(|b| b.l4t).collect();
    releases.extend(COMPATS.iter().map(|c| c.l4t));
    releases.sort();
    releases.dedup();
    for l4t in releases {
        let dir = format!("r{l4t}");
        c.shared(
            &format!("{dir}/libnvos.so"),
            "jetson-nvos.c",
            "libnvos.so",
            &[],
            &[],
        )?;
        for nvrm in ["gpu", "mem"] {
            c.shared(
                &format!("{dir}/libnvrm_{nvrm}.so"),
                "jetson-nvrm.c",
                &format!("libnvrm_{nvrm}.so"),
                &[format!("-DNVRM={nvrm}"), format!("-DL4T_RELEASE={l4t}")],
                &[path(&format!("{dir}/libnvos.so"))],
            )?;
        }
    }
    // Linked against the release's libnvrm_*: DT_NEEDED by SONAME, no RUNPATH.
    let nvrm = |l4t: u32| -> Vec<String> {
        vec![
            path(&format!("r{l4t}/libnvrm_gpu.so")),
            path(&format!("r{l4t}/libnvrm_mem.so")),
            format!("-Wl,-rpath-link,{}", path(&format!("r{l4t}"))),
        ]
    };
    for board in BOARDS {
        c.shared(
            &format!("{}/libcuda.so.1.1", board_dir(*board)),
            "jetson-libcuda.c",
            "libcuda.so.1",
            &["-DBOARD".into(), format!("-DCUDA_VERSION={}", board.driver)],
            &nvrm(board.l4t),
        )?;
    }
    for compat in COMPATS {
        for linkage in Linkage::ALL {
            let mut defines = vec![
                "-DCOMPAT".to_string(),
                format!("-DCUDA_VERSION={}", compat.version),
                format!("-DACCEPTS_L4T={}", compat.l4t),
            ];
            // As nixpkgs builds it: against stub libnvrm_* (any release's will do; the stubs
            // never reach a root), or without them when it dlopens them.
            let link = match linkage {
                Linkage::Needed => nvrm(compat.l4t),
                Linkage::Dlopen => {
                    defines.push("-DNVRM_DLOPEN".into());
                    Vec::new()
                }
            };
            c.shared(
                &format!("{}/libcuda.so.1", compat_dir(*compat, linkage)),
                "jetson-libcuda.c",
                "libcuda.so.1",
                &defines,
                &link,
            )?;
        }
    }
    for version in RUNTIMES {
        c.shared(
            &format!("cudart-{version}/libcudart.so.12"),
            "jetson-cudart.c",
            "libcudart.so.12",
            &[format!("-DRUNTIME_VERSION={version}")],
            &[],
        )?;
    }
    c.compile(
        "saxpy",
        "jetson-saxpy.c",
        &[],
        &[path(&format!("cudart-{}/libcudart.so.12", RUNTIMES[0]))],
    )?;
    c.shared(
        "host/libnss_compat.so.2",
        "jetson-nss-impostor.c",
        "libnss_compat.so.2",
        &[],
        &[],
    )
}
