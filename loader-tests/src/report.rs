//! Running the matrix against one sysroot, judging each scenario, and printing the result as
//! a table or as JSON.

use std::fmt::Write;

use crate::explain::explain;
use crate::matrix::{Observed, Scenario, MATRIX};
use crate::root::{Bench, Ctx};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Unpatched loader, scenario that needs the patch, and it failed the documented way.
    FailsWithoutPatch,
    Mismatch,
    Skipped(String),
}

impl Verdict {
    pub fn text(&self) -> String {
        match self {
            Verdict::Pass => "pass".into(),
            Verdict::FailsWithoutPatch => "fails as expected without the patch".into(),
            Verdict::Mismatch => "MISMATCH".into(),
            Verdict::Skipped(reason) => format!("SKIPPED: {reason}"),
        }
    }

    pub fn is_failure(&self) -> bool {
        *self == Verdict::Mismatch
    }
}

/// One scenario's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scenario: &'static Scenario,
    /// What this loader (patched or not) was expected to do.
    pub expected: &'static str,
    /// What happened; an error text when the scenario itself could not run.
    pub actual: String,
    pub verdict: Verdict,
    /// The command line of the last run, as it reads inside the root.
    pub command: Option<String>,
    /// For a mismatch: the libtree-like explanation of a rerun with `LD_DEBUG=libs`.
    pub explanation: Option<String>,
    /// How long the scenario took (roots and runs; an explanation's rerun excluded).
    pub elapsed: std::time::Duration,
}

/// What the loader under test is expected to do in `scenario`.
pub fn expectation(scenario: &Scenario, patched: bool) -> &'static str {
    match (patched, scenario.without_patch) {
        (false, Some(without)) => without,
        _ => scenario.expected,
    }
}

pub fn judge(scenario: &Scenario, patched: bool, observed: &Observed) -> Verdict {
    let actual = match observed {
        Observed::Skipped(reason) => return Verdict::Skipped(reason.clone()),
        Observed::Seen(actual) => actual,
    };
    if actual != expectation(scenario, patched) {
        return Verdict::Mismatch;
    }
    if !patched && scenario.needs_patch() {
        Verdict::FailsWithoutPatch
    } else {
        Verdict::Pass
    }
}

/// Runs the scenarios whose id contains `filter` (all for `None`), in matrix order.
pub fn run(bench: &Bench, filter: Option<&str>) -> Vec<Outcome> {
    MATRIX
        .iter()
        .filter(|s| filter.is_none_or(|f| s.id.contains(f)))
        .map(|s| run_one(bench, s))
        .collect()
}

pub fn run_one(bench: &Bench, scenario: &'static Scenario) -> Outcome {
    let patched = bench.sysroot.patched;
    let started = std::time::Instant::now();
    let cx = Ctx::new(bench, scenario.id);
    let (actual, verdict) = match (scenario.run)(&cx) {
        Ok(observed) => {
            let verdict = judge(scenario, patched, &observed);
            let actual = match observed {
                Observed::Seen(text) => text,
                Observed::Skipped(_) => "-".into(),
            };
            (actual, verdict)
        }
        Err(err) => (format!("scenario error: {err:#}"), Verdict::Mismatch),
    };
    let elapsed = started.elapsed();
    let last = cx.last_invocation();
    let explanation = match (&verdict, &last) {
        (Verdict::Mismatch, Some(invocation)) => {
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
    Outcome {
        scenario,
        expected: expectation(scenario, patched),
        actual,
        verdict,
        command: last.map(|i| i.display()),
        explanation,
        elapsed,
    }
}

/// Runs `scenario`, then its last command again with `LD_DEBUG=libs`, and returns that
/// trace normalised for snapshots.
pub fn trace(bench: &Bench, scenario: &'static Scenario) -> anyhow::Result<String> {
    let cx = Ctx::new(bench, scenario.id);
    (scenario.run)(&cx)?;
    let Some(invocation) = cx.last_invocation() else {
        anyhow::bail!("{} ran no command", scenario.id);
    };
    let out = invocation.with_env("LD_DEBUG", "libs").run(Vec::new())?;
    Ok(crate::explain::normalize_trace(&out.stderr))
}

/// The table: scenario, expected, actual, verdict; then an explanation of each mismatch.
pub fn table(outcomes: &[Outcome]) -> String {
    let header = ["scenario", "expected", "actual", "verdict"];
    let rows: Vec<[String; 4]> = outcomes
        .iter()
        .map(|o| {
            [
                o.scenario.id.to_string(),
                o.expected.to_string(),
                o.actual.clone(),
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
        let _ = writeln!(
            out,
            "\n{} ({}): {}",
            o.scenario.id,
            o.scenario.title,
            o.verdict.text()
        );
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

/// A summary line: counts per verdict.
pub fn summary(outcomes: &[Outcome]) -> String {
    let count = |f: &dyn Fn(&Verdict) -> bool| outcomes.iter().filter(|o| f(&o.verdict)).count();
    format!(
        "{} scenarios: {} pass, {} fail as expected without the patch, {} skipped, {} mismatch",
        outcomes.len(),
        count(&|v| *v == Verdict::Pass),
        count(&|v| *v == Verdict::FailsWithoutPatch),
        count(&|v| matches!(v, Verdict::Skipped(_))),
        count(&|v| v.is_failure()),
    )
}

/// Machine-readable form of a run: `{"release": ..., "scenarios": [...]}`.
pub fn json(release: &str, target: &str, patched: bool, outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\"release\":{},\"target\":{},\"patched\":{patched},\"scenarios\":[",
        quote(release),
        quote(target)
    );
    for (i, o) in outcomes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let verdict = match &o.verdict {
            Verdict::Pass => "pass",
            Verdict::FailsWithoutPatch => "fails-without-patch",
            Verdict::Mismatch => "mismatch",
            Verdict::Skipped(_) => "skipped",
        };
        let _ = write!(
            out,
            "{{\"id\":{},\"row\":{},\"title\":{},\"needs_patch\":{},\"expected\":{},\"actual\":{},\"verdict\":{}",
            quote(o.scenario.id),
            o.scenario.row,
            quote(o.scenario.title),
            o.scenario.needs_patch(),
            quote(o.expected),
            quote(&o.actual),
            quote(verdict)
        );
        if let Verdict::Skipped(reason) = &o.verdict {
            let _ = write!(out, ",\"skip_reason\":{}", quote(reason));
        }
        if let Some(explanation) = &o.explanation {
            let _ = write!(out, ",\"explanation\":{}", quote(explanation));
        }
        out.push('}');
    }
    out.push_str("]}");
    out
}

fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::find;

    #[test]
    fn unpatched_fallback_scenario_must_fail_the_documented_way() {
        let s = find("03-dlopen-runpath-miss").unwrap();
        let seen = |t: &str| Observed::Seen(t.into());
        assert_eq!(
            judge(s, false, &seen("not found")),
            Verdict::FailsWithoutPatch
        );
        // Passing without the patch means the scenario does not test the patch.
        assert_eq!(judge(s, false, &seen("driver")), Verdict::Mismatch);
        assert_eq!(judge(s, true, &seen("driver")), Verdict::Pass);
        assert_eq!(judge(s, true, &seen("not found")), Verdict::Mismatch);
    }

    #[test]
    fn json_escapes_text() {
        assert_eq!(quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
    }
}
