//! Every source the replay's rules and premises rest on, pinned: the repository, the file (or
//! the thread, or the page), the commit it was read at and the day it was read. docs/jetson.md
//! renders [`SOURCES`] as its Sources table and each rule names the ids of its sources
//! ([`super::rules::Rule::sources`]); a test holds every rule to at least one, and every id
//! to an entry here.
//!
//! Repository snapshots (`fetch`) give a file at the snapshot's newest commit; the code index
//! gives one stored version of a file and the commit it names, and for some versions no
//! commit at all: such an entry says so in its commit column rather than guessing one.

use std::fmt::Write;

/// How a source was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// A snapshot of the repository at that commit.
    Snapshot,
    /// The stored version of the file the code index names with that commit.
    Indexed,
    /// A stored version of the file whose commit the code index does not name.
    IndexedUnpinned,
    /// A pull request or issue thread, as the thread index stores it.
    Thread,
    /// A documentation page, as the page index stores it.
    Page,
    /// This project's own file.
    Here,
}

impl Read {
    fn label(self) -> &'static str {
        match self {
            Read::Snapshot => "snapshot",
            Read::Indexed => "code index",
            Read::IndexedUnpinned => "code index, version without a commit",
            Read::Thread => "thread",
            Read::Page => "page",
            Read::Here => "this repository",
        }
    }
}

/// One source.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    pub id: &'static str,
    pub repo: &'static str,
    pub path: &'static str,
    /// The commit read, `-` where there is none to name (threads, pages, unpinned versions).
    pub commit: &'static str,
    pub read: Read,
    /// The day it was read.
    pub date: &'static str,
    /// What the page takes from it.
    pub says: &'static str,
}

/// The day this page's sources were read again from their repositories.
const READ_ON: &str = "2026-12-03";

const JETPACK_NIXOS: &str = "anduril/jetpack-nixos";
/// jetpack-nixos' newest commit in the snapshot read (2026-07-30).
const JETPACK_NIXOS_AT: &str = "4d857d6da48c";
const NIXPKGS: &str = "NixOS/nixpkgs";
const TOOLKIT: &str = "NVIDIA/nvidia-container-toolkit";
/// The toolkit's newest commit in the snapshot read (2026-08-21).
const TOOLKIT_AT: &str = "d34b3046758c";
const YGGDRASIL: &str = "JuliaPackaging/Yggdrasil";
/// Yggdrasil's newest commit in the snapshot read (2026-08-22).
const YGGDRASIL_AT: &str = "eecef9fe0f37";
const NVIDIA_DOCS: &str = "NVIDIA documentation";

const SOURCE: Source = Source {
    id: "",
    repo: "",
    path: "",
    commit: "-",
    read: Read::Snapshot,
    date: READ_ON,
    says: "",
};

pub const SOURCES: &[Source] = &[
    // nixpkgs: cuda_compat, its default and its RUNPATH.
    Source {
        id: "nixpkgs-compat-gated",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/packages/cuda_compat.nix",
        read: Read::IndexedUnpinned,
        says: "cuda_compat is `broken` (`meta.problems.cuda-compat-disabled`: \"cuda_compat must be explicitly enabled using config.enableCudaDriverCompat\") unless `config.enableCudaDriverCompat` is set; `autoPatchelfIgnoreMissingDeps` `libnvdla_runtime.so`, `libnvrm_gpu.so`, `libnvrm_mem.so`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-compat",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/packages/cuda_compat.nix",
        commit: "783b159d019f",
        read: Read::Indexed,
        says: "an earlier version, with no option: `autoPatchelfIgnoreMissingDeps` `libnvrm_gpu.so`, `libnvrm_mem.so`, `libnvdla_runtime.so`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-cuda-readme-gated",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/README.md",
        read: Read::IndexedUnpinned,
        says: "\"The package is disabled by default. Set `config.enableCudaDriverCompat = true` when the host driver is older than the compatibility driver\"; \"When `cuda_compat.meta.available` is true, `buildRedist` adds `autoAddCudaCompatRunpath` after `autoAddDriverRunpath`\"; \"the CUDA 13.3 manifests include x86_64 Linux and AArch64 SBSA archives, while CUDA 12.9 provides a Jetson archive\"",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-cuda-readme",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/README.md",
        commit: "3f99d36bbf69",
        read: Read::Indexed,
        says: "an earlier version: \"we try our best to enable it by default on supported platforms\"; the hook prepends cuda_compat after autoAddDriverRunpath, so it comes first",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-compat-runpath-hook",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/packages/autoAddCudaCompatRunpath/auto-add-cuda-compat-runpath.sh",
        commit: "7e1162725934",
        read: Read::Indexed,
        says: "`patchelf --set-rpath \"@libcudaPath@:$origRpath\"`: cuda_compat's `compat/` prepended to every ELF file's RUNPATH",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-compat-runpath-gate",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/packages/autoAddCudaCompatRunpath/package.nix",
        read: Read::IndexedUnpinned,
        says: "`enableHook = cuda_compat.meta.available or false`: \"the hook is a no-op if cuda_compat is not available\"",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-build-redist",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/buildRedist/default.nix",
        commit: "53159da0d8e2",
        read: Read::Indexed,
        says: "`autoAddDriverRunpath` in every package's `nativeBuildInputs`, `autoAddCudaCompatRunpath` after it only when `autoAddCudaCompatRunpath.enableHook`; `appendRunpaths = [ \"$ORIGIN\" ]`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-driver-runpath",
        repo: NIXPKGS,
        path: "pkgs/build-support/add-driver-runpath/setup-hook.sh",
        commit: "c061569c5a16",
        read: Read::Indexed,
        says: "`patchelf --set-rpath \"@driverLink@/lib:$origRpath\"`: `/run/opengl-driver/lib` prepended",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-redist",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/_cuda/lib/redist.nix",
        commit: "3f99d36bbf69",
        read: Read::Indexed,
        says: "`getRedistSystem`: aarch64-linux is `linux-sbsa` when every Jetson capability is at least 10.1 (Thor), else `linux-aarch64`; \"as of CUDA 13.0, Jetson Thor devices use `linux-sbsa` ... (It is unknown whether NVIDIA plans to make the Orin series use `linux-sbsa` as well\"",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-manifest-13.2.1",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/_cuda/manifests/cuda/redistrib_13.2.1.json",
        commit: "9c717eacce68",
        read: Read::Indexed,
        says: "`cuda_compat` 595.58.03 for `linux-x86_64` and `linux-sbsa` only; `cuda_compat_orin` (\"CUDA compat orin L4T\") 13.2.44429113 under `linux-sbsa`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-manifest-13.4.2",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/_cuda/manifests/cuda/redistrib_13.4.2.json",
        commit: "0a2c8a5824f4",
        read: Read::Indexed,
        says: "released 2026-09-16: `cuda_compat_orin` 13.4.47145772 under `linux-sbsa`, and no `cuda_compat`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-manifests",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/_cuda/manifests/cuda/",
        read: Read::IndexedUnpinned,
        says: "the CUDA manifests the code index lists (the union over the versions it holds): 12.6.3, 12.8.2, 12.9.1, 12.9.2, 13.0.0 to 13.0.3, 13.1.1, 13.1.2, 13.2.0 to 13.2.2, 13.3.0, 13.3.1, 13.4.1, 13.4.2",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-packages",
        repo: NIXPKGS,
        path: "pkgs/development/cuda-modules/packages/",
        read: Read::IndexedUnpinned,
        says: "the directory the code index lists has `cuda_compat.nix` and no file for `cuda_compat_orin`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-glibc",
        repo: NIXPKGS,
        path: "pkgs/development/libraries/glibc/default.nix, common.nix, dont-use-system-ld-so-cache.patch",
        commit: "b07e7bfc7bc8, ef575045765e, 88c6cd03fc92",
        read: Read::Indexed,
        says: "a Nix glibc reads `<prefix>/etc/ld.so.cache`, which its build deletes, instead of `/etc/ld.so.cache`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-graphics",
        repo: NIXPKGS,
        path: "nixos/modules/hardware/graphics.nix",
        commit: "e0741f86b986",
        read: Read::Indexed,
        says: "`/run/opengl-driver/lib` is the `buildEnv` of `hardware.graphics.package` and `extraPackages`",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-nix-ld-module",
        repo: NIXPKGS,
        path: "pull request #352541, \"nixos/nix-ld: replace `variable` with `sessionVariables`\" (merged)",
        read: Read::Thread,
        says: "the `programs.nix-ld` module sets `NIX_LD` and `NIX_LD_LIBRARY_PATH` in `environment.sessionVariables` (PAM), not `environment.variables`; the module file itself (`nixos/modules/programs/nix-ld.nix`) was not read at a commit here",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-compat-prs",
        repo: NIXPKGS,
        path: "pull request #267247 (merged), issue #273797 (open), pull request #273389",
        read: Read::Thread,
        says: "#267247 adds autoAddCudaCompatRunpath (\"no downside in always enabling it by default\", 2023); #273797 lists the impure and pure bindings; #273389 appends the JetPack 5 directory and `libnvrm_*`'s dependencies",
        ..SOURCE
    },
    Source {
        id: "nixpkgs-ld-fallback-prs",
        repo: NIXPKGS,
        path: "pull request #248547 (`ld-fallback.patch`), pull request #248777 (`NIX_LD_SO_CACHE`, open)",
        read: Read::Thread,
        says: "#248547's list is searched \"just before the default system directories\"; #248777 reads \"a fallback library path built from `ldconfig`\"",
        ..SOURCE
    },
    // nixos-cuda/cuda-legacy: the CUDA releases nixpkgs dropped.
    Source {
        id: "cuda-legacy",
        repo: "nixos-cuda/cuda-legacy",
        path: "overlays/cudaPackagesVersions.nix, pkgs/development/cuda-modules/_cuda/manifests/cuda/redistrib_12.2.2.json",
        commit: "9856d70acc3e",
        says: "\"CUDA releases and requisite packages which have aged out of Nixpkgs\": `cudaPackages_11_4` to `cudaPackages_12_x` package sets from NVIDIA's manifests (12.2 among them); jetpack-nixos' flake takes it as an input",
        ..SOURCE
    },
    // jetpack-nixos.
    Source {
        id: "jetpack-nixos-flake",
        repo: JETPACK_NIXOS,
        path: "flake.lock",
        commit: JETPACK_NIXOS_AT,
        says: "nixpkgs `nixos-26.05` at 714a5f8c4ead (2026-06-27), `nixos-cuda/cuda-legacy` at baf22622e111",
        ..SOURCE
    },
    Source {
        id: "jetpack-nixos-defaults",
        repo: JETPACK_NIXOS,
        path: "overlay.nix, modules/default.nix, modules/cuda.nix, hydra/packages.nix",
        commit: JETPACK_NIXOS_AT,
        says: "JetPack 5 is R35.6.4 with CUDA 11.4, JetPack 6 R36.5.0 with CUDA 12.6, JetPack 7 R39.2.0 with CUDA 13.2 (driver 595.78); Hydra builds `cudaPackages_11_4`, `cudaPackages_12_6` and `cudaPackages_13_2` for the JetPacks; the module sets `cudaPackages` to `cudaPackages_<major>` of the JetPack's CUDA (`cudaPackages_11` is the overlay's 11.4), `cudaCapabilities` per SoM (`8.7` on Orin), and asserts CUDA 11.4-12.2 on JetPack 5, 12.4-12.9 on JetPack 6, 13.0 and later on JetPack 7; `enableCudaDriverCompat` is set nowhere in the repository",
        ..SOURCE
    },
    Source {
        id: "jetpack-nixos-compat",
        repo: JETPACK_NIXOS,
        path: "pkgs/cuda-extensions/default.nix, cuda-packages-11-4-extension.nix",
        commit: JETPACK_NIXOS_AT,
        says: "cuda_compat gets `jp.l4t-core` in `buildInputs` (\"libnvdla_runtime.so, libnvrm_gpu.so, and libnvrm_mem.so\") and an empty ignore list; CUDA 11.4's set has `cuda_compat = null` (\"there is no cuda_compat available\")",
        ..SOURCE
    },
    Source {
        id: "jetpack-nixos-l4t",
        repo: JETPACK_NIXOS,
        path: "pkgs/l4t/l4t-cuda.nix, pkgs/l4t/l4t-core.nix, modules/graphics.nix",
        commit: JETPACK_NIXOS_AT,
        says: "l4t-cuda moves `/opt/nvidia/l4t-gpu-libs/<driver>/` into `lib` (R39) and links `libcuda.so.1` to `libcuda.so.1.1`, with the board's `libnvidia-ptxjitcompiler.so.1` beside it; l4t packages joined into `/run/opengl-driver/lib`",
        ..SOURCE
    },
    Source {
        id: "jetpack-nixos-debs",
        repo: JETPACK_NIXOS,
        path: "sourceinfo/r36.5-debs.json, r39.2-debs.json; r38.4-debs.json at 02d22af^",
        commit: JETPACK_NIXOS_AT,
        says: "R36.5 has `cuda-compat-12-6` (12.6.36890662); R38.4 `cuda-compat-13-0` 580.65.06 from `nvidia-graphics-drivers-580`; R39.2 `cuda-compat-13-2` 595.58.03 (`nvidia-graphics-drivers`) and `cuda-compat-orin-13-2` 13.2.44429113",
        ..SOURCE
    },
    Source {
        id: "jetpack-nixos-containers",
        repo: JETPACK_NIXOS,
        path: "pkgs/containers/r35-l4t.json, r36-l4t.json, r39-l4t.json; r38-l4t.json at 02d22af^; modules/nvidia-container-toolkit.nix",
        commit: JETPACK_NIXOS_AT,
        says: "NVIDIA's container lists: `tegra/` for R35, `nvidia/` (and `tegra/` for `libcudadebugger.so.1`) for R36 and R38; R35 has no `libnvidia-ml.so.1`, R36 has it; R39 keeps `libcuda` in `/opt/nvidia/l4t-gpu-libs/<driver>/`; the toolkit runs with `discovery-mode = \"csv\"`",
        ..SOURCE
    },
    // NVIDIA's container toolkit and go-nvlib.
    Source {
        id: "toolkit-csv",
        repo: TOOLKIT,
        path: "pkg/nvcdi/lib-csv.go, pkg/nvcdi/options.go, pkg/nvcdi/lib-csv_test.go",
        commit: TOOLKIT_AT,
        says: "the `enable-cuda-compat` hook is created in CSV mode only with NVML; `hasOrinDevices` (a device name containing \"Orin (nvgpu)\") gives it `defaultOrinCompatContainerRoot` `/usr/local/cuda/compat_orin`, other devices the hook's default; the host's CUDA version is passed",
        ..SOURCE
    },
    Source {
        id: "toolkit-hook",
        repo: TOOLKIT,
        path: "cmd/nvidia-cdi-hook/cudacompat/cudacompat.go, cuda-elf-header.go, testdata/compat/libcuda.orin.13.2.1.so.1.1",
        commit: TOOLKIT_AT,
        says: "the hook looks for exactly one `libcuda.so.*.*` under its root (default `/usr/local/cuda/compat`), reads `.note.cuda.fwd_compatibility`, and writes `00-compat-*.conf` only when that CUDA version is strictly greater than the host's; the Orin test file's note says CUDA 13.2",
        ..SOURCE
    },
    Source {
        id: "toolkit-thor",
        repo: TOOLKIT,
        path: "pull request #1614 (review thread), commit 025b249e6742 \"Use host CUDA version for all CSV compat checks\", pull requests #1515, #1649, #1690",
        read: Read::Thread,
        says: "\"With Thor systems (and beyond) the same compat libraries that are used for dGPU-based systems are used. Thus the only edge case we have to deal with is Orin system[s] that are currently under support and require different compat packages\" (#1614); on nvgpu systems \"(e.g. Thor) ... the 'standard' compat libraries are used\" (025b249e); without the Orin root \"the CUDA Compat libraries for SBSA are (incorrectly) used\" on Orin (#1690)",
        ..SOURCE
    },
    Source {
        id: "go-nvlib",
        repo: "NVIDIA/go-nvlib",
        path: "pkg/nvlib/info/property-extractor.go",
        commit: "3c161560521e",
        says: "`IsIntegratedGPUName`: a name containing \"(nvgpu)\" or \"NVIDIA Thor\" is an integrated GPU (Tegra, CSV mode)",
        ..SOURCE
    },
    // Julia.
    Source {
        id: "julia-driver-jll",
        repo: YGGDRASIL,
        path: "C/CUDA/CUDA_Driver/init.jl, toplevel.jl, src/cuda_inspect_driver.c",
        commit: YGGDRASIL_AT,
        says: "the system driver is kept when already loaded; each driver is inspected \"in a subprocess ... without dlopen'ing it in the caller's process\" (cuda_compat after its `libcuda_deps`: `libcudadebugger`, `libnvidia-nvvm`, `libnvidia-ptxjitcompiler`, `libnvidia-gpucomp`, `libnvidia-tileiras`); cuda_compat is used only when newer than the system's driver and supporting every device's capability, and then its deps are dlopened before it",
        ..SOURCE
    },
    Source {
        id: "julia-driver-build",
        repo: YGGDRASIL,
        path: "C/CUDA/CUDA_Driver/build_tarballs.jl, C/CUDA/common.jl",
        commit: YGGDRASIL_AT,
        says: "CUDA_Driver_jll 13.3.1 ships CUDA 13.3's `cuda_compat` for aarch64 from `linux-sbsa` (\"CUDA 13 uses unified ARM platforms\"), with no Tegra case",
        ..SOURCE
    },
    // nix-ld.
    Source {
        id: "nix-ld",
        repo: "nix-community/nix-ld",
        path: "src/main.rs, src/arch.rs, Cargo.toml",
        commit: "588fa76375f9",
        says: "`NIX_LD_LIBRARY_PATH` becomes `LD_LIBRARY_PATH` (appended when one is set); the default `entry_trampoline` feature restores the environment before the program's entry point",
        ..SOURCE
    },
    // Other packagers.
    Source {
        id: "conda-compat-orin",
        repo: "conda-forge/staged-recipes",
        path: "pull request #34460, \"Add `cuda-compat-orin`\" (merged)",
        read: Read::Thread,
        says: "`cuda_compat_orin` is \"the CUDA forward compatibility shim for the Jetson Orin family, so that a CUDA 13 runtime can run on the older display driver shipped by JetPack 6 / L4T\"; \"the Orin archive is published under the `linux-sbsa` platform directory\"; \"the Orin `libcuda` is built against the L4T kernel driver and links against the Tegra NVRM stack\"",
        ..SOURCE
    },
    Source {
        id: "nix-gl-host",
        repo: "numtide/nix-gl-host",
        path: "src/nixglhost.py",
        commit: "5269b233f838",
        says: "the host's files matching `CUDA_DSO_PATTERNS` (`libcudadebugger`, `libcuda`, `libnvidia-ml`) and `NVIDIA_DSO_PATTERNS` (among them `libnvidia-ptxjitcompiler`, `libnvidia-nvvm`, `libnvtegrahv`; no `libnvrm_*`) are copied into a cache directory, `LD_LIBRARY_PATH` at it",
        ..SOURCE
    },
    Source {
        id: "jetpack-nixos-threads",
        repo: JETPACK_NIXOS,
        path: "pull request #164 (\"Don't set LD_LIBRARY_PATH\"), issue #184 (LD_DEBUG on a Jetson)",
        read: Read::Thread,
        says: "`LD_LIBRARY_PATH` outranks RUNPATH, so cuda_compat loses; the driver looks up `libnvidia-ptxjitcompiler.so.1` through its RUNPATH, and `ERROR_JIT_COMPILER_NOT_FOUND` when missing",
        ..SOURCE
    },
    // NVIDIA's documentation.
    Source {
        id: "nvidia-mvc",
        repo: NVIDIA_DOCS,
        path: "CUDA Compatibility, \"Minor Version Compatibility\" (deploy/cuda-compatibility/minor-version-compatibility.html)",
        read: Read::Page,
        says: "\"From CUDA 11 onwards, applications compiled with a CUDA Toolkit release from within a CUDA major release family can run, with limited feature-set, on systems having at least the minimum required driver version\" of that major (CUDA 12.x: >= 525; 13.x: >= 580)",
        ..SOURCE
    },
    Source {
        id: "nvidia-forward",
        repo: NVIDIA_DOCS,
        path: "CUDA Compatibility, \"Forward Compatibility\" (deploy/cuda-compatibility)",
        read: Read::Page,
        says: "a `cuda-compat-<major>-<minor>` package \"is generated from the NVIDIA driver\" of one release and applies to an older driver; Jetson boards are among the systems it covers",
        ..SOURCE
    },
    Source {
        id: "nvidia-errors",
        repo: NVIDIA_DOCS,
        path: "CUDA runtime API, error types (cudaErrorUnsupportedPtxVersion 222, cudaErrorJitCompilerNotFound 221, cudaErrorJitCompilationDisabled 223)",
        read: Read::Page,
        says: "222: \"the PTX was generated by a compiler newer than what is supported by the CUDA driver and PTX JIT compiler\"; the JIT helper \"is used for PTX compilation\"; 223: \"the JIT compilation was disabled\"",
        ..SOURCE
    },
    // This project's own measurement.
    Source {
        id: "x86-measurement",
        repo: "this project",
        path: "loader-tests/src/replay/real.rs (the expected outcomes of `jetson-replay --real-driver`)",
        read: Read::Here,
        says: "on an x86_64 data-centre GPU host: the host's cuda-compat 580.95.05 under the running 580.159.04 driver failed `cuInit` with 803; 580.95's JIT helper under the 580.159 driver ran a PTX kernel",
        ..SOURCE
    },
];

/// The source of `id`, if there is one.
pub fn source(id: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.id == id)
}

/// docs/jetson.md's Sources table.
pub fn table() -> String {
    let mut out =
        String::from("| id | repository | path | commit | read | date | what the page takes from it |\n|---|---|---|---|---|---|---|\n");
    for s in SOURCES {
        let _ = writeln!(
            out,
            "| <a id=\"src-{}\"></a>`{}` | {} | {} | {} | {} | {} | {} |",
            s.id,
            s.id,
            s.repo,
            s.path,
            s.commit,
            s.read.label(),
            s.date,
            s.says
        );
    }
    out
}

/// `ids` as links into the Sources table.
pub fn cite(ids: &[&str]) -> String {
    ids.iter()
        .map(|id| format!("[`{id}`](#src-{id})"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use generated::JETSON_SOURCES;

    fn page() -> (std::path::PathBuf, String) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/jetson.md");
        let page = std::fs::read_to_string(&path).unwrap();
        (path, page)
    }

    /// The page's Sources table is this registry's: a source added, dropped or re-read here
    /// and not on the page (or the other way round) fails.
    #[test]
    fn the_pages_sources_are_the_registrys() {
        let (path, page) = page();
        assert_eq!(
            JETSON_SOURCES.read(&page, &path).unwrap(),
            table(),
            "docs/jetson.md's Sources table is not the registry's: run `{}`",
            JETSON_SOURCES.generator
        );
    }

    /// Every source is cited by a rule or named by the page's prose: none is listed for
    /// nothing.
    #[test]
    fn every_source_is_used() {
        let (path, page) = page();
        let prose = page.replace(JETSON_SOURCES.read(&page, &path).unwrap(), "");
        for s in SOURCES {
            let by_rule = crate::replay::rules::RULES
                .iter()
                .any(|r| r.sources().contains(&s.id));
            assert!(
                by_rule || prose.contains(&format!("(#src-{})", s.id)),
                "{} is cited nowhere",
                s.id
            );
        }
    }

    #[test]
    fn ids_are_distinct_and_every_entry_is_complete() {
        let mut ids: Vec<&str> = SOURCES.iter().map(|s| s.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), SOURCES.len());
        for s in SOURCES {
            assert!(
                !s.repo.is_empty() && !s.path.is_empty() && !s.says.is_empty(),
                "{}",
                s.id
            );
            // A pinned read names its commit; only threads, pages, unpinned versions and
            // this project's own files have none.
            let pinned = matches!(s.read, Read::Snapshot | Read::Indexed);
            assert_eq!(pinned, s.commit != "-", "{}", s.id);
        }
    }
}
