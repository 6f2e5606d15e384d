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
    /// A runtime runs on an older driver of its own CUDA major version, and PTX its toolkit
    /// made fails there (222).
    MinorVersion,
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
    /// A premise: jetpack-nixos' cuda_compat's l4t-core store path is of the Ubuntu host's own L4T release.
    L4tCorePinned,
    /// A premise: `cuda_compat_orin` is made for JetPack 6 (R36) and works there.
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

pub const RULES: [Rule; 14] = [
    Rule::CompatOtherL4t,
    Rule::CompatOlder,
    Rule::CompatSame,
    Rule::MinorVersion,
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
            Rule::MinorVersion => "mvc",
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
            | Rule::MinorVersion
            | Rule::CompatOrinRelease
            | Rule::SassNoJit
            | Rule::PtxJitDisabled
            | Rule::ToolkitNoNvml
            | Rule::ToolkitNote
            | Rule::ToolkitRoot => Basis::Expected(self),
            Rule::CompatSame
            | Rule::JitOfAnotherDriver
            | Rule::TwoDrivers
            | Rule::ThorClosure
            | Rule::L4tCorePinned => Basis::Unknown(self),
        }
    }

    /// What the stand-ins do.
    pub fn statement(self) -> &'static str {
        match self {
            Rule::CompatOtherL4t => "cuda_compat's `libcuda.so.1` made for one L4T release stops in `cuInit` with `CUDA_ERROR_SYSTEM_DRIVER_MISMATCH` (803) on a board of another release",
            Rule::CompatOlder => "cuda_compat's `libcuda.so.1` stops in `cuInit` with 803 when the board's driver is newer than it",
            Rule::CompatSame => "cuda_compat's `libcuda.so.1` stops in `cuInit` with 803 when the board's driver is of its own version (the stand-in refuses it; the real one may run)",
            Rule::MinorVersion => "a CUDA runtime runs on a driver of an older minor version of its own CUDA major version (the stand-in refuses only an older major, with 35), and a PTX module its own toolkit made fails there with `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` (222) when the driver's JIT helper is older than that toolkit; SASS for the board needs no JIT and runs",
            Rule::JitOfAnotherDriver => "a driver that loaded another driver's `libnvidia-ptxjitcompiler.so.1` (a bare-name dlopen that its RUNPATH sent elsewhere): the cell says which helper it got and counts the run as not known to work",
            Rule::TwoDrivers => "a process with two `libcuda.so.1` mapped (the board's by `LD_PRELOAD`, cuda_compat's by an absolute DT_NEEDED): the cell says so and counts the run as not known to work",
            Rule::SassNoJit => "loading a module that has SASS for the device loads no JIT helper",
            Rule::PtxJitDisabled => "with `CUDA_DISABLE_PTX_JIT=1` loading a PTX-only module fails with `CUDA_ERROR_JIT_COMPILATION_DISABLED` (223)",
            Rule::ToolkitNoNvml => "(the container toolkit's row) NVIDIA's container toolkit writes no `00-compat-*.conf` on an L4T R35 host, however new the container's cuda-compat: the container gets the board's driver",
            Rule::ToolkitNote => "(the container toolkit's row) NVIDIA's container toolkit writes `00-compat-*.conf` for a Jetson cuda-compat whose CUDA version is newer than the host driver's, which it reads from the compat `libcuda`'s `.note.cuda.fwd_compatibility`",
            Rule::ToolkitRoot => "(the container toolkit's row) NVIDIA's container toolkit gives its `enable-cuda-compat` hook the compat directory of the device kind, `/usr/local/cuda/compat_orin` on an Orin and `/usr/local/cuda/compat` elsewhere (Thor), and the hook looks nowhere else: it needs exactly one `libcuda.so.*.*` there. A CUDA image keeps `cuda-compat-12-x` (JetPack 6) in `compat/`, `cuda-compat-orin-13-x` in `compat_orin/`",
            Rule::ThorClosure => "(premise; Thor, R38) the board's `libcuda.so.1` needs `libnvrm_gpu.so` and `libnvrm_mem.so`, and R38's `cuda-compat-13-0` also `libnvdla_runtime.so`, with the Orin closure below them ([The closure](#the-closure)): the stand-ins are built so, and a run that loads or misses one of those libraries rests on it",
            Rule::L4tCorePinned => "(premise; jetpack-nixos' cuda_compat on an Ubuntu host) the `libnvrm_*` that cuda_compat's RUNPATH finds in jetpack-nixos' l4t-core store path are of the host's own L4T release: the replay's app has an l4t-core of the board's release",
            Rule::CompatOrinRelease => "(premise; JetPack 6) `cuda_compat_orin` 13.2 is made for L4T R36 and its `cuInit` accepts R36's kernel and driver 12.6: the stand-in is built so",
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
            _ => None,
        }
    }

    /// Why the rule holds, or why nothing supports it, in words; [`Rule::sources`] names the
    /// sources.
    pub fn source(self) -> &'static str {
        match self {
            Rule::CompatOtherL4t => "NVIDIA's forward-compatibility guide: a compat package is made from one driver release, and Jetson boards are among the systems it covers. **Not confirmed** on a board: nobody has run an R35 cuda_compat on R36",
            Rule::CompatOlder => "this project's x86_64 GPU-host measurement: a host cuda-compat (580.95.05) older than the running driver (580.159.04) failed `cuInit` with 803 under both loaders; the forward-compatibility guide describes compat only for a driver older than it; NVIDIA's container toolkit writes its `00-compat` entry only when compat is strictly newer than the host. **Not confirmed** on a Jetson",
            Rule::CompatSame => "none: no source says what a compat driver does on a driver of its own version. JetPack 6 ships `cuda-compat-12-6` for its CUDA 12.6 driver, and every cuda-compat of R38.4's and R39.2's repositories is of the driver's own CUDA version",
            Rule::MinorVersion => "NVIDIA documents minor-version compatibility within a major version (CUDA 12.x from driver 525, 13.x from 580); 222's description is PTX \"generated by a compiler newer than what is supported by the CUDA driver and PTX JIT compiler\". **Not confirmed** on a Jetson, whose drivers NVIDIA's driver-version table does not list",
            Rule::JitOfAnotherDriver => "this project's x86_64 measurement ran a kernel only with the helper of a close driver (580.95's helper, 580.159's driver); for a Jetson pair (11.4's helper under a 12.x driver, 12.6's under compat 12.9) nothing supports \"runs\", and 222 is the likely outcome: the stand-in gives it where the helper is older than the PTX, and the cell still says unknown",
            Rule::TwoDrivers => "Julia's CUDA_Driver_jll never has both: it inspects each driver in a child process \"without dlopen'ing it in the caller's process\", and keeps the system driver when that is already loaded (\"the code that loaded it in the first place might have made assumptions based on it\"); that avoids the case, it does not say what happens in it: not confirmed either way",
            Rule::SassNoJit => "NVIDIA's runtime API reference: the JIT helper \"is used for PTX compilation\" (`cudaErrorJitCompilerNotFound`); SASS needs none",
            Rule::PtxJitDisabled => "NVIDIA's runtime API reference, `cudaErrorJitCompilationDisabled` (223): \"This indicates that the JIT compilation was disabled\"; the variable is NVIDIA's `CUDA_DISABLE_PTX_JIT` (CUDA programming guide, environment variables: not read here)",
            Rule::ToolkitNoNvml => "the toolkit creates the `enable-cuda-compat` hook in CSV mode (Jetson) only when the host has NVML (`libnvidia-ml.so.1`); R35's container list has none, R36's has it. **Not confirmed** on a board; the legacy runtime's compat modes (`nvidia-container-runtime` with libnvidia-container) are not replayed",
            Rule::ToolkitNote => "the hook compares the CUDA version of the compat `libcuda`'s `.note.cuda.fwd_compatibility` with the host's, strictly greater, and with only the host's CUDA version known (CSV mode) no note means no entry; its Orin test file carries the note (CUDA 13.2). **Not confirmed** that the 12.x Jetson cuda-compat packages carry it; without it the container gets the board's driver",
            Rule::ToolkitRoot => "the toolkit gives the hook `compat_orin/` when an NVML device name contains \"Orin (nvgpu)\" and its default `compat/` otherwise, and the hook looks nowhere else; a Thor uses \"the same compat libraries that are used for dGPU-based systems\". **Not confirmed** on a board that an Orin's NVML gives that name (the toolkit's test mock does, and go-nvlib counts any name with \"(nvgpu)\" as an integrated GPU); toolkits before its Tegra hook create none on Tegra",
            Rule::ThorClosure => "none for Thor: every source of the closure is about Xavier and Orin. R38's `cuda-compat-13-0` comes from the desktop driver's source package (`nvidia-graphics-drivers-580`), the toolkit says a Thor uses the dGPU compat libraries, and R39 keeps Thor's `libcuda` apart (`l4t-gpu-libs/openrm/`): all suggest another closure",
            Rule::L4tCorePinned => "none: on an Ubuntu host the store path's release is the one the user's jetpack-nixos pins, not necessarily the host's, and the row needs jetpack-nixos' overlay, not nixpkgs alone; `libnvrm_*` of another release than the kernel's fail in the stand-ins, and nothing says what the real ones do",
            Rule::CompatOrinRelease => "a packager's word and NVIDIA's tooling, not NVIDIA's documentation: conda-forge packages `cuda_compat_orin` \"so that a CUDA 13 runtime can run on the older display driver shipped by JetPack 6 / L4T\", linked against \"the Tegra NVRM stack\"; the toolkit keeps a separate root for the Orin \"compat packages\". nixpkgs lists it in its manifests (13.2, 13.4, under `linux-sbsa`) and has no package for it; jetpack-nixos' module refuses CUDA 13 on JetPack 6. **Not confirmed** on a board",
        }
    }

    /// The ids of its sources in [`super::sources::SOURCES`]: what a reader checks it against.
    pub fn sources(self) -> &'static [&'static str] {
        match self {
            Rule::CompatOtherL4t => &["nvidia-forward"],
            Rule::CompatOlder => &["x86-measurement", "nvidia-forward", "toolkit-hook"],
            Rule::CompatSame => &["jetpack-nixos-debs", "nvidia-forward"],
            Rule::MinorVersion => &["nvidia-mvc", "nvidia-errors"],
            Rule::JitOfAnotherDriver => {
                &["x86-measurement", "nvidia-errors", "jetpack-nixos-threads"]
            }
            Rule::TwoDrivers => &["julia-driver-jll"],
            Rule::SassNoJit => &["nvidia-errors"],
            Rule::PtxJitDisabled => &["nvidia-errors"],
            Rule::ToolkitNoNvml => &["toolkit-csv", "jetpack-nixos-containers"],
            Rule::ToolkitNote => &["toolkit-hook"],
            Rule::ToolkitRoot => &["toolkit-csv", "toolkit-hook", "toolkit-thor", "go-nvlib"],
            Rule::ThorClosure => &[
                "jetpack-nixos-debs",
                "jetpack-nixos-containers",
                "toolkit-thor",
            ],
            Rule::L4tCorePinned => &["jetpack-nixos-compat", "jetpack-nixos-defaults"],
            Rule::CompatOrinRelease => &[
                "conda-compat-orin",
                "toolkit-thor",
                "nixpkgs-manifest-13.2.1",
                "nixpkgs-manifest-13.4.2",
                "nixpkgs-packages",
                "jetpack-nixos-defaults",
            ],
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

    /// A rule with no source, or naming one the Sources table lacks, fails: the page cites
    /// every rule's sources from that table.
    #[test]
    fn every_rule_cites_sources_of_the_table() {
        for rule in RULES {
            assert!(!rule.sources().is_empty(), "{} cites no source", rule.id());
            for id in rule.sources() {
                assert!(
                    super::super::sources::source(id).is_some(),
                    "{} cites {id}, which the Sources table lacks",
                    rule.id()
                );
            }
        }
    }

    #[test]
    fn every_rule_is_listed_once_with_a_distinct_id() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}
