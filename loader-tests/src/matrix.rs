//! The contract's scenario table as code: each scenario builds a root, runs a probe and
//! says what it saw, in the words of the table's "expected" column.
//!
//! Names: C = cuda_compat dir in RUNPATH (`compat`), T = tegra driver dir (`driver`),
//! S = default dir or ld.so.cache entry (`system`, `cache`), FB = LD_FALLBACK_PATH,
//! LLP = LD_LIBRARY_PATH.

use anyhow::Result;

use crate::probe::{Output, Run};
use crate::root::{Ctx, Root};

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

const CUDA: &str = "libcuda.so.1";

/// How the probe asks for `libcuda.so.1`.
#[derive(Clone, Copy)]
enum Via {
    /// DT_NEEDED of the executable.
    Needed,
    /// `dlopen` from the executable.
    Dlopen,
}

impl Via {
    /// The probe for this way of loading, with C in its RUNPATH or without a RUNPATH.
    fn probe<'r>(self, root: &'r Root, runpath: bool) -> Run<'r> {
        match (self, runpath) {
            (Via::Needed, true) => root.probe("needed-runpath").arg("needed"),
            (Via::Needed, false) => root.probe("needed").arg("needed"),
            (Via::Dlopen, true) => root.probe("probe-runpath").args(&["dlopen", CUDA]),
            (Via::Dlopen, false) => root.probe("probe").args(&["dlopen", CUDA]),
        }
    }
}

fn seen(text: impl Into<String>) -> Result<Observed> {
    Ok(Observed::Seen(text.into()))
}

fn winner(out: Output) -> Result<Observed> {
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

pub const MATRIX: &[Scenario] = &[
    scenario!(
        "01-needed-bug",
        1,
        "DT_NEEDED, the bug: LLP=T outranks RUNPATH=C",
        "driver",
        SAME,
        |cx| bug(cx, Via::Needed)
    ),
    scenario!(
        "01-dlopen-bug",
        1,
        "dlopen, the bug: LLP=T outranks RUNPATH=C",
        "driver",
        SAME,
        |cx| bug(cx, Via::Dlopen)
    ),
    scenario!(
        "01-rpath-order",
        1,
        "DT_RPATH=C outranks LLP=T (order step 1), FB=T changes nothing",
        "compat",
        SAME,
        rpath_order
    ),
    scenario!(
        "02-needed-fix",
        2,
        "DT_NEEDED, the fix: FB=T, RUNPATH=C wins",
        "compat",
        SAME,
        |cx| fix(cx, Via::Needed)
    ),
    scenario!(
        "02-dlopen-fix",
        2,
        "dlopen, the fix: FB=T, RUNPATH=C wins",
        "compat",
        SAME,
        |cx| fix(cx, Via::Dlopen)
    ),
    scenario!(
        "03-needed-runpath-miss",
        3,
        "DT_NEEDED, RUNPATH without a copy falls back to T",
        "driver",
        Some("not found"),
        |cx| runpath_miss(cx, Via::Needed)
    ),
    scenario!(
        "03-dlopen-runpath-miss",
        3,
        "dlopen, RUNPATH without a copy falls back to T",
        "driver",
        Some("not found"),
        |cx| runpath_miss(cx, Via::Dlopen)
    ),
    scenario!(
        "04-needed-nothing-set",
        4,
        "DT_NEEDED, copy only in T, nothing set",
        "not found",
        SAME,
        |cx| nothing_set(cx, Via::Needed)
    ),
    scenario!(
        "04-dlopen-nothing-set",
        4,
        "dlopen, copy only in T, nothing set",
        "not found",
        SAME,
        |cx| nothing_set(cx, Via::Dlopen)
    ),
    scenario!(
        "04-list-nothing-set",
        4,
        "ld.so --list, copy only in T, nothing set",
        "not found",
        SAME,
        |cx| list_nothing_set(cx, List::Option)
    ),
    scenario!(
        "04-ldd-script-nothing-set",
        4,
        "the sysroot's ldd script, copy only in T, nothing set",
        "not found",
        SAME,
        |cx| list_nothing_set(cx, List::Script)
    ),
    scenario!(
        "04-ldd-nothing-set",
        4,
        "ldd (LD_TRACE_LOADED_OBJECTS=1 ld.so), copy only in T, nothing set",
        "not found",
        SAME,
        |cx| list_nothing_set(cx, List::Ldd)
    ),
    scenario!(
        "05-shim-runpath",
        5,
        "dlopen from a lib with RUNPATH=C, FB=T",
        "compat",
        SAME,
        |cx| shim(cx, "libshim-runpath.so")
    ),
    scenario!(
        "06-shim-plain",
        6,
        "dlopen from a lib without RUNPATH, FB=T",
        "driver",
        Some("not found"),
        |cx| shim(cx, "libshim-plain.so")
    ),
    scenario!(
        "07-needed-nvrm",
        7,
        "DT_NEEDED compat libcuda dlopens libnvrm_* (only in T), FB=T",
        "compat; nvrm_mem=tegra; nvrm_gpu=tegra",
        Some("compat; nvrm_mem=missing; nvrm_gpu=missing"),
        |cx| nvrm(cx, Via::Needed)
    ),
    scenario!(
        "07-dlopen-nvrm",
        7,
        "dlopened compat libcuda dlopens libnvrm_* (only in T), FB=T",
        "compat; nvrm_mem=tegra; nvrm_gpu=tegra",
        Some("compat; nvrm_mem=missing; nvrm_gpu=missing"),
        |cx| nvrm(cx, Via::Dlopen)
    ),
    scenario!(
        "08-needed-default-dir",
        8,
        "DT_NEEDED, default dir beats FB=T",
        "system",
        SAME,
        |cx| default_dir(cx, Via::Needed)
    ),
    scenario!(
        "08-dlopen-default-dir",
        8,
        "dlopen, default dir beats FB=T",
        "system",
        SAME,
        |cx| default_dir(cx, Via::Dlopen)
    ),
    scenario!(
        "09-needed-cache",
        9,
        "DT_NEEDED, ld.so.cache entry beats FB=T",
        "cache",
        SAME,
        |cx| cache(cx, Via::Needed)
    ),
    scenario!(
        "09-dlopen-cache",
        9,
        "dlopen, ld.so.cache entry beats FB=T",
        "cache",
        SAME,
        |cx| cache(cx, Via::Dlopen)
    ),
    scenario!(
        "10-needed-llp-empty",
        10,
        "DT_NEEDED, LLP=A without a copy, FB=T: RUNPATH=C wins",
        "compat",
        SAME,
        |cx| llp_empty(cx, Via::Needed)
    ),
    scenario!(
        "10-dlopen-llp-empty",
        10,
        "dlopen, LLP=A without a copy, FB=T: RUNPATH=C wins",
        "compat",
        SAME,
        |cx| llp_empty(cx, Via::Dlopen)
    ),
    scenario!(
        "11-already-loaded",
        11,
        "loaded via RUNPATH=C, later dlopen from a lib without RUNPATH, FB=T",
        "compat, then the same map",
        SAME,
        already_loaded
    ),
    scenario!(
        "12-secure-dynamic",
        12,
        "setuid dynamic program, FB=T",
        "not found; LD_FALLBACK_PATH removed",
        Some("not found; LD_FALLBACK_PATH kept"),
        |cx| secure(cx, "probe")
    ),
    scenario!(
        "12-secure-needed",
        12,
        "setuid DT_NEEDED program, FB=T: as uid 65534 vs. without AT_SECURE",
        "secure: not found; not secure: driver",
        Some("secure: not found; not secure: not found"),
        secure_needed
    ),
    scenario!(
        "13-static-dlopen",
        13,
        "static program dlopen, FB=T",
        "driver",
        Some("not found"),
        static_dlopen
    ),
    scenario!(
        "13-static-secure",
        13,
        "setuid static program dlopen, FB=T",
        "not found; LD_FALLBACK_PATH removed",
        Some("not found; LD_FALLBACK_PATH kept"),
        |cx| secure(cx, "probe-static")
    ),
    scenario!(
        "14-needed-nodefaultlib",
        14,
        "DT_NEEDED from a -z nodefaultlib program, S and T, FB=T",
        "driver",
        Some("not found"),
        |cx| nodefaultlib(cx, "needed-nodeflib", &["needed"])
    ),
    scenario!(
        "14-dlopen-nodefaultlib",
        14,
        "dlopen from a -z nodefaultlib program, S and T, FB=T",
        "driver",
        Some("not found"),
        |cx| nodefaultlib(cx, "probe-nodeflib", &["dlopen", CUDA])
    ),
    scenario!(
        "15-needed-inhibit-cache",
        15,
        "DT_NEEDED under ld.so --inhibit-cache, S only in cache, FB=T",
        "driver",
        Some("not found"),
        |cx| inhibit_cache(cx, "needed", &["needed"])
    ),
    scenario!(
        "15-dlopen-inhibit-cache",
        15,
        "dlopen under ld.so --inhibit-cache, S only in cache, FB=T",
        "driver",
        Some("not found"),
        |cx| inhibit_cache(cx, "probe", &["dlopen", CUDA])
    ),
    scenario!(
        "16-empty-entry",
        16,
        "FB=\":T\" with a copy in the cwd",
        "driver",
        Some("not found"),
        |cx| empty_entries(cx, &[":", ""])
    ),
    scenario!(
        "16-semicolon-empty-entries",
        16,
        "FB=\";;T;\" with a copy in the cwd",
        "driver",
        Some("not found"),
        |cx| empty_entries(cx, &[";;", ";"])
    ),
    scenario!(
        "16-only-empty-entries",
        16,
        "FB=\"::\" with a copy in the cwd: never the cwd",
        "not found",
        SAME,
        only_empty_entries
    ),
    scenario!(
        "17-needed-origin",
        17,
        "DT_NEEDED, FB='$ORIGIN/../fb'",
        "origin",
        Some("not found"),
        |cx| origin(cx, "needed", &["needed"])
    ),
    scenario!(
        "17-dlopen-origin",
        17,
        "dlopen, FB='$ORIGIN/../fb'",
        "origin",
        Some("not found"),
        |cx| origin(cx, "probe", &["dlopen", CUDA])
    ),
    scenario!(
        "17-lib",
        17,
        "dlopen, FB='/opt/$LIB/fb'",
        "dst",
        Some("not found"),
        |cx| dst(cx, "$LIB", &["lib64", "lib"])
    ),
    scenario!(
        "17-platform",
        17,
        "dlopen, FB='/opt/$PLATFORM/fb'",
        "dst",
        Some("not found"),
        |cx| dst(
            cx,
            "$PLATFORM",
            &["x86_64", "haswell", "xeon_phi", "aarch64"]
        )
    ),
    scenario!(
        "18-needed-wrong-class",
        18,
        "DT_NEEDED, FB=T32:T with an ELFCLASS32 copy first",
        "driver",
        Some("not found"),
        |cx| wrong_class(cx, Via::Needed)
    ),
    scenario!(
        "18-dlopen-wrong-class",
        18,
        "dlopen, FB=T32:T with an ELFCLASS32 copy first",
        "driver",
        Some("not found"),
        |cx| wrong_class(cx, Via::Dlopen)
    ),
    scenario!(
        "19-needed-missing-dirs",
        19,
        "DT_NEEDED, every FB dir missing",
        "not found",
        SAME,
        |cx| missing_dirs(cx, Via::Needed)
    ),
    scenario!(
        "19-dlopen-missing-dirs",
        19,
        "dlopen, every FB dir missing",
        "not found",
        SAME,
        |cx| missing_dirs(cx, Via::Dlopen)
    ),
    scenario!(
        "19-many-entries",
        19,
        "FB with 2000 missing dirs, then T",
        "driver",
        Some("not found"),
        many_entries
    ),
    scenario!(
        "19-long-value",
        19,
        "FB with a 100 KiB missing dir, then T",
        "driver",
        Some("not found"),
        long_value
    ),
    scenario!(
        "20-needed-option-overrides",
        20,
        "DT_NEEDED, ld.so --fallback-path T overrides FB=U",
        "driver",
        Some("ld.so: unrecognized option '--fallback-path'"),
        |cx| option_overrides(cx, "needed", &["needed"])
    ),
    scenario!(
        "20-dlopen-option-overrides",
        20,
        "dlopen, ld.so --fallback-path T overrides FB=U",
        "driver",
        Some("ld.so: unrecognized option '--fallback-path'"),
        |cx| option_overrides(cx, "probe", &["dlopen", CUDA])
    ),
    scenario!(
        "21-debug-label",
        21,
        "LD_DEBUG=libs labels the fallback search",
        "driver; search path=T (LD_FALLBACK_PATH)",
        Some("not found; no fallback search"),
        debug_label_env
    ),
    scenario!(
        "21-debug-label-option",
        21,
        "LD_DEBUG=libs labels a --fallback-path search",
        "driver; search path=T (--fallback-path)",
        Some("ld.so: unrecognized option '--fallback-path'"),
        debug_label_option
    ),
    scenario!(
        "21-help",
        21,
        "ld.so --help documents --fallback-path, lists FB after the system dirs",
        "--fallback-path documented; T listed after the system dirs",
        Some("--fallback-path not documented; T not listed"),
        help
    ),
    scenario!(
        "21-serinfo",
        21,
        "dlinfo(RTLD_DI_SERINFO) lists FB last",
        "T listed last",
        Some("T not listed"),
        serinfo
    ),
    scenario!(
        "21-audit",
        21,
        "LD_AUDIT la_objsearch sees the fallback candidate as LA_SER_LIBPATH",
        "driver; la_objsearch T/libcuda.so.1 flag=LA_SER_LIBPATH",
        Some("not found; la_objsearch never saw T/libcuda.so.1"),
        audit
    ),
    scenario!(
        "21-list",
        21,
        "ld.so --list resolves through FB=T",
        "driver",
        Some("not found"),
        |cx| list(cx, List::Option)
    ),
    scenario!(
        "21-ldd-script",
        21,
        "the patched build's own ldd script resolves through FB=T",
        "driver",
        Some("not found"),
        |cx| list(cx, List::Script)
    ),
    scenario!(
        "21-ldd",
        21,
        "ldd (LD_TRACE_LOADED_OBJECTS=1 ld.so) resolves through FB=T",
        "driver",
        Some("not found"),
        |cx| list(cx, List::Ldd)
    ),
    scenario!(
        "22-dlmopen",
        22,
        "dlmopen(LM_ID_NEWLM), FB=T",
        "driver",
        Some("not found"),
        dlmopen
    ),
    scenario!(
        "J1-jetson-llp",
        0,
        "Jetson: saxpy with LD_LIBRARY_PATH=tegra (the bug)",
        "fails: driver 11040 too old",
        SAME,
        |cx| jetson(cx, Some("LD_LIBRARY_PATH"))
    ),
    scenario!(
        "J2-jetson-nothing",
        0,
        "Jetson: saxpy with no variable",
        "fails: compat 12020 without libnvrm_*",
        SAME,
        |cx| jetson(cx, None)
    ),
    scenario!(
        "J3-jetson-fallback",
        0,
        "Jetson: saxpy with LD_FALLBACK_PATH=tegra (the fix)",
        "ok: compat 12020 with libnvrm_* from tegra",
        Some("fails: compat 12020 without libnvrm_*"),
        |cx| jetson(cx, Some("LD_FALLBACK_PATH"))
    ),
];

pub fn find(id: &str) -> Option<&'static Scenario> {
    MATRIX.iter().find(|s| s.id == id)
}

fn bug(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, true)
            .env("LD_LIBRARY_PATH", &l.tegra)
            .output()?,
    )
}

fn rpath_order(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    winner(
        root.probe("needed-rpath")
            .arg("needed")
            .env("LD_LIBRARY_PATH", &l.tegra)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn fix(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, true)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn runpath_miss(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.mkdir(&l.compat).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, true)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn nothing_set(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.mkdir(&l.compat).cuda("driver", &l.tegra);
    winner(via.probe(&root, true).output()?)
}

/// Two ways of listing a program's libraries: `ld.so --list PROG`, and what the `ldd` script
/// runs (`LD_TRACE_LOADED_OBJECTS=1 ld.so PROG`; the script itself needs bash, which a root
/// has not). They differ: `--list` stops at a missing library, `ldd` prints "not found".
#[derive(Clone, Copy)]
enum List {
    Option,
    Ldd,
    /// The sysroot's `/usr/bin/ldd`, run by the host's bash copied into the root.
    Script,
}

const NO_BASH: &str = "the ldd script needs bash, and the host has only an x86_64 bash (ldd's LD_TRACE_LOADED_OBJECTS run is checked instead)";

impl List {
    fn skipped(self, cx: &Ctx) -> Option<Observed> {
        match self {
            List::Script if cx.bench.qemu.is_some() => Some(Observed::Skipped(NO_BASH.into())),
            _ => None,
        }
    }

    fn run<'r>(self, root: &'r Root, program: &str) -> Run<'r> {
        match self {
            List::Script => root.command("/bin/bash").args(&["/usr/bin/ldd", program]),
            List::Option => root.ld_so().args(&["--list", program]),
            List::Ldd => root
                .ld_so()
                .arg(program)
                .env("LD_TRACE_LOADED_OBJECTS", "1"),
        }
    }
}

fn list_nothing_set(cx: &Ctx, how: List) -> Result<Observed> {
    if let Some(skip) = how.skipped(cx) {
        return Ok(skip);
    }
    let l = cx.layout;
    let mut root = cx.root();
    root.mkdir(&l.compat).cuda("driver", &l.tegra);
    if let List::Script = how {
        root.host_bash();
    }
    let bin = format!("{}/needed-runpath", l.bin);
    seen(how.run(&root, &bin).output()?.listed())
}

fn shim(cx: &Ctx, shim: &str) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    let lib = format!("{}/{shim}", l.shims);
    winner(
        root.probe("probe")
            .args(&["shim", &lib, CUDA])
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn nvrm(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat)
        .cuda("driver", &l.tegra)
        .nvrm(&l.tegra);
    let out = via
        .probe(&root, true)
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let Some(load) = out.loads().pop().filter(|_| out.code == Some(0)) else {
        return winner(out);
    };
    seen(format!(
        "{}; nvrm_mem={}; nvrm_gpu={}",
        out.name(&load),
        Output::nvrm_place(&load.nvrm_mem, &l.tegra),
        Output::nvrm_place(&load.nvrm_gpu, &l.tegra)
    ))
}

fn default_dir(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("system", &l.libdir).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, false)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn cache(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cache", &l.cached)
        .cuda("driver", &l.tegra)
        .ldconfig(&[&l.cached]);
    winner(
        via.probe(&root, false)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn llp_empty(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat)
        .cuda("driver", &l.tegra)
        .mkdir(&l.empty);
    winner(
        via.probe(&root, true)
            .env("LD_LIBRARY_PATH", &l.empty)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn already_loaded(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    let shim = format!("{}/libshim-plain.so", l.shims);
    let out = root
        .probe("needed-runpath")
        .args(&["needed", "shim", &shim, CUDA, "same"])
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let loads = out.loads();
    if out.code != Some(0) || loads.len() != 2 {
        return winner(out);
    }
    let same = if out.stdout.contains("same-map yes") {
        "the same map".to_string()
    } else {
        format!("a second copy: {}", out.name(&loads[1]))
    };
    seen(format!("{}, then {same}", out.name(&loads[0])))
}

const NOT_AS_ROOT: &str =
    "secure mode needs root: a setuid-root probe run as uid 65534 (run as root, as in CI)";
const NOT_UNDER_QEMU: &str = "secure mode cannot be reproduced under QEMU user mode: the kernel executes qemu, not the setuid program, so the guest loader never sees AT_SECURE";

fn secure(cx: &Ctx, probe: &str) -> Result<Observed> {
    if cx.bench.qemu.is_some() {
        return Ok(Observed::Skipped(NOT_UNDER_QEMU.into()));
    }
    if !crate::is_root() {
        return Ok(Observed::Skipped(NOT_AS_ROOT.into()));
    }
    let l = cx.layout;
    let mut root = cx.root();
    let setuid = format!("{}/{probe}-setuid", l.bin);
    root.cuda("driver", &l.tegra).setuid_copy(probe, &setuid);
    let out = root
        .command(&setuid)
        .args(&["secure", "env", "dlopen", CUDA])
        .env("LD_FALLBACK_PATH", &l.tegra)
        .secure()
        .output()?;
    if !out.stdout.contains("secure AT_SECURE=1") {
        return seen(format!("not in secure mode: {}", out.stdout.trim()));
    }
    seen(format!(
        "{}; LD_FALLBACK_PATH {}",
        out.winner(),
        out.fallback_env()
    ))
}

/// The same setuid `needed` binary, with FB=T, run as uid 65534 (AT_SECURE: the fallback is
/// ignored) and through bwrap (no_new_privs: not secure, the fallback is used).
fn secure_needed(cx: &Ctx) -> Result<Observed> {
    if cx.bench.qemu.is_some() {
        return Ok(Observed::Skipped(NOT_UNDER_QEMU.into()));
    }
    if !crate::is_root() {
        return Ok(Observed::Skipped(NOT_AS_ROOT.into()));
    }
    let l = cx.layout;
    let mut root = cx.root();
    let setuid = format!("{}/needed-setuid", l.bin);
    root.cuda("driver", &l.tegra).setuid_copy("needed", &setuid);
    let plain = root
        .command(&setuid)
        .arg("needed")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let secure = root
        .command(&setuid)
        .arg("needed")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .secure()
        .output()?;
    seen(format!(
        "secure: {}; not secure: {}",
        secure.winner(),
        plain.winner()
    ))
}

fn static_dlopen(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    winner(
        root.probe("probe-static")
            .args(&["dlopen", CUDA])
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn nodefaultlib(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    // In libdir (not slibdir, which the probe has in its RUNPATH to find libc.so.6) and,
    // through ldconfig's default dirs, in the cache: both skipped for DF_1_NODEFLIB.
    root.cuda("system", &l.libdir)
        .cuda("driver", &l.tegra)
        .ldconfig(&[]);
    winner(
        root.probe(probe)
            .args(args)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

fn inhibit_cache(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cache", &l.cached)
        .cuda("driver", &l.tegra)
        .ldconfig(&[&l.cached]);
    let bin = format!("{}/{probe}", l.bin);
    winner(
        root.ld_so()
            .args(&["--inhibit-cache", &bin])
            .args(args)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

/// `sep_before` + T + `sep_after`, with a copy in the cwd that an empty entry would find.
fn empty_entries(cx: &Ctx, around: &[&str; 2]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cwd", &l.cwd).cuda("driver", &l.tegra);
    let value = format!("{}{}{}", around[0], l.tegra, around[1]);
    winner(
        root.probe("probe")
            .args(&["dlopen", CUDA])
            .env("LD_FALLBACK_PATH", &value)
            .output()?,
    )
}

fn only_empty_entries(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cwd", &l.cwd);
    winner(
        root.probe("probe")
            .args(&["dlopen", CUDA])
            .env("LD_FALLBACK_PATH", "::")
            .output()?,
    )
}

fn origin(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let mut root = cx.root();
    root.fixture(probe, &format!("/opt/app/bin/{probe}"))
        .cuda("origin", "/opt/app/fb");
    winner(
        root.command(&format!("/opt/app/bin/{probe}"))
            .args(args)
            .env("LD_FALLBACK_PATH", "$ORIGIN/../fb")
            .output()?,
    )
}

/// FB='/opt/<token>/fb' with a copy in each directory the token may expand to (which one
/// depends on the target and, for `$PLATFORM` on x86_64, on the CPU): that one is found only
/// if the token is expanded.
fn dst(cx: &Ctx, token: &str, expansions: &[&str]) -> Result<Observed> {
    let mut root = cx.root();
    for value in expansions {
        root.cuda("dst", &format!("/opt/{value}/fb"));
    }
    winner(
        Via::Dlopen
            .probe(&root, false)
            .env("LD_FALLBACK_PATH", &format!("/opt/{token}/fb"))
            .output()?,
    )
}

fn wrong_class(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda32(&l.tegra32).cuda("driver", &l.tegra);
    let value = format!("{}:{}", l.tegra32, l.tegra);
    winner(
        via.probe(&root, false)
            .env("LD_FALLBACK_PATH", &value)
            .output()?,
    )
}

/// Every fallback dir missing. The loader marks a search list whose dirs are all missing as
/// unusable, which must not write to the RELRO-protected fallback list: repeated searches
/// (dlopen twice before the final one) would crash there.
fn missing_dirs(cx: &Ctx, via: Via) -> Result<Observed> {
    let root = cx.root();
    let run = match via {
        Via::Needed => via.probe(&root, false),
        Via::Dlopen => {
            root.probe("probe")
                .args(&["try", CUDA, "try", "libnvrm_mem.so", "dlopen", CUDA])
        }
    };
    winner(
        run.env("LD_FALLBACK_PATH", "/nope:/nope/too:/opt/nope")
            .output()?,
    )
}

fn many_entries(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    let mut value: Vec<String> = (0..2000).map(|i| format!("/nope/{i}")).collect();
    value.push(l.tegra.clone());
    winner(
        Via::Dlopen
            .probe(&root, false)
            .env("LD_FALLBACK_PATH", &value.join(":"))
            .output()?,
    )
}

fn long_value(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    // Below the kernel's 128 KiB limit for one environment string.
    let value = format!("/{}:{}", "x".repeat(100 * 1024), l.tegra);
    winner(
        Via::Dlopen
            .probe(&root, false)
            .env("LD_FALLBACK_PATH", &value)
            .output()?,
    )
}

fn option_overrides(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra).cuda("other", &l.other);
    let bin = format!("{}/{probe}", l.bin);
    let out = root
        .ld_so()
        .args(&["--fallback-path", &l.tegra, &bin, "env"])
        .args(args)
        .env("LD_FALLBACK_PATH", &l.other)
        .output()?;
    // Like --library-path, the option applies to this run only: the environment (what child
    // processes inherit) keeps the variable as it was.
    let environ = format!("env LD_FALLBACK_PATH={}\n", l.other);
    if out.code == Some(0) && !out.stdout.contains(&environ) {
        return seen(format!(
            "{}; environ changed: {}",
            out.winner(),
            out.stdout.trim()
        ));
    }
    winner(out)
}

/// The `search path=...` line of an `LD_DEBUG=libs` trace that searched `dir`, by its label.
fn search_label(trace: &str, dir: &str) -> Option<String> {
    trace.lines().find_map(|line| {
        let rest = line.split_once("search path=")?.1;
        let (dirs, label) = rest.split_once('\t')?;
        let listed = dirs.split(':').any(|d| d == dir);
        listed.then(|| label.trim().to_string())
    })
}

fn debug_label(out: &Output, dir: &str) -> String {
    match search_label(&out.stderr, dir) {
        Some(label) => format!("{}; search path=T {label}", out.winner()),
        None => format!("{}; no fallback search", out.winner()),
    }
}

fn debug_label_env(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    let out = Via::Dlopen
        .probe(&root, false)
        .env("LD_FALLBACK_PATH", &l.tegra)
        .env("LD_DEBUG", "libs")
        .output()?;
    seen(debug_label(&out, &l.tegra))
}

fn debug_label_option(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    let bin = format!("{}/probe", l.bin);
    let out = root
        .ld_so()
        .args(&["--fallback-path", &l.tegra, &bin, "dlopen", CUDA])
        .env("LD_DEBUG", "libs")
        .output()?;
    if out.code != Some(0) && !out.stderr.contains("search path=") {
        return winner(out);
    }
    seen(debug_label(&out, &l.tegra))
}

fn help(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let root = cx.root();
    let out = root
        .ld_so()
        .arg("--help")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let documented = if out.stdout.contains("--fallback-path") {
        "--fallback-path documented"
    } else {
        "--fallback-path not documented"
    };
    let lines: Vec<&str> = out.stdout.lines().collect();
    let position = |pred: &dyn Fn(&str) -> bool| lines.iter().rposition(|line| pred(line));
    let system = position(&|line| line.contains("(system search path)"));
    let fallback = position(&|line| line.trim_start().starts_with(l.tegra.as_str()));
    let listed = match (system, fallback) {
        (_, None) => "T not listed",
        (None, Some(_)) => "T listed, system dirs not listed",
        (Some(s), Some(f)) if f > s => "T listed after the system dirs",
        (Some(_), Some(_)) => "T listed before the system dirs",
    };
    seen(format!("{documented}; {listed}"))
}

fn serinfo(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let root = cx.root();
    let out = root
        .probe("probe")
        .arg("serinfo")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    if out.code != Some(0) {
        return winner(out);
    }
    let dirs: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("serinfo dir=")?.split(' ').next())
        .collect();
    let tegra = l.tegra.as_str();
    seen(match dirs.iter().position(|d| *d == tegra) {
        None => "T not listed".to_string(),
        Some(i) if i + 1 == dirs.len() => "T listed last".to_string(),
        Some(_) => format!("T listed, but not last: {}", dirs.join(":")),
    })
}

fn audit(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    let out = Via::Dlopen
        .probe(&root, false)
        .env("LD_FALLBACK_PATH", &l.tegra)
        .env("LD_AUDIT", &format!("{}/libaudit.so", l.shims))
        .output()?;
    let candidate = format!("name={}/{CUDA}", l.tegra);
    let flag = out.stdout.lines().find_map(|line| {
        let rest = line.strip_prefix("audit objsearch flag=")?;
        let (flag, name) = rest.split_once(' ')?;
        (name == candidate).then(|| flag.to_string())
    });
    seen(match flag {
        Some(flag) => format!("{}; la_objsearch T/{CUDA} flag={flag}", out.winner()),
        None => format!("{}; la_objsearch never saw T/{CUDA}", out.winner()),
    })
}

fn list(cx: &Ctx, how: List) -> Result<Observed> {
    if let Some(skip) = how.skipped(cx) {
        return Ok(skip);
    }
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    if let List::Script = how {
        root.host_bash();
    }
    let bin = format!("{}/needed", l.bin);
    seen(
        how.run(&root, &bin)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?
            .listed(),
    )
}

fn dlmopen(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    winner(
        root.probe("probe")
            .args(&["dlmopen", CUDA])
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

/// The user story in a Jetpack-like root: the tegra driver dir with an old `libcuda.so.1`
/// and `libnvrm_*`, a Nix-store cuda_compat with the new one, and an app whose CUDA runtime
/// has cuda_compat in its RUNPATH. `variable`, if any, is set to the tegra dir.
fn jetson(cx: &Ctx, variable: Option<&str>) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra)
        .nvrm(&l.tegra)
        .cuda("compat", &l.nix_compat)
        .fixture(
            "libcudart.so.12",
            &format!("{}/libcudart.so.12", l.nix_cudart),
        )
        .fixture(
            "saxpy",
            "/nix/store/3m1l7cq7a1q2xs4y8cfl9vf3a0bd7wgd-saxpy/bin/saxpy",
        );
    let mut run = root.command("/nix/store/3m1l7cq7a1q2xs4y8cfl9vf3a0bd7wgd-saxpy/bin/saxpy");
    if let Some(variable) = variable {
        run = run.env(variable, &l.tegra);
    }
    let out = run.output()?;
    let Some(report) = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("saxpy driver="))
    else {
        return winner(out);
    };
    let field = |key: &str| {
        report
            .split_whitespace()
            .find_map(|f| f.strip_prefix(key))
            .unwrap_or("?")
            .to_string()
    };
    let version = report.split_whitespace().next().unwrap_or("?");
    let (role, mem, gpu) = (field("role="), field("nvrm_mem="), field("nvrm_gpu="));
    let nvrm = match (
        Output::nvrm_place(&mem, &l.tegra).as_str(),
        Output::nvrm_place(&gpu, &l.tegra).as_str(),
    ) {
        ("tegra", "tegra") => "with libnvrm_* from tegra".to_string(),
        ("missing", "missing") => "without libnvrm_*".to_string(),
        (m, g) => format!("with libnvrm_mem {m}, libnvrm_gpu {g}"),
    };
    seen(if out.code == Some(0) && out.stdout.contains("saxpy ok") {
        format!("ok: {role} {version} {nvrm}")
    } else if out.stdout.contains("insufficient") {
        format!("fails: {role} {version} too old")
    } else {
        format!("fails: {role} {version} {nvrm}")
    })
}
