//! One cell, one (release, target): everything that says the series works there, run step by
//! step, each step's verdict kept in a [`CellReport`].

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Context;
use model::{Flavour, Target};
use serde::Deserialize;

use super::emulated::{self, Sandbox};
use super::outcome::{
    hardcoded_paths_apply, Applies, Build, CellReport, CellRun, HardcodedPaths, Machine, Matrix,
    Origin, Seconds, Sensitivity, SeriesTests, StepOutcome, Steps, WithoutThePatch,
};
use super::testsuite::{self, Diff, Named, Status, SuiteRun, SuitesRan};
use super::Run;
use crate::rebase;
use crate::series::Series;
use model::Release;

/// Bump when what a cell checks changes: every cached cell is then verified again.
/// 2: glibc's tests are judged by the run's `tests.sum` (top level included), and a test
/// that never ran, or ran in one tree only, fails the cell.
/// 3: reports are typed figures with derived verdicts; a skipped scenario or an UNSUPPORTED
/// series test makes the cell incomplete, a scenario declared n/a does not.
/// 4: glibc's elf suite runs on aarch64 too (under QEMU, through a private binfmt_misc), and
/// the record keeps what describes the machine apart from what proves the patch.
pub(crate) const RECIPE: u32 = 4;

/// The glibc subdirectory whose tests are compared patched vs unpatched.
pub(crate) const SUITE: &str = "elf";

/// The steps of a cell, with how long each usually takes here (2 cores), for the estimate of
/// what is left.
pub(crate) struct Plan {
    pub release: Release,
    pub target: Target,
    /// Whether each flavour's sysroot is cached already.
    pub cached: [bool; 2],
    /// Which test runs are recorded already, and so only read.
    pub recorded: Recorded,
}

/// Which of a cell's test runs an earlier run of the same builds recorded
/// (`testsuite::results_for` reads them instead of running them again).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Recorded {
    /// glibc's elf suite in both trees.
    pub suites: bool,
    /// The series' tests in the tests-only build.
    pub without_the_patch: bool,
    /// Both suites in the hardcoded-path configuration.
    pub hardcoded: bool,
}

impl Recorded {
    /// Looks in the records for the builds of the cell (an unreadable key counts as not
    /// recorded: the run itself then says what is wrong).
    pub(crate) fn look(
        builder: &crate::sysroot::Builder,
        release: Release,
        target: Target,
    ) -> Recorded {
        let recorded = |builder: &crate::sysroot::Builder, flavour: Flavour, subdir: &str| {
            builder
                .key(release, target, flavour)
                .ok()
                .and_then(|(key, _)| testsuite::recorded_list(&key, subdir).ok().flatten())
                .is_some()
        };
        let both = |builder: &crate::sysroot::Builder| {
            [Flavour::Unpatched, Flavour::Patched]
                .into_iter()
                .all(|flavour| recorded(builder, flavour, SUITE))
        };
        let hardcoded = hardcoded_paths_apply(release, target)
            && both(
                &builder.configured(crate::sysroot::recipe::Configuration::HardcodedPathInTests),
            );
        Recorded {
            suites: both(builder),
            without_the_patch: recorded(builder, Flavour::TestsOnly, "elf-series-tests"),
            hardcoded,
        }
    }
}

impl Plan {
    /// Minutes a cell is expected to take, cold parts included and recorded runs not.
    pub(crate) fn estimate_minutes(&self) -> f64 {
        let recorded = self.recorded;
        // A recorded suite needs no tree; one to run needs both trees compiled, even where
        // the sysroots are cached.
        let builds: f64 = if recorded.suites {
            0.0
        } else {
            self.cached.iter().map(|c| if *c { 0.0 } else { 7.0 }).sum()
        };
        let suite = if recorded.suites { 0.0 } else { 10.0 };
        let matrix = if self.target.is_native() { 0.3 } else { 1.0 };
        // The tests-only build and the series' tests in it.
        let without_the_patch = if recorded.without_the_patch { 0.0 } else { 3.0 };
        // Two more builds and suites, where the configuration is verified.
        let hardcoded = match (
            hardcoded_paths_apply(self.release, self.target),
            recorded.hardcoded,
        ) {
            (false, _) | (true, true) => 0.0,
            (true, false) => 25.0,
        };
        builds + suite + matrix + without_the_patch + hardcoded
    }
}

/// Runs every step of the cell. Errors of the machinery (a build that fails, a store that
/// cannot be read) fail the step they happen in, not the whole run: the other cells go on.
pub(crate) fn verify(run: &Run, plan: &Plan, key: String, series: String) -> CellReport {
    let started = Instant::now();
    let mut seconds = Seconds::default();
    let mut machine = machine_here(plan.target);
    let mut suites_ran = None;
    let steps = run_steps(run, plan, &mut seconds, &mut machine, &mut suites_ran);
    seconds.total = started.elapsed().as_secs_f64();
    let mut report = CellReport::new(plan.release, plan.target, series, key);
    report.run = Some(CellRun {
        verified_at: run.now.clone(),
        commit: run.commit.clone(),
        steps,
        machine,
        seconds,
        suites_ran,
    });
    report
}

/// The steps, in order, each run only when the ones before it passed (or, for a step that
/// is incomplete, gave what the next needs).
fn run_steps(
    run: &Run,
    plan: &Plan,
    seconds: &mut Seconds,
    machine: &mut Machine,
    suites_ran: &mut Option<SuitesRan>,
) -> Steps {
    let (release, target) = (plan.release, plan.target);
    let mut steps = Steps::not_run();
    let step = |name: &str| run.progress.step(release, target, name);

    step("the series applies (rebase-glibc --check)");
    steps.applies = match rebase::check_release(&run.workspace, release) {
        Ok((series, drift)) => StepOutcome::Done(Applies {
            patches: series.patches.len(),
            base: series.base,
            drift,
        }),
        Err(err) => StepOutcome::Error(format!("{err:#}")),
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
            steps.build = StepOutcome::Error(why.join("; "));
            return steps;
        }
    };
    let origin = |built: bool| if built { Origin::Built } else { Origin::Cached };
    steps.build = StepOutcome::Done(Build {
        patched: origin(patched.built),
        unpatched: origin(unpatched.built),
    });

    step("the resolution matrix, patched and unpatched (row 23)");
    let matrix_started = Instant::now();
    let patched_root = patched.sysroot.path.clone();
    steps.matrix = match crate::resolution::run_matrix(patched.sysroot, None) {
        Ok((matrix, _)) => StepOutcome::Done(Matrix::of(&matrix)),
        Err(err) => StepOutcome::Error(format!("{err:#}")),
    };
    steps.sensitivity = match crate::resolution::run_matrix(unpatched.sysroot, None) {
        Ok((matrix, _)) => match Sensitivity::of(&matrix) {
            Some(sensitivity) => StepOutcome::Done(sensitivity),
            None => StepOutcome::Error("the unpatched matrix gave no row-23 result".into()),
        },
        Err(err) => StepOutcome::Error(format!("{err:#}")),
    };
    seconds.matrix = matrix_started.elapsed().as_secs_f64();

    // A foreign target's tests run where QEMU runs every program of the target.
    let sandbox = if target.is_native() {
        None
    } else {
        let loader = patched_root.join(target.loader_path().trim_start_matches('/'));
        match Sandbox::probe(target, &loader) {
            Ok(sandbox) => {
                machine.runs = sandbox.runs.clone();
                Some(sandbox)
            }
            Err(err) => {
                let why = format!("glibc's tests cannot run here: {err:#}");
                machine.runs = why.clone();
                steps.series_tests = StepOutcome::Unavailable(why.clone());
                steps.elf_regressions = StepOutcome::Unavailable(why);
                return steps;
            }
        }
    };
    let suite_started = Instant::now();
    let results = suite_pair(&run.builder, plan, sandbox.as_ref(), "", |flavour| {
        step(&format!(
            "glibc's `make check subdirs={SUITE}`, {flavour} tree (~5 min)"
        ))
    });
    seconds.elf_suite_pair = suite_started.elapsed().as_secs_f64();
    let [(unpatched_results, unpatched_ran), (patched_results, patched_ran)] = match results {
        Ok(pair) => pair,
        Err(why) => {
            steps.series_tests = StepOutcome::Error(why.clone());
            steps.elf_regressions = StepOutcome::Error(why);
            return steps;
        }
    };
    *suites_ran = Some(SuitesRan {
        unpatched: unpatched_ran,
        patched: patched_ran,
    });
    // The series' tests: every test it adds, as the patched tree ran it (or did not).
    let series = match run.workspace.load_series(release) {
        Ok(series) => series,
        Err(err) => {
            steps.series_tests = StepOutcome::Error(format!("{err:#}"));
            return steps;
        }
    };
    let own = series_tests(&series);
    let tests = named(
        &own,
        &patched_results,
        "the patched tree's summary does not list it",
    );
    let imposed_by_qemu = imposed_by_qemu(target, &tests);
    steps.series_tests = StepOutcome::Done(SeriesTests {
        tests,
        imposed_by_qemu,
    });
    let (diff, facts) = Diff::between(&unpatched_results, &patched_results, &own);
    steps.elf_regressions = StepOutcome::Done(diff);
    machine.elf_suite = Some(facts);

    step("the series' tests against the unpatched loader (tests-only build)");
    let started = Instant::now();
    steps.without_the_patch = without_the_patch(run, plan, &own, sandbox.as_ref());
    seconds.without_the_patch = started.elapsed().as_secs_f64();

    steps.hardcoded_paths = if hardcoded_paths_apply(release, target) {
        step("glibc's elf suite and the series' tests with --enable-hardcoded-path-in-tests");
        let started = Instant::now();
        let found = hardcoded_paths(run, plan, &own, &series);
        seconds.hardcoded_paths = started.elapsed().as_secs_f64();
        found
    } else {
        StepOutcome::NotApplicable(format!(
            "the --enable-hardcoded-path-in-tests configuration is verified on {}",
            hardcoded_paths_cell()
        ))
    };
    steps
}

/// What the series directory (`patches/`, or `$LD_FALLBACK_PATCHES`) says of its tests
/// against the unpatched loader: its file [`DECLARATION`], which is data of the series, so
/// that the series and what is known of its tests change together.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Declaration {
    /// How the tests are run: [`Harness`].
    pub harness: u32,
    /// The series' tests observed to pass against the unpatched loader, each with why it
    /// does (what it checks that the loader does without the patch too). Every other test of
    /// the series must fail there.
    #[serde(default)]
    pub pass: BTreeMap<String, String>,
}

/// The file of the series directory that holds its [`Declaration`].
pub(crate) const DECLARATION: &str = "without-the-patch.json";

/// How a series' tests are run against the unpatched loader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Harness {
    /// 1: in the build tree as an earlier run left it, test container roots included: a
    /// container test ran under whatever loader the root held (the patched one, after the
    /// patched tree's `make check`), and nothing says which. Kept only so that a record
    /// made that way is made the same way again until its series moves on.
    KeptRoots,
    /// 2: in test container roots installed from the unpatched tree for the run, with the
    /// kind of the tree's and the root's loader recorded; a run under a patched loader fails.
    CleanRoots,
}

impl Declaration {
    /// The declaration of the series directory `patches`: its file, or, where it has none,
    /// the clean harness with no test passing without the patch.
    pub(crate) fn of(patches: &std::path::Path) -> anyhow::Result<Declaration> {
        let path = patches.join(DECLARATION);
        if !path.exists() {
            return Ok(Declaration {
                harness: 2,
                pass: BTreeMap::new(),
            });
        }
        let text = model::file::read_regular_text(
            &path,
            model::file::Limit {
                bytes: 1 << 20,
                what: "the series' declaration of its tests without the patch",
            },
        )
        .with_context(|| format!("cannot read {}", path.display()))?;
        let declared: Declaration = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a declaration of the series' tests without the patch",
                path.display()
            )
        })?;
        declared
            .harness_kind()
            .with_context(|| format!("in {}", path.display()))?;
        Ok(declared)
    }

    pub(crate) fn harness_kind(&self) -> anyhow::Result<Harness> {
        match self.harness {
            1 => Ok(Harness::KeptRoots),
            2 => Ok(Harness::CleanRoots),
            n => anyhow::bail!("harness {n} is not known: 1 (test roots kept) or 2 (clean roots)"),
        }
    }

    /// What a cell's key takes of it: the harness and the declared tests, in order.
    pub(crate) fn id(&self) -> String {
        let mut text = format!("harness {}", self.harness);
        for (test, why) in &self.pass {
            text.push_str(&format!("\npass {test} {why}"));
        }
        text
    }
}

/// The series' tests in a `tests-only` build (the series without its loader change), each
/// run on its own through glibc's make, and what each must do there: fail, unless the
/// series' [`Declaration`] says it passes, and why.
fn without_the_patch(
    run: &Run,
    plan: &Plan,
    tests: &[String],
    sandbox: Option<&Sandbox>,
) -> StepOutcome<WithoutThePatch> {
    let (release, target) = (plan.release, plan.target);
    let declared = match Declaration::of(&run.workspace.patches_dir)
        .and_then(|d| d.harness_kind().map(|h| (d, h)))
    {
        Ok(declared) => declared,
        Err(err) => return StepOutcome::Error(format!("{err:#}")),
    };
    let (declared, harness) = declared;
    let results = match harness {
        Harness::KeptRoots => run
            .builder
            .key(release, target, Flavour::TestsOnly)
            .and_then(|(key, _)| {
                testsuite::results_for(&key, "elf-series-tests", || {
                    let tree = run.builder.tree(release, target, Flavour::TestsOnly)?;
                    testsuite::run_tests(&tree, SUITE, tests, run.builder.jobs, sandbox)
                })
            })
            .map(|(results, _)| (results, None)),
        // Run every time: the evidence of the loaders is of this run.
        Harness::CleanRoots => run
            .builder
            .tree(release, target, Flavour::TestsOnly)
            .and_then(|tree| {
                testsuite::run_tests_in_clean_roots(
                    &tree,
                    target,
                    SUITE,
                    tests,
                    run.builder.jobs,
                    sandbox,
                )
            })
            .map(|(results, loaders)| (results, Some(loaders))),
    }
    .context("cannot run the series' tests against the unpatched loader");
    let (results, loaders) = match results {
        Ok(found) => found,
        Err(err) => return StepOutcome::Error(format!("{err:#}")),
    };
    let tests = named(tests, &results, "the tests-only build did not run it");
    let by_design = declared
        .pass
        .iter()
        .filter(|(test, _)| tests.iter().any(|t| t.test == **test))
        .map(|(test, why)| (test.clone(), why.clone()))
        .collect();
    let imposed_by_qemu = imposed_by_qemu(target, &tests);
    StepOutcome::Done(WithoutThePatch {
        tests,
        by_design,
        imposed_by_qemu,
        loaders,
    })
}

/// `glibc 2.44 x86_64`: the cells that verify the hardcoded-path configuration.
fn hardcoded_paths_cell() -> String {
    let cells: Vec<String> = model::supported()
        .iter()
        .flat_map(|r| {
            r.facts()
                .hardcoded_path_in_tests
                .iter()
                .map(move |t| format!("glibc {r} {t}"))
        })
        .collect();
    match cells.is_empty() {
        true => "no cell (data/releases.json declares none)".to_string(),
        false => cells.join(", "),
    }
}

/// The series' tests the series builds only without `--enable-hardcoded-path-in-tests`, and
/// why (its elf/Makefile says so too).
const NOT_BUILT_WITH_HARDCODED_PATHS: &[(&str, &str)] = &[(
    "elf/tst-fallback-path-container",
    "built only without --enable-hardcoded-path-in-tests, like tst-glibc-hwcaps-prepend-cache: the test program's DT_RPATH into the build tree would find the marker module before ld.so.cache and the default directories",
)];

/// The cell's steps again in the `--enable-hardcoded-path-in-tests` configuration: both
/// trees' elf suites, compared; the series' tests; the upstream tests the series changes.
fn hardcoded_paths(
    run: &Run,
    plan: &Plan,
    own: &[String],
    series: &Series,
) -> StepOutcome<HardcodedPaths> {
    let builder = run
        .builder
        .configured(crate::sysroot::recipe::Configuration::HardcodedPathInTests);
    let [(unpatched, _), (patched, _)] = match suite_pair(
        &builder,
        plan,
        None,
        " with --enable-hardcoded-path-in-tests",
        |_| {},
    ) {
        Ok(pair) => pair,
        Err(why) => return StepOutcome::Error(why),
    };
    let not_built: BTreeMap<String, String> = NOT_BUILT_WITH_HARDCODED_PATHS
        .iter()
        .filter(|(test, _)| own.iter().any(|t| t == test))
        .map(|(test, why)| (test.to_string(), why.to_string()))
        .collect();
    let built: Vec<String> = own
        .iter()
        .filter(|t| !not_built.contains_key(*t))
        .cloned()
        .collect();
    let tests = named(
        &built,
        &patched,
        "the patched tree's summary does not list it",
    );
    let (diff, _) = Diff::between(&unpatched, &patched, &built);
    let changed_upstream = changed_tests(series)
        .into_iter()
        .filter(|test| patched.contains_key(test) || unpatched.contains_key(test))
        .collect::<Vec<_>>();
    let changed_upstream = named(
        &changed_upstream,
        &patched,
        "the patched tree's summary does not list it",
    );
    StepOutcome::Done(HardcodedPaths {
        series_tests: SeriesTests {
            tests,
            imposed_by_qemu: BTreeMap::new(),
        },
        not_built,
        elf_regressions: diff,
        changed_upstream,
    })
}

/// glibc's elf suite in the unpatched and the patched tree of `builder`'s configuration, each
/// from the record of an earlier run of the same build where there is one (`results_for`),
/// with when it ran; or what failed, for the step's error. `starting` is told each flavour
/// before its run.
fn suite_pair(
    builder: &crate::sysroot::Builder,
    plan: &Plan,
    sandbox: Option<&Sandbox>,
    configured: &str,
    starting: impl Fn(Flavour),
) -> std::result::Result<[(testsuite::Results, SuiteRun); 2], String> {
    let (release, target) = (plan.release, plan.target);
    let results = [Flavour::Unpatched, Flavour::Patched].map(|flavour| {
        starting(flavour);
        let key = builder.key(release, target, flavour)?.0;
        testsuite::results_for(&key, SUITE, || {
            let tree = builder.tree(release, target, flavour)?;
            testsuite::run_check(&tree, SUITE, builder.jobs, sandbox)
        })
        .with_context(|| format!("cannot run glibc's tests in the {flavour} tree{configured}"))
    });
    match results {
        [Ok(u), Ok(p)] => Ok([u, p]),
        [u, p] => Err([u, p]
            .into_iter()
            .filter_map(|r| r.err().map(|e| format!("{e:#}")))
            .collect::<Vec<_>>()
            .join("; ")),
    }
}

/// `tests` with their results; a test `results` lacks is UNRESOLVED, for `why`.
fn named(tests: &[String], results: &testsuite::Results, why: &str) -> Vec<Named> {
    tests
        .iter()
        .map(|name| match results.get(name) {
            Some(r) => Named {
                test: name.clone(),
                status: r.status,
                reason: r.reason.clone(),
            },
            None => Named {
                test: name.clone(),
                status: Status::Unresolved,
                reason: Some(why.into()),
            },
        })
        .collect()
}

/// The tests among `tests` that ended UNSUPPORTED for a reason QEMU user mode imposes, on an
/// emulated target.
fn imposed_by_qemu(target: Target, tests: &[Named]) -> BTreeMap<String, String> {
    tests
        .iter()
        .filter(|t| !target.is_native() && t.status == Status::Unsupported)
        .filter_map(|t| {
            let why = emulated::imposed_by_qemu(t.reason.as_deref()?)?;
            Some((t.test.clone(), why.to_string()))
        })
        .collect()
}

/// The machine the cell runs on, as far as it is known before any step.
fn machine_here(target: Target) -> Machine {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let field = |name: &str| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        })
    };
    let cpu = field("model name")
        .or_else(|| field("CPU part").map(|part| format!("CPU part {part}")))
        .unwrap_or_else(|| "unknown".into());
    Machine {
        cpu: format!(
            "{cpu} ({} cores)",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
        kernel: format!("Linux {}", read("/proc/sys/kernel/osrelease").trim()),
        runs: if target.is_native() {
            "natively".into()
        } else {
            String::new()
        },
        elf_suite: None,
    }
}

/// `elf/tst-...` for every test the series adds: each `elf/tst-*.c` it creates that is a
/// test program (it includes glibc's test driver, `<support/test-driver.c>`, or the older
/// `test-skeleton.c`), not a module a test loads. An upstream test the series only changes
/// (tst-env-setuid, which gains LD_FALLBACK_PATH) is glibc's own: compared patched vs
/// unpatched like every other, not one of the series' tests.
pub(crate) fn series_tests(series: &Series) -> Vec<String> {
    let mut tests: Vec<String> = series
        .patches
        .iter()
        .flat_map(|patch| added_tests(&patch.text))
        .collect();
    tests.sort();
    tests.dedup();
    tests
}

/// The test programs among the `elf/tst-*.c` files a patch creates.
fn added_tests(patch: &str) -> Vec<String> {
    let mut tests = Vec::new();
    // The file being read: its test name, whether the patch creates it, and whether it is a
    // test program.
    let mut current: Option<(String, bool, bool)> = None;
    let mut finish = |file: Option<(String, bool, bool)>| {
        if let Some((name, true, true)) = file {
            tests.push(name);
        }
    };
    for line in patch.lines() {
        if let Some(paths) = line.strip_prefix("diff --git a/") {
            finish(current.take());
            current = paths
                .split_once(" b/")
                .and_then(|(_, path)| path.strip_prefix("elf/tst-"))
                .and_then(|rest| rest.strip_suffix(".c"))
                .map(|stem| (format!("elf/tst-{stem}"), false, false));
        } else if let Some((_, created, is_test)) = &mut current {
            if line.starts_with("new file mode ") {
                *created = true;
            } else if line.starts_with("+#include") && is_test_driver(line) {
                *is_test = true;
            }
        }
    }
    finish(current);
    tests
}

/// `elf/tst-...` for every upstream `elf/tst-*.c` the series changes without creating it
/// (tst-env-setuid, which gains LD_FALLBACK_PATH): a test or a module; the caller keeps those
/// a test run lists.
fn changed_tests(series: &Series) -> Vec<String> {
    let mut changed = Vec::new();
    for patch in &series.patches {
        let mut current: Option<(String, bool)> = None;
        let mut finish = |file: Option<(String, bool)>| {
            if let Some((name, false)) = file {
                changed.push(name);
            }
        };
        for line in patch.text.lines() {
            if let Some(paths) = line.strip_prefix("diff --git a/") {
                finish(current.take());
                current = paths
                    .split_once(" b/")
                    .and_then(|(_, path)| path.strip_prefix("elf/tst-"))
                    .and_then(|rest| rest.strip_suffix(".c"))
                    .map(|stem| (format!("elf/tst-{stem}"), false));
            } else if line.starts_with("new file mode ") {
                if let Some((_, created)) = &mut current {
                    *created = true;
                }
            }
        }
        finish(current);
    }
    changed.sort();
    changed.dedup();
    changed
}

fn is_test_driver(include: &str) -> bool {
    include.contains("support/test-driver.c") || include.contains("test-skeleton.c")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell whose runs are all recorded is estimated at its matrix, not at its cold cost.
    #[test]
    fn recorded_runs_are_not_estimated_as_runs() {
        let release = Release::parse("2.44").unwrap();
        let cold = Plan {
            release,
            target: Target::X86_64,
            cached: [true, true],
            recorded: Recorded::default(),
        };
        let warm = Plan {
            recorded: Recorded {
                suites: true,
                without_the_patch: true,
                hardcoded: true,
            },
            ..cold
        };
        assert!(
            cold.estimate_minutes() > 30.0,
            "{}",
            cold.estimate_minutes()
        );
        assert!(warm.estimate_minutes() < 1.0, "{}", warm.estimate_minutes());
    }

    #[test]
    fn the_series_tests_are_the_test_programs_it_adds() {
        let patch = "diff --git a/elf/tst-env-setuid.c b/elf/tst-env-setuid.c\nindex 1..2 100644\n--- a/elf/tst-env-setuid.c\n+++ b/elf/tst-env-setuid.c\n@@ -1 +1 @@\n-a\n+#include <support/test-driver.c>\ndiff --git a/elf/tst-fallback-path.c b/elf/tst-fallback-path.c\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/elf/tst-fallback-path.c\n@@ -0,0 +1,2 @@\n+static int do_test (void) { return 0; }\n+#include <support/test-driver.c>\ndiff --git a/elf/tst-fallback-path-mod.c b/elf/tst-fallback-path-mod.c\nnew file mode 100644\n--- /dev/null\n+++ b/elf/tst-fallback-path-mod.c\n@@ -0,0 +1 @@\n+int f (void) { return 1; }\ndiff --git a/elf/tst-old.c b/elf/tst-old.c\nnew file mode 100644\n--- /dev/null\n+++ b/elf/tst-old.c\n@@ -0,0 +1 @@\n+#include \"../test-skeleton.c\"\ndiff --git a/elf/Makefile b/elf/Makefile\n";
        assert_eq!(
            added_tests(patch),
            ["elf/tst-fallback-path", "elf/tst-old"],
            "a changed upstream test and a module are not the series' tests"
        );
    }

    /// What a series directory declares of its tests without the patch: its file, or
    /// the clean harness with nothing passing; a harness it does not know, or a field it
    /// does not know, is refused naming the file.
    #[test]
    fn a_series_directory_declares_its_harness_and_what_passes() {
        let dir = tempfile::tempdir().unwrap();
        let none = Declaration::of(dir.path()).unwrap();
        assert_eq!(none.harness_kind().unwrap(), Harness::CleanRoots);
        assert!(none.pass.is_empty());
        let file = dir.path().join(DECLARATION);
        std::fs::write(&file, r#"{"harness": 2, "pass": {"elf/tst-a": "why"}}"#).unwrap();
        let declared = Declaration::of(dir.path()).unwrap();
        assert_eq!(declared.pass["elf/tst-a"], "why");
        assert_ne!(
            declared.id(),
            none.id(),
            "the cell's key takes the declaration"
        );
        std::fs::write(&file, r#"{"harness": 3}"#).unwrap();
        let err = format!("{:#}", Declaration::of(dir.path()).unwrap_err());
        assert!(
            err.contains("harness 3 is not known") && err.contains(DECLARATION),
            "{err}"
        );
        std::fs::write(&file, r#"{"harness": 2, "by_design": {}}"#).unwrap();
        let err = format!("{:#}", Declaration::of(dir.path()).unwrap_err());
        assert!(err.contains("is not a declaration"), "{err}");
        // The checkout's series: the old harness, until a series verified in clean roots
        // replaces it with what was observed there.
        let patches = crate::util::paths::project_root().join("patches");
        let checkout = Declaration::of(&patches).unwrap();
        assert!(checkout.harness_kind().is_ok());
    }

    /// The committed series: 15 test programs each, modules apart.
    #[test]
    fn every_committed_series_adds_its_test_programs() {
        let patches = crate::util::paths::project_root().join("patches");
        for release in model::supported() {
            let series = Series::load(&patches.join(release.version())).unwrap();
            let tests = series_tests(&series);
            assert!(
                tests.iter().all(|t| t.starts_with("elf/tst-fallback-path")),
                "{release}: {tests:?}"
            );
            assert!(
                !tests.iter().any(|t| t.ends_with("mod")),
                "{release}: {tests:?}"
            );
            assert!(tests.contains(&"elf/tst-fallback-path".to_string()));
        }
    }
}
