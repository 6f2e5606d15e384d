//! The real-driver check (`cargo xtask jetson-replay --real-driver`): the replay's setups
//! against a machine's real NVIDIA driver, this project's x86_64 GPU-host measurements as the expected
//! results. A probe (`c-fixtures/cuda-jit-probe.c`) dlopens `libcuda.so.1` by bare name,
//! JIT-compiles a PTX kernel (with the driver's JIT cache off), runs it and checks the
//! result, under the patched and the unpatched loader, each run as
//! `ld.so --inhibit-cache --library-path <its own lib dirs> probe`.
//!
//! This module is the data: the setups, what each should give, how a run's output reads, and
//! the table. Detecting the driver and running the setups is xtask's
//! (`xtask/src/jetson_replay/driver_check.rs`).

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::fixtures::{ensure_set, Compiler, FixtureSet};
use crate::layout::Layout;
use model::Sysroot;

/// What a setup puts where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// The probe has no RUNPATH; `LD_FALLBACK_PATH=<driver dir>`.
    FallbackOnly,
    /// Nothing set: the control.
    NoVariable,
    /// A copy of the driver's `libcuda.so.1` in the probe's RUNPATH (cuda_compat's place),
    /// the copy without RUNPATH and without a helper beside it; `LD_FALLBACK_PATH=<driver
    /// dir>`.
    CopyInRunpath,
    /// The same copy with the driver's JIT helper copied beside it, still no RUNPATH.
    HelperBesideCopy,
    /// The same, the copy with RUNPATH `$ORIGIN`.
    CopyWithOrigin,
    /// The copy in the probe's RUNPATH and `LD_LIBRARY_PATH=<driver dir>`: the seed's bug.
    LibraryPath,
    /// The host's own cuda-compat package (`/usr/local/cuda*/compat`) in the probe's RUNPATH,
    /// `LD_FALLBACK_PATH=<driver dir>`.
    HostCompat,
}

impl Setup {
    pub const ALL: [Setup; 7] = [
        Setup::FallbackOnly,
        Setup::NoVariable,
        Setup::CopyInRunpath,
        Setup::HelperBesideCopy,
        Setup::CopyWithOrigin,
        Setup::LibraryPath,
        Setup::HostCompat,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Setup::FallbackOnly => "LD_FALLBACK_PATH=<driver dir>",
            Setup::NoVariable => "nothing set",
            Setup::CopyInRunpath => "libcuda copy in RUNPATH + fallback",
            Setup::HelperBesideCopy => "copy + helper beside it, no RUNPATH + fallback",
            Setup::CopyWithOrigin => "copy + helper, RUNPATH $ORIGIN + fallback",
            Setup::LibraryPath => "copy in RUNPATH + LD_LIBRARY_PATH=<driver dir>",
            Setup::HostCompat => "host's cuda-compat in RUNPATH + fallback",
        }
    }

    /// Whether the copy of the driver's `libcuda.so.1` is placed, with a helper beside it,
    /// and with RUNPATH `$ORIGIN`.
    pub fn copy(self) -> Option<Copy> {
        match self {
            Setup::CopyInRunpath | Setup::LibraryPath => Some(Copy {
                helper: false,
                origin: false,
            }),
            Setup::HelperBesideCopy => Some(Copy {
                helper: true,
                origin: false,
            }),
            Setup::CopyWithOrigin => Some(Copy {
                helper: true,
                origin: true,
            }),
            _ => None,
        }
    }
}

/// The copy a setup makes of the driver's `libcuda.so.1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copy {
    pub helper: bool,
    pub origin: bool,
}

/// Where a library came from, as the table names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The machine's driver directory.
    Driver,
    /// The setup's copy (cuda_compat's place).
    Copy,
    /// The host's cuda-compat package.
    HostCompat,
    /// Somewhere else.
    Other,
    /// Not loaded.
    Nowhere,
}

impl Place {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Place::Driver => "driver dir",
            Place::Copy => "the copy's dir",
            Place::HostCompat => "host cuda-compat",
            Place::Other => "elsewhere",
            Place::Nowhere => "-",
        }
    }
}

/// What a run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Result_ {
    /// The kernel ran and gave the right result.
    Ok,
    /// `libcuda.so.1` was not found.
    NotFound,
    /// A driver API step failed with this CUDA error code (221: no JIT helper; 803: the compat
    /// driver does not fit the running one).
    Cuda {
        step: String,
        code: i32,
        name: String,
    },
    /// Anything else (no probe output, a crash, a wrong result).
    Other(String),
}

impl Result_ {
    pub(crate) fn text(&self) -> String {
        match self {
            Result_::Ok => "kernel ok".into(),
            Result_::NotFound => "libcuda.so.1 not found".into(),
            Result_::Cuda { step, code, name } => format!("{step}: {code} ({name})"),
            Result_::Other(what) => what.clone(),
        }
    }
}

/// A run, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub result: Result_,
    pub driver: Option<i32>,
    pub device: Option<String>,
    pub libcuda: Place,
    pub helper: Place,
}

/// The directories a run's places are told apart by.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub driver: PathBuf,
    pub copy: PathBuf,
    pub host_compat: Option<PathBuf>,
}

impl Dirs {
    fn place(&self, path: &str) -> Place {
        let dir = Path::new(path).parent().unwrap_or(Path::new(""));
        if dir == self.copy {
            Place::Copy
        } else if dir == self.driver {
            Place::Driver
        } else if self.host_compat.as_deref() == Some(dir) {
            Place::HostCompat
        } else {
            Place::Other
        }
    }
}

/// Reads the probe's output.
pub fn read(stdout: &str, dirs: &Dirs) -> Seen {
    let loaded: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("probe loaded path="))
        .collect();
    let place = |prefix: &str| {
        loaded
            .iter()
            .find(|p| {
                Path::new(p)
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .map(|p| dirs.place(p))
            .unwrap_or(Place::Nowhere)
    };
    let value = |key: &str| stdout.lines().find_map(|l| l.strip_prefix(key));
    let result = if stdout.lines().any(|l| l == "probe ok") {
        Result_::Ok
    } else if let Some(fail) = value("probe fail ") {
        let field = |key: &str| {
            fail.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or("?")
                .to_string()
        };
        let step = field("step=");
        if step == "dlopen" {
            Result_::NotFound
        } else {
            Result_::Cuda {
                step,
                code: field("rc=").parse().unwrap_or(-1),
                name: field("name="),
            }
        }
    } else {
        Result_::Other("no probe output".into())
    };
    Seen {
        result,
        driver: value("probe driver=").and_then(|v| v.parse().ok()),
        device: value("probe device=").map(str::to_string),
        libcuda: place("libcuda.so"),
        helper: place("libnvidia-ptxjitcompiler"),
    }
}

/// What a setup should give: this project's measurements (x86_64 data-centre GPU, driver
/// 580.159.04, glibc 2.44 patched and unpatched), and what follows from them where a machine
/// differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    Works {
        libcuda: Place,
        helper: Place,
    },
    NotFound,
    Code(i32),
    /// Nothing measured or derived to compare with: the row is shown, not judged.
    Unknown,
}

impl Expected {
    pub(crate) fn text(&self) -> String {
        match self {
            Expected::Works { libcuda, helper } => format!(
                "kernel ok, libcuda from {}, helper from {}",
                libcuda.name(),
                helper.name()
            ),
            Expected::NotFound => "libcuda.so.1 not found".into(),
            Expected::Code(code) => format!("error {code}"),
            Expected::Unknown => "nothing to compare with".into(),
        }
    }

    /// Whether `seen` is what was expected.
    pub fn matches(&self, seen: &Seen) -> bool {
        match (self, &seen.result) {
            (Expected::Unknown, _) => true,
            (Expected::Works { libcuda, helper }, Result_::Ok) => {
                *libcuda == seen.libcuda && *helper == seen.helper
            }
            (Expected::NotFound, Result_::NotFound) => true,
            (Expected::Code(code), Result_::Cuda { code: got, .. }) => code == got,
            _ => false,
        }
    }
}

/// The machine a check runs on, as far as the expectations differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// A Jetson board: its `libcuda.so.1` needs the board's `libnvrm_*` (DT_NEEDED), which
    /// only the driver directory has.
    pub jetson: bool,
    /// The host's cuda-compat package against the running driver: `Some(true)` older (the
    /// measured case: 803 under both loaders), `Some(false)` not older, `None` not comparable.
    pub compat_is_older: Option<bool>,
}

/// What `setup` should give under the patched (`patched`) or unpatched loader.
pub fn expected(setup: Setup, patched: bool, machine: Machine) -> Expected {
    let works = |libcuda, helper| Expected::Works { libcuda, helper };
    match (setup, patched) {
        (Setup::FallbackOnly, true) => works(Place::Driver, Place::Driver),
        (Setup::FallbackOnly, false) | (Setup::NoVariable, _) => Expected::NotFound,
        // The copy wins; its bare-name dlopen of the helper finds it only in the fallback.
        (Setup::CopyInRunpath | Setup::HelperBesideCopy, true) => works(Place::Copy, Place::Driver),
        // On a Jetson the copy's libnvrm_* are found nowhere without the fallback.
        (Setup::CopyInRunpath | Setup::HelperBesideCopy | Setup::CopyWithOrigin, false)
            if machine.jetson =>
        {
            Expected::NotFound
        }
        (Setup::CopyInRunpath | Setup::HelperBesideCopy, false) => Expected::Code(221),
        (Setup::CopyWithOrigin, _) => works(Place::Copy, Place::Copy),
        (Setup::LibraryPath, _) => works(Place::Driver, Place::Driver),
        (Setup::HostCompat, _) => match machine.compat_is_older {
            Some(true) if !machine.jetson => Expected::Code(803),
            // Not measured (the measured package was older): what the copy setups say a
            // libcuda.so.1 without RUNPATH does, NVIDIA's package having none.
            Some(false) if !machine.jetson => {
                if patched {
                    works(Place::HostCompat, Place::Driver)
                } else {
                    Expected::Code(221)
                }
            }
            _ => Expected::Unknown,
        },
    }
}

/// The probe, compiled against `sysroot` and cached like the fixtures.
pub fn probe(sysroot: &Sysroot, layout: &Layout, cache: &Path) -> Result<PathBuf> {
    let set = ensure_set(
        FixtureSet {
            prefix: "real-driver-",
            recipe: "real-driver-v1",
            sources: &["cuda-jit-probe.c"],
            build: &|c: &Compiler| c.compile("cuda-jit-probe", "cuda-jit-probe.c", &[], &[]),
        },
        sysroot,
        layout,
        cache,
    )?;
    Ok(set.dir.join("cuda-jit-probe"))
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    pub setup: Setup,
    pub loader: &'static str,
    pub seen: Seen,
    pub expected: Expected,
}

/// The table the check prints (and a user commits with the date and the driver version).
pub fn render(header: &str, rows: &[Row]) -> String {
    let mut out = format!(
        "{header}\n\n| setup | loader | observed | libcuda.so.1 from | JIT helper from | as measured on x86_64 |\n|---|---|---|---|---|---|\n"
    );
    for row in rows {
        let verdict = if row.expected == Expected::Unknown {
            "not judged".to_string()
        } else if row.expected.matches(&row.seen) {
            "yes".to_string()
        } else {
            format!("**no**: expected {}", row.expected.text())
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {verdict} |\n",
            row.setup.describe(),
            row.loader,
            row.seen.result.text(),
            row.seen.libcuda.name(),
            row.seen.helper.name(),
        ));
    }
    out.push_str(
        "\nThese are observed runs: send this table, with /etc/nv_tegra_release on a Jetson, as \
         docs/jetson.md (\"The real-driver check\") says.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: Machine = Machine {
        jetson: false,
        compat_is_older: Some(true),
    };

    fn dirs() -> Dirs {
        Dirs {
            driver: "/usr/lib/x86_64-linux-gnu".into(),
            copy: "/tmp/check/compat".into(),
            host_compat: Some("/usr/local/cuda-13.0/compat".into()),
        }
    }

    #[test]
    fn a_run_with_the_copy_and_the_drivers_helper_reads_as_measured() {
        let out = "probe driver=13000\nprobe device=NVIDIA H200\nprobe ok\n\
                   probe loaded path=/tmp/check/compat/libcuda.so.1\n\
                   probe loaded path=/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1\n";
        let seen = read(out, &dirs());
        assert_eq!(seen.result, Result_::Ok);
        assert_eq!((seen.libcuda, seen.helper), (Place::Copy, Place::Driver));
        assert_eq!(seen.driver, Some(13000));
        assert!(expected(Setup::CopyInRunpath, true, GPU).matches(&seen));
        // The same run would not be what was measured with $ORIGIN.
        assert!(!expected(Setup::CopyWithOrigin, true, GPU).matches(&seen));
    }

    #[test]
    fn failures_read_as_their_cuda_code() {
        let out = "probe driver=13000\nprobe fail step=cuModuleLoadDataEx rc=221 name=CUDA_ERROR_JIT_COMPILER_NOT_FOUND\n";
        let seen = read(out, &dirs());
        assert!(expected(Setup::CopyInRunpath, false, GPU).matches(&seen));
        assert_eq!(
            seen.result.text(),
            "cuModuleLoadDataEx: 221 (CUDA_ERROR_JIT_COMPILER_NOT_FOUND)"
        );
        let missing = read(
            "probe fail step=dlopen rc=-1 name=libcuda.so.1: cannot open\n",
            &dirs(),
        );
        assert_eq!(missing.result, Result_::NotFound);
        assert!(expected(Setup::FallbackOnly, false, GPU).matches(&missing));
        assert!(!expected(Setup::FallbackOnly, true, GPU).matches(&missing));
        assert_eq!(
            read("", &dirs()).result,
            Result_::Other("no probe output".into())
        );
    }

    #[test]
    fn a_jetson_copy_without_the_fallback_misses_libnvrm() {
        let jetson = Machine {
            jetson: true,
            compat_is_older: None,
        };
        assert_eq!(
            expected(Setup::CopyInRunpath, false, jetson),
            Expected::NotFound
        );
        assert_eq!(
            expected(Setup::CopyInRunpath, false, GPU),
            Expected::Code(221)
        );
        assert_eq!(expected(Setup::HostCompat, true, jetson), Expected::Unknown);
        assert_eq!(expected(Setup::HostCompat, true, GPU), Expected::Code(803));
    }

    #[test]
    fn the_table_says_where_a_run_differs_from_the_measurement() {
        let seen = read("probe fail step=dlopen rc=-1 name=x\n", &dirs());
        let rows = [Row {
            setup: Setup::FallbackOnly,
            loader: "patched",
            expected: expected(Setup::FallbackOnly, true, GPU),
            seen,
        }];
        let table = render("header", &rows);
        assert!(table.contains("| LD_FALLBACK_PATH=<driver dir> | patched | libcuda.so.1 not found | - | - | **no**: expected kernel ok, libcuda from driver dir, helper from driver dir |"));
    }
}
