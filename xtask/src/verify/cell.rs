//! One cell, one (release, target): everything that says the series works there, run step by
//! step, each step's verdict kept in a [`CellReport`].

use std::time::Instant;

use anyhow::Context;
use model::{Flavour, Target};

use super::outcome::{
    Applies, Build, CellReport, CellRun, Matrix, Origin, Seconds, Sensitivity, SeriesTests, Step,
    Steps,
};
use super::testsuite::{self, Diff, Named};
use super::Run;
use crate::rebase;
use model::Release;

/// Bump when what a cell checks changes: every cached cell is then verified again.
/// 2: glibc's tests are judged by the run's `tests.sum` (top level included), and a test
/// that never ran, or ran in one tree only, fails the cell.
/// 3: reports are typed figures with derived verdicts; a skipped scenario or an UNSUPPORTED
/// series test makes the cell incomplete, a scenario declared n/a does not.
pub(crate) const RECIPE: u32 = 3;

/// The glibc subdirectory whose tests are compared patched vs unpatched.
const SUITE: &str = "elf";

/// Why glibc's own tests are not a step of a cell under QEMU.
pub(crate) const NO_SUITE_UNDER_QEMU: &str =
    "glibc's own tests are not run under QEMU (the matrix is the check there)";

/// The steps of a cell, with how long each usually takes here (2 cores), for the estimate of
/// what is left.
pub(crate) struct Plan {
    pub release: Release,
    pub target: Target,
    /// Whether each flavour's sysroot is cached already.
    pub cached: [bool; 2],
}

impl Plan {
    /// Minutes a cell is expected to take, cold parts included.
    pub(crate) fn estimate_minutes(&self) -> f64 {
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
pub(crate) fn verify(run: &Run, plan: &Plan, key: String, series: String) -> CellReport {
    let started = Instant::now();
    let mut seconds = Seconds::default();
    let steps = run_steps(run, plan, &mut seconds);
    seconds.total = started.elapsed().as_secs_f64();
    let mut report = CellReport::new(plan.release, plan.target, series, key);
    report.run = Some(CellRun {
        verified_at: run.now.clone(),
        commit: run.commit.clone(),
        steps,
        seconds,
    });
    report
}

/// The steps, in order, each run only when the ones before it passed (or, for a step that
/// is incomplete, gave what the next needs).
fn run_steps(run: &Run, plan: &Plan, seconds: &mut Seconds) -> Steps {
    let (release, target) = (plan.release, plan.target);
    let mut steps = Steps::not_run();
    let step = |name: &str| run.progress.step(release, target, name);

    step("the series applies (rebase-glibc --check)");
    steps.applies = match rebase::check_release(&run.workspace, release) {
        Ok((series, drift)) => Step::Done(Applies {
            patches: series.patches.len(),
            base: series.base,
            drift,
        }),
        Err(err) => Step::Error(format!("{err:#}")),
    };
    if steps.applies.figures().is_none_or(|a| !a.drift.is_empty()) {
        return steps;
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
            steps.build = Step::Error(why.join("; "));
            return steps;
        }
    };
    let origin = |built: bool| if built { Origin::Built } else { Origin::Cached };
    steps.build = Step::Done(Build {
        patched: origin(patched.built),
        unpatched: origin(unpatched.built),
    });

    step("the resolution matrix, patched and unpatched (row 23)");
    let matrix_started = Instant::now();
    steps.matrix = match crate::resolution::run_matrix(patched.sysroot, None) {
        Ok((matrix, _)) => Step::Done(Matrix::of(&matrix)),
        Err(err) => Step::Error(format!("{err:#}")),
    };
    steps.sensitivity = match crate::resolution::run_matrix(unpatched.sysroot, None) {
        Ok((matrix, _)) => match Sensitivity::of(&matrix) {
            Some(sensitivity) => Step::Done(sensitivity),
            None => Step::Error("the unpatched matrix gave no row-23 result".into()),
        },
        Err(err) => Step::Error(format!("{err:#}")),
    };
    seconds.matrix = matrix_started.elapsed().as_secs_f64();

    if !target.is_native() {
        steps.series_tests = Step::NotApplicable(NO_SUITE_UNDER_QEMU.into());
        steps.elf_regressions = Step::NotApplicable(NO_SUITE_UNDER_QEMU.into());
        return steps;
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
            steps.series_tests = Step::Error(why.join("; "));
            steps.elf_regressions = Step::Error(why.join("; "));
            return steps;
        }
    };
    // The series' tests: those of its own test files that the patched tree ran.
    let own = series_test_names(run, release);
    steps.series_tests = Step::Done(SeriesTests {
        tests: patched_results
            .iter()
            .filter(|(name, _)| own.iter().any(|o| o == *name))
            .map(|(name, r)| Named {
                test: name.clone(),
                status: r.status,
                reason: r.reason.clone(),
            })
            .collect(),
    });
    steps.elf_regressions = Step::Done(Diff::between(&unpatched_results, &patched_results, &own));
    steps
}

/// `elf/tst-...` for every test source the series adds (modules among them are dropped by
/// the caller, which keeps only names glibc ran as tests). An upstream test the series only
/// changes (tst-env-setuid, which gains LD_FALLBACK_PATH) is glibc's own: compared patched
/// vs unpatched like every other, not one of the series' tests.
fn series_test_names(run: &Run, release: Release) -> Vec<String> {
    let Ok(series) = run.workspace.load_series(release) else {
        return Vec::new();
    };
    series
        .patches
        .iter()
        .flat_map(|patch| added_tests(&patch.text))
        .collect()
}

/// The `elf/tst-*.c` files a patch creates (`new file mode` in their diff's header).
fn added_tests(patch: &str) -> Vec<String> {
    let mut tests = Vec::new();
    let mut current: Option<&str> = None;
    for line in patch.lines() {
        if let Some(paths) = line.strip_prefix("diff --git a/") {
            current = paths.split_once(" b/").map(|(_, path)| path);
        } else if line.starts_with("new file mode ") {
            if let Some(stem) = current
                .and_then(|path| path.strip_prefix("elf/tst-"))
                .and_then(|rest| rest.strip_suffix(".c"))
            {
                tests.push(format!("elf/tst-{stem}"));
            }
        }
    }
    tests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_tests_are_the_test_files_it_adds() {
        let patch = "diff --git a/elf/tst-env-setuid.c b/elf/tst-env-setuid.c\nindex 1..2 100644\n--- a/elf/tst-env-setuid.c\n+++ b/elf/tst-env-setuid.c\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/elf/tst-fallback-path.c b/elf/tst-fallback-path.c\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/elf/tst-fallback-path.c\ndiff --git a/elf/Makefile b/elf/Makefile\n";
        assert_eq!(added_tests(patch), ["elf/tst-fallback-path"]);
    }
}
