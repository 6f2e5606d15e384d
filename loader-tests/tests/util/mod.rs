//! What the matrix tests need: a bench (sysroot + fixtures) per target and flavour, made once
//! per test binary, and the rule for what counts as passing.
//!
//! Sysroots come from `$LD_FALLBACK_SYSROOT[_AARCH64][_UNPATCHED]` when set, else, for
//! x86_64, from `cargo xtask sysroot --target x86_64 --flavour F --print-sysroot` (a cache
//! hit once built). aarch64 runs only with its variables set (building it from a test would
//! take many minutes): without them the tests are ignored, and under CI they fail.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use anyhow::{bail, Context, Result};
use loader_tests::host::{cache_dir, in_ci};
use loader_tests::report::{ScenarioOutcome, ScenarioVerdict};
use loader_tests::root::Bench;
use model::{sysroot_env_var, Flavour, Sysroot, Target};

/// One bench per (target, flavour), or why there is none. Keyed by name: a variant
/// (fallback-first) is a key like the series' two flavours, not a position past the end.
type Cells = BTreeMap<(Target, Flavour), &'static OnceLock<Result<Bench, String>>>;
static BENCHES: Mutex<Cells> = Mutex::new(BTreeMap::new());

pub(crate) fn bench(target: Target, flavour: Flavour) -> Result<&'static Bench, String> {
    // The map's lock is held to find the cell only: benches of other cells are made meanwhile.
    let cell: &'static OnceLock<_> = *BENCHES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry((target, flavour))
        .or_insert_with(|| Box::leak(Box::default()));
    cell.get_or_init(|| {
        let make = || -> Result<Bench> {
            let sysroot = sysroot(target, flavour)?;
            Bench::new(sysroot, &cache_dir()?)
        };
        make().map_err(|err| format!("{err:#}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Why the tests of `target` do not run here, if they do not. Under CI a missing sysroot is
/// not a reason: the tests run and fail.
pub(crate) fn not_run_here(target: Target) -> Option<String> {
    if target.is_native() || in_ci() {
        return None;
    }
    let missing: Vec<String> = Flavour::ALL
        .iter()
        .map(|f| sysroot_env_var(target, *f))
        .filter(|var| std::env::var_os(var).is_none_or(|v| v.is_empty()))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "{target} tests ignored: ${} not set (cargo xtask ci sets them; under CI this fails)",
            missing.join(", $")
        )
    })
}

fn sysroot(target: Target, flavour: Flavour) -> Result<Sysroot> {
    let var = sysroot_env_var(target, flavour);
    if let Some(path) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
        return Sysroot::at(Path::new(&path), target, flavour)
            .with_context(|| format!("${var} does not name a usable sysroot"));
    }
    if !target.is_native() {
        bail!("${var} is not set: the {target} matrix needs a sysroot named there (cargo xtask ci sets it)");
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace).args([
        "xtask",
        "sysroot",
        "--target",
        target.name(),
        "--flavour",
        flavour.name(),
        "--print-sysroot",
    ]);
    let out = cmd.output().context("cannot run cargo xtask sysroot")?;
    if !out.status.success() {
        bail!(
            "no sysroot: ${var} is not set and `cargo xtask sysroot --target {target} --flavour {flavour} --print-sysroot` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let path = PathBuf::from(text.lines().last().unwrap_or("").trim());
    Sysroot::at(&path, target, flavour)
}

/// Whether a skipped scenario is acceptable, never under CI: a real-binary scenario that
/// cannot fetch NVIDIA's libraries because Debian's archive is unreachable (a skip for any other
/// reason, such as a package gone from the index, is a failure, and under CI the scenario
/// fails itself), documented; any other skip only when `LD_FALLBACK_ALLOW_SKIP=1` says the
/// caller accepts it (say, not running as root). A scenario that does not apply by design
/// (the ldd script under QEMU) is not a skip: it is n/a, declared in the table.
pub(crate) fn skip_is_accepted(outcome: &ScenarioOutcome) -> bool {
    let unreachable = matches!(&outcome.verdict, ScenarioVerdict::Skipped(reason)
        if outcome.scenario.needs_archive && reason.starts_with(loader_tests::nvidia::UNREACHABLE));
    let allowed = std::env::var_os("LD_FALLBACK_ALLOW_SKIP").is_some_and(|v| v == "1");
    (unreachable || allowed) && !in_ci()
}

/// The verdict of one scenario as a test result.
pub(crate) fn judge(outcome: &ScenarioOutcome) -> Result<(), String> {
    match &outcome.verdict {
        ScenarioVerdict::Pass | ScenarioVerdict::FailsWithoutPatch => Ok(()),
        ScenarioVerdict::NotApplicable(reason) => {
            eprintln!("{} n/a: {reason}", outcome.id);
            Ok(())
        }
        ScenarioVerdict::Skipped(reason) if skip_is_accepted(outcome) => {
            eprintln!("{} SKIPPED: {reason}", outcome.id);
            Ok(())
        }
        ScenarioVerdict::Skipped(reason) => Err(format!(
            "{} SKIPPED: {reason} (a test that could not look must not pass; LD_FALLBACK_ALLOW_SKIP=1 accepts skips outside CI)",
            outcome.id
        )),
        ScenarioVerdict::Mismatch => Err(loader_tests::report::table(std::slice::from_ref(outcome))),
    }
}
