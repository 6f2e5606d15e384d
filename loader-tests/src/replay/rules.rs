//! What the replay's stand-ins do that no loader decides, each rule with its source, and how
//! far a run rests on one: a run whose outcome the loader alone decides (which file each
//! lookup took, or that none was found) is *replayed*; one whose outcome also rests on a rule
//! that a source states but nobody has run on a Jetson is *expected*; one that rests on a rule
//! no source supports is *unknown*. docs/jetson.md renders [`RULES`] as its rules table, so a
//! rule and its source are stated once.
//!
//! Some rules are *premises* of the setup rather than of a driver's behaviour (what a Thor's
//! driver links, which L4T release a compat package is for, which store path an Ubuntu host's
//! closure names): [`super::premises`] finds the runs that rest on them, and a cell that has
//! one is never `[R]`.

use serde::Serialize;

/// A modelled rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// cuda_compat refuses a board of another L4T release.
    CompatOtherL4t,
    /// cuda_compat refuses a board driver newer than itself.
    CompatOlder,
    /// cuda_compat refuses a board driver of its own version.
    CompatSame,
    /// A driver runs a PTX kernel with another driver's JIT helper.
    JitOfAnotherDriver,
    /// A process with two `libcuda.so.1` mapped works.
    TwoDrivers,
    /// A SASS-only app never loads the JIT helper.
    SassNoJit,
    /// `CUDA_DISABLE_PTX_JIT=1` makes the driver refuse PTX.
    PtxJitDisabled,
    /// NVIDIA's container toolkit writes no `00-compat` entry on an R35 host (no NVML).
    ToolkitNoNvml,
    /// The toolkit reads a Jetson cuda-compat's CUDA version from its ELF note.
    ToolkitNote,
    /// The toolkit looks for compat at the root of the device kind only (Orin: `compat_orin`).
    ToolkitRoot,
    /// A premise: Thor's `libcuda.so.1` (the board's and R38's compat) has the Orin closure.
    ThorClosure,
    /// A premise: row 6's l4t-core store path is of the Ubuntu host's own L4T release.
    L4tCorePinned,
    /// A premise: nixpkgs' `cuda_compat_orin` 13.4 is made for R39 and works there.
    CompatOrinRelease,
}

/// How far a run (or a cell) rests on the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "basis", content = "rule", rename_all = "kebab-case")]
pub enum Basis {
    Replayed,
    Expected(Rule),
    Unknown(Rule),
}

impl Basis {
    /// The mark a table shows.
    pub fn mark(self) -> String {
        match self {
            Basis::Replayed => "R".to_string(),
            Basis::Expected(rule) => format!("E {}", rule.id()),
            Basis::Unknown(rule) => format!("? {}", rule.id()),
        }
    }
}

pub const RULES: [Rule; 13] = [
    Rule::CompatOtherL4t,
    Rule::CompatOlder,
    Rule::CompatSame,
    Rule::JitOfAnotherDriver,
    Rule::TwoDrivers,
    Rule::SassNoJit,
    Rule::PtxJitDisabled,
    Rule::ToolkitNoNvml,
    Rule::ToolkitNote,
    Rule::ToolkitRoot,
    Rule::ThorClosure,
    Rule::L4tCorePinned,
    Rule::CompatOrinRelease,
];

impl Rule {
    pub fn id(self) -> &'static str {
        match self {
            Rule::CompatOtherL4t => "803-l4t",
            Rule::CompatOlder => "803-older",
            Rule::CompatSame => "803-same",
            Rule::JitOfAnotherDriver => "jit-mismatch",
            Rule::TwoDrivers => "two-drivers",
            Rule::SassNoJit => "sass",
            Rule::PtxJitDisabled => "no-jit",
            Rule::ToolkitNoNvml => "toolkit-nvml",
            Rule::ToolkitNote => "toolkit-note",
            Rule::ToolkitRoot => "toolkit-root",
            Rule::ThorClosure => "thor-closure",
            Rule::L4tCorePinned => "l4t-core-pin",
            Rule::CompatOrinRelease => "compat-orin",
        }
    }

    /// Whether it is a premise of the setup (what the replay's roots assume) rather than a
    /// rule of what a driver does.
    pub fn is_premise(self) -> bool {
        matches!(
            self,
            Rule::ThorClosure | Rule::L4tCorePinned | Rule::CompatOrinRelease
        )
    }

    /// Whether the runs resting on it are expected (a source states it) or unknown.
    pub fn basis(self) -> Basis {
        match self {
            Rule::CompatOtherL4t
            | Rule::CompatOlder
            | Rule::SassNoJit
            | Rule::PtxJitDisabled
            | Rule::ToolkitNoNvml
            | Rule::ToolkitNote
            | Rule::ToolkitRoot => Basis::Expected(self),
            Rule::CompatSame
            | Rule::JitOfAnotherDriver
            | Rule::TwoDrivers
            | Rule::ThorClosure
            | Rule::L4tCorePinned
            | Rule::CompatOrinRelease => Basis::Unknown(self),
        }
    }

    /// What the stand-ins do.
    pub fn statement(self) -> &'static str {
        match self {
            Rule::CompatOtherL4t => "cuda_compat's `libcuda.so.1` made for one L4T release stops in `cuInit` with `CUDA_ERROR_SYSTEM_DRIVER_MISMATCH` (803) on a board of another release",
            Rule::CompatOlder => "cuda_compat's `libcuda.so.1` stops in `cuInit` with 803 when the board's driver is newer than it",
            Rule::CompatSame => "cuda_compat's `libcuda.so.1` stops in `cuInit` with 803 when the board's driver is of its own version (the stand-in refuses it; the real one may run)",
            Rule::JitOfAnotherDriver => "a driver that loaded another driver's `libnvidia-ptxjitcompiler.so.1` (a bare-name dlopen that its RUNPATH sent elsewhere): the cell says which helper it got and counts the run as not known to work",
            Rule::TwoDrivers => "a process with two `libcuda.so.1` mapped (the board's by `LD_PRELOAD`, cuda_compat's by an absolute DT_NEEDED): the cell says so and counts the run as not known to work",
            Rule::SassNoJit => "loading a module that has SASS for the device loads no JIT helper",
            Rule::PtxJitDisabled => "with `CUDA_DISABLE_PTX_JIT=1` loading a PTX-only module fails with `CUDA_ERROR_JIT_COMPILATION_DISABLED` (223)",
            Rule::ToolkitNoNvml => "(row 12) NVIDIA's container toolkit writes no `00-compat-*.conf` on an L4T R35 host, however new the container's cuda-compat: the container gets the board's driver",
            Rule::ToolkitNote => "(row 12) NVIDIA's container toolkit writes `00-compat-*.conf` for a Jetson cuda-compat whose CUDA version is newer than the host driver's, which it reads from the compat `libcuda`'s `.note.cuda.fwd_compatibility`",
            Rule::ToolkitRoot => "(row 12) NVIDIA's container toolkit gives its `enable-cuda-compat` hook the compat directory of the device kind, `/usr/local/cuda/compat_orin` on an Orin and `/usr/local/cuda/compat` elsewhere (Thor), and the hook looks nowhere else: it needs exactly one `libcuda.so.*.*` there. A CUDA image keeps `cuda-compat-12-x` (JetPack 6) in `compat/`, `cuda-compat-orin-13-x` in `compat_orin/`",
            Rule::ThorClosure => "(premise; Thor, R38) the board's `libcuda.so.1` needs `libnvrm_gpu.so` and `libnvrm_mem.so`, and R38's `cuda-compat-13-0` also `libnvdla_runtime.so`, with the Orin closure below them ([The closure](#the-closure)): the stand-ins are built so, and a run that loads or misses one of those libraries rests on it",
            Rule::L4tCorePinned => "(premise; row 6 on an Ubuntu host) the `libnvrm_*` that cuda_compat's RUNPATH finds in jetpack-nixos' l4t-core store path are of the host's own L4T release: the replay's app has an l4t-core of the board's release",
            Rule::CompatOrinRelease => "(premise; R39.2) nixpkgs' `cuda_compat_orin` 13.4 is made for R39 and its `cuInit` accepts R39.2's kernel and driver 13.2: the stand-in is built so",
        }
    }

    /// For an unknown rule or premise: what would settle it.
    pub fn settled_by(self) -> Option<&'static str> {
        match self {
            Rule::CompatSame => Some("a run of NVIDIA's `cuda-compat-12-6` on a JetPack 6 board (`cargo xtask jetson-replay --real-driver` with it installed)"),
            Rule::JitOfAnotherDriver => Some("a PTX kernel run on a board with cuda_compat's `libcuda.so.1` and the board's `libnvidia-ptxjitcompiler.so.1` (`LD_DEBUG=libs,files` shows the pair)"),
            Rule::TwoDrivers => Some("a run with both `libcuda.so.1` mapped on a board"),
            Rule::ThorClosure => Some("`readelf -d` on R38.4's `libcuda.so.1.1` (`nvidia-l4t-cuda`) and on `cuda-compat-13-0`'s `libcuda.so.580.65.06`, or `LD_DEBUG=libs` of a CUDA program on a Thor"),
            Rule::L4tCorePinned => Some("jetpack-nixos pinned to the host's L4T release (its `overlay.nix`), or a run on a board whose release differs from the store path's"),
            Rule::CompatOrinRelease => Some("a run of `cuda_compat_orin` 13.3 or 13.4 on an R39.2 Orin, or NVIDIA naming the L4T release it is built for"),
            _ => None,
        }
    }

    /// Its source, or why none supports it.
    pub fn source(self) -> &'static str {
        match self {
            Rule::CompatOtherL4t => "NVIDIA's CUDA Compatibility guide, \"Forward Compatibility\": a `cuda-compat-<major>-<minor>` package \"is generated from the NVIDIA driver\" of one release, and Jetson boards are among the systems it applies to. **Not confirmed** on a board: nobody has run an R35 cuda_compat on R36",
            Rule::CompatOlder => "issue 23's measurement on x86_64: the host's cuda-compat 580.95.05, older than the running 580.159.04 driver, failed `cuInit` with 803 under both loaders; the forward-compatibility guide describes compat only for a driver older than it; NVIDIA's container toolkit writes its `00-compat` ld.so.conf.d entry only when compat is newer than the host driver (nvidia-container-toolkit `cmd/nvidia-cdi-hook/cudacompat/cuda-elf-header.go`, `UseCompat`: strictly greater). **Not confirmed** on a Jetson",
            Rule::CompatSame => "none: no source says what a compat driver does on a driver of its own version (JetPack 6 ships `cuda-compat-12-6` for its CUDA 12.6 driver: jetpack-nixos `sourceinfo/r36.5-debs.json`; on JetPack 7 every cuda-compat of the release's repository is of the driver's own CUDA version: R38.4's `cuda-compat-13-0` 580.65.06 for CUDA 13.0, R39.2's `cuda-compat-orin-13-2` and `cuda-compat-13-2` 595.58.03 for CUDA 13.2: `sourceinfo/r38.4-debs.json` before 02d22af, `r39.2-debs.json`)",
            Rule::JitOfAnotherDriver => "issue 23 measured only two close x86_64 drivers (580.95 helper, 580.159 driver: kernel ok); for 11.4's helper under a 12.x driver nothing supports \"runs\", and `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (222, \"PTX was generated by a compiler newer than what is supported by the CUDA driver and PTX JIT compiler\") is the likely outcome: not confirmed",
            Rule::TwoDrivers => "Julia's CUDA_Driver_jll refuses it (Yggdrasil `C/CUDA/CUDA_Driver/init.jl`: \"we can't consider a forward compatible library because that would risk having multiple copies of libcuda.so loaded (also see NVIDIA bug #3418723)\"): not confirmed either way",
            Rule::SassNoJit => "NVIDIA's runtime API reference: the JIT helper \"is used for PTX compilation\" (`cudaErrorJitCompilerNotFound`); SASS needs none",
            Rule::PtxJitDisabled => "NVIDIA's runtime API reference, `cudaErrorJitCompilationDisabled` (223): \"This indicates that the JIT compilation was disabled\"; the variable is NVIDIA's `CUDA_DISABLE_PTX_JIT` (CUDA programming guide, environment variables: not fetched here)",
            Rule::ToolkitNoNvml => "nvidia-container-toolkit `pkg/nvcdi/lib-csv.go` (`getEnableCUDACompatHookOptions`): in CSV mode (Jetson) the `enable-cuda-compat` hook is created only when the host has NVML (`libnvidia-ml.so.1`); R35's container list has none, R36's has it (`nvidia-l4t-nvml`; jetpack-nixos `pkgs/containers/r35-l4t.json`, `r36-l4t.json`). **Not confirmed** on a board; the legacy runtime's compat modes (`nvidia-container-runtime` with libnvidia-container) are not replayed",
            Rule::ToolkitNote => "nvidia-container-toolkit `cmd/nvidia-cdi-hook/cudacompat/cudacompat.go` (`useCompatLibraries`: with only the host's CUDA version known, as in CSV mode, no note means no entry) and `cuda-elf-header.go` (`cudaVersion.UseCompat`: strictly greater); its Jetson test file `testdata/compat/libcuda.orin.13.2.1.so.1.1` carries the note (`{\"format\":1,\"CUDA version\":\"13.2\"}`). **Not confirmed** that the 12.x Jetson cuda-compat packages carry it; without it the container gets the board's driver",
            Rule::ToolkitRoot => "nvidia-container-toolkit (d34b304) `pkg/nvcdi/lib-csv.go` (`hasOrinDevices`: an NVML device name containing \"Orin (nvgpu)\"; `defaultOrinCompatContainerRoot`), `pkg/nvcdi/options.go` (that default in CSV mode), `pkg/nvcdi/lib-csv_test.go` (its Orin case passes `--cuda-compat-container-root=/usr/local/cuda/compat_orin`, its Thor case, \"NVIDIA Thor\", none), `cmd/nvidia-cdi-hook/cudacompat/cudacompat.go` (`defaultCudaCompatPath`, the `libcuda.so.*.*` glob); #1649 (February 2026, v1.19.0) set `compat_orin`, #1515 (December 2025) had added the hook on Tegra. `compat_orin/` is the `cuda_compat_orin` redistributable's directory (conda-forge staged-recipes #34460). **Not confirmed** on a board that an Orin's NVML gives that name (the toolkit's test mock does); toolkits before #1515 create no hook on Tegra at all",
            Rule::ThorClosure => "none for Thor: every source of the closure is about Xavier and Orin. R38's `cuda-compat-13-0` is built from the desktop driver's source package `nvidia-graphics-drivers-580`, as `libnvidia-compute-580` is (jetpack-nixos `sourceinfo/r38.4-debs.json` before 02d22af), and R39 keeps Thor's `libcuda` apart, in `/opt/nvidia/l4t-gpu-libs/openrm/` (`pkgs/containers/r39-l4t.json`): both suggest another closure",
            Rule::L4tCorePinned => "none: on an Ubuntu host the store path's release is the one the user's jetpack-nixos pins (`overlay.nix`), not necessarily the host's, and the row needs jetpack-nixos' overlay (`pkgs/cuda-extensions/default.nix`), not nixpkgs alone; `libnvrm_*` of another release than the kernel's fail in the stand-ins, and nothing says what the real ones do",
            Rule::CompatOrinRelease => "none: nixpkgs' manifests list `cuda_compat_orin` 13.3.45405995 (`redistrib_13.3.0.json`) and 13.4.47145772 (`redistrib_13.4.2.json`, linux-sbsa), without an L4T release; conda-forge's `cuda-compat-orin` recipe (staged-recipes #34460) describes it as running a CUDA 13 runtime \"on the older display driver shipped by JetPack 6 / L4T\"; R39.2's repository has only `cuda-compat-orin-13-2` (13.2.44429113, the driver's version: `sourceinfo/r39.2-debs.json`); Julia ships no compat driver from R38 on (Yggdrasil `C/CUDA/CUDA_Driver/build_tarballs.jl`). That a nixpkgs package set exposes it, with cuda_compat's RUNPATH, is not confirmed either",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_as_weak_as_its_weakest_run() {
        let runs = [
            Basis::Replayed,
            Rule::CompatOtherL4t.basis(),
            Rule::JitOfAnotherDriver.basis(),
        ];
        assert_eq!(
            runs.iter().max().copied(),
            Some(Basis::Unknown(Rule::JitOfAnotherDriver))
        );
        assert_eq!(Basis::Replayed.mark(), "R");
        assert_eq!(Rule::CompatOlder.basis().mark(), "E 803-older");
        assert_eq!(Rule::CompatSame.basis().mark(), "? 803-same");
    }

    #[test]
    fn every_rule_is_listed_once_with_a_distinct_id() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}
