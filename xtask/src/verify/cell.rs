//! One cell, one (release, target): everything that says the series works there, run step by
//! step, each step's verdict kept in a [`CellReport`].

use std::time::Instant;

use anyhow::Context;
use loader_tests::{Flavour, Target};
use serde::{Deserialize, Serialize};

use super::testsuite::{self, Diff, Named, Status};
use super::Run;
use crate::rebase;
use crate::store::release::Release;

/// Bump when what a cell checks changes: every cached cell is then verified again.
/// 2: glibc's tests are judged by the run's `tests.sum` (top level included), and a test
/// that never ran, or ran in one tree only, fails the cell.
pub const RECIPE: u32 = 2;

/// The glibc subdirectory whose tests are compared patched vs unpatched.
const SUITE: &str = "elf";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// Could not be checked here; the summary says why.
    Skipped,
    /// An earlier step failed, so this one was not run.
    NotRun,
}

/// One step's verdict and what it saw, in a few words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub verdict: Verdict,
    pub summary: String,
}

impl Check {
    fn pass(summary: impl Into<String>) -> Check {
        Check {
            verdict: Verdict::Pass,
            summary: summary.into(),
        }
    }

    fn fail(summary: impl Into<String>) -> Check {
        Check {
            verdict: Verdict::Fail,
            summary: summary.into(),
        }
    }

    fn skipped(summary: impl Into<String>) -> Check {
        Check {
            verdict: Verdict::Skipped,
            summary: summary.into(),
        }
    }

    fn not_run() -> Check {
        Check {
            verdict: Verdict::NotRun,
            summary: "an earlier step failed".into(),
        }
    }

    fn of(ok: bool, summary: String) -> Check {
        if ok {
            Check::pass(summary)
        } else {
            Check::fail(summary)
        }
    }
}

/// Seconds spent per kind of work (cache hits cost about nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Seconds {
    pub build_pair: f64,
    pub elf_suite_pair: f64,
    pub matrix: f64,
    pub total: f64,
}

/// Everything verified about one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellReport {
    pub release: String,
    pub target: Target,
    /// When the cell was verified (UTC), and from which project commit.
    pub verified_at: String,
    pub commit: String,
    /// The series' content id (`Series::content_id`).
    pub series: String,
    /// Hash of every input of the verdict; a cached report counts only while it matches.
    pub key: String,
    pub applies: Check,
    pub build: Check,
    pub matrix: Check,
    pub sensitivity: Check,
    pub series_tests: Check,
    pub elf_regressions: Check,
    /// The series' own tests, as glibc's test machinery ran them in the patched tree.
    pub series_test_results: Vec<Named>,
    /// glibc's own tests of `elf/`, patched vs unpatched.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub elf: Option<Diff>,
    pub seconds: Seconds,
    pub passed: bool,
    /// Set when the report comes from the cache rather than from this run.
    #[serde(skip)]
    pub from_cache: bool,
}

/// What a cell without a current report says in place of its verdicts.
pub const NOT_VERIFIED: &str = "not verified";

impl CellReport {
    /// Makes this the row of a cell that was neither verified nor run (`verify
    /// --cached-only`): it says so, and how to verify it.
    pub fn mark_unverified(&mut self) {
        self.applies = Check {
            verdict: Verdict::NotRun,
            summary: format!(
                "{NOT_VERIFIED}: cargo xtask verify --release {} --target {}",
                self.release, self.target
            ),
        };
        self.verified_at = NOT_VERIFIED.into();
    }

    /// A row for a cell that was neither verified nor run (`verify --cached-only`).
    pub fn is_unverified(&self) -> bool {
        self.applies.verdict == Verdict::NotRun && self.applies.summary.starts_with(NOT_VERIFIED)
    }

    pub fn checks(&self) -> [(&'static str, &Check); 6] {
        [
            ("applies", &self.applies),
            ("build", &self.build),
            ("matrix", &self.matrix),
            ("sensitivity", &self.sensitivity),
            ("series tests", &self.series_tests),
            ("elf regressions", &self.elf_regressions),
        ]
    }
}

/// The steps of a cell, with how long each usually takes here (2 cores), for the estimate of
/// what is left.
pub struct Plan {
    pub release: Release,
    pub target: Target,
    /// Whether each flavour's sysroot is cached already.
    pub cached: [bool; 2],
}

impl Plan {
    /// Minutes a cell is expected to take, cold parts included.
    pub fn estimate_minutes(&self) -> f64 {
        let builds: f64 = self.cached.iter().map(|c| if *c { 0.0 } else { 7.0 }).sum();
        let suite = if self.target.is_native() {
            // The suite needs compiled trees: a cached sysroot may still need its tree built.
            10.0
        } else {
            0.0
        };
        let matrix = if self.target.is_native() { 0.3 } else { 1.0 };
        builds + suite + matrix
    }
}

/// Runs every step of the cell. Errors of the machinery (a build that fails, a store that
/// cannot be read) fail the step they happen in, not the whole run: the other cells go on.
pub fn verify(run: &Run, plan: &Plan, key: String, series: String) -> CellReport {
    let (release, target) = (plan.release, plan.target);
    let started = Instant::now();
    let mut seconds = Seconds::default();
    let mut report = CellReport {
        release: release.version.to_string(),
        target,
        verified_at: run.now.clone(),
        commit: run.commit.clone(),
        series,
        key,
        applies: Check::not_run(),
        build: Check::not_run(),
        matrix: Check::not_run(),
        sensitivity: Check::not_run(),
        series_tests: Check::not_run(),
        elf_regressions: Check::not_run(),
        series_test_results: Vec::new(),
        elf: None,
        seconds,
        passed: false,
        from_cache: false,
    };
    let step = |name: &str| run.progress.step(release, target, name);

    step("the series applies (rebase-glibc --check)");
    report.applies = match rebase::check_release(&run.workspace, release) {
        Ok((series, drift)) if drift.is_empty() => Check::pass(format!(
            "{} patches apply exactly to {}",
            series.patches.len(),
            series.base.tag()
        )),
        Ok((_, drift)) => Check::fail(format!("drift: {}", drift.join("; "))),
        Err(err) => Check::fail(format!("{err:#}")),
    };
    if report.applies.verdict != Verdict::Pass {
        return finish(report, seconds, started);
    }

    step("patched and unpatched sysroots (build-glibc)");
    let build_started = Instant::now();
    let sysroots = Flavour::ALL.map(|flavour| run.builder.ensure(release, target, flavour));
    seconds.build_pair = build_started.elapsed().as_secs_f64();
    let [patched, unpatched] = match sysroots {
        [Ok(patched), Ok(unpatched)] => [patched, unpatched],
        [a, b] => {
            let why: Vec<String> = [("patched", a), ("unpatched", b)]
                .into_iter()
                .filter_map(|(f, r)| r.err().map(|e| format!("{f}: {e:#}")))
                .collect();
            report.build = Check::fail(why.join("; "));
            return finish(report, seconds, started);
        }
    };
    let how = |built: bool| if built { "built" } else { "cached" };
    report.build = Check::pass(format!(
        "patched {}, unpatched {} ({:.0} s)",
        how(patched.built),
        how(unpatched.built),
        seconds.build_pair
    ));

    step("the resolution matrix, patched and unpatched (row 23)");
    let matrix_started = Instant::now();
    match crate::resolution::run_matrix(patched.sysroot, None) {
        Ok((matrix, _)) => {
            let s = matrix.summary;
            report.matrix = Check::of(
                s.mismatch == 0,
                format!(
                    "{} pass, {} skipped, {} mismatch",
                    s.pass, s.skipped, s.mismatch
                ),
            );
        }
        Err(err) => report.matrix = Check::fail(format!("{err:#}")),
    }
    match crate::resolution::run_matrix(unpatched.sysroot, None) {
        Ok((matrix, _)) => {
            let holds = matrix.sensitivity.as_ref().is_some_and(|s| s.holds);
            report.sensitivity = Check::of(
                holds && matrix.summary.mismatch == 0,
                format!(
                    "{} need the patch and fail without it; {} mismatch",
                    matrix.summary.fails_without_patch, matrix.summary.mismatch
                ),
            );
        }
        Err(err) => report.sensitivity = Check::fail(format!("{err:#}")),
    }
    seconds.matrix = matrix_started.elapsed().as_secs_f64();

    if !target.is_native() {
        let why = "glibc's own tests are not run under QEMU (the matrix is the check there)";
        report.series_tests = Check::skipped(why);
        report.elf_regressions = Check::skipped(why);
        return finish(report, seconds, started);
    }
    let suite_started = Instant::now();
    let results = [Flavour::Unpatched, Flavour::Patched].map(|flavour| {
        step(&format!(
            "glibc's `make check subdirs={SUITE}`, {flavour} tree (~5 min)"
        ));
        let key = run.builder.key(release, target, flavour)?.0;
        testsuite::results_for(&key, SUITE, || {
            let tree = run.builder.tree(release, target, flavour)?;
            testsuite::run_check(&tree, SUITE, run.builder.jobs)
        })
        .with_context(|| format!("cannot run glibc's tests in the {flavour} tree"))
    });
    seconds.elf_suite_pair = suite_started.elapsed().as_secs_f64();
    let [unpatched_results, patched_results] = match results {
        [Ok(u), Ok(p)] => [u, p],
        [u, p] => {
            let why: Vec<String> = [u, p]
                .into_iter()
                .filter_map(|r| r.err().map(|e| format!("{e:#}")))
                .collect();
            report.series_tests = Check::fail(why.join("; "));
            report.elf_regressions = Check::fail(why.join("; "));
            return finish(report, seconds, started);
        }
    };
    // The series' tests: those of its own test files that the patched tree ran.
    let own = series_test_names(run, release);
    let diff = Diff::between(&unpatched_results, &patched_results, &own);
    report.series_test_results = patched_results
        .iter()
        .filter(|(name, _)| own.iter().any(|o| o == *name))
        .map(|(name, r)| Named {
            test: name.clone(),
            status: r.status,
            reason: r.reason.clone(),
        })
        .collect();
    let failing: Vec<&Named> = report
        .series_test_results
        .iter()
        .filter(|t| t.status.is_failure())
        .collect();
    let count = |s: Status| {
        report
            .series_test_results
            .iter()
            .filter(|t| t.status == s)
            .count()
    };
    report.series_tests = if report.series_test_results.is_empty() {
        Check::fail("the patched tree ran none of the series' tests")
    } else {
        Check::of(
            failing.is_empty(),
            format!(
                "{} PASS, {} UNSUPPORTED, {} FAIL",
                count(Status::Pass),
                count(Status::Unsupported),
                failing.len()
            ),
        )
    };
    report.elf_regressions = Check::of(diff.passes(), diff.summary());
    report.elf = Some(diff);
    finish(report, seconds, started)
}

fn finish(mut report: CellReport, mut seconds: Seconds, started: Instant) -> CellReport {
    seconds.total = started.elapsed().as_secs_f64();
    report.seconds = seconds;
    report.passed = report
        .checks()
        .iter()
        .all(|(_, c)| matches!(c.verdict, Verdict::Pass | Verdict::Skipped));
    report
}

/// `elf/tst-...` for every test source the series adds or changes (modules among them are
/// dropped by the caller, which keeps only names glibc ran as tests).
fn series_test_names(run: &Run, release: Release) -> Vec<String> {
    let Ok(series) = run.workspace.load_series(release) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for patch in &series.patches {
        for line in patch.text.lines() {
            let Some(path) = line.strip_prefix("+++ b/") else {
                continue;
            };
            if let Some(stem) = path
                .strip_prefix("elf/tst-")
                .and_then(|p| p.strip_suffix(".c"))
            {
                names.push(format!("elf/tst-{stem}"));
            }
        }
    }
    names
}
