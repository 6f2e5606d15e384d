//! The contract's scenario table as code: each scenario builds a root, runs a probe and
//! says what it saw, in the words of the table's "expected" column.
//!
//! Names: C = cuda_compat dir in RUNPATH (`compat`), T = tegra driver dir (`driver`),
//! S = default dir or ld.so.cache entry (`system`, `cache`), FB = LD_FALLBACK_PATH,
//! LLP = LD_LIBRARY_PATH.

use anyhow::Result;

use crate::probe::{Output, Run};
use crate::root::{Ctx, Root};

mod diagnostics;
mod jetson;
mod rows;

use diagnostics::*;
use jetson::jetson;
use rows::*;

/// One row (or one way through a row) of the matrix.
pub struct Scenario {
    /// Stable name: `01-needed-bug`.
    pub id: &'static str,
    /// The contract's row number.
    pub row: u8,
    pub title: &'static str,
    /// What the patched loader must do.
    pub expected: &'static str,
    /// For scenarios that need the patch: what the unpatched loader does instead (it must
    /// differ from `expected`). `None`: the unpatched loader must give `expected` too.
    pub without_patch: Option<&'static str>,
    pub run: fn(&Ctx) -> Result<Observed>,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

impl Scenario {
    pub fn needs_patch(&self) -> bool {
        self.without_patch.is_some()
    }
}

/// What a scenario saw, or why it could not look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Seen(String),
    Skipped(String),
}

pub(crate) const CUDA: &str = "libcuda.so.1";

/// How the probe asks for `libcuda.so.1`.
#[derive(Clone, Copy)]
pub(crate) enum Via {
    /// DT_NEEDED of the executable.
    Needed,
    /// `dlopen` from the executable.
    Dlopen,
}

impl Via {
    /// The probe for this way of loading, with C in its RUNPATH or without a RUNPATH.
    pub(crate) fn probe<'r>(self, root: &'r Root, runpath: bool) -> Run<'r> {
        match (self, runpath) {
            (Via::Needed, true) => root.probe("needed-runpath").arg("needed"),
            (Via::Needed, false) => root.probe("needed").arg("needed"),
            (Via::Dlopen, true) => root.probe("probe-runpath").args(&["dlopen", CUDA]),
            (Via::Dlopen, false) => root.probe("probe").args(&["dlopen", CUDA]),
        }
    }
}

pub(crate) fn seen(text: impl Into<String>) -> Result<Observed> {
    Ok(Observed::Seen(text.into()))
}

pub(crate) fn winner(out: Output) -> Result<Observed> {
    seen(out.winner())
}

macro_rules! scenario {
    ($id:literal, $row:literal, $title:literal, $expected:literal, $without:expr, $run:expr) => {
        Scenario {
            id: $id,
            row: $row,
            title: $title,
            expected: $expected,
            without_patch: $without,
            run: $run,
        }
    };
}

/// Same outcome with and without the patch.
const SAME: Option<&str> = None;

#[rustfmt::skip]
pub const MATRIX: &[Scenario] = &[
    scenario!("01-needed-bug", 1, "DT_NEEDED, the bug: LLP=T outranks RUNPATH=C", "driver", SAME, |cx| bug(cx, Via::Needed)),
    scenario!("01-dlopen-bug", 1, "dlopen, the bug: LLP=T outranks RUNPATH=C", "driver", SAME, |cx| bug(cx, Via::Dlopen)),
    scenario!("01-rpath-order", 1, "DT_RPATH=C outranks LLP=T (order step 1), FB=T changes nothing", "compat", SAME, rpath_order),
    scenario!("02-needed-fix", 2, "DT_NEEDED, the fix: FB=T, RUNPATH=C wins", "compat", SAME, |cx| fix(cx, Via::Needed)),
    scenario!("02-dlopen-fix", 2, "dlopen, the fix: FB=T, RUNPATH=C wins", "compat", SAME, |cx| fix(cx, Via::Dlopen)),
    scenario!("03-needed-runpath-miss", 3, "DT_NEEDED, RUNPATH without a copy falls back to T", "driver", Some("not found"), |cx| runpath_miss(cx, Via::Needed)),
    scenario!("03-dlopen-runpath-miss", 3, "dlopen, RUNPATH without a copy falls back to T", "driver", Some("not found"), |cx| runpath_miss(cx, Via::Dlopen)),
    scenario!("04-needed-nothing-set", 4, "DT_NEEDED, copy only in T, nothing set", "not found", SAME, |cx| nothing_set(cx, Via::Needed)),
    scenario!("04-dlopen-nothing-set", 4, "dlopen, copy only in T, nothing set", "not found", SAME, |cx| nothing_set(cx, Via::Dlopen)),
    scenario!("04-list-nothing-set", 4, "ld.so --list, copy only in T, nothing set", "not found", SAME, |cx| list_nothing_set(cx, List::Option)),
    scenario!("04-ldd-script-nothing-set", 4, "the sysroot's ldd script, copy only in T, nothing set", "not found", SAME, |cx| list_nothing_set(cx, List::Script)),
    scenario!("04-ldd-nothing-set", 4, "ldd (LD_TRACE_LOADED_OBJECTS=1 ld.so), copy only in T, nothing set", "not found", SAME, |cx| list_nothing_set(cx, List::Ldd)),
    scenario!("05-shim-runpath", 5, "dlopen from a lib with RUNPATH=C, FB=T", "compat", SAME, |cx| shim(cx, "libshim-runpath.so")),
    scenario!("06-shim-plain", 6, "dlopen from a lib without RUNPATH, FB=T", "driver", Some("not found"), |cx| shim(cx, "libshim-plain.so")),
    scenario!("07-needed-nvrm", 7, "DT_NEEDED compat libcuda dlopens libnvrm_* (only in T), FB=T", "compat; nvrm_mem=tegra; nvrm_gpu=tegra", Some("compat; nvrm_mem=missing; nvrm_gpu=missing"), |cx| nvrm(cx, Via::Needed)),
    scenario!("07-dlopen-nvrm", 7, "dlopened compat libcuda dlopens libnvrm_* (only in T), FB=T", "compat; nvrm_mem=tegra; nvrm_gpu=tegra", Some("compat; nvrm_mem=missing; nvrm_gpu=missing"), |cx| nvrm(cx, Via::Dlopen)),
    scenario!("08-needed-default-dir", 8, "DT_NEEDED, default dir beats FB=T", "system", SAME, |cx| default_dir(cx, Via::Needed)),
    scenario!("08-dlopen-default-dir", 8, "dlopen, default dir beats FB=T", "system", SAME, |cx| default_dir(cx, Via::Dlopen)),
    scenario!("09-needed-cache", 9, "DT_NEEDED, ld.so.cache entry beats FB=T", "cache", SAME, |cx| cache(cx, Via::Needed)),
    scenario!("09-dlopen-cache", 9, "dlopen, ld.so.cache entry beats FB=T", "cache", SAME, |cx| cache(cx, Via::Dlopen)),
    scenario!("10-needed-llp-empty", 10, "DT_NEEDED, LLP=A without a copy, FB=T: RUNPATH=C wins", "compat", SAME, |cx| llp_empty(cx, Via::Needed)),
    scenario!("10-dlopen-llp-empty", 10, "dlopen, LLP=A without a copy, FB=T: RUNPATH=C wins", "compat", SAME, |cx| llp_empty(cx, Via::Dlopen)),
    scenario!("11-already-loaded", 11, "loaded via RUNPATH=C, later dlopen from a lib without RUNPATH, FB=T", "compat, then the same map", SAME, already_loaded),
    scenario!("12-secure-dynamic", 12, "setuid dynamic program, FB=T", "not found; LD_FALLBACK_PATH removed", Some("not found; LD_FALLBACK_PATH kept"), |cx| secure(cx, "probe")),
    scenario!("12-secure-needed", 12, "setuid DT_NEEDED program, FB=T: as uid 65534 vs. without AT_SECURE", "secure: not found; not secure: driver", Some("secure: not found; not secure: not found"), secure_needed),
    scenario!("13-static-dlopen", 13, "static program dlopen, FB=T", "driver", Some("not found"), |cx| static_dlopen(cx, false)),
    scenario!("13-static-default-dir", 13, "static program dlopen, default dir beats FB=T", "system", SAME, |cx| static_dlopen(cx, true)),
    scenario!("13-static-secure", 13, "setuid static program dlopen, FB=T", "not found; LD_FALLBACK_PATH removed", Some("not found; LD_FALLBACK_PATH kept"), |cx| secure(cx, "probe-static")),
    scenario!("14-needed-nodefaultlib", 14, "DT_NEEDED from a -z nodefaultlib program, S and T, FB=T", "driver", Some("not found"), |cx| nodefaultlib(cx, "needed-nodeflib", &["needed"])),
    scenario!("14-dlopen-nodefaultlib", 14, "dlopen from a -z nodefaultlib program, S and T, FB=T", "driver", Some("not found"), |cx| nodefaultlib(cx, "probe-nodeflib", &["dlopen", CUDA])),
    scenario!("15-needed-inhibit-cache", 15, "DT_NEEDED under ld.so --inhibit-cache, S only in cache, FB=T", "driver", Some("not found"), |cx| inhibit_cache(cx, "needed", &["needed"])),
    scenario!("15-dlopen-inhibit-cache", 15, "dlopen under ld.so --inhibit-cache, S only in cache, FB=T", "driver", Some("not found"), |cx| inhibit_cache(cx, "probe", &["dlopen", CUDA])),
    scenario!("16-empty-entry", 16, "FB=\":T\" with a copy in the cwd", "driver", Some("not found"), |cx| empty_entries(cx, &[":", ""])),
    scenario!("16-semicolon-empty-entries", 16, "FB=\";;T;\" with a copy in the cwd", "driver", Some("not found"), |cx| empty_entries(cx, &[";;", ";"])),
    scenario!("16-only-empty-entries", 16, "FB=\"::\" with a copy in the cwd: never the cwd", "not found", SAME, only_empty_entries),
    scenario!("17-needed-origin", 17, "DT_NEEDED, FB='$ORIGIN/../fb'", "origin", Some("not found"), |cx| origin(cx, "needed", &["needed"])),
    scenario!("17-dlopen-origin", 17, "dlopen, FB='$ORIGIN/../fb'", "origin", Some("not found"), |cx| origin(cx, "probe", &["dlopen", CUDA])),
    scenario!("17-lib", 17, "dlopen, FB='/opt/$LIB/fb'", "dst", Some("not found"), |cx| dst(cx, "$LIB", &["lib64", "lib"])),
    scenario!("17-platform", 17, "dlopen, FB='/opt/$PLATFORM/fb'", "dst", Some("not found"), |cx| dst( cx, "$PLATFORM", &["x86_64", "haswell", "xeon_phi", "aarch64"] )),
    scenario!("18-needed-wrong-class", 18, "DT_NEEDED, FB=T32:T with an ELFCLASS32 copy first", "driver", Some("not found"), |cx| wrong_class(cx, Via::Needed)),
    scenario!("18-dlopen-wrong-class", 18, "dlopen, FB=T32:T with an ELFCLASS32 copy first", "driver", Some("not found"), |cx| wrong_class(cx, Via::Dlopen)),
    scenario!("19-needed-missing-dirs", 19, "DT_NEEDED, every FB dir missing", "not found", SAME, |cx| missing_dirs(cx, Via::Needed)),
    scenario!("19-dlopen-missing-dirs", 19, "dlopen, every FB dir missing", "not found", SAME, |cx| missing_dirs(cx, Via::Dlopen)),
    scenario!("19-many-entries", 19, "FB with 2000 missing dirs, then T", "driver", Some("not found"), many_entries),
    scenario!("19-long-value", 19, "FB with a 100 KiB missing dir, then T", "driver", Some("not found"), long_value),
    scenario!("20-needed-option-overrides", 20, "DT_NEEDED, ld.so --fallback-path T overrides FB=U", "driver", Some("ld.so: unrecognized option '--fallback-path'"), |cx| option_overrides(cx, "needed", &["needed"])),
    scenario!("20-dlopen-option-overrides", 20, "dlopen, ld.so --fallback-path T overrides FB=U", "driver", Some("ld.so: unrecognized option '--fallback-path'"), |cx| option_overrides(cx, "probe", &["dlopen", CUDA])),
    scenario!("21-debug-label", 21, "LD_DEBUG=libs labels the fallback search", "driver; search path=T (LD_FALLBACK_PATH)", Some("not found; no fallback search"), debug_label_env),
    scenario!("21-debug-label-option", 21, "LD_DEBUG=libs labels a --fallback-path search", "driver; search path=T (--fallback-path)", Some("ld.so: unrecognized option '--fallback-path'"), debug_label_option),
    scenario!("21-help", 21, "ld.so --help documents --fallback-path, lists FB after the system dirs", "--fallback-path documented; T listed after the system dirs", Some("--fallback-path not documented; T not listed"), help),
    scenario!("21-serinfo", 21, "dlinfo(RTLD_DI_SERINFO) lists FB last", "T listed last", Some("T not listed"), serinfo),
    scenario!("21-audit", 21, "LD_AUDIT la_objsearch sees the fallback candidate as LA_SER_LIBPATH", "driver; la_objsearch T/libcuda.so.1 flag=LA_SER_LIBPATH", Some("not found; la_objsearch never saw T/libcuda.so.1"), audit),
    scenario!("21-list", 21, "ld.so --list resolves through FB=T", "driver", Some("not found"), |cx| list(cx, List::Option)),
    scenario!("21-ldd-script", 21, "the patched build's own ldd script resolves through FB=T", "driver", Some("not found"), |cx| list(cx, List::Script)),
    scenario!("21-ldd", 21, "ldd (LD_TRACE_LOADED_OBJECTS=1 ld.so) resolves through FB=T", "driver", Some("not found"), |cx| list(cx, List::Ldd)),
    scenario!("22-dlmopen", 22, "dlmopen(LM_ID_NEWLM), FB=T", "driver", Some("not found"), |cx| dlmopen(cx, false)),
    scenario!("22-dlmopen-default-dir", 22, "dlmopen(LM_ID_NEWLM), default dir beats FB=T", "system", SAME, |cx| dlmopen(cx, true)),
    scenario!("J1-jetson-llp", 0, "Jetson: saxpy with LD_LIBRARY_PATH=tegra (the bug)", "fails: driver 11040 too old", SAME, |cx| jetson(cx, Some("LD_LIBRARY_PATH"))),
    scenario!("J2-jetson-nothing", 0, "Jetson: saxpy with no variable", "fails: compat 12020 without libnvrm_*", SAME, |cx| jetson(cx, None)),
    scenario!("J3-jetson-fallback", 0, "Jetson: saxpy with LD_FALLBACK_PATH=tegra (the fix)", "ok: compat 12020 with libnvrm_* from tegra", Some("fails: compat 12020 without libnvrm_*"), |cx| jetson(cx, Some("LD_FALLBACK_PATH"))),
];

pub fn find(id: &str) -> Option<&'static Scenario> {
    MATRIX.iter().find(|s| s.id == id)
}
