//! What a cell's verification found, as data: each step's figures, the step's verdict derived
//! from them ([`StepOutcome::verdict`], one [`Figures::verdict`] per kind of step), and the cell's
//! state derived from the verdicts ([`CellReport::state`]). Nothing here is read back from
//! text; render.rs turns it into text, and a report read from JSON is judged again from its
//! figures (what it says of itself is kept apart, see [`CellReport::contradictions`]).

use std::collections::{BTreeMap, BTreeSet};

use loader_tests::report::{self, MatrixReport};
use model::Target;
use serde::{Deserialize, Serialize};

use super::testsuite::{self, Diff, Named, Status, SuiteFacts, SuitesRan};
use model::Release;

/// A step's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StepVerdict {
    Pass,
    Fail,
    /// Nothing failed, but something that applies to the cell could not be looked at here (a
    /// scenario skipped for a missing input, a series test UNSUPPORTED): it proves nothing.
    Incomplete,
    /// Not for this cell, by design (glibc's own tests under QEMU).
    NotApplicable,
    /// An earlier step failed.
    NotRun,
}

/// Where a cell stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CellState {
    /// Every step that applies ran and passed.
    Verified,
    /// A step failed (or could not run because an earlier one failed).
    Failed,
    /// Nothing failed, but these could not be looked at here.
    Incomplete(Vec<String>),
    /// No current report: the cell claims nothing (`verify --cached-only`).
    NotVerified,
}

/// How one step of a cell ended: its figures, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StepOutcome<T> {
    Done(T),
    /// The machinery failed (a build, the store, a harness that could not start): a failure.
    Error(String),
    /// Not for this cell, by design, and why.
    NotApplicable(String),
    /// It applies, but this machine cannot run it (a kernel without a private binfmt_misc),
    /// and why: the cell is incomplete.
    Unavailable(String),
    /// An earlier step failed.
    NotRun,
}

/// The figures of a kind of step, which decide its verdict.
pub(crate) trait Figures {
    fn verdict(&self) -> StepVerdict;

    /// What could not be looked at, when the verdict is [`StepVerdict::Incomplete`].
    fn missing(&self) -> Vec<String> {
        Vec::new()
    }
}

impl<T: Figures> StepOutcome<T> {
    /// The one place a step's verdict comes from: its figures, or how it ended without any.
    pub(crate) fn verdict(&self) -> StepVerdict {
        match self {
            StepOutcome::Done(figures) => figures.verdict(),
            StepOutcome::Error(_) => StepVerdict::Fail,
            StepOutcome::NotApplicable(_) => StepVerdict::NotApplicable,
            StepOutcome::Unavailable(_) => StepVerdict::Incomplete,
            StepOutcome::NotRun => StepVerdict::NotRun,
        }
    }

    fn missing(&self) -> Vec<String> {
        match self {
            StepOutcome::Done(figures) if figures.verdict() == StepVerdict::Incomplete => {
                figures.missing()
            }
            StepOutcome::Unavailable(why) => vec![why.clone()],
            _ => Vec::new(),
        }
    }

    pub(crate) fn figures(&self) -> Option<&T> {
        match self {
            StepOutcome::Done(figures) => Some(figures),
            _ => None,
        }
    }
}

/// `rebase-glibc --check`: the series applies exactly to its release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Applies {
    pub patches: usize,
    /// The release the series is for (read back from a `glibc-X.Y` tag too, as records
    /// before it was a release wrote it).
    pub base: Release,
    /// Files of patches/ that differ from what the series gives.
    pub drift: Vec<String>,
}

impl Figures for Applies {
    fn verdict(&self) -> StepVerdict {
        if self.drift.is_empty() {
            StepVerdict::Pass
        } else {
            StepVerdict::Fail
        }
    }
}

/// Both sysroots exist (a failed build is the step's [`StepOutcome::Error`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Build {
    pub patched: Origin,
    pub unpatched: Origin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Origin {
    Built,
    Cached,
}

impl Figures for Build {
    fn verdict(&self) -> StepVerdict {
        StepVerdict::Pass
    }
}

/// The resolution matrix against one loader, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Matrix {
    pub total: usize,
    pub pass: usize,
    pub fails_without_patch: usize,
    /// Ids of the scenarios that mismatched.
    pub mismatch: Vec<String>,
    /// Scenarios that could not run for a missing input (not root, the archive unreachable).
    pub skipped: Vec<Unrun>,
    /// Scenarios that do not apply here, as the scenario table declares.
    pub not_applicable: Vec<Unrun>,
}

/// A scenario that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Unrun {
    pub id: String,
    pub reason: String,
}

impl Matrix {
    pub(crate) fn of(report: &MatrixReport) -> Matrix {
        let mut matrix = Matrix {
            total: report.scenarios.len(),
            ..Matrix::default()
        };
        for outcome in &report.scenarios {
            let unrun = |reason: &str| Unrun {
                id: outcome.id.to_string(),
                reason: reason.to_string(),
            };
            match &outcome.verdict {
                report::ScenarioVerdict::Pass => matrix.pass += 1,
                report::ScenarioVerdict::FailsWithoutPatch => matrix.fails_without_patch += 1,
                report::ScenarioVerdict::Mismatch => matrix.mismatch.push(outcome.id.to_string()),
                report::ScenarioVerdict::Skipped(reason) => matrix.skipped.push(unrun(reason)),
                report::ScenarioVerdict::NotApplicable(reason) => {
                    matrix.not_applicable.push(unrun(reason))
                }
            }
        }
        matrix
    }

    /// Every scenario is counted once.
    fn adds_up(&self) -> bool {
        self.pass
            + self.fails_without_patch
            + self.mismatch.len()
            + self.skipped.len()
            + self.not_applicable.len()
            == self.total
    }

    /// Where the figures are not those of a whole run of the scenario table on `target`: a
    /// total that is not the table's, an id the table does not have (or named twice), an n/a
    /// the table does not declare for the target.
    pub(crate) fn gaps(&self, target: Target, loader: &str) -> Vec<String> {
        use loader_tests::matrix::{Condition, MATRIX};
        let mut gaps = Vec::new();
        if self.total != MATRIX.len() {
            gaps.push(format!(
                "the {loader} matrix counts {} scenarios, the table has {}",
                self.total,
                MATRIX.len()
            ));
        }
        let mut seen = BTreeSet::new();
        let named = self
            .mismatch
            .iter()
            .chain(self.skipped.iter().map(|u| &u.id))
            .chain(self.not_applicable.iter().map(|u| &u.id));
        for id in named {
            if loader_tests::matrix::find(id).is_none() {
                gaps.push(format!(
                    "the {loader} matrix names {id}, which the table lacks"
                ));
            } else if !seen.insert(id.as_str()) {
                gaps.push(format!("the {loader} matrix names {id} twice"));
            }
        }
        for unrun in &self.not_applicable {
            let declared = loader_tests::matrix::find(&unrun.id)
                .and_then(|s| s.not_applicable)
                .is_some_and(|n| match n.when {
                    Condition::Emulated => !target.is_native(),
                });
            if !declared {
                gaps.push(format!(
                    "the {loader} matrix calls {} n/a, which the table does not declare on {target}",
                    unrun.id
                ));
            }
        }
        gaps
    }

    /// Pass when nothing mismatched and everything that applies ran; incomplete on a skip.
    fn verdict(&self) -> StepVerdict {
        if !self.adds_up() || !self.mismatch.is_empty() {
            StepVerdict::Fail
        } else if !self.skipped.is_empty() {
            StepVerdict::Incomplete
        } else {
            StepVerdict::Pass
        }
    }

    /// The skips, one line per reason: `<loader> matrix skipped 12-a, 13-b: <reason>`.
    fn missing(&self, loader: &str) -> Vec<String> {
        let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for skip in &self.skipped {
            by_reason.entry(&skip.reason).or_default().push(&skip.id);
        }
        by_reason
            .into_iter()
            .map(|(reason, ids)| format!("{loader} matrix skipped {}: {reason}", ids.join(", ")))
            .collect()
    }
}

impl Figures for Matrix {
    fn verdict(&self) -> StepVerdict {
        Matrix::verdict(self)
    }

    fn missing(&self) -> Vec<String> {
        Matrix::missing(self, "patched")
    }
}

/// Row 23 of the contract: the matrix against the unpatched loader, and which scenarios
/// differ from the patched expectation there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sensitivity {
    pub matrix: Matrix,
    pub differing: BTreeSet<String>,
    pub needing_the_patch: BTreeSet<String>,
}

impl Sensitivity {
    /// `None` for a report without row 23 (a filtered or patched run).
    pub(crate) fn of(report: &MatrixReport) -> Option<Sensitivity> {
        let row = report.sensitivity.as_ref()?;
        let ids = |set: &BTreeSet<&str>| set.iter().map(|id| id.to_string()).collect();
        Some(Sensitivity {
            matrix: Matrix::of(report),
            differing: ids(&row.differing),
            needing_the_patch: ids(&row.needing_the_patch),
        })
    }

    /// Without the patch, exactly the scenarios that need it differ (and some do).
    pub(crate) fn holds(&self) -> bool {
        !self.needing_the_patch.is_empty() && self.differing == self.needing_the_patch
    }
}

impl Figures for Sensitivity {
    fn verdict(&self) -> StepVerdict {
        match self.matrix.verdict() {
            StepVerdict::Fail => StepVerdict::Fail,
            _ if !self.holds() => StepVerdict::Fail,
            verdict => verdict,
        }
    }

    fn missing(&self) -> Vec<String> {
        self.matrix.missing("unpatched")
    }
}

/// The series' own tests, as glibc's test machinery ran them in the patched tree: one for
/// every test source the series adds (one the tree did not run is there as UNRESOLVED).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SeriesTests {
    pub tests: Vec<Named>,
    /// On an emulated target, the tests among them that ended UNSUPPORTED for a reason QEMU
    /// user mode imposes (`emulated::IMPOSED_BY_QEMU`), with why: declared, not missing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub imposed_by_qemu: BTreeMap<String, String>,
}

impl SeriesTests {
    /// The UNSUPPORTED tests nothing declares: each is a look the series' tests did not take.
    fn undeclared_unsupported(&self) -> impl Iterator<Item = &Named> {
        undeclared_unsupported(&self.tests, &self.imposed_by_qemu)
    }
}

/// The tests of `tests` that ended UNSUPPORTED for a reason QEMU user mode does not impose.
fn undeclared_unsupported<'a>(
    tests: &'a [Named],
    imposed_by_qemu: &'a BTreeMap<String, String>,
) -> impl Iterator<Item = &'a Named> {
    tests
        .iter()
        .filter(|t| t.status == Status::Unsupported && !imposed_by_qemu.contains_key(&t.test))
}

impl Figures for SeriesTests {
    /// None ran, or one failed: fail. One UNSUPPORTED that QEMU does not impose: the series'
    /// own test did not look, so the step is incomplete.
    fn verdict(&self) -> StepVerdict {
        if self.tests.is_empty() || self.tests.iter().any(|t| t.status.is_failure()) {
            StepVerdict::Fail
        } else if self.undeclared_unsupported().next().is_some() {
            StepVerdict::Incomplete
        } else {
            StepVerdict::Pass
        }
    }

    fn missing(&self) -> Vec<String> {
        self.undeclared_unsupported()
            .map(|t| {
                format!(
                    "series test {} UNSUPPORTED: {}",
                    t.test,
                    t.reason.as_deref().unwrap_or("no reason given")
                )
            })
            .collect()
    }
}

/// The series' own tests against the unpatched loader (the `tests-only` build: the series'
/// tests and support code without its loader change). A test of the patch must fail there;
/// a test that passes there checks something the loader does without the patch too, and the
/// series says so, with the reason (`cell::Declaration`, data of the series directory): else
/// it could not fail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WithoutThePatch {
    /// Every test of the series, as it ended against the unpatched loader.
    pub tests: Vec<Named>,
    /// The tests among them the series declares to pass there, with why (the name of the
    /// field is the record's).
    pub by_design: BTreeMap<String, String>,
    /// On an emulated target, the tests that ended UNSUPPORTED for a reason QEMU user mode
    /// imposes, with why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub imposed_by_qemu: BTreeMap<String, String>,
    /// The loaders the run's tests ran under, asked after it (a run in clean test roots);
    /// none in a record of a run in the roots an earlier run left, which could not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaders: Option<testsuite::Loaders>,
}

impl WithoutThePatch {
    /// The tests that passed without the patch although nothing declares why: tests that
    /// cannot fail, or declarations that no longer hold (a declared test that failed).
    pub(crate) fn wrong(&self) -> Vec<String> {
        let mut wrong = Vec::new();
        for t in &self.tests {
            let declared = self.by_design.contains_key(&t.test);
            let passed = matches!(t.status, Status::Pass | Status::Xpass);
            match (passed, declared) {
                (true, false) => wrong.push(format!("{} passes without the patch", t.test)),
                (false, true) if t.status != Status::Unsupported => wrong.push(format!(
                    "{} is declared to pass without the patch, and ended {}",
                    t.test, t.status
                )),
                _ => {}
            }
            if t.status == Status::Unresolved {
                wrong.push(format!("{} never ran", t.test));
            }
        }
        if let Some(loaders) = &self.loaders {
            for problem in loaders.not(&testsuite::LoaderKind::Unpatched) {
                wrong.push(format!("not the unpatched loader: {problem}"));
            }
        }
        wrong
    }

    fn undeclared_unsupported(&self) -> impl Iterator<Item = &Named> {
        undeclared_unsupported(&self.tests, &self.imposed_by_qemu)
    }
}

impl Figures for WithoutThePatch {
    fn verdict(&self) -> StepVerdict {
        if self.tests.is_empty() || !self.wrong().is_empty() {
            StepVerdict::Fail
        } else if self.undeclared_unsupported().next().is_some() {
            StepVerdict::Incomplete
        } else {
            StepVerdict::Pass
        }
    }

    fn missing(&self) -> Vec<String> {
        self.undeclared_unsupported()
            .map(|t| {
                format!(
                    "series test {} UNSUPPORTED without the patch: {}",
                    t.test,
                    t.reason.as_deref().unwrap_or("no reason given")
                )
            })
            .collect()
    }
}

/// The series in glibc's `--enable-hardcoded-path-in-tests` configuration, where declared
/// ([`hardcoded_paths_apply`]): tests linked with the build tree's paths as DT_RPATH and run
/// directly, as many maintainers build. glibc's elf suite in both trees of that
/// configuration, compared; the series' tests there; and the upstream tests the series
/// changes, which some run only in this configuration (tst-env-setuid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HardcodedPaths {
    pub series_tests: SeriesTests,
    /// The series' tests the series builds only without the configuration, with why.
    pub not_built: BTreeMap<String, String>,
    pub elf_regressions: Diff,
    /// The upstream tests the series changes, as the patched tree ran them: each must pass.
    pub changed_upstream: Vec<Named>,
}

impl Figures for HardcodedPaths {
    fn verdict(&self) -> StepVerdict {
        let changed_pass = !self.changed_upstream.is_empty()
            && self
                .changed_upstream
                .iter()
                .all(|t| t.status == Status::Pass);
        match (self.series_tests.verdict(), self.elf_regressions.verdict()) {
            (StepVerdict::Fail, _) | (_, StepVerdict::Fail) => StepVerdict::Fail,
            _ if !changed_pass => StepVerdict::Fail,
            (StepVerdict::Incomplete, _) => StepVerdict::Incomplete,
            _ => StepVerdict::Pass,
        }
    }

    fn missing(&self) -> Vec<String> {
        self.series_tests
            .missing()
            .into_iter()
            .map(|m| format!("{m} (--enable-hardcoded-path-in-tests)"))
            .collect()
    }
}

impl Figures for Diff {
    fn verdict(&self) -> StepVerdict {
        if self.passes() {
            StepVerdict::Pass
        } else {
            StepVerdict::Fail
        }
    }
}

/// Where the hardcoded-path configuration is verified: the cells data/releases.json declares
/// (`hardcoded_path_in_tests`; today the release that was newest when it was chosen,
/// natively: what a maintainer building for a distribution builds most). Its builds and
/// suites cost as much as a cell's again, so it is one cell, not every one. Declared, not
/// derived from the newest release: a new release leaves every other cell's verdict as it
/// was, and moving the configuration is a maintainer's decision.
pub(crate) fn hardcoded_paths_apply(release: Release, target: Target) -> bool {
    release.facts().hardcoded_path_in_tests.contains(&target)
}

/// The steps of a cell, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StepName {
    Applies,
    Build,
    Matrix,
    Sensitivity,
    SeriesTests,
    ElfRegressions,
    WithoutThePatch,
    HardcodedPaths,
}

/// Everything a cell's run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Steps {
    pub applies: StepOutcome<Applies>,
    pub build: StepOutcome<Build>,
    pub matrix: StepOutcome<Matrix>,
    pub sensitivity: StepOutcome<Sensitivity>,
    pub series_tests: StepOutcome<SeriesTests>,
    /// glibc's own tests of `elf/`, patched vs unpatched.
    pub elf_regressions: StepOutcome<Diff>,
    /// The series' tests against the unpatched loader.
    pub without_the_patch: StepOutcome<WithoutThePatch>,
    /// The series with `--enable-hardcoded-path-in-tests` (n/a where not declared).
    pub hardcoded_paths: StepOutcome<HardcodedPaths>,
}

impl Steps {
    /// A run that has not got anywhere yet.
    pub(crate) fn not_run() -> Steps {
        Steps {
            applies: StepOutcome::NotRun,
            build: StepOutcome::NotRun,
            matrix: StepOutcome::NotRun,
            sensitivity: StepOutcome::NotRun,
            series_tests: StepOutcome::NotRun,
            elf_regressions: StepOutcome::NotRun,
            without_the_patch: StepOutcome::NotRun,
            hardcoded_paths: StepOutcome::NotRun,
        }
    }

    pub(crate) fn verdicts(&self) -> [(StepName, StepVerdict); 8] {
        [
            (StepName::Applies, self.applies.verdict()),
            (StepName::Build, self.build.verdict()),
            (StepName::Matrix, self.matrix.verdict()),
            (StepName::Sensitivity, self.sensitivity.verdict()),
            (StepName::SeriesTests, self.series_tests.verdict()),
            (StepName::ElfRegressions, self.elf_regressions.verdict()),
            (StepName::WithoutThePatch, self.without_the_patch.verdict()),
            (StepName::HardcodedPaths, self.hardcoded_paths.verdict()),
        ]
    }

    /// The cell's state, from the verdicts: a failure (or a step left unrun) fails it; else a
    /// step that could not look everywhere makes it incomplete; else it is verified.
    pub(crate) fn state(&self) -> CellState {
        let verdicts = self.verdicts();
        if verdicts
            .iter()
            .any(|(_, v)| matches!(v, StepVerdict::Fail | StepVerdict::NotRun))
        {
            return CellState::Failed;
        }
        if verdicts.iter().any(|(_, v)| *v == StepVerdict::Incomplete) {
            let mut missing = self.matrix.missing();
            missing.extend(self.sensitivity.missing());
            missing.extend(self.series_tests.missing());
            missing.extend(self.elf_regressions.missing());
            missing.extend(self.without_the_patch.missing());
            missing.extend(self.hardcoded_paths.missing());
            return CellState::Incomplete(missing);
        }
        CellState::Verified
    }

    /// Where the figures are not whole for a cell of `target` (the checks that need nothing
    /// but the figures and the scenario table; check-support adds those that need patches/
    /// and the repository): a cell with any is failed, whatever its verdicts say.
    pub(crate) fn gaps(&self, release: Release, target: Target) -> Vec<String> {
        let mut gaps = Vec::new();
        // Every step applies to every cell (glibc's suite runs under QEMU too) but the
        // hardcoded-path configuration, which applies where it is declared: a record calling
        // a step n/a anywhere else is not a whole proof, nor one that leaves it out there.
        for (step, verdict) in self.verdicts() {
            let declared_na =
                step == StepName::HardcodedPaths && !hardcoded_paths_apply(release, target);
            if verdict == StepVerdict::NotApplicable && !declared_na {
                gaps.push(format!(
                    "{step:?} is n/a, and it applies to glibc {release} {target}"
                ));
            }
        }
        if self.hardcoded_paths.figures().is_some() && !hardcoded_paths_apply(release, target) {
            gaps.push(format!(
                "the hardcoded-path configuration has figures, and it is declared for another cell than glibc {release} {target}"
            ));
        }
        if let Some(matrix) = self.matrix.figures() {
            gaps.extend(matrix.gaps(target, "patched"));
        }
        if let Some(sensitivity) = self.sensitivity.figures() {
            gaps.extend(sensitivity.matrix.gaps(target, "unpatched"));
        }
        if let (Some(tests), Some(diff)) =
            (self.series_tests.figures(), self.elf_regressions.figures())
        {
            let ran: BTreeSet<&str> = tests
                .tests
                .iter()
                .filter(|t| t.status != Status::Unresolved)
                .map(|t| t.test.as_str())
                .collect();
            let own: BTreeSet<&str> = diff.series_own.iter().map(String::as_str).collect();
            if ran != own {
                gaps.push(format!(
                    "the series tests that ran ({}) are not the series' own tests the elf suite lists ({})",
                    ran.len(),
                    own.len()
                ));
            }
        }
        if let (Some(with), Some(without)) = (
            self.series_tests.figures(),
            self.without_the_patch.figures(),
        ) {
            let names = |tests: &[Named]| -> BTreeSet<String> {
                tests.iter().map(|t| t.test.clone()).collect()
            };
            if names(&with.tests) != names(&without.tests) {
                gaps.push(format!(
                    "the series tests run without the patch ({}) are not those run with it ({})",
                    without.tests.len(),
                    with.tests.len()
                ));
            }
        }
        if let (Some(with), Some(hardcoded)) =
            (self.series_tests.figures(), self.hardcoded_paths.figures())
        {
            let names = |tests: &[Named]| -> BTreeSet<String> {
                tests.iter().map(|t| t.test.clone()).collect()
            };
            let mut accounted = names(&hardcoded.series_tests.tests);
            accounted.extend(hardcoded.not_built.keys().cloned());
            if accounted != names(&with.tests) {
                gaps.push(format!(
                    "the series tests of the hardcoded-path configuration ({} run, {} not built) are not the series' tests ({})",
                    hardcoded.series_tests.tests.len(),
                    hardcoded.not_built.len(),
                    with.tests.len()
                ));
            }
        }
        gaps
    }
}

/// Seconds spent per kind of work (cache hits cost about nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Seconds {
    pub build_pair: f64,
    pub elf_suite_pair: f64,
    pub matrix: f64,
    /// The series' tests against the unpatched loader, its build included.
    #[serde(default)]
    pub without_the_patch: f64,
    /// The hardcoded-path configuration: its builds and both suites.
    #[serde(default)]
    pub hardcoded_paths: f64,
    pub total: f64,
}

/// One run of a cell's steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellRun {
    /// When the cell was verified (UTC), and from which project commit.
    pub verified_at: String,
    pub commit: String,
    /// What proves the patch: every step's figures, the same on any machine that runs the
    /// same inputs.
    pub steps: Steps,
    /// What describes the machine the steps ran on: never part of the proof.
    pub machine: Machine,
    pub seconds: Seconds,
    /// When glibc's suite ran in each tree: this run, or an earlier verify of the same build
    /// (absent where it did not run, and in records older than the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suites_ran: Option<SuitesRan>,
}

/// The machine a cell ran on, and what it made of glibc's tests without the patch being the
/// cause (tests failing in both trees, UNSUPPORTED ones): facts, not verdicts. check-support
/// reports where another machine's differ, and fails nothing for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Machine {
    /// `/proc/cpuinfo`'s model name (or its CPU part on machines without one).
    pub cpu: String,
    /// The kernel's release (`uname -r`).
    pub kernel: String,
    /// How the target's programs ran: natively, or under QEMU user mode and how.
    pub runs: String,
    /// glibc's `elf/` suite on this machine, where it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elf_suite: Option<SuiteFacts>,
}

/// Everything known about one cell (release, target).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "wire::Cell", from = "wire::Cell")]
pub(crate) struct CellReport {
    pub release: Release,
    pub target: Target,
    /// The series' content id (`Series::content_id`).
    pub series: String,
    /// Hash of every input of the verdict; a cached report counts only while it matches.
    pub key: String,
    /// `None`: no current report, the cell claims nothing.
    pub run: Option<CellRun>,
    /// Set when the report comes from the cache rather than from this run (not recorded).
    pub from_cache: bool,
    /// What a report read from JSON said of itself; `None` for one made here.
    claims: Option<wire::Claims>,
}

/// The same report: the same cell, inputs and run (where it was read from aside).
impl PartialEq for CellReport {
    fn eq(&self, other: &CellReport) -> bool {
        (
            self.release,
            self.target,
            &self.series,
            &self.key,
            &self.run,
        ) == (
            other.release,
            other.target,
            &other.series,
            &other.key,
            &other.run,
        )
    }
}

impl CellReport {
    pub(crate) fn new(release: Release, target: Target, series: String, key: String) -> CellReport {
        CellReport {
            release,
            target,
            series,
            key,
            run: None,
            from_cache: false,
            claims: None,
        }
    }

    /// The cell's state, derived from its figures: figures that are not whole fail it.
    pub(crate) fn state(&self) -> CellState {
        match &self.run {
            None => CellState::NotVerified,
            Some(run) if !run.steps.gaps(self.release, self.target).is_empty() => CellState::Failed,
            Some(run) => run.steps.state(),
        }
    }

    /// Where the figures are not whole (see [`Steps::gaps`]).
    pub(crate) fn gaps(&self) -> Vec<String> {
        self.run
            .as_ref()
            .map_or_else(Vec::new, |run| run.steps.gaps(self.release, self.target))
    }

    /// Where a report read from JSON says something of itself (its state, a step's verdict)
    /// that its figures do not give: an edited record.
    pub(crate) fn contradictions(&self) -> Vec<String> {
        let Some(claims) = &self.claims else {
            return Vec::new();
        };
        let derived = wire::Claims::of(self);
        let mut found = Vec::new();
        if claims.state != derived.state || claims.missing != derived.missing {
            found.push(format!(
                "it says {:?}{}, its figures give {:?}{}",
                claims.state,
                listed(&claims.missing),
                derived.state,
                listed(&derived.missing)
            ));
        }
        if claims.verdicts != derived.verdicts {
            for (step, verdict) in derived.verdicts.iter().flatten() {
                let said = claims.verdicts.as_ref().and_then(|v| v.get(step));
                if said != Some(verdict) {
                    let said = said.map_or("missing".to_string(), |v| format!("{v:?}"));
                    found.push(format!(
                        "it says {step:?} is {said}, its figures give {verdict:?}"
                    ));
                }
            }
            if derived.verdicts.is_none() {
                found.push("it gives verdicts for steps it never ran".to_string());
            }
        }
        found
    }
}

fn listed(items: &[String]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!(" ({})", items.join("; "))
    }
}

/// A cell as JSON: the figures, and for readers the state and verdicts they give (read back
/// as claims, never as the state).
mod wire {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub(super) enum State {
        Verified,
        Failed,
        Incomplete,
        NotVerified,
    }

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(super) struct Claims {
        pub state: State,
        pub missing: Vec<String>,
        pub verdicts: Option<BTreeMap<StepName, StepVerdict>>,
    }

    impl Claims {
        pub(super) fn of(report: &CellReport) -> Claims {
            let (state, missing) = match report.state() {
                CellState::Verified => (State::Verified, Vec::new()),
                CellState::Failed => (State::Failed, Vec::new()),
                CellState::Incomplete(missing) => (State::Incomplete, missing),
                CellState::NotVerified => (State::NotVerified, Vec::new()),
            };
            Claims {
                state,
                missing,
                verdicts: report
                    .run
                    .as_ref()
                    .map(|run| run.steps.verdicts().into_iter().collect()),
            }
        }
    }

    #[derive(Serialize, Deserialize)]
    pub(crate) struct Cell {
        release: Release,
        target: Target,
        series: String,
        key: String,
        state: State,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        missing: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdicts: Option<BTreeMap<StepName, StepVerdict>>,
        run: Option<CellRun>,
    }

    impl From<CellReport> for Cell {
        fn from(report: CellReport) -> Cell {
            let Claims {
                state,
                missing,
                verdicts,
            } = Claims::of(&report);
            Cell {
                release: report.release,
                target: report.target,
                series: report.series,
                key: report.key,
                state,
                missing,
                verdicts,
                run: report.run,
            }
        }
    }

    impl From<Cell> for CellReport {
        fn from(cell: Cell) -> CellReport {
            CellReport {
                release: cell.release,
                target: cell.target,
                series: cell.series,
                key: cell.key,
                run: cell.run,
                from_cache: false,
                claims: Some(Claims {
                    state: cell.state,
                    missing: cell.missing,
                    verdicts: cell.verdicts,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(pass: usize, skipped: &[&str], mismatch: &[&str]) -> Matrix {
        let unrun = |id: &&str| Unrun {
            id: id.to_string(),
            reason: "not root".into(),
        };
        Matrix {
            total: pass + skipped.len() + mismatch.len() + 1,
            pass,
            mismatch: mismatch.iter().map(|id| id.to_string()).collect(),
            skipped: skipped.iter().map(unrun).collect(),
            not_applicable: vec![Unrun {
                id: "21-ldd-script".into(),
                reason: "no bash".into(),
            }],
            ..Matrix::default()
        }
    }

    /// The loader's report, as the matrix gives it, becomes figures: n/a and skips apart.
    #[test]
    fn a_matrix_report_is_counted_with_its_skips_and_n_a_apart() {
        use loader_tests::matrix::{find, Answer};
        use loader_tests::report::{self, ScenarioOutcome};
        use model::Flavour;
        let outcome = |id: &str, verdict: report::ScenarioVerdict, actual: &str| {
            ScenarioOutcome::judged(
                find(id).unwrap(),
                Flavour::Unpatched,
                Answer::read(actual),
                verdict,
            )
        };
        let scenarios = vec![
            outcome(
                "21-list",
                report::ScenarioVerdict::FailsWithoutPatch,
                "not found",
            ),
            outcome("01-needed-bug", report::ScenarioVerdict::Pass, "driver"),
            outcome(
                "21-ldd-script",
                report::ScenarioVerdict::NotApplicable("no bash".into()),
                "-",
            ),
            outcome(
                "12-secure-dynamic",
                report::ScenarioVerdict::Skipped("not root".into()),
                "-",
            ),
        ];
        let matrix = MatrixReport {
            release: Release::parse("2.44").unwrap(),
            target: Target::Aarch64,
            flavour: Flavour::Unpatched,
            summary: report::Summary::of(&scenarios),
            sensitivity: Some(report::Sensitivity::of(&scenarios)),
            scenarios,
        };
        let sensitivity = Sensitivity::of(&matrix).unwrap();
        assert_eq!(
            sensitivity.matrix,
            Matrix {
                total: 4,
                pass: 1,
                fails_without_patch: 1,
                mismatch: Vec::new(),
                skipped: vec![Unrun {
                    id: "12-secure-dynamic".into(),
                    reason: "not root".into()
                }],
                not_applicable: vec![Unrun {
                    id: "21-ldd-script".into(),
                    reason: "no bash".into()
                }],
            }
        );
        assert!(sensitivity.holds());
        assert_eq!(sensitivity.verdict(), StepVerdict::Incomplete);
        assert_eq!(
            sensitivity.missing(),
            ["unpatched matrix skipped 12-secure-dynamic: not root"]
        );
    }

    #[test]
    fn a_matrix_passes_only_when_everything_that_applies_ran_and_matched() {
        assert_eq!(matrix(60, &[], &[]).verdict(), StepVerdict::Pass);
        assert_eq!(
            matrix(60, &["12-a"], &[]).verdict(),
            StepVerdict::Incomplete
        );
        assert_eq!(
            matrix(60, &["12-a"], &["03-b"]).verdict(),
            StepVerdict::Fail
        );
        // Figures that do not add up are not believed.
        let mut wrong = matrix(60, &[], &[]);
        wrong.total += 1;
        assert_eq!(wrong.verdict(), StepVerdict::Fail);
    }

    #[test]
    fn row_23_holds_only_when_exactly_the_scenarios_needing_the_patch_differ() {
        let set = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect();
        let sensitivity = |differing: &[&str], needing: &[&str]| Sensitivity {
            matrix: matrix(10, &[], &[]),
            differing: set(differing),
            needing_the_patch: set(needing),
        };
        assert_eq!(sensitivity(&["a"], &["a"]).verdict(), StepVerdict::Pass);
        assert_eq!(
            sensitivity(&["a", "b"], &["a"]).verdict(),
            StepVerdict::Fail
        );
        assert_eq!(sensitivity(&[], &[]).verdict(), StepVerdict::Fail);
    }

    #[test]
    fn an_unsupported_series_test_makes_the_step_incomplete() {
        let test = |status, reason: Option<&str>| Named {
            test: "elf/tst-env-setuid".into(),
            status,
            reason: reason.map(str::to_string),
        };
        let tests = |tests| SeriesTests {
            tests,
            imposed_by_qemu: BTreeMap::new(),
        };
        assert_eq!(tests(vec![]).verdict(), StepVerdict::Fail);
        assert_eq!(
            tests(vec![test(Status::Pass, None)]).verdict(),
            StepVerdict::Pass
        );
        let unsupported = tests(vec![test(
            Status::Unsupported,
            Some("needs --enable-hardcoded-path-in-tests"),
        )]);
        assert_eq!(unsupported.verdict(), StepVerdict::Incomplete);
        assert_eq!(
            unsupported.missing(),
            ["series test elf/tst-env-setuid UNSUPPORTED: needs --enable-hardcoded-path-in-tests"]
        );
        assert_eq!(
            tests(vec![
                test(Status::Unsupported, None),
                test(Status::Fail, None)
            ])
            .verdict(),
            StepVerdict::Fail
        );
    }

    /// A run in clean roots fails when either loader it ran under is not the unpatched one
    /// (the container test that passed under the patched root's loader); a record without
    /// the evidence, made in the roots an earlier run left, is judged as it was.
    #[test]
    fn a_run_under_a_patched_loader_fails_without_the_patch() {
        use testsuite::{LoaderKind, Loaders};
        let failed = |test: &str| Named {
            test: test.into(),
            status: Status::Fail,
            reason: Some("error: dlopen: libmarkermod7.so: cannot open shared object file".into()),
        };
        let run = |loaders| WithoutThePatch {
            tests: vec![failed("elf/tst-fallback-path")],
            by_design: BTreeMap::new(),
            imposed_by_qemu: BTreeMap::new(),
            loaders,
        };
        let clean = Loaders {
            tree: LoaderKind::Unpatched,
            root: LoaderKind::Unpatched,
        };
        assert_eq!(run(Some(clean.clone())).verdict(), StepVerdict::Pass);
        assert_eq!(run(None).verdict(), StepVerdict::Pass);
        let dirty = Loaders {
            root: LoaderKind::Patched,
            ..clean.clone()
        };
        assert_eq!(run(Some(dirty.clone())).verdict(), StepVerdict::Fail);
        assert_eq!(
            run(Some(dirty)).wrong(),
            ["not the unpatched loader: the test container root's loader is patched (its --help lists --fallback-path)"]
        );
        let unknown = Loaders {
            tree: LoaderKind::Unknown("missing".into()),
            ..clean
        };
        assert_eq!(run(Some(unknown)).verdict(), StepVerdict::Fail);
        // The evidence reads back as written, and an old record without it still reads.
        let text = serde_json::to_string(&run(Some(Loaders {
            tree: LoaderKind::Unpatched,
            root: LoaderKind::Patched,
        })))
        .unwrap();
        assert!(
            text.contains(r#""loaders":{"tree":"unpatched","root":"patched"}"#),
            "{text}"
        );
        let old: WithoutThePatch = serde_json::from_str(
            r#"{"tests":[],"by_design":{"elf/tst-fallback-path-missing":"why"}}"#,
        )
        .unwrap();
        assert_eq!(old.loaders, None);
    }

    #[test]
    fn an_unsupported_series_test_qemu_imposes_is_declared_not_missing() {
        let container = Named {
            test: "elf/tst-fallback-path-container".into(),
            status: Status::Unsupported,
            reason: Some(
                "error: test-container.c:1123: unable to unshare user/fs: Invalid argument".into(),
            ),
        };
        let why = super::super::emulated::imposed_by_qemu(container.reason.as_deref().unwrap())
            .expect("the container's unshare failure is one QEMU imposes");
        let declared = SeriesTests {
            tests: vec![container.clone()],
            imposed_by_qemu: BTreeMap::from([(container.test.clone(), why.to_string())]),
        };
        assert_eq!(declared.verdict(), StepVerdict::Pass);
        assert_eq!(declared.missing(), Vec::<String>::new());
        // The same test without the declaration (a native target) leaves the step incomplete.
        let undeclared = SeriesTests {
            tests: vec![container],
            imposed_by_qemu: BTreeMap::new(),
        };
        assert_eq!(undeclared.verdict(), StepVerdict::Incomplete);
        // Only what QEMU imposes is declared: another reason is not.
        assert_eq!(
            super::super::emulated::imposed_by_qemu(
                "error: tst-env-setuid.c:146: dynamic test requires --enable-hardcoded-path-in-tests"
            ),
            None
        );
    }

    #[test]
    fn a_cell_is_as_good_as_its_worst_step_and_n_a_is_not_a_gap() {
        let mut steps = Steps {
            applies: StepOutcome::Done(Applies {
                patches: 2,
                base: Release::parse("2.44").unwrap(),
                drift: Vec::new(),
            }),
            build: StepOutcome::Done(Build {
                patched: Origin::Cached,
                unpatched: Origin::Cached,
            }),
            matrix: StepOutcome::Done(matrix(60, &[], &[])),
            sensitivity: StepOutcome::NotApplicable("test".into()),
            series_tests: StepOutcome::NotApplicable("under QEMU".into()),
            elf_regressions: StepOutcome::NotApplicable("under QEMU".into()),
            without_the_patch: StepOutcome::NotApplicable("under QEMU".into()),
            hardcoded_paths: StepOutcome::NotApplicable("declared elsewhere".into()),
        };
        assert_eq!(steps.state(), CellState::Verified);
        steps.matrix = StepOutcome::Done(matrix(60, &["12-a", "12-b"], &[]));
        assert_eq!(
            steps.state(),
            CellState::Incomplete(vec!["patched matrix skipped 12-a, 12-b: not root".into()])
        );
        steps.build = StepOutcome::Error("no compiler".into());
        assert_eq!(steps.state(), CellState::Failed);
        steps.build = StepOutcome::NotRun;
        assert_eq!(steps.state(), CellState::Failed);
    }

    #[test]
    fn a_report_read_back_keeps_what_it_said_apart_from_its_figures() {
        let release = Release::parse("2.44").unwrap();
        let mut report = CellReport::new(release, Target::X86_64, "s".into(), "k".into());
        let text = serde_json::to_string(&report).unwrap();
        let read: CellReport = serde_json::from_str(&text).unwrap();
        assert_eq!(read, report);
        assert!(read.contradictions().is_empty());
        assert_eq!(read.state(), CellState::NotVerified);
        // A record saying "verified" for a cell with no run: its figures decide.
        let edited = text.replace("\"not-verified\"", "\"verified\"");
        let read: CellReport = serde_json::from_str(&edited).unwrap();
        assert_eq!(read.state(), CellState::NotVerified);
        assert_eq!(
            read.contradictions(),
            ["it says Verified, its figures give NotVerified"]
        );
        report.from_cache = true;
        assert_eq!(read, report, "where a report came from is not part of it");
    }
}
