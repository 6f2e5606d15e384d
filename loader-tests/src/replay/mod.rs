//! The Jetson replay (`cargo xtask jetson-replay`, docs/jetson.md): every approach proposed for
//! `cuda_compat` on Jetson (the rows) on every kind of host (the columns), each cell a real
//! run of a saxpy-like app under the built loader, in a hermetic root laid out like that host.
//!
//! The fake CUDA stack ([`fixtures`]) behaves like the real one where the loader is concerned:
//! the runtime dlopens `libcuda.so.1` and refuses an older driver; cuda_compat's `libcuda.so.1`
//! needs the board's `libnvrm_*` (by DT_NEEDED as nixpkgs links it, or by dlopen: every cell
//! runs both) and works on one L4T release only; `libnvrm_*` need `libnvos.so` and have no
//! RUNPATH on a JetPack host. RUNPATHs and DT_NEEDED entries are set with patchelf, as Nix
//! sets them ([`scene`]).

pub mod fixtures;
mod outcome;
pub mod report;
mod scene;

use std::collections::BTreeMap;

use crate::root::Bench;
use crate::{Flavour, Target};

pub use fixtures::JetsonFixtures;
pub use report::{CellReport, ReplayReport, RowReport, RunReport};

/// A board: its L4T release (`/etc/nv_tegra_release`) and the CUDA version of its own driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Board {
    pub l4t: u32,
    pub driver: u32,
}

/// A cuda_compat package: the CUDA version its `libcuda.so.1` reports and the one L4T
/// release it works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Compat {
    pub version: u32,
    pub l4t: u32,
}

/// JetPack 5 (L4T R35, CUDA 11.4) and JetPack 6 (L4T R36, CUDA 12.6).
pub const BOARDS: &[Board] = &[
    Board {
        l4t: 35,
        driver: 11040,
    },
    Board {
        l4t: 36,
        driver: 12060,
    },
];
/// cuda_compat 12.2 for JetPack 5, cuda_compat 12.8 for JetPack 6.
pub const COMPATS: &[Compat] = &[
    Compat {
        version: 12020,
        l4t: 35,
    },
    Compat {
        version: 12080,
        l4t: 36,
    },
];
/// The CUDA runtimes the apps are built with: each needs a driver at least this new.
pub const RUNTIMES: [u32; 2] = [12020, 12080];

/// How cuda_compat's `libcuda.so.1` gets the board's `libnvrm_*`: both occur in practice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Linkage {
    /// DT_NEEDED (nixpkgs' cuda_compat: autoPatchelf lists them as missing dependencies).
    Needed,
    /// dlopen when the driver initialises.
    Dlopen,
}

impl Linkage {
    pub const ALL: [Linkage; 2] = [Linkage::Needed, Linkage::Dlopen];

    pub fn name(self) -> &'static str {
        match self {
            Linkage::Needed => "needed",
            Linkage::Dlopen => "dlopen",
        }
    }
}

/// Where the host keeps the board's driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Host {
    /// NixOS (jetpack-nixos): `/run/opengl-driver/lib`, symlinks into the l4t store paths.
    NixOs,
    /// Nix on a JetPack 5 (Ubuntu) host: `/usr/lib/<triplet>/tegra`, no `/run/opengl-driver`.
    JetPack5,
    /// Nix on a JetPack 6 host: `/usr/lib/<triplet>/nvidia`.
    JetPack6,
}

/// A column: a host with a board, the app's cuda_compat and runtime, and what the user does.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub id: &'static str,
    /// The column's heading in the tables.
    pub heading: &'static str,
    pub host: Host,
    pub board: Board,
    pub compat: Compat,
    /// The app's runtime needs a driver at least this new.
    pub app_needs: u32,
    /// The user opts out of cuda_compat for this one run, the way the approach allows.
    pub opt_out: bool,
    /// The variable (LD_LIBRARY_PATH or LD_FALLBACK_PATH) also lists the host's
    /// `/usr/lib/<triplet>`, and the app looks a user up through NSS (`passwd: compat`).
    pub nss: bool,
}

pub const COLUMNS: &[Column] = &[
    Column {
        id: "nixos-jp5",
        heading: "NixOS, JetPack 5 board (driver 11.4 < compat 12.2)",
        host: Host::NixOs,
        board: BOARDS[0],
        compat: COMPATS[0],
        app_needs: 12020,
        opt_out: false,
        nss: false,
    },
    Column {
        id: "nixos-jp6-newer",
        heading: "NixOS, JetPack 6 board (driver 12.6 > the app's compat 12.2)",
        host: Host::NixOs,
        board: BOARDS[1],
        compat: COMPATS[0],
        app_needs: 12020,
        opt_out: false,
        nss: false,
    },
    Column {
        id: "jetpack5",
        heading: "Nix on JetPack 5 (`.../tegra`, driver 11.4, compat 12.2)",
        host: Host::JetPack5,
        board: BOARDS[0],
        compat: COMPATS[0],
        app_needs: 12020,
        opt_out: false,
        nss: false,
    },
    Column {
        id: "jetpack6",
        heading: "Nix on JetPack 6 (`.../nvidia`, driver 12.6, compat 12.8)",
        host: Host::JetPack6,
        board: BOARDS[1],
        compat: COMPATS[1],
        app_needs: 12080,
        opt_out: false,
        nss: false,
    },
    Column {
        id: "opt-out",
        heading: "Opting out for one run (NixOS, JetPack 6 board, compat 12.2): what the user sets",
        host: Host::NixOs,
        board: BOARDS[1],
        compat: COMPATS[0],
        app_needs: 12020,
        opt_out: true,
        nss: false,
    },
    Column {
        id: "jetpack5-nss",
        heading:
            "Nix on JetPack 5, the variable also lists `/usr/lib/aarch64-linux-gnu`; an NSS lookup",
        host: Host::JetPack5,
        board: BOARDS[0],
        compat: COMPATS[0],
        app_needs: 12020,
        opt_out: false,
        nss: true,
    },
];

/// What the CUDA runtime's RUNPATH holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudartRunpath {
    /// `<cuda_compat>/compat:/run/opengl-driver/lib:$ORIGIN` (#267247 after
    /// autoAddDriverRunpath).
    CompatFirst,
    /// `/run/opengl-driver/lib:$ORIGIN` (autoAddDriverRunpath alone).
    DriverOnly,
}

/// What cuda_compat's `libcuda.so.1` RUNPATH holds besides `/run/opengl-driver/lib:$ORIGIN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompatRunpath {
    /// Only what buildRedist gives every CUDA package.
    Driver,
    /// The JetPack 5 driver directory appended (#273389), plus `libnvos.so` (what libnvrm_*
    /// need) as an extra DT_NEEDED.
    AppendTegra,
    /// The l4t-core store path first (jetpack-nixos: `buildInputs += l4t-core`).
    L4tCoreFirst,
}

/// The variable an approach sets to the driver directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Variable {
    #[serde(rename = "LD_LIBRARY_PATH")]
    LibraryPath,
    #[serde(rename = "LD_FALLBACK_PATH")]
    FallbackPath,
}

impl Variable {
    pub fn name(self) -> &'static str {
        match self {
            Variable::LibraryPath => "LD_LIBRARY_PATH",
            Variable::FallbackPath => "LD_FALLBACK_PATH",
        }
    }
}

/// How a user opts out of cuda_compat for one run under an approach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptOut {
    /// `LD_LIBRARY_PATH=/run/opengl-driver/lib`.
    LibraryPathAtDriver,
    /// `LD_LIBRARY_PATH=<the l4t-cuda store path>`: the board's own libcuda, past the one the
    /// system put into `/run/opengl-driver/lib`.
    LibraryPathAtL4tCuda,
    /// The approach already gives the board's driver: nothing to set.
    Nothing,
    /// No per-run way: what is tried (`LD_LIBRARY_PATH=/run/opengl-driver/lib`) is shown.
    NoPerRunWay,
}

/// A row: one way of using cuda_compat, as the Nix packages and the system set it up.
#[derive(Debug, Clone, Copy)]
pub struct Approach {
    pub number: u8,
    pub title: &'static str,
    /// The loader it runs under (patched, or the fallback-first variant).
    pub flavour: Flavour,
    pub cudart_runpath: CudartRunpath,
    /// The runtime has cuda_compat's `libcuda.so.1` as an absolute DT_NEEDED.
    pub cudart_needs_compat: bool,
    pub compat_runpath: CompatRunpath,
    /// On NixOS the system puts cuda_compat's `libcuda.so.1` into `/run/opengl-driver/lib`
    /// when the board's driver is too old for the app (or the user is to opt out of it).
    pub impure_binding: bool,
    /// Set to the host's driver directory for every run.
    pub variable: Option<Variable>,
    pub opt_out: OptOut,
}

const APPROACH: Approach = Approach {
    number: 0,
    title: "",
    flavour: Flavour::Patched,
    cudart_runpath: CudartRunpath::CompatFirst,
    cudart_needs_compat: false,
    compat_runpath: CompatRunpath::Driver,
    impure_binding: false,
    variable: None,
    opt_out: OptOut::LibraryPathAtDriver,
};

pub const APPROACHES: &[Approach] = &[
    Approach {
        number: 1,
        title: "cuda_compat first in the CUDA libraries' DT_RUNPATH (nixpkgs #267247, autoAddCudaCompatRunpath)",
        ..APPROACH
    },
    Approach {
        number: 2,
        title: "`LD_LIBRARY_PATH` at the driver dir (jetpack-nixos before #164; nix-gl-host)",
        variable: Some(Variable::LibraryPath),
        opt_out: OptOut::Nothing,
        ..APPROACH
    },
    Approach {
        number: 3,
        title: "Impure binding: the system puts cuda_compat's libcuda.so.1 into `/run/opengl-driver/lib`",
        cudart_runpath: CudartRunpath::DriverOnly,
        impure_binding: true,
        opt_out: OptOut::LibraryPathAtL4tCuda,
        ..APPROACH
    },
    Approach {
        number: 4,
        title: "Pure binding: cuda_compat's libcuda.so.1 an absolute DT_NEEDED of the runtime (patchelf --add-needed)",
        cudart_runpath: CudartRunpath::DriverOnly,
        cudart_needs_compat: true,
        opt_out: OptOut::NoPerRunWay,
        ..APPROACH
    },
    Approach {
        number: 5,
        title: "Discover and add: the JetPack 5 driver dir appended to cuda_compat's RUNPATH, libnvrm_*'s deps added as DT_NEEDED (nixpkgs #273389)",
        compat_runpath: CompatRunpath::AppendTegra,
        ..APPROACH
    },
    Approach {
        number: 6,
        title: "cuda_compat linked against the l4t-core store path (jetpack-nixos today)",
        compat_runpath: CompatRunpath::L4tCoreFirst,
        ..APPROACH
    },
    Approach {
        number: 7,
        title: "`LD_FALLBACK_PATH` at the driver dir (this patch: searched last)",
        variable: Some(Variable::FallbackPath),
        ..APPROACH
    },
    Approach {
        number: 8,
        title: "`LD_FALLBACK_PATH` searched before ld.so.cache and the default dirs (the #248547 placement; variant loader)",
        flavour: Flavour::FallbackFirst,
        variable: Some(Variable::FallbackPath),
        ..APPROACH
    },
];

impl Approach {
    /// The flavours this row runs under: its own, and the unpatched loader too when it sets
    /// LD_FALLBACK_PATH (which shows what the patch changes).
    pub fn flavours(&self) -> Vec<Flavour> {
        let mut flavours = vec![self.flavour];
        if self.variable == Some(Variable::FallbackPath) {
            flavours.push(Flavour::Unpatched);
        }
        flavours
    }
}

/// The benches (sysroot, fixtures, QEMU) of each flavour the replay uses, or why one is
/// missing: its rows are then reported as not run, with the reason.
pub struct Benches<'a> {
    pub target: Target,
    pub release: String,
    pub benches: BTreeMap<Flavour, Result<(&'a Bench, JetsonFixtures), String>>,
}

/// Runs every cell, row by row.
pub fn run(benches: &Benches<'_>) -> ReplayReport {
    let rows = APPROACHES
        .iter()
        .map(|approach| {
            let cells = COLUMNS
                .iter()
                .map(|column| run_cell(benches, approach, column))
                .collect();
            RowReport::new(approach, cells)
        })
        .collect();
    ReplayReport::new(benches, rows)
}

fn run_cell(benches: &Benches<'_>, approach: &Approach, column: &Column) -> CellReport {
    let mut runs = Vec::new();
    for flavour in approach.flavours() {
        for linkage in Linkage::ALL {
            let run = match benches.benches.get(&flavour) {
                Some(Ok((bench, fixtures))) => {
                    scene::run(bench, fixtures, approach, column, linkage, flavour)
                }
                Some(Err(why)) => RunReport::not_run(flavour, linkage, why),
                None => RunReport::not_run(flavour, linkage, "no sysroot of this flavour"),
            };
            runs.push(run);
        }
    }
    CellReport::new(approach, column, runs)
}

/// One run of one cell under `flavour`'s loader, whatever the row's own flavour (the search
/// model's differential test runs every cell under both loaders).
pub fn run_one(
    bench: &Bench,
    fixtures: &JetsonFixtures,
    approach: &Approach,
    column: &Column,
    linkage: Linkage,
    flavour: Flavour,
) -> RunReport {
    scene::run(bench, fixtures, approach, column, linkage, flavour)
}

/// `12020` as `12.2`.
pub fn cuda_version(version: u32) -> String {
    format!("{}.{}", version / 1000, version % 1000 / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_like_cuda_versions() {
        assert_eq!(cuda_version(12020), "12.2");
        assert_eq!(cuda_version(11040), "11.4");
        assert_eq!(cuda_version(12080), "12.8");
    }

    #[test]
    fn columns_use_the_versions_the_fixtures_are_built_for() {
        for column in COLUMNS {
            assert!(BOARDS.contains(&column.board), "{}", column.id);
            assert!(COMPATS.contains(&column.compat), "{}", column.id);
            assert!(RUNTIMES.contains(&column.app_needs), "{}", column.id);
            // Which libcuda.so.1 ran is told by its version: they must differ.
            assert_ne!(column.board.driver, column.compat.version, "{}", column.id);
        }
    }

    #[test]
    fn rows_using_the_fallback_also_run_unpatched() {
        for approach in APPROACHES {
            let unpatched = approach.flavours().contains(&Flavour::Unpatched);
            assert_eq!(
                unpatched,
                approach.variable == Some(Variable::FallbackPath),
                "approach {}",
                approach.number
            );
        }
    }
}
