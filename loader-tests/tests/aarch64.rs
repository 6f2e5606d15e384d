//! The whole matrix for aarch64 under QEMU user mode, patched and unpatched. Runs only when
//! `$LD_FALLBACK_SYSROOT_AARCH64` / `$LD_FALLBACK_SYSROOT_AARCH64_UNPATCHED` name sysroots
//! (building one from a test would take many minutes; `cargo xtask test-resolution --target
//! aarch64` builds what it needs). Without them the test says so on stderr and checks nothing.

mod util;

use std::collections::BTreeSet;

use loader_tests::report::{self, Verdict};
use loader_tests::Target;

/// Under QEMU only the ldd script cannot run (no aarch64 bash, no binfmt_misc); any other
/// skip is a defect.
fn assert_only_ldd_script_skipped(outcomes: &[report::Outcome]) {
    for o in outcomes {
        if let Verdict::Skipped(reason) = &o.verdict {
            assert!(
                o.scenario.id.contains("ldd-script"),
                "{} skipped: {reason}",
                o.scenario.id
            );
            eprintln!("SKIPPED {}: {reason}", o.scenario.id);
        }
    }
}

#[test]
fn aarch64_patched_matrix() {
    if !util::sysroot_named(Target::Aarch64, true) {
        eprintln!("NOT RUN: $LD_FALLBACK_SYSROOT_AARCH64 is not set");
        return;
    }
    let bench = util::bench(Target::Aarch64, true);
    let outcomes = report::run(bench, None);
    assert!(
        outcomes.iter().all(|o| !o.verdict.is_failure()),
        "{}",
        report::table(&outcomes)
    );
    assert_only_ldd_script_skipped(&outcomes);
    snapshots(bench, &outcomes);
}

#[test]
fn aarch64_unpatched_fails_exactly_the_scenarios_that_need_the_patch() {
    if !util::sysroot_named(Target::Aarch64, false) {
        eprintln!("NOT RUN: $LD_FALLBACK_SYSROOT_AARCH64_UNPATCHED is not set");
        return;
    }
    let bench = util::bench(Target::Aarch64, false);
    let outcomes = report::run(bench, None);
    let ran: Vec<&report::Outcome> = outcomes
        .iter()
        .filter(|o| !matches!(o.verdict, Verdict::Skipped(_)))
        .collect();
    let differing: BTreeSet<&str> = ran
        .iter()
        .filter(|o| o.actual != o.scenario.expected)
        .map(|o| o.scenario.id)
        .collect();
    let needing: BTreeSet<&str> = ran
        .iter()
        .filter(|o| o.scenario.needs_patch())
        .map(|o| o.scenario.id)
        .collect();
    assert_eq!(differing, needing, "{}", report::table(&outcomes));
    assert!(
        outcomes.iter().all(|o| !o.verdict.is_failure()),
        "{}",
        report::table(&outcomes)
    );
    assert_only_ldd_script_skipped(&outcomes);
    snapshots(bench, &outcomes);
}

fn snapshots(bench: &loader_tests::root::Bench, outcomes: &[report::Outcome]) {
    let flavour = if bench.sysroot.patched {
        "patched"
    } else {
        "unpatched"
    };
    let release = &bench.sysroot.release;
    insta::assert_snapshot!(
        format!("report-{release}-aarch64-{flavour}"),
        report::table(outcomes)
    );
    let scenario = loader_tests::matrix::find("21-debug-label").unwrap();
    let trace = report::trace(bench, scenario).unwrap_or_else(|err| panic!("{err:#}"));
    insta::assert_snapshot!(
        format!("trace-21-debug-label-{release}-aarch64-{flavour}"),
        trace
    );
}
