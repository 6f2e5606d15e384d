//! The matrix as tests, generated from the table (`loader_tests::matrix::MATRIX`): one test
//! per scenario, target and flavour (`x86_64::patched::03-dlopen-runpath-miss`); row 23 per
//! target (without the patch, exactly the scenarios that need it fail); and snapshots of the
//! report and of normalised `LD_DEBUG=libs` traces per release (`newest` in the newest's names).
//!
//! `cargo test -p loader-tests -- 03-dlopen` runs one scenario everywhere it can.

mod util;

use libtest_mimic::{Arguments, Failed, Trial};
use loader_tests::matrix::{self, MATRIX};
use loader_tests::report::{self, Sensitivity};
use model::{Flavour, Release, Target};

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for target in Target::ALL {
        let not_run = util::not_run_here(target);
        if let Some(reason) = &not_run {
            eprintln!("{reason}");
        }
        let mut add = |name: String, test: Box<dyn FnOnce() -> Result<(), String> + Send>| {
            let trial = Trial::test(name, move || test().map_err(Failed::from));
            trials.push(trial.with_ignored_flag(not_run.is_some()));
        };
        for flavour in Flavour::ALL {
            for scenario in MATRIX {
                add(
                    format!("{target}::{flavour}::{}", scenario.id),
                    Box::new(move || {
                        let bench = util::bench(target, flavour)?;
                        util::judge(&report::run_one(bench, scenario))
                    }),
                );
            }
            add(
                format!("{target}::{flavour}::snapshot-report"),
                Box::new(move || report_snapshot(target, flavour)),
            );
        }
        add(
            format!("{target}::unpatched::row-23-sensitivity"),
            Box::new(move || sensitivity(target)),
        );
        let traces: &[(&str, Flavour)] = match target {
            Target::X86_64 => &[
                ("21-debug-label", Flavour::Patched),
                ("21-debug-label", Flavour::Unpatched),
                ("21-debug-label-option", Flavour::Patched),
                ("07-dlopen-nvrm", Flavour::Patched),
                ("07-dlopen-nvrm", Flavour::Unpatched),
            ],
            Target::Aarch64 => &[
                ("21-debug-label", Flavour::Patched),
                ("21-debug-label", Flavour::Unpatched),
            ],
        };
        for &(id, flavour) in traces {
            add(
                format!("{target}::{flavour}::snapshot-trace-{id}"),
                Box::new(move || trace_snapshot(target, flavour, id)),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Row 23: the whole matrix against the unpatched loader differs from the patched
/// expectation in exactly the scenarios that need the patch, and nothing else fails.
fn sensitivity(target: Target) -> Result<(), String> {
    let bench = util::bench(target, Flavour::Unpatched)?;
    let report = report::run(bench, None);
    let table = report::table(&report.scenarios);
    let sensitivity = Sensitivity::of(&report.scenarios);
    if !sensitivity.holds {
        return Err(format!(
            "without the patch, the scenarios that fail must be exactly those that need it\n{}\n{table}",
            sensitivity.line()
        ));
    }
    for outcome in &report.scenarios {
        util::judge(outcome).map_err(|err| format!("{err}\n{table}"))?;
    }
    Ok(())
}

/// The report as a table, without the scenarios that need root or Debian's archive: they are
/// skipped elsewhere, and a snapshot must not depend on who runs it or where. They have tests
/// of their own.
fn report_snapshot(target: Target, flavour: Flavour) -> Result<(), String> {
    let bench = util::bench(target, flavour)?;
    let outcomes: Vec<_> = MATRIX
        .iter()
        .filter(|s| !s.needs_root && !s.needs_archive)
        .map(|s| report::run_one(bench, s))
        .collect();
    let release = bench.sysroot.release;
    let name = format!("report-{}-{target}-{flavour}", release_in_name(release));
    let text = format!(
        "glibc {release} {target} {flavour}\n\n{}",
        report::table(&outcomes)
    );
    snapshot(&name, text)
}

fn trace_snapshot(target: Target, flavour: Flavour, id: &str) -> Result<(), String> {
    let bench = util::bench(target, flavour)?;
    let scenario = matrix::find(id).ok_or_else(|| format!("no scenario {id}"))?;
    let trace = report::trace(bench, scenario).map_err(|err| format!("{err:#}"))?;
    let release = bench.sysroot.release;
    let name = format!("trace-{id}-{}-{target}-{flavour}", release_in_name(release));
    snapshot(
        &name,
        format!("glibc {release} {target} {flavour}\n\n{trace}"),
    )
}

/// A snapshot's name says `newest` for the newest supported release and the version for any
/// other: a new release then changes the newest's snapshots in place (their text names the
/// release), and review shows its traces against the old release's.
fn release_in_name(release: Release) -> String {
    match release == Release::newest() {
        true => "newest".to_string(),
        false => release.version().to_string(),
    }
}

/// insta's assertion, as a test result: libtest-mimic runs each test on a thread of its own
/// and reports a panic there as a failure, but a result names the snapshot.
fn snapshot(name: &str, text: String) -> Result<(), String> {
    let name = name.to_string();
    std::panic::catch_unwind(move || insta::assert_snapshot!(name, text))
        .map_err(|_| "snapshot differs (see above; review with cargo insta review)".to_string())
}
