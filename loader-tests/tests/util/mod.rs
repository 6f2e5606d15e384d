//! What every integration test needs: a bench (sysroot + fixtures) per target and flavour,
//! made once per test binary, and a way to run one scenario by name.
//!
//! Sysroots come from `$LD_FALLBACK_SYSROOT[_AARCH64][_UNPATCHED]` when set, else from
//! `cargo xtask build-glibc --target T [--unpatched] --print-sysroot` (a cache hit once built).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use loader_tests::matrix::{self, Scenario};
use loader_tests::report::{self, Outcome, Verdict};
use loader_tests::root::Bench;
use loader_tests::{Sysroot, Target};

static X86_64_PATCHED: OnceLock<Bench> = OnceLock::new();
static X86_64_UNPATCHED: OnceLock<Bench> = OnceLock::new();
static AARCH64_PATCHED: OnceLock<Bench> = OnceLock::new();
static AARCH64_UNPATCHED: OnceLock<Bench> = OnceLock::new();

pub fn bench(target: Target, patched: bool) -> &'static Bench {
    let cell = match (target, patched) {
        (Target::X86_64, true) => &X86_64_PATCHED,
        (Target::X86_64, false) => &X86_64_UNPATCHED,
        (Target::Aarch64, true) => &AARCH64_PATCHED,
        (Target::Aarch64, false) => &AARCH64_UNPATCHED,
    };
    cell.get_or_init(|| {
        let sysroot = sysroot(target, patched).unwrap_or_else(|err| panic!("{err:#}"));
        let cache = loader_tests::cache_dir().unwrap_or_else(|err| panic!("{err:#}"));
        Bench::new(sysroot, &cache).unwrap_or_else(|err| panic!("{err:#}"))
    })
}

/// Whether a sysroot for `target` is named in the environment (the aarch64 tests run only
/// then: building one from the tests would take many minutes).
pub fn sysroot_named(target: Target, patched: bool) -> bool {
    std::env::var_os(loader_tests::sysroot_env_var(target, patched)).is_some_and(|v| !v.is_empty())
}

fn sysroot(target: Target, patched: bool) -> anyhow::Result<Sysroot> {
    let var = loader_tests::sysroot_env_var(target, patched);
    if let Some(path) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
        return Sysroot::at(Path::new(&path), target, patched);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace).args([
        "xtask",
        "build-glibc",
        "--target",
        target.name(),
        "--print-sysroot",
    ]);
    if !patched {
        cmd.arg("--unpatched");
    }
    let out = cmd.output()?;
    if !out.status.success() {
        anyhow::bail!(
            "no sysroot: ${var} is not set and `cargo xtask build-glibc --target {}{} --print-sysroot` failed ({}):\n{}",
            target.name(),
            if patched { "" } else { " --unpatched" },
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let path = PathBuf::from(text.lines().last().unwrap_or("").trim());
    Sysroot::at(&path, target, patched)
}

/// Runs scenario `id` and fails the test with the report (and explanation) unless the
/// verdict is the expected one. A skip fails too unless `LD_FALLBACK_ALLOW_SKIP=1`: a test
/// that could not look must not read as passed.
pub fn check(target: Target, patched: bool, id: &str) -> Outcome {
    let scenario: &'static Scenario =
        matrix::find(id).unwrap_or_else(|| panic!("no scenario {id}"));
    let outcome = report::run_one(bench(target, patched), scenario);
    match &outcome.verdict {
        Verdict::Pass | Verdict::FailsWithoutPatch => {}
        Verdict::Skipped(reason) => {
            let allowed = std::env::var_os("LD_FALLBACK_ALLOW_SKIP").is_some_and(|v| v == "1");
            assert!(
                allowed,
                "{id} SKIPPED: {reason} (LD_FALLBACK_ALLOW_SKIP=1 accepts skips)"
            );
            eprintln!("{id} SKIPPED: {reason}");
        }
        Verdict::Mismatch => panic!("{}", report::table(std::slice::from_ref(&outcome))),
    }
    outcome
}
