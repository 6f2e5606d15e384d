//! Running the matrix against one sysroot and judging each scenario. The result is a
//! [`MatrixReport`], a plain data structure: rendered as a table here, as JSON by serde.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::time::Duration;

use serde::Serialize;

use crate::matrix::{Answer, Expected, Observed, Scenario, MATRIX};
use crate::root::{Bench, Ctx};
use crate::trace::explain;
use model::{parallel_map, Flavour, Release, Target};

/// What a scenario's run proves on one loader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "kebab-case")]
pub enum ScenarioVerdict {
    Pass,
    /// Unpatched loader, scenario that needs the patch, and it failed the documented way.
    FailsWithoutPatch,
    Mismatch,
    /// Could not run: an input is missing here (not root, Debian's archive unreachable). It
    /// proves nothing: a run with a skip is incomplete.
    Skipped(String),
    /// Does not apply here, as the scenario's row declares (the ldd script under QEMU).
    NotApplicable(String),
}

impl ScenarioVerdict {
    pub(crate) fn text(&self) -> String {
        match self {
            ScenarioVerdict::Pass => "pass".into(),
            ScenarioVerdict::FailsWithoutPatch => "fails as expected without the patch".into(),
            ScenarioVerdict::Mismatch => "MISMATCH".into(),
            ScenarioVerdict::Skipped(reason) => format!("SKIPPED: {reason}"),
            ScenarioVerdict::NotApplicable(reason) => format!("n/a: {reason}"),
        }
    }

    pub(crate) fn is_failure(&self) -> bool {
        *self == ScenarioVerdict::Mismatch
    }

    pub(crate) fn is_skipped(&self) -> bool {
        matches!(self, ScenarioVerdict::Skipped(_))
    }

    pub(crate) fn is_not_applicable(&self) -> bool {
        matches!(self, ScenarioVerdict::NotApplicable(_))
    }

    /// Whether the scenario ran and was judged (neither skipped nor n/a).
    pub(crate) fn ran(&self) -> bool {
        !self.is_skipped() && !self.is_not_applicable()
    }
}

/// One scenario's result.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioOutcome {
    #[serde(skip)]
    pub scenario: &'static Scenario,
    pub id: &'static str,
    /// The contract's row (0: the user story).
    pub row: u8,
    pub title: &'static str,
    pub needs_patch: bool,
    /// What this loader (patched or not) was expected to do.
    pub expected: Expected,
    /// What happened; an error text when the scenario itself could not run.
    pub actual: Answer,
    #[serde(flatten)]
    pub verdict: ScenarioVerdict,
    /// The command line of the last run, as it reads inside the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// For a mismatch: the libtree-like explanation of a rerun with `LD_DEBUG=libs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// How long the scenario took (roots and runs; an explanation's rerun excluded).
    #[serde(skip)]
    pub elapsed: Duration,
}

impl ScenarioOutcome {
    /// `scenario`'s outcome on a loader of `flavour`: what it saw and the verdict on it, with
    /// no command, explanation or time (what [`run_one`] adds, having run it).
    pub fn judged(
        scenario: &'static Scenario,
        flavour: Flavour,
        actual: Answer,
        verdict: ScenarioVerdict,
    ) -> ScenarioOutcome {
        ScenarioOutcome {
            scenario,
            id: scenario.id,
            row: scenario.contract.number(),
            title: scenario.title,
            needs_patch: scenario.needs_patch(),
            expected: scenario.expectation(flavour),
            actual,
            verdict,
            command: None,
            explanation: None,
            elapsed: Duration::ZERO,
        }
    }
}

/// The matrix against one sysroot.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixReport {
    pub release: Release,
    pub target: Target,
    pub flavour: Flavour,
    pub summary: Summary,
    /// Row 23 of the contract, for the unpatched loader over the whole matrix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity: Option<Sensitivity>,
    pub scenarios: Vec<ScenarioOutcome>,
}

/// Counts per verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub total: usize,
    pub pass: usize,
    pub fails_without_patch: usize,
    pub skipped: usize,
    pub not_applicable: usize,
    pub mismatch: usize,
}

/// Row 23: without the patch, the scenarios that differ from the patched expectation are
/// exactly those that need the patch (those that did not run, skipped or n/a, left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sensitivity {
    pub holds: bool,
    pub differing: BTreeSet<&'static str>,
    pub needing_the_patch: BTreeSet<&'static str>,
}

impl Sensitivity {
    pub fn of(outcomes: &[ScenarioOutcome]) -> Sensitivity {
        let ran = || outcomes.iter().filter(|o| o.verdict.ran());
        let differing: BTreeSet<&str> = ran()
            .filter(|o| o.actual != o.scenario.expected)
            .map(|o| o.id)
            .collect();
        let needing_the_patch: BTreeSet<&str> =
            ran().filter(|o| o.needs_patch).map(|o| o.id).collect();
        Sensitivity {
            holds: !needing_the_patch.is_empty() && differing == needing_the_patch,
            differing,
            needing_the_patch,
        }
    }

    pub fn line(&self) -> String {
        if self.holds {
            format!(
                "row 23: the {} scenarios that differ from the patched expectation are exactly those that need the patch",
                self.differing.len()
            )
        } else {
            format!(
                "row 23: MISMATCH: differing {:?}, needing the patch {:?}",
                self.differing, self.needing_the_patch
            )
        }
    }
}

impl Summary {
    pub fn of(outcomes: &[ScenarioOutcome]) -> Summary {
        let count = |f: &dyn Fn(&ScenarioVerdict) -> bool| {
            outcomes.iter().filter(|o| f(&o.verdict)).count()
        };
        Summary {
            total: outcomes.len(),
            pass: count(&|v| *v == ScenarioVerdict::Pass),
            fails_without_patch: count(&|v| *v == ScenarioVerdict::FailsWithoutPatch),
            skipped: count(&|v| v.is_skipped()),
            not_applicable: count(&|v| v.is_not_applicable()),
            mismatch: count(&|v| v.is_failure()),
        }
    }

    pub(crate) fn line(&self) -> String {
        format!(
            "{} scenarios: {} pass, {} fail as expected without the patch, {} skipped, {} n/a, {} mismatch",
            self.total,
            self.pass,
            self.fails_without_patch,
            self.skipped,
            self.not_applicable,
            self.mismatch
        )
    }
}

pub(crate) fn judge(scenario: &Scenario, flavour: Flavour, observed: &Observed) -> ScenarioVerdict {
    let actual = match observed {
        Observed::Skipped(reason) => return ScenarioVerdict::Skipped(reason.clone()),
        Observed::NotApplicable(why) => return ScenarioVerdict::NotApplicable(why.to_string()),
        Observed::Seen(actual) => actual,
    };
    if *actual != scenario.expectation(flavour) {
        return ScenarioVerdict::Mismatch;
    }
    if flavour == Flavour::Unpatched && scenario.needs_patch() {
        ScenarioVerdict::FailsWithoutPatch
    } else {
        ScenarioVerdict::Pass
    }
}

/// Runs the scenarios whose id contains `filter` (all for `None`), reported in matrix order.
/// They run side by side, one per CPU: each has its own root, and a run is mostly the
/// loader's and the probe's own work, which one core at a time left half the machine idle.
pub fn run(bench: &Bench, filter: Option<&str>) -> MatrixReport {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    run_with(bench, filter, cpus)
}

/// [`run`] with `workers` scenarios at a time (1: one after the other, as before; for the
/// bench's comparison).
pub fn run_with(bench: &Bench, filter: Option<&str>, workers: usize) -> MatrixReport {
    let scenarios: Vec<&'static Scenario> = MATRIX
        .iter()
        .filter(|s| filter.is_none_or(|f| s.id.contains(f)))
        .collect();
    let outcomes = parallel_map(&scenarios, workers, |scenario| run_one(bench, scenario));
    let whole = filter.is_none();
    MatrixReport {
        release: bench.sysroot.release,
        target: bench.sysroot.target,
        flavour: bench.sysroot.flavour,
        summary: Summary::of(&outcomes),
        sensitivity: (whole && bench.sysroot.flavour == Flavour::Unpatched)
            .then(|| Sensitivity::of(&outcomes)),
        scenarios: outcomes,
    }
}

pub fn run_one(bench: &Bench, scenario: &'static Scenario) -> ScenarioOutcome {
    let flavour = bench.sysroot.flavour;
    let started = std::time::Instant::now();
    let cx = Ctx::new(bench, scenario.id);
    let (actual, verdict) = match scenario.run(&cx) {
        Ok(observed) => {
            let verdict = judge(scenario, flavour, &observed);
            let actual = match observed {
                Observed::Seen(answer) => answer,
                Observed::Skipped(_) | Observed::NotApplicable(_) => Answer::read("-"),
            };
            (actual, verdict)
        }
        Err(err) => (
            Answer::read(format!("scenario error: {err:#}")),
            ScenarioVerdict::Mismatch,
        ),
    };
    let elapsed = started.elapsed();
    let last = cx.last_invocation();
    let explanation = match (&verdict, &last) {
        (ScenarioVerdict::Mismatch, Some(invocation)) => {
            let traced = invocation.with_env("LD_DEBUG", "libs");
            let mut text = match traced.run(Vec::new()) {
                Ok(out) => explain(&out.stderr, &invocation.root),
                Err(err) => format!("cannot rerun with LD_DEBUG=libs: {err:#}\n"),
            };
            let copies: Vec<String> = invocation
                .placed
                .iter()
                .map(|(dir, role)| format!("{dir} ({role})"))
                .collect();
            if !copies.is_empty() {
                let _ = writeln!(
                    text,
                    "libcuda.so.1 copies in the root: {}",
                    copies.join(", ")
                );
            }
            Some(text)
        }
        _ => None,
    };
    ScenarioOutcome {
        command: last.map(|i| i.display()),
        explanation,
        elapsed,
        ..ScenarioOutcome::judged(scenario, flavour, actual, verdict)
    }
}

/// Runs `scenario`, then its last command again with `LD_DEBUG=libs`, and returns that
/// trace normalised for snapshots.
pub fn trace(bench: &Bench, scenario: &'static Scenario) -> anyhow::Result<String> {
    let cx = Ctx::new(bench, scenario.id);
    scenario.run(&cx)?;
    let Some(invocation) = cx.last_invocation() else {
        anyhow::bail!("{} ran no command", scenario.id);
    };
    let out = invocation.with_env("LD_DEBUG", "libs").run(Vec::new())?;
    Ok(crate::trace::normalize_trace(&out.stderr))
}

impl MatrixReport {
    pub fn has_failures(&self) -> bool {
        self.summary.mismatch > 0 || self.sensitivity.as_ref().is_some_and(|s| !s.holds)
    }

    /// A heading line, the table, the explanations of mismatches, the summary and row 23.
    pub fn render(&self) -> String {
        let mut out = format!(
            "glibc {} {} ({})\n",
            self.release, self.target, self.flavour
        );
        out.push_str(&table(&self.scenarios));
        let _ = writeln!(out, "{}", self.summary.line());
        if let Some(sensitivity) = &self.sensitivity {
            let _ = writeln!(out, "{}", sensitivity.line());
        }
        out
    }
}

/// The table: scenario, expected, actual, verdict; then an explanation of each mismatch.
pub fn table(outcomes: &[ScenarioOutcome]) -> String {
    let header = ["scenario", "expected", "actual", "verdict"];
    let rows: Vec<[String; 4]> = outcomes
        .iter()
        .map(|o| {
            [
                o.id.to_string(),
                o.expected.to_string(),
                o.actual.to_string(),
                o.verdict.text(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: [&str; 4]| {
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    };
    line(&mut out, header);
    for row in &rows {
        line(&mut out, [&row[0], &row[1], &row[2], &row[3]]);
    }
    for o in outcomes.iter().filter(|o| o.verdict.is_failure()) {
        let _ = writeln!(out, "\n{} ({}): {}", o.id, o.title, o.verdict.text());
        let _ = writeln!(out, "  expected: {}\n  actual:   {}", o.expected, o.actual);
        if let Some(cmd) = &o.command {
            let _ = writeln!(out, "  command:  {cmd}");
        }
        if let Some(explanation) = &o.explanation {
            let _ = writeln!(out, "  what the loader searched (LD_DEBUG=libs rerun):");
            for l in explanation.lines() {
                let _ = writeln!(out, "    {l}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::find;

    #[test]
    fn unpatched_fallback_scenario_must_fail_the_documented_way() {
        let s = find("03-dlopen-runpath-miss").unwrap();
        let seen = |t: &str| Observed::Seen(Answer::read(t));
        let (patched, unpatched) = (Flavour::Patched, Flavour::Unpatched);
        assert_eq!(
            judge(s, unpatched, &seen("not found")),
            ScenarioVerdict::FailsWithoutPatch
        );
        // Passing without the patch means the scenario does not test the patch.
        assert_eq!(
            judge(s, unpatched, &seen("driver")),
            ScenarioVerdict::Mismatch
        );
        assert_eq!(judge(s, patched, &seen("driver")), ScenarioVerdict::Pass);
        assert_eq!(
            judge(s, patched, &seen("not found")),
            ScenarioVerdict::Mismatch
        );
    }

    /// A scenario declared not applicable is neither a skip nor a run: it counts as n/a, and
    /// row 23 leaves it out like a skip.
    #[test]
    fn a_declared_not_applicable_scenario_is_neither_skipped_nor_run() {
        let s = find("21-ldd-script").unwrap();
        let verdict = judge(s, Flavour::Unpatched, &Observed::NotApplicable("why"));
        assert_eq!(verdict, ScenarioVerdict::NotApplicable("why".into()));
        assert!(!verdict.is_skipped() && !verdict.ran());
        let outcome = |id: &str, verdict: ScenarioVerdict, actual: &str| {
            ScenarioOutcome::judged(
                find(id).unwrap(),
                Flavour::Unpatched,
                Answer::read(actual),
                verdict,
            )
        };
        let outcomes = [
            outcome("21-list", ScenarioVerdict::FailsWithoutPatch, "not found"),
            outcome(
                "21-ldd-script",
                ScenarioVerdict::NotApplicable("why".into()),
                "-",
            ),
            outcome(
                "12-secure-dynamic",
                ScenarioVerdict::Skipped("not root".into()),
                "-",
            ),
        ];
        let summary = Summary::of(&outcomes);
        assert_eq!(
            (
                summary.skipped,
                summary.not_applicable,
                summary.fails_without_patch
            ),
            (1, 1, 1)
        );
        let sensitivity = Sensitivity::of(&outcomes);
        assert!(sensitivity.holds, "{sensitivity:?}");
        assert_eq!(
            sensitivity.needing_the_patch.iter().collect::<Vec<_>>(),
            [&"21-list"]
        );
    }

    #[test]
    fn verdicts_serialize_with_their_reason() {
        let json = serde_json::to_string(&ScenarioVerdict::Skipped("why".into())).unwrap();
        assert_eq!(json, r#"{"verdict":"skipped","reason":"why"}"#);
        let json = serde_json::to_string(&ScenarioVerdict::NotApplicable("why".into())).unwrap();
        assert_eq!(json, r#"{"verdict":"not-applicable","reason":"why"}"#);
        let json = serde_json::to_string(&ScenarioVerdict::FailsWithoutPatch).unwrap();
        assert_eq!(json, r#"{"verdict":"fails-without-patch"}"#);
    }
}
