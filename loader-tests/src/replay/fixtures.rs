//! The replay's fake CUDA stack (`c-fixtures/jetson*.c`), compiled against the glibc under
//! test and cached like the matrix's fixtures: per L4T release the driver directory's
//! libraries, per board and cuda_compat the `libcuda.so.1` (cuda_compat's in both linkages)
//! and its JIT helper, the runtimes the columns use, and the app as a C and a C++ program.
//! `libnvrm_gpu`, `libnvdla_runtime` and the C++ app link Debian's real `libstdc++.so.6`
//! ([`HostLibs`]), whose version is part of the cache key.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{cudart_soname, App, Board, Compat, HostLibs, Linkage, BOARDS, COMPATS, RUNTIMES};
use crate::fixtures::{ensure_set, Compiler, FixtureSet};
use crate::layout::Layout;
use model::Sysroot;

/// Bump when the recipe below changes in a way the sources hash cannot see.
const RECIPE: &str = "jetson-v6";

const SOURCES: &[&str] = &[
    "jetson.h",
    "jetson-l4t.c",
    "jetson-nvos.c",
    "jetson-nvrm.c",
    "jetson-ptxjit.c",
    "jetson-libcuda.c",
    "jetson-cudart.c",
    "jetson-saxpy.c",
];

/// A library of the board's driver directory: its SONAME, its source and defines, and the
/// other libraries of the directory it needs (DT_NEEDED), in link order. docs/jetson.md
/// ("The closure") says which of these edges are confirmed.
pub(crate) struct BoardLib {
    pub name: &'static str,
    source: &'static str,
    defines: &'static [&'static str],
    needs: &'static [&'static str],
    /// Also needs `libstdc++.so.6` (from outside the driver directory).
    pub needs_libstdcxx: bool,
    /// Only in the driver directories of this L4T release and later ones (R36's, R38's and
    /// R39's container lists have `libnvtegrahv.so`, R35's has not).
    pub since: Option<u32>,
}

/// The driver directory's libraries, dependencies first.
pub(crate) const BOARD_LIBS: &[BoardLib] = &[
    BoardLib {
        name: "libnvsocsys.so",
        source: "jetson-l4t.c",
        defines: &["-DL4T_LIB=nvsocsys"],
        needs: &[],
        needs_libstdcxx: false,
        since: None,
    },
    BoardLib {
        name: "libnvtegrahv.so",
        source: "jetson-l4t.c",
        defines: &["-DL4T_LIB=nvtegrahv"],
        needs: &[],
        needs_libstdcxx: false,
        since: Some(36),
    },
    BoardLib {
        name: "libnvos.so",
        source: "jetson-nvos.c",
        defines: &[],
        needs: &["libnvsocsys.so", "libnvtegrahv.so"],
        needs_libstdcxx: false,
        since: None,
    },
    BoardLib {
        name: "libnvrm_chip.so",
        source: "jetson-l4t.c",
        defines: &["-DL4T_LIB=nvrm_chip"],
        needs: &["libnvos.so"],
        needs_libstdcxx: false,
        since: None,
    },
    BoardLib {
        name: "libnvrm_mem.so",
        source: "jetson-nvrm.c",
        defines: &[
            "-DOPEN=nvrm_mem_open",
            "-DLIBNAME=\"libnvrm_mem\"",
            "-DUSES_CHIP",
        ],
        needs: &["libnvos.so", "libnvrm_chip.so"],
        needs_libstdcxx: false,
        since: None,
    },
    BoardLib {
        name: "libnvrm_host1x.so",
        source: "jetson-l4t.c",
        defines: &["-DL4T_LIB=nvrm_host1x"],
        needs: &["libnvos.so", "libnvrm_mem.so"],
        needs_libstdcxx: false,
        since: None,
    },
    BoardLib {
        name: "libnvrm_gpu.so",
        source: "jetson-nvrm.c",
        defines: &[
            "-DOPEN=nvrm_gpu_open",
            "-DLIBNAME=\"libnvrm_gpu\"",
            "-DUSES_HOST1X",
            "-DUSES_LIBSTDCXX",
        ],
        needs: &["libnvrm_mem.so", "libnvrm_host1x.so", "libnvos.so"],
        needs_libstdcxx: true,
        since: None,
    },
    BoardLib {
        name: "libnvdla_runtime.so",
        source: "jetson-nvrm.c",
        defines: &[
            "-DOPEN=nvdla_runtime_open",
            "-DLIBNAME=\"libnvdla_runtime\"",
            "-DUSES_HOST1X",
            "-DUSES_LIBSTDCXX",
        ],
        needs: &["libnvrm_mem.so", "libnvrm_host1x.so", "libnvos.so"],
        needs_libstdcxx: true,
        since: None,
    },
];

/// The libraries of `l4t`'s driver directory, in the order above.
pub(crate) fn board_libs(l4t: u32) -> impl Iterator<Item = &'static BoardLib> {
    BOARD_LIBS
        .iter()
        .filter(move |lib| lib.since.is_none_or(|since| since <= l4t))
}

/// What #273389 adds to cuda_compat's DT_NEEDED: the libraries of the driver directory that
/// `libnvrm_*` and `libnvdla_runtime` need (they are not looked up through cuda_compat's
/// RUNPATH otherwise), dependencies first.
pub(crate) fn nvrm_dependencies(l4t: u32) -> Vec<&'static str> {
    let libs: Vec<&BoardLib> = board_libs(l4t).collect();
    libs.iter()
        .map(|lib| lib.name)
        .filter(|name| libs.iter().any(|lib| lib.needs.contains(name)))
        .collect()
}

/// The compiled stack for one sysroot.
#[derive(Debug, Clone)]
pub struct JetsonFixtures {
    pub dir: PathBuf,
}

impl JetsonFixtures {
    pub fn ensure(
        sysroot: &Sysroot,
        layout: &Layout,
        cache: &Path,
        host: &HostLibs,
    ) -> Result<JetsonFixtures> {
        // The real libstdc++ they link is part of what they are.
        let recipe = format!("{RECIPE} {}", host.versions.join(", "));
        let fixtures = ensure_set(
            FixtureSet {
                prefix: "jetson-",
                recipe: &recipe,
                sources: SOURCES,
                build: &|c: &Compiler| build_all(c, host),
            },
            sysroot,
            layout,
            cache,
        )?;
        Ok(JetsonFixtures { dir: fixtures.dir })
    }

    /// A library of an L4T release's driver directory (no RUNPATH).
    pub(crate) fn board_lib(&self, l4t: u32, name: &str) -> PathBuf {
        self.dir.join(format!("r{l4t}/{name}"))
    }

    /// The board's `libcuda.so.1.1` (SONAME `libcuda.so.1`, DT_NEEDED `libnvrm_*`).
    pub(crate) fn board_cuda(&self, board: Board) -> PathBuf {
        self.dir.join(board_dir(board)).join("libcuda.so.1.1")
    }

    /// cuda_compat's `libcuda.so.1`.
    pub(crate) fn compat_cuda(&self, compat: Compat, linkage: Linkage) -> PathBuf {
        self.dir
            .join(compat_dir(compat, linkage))
            .join("libcuda.so.1")
    }

    /// The helper `soname` (one of [`HELPERS`]) shipped with the driver of `version`.
    pub(crate) fn helper(&self, version: u32, soname: &str) -> PathBuf {
        self.dir.join(format!("jit-{version}/{soname}"))
    }

    /// cuda_cudart's `lib/stubs/libcuda.so` (SONAME `libcuda.so.1`).
    pub(crate) fn stub_cuda(&self) -> PathBuf {
        self.dir.join("stubs/libcuda.so")
    }

    /// The runtime needing a driver of at least `version` ([`cudart_soname`]).
    pub(crate) fn cudart(&self, version: u32) -> PathBuf {
        self.dir
            .join(format!("cudart-{version}"))
            .join(cudart_soname(version))
    }

    /// The app, without RUNPATH (the scene gives it Nix's), linked against the runtime of
    /// `runtime`'s CUDA major version (`libcudart.so.12` or `.13`).
    pub(crate) fn saxpy(&self, app: App, runtime: u32) -> PathBuf {
        self.dir.join(saxpy_name(app, runtime))
    }
}

/// The helpers a driver dlopens by bare name: the PTX JIT compiler when a PTX module is
/// loaded, NVVM for an LTO link, the debugger library under a debugger. Each driver
/// directory and cuda_compat ship all three (jetpack-nixos `pkgs/containers/r35-l4t.json`,
/// `r36-l4t.json`; NVIDIA's CUDA Compatibility guide lists them in the compat package).
pub(crate) const HELPERS: [&str; 3] = [
    "libnvidia-ptxjitcompiler.so.1",
    "libnvidia-nvvm.so.4",
    "libcudadebugger.so.1",
];

/// One app per runtime SONAME: CUDA 12's keeps the name it had before CUDA 13.
fn saxpy_name(app: App, runtime: u32) -> String {
    match runtime / 1000 {
        12 => format!("saxpy-{}", app.name()),
        major => format!("saxpy-{}-cuda{major}", app.name()),
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

fn build_all(c: &Compiler, host: &HostLibs) -> Result<()> {
    let out = c.out().to_path_buf();
    let path = |rel: &str| out.join(rel).display().to_string();
    // Debian's libstdc++.so.6, linked by path: DT_NEEDED is its SONAME. Its own libgcc_s and
    // libm are found through -rpath-link at link time.
    let mut libstdcxx = vec![host.file("libstdc++.so.6").display().to_string()];
    libstdcxx.extend(
        host.dirs()
            .iter()
            .map(|dir| format!("-Wl,-rpath-link,{}", dir.display())),
    );
    let mut releases: Vec<u32> = BOARDS.iter().map(|b| b.l4t).collect();
    releases.extend(COMPATS.iter().map(|c| c.l4t));
    releases.sort();
    releases.dedup();
    for l4t in releases {
        let dir = format!("r{l4t}");
        let present: Vec<&str> = board_libs(l4t).map(|lib| lib.name).collect();
        for lib in board_libs(l4t) {
            let mut defines = vec![format!("-DL4T_RELEASE={l4t}")];
            defines.extend(lib.defines.iter().map(|d| d.to_string()));
            if lib.needs.contains(&"libnvtegrahv.so") && present.contains(&"libnvtegrahv.so") {
                defines.push("-DTEGRAHV".into());
            }
            // Every dependency stays in DT_NEEDED, used or not: the loader must find it.
            let mut link = vec!["-Wl,--no-as-needed".to_string()];
            link.extend(
                lib.needs
                    .iter()
                    .filter(|need| present.contains(need))
                    .map(|need| path(&format!("{dir}/{need}"))),
            );
            if lib.needs_libstdcxx {
                link.extend(libstdcxx.iter().cloned());
            }
            link.push(format!("-Wl,-rpath-link,{}", path(&dir)));
            c.shared(
                &format!("{dir}/{}", lib.name),
                lib.source,
                lib.name,
                &defines,
                &link,
            )?;
        }
    }
    // Linked against the release's libraries: DT_NEEDED by SONAME, no RUNPATH.
    let link_board = |l4t: u32, names: &[&str]| -> Vec<String> {
        let mut link = vec!["-Wl,--no-as-needed".to_string()];
        link.extend(names.iter().map(|name| path(&format!("r{l4t}/{name}"))));
        link.push(format!("-Wl,-rpath-link,{}", path(&format!("r{l4t}"))));
        link.extend(libstdcxx.iter().skip(1).cloned());
        link
    };
    for board in BOARDS {
        c.shared(
            &format!("{}/libcuda.so.1.1", board_dir(*board)),
            "jetson-libcuda.c",
            "libcuda.so.1",
            &["-DBOARD".into(), format!("-DCUDA_VERSION={}", board.driver)],
            &link_board(board.l4t, &["libnvrm_gpu.so", "libnvrm_mem.so"]),
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
                Linkage::Needed => link_board(
                    compat.l4t,
                    &["libnvrm_gpu.so", "libnvrm_mem.so", "libnvdla_runtime.so"],
                ),
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
    let mut drivers: Vec<u32> = BOARDS.iter().map(|b| b.driver).collect();
    drivers.extend(COMPATS.iter().map(|c| c.version));
    drivers.sort();
    drivers.dedup();
    for version in drivers {
        for soname in HELPERS {
            c.shared(
                &format!("jit-{version}/{soname}"),
                "jetson-ptxjit.c",
                soname,
                &[format!("-DJIT_VERSION={version}")],
                &[],
            )?;
        }
    }
    c.shared(
        "stubs/libcuda.so",
        "jetson-libcuda.c",
        "libcuda.so.1",
        &["-DSTUB".into(), "-DCUDA_VERSION=0".into()],
        &[],
    )?;
    for version in RUNTIMES {
        let soname = cudart_soname(version);
        c.shared(
            &format!("cudart-{version}/{soname}"),
            "jetson-cudart.c",
            &soname,
            &[format!("-DRUNTIME_VERSION={version}")],
            &[],
        )?;
    }
    // Per runtime SONAME, the app links the oldest runtime of that major version; each root
    // places the one its column needs.
    let mut majors: Vec<u32> = RUNTIMES.iter().map(|v| v / 1000).collect();
    majors.dedup();
    for major in majors {
        let oldest = RUNTIMES
            .iter()
            .copied()
            .find(|v| v / 1000 == major)
            .expect("a runtime of each major version");
        let cudart = path(&format!("cudart-{oldest}/{}", cudart_soname(oldest)));
        c.compile(
            &saxpy_name(App::C, oldest),
            "jetson-saxpy.c",
            &[],
            std::slice::from_ref(&cudart),
        )?;
        let mut link = vec![cudart, "-Wl,--no-as-needed".to_string()];
        link.extend(libstdcxx.iter().cloned());
        c.compile(
            &saxpy_name(App::Cxx, oldest),
            "jetson-saxpy.c",
            &["-DCXX_APP".into()],
            &link,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dependency_of_a_board_library_comes_before_it() {
        for l4t in [35, 36, 38, 39] {
            let names: Vec<&str> = board_libs(l4t).map(|lib| lib.name).collect();
            for (i, lib) in board_libs(l4t).enumerate() {
                for need in lib.needs.iter().filter(|n| names.contains(n)) {
                    let at = names.iter().position(|n| n == need).unwrap();
                    assert!(at < i, "R{l4t}: {} needs {need}, built later", lib.name);
                }
            }
        }
    }

    #[test]
    fn the_closure_has_what_the_sources_name() {
        // cuda_compat's DT_NEEDED (nixpkgs' autoPatchelfIgnoreMissingDeps) and libnvrm_*'s
        // libstdc++ (#273389) must be in the model.
        for name in ["libnvrm_gpu.so", "libnvrm_mem.so", "libnvdla_runtime.so"] {
            assert!(BOARD_LIBS.iter().any(|lib| lib.name == name), "{name}");
        }
        assert!(BOARD_LIBS
            .iter()
            .any(|lib| lib.name == "libnvrm_gpu.so" && lib.needs_libstdcxx));
        assert_eq!(
            nvrm_dependencies(35),
            [
                "libnvsocsys.so",
                "libnvos.so",
                "libnvrm_chip.so",
                "libnvrm_mem.so",
                "libnvrm_host1x.so"
            ]
        );
        for l4t in [36, 38, 39] {
            assert!(
                nvrm_dependencies(l4t).contains(&"libnvtegrahv.so"),
                "R{l4t}"
            );
        }
    }
}
