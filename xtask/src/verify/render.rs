//! Cell reports as people read them: a line per cell while verifying, a table for all cells,
//! and the markdown of docs/support.md. Everything here is made from the reports' data
//! (outcome.rs) and nothing is read back: docs/support.md is checked by rendering
//! docs/support.json again (support.rs).

use std::fmt::Write;

use super::emulated;
use super::outcome::Machine;
use super::outcome::{
    Applies, Build, CellReport, CellRun, CellState, HardcodedPaths, Matrix, Origin, Sensitivity,
    SeriesTests, StepName, StepOutcome, StepVerdict, Unrun, WithoutThePatch,
};
use super::provenance::{Provenance, WrittenBy};
use super::testsuite::{Change, Diff, Named, Status, SuiteFacts, SuiteRun};

fn label(step: StepName) -> &'static str {
    match step {
        StepName::Applies => "applies",
        StepName::Build => "build",
        StepName::Matrix => "matrix",
        StepName::Sensitivity => "sensitivity",
        StepName::SeriesTests => "series tests",
        StepName::ElfRegressions => "elf regressions",
        StepName::WithoutThePatch => "without the patch",
        StepName::HardcodedPaths => "hardcoded paths",
    }
}

fn mark(verdict: StepVerdict) -> &'static str {
    match verdict {
        StepVerdict::Pass => "ok",
        StepVerdict::Fail => "FAIL",
        StepVerdict::Incomplete => "incomplete",
        StepVerdict::NotApplicable => "n/a",
        StepVerdict::NotRun => "not run",
    }
}

fn state_word(state: &CellState) -> &'static str {
    match state {
        CellState::Verified => "verified",
        CellState::Failed => "FAILED",
        CellState::Incomplete(_) => "incomplete",
        CellState::NotVerified => "not verified",
    }
}

fn minutes(seconds: f64) -> String {
    format!("{:.1} min", seconds / 60.0)
}

/// How to verify a cell that has no current report.
fn how_to_verify(report: &CellReport) -> String {
    format!(
        "cargo xtask verify --release {} --target {}",
        report.release, report.target
    )
}

/// What a step found, in a few words.
fn summary<T>(step: &StepOutcome<T>, figures: impl Fn(&T) -> String) -> String {
    match step {
        StepOutcome::Done(done) => figures(done),
        StepOutcome::Error(error) => error.clone(),
        StepOutcome::NotApplicable(why) | StepOutcome::Unavailable(why) => why.clone(),
        StepOutcome::NotRun => "an earlier step failed".into(),
    }
}

fn applies(a: &Applies) -> String {
    if a.drift.is_empty() {
        format!("{} patches apply exactly to {}", a.patches, a.base.tag())
    } else {
        format!("drift: {}", a.drift.join("; "))
    }
}

fn build(b: &Build) -> String {
    let how = |origin: Origin| match origin {
        Origin::Built => "built",
        Origin::Cached => "cached",
    };
    format!("patched {}, unpatched {}", how(b.patched), how(b.unpatched))
}

fn matrix(m: &Matrix) -> String {
    let mut text = format!(
        "{} pass, {} skipped, {} n/a, {} mismatch",
        m.pass + m.fails_without_patch,
        m.skipped.len(),
        m.not_applicable.len(),
        m.mismatch.len()
    );
    if !m.mismatch.is_empty() {
        let _ = write!(text, " ({})", m.mismatch.join(", "));
    }
    text
}

fn sensitivity(s: &Sensitivity) -> String {
    let mut text = format!(
        "{} need the patch and fail without it; {} skipped, {} n/a, {} mismatch",
        s.matrix.fails_without_patch,
        s.matrix.skipped.len(),
        s.matrix.not_applicable.len(),
        s.matrix.mismatch.len()
    );
    if !s.holds() {
        let only = |a: &std::collections::BTreeSet<String>,
                    b: &std::collections::BTreeSet<String>| {
            a.difference(b).cloned().collect::<Vec<_>>().join(", ")
        };
        let _ = write!(
            text,
            "; row 23 does not hold: differing without needing the patch [{}], needing the patch without differing [{}]",
            only(&s.differing, &s.needing_the_patch),
            only(&s.needing_the_patch, &s.differing)
        );
    }
    text
}

fn series_tests(t: &SeriesTests) -> String {
    if t.tests.is_empty() {
        return "the patched tree ran none of the series' tests".into();
    }
    let count = |f: &dyn Fn(Status) -> bool| t.tests.iter().filter(|t| f(t.status)).count();
    let imposed = match t.imposed_by_qemu.len() {
        0 => String::new(),
        n => format!(" ({n} of them imposed by QEMU user mode)"),
    };
    format!(
        "{} PASS, {} UNSUPPORTED{imposed}, {} FAIL",
        count(&|s| s == Status::Pass),
        count(&|s| s == Status::Unsupported),
        count(&|s| s.is_failure())
    )
}

fn elf(diff: &Diff) -> String {
    diff.summary()
}

fn without_the_patch(w: &WithoutThePatch) -> String {
    let count = |f: &dyn Fn(Status) -> bool| w.tests.iter().filter(|t| f(t.status)).count();
    let mut text = format!(
        "of {} series tests, {} fail against the unpatched loader, {} declared to pass there, {} UNSUPPORTED",
        w.tests.len(),
        count(&|s| s.is_failure()),
        w.by_design.len(),
        count(&|s| s == Status::Unsupported)
    );
    for wrong in w.wrong() {
        let _ = write!(text, "; {wrong}");
    }
    text
}

fn hardcoded_paths(h: &HardcodedPaths) -> String {
    let changed: Vec<String> = h
        .changed_upstream
        .iter()
        .map(|t| format!("{} {}", t.test.trim_start_matches("elf/"), t.status))
        .collect();
    format!(
        "series tests {} ({} not built there); {}; {}",
        series_tests(&h.series_tests),
        h.not_built.len(),
        h.elf_regressions.summary(),
        changed.join(", ")
    )
}

/// Each step's verdict and summary, in order.
fn steps(run: &CellRun) -> [(StepName, StepVerdict, String); 8] {
    let s = &run.steps;
    let verdicts = s.verdicts();
    let texts = [
        summary(&s.applies, applies),
        summary(&s.build, build),
        summary(&s.matrix, matrix),
        summary(&s.sensitivity, sensitivity),
        summary(&s.series_tests, series_tests),
        summary(&s.elf_regressions, elf),
        summary(&s.without_the_patch, without_the_patch),
        summary(&s.hardcoded_paths, hardcoded_paths),
    ];
    let mut texts = texts.into_iter();
    verdicts.map(|(name, verdict)| (name, verdict, texts.next().expect("one per step")))
}

/// A table cell: the verdict, then what the step found.
fn verdict_cell(verdict: StepVerdict, summary: &str) -> String {
    match verdict {
        StepVerdict::NotRun => "not run".into(),
        verdict => format!("{}: {summary}", mark(verdict)),
    }
}

/// One line per cell: its state, where it comes from, and what failed or is missing.
pub(crate) fn line(report: &CellReport) -> String {
    let Some(run) = &report.run else {
        return format!(
            "NOT VERIFIED glibc {} {} ({})",
            report.release,
            report.target,
            how_to_verify(report)
        );
    };
    let state = report.state();
    let word = match state {
        CellState::Verified => "PASS",
        CellState::Failed | CellState::NotVerified => "FAIL",
        CellState::Incomplete(_) => "INCOMPLETE",
    };
    let origin = if report.from_cache {
        format!("from cache, verified {}", run.verified_at)
    } else {
        format!("verified now in {}", minutes(run.seconds.total))
    };
    let mut text = format!(
        "{word} glibc {} {} ({origin})",
        report.release, report.target
    );
    for (name, verdict, summary) in steps(run) {
        if verdict == StepVerdict::Fail {
            let _ = write!(text, "\n  {}: {summary}", label(name));
        }
    }
    for gap in report.gaps() {
        let _ = write!(text, "\n  figures not whole: {gap}");
    }
    if let CellState::Incomplete(missing) = &state {
        for what in missing {
            let _ = write!(text, "\n  incomplete: {what}");
        }
    }
    text
}

const COLUMNS: [&str; 12] = [
    "release",
    "target",
    "cell",
    "applies",
    "build",
    "matrix",
    "sensitivity",
    "series tests",
    "elf regressions",
    "without the patch",
    "hardcoded paths",
    "time",
];

/// A cell's row, with each step as `short` renders it.
fn row(report: &CellReport, short: bool) -> [String; 12] {
    let mut row: [String; 12] = Default::default();
    row.fill("-".into());
    row[0] = report.release.to_string();
    row[1] = report.target.to_string();
    row[2] = state_word(&report.state()).into();
    let Some(run) = &report.run else {
        row[3] = format!("to verify: {}", how_to_verify(report));
        return row;
    };
    for (i, (_, verdict, summary)) in steps(run).into_iter().enumerate() {
        row[i + 3] = if short {
            mark(verdict).to_string()
        } else {
            verdict_cell(verdict, &summary)
        };
    }
    row[11] = minutes(run.seconds.total);
    row
}

/// All cells as a plain-text table, then what failed or differs, in detail.
pub(crate) fn table(reports: &[CellReport]) -> String {
    let rows: Vec<[String; 12]> = reports
        .iter()
        .map(|r| {
            let mut row = row(r, true);
            if let Some(run) = r.run.as_ref().filter(|_| r.from_cache) {
                row[11] = format!("cached ({})", run.verified_at);
            }
            row
        })
        .collect();
    let mut widths = COLUMNS.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        for (i, cell) in cells.iter().enumerate() {
            let _ = write!(out, "{cell:w$}  ", w = widths[i]);
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    };
    line(&COLUMNS);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    out.push('\n');
    for report in reports {
        out.push_str(&details(report));
    }
    out
}

/// Scenarios that did not run, one line per reason.
fn unrun_lines(out: &mut String, what: &str, loader: &str, unrun: &[Unrun]) {
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for u in unrun {
        match by_reason.iter_mut().find(|(r, _)| *r == u.reason) {
            Some((_, ids)) => ids.push(&u.id),
            None => by_reason.push((&u.reason, vec![&u.id])),
        }
    }
    for (reason, ids) in by_reason {
        let _ = writeln!(out, "    {what} ({loader}) {}: {reason}", ids.join(", "));
    }
}

/// Everything a reader needs about one cell beyond its row.
pub(crate) fn details(report: &CellReport) -> String {
    let state = report.state();
    let mut out = format!(
        "glibc {} {}: {}\n",
        report.release,
        report.target,
        state_word(&state)
    );
    let Some(run) = &report.run else {
        let _ = writeln!(out, "  no current report: {}", how_to_verify(report));
        return out;
    };
    for (name, verdict, summary) in steps(run) {
        let _ = writeln!(out, "  {:<16} {}: {summary}", label(name), mark(verdict));
    }
    for (loader, m) in [
        ("patched", run.steps.matrix.figures()),
        (
            "unpatched",
            run.steps.sensitivity.figures().map(|s| &s.matrix),
        ),
    ] {
        let Some(m) = m else { continue };
        unrun_lines(&mut out, "n/a", loader, &m.not_applicable);
        unrun_lines(&mut out, "SKIPPED", loader, &m.skipped);
        for id in &m.mismatch {
            let _ = writeln!(
                out,
                "    MISMATCH ({loader}) {id} (cargo xtask test-resolution --scenario {id} shows why)"
            );
        }
    }
    if let Some(tests) = run.steps.series_tests.figures() {
        for test in &tests.tests {
            let reason = test
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let _ = writeln!(out, "    series test {} {}{reason}", test.test, test.status);
            if let Some(why) = tests.imposed_by_qemu.get(&test.test) {
                let _ = writeln!(out, "      imposed by QEMU user mode: {why}");
            }
        }
    }
    if let Some(diff) = run.steps.elf_regressions.figures() {
        elf_details(&mut out, diff);
    }
    if let Some(without) = run.steps.without_the_patch.figures() {
        for test in &without.tests {
            let reason = test
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    without the patch: series test {} {}{reason}",
                test.test, test.status
            );
            if let Some(why) = without.by_design.get(&test.test) {
                let _ = writeln!(out, "      declared to pass without the patch: {why}");
            }
        }
        match &without.loaders {
            Some(loaders) => {
                let _ = writeln!(
                    out,
                    "    without the patch, loaders: the tree's elf/ld.so {}; the test container root's {}",
                    loaders.tree, loaders.root
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "    without the patch, loaders: not recorded: the run kept the test container roots an earlier, patched run had left, so a test that passed there is not shown to pass without the patch"
                );
            }
        }
    }
    if let Some(h) = run.steps.hardcoded_paths.figures() {
        for test in h.series_tests.tests.iter().chain(&h.changed_upstream) {
            let reason = test
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    hardcoded paths: {} {}{reason}",
                test.test, test.status
            );
        }
        for (test, why) in &h.not_built {
            let _ = writeln!(out, "    hardcoded paths: {test} not built: {why}");
        }
        elf_details(&mut out, &h.elf_regressions);
    }
    if let Some(ran) = &run.suites_ran {
        let when = |r: &SuiteRun| {
            let by = if r.reused {
                "an earlier verify of this build; its record reused"
            } else {
                "this verify"
            };
            format!("{} ({by})", r.at)
        };
        let _ = writeln!(
            out,
            "    elf suites ran: unpatched {}, patched {}",
            when(&ran.unpatched),
            when(&ran.patched)
        );
    }
    for gap in report.gaps() {
        let _ = writeln!(out, "    FIGURES NOT WHOLE: {gap}");
    }
    machine_details(&mut out, &run.machine, !report.target.is_native());
    let s = run.seconds;
    let _ = writeln!(
        out,
        "    time: builds {}, elf suites {}, matrices {}, without the patch {}, hardcoded paths {}, total {}",
        minutes(s.build_pair),
        minutes(s.elf_suite_pair),
        minutes(s.matrix),
        minutes(s.without_the_patch),
        minutes(s.hardcoded_paths),
        minutes(s.total)
    );
    out
}

/// What proves the patch: the tests each tree listed, and what the patch changed.
fn elf_details(out: &mut String, diff: &Diff) {
    for c in &diff.regressions {
        change_line(out, "REGRESSION", c);
    }
    for t in &diff.never_ran {
        let _ = writeln!(out, "    NEVER RAN {}", t.test);
    }
    for (what, tests) in [
        ("RAN ONLY WITHOUT THE PATCH", &diff.only_unpatched),
        (
            "RAN ONLY WITH THE PATCH (not one of the series' tests)",
            &diff.only_patched,
        ),
    ] {
        for t in tests {
            let _ = writeln!(out, "    {what} {} {}", t.test, t.status);
        }
    }
}

/// A test whose status the patch changed, after `what`: both statuses and the reason.
fn change_line(out: &mut String, what: &str, c: &Change) {
    let _ = writeln!(
        out,
        "    {what} {}: {} unpatched, {} patched ({})",
        c.test,
        c.unpatched,
        c.patched,
        c.reason.as_deref().unwrap_or("-")
    );
}

/// What describes the machine: never part of the proof.
fn machine_details(out: &mut String, machine: &Machine, emulated: bool) {
    let _ = writeln!(
        out,
        "  machine (facts, not proof): {}, {}; the target's programs ran {}",
        machine.cpu, machine.kernel, machine.runs
    );
    if let Some(facts) = &machine.elf_suite {
        suite_facts(out, facts, emulated);
    }
}

/// A test's reason, with why QEMU user mode imposes it where it does (an emulated target).
fn reason_of(t: &Named, emulated: bool) -> String {
    let reason = t.reason.as_deref().unwrap_or("-");
    match emulated
        .then(|| emulated::imposed_by_qemu(reason))
        .flatten()
    {
        Some(why) => format!("{reason} (imposed by QEMU user mode: {why})"),
        None => reason.to_string(),
    }
}

fn suite_facts(out: &mut String, facts: &SuiteFacts, emulated: bool) {
    let (p, u) = (&facts.patched, &facts.unpatched);
    let _ = writeln!(out, "    elf suite on this machine: {}", facts.summary());
    if !p.adds_up() || !u.adds_up() {
        let _ = writeln!(
            out,
            "    (these counts do not add up: the record was edited)"
        );
    }
    let _ = writeln!(
        out,
        "    elf suite counts: patched {} PASS / {} FAIL / {} UNSUPPORTED / {} XPASS or XFAIL of {}; unpatched {} / {} / {} / {} of {}",
        p.pass, p.fail, p.unsupported, p.other, p.total,
        u.pass, u.fail, u.unsupported, u.other, u.total
    );
    for t in &facts.failing_in_both {
        reason_line(
            out,
            "fails in both (this machine, not the patch)",
            t,
            emulated,
        );
    }
    for c in &facts.other_changes {
        change_line(out, "differs, failing in neither", c);
    }
    for t in &facts.expected_to_fail {
        let _ = writeln!(
            out,
            "    {} {} (glibc marks it as expected to fail in this configuration)",
            t.status, t.test
        );
    }
    for t in &facts.unsupported {
        reason_line(out, "UNSUPPORTED", t, emulated);
    }
}

/// A test of this machine's suite, after `what`, with its reason ([`reason_of`]).
fn reason_line(out: &mut String, what: &str, t: &Named, emulated: bool) {
    let _ = writeln!(out, "    {what} {}: {}", t.test, reason_of(t, emulated));
}

/// The command that wrote the page, as its header names it.
fn written_by(by: &WrittenBy) -> String {
    match by {
        WrittenBy::Verify { cached_only } => format!(
            "cargo xtask verify --write-support{}",
            if *cached_only { " --cached-only" } else { "" }
        ),
        WrittenBy::Merge => "cargo xtask verify merge --write-support".into(),
        WrittenBy::UpdateRelease { release } => format!("cargo xtask update-release {release}"),
        WrittenBy::RetireRelease { version } => format!("cargo xtask retire-release {version}"),
    }
}

/// docs/support.md: how it was made, the table, the series, and each cell's details; all of
/// it from `cells` and `provenance`, what docs/support.json holds.
pub(crate) fn markdown(provenance: &Provenance, cells: &[CellReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Support table\n");
    let _ = writeln!(
        out,
        "Written by `{}` on {}, from commit `{}`{}. It is rendered from docs/support.json, which holds each cell's figures.\n",
        written_by(&provenance.by),
        provenance.written_at,
        provenance.commit,
        if provenance.cached_only() {
            " (from this machine's verify cache: nothing was built or run)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "A cell is verified when every step that applies to it ran and passed. \"n/a\" marks \
         what does not apply to a cell by design; \"incomplete\", what applies but could not \
         be looked at where it ran (it proves nothing); \"not verified\", a cell without a \
         current report (it claims nothing). `cargo xtask verify check-support` (run by \
         `cargo xtask ci`) fails when this page is not docs/support.json rendered, when a \
         verdict there is not what the cell's figures give, when a cell failed or is \
         incomplete, when its figures are not whole (every scenario of the table, every test \
         the series adds, every test each tree lists), when it names a commit outside the \
         history or uncommitted changes without their digest or a time to come, or when a \
         series changed after its row was produced. Each cell's details end with what \
         describes the machine it ran on (CPU, kernel, how the target's programs ran, the \
         tests that ended other than PASS there without the patch being the cause): facts, \
         not proof, reported and never judged. The `time` column is what the run that wrote \
         the row took, with what verify had cached (builds, glibc's suites) taken from its \
         cache: not what a cell costs from nothing, which docs/measurements.md gives.\n"
    );
    let _ = writeln!(out, "| {} |", COLUMNS.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(COLUMNS.len()));
    for report in cells {
        // A summary holding `|` (an error's text, say) must not split its cell.
        let row = row(report, false).map(|cell| cell.replace('|', "\\|"));
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    let _ = writeln!(out, "\n## Series\n");
    let _ = writeln!(out, "| release | series content id | verified |");
    let _ = writeln!(out, "|---|---|---|");
    let mut seen = Vec::new();
    for report in cells {
        if seen.contains(&report.release) {
            continue;
        }
        seen.push(report.release);
        let verified = match &report.run {
            Some(run) => format!("{} (commit `{}`)", run.verified_at, run.commit),
            None => "not verified".into(),
        };
        let _ = writeln!(
            out,
            "| {} | `{}` | {verified} |",
            report.release, report.series
        );
    }
    let _ = writeln!(out, "\n## Details\n\n```");
    for report in cells {
        out.push_str(&details(report));
    }
    let _ = writeln!(out, "```");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::verify::outcome::{Applies, Build, Origin, Seconds, SeriesTests, Steps};
    use crate::verify::testsuite::{Counts, Listed, Named, SuitesRan, TestList};
    use model::Release;
    use model::Target;

    fn named(test: &str, status: Status, reason: Option<&str>) -> Named {
        Named {
            test: test.into(),
            status,
            reason: reason.map(str::to_string),
        }
    }

    fn unrun(id: &str, reason: &str) -> Unrun {
        Unrun {
            id: id.into(),
            reason: reason.into(),
        }
    }

    /// A run of every step of a native cell, all passing.
    pub(crate) fn verified(release: &str, target: Target, series: &str) -> CellReport {
        let na = || {
            vec![
                unrun("04-ldd-script-nothing-set", "no bash under QEMU"),
                unrun("21-ldd-script", "no bash under QEMU"),
            ]
        };
        let emulated = !target.is_native();
        // The table's size, whatever rows it has: the figures must be whole.
        let rows = loader_tests::matrix::MATRIX.len();
        let matrix = Matrix {
            total: rows,
            pass: if emulated { rows - 2 } else { rows },
            not_applicable: if emulated { na() } else { Vec::new() },
            ..Matrix::default()
        };
        let ids = |n: usize| -> std::collections::BTreeSet<String> {
            (0..n).map(|i| format!("{i:02}-needs-patch")).collect()
        };
        let sensitivity = Sensitivity {
            matrix: Matrix {
                total: rows,
                pass: if emulated { rows - 37 } else { rows - 36 },
                fails_without_patch: if emulated { 35 } else { 36 },
                not_applicable: if emulated { na() } else { Vec::new() },
                ..Matrix::default()
            },
            differing: ids(if emulated { 35 } else { 36 }),
            needing_the_patch: ids(if emulated { 35 } else { 36 }),
        };
        let counts = |total, pass| Counts {
            total,
            pass,
            fail: 0,
            unsupported: 1,
            other: 0,
        };
        let list = |count: usize| TestList {
            count,
            digest: format!("digest-of-{count}"),
        };
        let series_tests = StepOutcome::Done(SeriesTests {
            tests: vec![
                named("elf/tst-fallback-path", Status::Pass, None),
                named("elf/tst-fallback-path-static", Status::Pass, None),
            ],
            imposed_by_qemu: Default::default(),
        });
        let elf = StepOutcome::Done(Diff {
            listed: Listed {
                patched: list(486),
                unpatched: list(484),
            },
            series_own: vec![
                "elf/tst-fallback-path".into(),
                "elf/tst-fallback-path-static".into(),
            ],
            ..Diff::default()
        });
        let (runs, unsupported) = if emulated {
            (
                "under QEMU user mode (qemu-aarch64 version 7.2.22), through a private binfmt_misc in a user namespace (flags F and C), every user and group id mapped as itself",
                named(
                    "elf/tst-valgrind-smoke",
                    Status::Unsupported,
                    Some("valgrind runs x86_64 programs only"),
                ),
            )
        } else {
            (
                "natively",
                named(
                    "elf/tst-decorate-maps",
                    Status::Unsupported,
                    Some("kernel does not support PR_SET_VMA_ANON_NAME"),
                ),
            )
        };
        let machine = Machine {
            cpu: "Example CPU @ 2.00GHz (2 cores)".into(),
            kernel: "Linux 6.18.44".into(),
            runs: runs.into(),
            elf_suite: Some(SuiteFacts {
                patched: counts(486, 485),
                unpatched: counts(484, 483),
                unsupported: vec![unsupported],
                ..SuiteFacts::default()
            }),
        };
        let mut report = CellReport::new(
            Release::parse(release).unwrap(),
            target,
            series.into(),
            format!("key-{release}-{target}"),
        );
        report.run = Some(CellRun {
            verified_at: "2026-12-01 10:00 UTC".into(),
            commit: "c0ffee123456".into(),
            steps: Steps {
                applies: StepOutcome::Done(Applies {
                    patches: 2,
                    base: Release::parse(release).unwrap(),
                    drift: Vec::new(),
                }),
                build: StepOutcome::Done(Build {
                    patched: Origin::Cached,
                    unpatched: Origin::Built,
                }),
                matrix: StepOutcome::Done(matrix),
                sensitivity: StepOutcome::Done(sensitivity),
                series_tests: series_tests.clone(),
                elf_regressions: elf.clone(),
                without_the_patch: StepOutcome::Done(WithoutThePatch {
                    tests: vec![
                        named(
                            "elf/tst-fallback-path",
                            Status::Fail,
                            Some("error: tst-fallback-path.c:69: not true: mod7 != NULL"),
                        ),
                        named(
                            "elf/tst-fallback-path-static",
                            Status::Fail,
                            Some("error: 1 test failures"),
                        ),
                    ],
                    by_design: Default::default(),
                    imposed_by_qemu: Default::default(),
                    loaders: None,
                }),
                hardcoded_paths: if crate::verify::outcome::hardcoded_paths_apply(
                    Release::parse(release).unwrap(),
                    target,
                ) {
                    StepOutcome::Done(HardcodedPaths {
                        series_tests: match series_tests {
                            StepOutcome::Done(tests) => tests,
                            _ => unreachable!("the series tests above are done"),
                        },
                        not_built: Default::default(),
                        elf_regressions: match elf {
                            StepOutcome::Done(diff) => diff,
                            _ => unreachable!("the elf diff above is done"),
                        },
                        changed_upstream: vec![named("elf/tst-env-setuid", Status::Pass, None)],
                    })
                } else {
                    StepOutcome::NotApplicable("verified on glibc 2.44 x86_64".into())
                },
            },
            machine,
            seconds: Seconds {
                build_pair: 600.0,
                elf_suite_pair: 540.0,
                matrix: 12.0,
                without_the_patch: 90.0,
                hardcoded_paths: 0.0,
                total: 1242.0,
            },
            suites_ran: Some(SuitesRan {
                unpatched: SuiteRun {
                    at: "2026-11-30 09:12 UTC".into(),
                    reused: true,
                },
                patched: SuiteRun {
                    at: "2026-12-01 09:55 UTC".into(),
                    reused: false,
                },
            }),
        });
        report
    }

    /// The cell with `tests` as the series' tests, all PASS (the elf figures to match).
    pub(crate) fn with_series_tests(report: &mut CellReport, tests: &[String]) {
        let steps = &mut run_mut(report).steps;
        steps.series_tests = StepOutcome::Done(SeriesTests {
            tests: tests.iter().map(|t| named(t, Status::Pass, None)).collect(),
            imposed_by_qemu: Default::default(),
        });
        if let StepOutcome::Done(diff) = &mut steps.elf_regressions {
            diff.listed.patched.count = diff.listed.unpatched.count + tests.len();
            diff.series_own = tests.to_vec();
        }
        if let StepOutcome::Done(without) = &mut steps.without_the_patch {
            without.tests = tests
                .iter()
                .map(|t| named(t, Status::Fail, Some("error: 1 test failures")))
                .collect();
        }
        if let StepOutcome::Done(hardcoded) = &mut steps.hardcoded_paths {
            hardcoded.series_tests.tests = tests
                .iter()
                .filter(|t| !hardcoded.not_built.contains_key(*t))
                .map(|t| named(t, Status::Pass, None))
                .collect();
        }
    }

    pub(crate) fn run_mut(report: &mut CellReport) -> &mut CellRun {
        report.run.as_mut().expect("a report with a run")
    }

    /// Not root: the secure-mode scenarios skipped, patched and unpatched.
    fn incomplete() -> CellReport {
        let mut report = verified("2.44", Target::X86_64, "id-2.44");
        let why = "secure mode needs root";
        let steps = &mut run_mut(&mut report).steps;
        if let StepOutcome::Done(m) = &mut steps.matrix {
            m.pass -= 2;
            m.skipped = vec![
                unrun("12-secure-dynamic", why),
                unrun("13-static-secure", why),
            ];
        }
        if let StepOutcome::Done(s) = &mut steps.sensitivity {
            s.matrix.fails_without_patch -= 2;
            s.matrix.skipped = vec![
                unrun("12-secure-dynamic", why),
                unrun("13-static-secure", why),
            ];
            s.differing.pop_first();
            s.differing.pop_first();
            s.needing_the_patch = s.differing.clone();
        }
        report
    }

    fn failed() -> CellReport {
        let mut report = verified("2.43", Target::X86_64, "id-2.43");
        let steps = &mut run_mut(&mut report).steps;
        if let StepOutcome::Done(m) = &mut steps.matrix {
            m.pass -= 1;
            m.mismatch = vec!["03-dlopen-runpath-miss".into()];
        }
        if let StepOutcome::Done(d) = &mut steps.elf_regressions {
            d.regressions.push(crate::verify::testsuite::Change {
                test: "elf/tst-a".into(),
                unpatched: Status::Pass,
                patched: Status::Fail,
                reason: Some("boom".into()),
            });
        }
        report
    }

    fn broken() -> CellReport {
        let mut report = verified("2.41", Target::Aarch64, "?");
        run_mut(&mut report).steps = Steps {
            applies: StepOutcome::Error("cannot load the series patches/2.41".into()),
            ..Steps::not_run()
        };
        report
    }

    fn not_verified() -> CellReport {
        CellReport::new(
            Release::parse("2.36").unwrap(),
            Target::X86_64,
            "id-2.36".into(),
            String::new(),
        )
    }

    fn every_state() -> Vec<CellReport> {
        vec![
            not_verified(),
            broken(),
            failed(),
            incomplete(),
            verified("2.44", Target::Aarch64, "id-2.44"),
        ]
    }

    #[test]
    fn states_come_from_the_figures() {
        let states: Vec<CellState> = every_state().iter().map(CellReport::state).collect();
        assert_eq!(
            states,
            [
                CellState::NotVerified,
                CellState::Failed,
                CellState::Failed,
                CellState::Incomplete(vec![
                    "patched matrix skipped 12-secure-dynamic, 13-static-secure: secure mode needs root".into(),
                    "unpatched matrix skipped 12-secure-dynamic, 13-static-secure: secure mode needs root".into(),
                ]),
                CellState::Verified,
            ]
        );
    }

    /// What QEMU user mode imposes is named as such under emulation, and only there.
    #[test]
    fn what_qemu_imposes_is_named_on_an_emulated_target_only() {
        let copy = named(
            "elf/tst-dlopen-sgid",
            Status::Fail,
            Some("error: support_copy_file.c:37: copying from \"/proc/self/exe\" to \"/tmp/x\": only 4 of 12 bytes copied"),
        );
        let imposed = " (imposed by QEMU user mode: QEMU user mode answers stat of /proc/self/exe \
                       with QEMU's own binary, so support_capture_subprogram_self_sgid copies \
                       fewer bytes than it expects)";
        let reason = copy.reason.clone().unwrap();
        assert_eq!(reason_of(&copy, true), format!("{reason}{imposed}"));
        assert_eq!(reason_of(&copy, false), reason);
        let other = named("elf/tst-x", Status::Unsupported, Some("error: no AVX512"));
        assert_eq!(reason_of(&other, true), "error: no AVX512");
    }

    #[test]
    fn lines_say_the_state_and_why() {
        let mut cached = verified("2.44", Target::X86_64, "id");
        cached.from_cache = true;
        let mut all = every_state();
        all.push(cached);
        let lines: Vec<String> = all.iter().map(line).collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn the_table_shows_every_state() {
        insta::assert_snapshot!(table(&every_state()));
    }

    #[test]
    fn the_page_shows_every_state() {
        let provenance = Provenance {
            written_at: "2026-12-01 12:00 UTC".into(),
            commit: "abcdef123456".into(),
            by: WrittenBy::Verify { cached_only: true },
        };
        insta::assert_snapshot!(markdown(&provenance, &every_state()));
    }
}
