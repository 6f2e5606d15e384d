//! The Jetson replay (`cargo xtask jetson-replay`, docs/jetson.md): every approach proposed for
//! `cuda_compat` on Jetson (the rows) on every kind of host (the columns), each cell real runs
//! of a saxpy-like app under the built loader, in a hermetic root laid out like that host.
//!
//! The fake CUDA stack ([`fixtures`]) has the closure the real one has (docs/jetson.md cites
//! every edge): the runtime dlopens `libcuda.so.1` and refuses an older driver; cuda_compat's
//! `libcuda.so.1` needs the board's `libnvrm_gpu`/`libnvrm_mem`/`libnvdla_runtime` (by
//! DT_NEEDED as nixpkgs links it, or by dlopen: every cell runs both) and works on one L4T
//! release only; those need `libnvos.so` and the driver directory's other libraries, and
//! `libstdc++.so.6`, with no RUNPATH on a JetPack host; every `libcuda.so.1` dlopens its PTX
//! JIT helper by bare name when a module is loaded. The host's own libraries (`libstdc++`,
//! `libnss_systemd`) are Debian's real ones ([`host`]). RUNPATHs and DT_NEEDED entries are set
//! with patchelf, as Nix sets them ([`scene`]).
//!
//! The loader under test reads `/etc/ld.so.cache`; a Nix glibc reads its own prefix's cache,
//! which nixpkgs deletes. No root has either file ([`scene`] checks it before every run), so
//! the two loaders search the same places in every cell (docs/jetson.md, "The loader"); the
//! only exceptions are the rows that declare a cache ([`DeclaredCache`], made in [`cache`] by
//! the sysroot's own `ldconfig`): NVIDIA's container toolkit in an FHS container, whose glibc
//! reads it, and nixpkgs #248777's `NIX_LD_SO_CACHE`, for which it stands in.

mod cache;
mod edited;
pub mod facts;
pub(crate) mod fixtures;
pub(crate) mod host;
mod outcome;
mod paths;
pub mod premises;
pub mod real;
pub mod report;
pub mod rules;
mod scene;
pub mod sources;
pub(crate) mod summary;

use std::collections::BTreeMap;

use crate::root::Bench;
use model::{parallel_map, Flavour, Release, Target};

use cache::CompatEntry;
pub use fixtures::JetsonFixtures;
pub use host::HostLibs;
pub use report::{CellReport, ReplayReport, RowReport, RunReport};
pub use scene::run_name;

/// A board: its L4T release (`/etc/nv_tegra_release`), the CUDA version of its own driver, and
/// what kind of device it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Board {
    pub l4t: u32,
    pub driver: u32,
    pub device: Device,
}

/// The kind of Jetson: NVIDIA's container toolkit looks for the compat driver in another
/// directory on an Orin (nvidia-container-toolkit `pkg/nvcdi/lib-csv.go`, `hasOrinDevices`: an
/// NVML device name containing "Orin (nvgpu)"), and Thor's driver stack has no source here
/// for what its `libcuda.so.1` needs (the `thor-closure` premise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Device {
    /// Orin (JetPack 5 also runs Xavier; its toolkit creates no compat hook either way).
    Orin,
    /// Thor (L4T R38): NVML names it "NVIDIA Thor" (the toolkit's `lib-csv_test.go`).
    Thor,
}

/// A cuda_compat package: the CUDA version its `libcuda.so.1` reports, the one L4T release it
/// works on, and which package it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Compat {
    pub version: u32,
    pub l4t: u32,
    pub package: CompatPackage,
}

/// Which of NVIDIA's compat packages: it decides where a CUDA image keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompatPackage {
    /// `cuda-compat-<major>-<minor>` of the JetPack 5 and 6 repositories (source package
    /// `cuda-compat`, jetpack-nixos `sourceinfo/r35.6-debs.json`, `r36.5-debs.json`): its
    /// directory is `compat/`.
    CudaCompat,
    /// R38.4's `cuda-compat-13-0`, built from the desktop driver's source package
    /// (`nvidia-graphics-drivers-580`, as `libnvidia-compute-580`: `sourceinfo/r38.4-debs.json`
    /// before 02d22af): `compat/`.
    Driver580,
    /// `cuda-compat-orin-<major>-<minor>` (R39.2's repository) and the `cuda_compat_orin`
    /// redistributable of nixpkgs' CUDA 13 manifests (made for JetPack 6: conda-forge
    /// staged-recipes #34460): `compat_orin/` (the redistributable's directory, and where the
    /// container toolkit looks on an Orin).
    Orin,
}

/// JetPack 5 (L4T R35.6.4, CUDA 11.4), JetPack 6 (L4T R36.5.0, CUDA 12.6) and JetPack 7: a
/// Thor on L4T R38.4.0 (CUDA 13.0) and an Orin on R39.2.0 (CUDA 13.2): jetpack-nixos
/// `overlay.nix` (`l4tMajorMinorPatchVersion`, `cudaMajorMinorPatchVersion`; R38's as it was
/// before 02d22af "jetpack7: Initial sources bump for 39.2").
pub(crate) const BOARDS: &[Board] = &[
    Board {
        l4t: 35,
        driver: 11040,
        device: Device::Orin,
    },
    Board {
        l4t: 36,
        driver: 12060,
        device: Device::Orin,
    },
    Board {
        l4t: 38,
        driver: 13000,
        device: Device::Thor,
    },
    Board {
        l4t: 39,
        driver: 13020,
        device: Device::Orin,
    },
];
/// cuda_compat 12.2 for JetPack 5 (nixpkgs has no CUDA 12.2 any more: nixos-cuda/cuda-legacy's
/// `cudaPackages_12_2` has it, and jetpack-nixos sets none for CUDA 11.4); for JetPack 6 12.4
/// (older than the board's 12.6, an older nixpkgs), 12.6 (the same) and 12.9 (newer: nixpkgs'
/// newest 12.x); R38.4's `cuda-compat-13-0` (the driver's own version, jetpack-nixos
/// `sourceinfo/r38.4-debs.json`); R39.2's `cuda-compat-orin-13-2` (`sourceinfo/r39.2-debs.json`);
/// and `cuda_compat_orin` 13.2 made for JetPack 6 (R36: the `compat-orin` premise, conda-forge
/// staged-recipes #34460), which nixpkgs lists in its manifests but does not package.
pub(crate) const COMPATS: &[Compat] = &[
    Compat {
        version: 12020,
        l4t: 35,
        package: CompatPackage::CudaCompat,
    },
    Compat {
        version: 12040,
        l4t: 36,
        package: CompatPackage::CudaCompat,
    },
    Compat {
        version: 12060,
        l4t: 36,
        package: CompatPackage::CudaCompat,
    },
    Compat {
        version: 12090,
        l4t: 36,
        package: CompatPackage::CudaCompat,
    },
    Compat {
        version: 13000,
        l4t: 38,
        package: CompatPackage::Driver580,
    },
    Compat {
        version: 13020,
        l4t: 39,
        package: CompatPackage::Orin,
    },
    Compat {
        version: 13020,
        l4t: 36,
        package: CompatPackage::Orin,
    },
];
/// The CUDA runtimes the apps are built with: each needs a driver of at least its major
/// version (an older minor one runs it: minor-version compatibility).
pub(crate) const RUNTIMES: [u32; 8] = [11040, 12020, 12040, 12060, 12090, 13000, 13020, 13040];

/// The L4T release a board or a store path is named after (jetpack-nixos `overlay.nix`).
pub(crate) fn l4t_release(l4t: u32) -> &'static str {
    match l4t {
        35 => "35.6.4",
        36 => "36.5.0",
        38 => "38.4.0",
        _ => "39.2.0",
    }
}

/// The SONAME of the CUDA runtime of `version`: `libcudart.so.<major>`.
pub(crate) fn cudart_soname(version: u32) -> String {
    format!("libcudart.so.{}", version / 1000)
}

/// How cuda_compat's `libcuda.so.1` gets the board's `libnvrm_*`: DT_NEEDED is what nixpkgs'
/// autoPatchelf reports; whether NVIDIA's also dlopens them is not known, so both are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Linkage {
    /// DT_NEEDED (nixpkgs' cuda_compat: autoPatchelf lists them as missing dependencies).
    Needed,
    /// dlopen when the driver initialises.
    Dlopen,
}

impl Linkage {
    pub(crate) const ALL: [Linkage; 2] = [Linkage::Needed, Linkage::Dlopen];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Linkage::Needed => "needed",
            Linkage::Dlopen => "dlopen",
        }
    }

    /// How a cell names the runs of this linkage when the two differ.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Linkage::Needed => "DT_NEEDED",
            Linkage::Dlopen => "dlopen",
        }
    }
}

/// The app: a C++ CUDA program has `libstdc++.so.6` loaded (from its own closure) before CUDA
/// starts, a C one does not; the board's `libnvrm_*` need one, so the two can differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum App {
    Cxx,
    C,
}

impl App {
    pub(crate) const ALL: [App; 2] = [App::Cxx, App::C];

    pub(crate) fn name(self) -> &'static str {
        match self {
            App::Cxx => "cxx",
            App::C => "c",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            App::Cxx => "C++ app",
            App::C => "C app",
        }
    }
}

/// Where `$ORIGIN` is in the RUNPATH of cuda_compat's `libcuda.so.1`, which decides whether
/// its bare-name `dlopen` of the JIT helper finds the helper shipped beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// As nixpkgs builds it: buildRedist appends `$ORIGIN`, autoAddDriverRunpath then puts
    /// `/run/opengl-driver/lib` first.
    Last,
    /// `$ORIGIN` first.
    First,
    /// No `$ORIGIN` (NVIDIA's cuda-compat package on a JetPack or Ubuntu host has no RUNPATH).
    Absent,
}

impl Origin {
    /// The runs of the helpers table, besides the main table's (`Last`).
    pub(crate) const VARIANTS: [Origin; 2] = [Origin::Absent, Origin::First];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Origin::Last => "origin-last",
            Origin::First => "origin-first",
            Origin::Absent => "no-origin",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Origin::Last => "`$ORIGIN` last (nixpkgs)",
            Origin::First => "`$ORIGIN` first",
            Origin::Absent => "no `$ORIGIN`",
        }
    }

    /// `entries` with `$ORIGIN` where this variant puts it; `nixpkgs_at` is where nixpkgs'
    /// own RUNPATH has it.
    pub(crate) fn runpath(self, entries: &[String], nixpkgs_at: usize) -> String {
        let mut runpath: Vec<&str> = entries.iter().map(String::as_str).collect();
        match self {
            Origin::Last => runpath.insert(nixpkgs_at.min(runpath.len()), "$ORIGIN"),
            Origin::First => runpath.insert(0, "$ORIGIN"),
            Origin::Absent => {}
        }
        runpath.join(":")
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
    /// Nix on a JetPack 6 host: `/usr/lib/<triplet>/nvidia` (and `tegra/`, which still holds
    /// `libcudadebugger.so.1`).
    JetPack6,
    /// Nix on a JetPack 7 host on L4T R38 (Thor): JetPack 6's layout, `libcuda.so.1.1`, the
    /// `libnvrm_*` and the JIT helper in `/usr/lib/<triplet>/nvidia`, `libcudadebugger.so.1` in
    /// `tegra/` (jetpack-nixos `pkgs/containers/r38-l4t.json` before 02d22af).
    JetPack7,
}

impl Host {
    /// The host's driver directory, in full.
    pub(crate) fn driver_dir(self, triplet: &str) -> String {
        match self {
            Host::NixOs => "/run/opengl-driver/lib".to_string(),
            Host::JetPack5 => format!("/usr/lib/{triplet}/tegra"),
            Host::JetPack6 | Host::JetPack7 => format!("/usr/lib/{triplet}/nvidia"),
        }
    }
}

/// The program a column runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// Built by nixpkgs: its CUDA libraries have the RUNPATHs the approach gives them.
    Nix,
    /// Not built by nixpkgs (a pip wheel, a conda package, a downloaded binary run through
    /// nix-ld or a patched interpreter): its own `libcudart.so.12` beside it, RUNPATH
    /// `$ORIGIN` only, so no approach that changes nixpkgs' packages reaches it.
    Wheel,
    /// Built by nixpkgs, with no cuda_compat in its closure: what nixpkgs builds unless
    /// `config.enableCudaDriverCompat` is set (cuda_compat's `meta.problems`, and
    /// autoAddCudaCompatRunpath only where `cuda_compat.meta.available`), and jetpack-nixos'
    /// CUDA 11.4 (`cuda_compat = null`): its runtime's RUNPATH is autoAddDriverRunpath's
    /// `/run/opengl-driver/lib:$ORIGIN` alone.
    NixWithoutCompat,
}

/// Which detail table a column is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// What jetpack-nixos and nixpkgs give by default: cuda_compat off (nixpkgs'
    /// `config.enableCudaDriverCompat` unset), each JetPack's default CUDA; and a program
    /// nixpkgs did not build.
    Defaults,
    /// NixOS boards with cuda_compat on.
    NixOs,
    /// The version gate: one JetPack 6 board, cuda_compat older, the same, newer.
    Gate,
    /// Nix on JetPack hosts with cuda_compat.
    JetPack,
    /// CUDA 13 with a compat driver: JetPack 6 with `cuda_compat_orin`, an R38 Thor with R38's
    /// `cuda-compat-13-0`.
    Cuda13,
    /// What a user sets for one run, and the host's multiarch directory in the list.
    Special,
}

impl Group {
    pub(crate) const ALL: [Group; 6] = [
        Group::Defaults,
        Group::NixOs,
        Group::Gate,
        Group::JetPack,
        Group::Cuda13,
        Group::Special,
    ];

    pub(crate) fn title(self) -> &'static str {
        match self {
            Group::Defaults => "The defaults: jetpack-nixos' CUDA per JetPack, cuda_compat off (nixpkgs' default)",
            Group::NixOs => "NixOS boards with cuda_compat on (`config.enableCudaDriverCompat = true`)",
            Group::Gate => "The version gate: a NixOS JetPack 6 board (driver 12.6) and cuda_compat older, the same, newer",
            Group::JetPack => "Nix on JetPack hosts (Ubuntu) with cuda_compat",
            Group::Cuda13 => "CUDA 13 with a compat driver: JetPack 6 with `cuda_compat_orin`, R38 (Thor) with its `cuda-compat-13-0`",
            Group::Special => "Opting out for one run; the host's multiarch directory in the list",
        }
    }
}

/// A column: a host with a board, the app's cuda_compat and runtime, and what the user does.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub id: &'static str,
    /// The column's heading in the tables; `{dir}` stands for the host's driver directory and
    /// `{lib}` for its multiarch directory, both in full.
    pub heading: &'static str,
    /// The host kind as the lead table names it.
    pub short: &'static str,
    pub group: Group,
    pub host: Host,
    pub board: Board,
    pub compat: Compat,
    pub program: Program,
    /// The app's runtime needs a driver at least this new.
    pub app_needs: u32,
    /// The user opts out of cuda_compat for this one run, the ways the approach allows.
    pub opt_out: bool,
    /// The variable (LD_LIBRARY_PATH or LD_FALLBACK_PATH) also lists the host's
    /// `/usr/lib/<triplet>`, and the app looks up a user that `/etc/passwd` does not list
    /// (`passwd: files systemd`, as on Ubuntu and JetPack).
    pub nss: bool,
}

impl Column {
    /// The heading with the host's directories for `triplet`.
    pub(crate) fn heading(&self, triplet: &str) -> String {
        self.heading
            .replace("{dir}", &self.host.driver_dir(triplet))
            .replace("{lib}", &format!("/usr/lib/{triplet}"))
    }
}

const COLUMN: Column = Column {
    id: "",
    heading: "",
    short: "",
    group: Group::Defaults,
    host: Host::NixOs,
    board: BOARDS[0],
    compat: COMPATS[0],
    program: Program::Nix,
    app_needs: 12020,
    opt_out: false,
    nss: false,
};

pub const COLUMNS: &[Column] = &[
    Column {
        id: "nixos-jp5-default",
        heading: "NixOS, JetPack 5 board (`{dir}`, driver 11.4): CUDA 11.4, no cuda_compat (jetpack-nixos' default)",
        short: "NixOS, JetPack 5: jetpack-nixos' CUDA 11.4 (no cuda_compat)",
        group: Group::Defaults,
        compat: COMPATS[0],
        program: Program::NixWithoutCompat,
        app_needs: 11040,
        ..COLUMN
    },
    Column {
        id: "nixos-jp6-default",
        heading: "NixOS, JetPack 6 board (`{dir}`, driver 12.6): `cudaPackages_12` (12.9), cuda_compat off (the default)",
        short: "NixOS, JetPack 6: jetpack-nixos' `cudaPackages_12` (12.9), cuda_compat off",
        group: Group::Defaults,
        board: BOARDS[1],
        compat: COMPATS[3],
        program: Program::NixWithoutCompat,
        app_needs: 12090,
        ..COLUMN
    },
    Column {
        id: "nixos-jp7-default",
        heading: "NixOS, JetPack 7 board, R39.2 Orin (`{dir}`, driver 13.2): `cudaPackages_13` (13.4), cuda_compat off (the default)",
        short: "NixOS, JetPack 7 (R39.2, Orin): jetpack-nixos' `cudaPackages_13` (13.4), cuda_compat off",
        group: Group::Defaults,
        board: BOARDS[3],
        compat: COMPATS[5],
        program: Program::NixWithoutCompat,
        app_needs: 13040,
        ..COLUMN
    },
    Column {
        id: "nixos-jp6-wheel",
        heading: "NixOS, JetPack 6 board (`{dir}`, driver 12.6): a program nixpkgs did not build (its own libcudart 12.6, RUNPATH `$ORIGIN` only)",
        short: "NixOS, JetPack 6: a program nixpkgs did not build (wheel, conda, download)",
        group: Group::Defaults,
        board: BOARDS[1],
        compat: COMPATS[3],
        program: Program::Wheel,
        app_needs: 12060,
        ..COLUMN
    },
    Column {
        id: "jetpack6-default",
        heading: "Nix on JetPack 6 (`{dir}`, driver 12.6): `cudaPackages_12_6`, cuda_compat off (the default)",
        short: "Nix on a JetPack 6 host (Ubuntu): `cudaPackages_12_6`, cuda_compat off",
        group: Group::Defaults,
        host: Host::JetPack6,
        board: BOARDS[1],
        compat: COMPATS[2],
        program: Program::NixWithoutCompat,
        app_needs: 12060,
        ..COLUMN
    },
    Column {
        id: "jetpack7-default",
        heading: "Nix on JetPack 7, R38.4 Thor (`{dir}`, driver 13.0): CUDA 13.0, cuda_compat off (the default)",
        short: "Nix on a JetPack 7 host (Ubuntu, R38.4, Thor): CUDA 13.0, cuda_compat off",
        group: Group::Defaults,
        host: Host::JetPack7,
        board: BOARDS[2],
        compat: COMPATS[4],
        program: Program::NixWithoutCompat,
        app_needs: 13000,
        ..COLUMN
    },
    Column {
        id: "nixos-jp5",
        heading: "NixOS, JetPack 5 board (`{dir}`, driver 11.4 < compat 12.2: cuda-legacy's `cudaPackages_12_2`)",
        short: "NixOS, JetPack 5: cuda_compat 12.2 (nixos-cuda/cuda-legacy)",
        group: Group::NixOs,
        ..COLUMN
    },
    Column {
        id: "nixos-jp6-newer",
        heading: "NixOS, JetPack 6 board (`{dir}`, driver 12.6 > the app's compat 12.2 for R35)",
        short: "NixOS, JetPack 6: an app whose cuda_compat is for R35",
        group: Group::NixOs,
        board: BOARDS[1],
        ..COLUMN
    },
    Column {
        id: "gate-older",
        heading: "compat 12.4 (older than the driver)",
        short: "NixOS, JetPack 6: cuda_compat 12.4 (older than the driver)",
        group: Group::Gate,
        board: BOARDS[1],
        compat: COMPATS[1],
        app_needs: 12040,
        ..COLUMN
    },
    Column {
        id: "gate-same",
        heading: "compat 12.6 (the driver's version)",
        short: "NixOS, JetPack 6: cuda_compat 12.6 (the driver's version)",
        group: Group::Gate,
        board: BOARDS[1],
        compat: COMPATS[2],
        app_needs: 12060,
        ..COLUMN
    },
    Column {
        id: "gate-newer",
        heading: "compat 12.9 (newer than the driver: `cudaPackages_12` with cuda_compat on)",
        short: "NixOS, JetPack 6: `cudaPackages_12` (12.9) with cuda_compat on",
        group: Group::Gate,
        board: BOARDS[1],
        compat: COMPATS[3],
        app_needs: 12090,
        ..COLUMN
    },
    Column {
        id: "jetpack5",
        heading: "Nix on JetPack 5 (`{dir}`, driver 11.4, compat 12.2)",
        short: "Nix on a JetPack 5 host (Ubuntu): cuda_compat 12.2",
        group: Group::JetPack,
        host: Host::JetPack5,
        ..COLUMN
    },
    Column {
        id: "jetpack6",
        heading: "Nix on JetPack 6 (`{dir}`, driver 12.6, compat 12.9)",
        short: "Nix on a JetPack 6 host (Ubuntu): cuda_compat 12.9",
        group: Group::JetPack,
        host: Host::JetPack6,
        board: BOARDS[1],
        compat: COMPATS[3],
        app_needs: 12090,
        ..COLUMN
    },
    Column {
        id: "nixos-jp6-compat-orin",
        heading: "NixOS, JetPack 6 board (`{dir}`, driver 12.6 < compat 13.2): a CUDA 13.2 program with `cuda_compat_orin` 13.2 (not a nixpkgs package)",
        short: "NixOS, JetPack 6: CUDA 13.2 with `cuda_compat_orin` (not packaged by nixpkgs)",
        group: Group::Cuda13,
        board: BOARDS[1],
        compat: COMPATS[6],
        app_needs: 13020,
        ..COLUMN
    },
    Column {
        id: "jetpack7",
        heading: "Nix on JetPack 7, R38.4 Thor (`{dir}`, driver 13.0, compat 13.0: `cuda-compat-13-0`)",
        short: "Nix on a JetPack 7 host (Ubuntu, R38.4, Thor): cuda_compat 13.0 (the driver's version)",
        group: Group::Cuda13,
        host: Host::JetPack7,
        board: BOARDS[2],
        compat: COMPATS[4],
        app_needs: 13000,
        ..COLUMN
    },
    Column {
        id: "opt-out",
        heading: "Opting out for one run (NixOS, JetPack 6 board, compat 12.2 for R35): what the user sets",
        short: "",
        group: Group::Special,
        board: BOARDS[1],
        opt_out: true,
        ..COLUMN
    },
    Column {
        id: "jetpack5-nss",
        heading: "Nix on JetPack 5, the variable also lists `{lib}`; a user lookup through NSS (`passwd: files systemd`)",
        short: "",
        group: Group::Special,
        host: Host::JetPack5,
        nss: true,
        ..COLUMN
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
    /// `<cuda_cudart>/lib/stubs:/run/opengl-driver/lib:$ORIGIN`: the stubs directory left in
    /// the RUNPATH, which nixpkgs' removeStubsFromRunpathHook exists to prevent.
    StubsFirst,
}

/// What cuda_compat's `libcuda.so.1` RUNPATH holds besides `$ORIGIN` (placed by [`Origin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompatRunpath {
    /// Only what buildRedist gives every CUDA package: `/run/opengl-driver/lib`.
    Driver,
    /// The JetPack 5 driver directory appended (#273389), plus the driver-directory libraries
    /// `libnvrm_*` need as extra DT_NEEDED entries.
    AppendTegra,
    /// jetpack-nixos: l4t-core in buildInputs, so autoPatchelf's RUNPATH is `<l4t-core>/lib`
    /// then `$ORIGIN`, and autoAddDriverRunpath prepends `/run/opengl-driver/lib`.
    L4tCoreAfterDriver,
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
    pub(crate) fn name(self) -> &'static str {
        match self {
            Variable::LibraryPath => "LD_LIBRARY_PATH",
            Variable::FallbackPath => "LD_FALLBACK_PATH",
        }
    }
}

/// Something that runs before the app's CUDA runtime picks a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    None,
    /// numtide/nix-gl-host: copies the host's driver files that match its patterns into a
    /// cache directory and points `LD_LIBRARY_PATH` at it (a non-NixOS host only).
    NixGlHost,
    /// A runtime probe as Julia's CUDA_Driver_jll does it: load the system driver by bare
    /// name, keep it when it is at least cuda_compat's version, else unload it, load
    /// cuda_compat's by absolute path (and its JIT helper by absolute path), `cuInit`, and
    /// fall back to the system driver when that fails.
    Probe,
}

/// A way a user tries to opt out of cuda_compat for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OptOut {
    /// `LD_LIBRARY_PATH=/run/opengl-driver/lib`.
    LibraryPathAtDriver,
    /// `LD_LIBRARY_PATH=<the l4t-cuda store path>`: the board's own libcuda, past the one the
    /// system put into `/run/opengl-driver/lib`.
    LibraryPathAtL4tCuda,
    /// `LD_PRELOAD=/run/opengl-driver/lib/libcuda.so.1`: the board's driver loaded first.
    PreloadDriver,
    /// The approach already gives the board's driver: nothing to set.
    Nothing,
}

/// A row: one way of using cuda_compat, as the Nix packages and the system set it up.
#[derive(Debug, Clone, Copy)]
pub struct Approach {
    /// The row's id: stable, named in the roots' directory names and in tests, never shown.
    pub number: u8,
    /// The row's name, as every table and the summary call it.
    pub name: &'static str,
    /// Who ships it, or that it is a proposal: shipped rows come first.
    pub status: Status,
    pub title: &'static str,
    /// What the user (or the system) sets, for the lead table; `{dir}` is the driver directory.
    pub user_sets: &'static str,
    /// The loader it runs under (patched, the fallback-first variant, or unpatched for the rows
    /// whose glibc is not this project's: a container's, #248777's).
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
    pub launcher: Launcher,
    /// The ways a user tries to opt out for one run, each run in the opt-out column.
    pub opt_out: &'static [OptOut],
    /// The `ld.so.cache` the row's roots have, if any: every other root is refused with one.
    pub cache: Option<DeclaredCache>,
}

/// A row whose loader reads an `ld.so.cache` that `ldconfig` made in its root: the only
/// exceptions to "no root has a cache" (docs/jetson.md, "The loader").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeclaredCache {
    /// NVIDIA's container toolkit: an FHS container (the app, its runtime and NVIDIA's
    /// cuda-compat package as a CUDA image has them, no RUNPATH), the host's driver directory
    /// mounted at its JetPack path, the `update-ldcache` hook's `00-nvcr-*.conf` naming it, the
    /// `enable-cuda-compat` hook's `00-compat-*.conf` naming the compat directory when
    /// [`cache::hook`] finds one at its device kind's root and decides so, then `ldconfig`.
    /// The container's glibc reads the cache.
    ContainerToolkit,
    /// nixpkgs #248777: a Nix glibc reads the `ldconfig` cache `NIX_LD_SO_CACHE` names, a cache
    /// of the driver directory (in the NSS column also of the host's multiarch directory). The
    /// loader under test reads its compiled-in `/etc/ld.so.cache` at the same step: that file
    /// stands in for the variable's.
    NixLdSoCache,
}

/// Whether an approach is in use, and by whom, or only proposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Shipped by the project named.
    Shipped(&'static str),
    /// Proposed (a pull request or an issue), or this project's patch.
    Proposed(&'static str),
    /// A mistake the packaging guards against.
    Mistake,
}

impl Status {
    pub(crate) fn label(self) -> String {
        match self {
            Status::Shipped(by) => format!("shipped: {by}"),
            Status::Proposed(by) => format!("proposed: {by}"),
            Status::Mistake => "a packaging mistake".to_string(),
        }
    }
}

const APPROACH: Approach = Approach {
    number: 0,
    name: "",
    status: Status::Mistake,
    title: "",
    user_sets: "nothing (nixpkgs' packaging)",
    flavour: Flavour::Patched,
    cudart_runpath: CudartRunpath::CompatFirst,
    cudart_needs_compat: false,
    compat_runpath: CompatRunpath::Driver,
    impure_binding: false,
    variable: None,
    launcher: Launcher::None,
    opt_out: &[OptOut::LibraryPathAtDriver],
    cache: None,
};

/// The rows, shipped approaches first (in the order a maintainer meets them), then the
/// proposals, then the mistake.
pub const APPROACHES: &[Approach] = &[
    Approach {
        number: 1,
        name: "nixpkgs' compat RUNPATH",
        status: Status::Shipped("nixpkgs, with cuda_compat on"),
        title: "cuda_compat first in the CUDA libraries' DT_RUNPATH (nixpkgs' autoAddCudaCompatRunpath, nixpkgs #267247; with cuda_compat off, autoAddDriverRunpath's `/run/opengl-driver/lib` alone)",
        ..APPROACH
    },
    Approach {
        number: 6,
        name: "jetpack-nixos' cuda_compat",
        status: Status::Shipped("jetpack-nixos' overlay"),
        title: "cuda_compat built with l4t-core in buildInputs (jetpack-nixos' overlay: RUNPATH `/run/opengl-driver/lib:<l4t-core>/lib:$ORIGIN`)",
        user_sets: "nothing (jetpack-nixos' cuda_compat, built with its l4t-core)",
        compat_runpath: CompatRunpath::L4tCoreAfterDriver,
        ..APPROACH
    },
    Approach {
        number: 12,
        name: "NVIDIA's container toolkit",
        status: Status::Shipped("NVIDIA"),
        title: "an FHS container (a CUDA image with cuda-compat), the host's driver mounted; the toolkit's hooks add the driver directory and, when they find compat where they look for the device kind (Orin: `compat_orin/`) and it is newer than the host's CUDA, the compat directory (`00-compat-*.conf`) to ld.so.conf.d, then run ldconfig",
        user_sets: "nothing (the container toolkit's hooks)",
        // The container's glibc is a distribution's: no LD_FALLBACK_PATH.
        flavour: Flavour::Unpatched,
        cache: Some(DeclaredCache::ContainerToolkit),
        ..APPROACH
    },
    Approach {
        number: 10,
        name: "Julia's probe",
        status: Status::Shipped("Julia's CUDA_Driver_jll"),
        title: "a runtime probe as CUDA_Driver_jll's: each driver inspected in a child process; cuda_compat (its helpers first) loaded by absolute path only when it initialises and is newer than the system's driver",
        user_sets: "nothing (the app's runtime decides)",
        cudart_runpath: CudartRunpath::DriverOnly,
        launcher: Launcher::Probe,
        opt_out: &[OptOut::Nothing],
        ..APPROACH
    },
    Approach {
        number: 9,
        name: "nix-gl-host",
        status: Status::Shipped("numtide/nix-gl-host"),
        title: "the host's driver files copied into a cache dir, `LD_LIBRARY_PATH` at it (non-NixOS hosts)",
        user_sets: "runs the app through `nixglhost`",
        cudart_runpath: CudartRunpath::DriverOnly,
        launcher: Launcher::NixGlHost,
        opt_out: &[OptOut::Nothing],
        ..APPROACH
    },
    Approach {
        number: 2,
        name: "LD_LIBRARY_PATH",
        status: Status::Shipped("jetpack-nixos until its #164; users"),
        title: "`LD_LIBRARY_PATH` at the driver dir",
        user_sets: "`LD_LIBRARY_PATH={dir}`",
        variable: Some(Variable::LibraryPath),
        opt_out: &[OptOut::Nothing],
        ..APPROACH
    },
    Approach {
        number: 7,
        name: "LD_FALLBACK_PATH",
        status: Status::Proposed("this patch"),
        title: "`LD_FALLBACK_PATH` at the driver dir (searched last), with nixpkgs' packages",
        user_sets: "`LD_FALLBACK_PATH={dir}`",
        variable: Some(Variable::FallbackPath),
        ..APPROACH
    },
    Approach {
        number: 8,
        name: "LD_FALLBACK_PATH, fallback first",
        status: Status::Proposed("a variant of this patch; nixpkgs #248547's placement"),
        title: "`LD_FALLBACK_PATH` searched after RUNPATH, before ld.so.cache and the default dirs (variant loader; nixpkgs #248547 searched it after the cache, which a Nix glibc does not read)",
        user_sets: "`LD_FALLBACK_PATH={dir}` (variant loader)",
        flavour: Flavour::FallbackFirst,
        variable: Some(Variable::FallbackPath),
        ..APPROACH
    },
    Approach {
        number: 13,
        name: "NIX_LD_SO_CACHE",
        status: Status::Proposed("nixpkgs #248777, open"),
        title: "a Nix glibc reads an ldconfig cache of the driver dir (`NIX_LD_SO_CACHE`), with nixpkgs' packages",
        user_sets: "`NIX_LD_SO_CACHE=<an ldconfig cache of {dir}>` (a glibc with nixpkgs #248777)",
        // #248777's glibc has no LD_FALLBACK_PATH: the cache step is glibc's own.
        flavour: Flavour::Unpatched,
        cache: Some(DeclaredCache::NixLdSoCache),
        ..APPROACH
    },
    Approach {
        number: 3,
        name: "impure binding",
        status: Status::Proposed("nixpkgs #273797"),
        title: "the system puts cuda_compat's libcuda.so.1 into `/run/opengl-driver/lib`",
        user_sets: "nothing (the NixOS system's choice)",
        cudart_runpath: CudartRunpath::DriverOnly,
        impure_binding: true,
        opt_out: &[OptOut::LibraryPathAtL4tCuda],
        ..APPROACH
    },
    Approach {
        number: 4,
        name: "pure binding",
        status: Status::Proposed("nixpkgs #273797"),
        title: "cuda_compat's libcuda.so.1 an absolute DT_NEEDED of the runtime (patchelf --add-needed)",
        user_sets: "nothing (the runtime's DT_NEEDED)",
        cudart_runpath: CudartRunpath::DriverOnly,
        cudart_needs_compat: true,
        opt_out: &[OptOut::LibraryPathAtDriver, OptOut::PreloadDriver],
        ..APPROACH
    },
    Approach {
        number: 5,
        name: "discover and add",
        status: Status::Proposed("nixpkgs #273389"),
        title: "the JetPack 5 driver dir appended to cuda_compat's RUNPATH, libnvrm_*'s deps added as DT_NEEDED",
        user_sets: "nothing (nixpkgs #273389's cuda_compat)",
        compat_runpath: CompatRunpath::AppendTegra,
        ..APPROACH
    },
    Approach {
        number: 11,
        name: "a stub libcuda first",
        status: Status::Mistake,
        title: "cuda_cudart's `lib/stubs` left in the runtime's RUNPATH (what nixpkgs' removeStubsFromRunpathHook prevents), with `LD_FALLBACK_PATH` set",
        user_sets: "`LD_FALLBACK_PATH={dir}`",
        cudart_runpath: CudartRunpath::StubsFirst,
        variable: Some(Variable::FallbackPath),
        ..APPROACH
    },
];

impl Approach {
    /// Whether the row is a way of placing or choosing cuda_compat itself (so it has nothing
    /// to do for a program without one): an impure or pure binding, a RUNPATH of cuda_compat's
    /// own, the probe that chooses it.
    fn is_about_compat(&self) -> bool {
        self.impure_binding
            || self.cudart_needs_compat
            || self.compat_runpath != CompatRunpath::Driver
            || self.launcher == Launcher::Probe
    }

    /// The flavours this row runs under: its own, and the unpatched loader too when it sets
    /// LD_FALLBACK_PATH (which shows what the patch changes).
    pub(crate) fn flavours(&self) -> Vec<Flavour> {
        let mut flavours = vec![self.flavour];
        if self.variable == Some(Variable::FallbackPath) {
            flavours.push(Flavour::Unpatched);
        }
        flavours
    }

    /// The ways this row is run in `column`: the opt-out ways in the opt-out column, else
    /// one way with nothing set besides the approach's own variable.
    pub(crate) fn ways(&self, column: &Column) -> Vec<Option<OptOut>> {
        if column.opt_out {
            self.opt_out.iter().copied().map(Some).collect()
        } else {
            vec![None]
        }
    }

    /// Why this row has no runs in `column`, if it has none.
    pub fn not_applicable(&self, column: &Column) -> Option<&'static str> {
        match self.launcher {
            Launcher::NixGlHost if column.host == Host::NixOs => {
                Some("n/a: nix-gl-host is for non-NixOS hosts")
            }
            Launcher::Probe if column.program == Program::Wheel => {
                Some("n/a: the probe is in nixpkgs' runtime")
            }
            _ if column.program == Program::NixWithoutCompat && self.is_about_compat() => {
                Some("n/a: the program's closure has no cuda_compat")
            }
            _ if self.cache == Some(DeclaredCache::ContainerToolkit) => {
                cache::container_not_applicable(column)
            }
            _ => None,
        }
    }
}

/// What the app's kernels are, and what the user sets about JIT compiling them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kernel {
    /// PTX only: loading the module JIT-compiles it (the driver dlopens its JIT helper).
    Ptx,
    /// SASS for the board's GPU: no JIT, the helper is never loaded.
    Sass,
    /// PTX with `CUDA_DISABLE_PTX_JIT=1`: the driver refuses to compile it.
    PtxJitDisabled,
    /// PTX, and the app also asks the driver for its other bare-name helpers
    /// (`libnvidia-nvvm.so.4` for an LTO link, `libcudadebugger.so.1` under a debugger).
    PtxOtherHelpers,
}

impl Kernel {
    /// The runs of the helpers table besides PTX.
    pub(crate) const VARIANTS: [Kernel; 3] = [
        Kernel::Sass,
        Kernel::PtxJitDisabled,
        Kernel::PtxOtherHelpers,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kernel::Ptx => "ptx",
            Kernel::Sass => "sass",
            Kernel::PtxJitDisabled => "ptx-nojit",
            Kernel::PtxOtherHelpers => "ptx-helpers",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Kernel::Ptx => "PTX app",
            Kernel::Sass => "SASS-only app",
            Kernel::PtxJitDisabled => "PTX app, `CUDA_DISABLE_PTX_JIT=1`",
            Kernel::PtxOtherHelpers => "other helpers",
        }
    }
}

/// One run of a cell: the loader, the way (opt-out column), the linkage, the app, where
/// `$ORIGIN` is in cuda_compat's RUNPATH, and the app's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RunKey {
    pub flavour: Flavour,
    pub way: Option<OptOut>,
    pub linkage: Linkage,
    pub app: App,
    pub origin: Origin,
    pub kernel: Kernel,
}

impl RunKey {
    /// Every run of a cell: for each flavour and way, both linkages and both apps with
    /// nixpkgs' RUNPATH and a PTX app (the main table); then, under the row's own loader, the
    /// other `$ORIGIN` placements and the other kernels for the C++ app and DT_NEEDED (the
    /// helpers table). None where the row does not apply to the column.
    pub fn all(approach: &Approach, column: &Column) -> Vec<RunKey> {
        if approach.not_applicable(column).is_some() {
            return Vec::new();
        }
        let ways = approach.ways(column);
        let mut keys = Vec::new();
        for flavour in approach.flavours() {
            for way in &ways {
                for linkage in Linkage::ALL {
                    for app in App::ALL {
                        keys.push(RunKey {
                            flavour,
                            way: *way,
                            linkage,
                            app,
                            origin: Origin::Last,
                            kernel: Kernel::Ptx,
                        });
                    }
                }
            }
        }
        let helper = |origin, kernel| RunKey {
            flavour: approach.flavour,
            way: ways[0],
            linkage: Linkage::Needed,
            app: App::Cxx,
            origin,
            kernel,
        };
        for origin in Origin::VARIANTS {
            keys.push(helper(origin, Kernel::Ptx));
        }
        for kernel in Kernel::VARIANTS {
            keys.push(helper(Origin::Last, kernel));
        }
        keys
    }
}

/// The benches (sysroot, fixtures, QEMU) of each flavour the replay uses, or why one is
/// missing: its rows are then reported as not run, with the reason.
pub struct Benches<'a> {
    pub target: Target,
    pub release: Release,
    pub host: HostLibs,
    pub benches: BTreeMap<Flavour, Result<(&'a Bench, JetsonFixtures), String>>,
}

/// Runs every cell, row by row.
///
/// Runs whose roots are written down alike under one loader (equal recipes and commands:
/// [`recipe`]) are one world, and the loader's answer in it is one: each world is built and
/// run once, and every run of it is reported from that run, with its own cell's reading of
/// it. That equal recipes build equal worlds is checked on a sample of them by the search
/// model's differential test (`loader-tests/tests/explain.rs`), which shares roots the same
/// way; `cargo xtask bench replay` runs the replay this way and with every run on its own,
/// and compares the two reports.
pub fn run(benches: &Benches<'_>) -> ReplayReport {
    run_with(benches, Worlds::Shared)
}

/// [`run`] with every run's root built and run on its own.
pub fn run_every_one(benches: &Benches<'_>) -> ReplayReport {
    run_with(benches, Worlds::EachRunItsOwn)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Worlds {
    Shared,
    EachRunItsOwn,
}

fn run_with(benches: &Benches<'_>, worlds: Worlds) -> ReplayReport {
    let runs: Vec<(&Approach, &Column, RunKey)> = APPROACHES
        .iter()
        .flat_map(|approach| {
            COLUMNS.iter().flat_map(move |column| {
                RunKey::all(approach, column)
                    .into_iter()
                    .map(move |key| (approach, column, key))
            })
        })
        .collect();
    let testbed = |flavour: Flavour| -> Result<Testbed<'_>, String> {
        match benches.benches.get(&flavour) {
            Some(Ok((bench, fixtures))) => Ok(Testbed {
                bench,
                fixtures,
                host: &benches.host,
            }),
            Some(Err(why)) => Err(why.clone()),
            None => Err("no sysroot of this flavour".to_string()),
        }
    };
    // The runs go side by side, one per CPU (as the matrix's scenarios do): each run has its
    // own root, and one at a time left a core idle while the other waited on the file system.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let keys: Vec<Option<(Flavour, WorldRecipe)>> = match worlds {
        Worlds::EachRunItsOwn => vec![None; runs.len()],
        Worlds::Shared => parallel_map(&runs, cpus, |&(approach, column, key)| {
            let testbed = testbed(key.flavour).ok()?;
            Some((key.flavour, recipe(&testbed, approach, column, key)?))
        }),
    };
    let mut first_of_world = std::collections::HashMap::new();
    let same_world_as: Vec<Option<usize>> = keys
        .into_iter()
        .enumerate()
        .map(|(i, world)| {
            let first = *first_of_world.entry(world?).or_insert(i);
            (first != i).then_some(first)
        })
        .collect();
    let indices: Vec<usize> = (0..runs.len()).collect();
    let made = parallel_map(&indices, cpus, |&i| {
        let (approach, column, key) = runs[i];
        match (same_world_as[i], testbed(key.flavour)) {
            (Some(_), _) => None,
            (None, Ok(testbed)) => {
                let (report, met) = scene::run_keeping(
                    &testbed,
                    approach,
                    column,
                    key,
                    CompatEntry::AsTheHookDecides,
                );
                Some((report, Some(met)))
            }
            (None, Err(why)) => Some((RunReport::not_run(key, &why), None)),
        }
    });
    let mut reports = parallel_map(&indices, cpus, |&i| {
        let (approach, column, key) = runs[i];
        match same_world_as[i] {
            None => made[i].as_ref().expect("a run of its own").0.clone(),
            Some(first) => {
                let met = made[first].as_ref().and_then(|(_, met)| met.as_ref());
                let testbed = testbed(key.flavour).expect("the bench of a shared world");
                scene::report_shared(
                    &testbed,
                    approach,
                    column,
                    key,
                    met.expect("its world's run"),
                )
            }
        }
    })
    .into_iter();
    let rows = APPROACHES
        .iter()
        .map(|approach| {
            let cells = COLUMNS
                .iter()
                .map(|column| {
                    let runs = reports
                        .by_ref()
                        .take(RunKey::all(approach, column).len())
                        .collect();
                    CellReport::new(approach, column, runs)
                })
                .collect();
            RowReport::new(approach, cells)
        })
        .collect();
    ReplayReport::new(benches, rows)
}

/// What every run is built from: the loader under test, the fixtures compiled for it, and
/// the host's own libraries.
pub struct Testbed<'a> {
    pub bench: &'a Bench,
    pub fixtures: &'a JetsonFixtures,
    pub host: &'a HostLibs,
}

/// One run of one cell under the loader of `testbed`, whatever the row's own flavour (the
/// search model's differential test runs every cell under both loaders): `key.flavour` is
/// only its name.
pub fn run_one(testbed: &Testbed, approach: &Approach, column: &Column, key: RunKey) -> RunReport {
    scene::run(
        testbed,
        approach,
        column,
        key,
        CompatEntry::AsTheHookDecides,
    )
}

/// The command [`run_one`] would run, in its root built as [`run_one`] builds it, without
/// running it (the search model's differential test runs it itself, traced); or why it cannot
/// run, as [`run_one`]'s outcome says it.
pub fn world(
    testbed: &Testbed,
    approach: &Approach,
    column: &Column,
    key: RunKey,
) -> Result<crate::probe::Invocation, String> {
    scene::world(testbed, approach, column, key)
}

/// What makes two runs of one bench one world: the recipe of the root (every step that
/// makes it, written down) and the command the run makes in it, but for the root's own path
/// (emptied: a field the command gains later is part of the key unless said otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorldRecipe {
    steps: Vec<String>,
    command: crate::probe::Invocation,
}

/// The recipe of [`world`]'s root and the command its run makes, without making either:
/// two runs of one bench with equal recipes are one world (built once); `None` where the
/// recipe cannot say.
pub fn recipe(
    testbed: &Testbed,
    approach: &Approach,
    column: &Column,
    key: RunKey,
) -> Option<WorldRecipe> {
    let (steps, mut command) = scene::recipe(testbed, approach, column, key)?;
    command.root = std::path::PathBuf::new();
    Some(WorldRecipe { steps, command })
}

/// The container row's run in `column` with the `enable-cuda-compat` hook's decision forced
/// (its `00-compat-*.conf` written or not, whatever the versions): the same root but for that
/// entry, to show that the cache it leads to is what decides.
pub fn run_container_with_compat_entry(
    testbed: &Testbed,
    column: &Column,
    key: RunKey,
    compat_entry: bool,
) -> RunReport {
    let approach = APPROACHES
        .iter()
        .find(|a| a.cache == Some(DeclaredCache::ContainerToolkit))
        .expect("the container toolkit's row");
    let forced = CompatEntry::Forced(compat_entry);
    scene::run(testbed, approach, column, key, forced)
}

/// The row whose id is `number`.
pub fn approach(number: u8) -> &'static Approach {
    APPROACHES
        .iter()
        .find(|a| a.number == number)
        .expect("a row of that number")
}

/// The column whose id is `id`.
pub fn column(id: &str) -> &'static Column {
    COLUMNS
        .iter()
        .find(|c| c.id == id)
        .expect("a column of that id")
}

/// `12020` as `12.2`.
pub(crate) fn cuda_version(version: u32) -> String {
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
        }
        // The gate's columns: one board, cuda_compat older, the same, newer.
        let gate: Vec<(u32, u32)> = COLUMNS
            .iter()
            .filter(|c| c.group == Group::Gate)
            .map(|c| (c.board.driver, c.compat.version))
            .collect();
        assert_eq!(gate, [(12060, 12040), (12060, 12060), (12060, 12090)]);
    }

    #[test]
    fn rows_using_the_fallback_also_run_unpatched() {
        for approach in APPROACHES {
            let expected = match approach.variable {
                Some(Variable::FallbackPath) => vec![approach.flavour, Flavour::Unpatched],
                _ => vec![approach.flavour],
            };
            assert_eq!(
                approach.flavours(),
                expected,
                "approach {}",
                approach.number
            );
        }
        // The rows that read a cache run only under the loader without this patch.
        let unpatched_only: Vec<u8> = APPROACHES
            .iter()
            .filter(|a| a.flavours() == [Flavour::Unpatched])
            .map(|a| a.number)
            .collect();
        assert_eq!(unpatched_only, [12, 13]);
    }

    #[test]
    fn headings_name_each_driver_directory_in_full() {
        let heading = |id: &str| {
            COLUMNS
                .iter()
                .find(|c| c.id == id)
                .unwrap()
                .heading("aarch64-linux-gnu")
        };
        assert!(heading("nixos-jp5").contains("`/run/opengl-driver/lib`"));
        assert!(heading("jetpack5").contains("`/usr/lib/aarch64-linux-gnu/tegra`"));
        assert!(heading("jetpack6").contains("`/usr/lib/aarch64-linux-gnu/nvidia`"));
        assert!(heading("jetpack5-nss").contains("`/usr/lib/aarch64-linux-gnu`"));
        for column in COLUMNS {
            assert!(!column.heading("t").contains('{'), "{}", column.id);
        }
    }

    #[test]
    fn origin_variants_place_origin_as_named() {
        let entries = vec!["/run/opengl-driver/lib".to_string(), "/x".to_string()];
        assert_eq!(
            Origin::Last.runpath(&entries, 1),
            "/run/opengl-driver/lib:$ORIGIN:/x"
        );
        assert_eq!(
            Origin::First.runpath(&entries, 1),
            "$ORIGIN:/run/opengl-driver/lib:/x"
        );
        assert_eq!(
            Origin::Absent.runpath(&entries, 1),
            "/run/opengl-driver/lib:/x"
        );
    }

    #[test]
    fn every_cell_runs_both_linkages_and_apps_and_the_helper_variants() {
        let seven = approach(7);
        let keys = RunKey::all(seven, column("nixos-jp6-wheel"));
        // Patched and unpatched, two linkages, two apps; two $ORIGIN and three kernel variants.
        assert_eq!(keys.len(), 2 * 2 * 2 + 2 + 3);
        assert!(keys
            .iter()
            .filter(|k| k.origin != Origin::Last)
            .all(|k| k.flavour == Flavour::Patched));
        // nix-gl-host is not for NixOS: no runs there.
        let gl_host = APPROACHES
            .iter()
            .find(|a| a.launcher == Launcher::NixGlHost)
            .unwrap();
        assert!(RunKey::all(gl_host, column("nixos-jp5")).is_empty());
        assert!(!RunKey::all(
            gl_host,
            COLUMNS.iter().find(|c| c.id == "jetpack5").unwrap()
        )
        .is_empty());
        let four = approach(4);
        let opt_out = COLUMNS.iter().find(|c| c.opt_out).unwrap();
        let keys = RunKey::all(four, opt_out);
        assert_eq!(
            keys.iter()
                .filter(|k| k.way == Some(OptOut::PreloadDriver))
                .count(),
            4,
            "pure binding's opt-out is also tried with LD_PRELOAD"
        );
    }
}
