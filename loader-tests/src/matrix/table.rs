//! The matrix: every scenario of docs/contract.md, in the order of its rows.
//!
//! Read a row as: put these copies there, run this, with these variables; the patched loader
//! must give `expected`; the unpatched one gives the same (`Same`) or something else
//! (`Gives`), which is how the matrix shows it can fail. An answer is the `libcuda.so.1` copy
//! that won, by its role (`Wins(Role::Compat)`: C, `Driver`: T, `System`: a default dir,
//! `Cache`: ld.so.cache), `NotFound`, or, where a scenario reads more, its words (`says`).

use super::jetson::jetson;
use super::real::{real, RealCase};
use super::row::{fb, llp, Cmd::*, Dir::*, List, Look::*, Put::*, Row, Value};
use super::special::*;
use super::Answer::{NotFound, Wins};
use super::Contract::{Row as R, Story};
use super::Unpatched::{Gives, Same};
use super::{says, Condition, EnvVar, How, NotApplicable, Scenario, CUDA};
use crate::fixtures::Role;

/// The probes and what they ask for (`c-fixtures/probe.c`): DT_NEEDED or dlopen of
/// `libcuda.so.1`, with C in the probe's RUNPATH or without a RUNPATH.
const NEEDED_RUNPATH: super::Cmd = Probe("needed-runpath", &["needed"]);
const DLOPEN_RUNPATH: super::Cmd = Probe("probe-runpath", &["dlopen", CUDA]);
const NEEDED: super::Cmd = Probe("needed", &["needed"]);
const DLOPEN: super::Cmd = Probe("probe", &["dlopen", CUDA]);

const FB_T: &[EnvVar] = &[fb("{T}")];
/// The two copies of the user story: the newer one in C, the board's older one in T.
const C_AND_T: &[super::Put] = &[Cuda(Role::Compat, Compat), Cuda(Role::Driver, Tegra)];

const fn row(put: &'static [super::Put], run: super::Cmd, env: &'static [EnvVar]) -> How {
    How::Row(Row {
        put,
        run,
        env,
        look: Winner,
    })
}

const fn looking(
    look: super::Look,
    put: &'static [super::Put],
    run: super::Cmd,
    env: &'static [EnvVar],
) -> How {
    How::Row(Row {
        put,
        run,
        env,
        look,
    })
}

const fn code(run: fn(&crate::root::Ctx) -> anyhow::Result<super::Observed>) -> How {
    How::Code(run)
}

/// The ldd script is a bash script: under QEMU user mode it needs a bash of the target's
/// machine, which the host does not have (and no binfmt_misc registration to run one). What
/// the script runs, `LD_TRACE_LOADED_OBJECTS=1 ld.so` (04-ldd, 21-ldd), is checked there
/// instead.
const NO_BASH_UNDER_QEMU: NotApplicable = NotApplicable {
    when: Condition::Emulated,
    why: "the ldd script needs a bash that can exec the target's loader, which QEMU user mode does not give (ldd's LD_TRACE_LOADED_OBJECTS run, 04-ldd/21-ldd, is checked instead)",
};

/// Fields every scenario shares unless it says otherwise.
const DEFAULT: Scenario = Scenario {
    id: "",
    contract: Story,
    title: "",
    expected: says(""),
    unpatched: Same,
    needs_root: false,
    needs_archive: false,
    not_applicable: None,
    how: How::Code(|_| unreachable!("a scenario without a way to run")),
};

// Every row ends in `..DEFAULT`, also those that set every field, so that rows read alike.
#[allow(clippy::needless_update)]
#[rustfmt::skip]
pub const MATRIX: &[Scenario] = &[
    // 1. The bug: LD_LIBRARY_PATH outranks DT_RUNPATH. DT_RPATH outranks both.
    Scenario { id: "01-needed-bug", contract: R(1), title: "DT_NEEDED, the bug: LLP=T outranks RUNPATH=C",
        how: row(C_AND_T, NEEDED_RUNPATH, &[llp("{T}")]), expected: Wins(Role::Driver), ..DEFAULT },
    Scenario { id: "01-dlopen-bug", contract: R(1), title: "dlopen, the bug: LLP=T outranks RUNPATH=C",
        how: row(C_AND_T, DLOPEN_RUNPATH, &[llp("{T}")]), expected: Wins(Role::Driver), ..DEFAULT },
    Scenario { id: "01-real-llp-bug", contract: R(1), title: "NVIDIA's libcudart (RUNPATH=C) and libcuda.so.1 in C and T, LLP=T: the driver dir wins",
        how: code(|cx| real(cx, RealCase { copy_in_compat: true, variable: "LD_LIBRARY_PATH" })), needs_archive: true,
        expected: says("driver, version 12020"), ..DEFAULT },
    Scenario { id: "01-rpath-order", contract: R(1), title: "DT_RPATH=C outranks LLP=T (order step 1), FB=T changes nothing",
        how: row(C_AND_T, Probe("needed-rpath", &["needed"]), &[llp("{T}"), fb("{T}")]), expected: Wins(Role::Compat), ..DEFAULT },

    // 2. The fix: with FB=T the RUNPATH copy still wins.
    Scenario { id: "02-needed-fix", contract: R(2), title: "DT_NEEDED, the fix: FB=T, RUNPATH=C wins",
        how: row(C_AND_T, NEEDED_RUNPATH, FB_T), expected: Wins(Role::Compat), ..DEFAULT },
    Scenario { id: "02-dlopen-fix", contract: R(2), title: "dlopen, the fix: FB=T, RUNPATH=C wins",
        how: row(C_AND_T, DLOPEN_RUNPATH, FB_T), expected: Wins(Role::Compat), ..DEFAULT },
    Scenario { id: "02-real-runpath-beats-fallback", contract: R(2), title: "NVIDIA's libcudart (RUNPATH=C) and libcuda.so.1 in C and T, FB=T: the RUNPATH copy wins",
        how: code(|cx| real(cx, RealCase { copy_in_compat: true, variable: "LD_FALLBACK_PATH" })), needs_archive: true,
        expected: says("compat, version 12020"), ..DEFAULT },

    // 3. A RUNPATH without a copy falls back to T.
    Scenario { id: "03-needed-runpath-miss", contract: R(3), title: "DT_NEEDED, RUNPATH without a copy falls back to T",
        how: row(&[Mkdir(Compat), Cuda(Role::Driver, Tegra)], NEEDED_RUNPATH, FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "03-dlopen-runpath-miss", contract: R(3), title: "dlopen, RUNPATH without a copy falls back to T",
        how: row(&[Mkdir(Compat), Cuda(Role::Driver, Tegra)], DLOPEN_RUNPATH, FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "03-real-fallback-only", contract: R(3), title: "NVIDIA's libcudart (RUNPATH=C, empty) and libcuda.so.1 only in T, FB=T: found through the fallback",
        how: code(|cx| real(cx, RealCase { copy_in_compat: false, variable: "LD_FALLBACK_PATH" })), needs_archive: true,
        expected: says("driver, version 12020"), unpatched: Gives(says("no driver, version 0")), ..DEFAULT },

    // 4. Nothing set: a copy only in T is not found, also by the listings.
    Scenario { id: "04-needed-nothing-set", contract: R(4), title: "DT_NEEDED, copy only in T, nothing set",
        how: row(&[Mkdir(Compat), Cuda(Role::Driver, Tegra)], NEEDED_RUNPATH, &[]), expected: NotFound, ..DEFAULT },
    Scenario { id: "04-dlopen-nothing-set", contract: R(4), title: "dlopen, copy only in T, nothing set",
        how: row(&[Mkdir(Compat), Cuda(Role::Driver, Tegra)], DLOPEN_RUNPATH, &[]), expected: NotFound, ..DEFAULT },
    Scenario { id: "04-list-nothing-set", contract: R(4), title: "ld.so --list, copy only in T, nothing set",
        how: looking(Listed, &[Mkdir(Compat), Cuda(Role::Driver, Tegra)], Listing(List::Option, "needed-runpath"), &[]), expected: NotFound, ..DEFAULT },
    Scenario { id: "04-ldd-script-nothing-set", contract: R(4), title: "the sysroot's ldd script, copy only in T, nothing set",
        how: looking(Listed, &[Mkdir(Compat), Cuda(Role::Driver, Tegra), HostBash], Listing(List::Script, "needed-runpath"), &[]), expected: NotFound,
        not_applicable: Some(NO_BASH_UNDER_QEMU), ..DEFAULT },
    Scenario { id: "04-ldd-nothing-set", contract: R(4), title: "ldd (LD_TRACE_LOADED_OBJECTS=1 ld.so), copy only in T, nothing set",
        how: looking(Listed, &[Mkdir(Compat), Cuda(Role::Driver, Tegra)], Listing(List::Ldd, "needed-runpath"), &[]), expected: NotFound, ..DEFAULT },

    // 5, 6. dlopen from a library: its RUNPATH counts, and without one the fallback is reached.
    Scenario { id: "05-shim-runpath", contract: R(5), title: "dlopen from a lib with RUNPATH=C, FB=T",
        how: row(C_AND_T, Probe("probe", &["shim", "{shims}/libshim-runpath.so", CUDA]), FB_T), expected: Wins(Role::Compat), ..DEFAULT },
    Scenario { id: "06-shim-plain", contract: R(6), title: "dlopen from a lib without RUNPATH, FB=T",
        how: row(C_AND_T, Probe("probe", &["shim", "{shims}/libshim-plain.so", CUDA]), FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },

    // 7. The compat libcuda's own dlopens of libnvrm_* (only in T) fall through to T.
    Scenario { id: "07-needed-nvrm", contract: R(7), title: "DT_NEEDED compat libcuda dlopens libnvrm_* (only in T), FB=T",
        how: looking(NvrmPlaces, &[Cuda(Role::Compat, Compat), Cuda(Role::Driver, Tegra), Nvrm(Tegra)], NEEDED_RUNPATH, FB_T),
        expected: says("compat; nvrm_mem=tegra; nvrm_gpu=tegra"), unpatched: Gives(says("compat; nvrm_mem=missing; nvrm_gpu=missing")), ..DEFAULT },
    Scenario { id: "07-dlopen-nvrm", contract: R(7), title: "dlopened compat libcuda dlopens libnvrm_* (only in T), FB=T",
        how: looking(NvrmPlaces, &[Cuda(Role::Compat, Compat), Cuda(Role::Driver, Tegra), Nvrm(Tegra)], DLOPEN_RUNPATH, FB_T),
        expected: says("compat; nvrm_mem=tegra; nvrm_gpu=tegra"), unpatched: Gives(says("compat; nvrm_mem=missing; nvrm_gpu=missing")), ..DEFAULT },

    // 8, 9. The fallback is strictly last: default dirs and ld.so.cache beat it.
    Scenario { id: "08-needed-default-dir", contract: R(8), title: "DT_NEEDED, default dir beats FB=T",
        how: row(&[Cuda(Role::System, Default), Cuda(Role::Driver, Tegra)], NEEDED, FB_T), expected: Wins(Role::System), ..DEFAULT },
    Scenario { id: "08-dlopen-default-dir", contract: R(8), title: "dlopen, default dir beats FB=T",
        how: row(&[Cuda(Role::System, Default), Cuda(Role::Driver, Tegra)], DLOPEN, FB_T), expected: Wins(Role::System), ..DEFAULT },
    Scenario { id: "09-needed-cache", contract: R(9), title: "DT_NEEDED, ld.so.cache entry beats FB=T",
        how: row(&[Cuda(Role::Cache, Cached), Cuda(Role::Driver, Tegra), Cache(&[Cached])], NEEDED, FB_T), expected: Wins(Role::Cache), ..DEFAULT },
    Scenario { id: "09-dlopen-cache", contract: R(9), title: "dlopen, ld.so.cache entry beats FB=T",
        how: row(&[Cuda(Role::Cache, Cached), Cuda(Role::Driver, Tegra), Cache(&[Cached])], DLOPEN, FB_T), expected: Wins(Role::Cache), ..DEFAULT },

    // 10. An LD_LIBRARY_PATH dir without a copy does not disturb the RUNPATH copy winning.
    Scenario { id: "10-needed-llp-empty", contract: R(10), title: "DT_NEEDED, LLP=A without a copy, FB=T: RUNPATH=C wins",
        how: row(&[Cuda(Role::Compat, Compat), Cuda(Role::Driver, Tegra), Mkdir(Empty)], NEEDED_RUNPATH, &[llp("{A}"), fb("{T}")]), expected: Wins(Role::Compat), ..DEFAULT },
    Scenario { id: "10-dlopen-llp-empty", contract: R(10), title: "dlopen, LLP=A without a copy, FB=T: RUNPATH=C wins",
        how: row(&[Cuda(Role::Compat, Compat), Cuda(Role::Driver, Tegra), Mkdir(Empty)], DLOPEN_RUNPATH, &[llp("{A}"), fb("{T}")]), expected: Wins(Role::Compat), ..DEFAULT },

    // 11. A loaded soname is reused; the fallback never loads a second copy.
    Scenario { id: "11-already-loaded", contract: R(11), title: "loaded via RUNPATH=C, later dlopen from a lib without RUNPATH, FB=T",
        how: looking(SameMap, C_AND_T, Probe("needed-runpath", &["needed", "shim", "{shims}/libshim-plain.so", CUDA, "same"]), FB_T),
        expected: says("compat, then the same map"), ..DEFAULT },

    // 12. Secure mode: ignored, and removed from the environment.
    Scenario { id: "12-secure-dynamic", contract: R(12), title: "setuid dynamic program, FB=T",
        how: code(|cx| secure(cx, "probe")), needs_root: true,
        expected: says("not found; LD_FALLBACK_PATH removed"), unpatched: Gives(says("not found; LD_FALLBACK_PATH kept")), ..DEFAULT },
    Scenario { id: "12-secure-needed", contract: R(12), title: "setuid DT_NEEDED program, FB=T: as uid 65534 vs. without AT_SECURE",
        how: code(secure_needed), needs_root: true,
        expected: says("secure: not found; not secure: driver"), unpatched: Gives(says("secure: not found; not secure: not found")), ..DEFAULT },

    // 13. Static programs' dlopen, after the default dirs; secure mode too.
    Scenario { id: "13-static-dlopen", contract: R(13), title: "static program dlopen, FB=T",
        how: row(&[Cuda(Role::Driver, Tegra)], Probe("probe-static", &["dlopen", CUDA]), FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "13-static-default-dir", contract: R(13), title: "static program dlopen, default dir beats FB=T",
        how: row(&[Cuda(Role::Driver, Tegra), Cuda(Role::System, Default)], Probe("probe-static", &["dlopen", CUDA]), FB_T), expected: Wins(Role::System), ..DEFAULT },
    Scenario { id: "13-static-secure", contract: R(13), title: "setuid static program dlopen, FB=T",
        how: code(|cx| secure(cx, "probe-static")), needs_root: true,
        expected: says("not found; LD_FALLBACK_PATH removed"), unpatched: Gives(says("not found; LD_FALLBACK_PATH kept")), ..DEFAULT },

    // 14, 15. -z nodefaultlib and --inhibit-cache skip the cache and default dirs, not FB.
    // The system copy sits in libdir (slibdir is in the nodeflib probes' RUNPATH, for libc)
    // and, through ldconfig's default dirs, in the cache.
    Scenario { id: "14-needed-nodefaultlib", contract: R(14), title: "DT_NEEDED from a -z nodefaultlib program, S and T, FB=T",
        how: row(&[Cuda(Role::System, Default), Cuda(Role::Driver, Tegra), Cache(&[])], Probe("needed-nodeflib", &["needed"]), FB_T),
        expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "14-dlopen-nodefaultlib", contract: R(14), title: "dlopen from a -z nodefaultlib program, S and T, FB=T",
        how: row(&[Cuda(Role::System, Default), Cuda(Role::Driver, Tegra), Cache(&[])], Probe("probe-nodeflib", &["dlopen", CUDA]), FB_T),
        expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "15-needed-inhibit-cache", contract: R(15), title: "DT_NEEDED under ld.so --inhibit-cache, S only in cache, FB=T",
        how: row(&[Cuda(Role::Cache, Cached), Cuda(Role::Driver, Tegra), Cache(&[Cached])], LdSo(&["--inhibit-cache"], "needed", &["needed"]), FB_T),
        expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "15-dlopen-inhibit-cache", contract: R(15), title: "dlopen under ld.so --inhibit-cache, S only in cache, FB=T",
        how: row(&[Cuda(Role::Cache, Cached), Cuda(Role::Driver, Tegra), Cache(&[Cached])], LdSo(&["--inhibit-cache"], "probe", &["dlopen", CUDA]), FB_T),
        expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },

    // 16. Empty and relative entries are ignored: never the current directory, nor a
    // directory named relative to it (also after $LIB expands). The copies reached through
    // the working directory report "cwd"; an absolute entry after them shows that the list
    // itself is searched, so the unpatched loader (no list at all) fails these rows.
    Scenario { id: "16-empty-entry", contract: R(16), title: "FB=\":T\" with a copy in the cwd",
        how: row(&[Cuda(Role::Cwd, Cwd), Cuda(Role::Driver, Tegra)], DLOPEN, &[fb(":{T}")]), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "16-semicolon-empty-entries", contract: R(16), title: "FB=\";;T;\" with a copy in the cwd",
        how: row(&[Cuda(Role::Cwd, Cwd), Cuda(Role::Driver, Tegra)], DLOPEN, &[fb(";;{T};")]), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "16-only-empty-entries", contract: R(16), title: "FB=\"::\" with a copy in the cwd: never the cwd",
        how: row(&[Cuda(Role::Cwd, Cwd)], DLOPEN, &[fb("::")]), expected: NotFound, ..DEFAULT },
    Scenario { id: "16-dot-entry", contract: R(16), title: "FB=\".:T\" with a copy in the cwd",
        how: row(&[Cuda(Role::Cwd, Cwd), Cuda(Role::Driver, Tegra)], DLOPEN, &[fb(".:{T}")]), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "16-relative-entry", contract: R(16), title: "FB=\"lib:T\" with a copy in the cwd's lib/",
        how: row(&[Cuda(Role::Cwd, InCwd("lib")), Cuda(Role::Driver, Tegra)], DLOPEN, &[fb("lib:{T}")]), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "16-relative-after-expansion", contract: R(16), title: "FB='$LIB:T' with a copy in the cwd's lib64/ and lib/",
        how: row(&[Cuda(Role::Cwd, InCwd("lib64")), Cuda(Role::Cwd, InCwd("lib")), Cuda(Role::Driver, Tegra)], DLOPEN, &[fb("$LIB:{T}")]), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "16-only-relative-entries", contract: R(16), title: "FB=\".:lib\" with a copy in the cwd and its lib/: never either",
        how: row(&[Cuda(Role::Cwd, Cwd), Cuda(Role::Cwd, InCwd("lib"))], DLOPEN, &[fb(".:lib")]), expected: NotFound, ..DEFAULT },

    // 17. $ORIGIN, $LIB and $PLATFORM expand (against the program). A copy sits in every
    // directory the token may expand to (which one depends on the target and, for $PLATFORM
    // on x86_64, on the CPU): it is found only if the token is expanded.
    Scenario { id: "17-needed-origin", contract: R(17), title: "DT_NEEDED, FB='$ORIGIN/../fb'",
        how: row(&[ProbeAt("needed", "/opt/app/bin/needed"), Cuda(Role::Origin, At("/opt/app/fb"))], Program("/opt/app/bin/needed", &["needed"]), &[fb("$ORIGIN/../fb")]),
        expected: Wins(Role::Origin), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "17-dlopen-origin", contract: R(17), title: "dlopen, FB='$ORIGIN/../fb'",
        how: row(&[ProbeAt("probe", "/opt/app/bin/probe"), Cuda(Role::Origin, At("/opt/app/fb"))], Program("/opt/app/bin/probe", &["dlopen", CUDA]), &[fb("$ORIGIN/../fb")]),
        expected: Wins(Role::Origin), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "17-lib", contract: R(17), title: "dlopen, FB='/opt/$LIB/fb'",
        how: row(&[Cuda(Role::Dst, At("/opt/lib64/fb")), Cuda(Role::Dst, At("/opt/lib/fb"))], DLOPEN, &[fb("/opt/$LIB/fb")]),
        expected: Wins(Role::Dst), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "17-platform", contract: R(17), title: "dlopen, FB='/opt/$PLATFORM/fb'",
        how: row(&[Cuda(Role::Dst, At("/opt/x86_64/fb")), Cuda(Role::Dst, At("/opt/haswell/fb")), Cuda(Role::Dst, At("/opt/xeon_phi/fb")), Cuda(Role::Dst, At("/opt/aarch64/fb"))], DLOPEN, &[fb("/opt/$PLATFORM/fb")]),
        expected: Wins(Role::Dst), unpatched: Gives(NotFound), ..DEFAULT },

    // 18. A copy of the wrong ELF class in an earlier fallback dir is skipped.
    Scenario { id: "18-needed-wrong-class", contract: R(18), title: "DT_NEEDED, FB=T32:T with an ELFCLASS32 copy first",
        how: row(&[Elf32(Tegra32), Cuda(Role::Driver, Tegra)], NEEDED, &[fb("{T32}:{T}")]), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "18-dlopen-wrong-class", contract: R(18), title: "dlopen, FB=T32:T with an ELFCLASS32 copy first",
        how: row(&[Elf32(Tegra32), Cuda(Role::Driver, Tegra)], DLOPEN, &[fb("{T32}:{T}")]), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },

    // 19. Missing dirs, many entries, long values: clean errors or the right copy, no crash.
    // A list whose dirs are all missing is marked unusable; that must not write to the
    // RELRO-protected list, so the dlopen case searches three times.
    Scenario { id: "19-needed-missing-dirs", contract: R(19), title: "DT_NEEDED, every FB dir missing",
        how: row(&[], NEEDED, &[fb("/nope:/nope/too:/opt/nope")]), expected: NotFound, ..DEFAULT },
    Scenario { id: "19-dlopen-missing-dirs", contract: R(19), title: "dlopen, every FB dir missing",
        how: row(&[], Probe("probe", &["try", CUDA, "try", "libnvrm_mem.so", "dlopen", CUDA]), &[fb("/nope:/nope/too:/opt/nope")]), expected: NotFound, ..DEFAULT },
    Scenario { id: "19-many-entries", contract: R(19), title: "FB with 2000 missing dirs, then T",
        how: row(&[Cuda(Role::Driver, Tegra)], DLOPEN, &[EnvVar("LD_FALLBACK_PATH", Value::ManyMissing(2000, Tegra))]),
        expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    // Below the kernel's 128 KiB limit for one environment string.
    Scenario { id: "19-long-value", contract: R(19), title: "FB with a 100 KiB missing dir, then T",
        how: row(&[Cuda(Role::Driver, Tegra)], DLOPEN, &[EnvVar("LD_FALLBACK_PATH", Value::LongMissing(100 * 1024, Tegra))]),
        expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },

    // 20. ld.so --fallback-path overrides the variable, for this run only.
    Scenario { id: "20-needed-option-overrides", contract: R(20), title: "DT_NEEDED, ld.so --fallback-path T overrides FB=U",
        how: looking(WinnerKeepsEnviron, &[Cuda(Role::Driver, Tegra), Cuda(Role::Other, Other)], LdSo(&["--fallback-path", "{T}"], "needed", &["env", "needed"]), &[fb("{U}")]),
        expected: Wins(Role::Driver), unpatched: Gives(says("ld.so: unrecognized option '--fallback-path'")), ..DEFAULT },
    Scenario { id: "20-dlopen-option-overrides", contract: R(20), title: "dlopen, ld.so --fallback-path T overrides FB=U",
        how: looking(WinnerKeepsEnviron, &[Cuda(Role::Driver, Tegra), Cuda(Role::Other, Other)], LdSo(&["--fallback-path", "{T}"], "probe", &["env", "dlopen", CUDA]), &[fb("{U}")]),
        expected: Wins(Role::Driver), unpatched: Gives(says("ld.so: unrecognized option '--fallback-path'")), ..DEFAULT },

    // 21. Diagnostics: LD_DEBUG, --help, dlinfo, LD_AUDIT, the listings.
    Scenario { id: "21-debug-label", contract: R(21), title: "LD_DEBUG=libs labels the fallback search",
        how: code(debug_label_env), expected: says("driver; search path=T (LD_FALLBACK_PATH)"), unpatched: Gives(says("not found; no fallback search")), ..DEFAULT },
    Scenario { id: "21-debug-label-option", contract: R(21), title: "LD_DEBUG=libs labels a --fallback-path search",
        how: code(debug_label_option), expected: says("driver; search path=T (--fallback-path)"), unpatched: Gives(says("ld.so: unrecognized option '--fallback-path'")), ..DEFAULT },
    Scenario { id: "21-help", contract: R(21), title: "ld.so --help documents --fallback-path, lists FB after the system dirs",
        how: code(help), expected: says("--fallback-path documented; T listed after the system dirs"), unpatched: Gives(says("--fallback-path not documented; T not listed")), ..DEFAULT },
    Scenario { id: "21-serinfo", contract: R(21), title: "dlinfo(RTLD_DI_SERINFO) lists FB last",
        how: code(serinfo), expected: says("T listed last"), unpatched: Gives(says("T not listed")), ..DEFAULT },
    Scenario { id: "21-audit", contract: R(21), title: "LD_AUDIT la_objsearch sees the fallback candidate as LA_SER_LIBPATH",
        how: code(audit), expected: says("driver; la_objsearch T/libcuda.so.1 flag=LA_SER_LIBPATH"), unpatched: Gives(says("not found; la_objsearch never saw T/libcuda.so.1")), ..DEFAULT },
    Scenario { id: "21-list", contract: R(21), title: "ld.so --list resolves through FB=T",
        how: looking(Listed, &[Cuda(Role::Driver, Tegra)], Listing(List::Option, "needed"), FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "21-ldd-script", contract: R(21), title: "the patched build's own ldd script resolves through FB=T",
        how: looking(Listed, &[Cuda(Role::Driver, Tegra), HostBash], Listing(List::Script, "needed"), FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound),
        not_applicable: Some(NO_BASH_UNDER_QEMU), ..DEFAULT },
    Scenario { id: "21-ldd", contract: R(21), title: "ldd (LD_TRACE_LOADED_OBJECTS=1 ld.so) resolves through FB=T",
        how: looking(Listed, &[Cuda(Role::Driver, Tegra)], Listing(List::Ldd, "needed"), FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },

    // 22. dlmopen into a new namespace: the same order.
    Scenario { id: "22-dlmopen", contract: R(22), title: "dlmopen(LM_ID_NEWLM), FB=T",
        how: row(&[Cuda(Role::Driver, Tegra)], Probe("probe", &["dlmopen", CUDA]), FB_T), expected: Wins(Role::Driver), unpatched: Gives(NotFound), ..DEFAULT },
    Scenario { id: "22-dlmopen-default-dir", contract: R(22), title: "dlmopen(LM_ID_NEWLM), default dir beats FB=T",
        how: row(&[Cuda(Role::Driver, Tegra), Cuda(Role::System, Default)], Probe("probe", &["dlmopen", CUDA]), FB_T), expected: Wins(Role::System), ..DEFAULT },

    // The user story, end to end: a saxpy-like app whose CUDA runtime has cuda_compat in its
    // RUNPATH, on a board whose driver dir holds an older libcuda and the libnvrm_* helpers.
    Scenario { id: "J1-jetson-llp", title: "Jetson: saxpy with LD_LIBRARY_PATH=tegra (the bug)",
        how: code(|cx| jetson(cx, Some("LD_LIBRARY_PATH"))), expected: says("fails: driver 11040 too old"), ..DEFAULT },
    Scenario { id: "J2-jetson-nothing", title: "Jetson: saxpy with no variable",
        how: code(|cx| jetson(cx, None)), expected: says("fails: compat 12020 without libnvrm_*"), ..DEFAULT },
    Scenario { id: "J3-jetson-fallback", title: "Jetson: saxpy with LD_FALLBACK_PATH=tegra (the fix)",
        how: code(|cx| jetson(cx, Some("LD_FALLBACK_PATH"))), expected: says("ok: compat 12020 with libnvrm_* from tegra"),
        unpatched: Gives(says("fails: compat 12020 without libnvrm_*")), ..DEFAULT },
];
