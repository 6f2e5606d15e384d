//! Cell reports as people read them: a line per cell while verifying, a table for all cells,
//! and the markdown of docs/support.md.

use std::fmt::Write;
use std::path::Path;

use super::cell::{CellReport, Check, Verdict};
use crate::series::mail_date;

/// `2026-11-30 14:05 UTC`.
pub fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    mail_date::utc_minutes(secs)
}

/// The checkout's commit, with `+changes` when the work tree differs from it.
pub fn project_commit(root: &Path) -> String {
    let Ok(repo) = git2::Repository::open(root) else {
        return "unknown (not a git checkout)".into();
    };
    let Ok(head) = repo.head().and_then(|h| h.peel_to_commit()) else {
        return "unknown (no commit)".into();
    };
    let id = head.id().to_string()[..12].to_string();
    let mut options = git2::StatusOptions::new();
    options.include_untracked(false);
    let dirty = repo
        .statuses(Some(&mut options))
        .map(|s| !s.is_empty())
        .unwrap_or(true);
    if dirty {
        format!("{id}+changes")
    } else {
        id
    }
}

fn mark(check: &Check) -> &'static str {
    match check.verdict {
        Verdict::Pass => "ok",
        Verdict::Fail => "FAIL",
        Verdict::Skipped => "skip",
        Verdict::NotRun => "-",
    }
}

fn minutes(seconds: f64) -> String {
    format!("{:.1} min", seconds / 60.0)
}

/// One line per cell: the verdict, where it comes from, and the failing checks.
pub fn line(report: &CellReport) -> String {
    if report.is_unverified() {
        return format!(
            "NOT VERIFIED glibc {} {} ({})",
            report.release, report.target, report.applies.summary
        );
    }
    let verdict = if report.passed { "PASS" } else { "FAIL" };
    let origin = if report.from_cache {
        format!("from cache, verified {}", report.verified_at)
    } else {
        format!("verified now in {}", minutes(report.seconds.total))
    };
    let mut text = format!(
        "{verdict} glibc {} {} ({origin})",
        report.release, report.target
    );
    for (name, check) in report.checks() {
        if check.verdict == Verdict::Fail {
            let _ = write!(text, "\n  {name}: {}", check.summary);
        }
    }
    text
}

const COLUMNS: [&str; 9] = [
    "release",
    "target",
    "applies",
    "build",
    "matrix",
    "sensitivity",
    "series tests",
    "elf regressions",
    "time",
];

fn cells(report: &CellReport) -> [String; 9] {
    let summary = |check: &Check| match check.verdict {
        Verdict::Pass => format!("ok: {}", check.summary),
        Verdict::Fail => format!("FAIL: {}", check.summary),
        Verdict::Skipped => format!("skipped: {}", check.summary),
        Verdict::NotRun if check.summary.starts_with(super::cell::NOT_VERIFIED) => {
            check.summary.clone()
        }
        Verdict::NotRun => "not run".to_string(),
    };
    let time = if report.from_cache {
        format!("cached ({})", report.verified_at)
    } else {
        minutes(report.seconds.total)
    };
    if report.is_unverified() {
        let mut row: [String; 9] = Default::default();
        row.fill("-".into());
        row[0] = report.release.clone();
        row[1] = report.target.to_string();
        row[2] = summary(&report.applies);
        return row;
    }
    [
        report.release.clone(),
        report.target.to_string(),
        summary(&report.applies),
        mark(&report.build).to_string(),
        summary(&report.matrix),
        summary(&report.sensitivity),
        summary(&report.series_tests),
        summary(&report.elf_regressions),
        time,
    ]
}

/// All cells as a plain-text table, then what failed or differs, in detail.
pub fn table(reports: &[CellReport]) -> String {
    let short: Vec<[String; 9]> = reports
        .iter()
        .map(|r| {
            let mut row = cells(r);
            for (i, check) in [
                &r.applies,
                &r.build,
                &r.matrix,
                &r.sensitivity,
                &r.series_tests,
                &r.elf_regressions,
            ]
            .into_iter()
            .enumerate()
            {
                row[i + 2] = mark(check).to_string();
            }
            row
        })
        .collect();
    let mut widths = COLUMNS.map(str::len);
    for row in &short {
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
    for row in &short {
        line(&row.each_ref().map(String::as_str));
    }
    out.push('\n');
    for report in reports {
        out.push_str(&details(report));
    }
    out
}

/// Everything a reader needs about one cell beyond its row.
pub fn details(report: &CellReport) -> String {
    let mut out = format!("glibc {} {}:\n", report.release, report.target);
    for (name, check) in report.checks() {
        let _ = writeln!(out, "  {name:<16} {}: {}", mark(check), check.summary);
    }
    for test in &report.series_test_results {
        let reason = test
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let _ = writeln!(out, "    series test {} {}{reason}", test.test, test.status);
    }
    if let Some(diff) = &report.elf {
        let _ = writeln!(
            out,
            "    elf suite: patched {} PASS / {} FAIL / {} UNSUPPORTED of {}; unpatched {} / {} / {} of {}",
            diff.patched.pass,
            diff.patched.fail,
            diff.patched.unsupported,
            diff.patched.total,
            diff.unpatched.pass,
            diff.unpatched.fail,
            diff.unpatched.unsupported,
            diff.unpatched.total
        );
        for c in &diff.regressions {
            let _ = writeln!(
                out,
                "    REGRESSION {}: {} unpatched, {} patched ({})",
                c.test,
                c.unpatched,
                c.patched,
                c.reason.as_deref().unwrap_or("-")
            );
        }
        for c in &diff.other_changes {
            let _ = writeln!(
                out,
                "    differs {}: {} unpatched, {} patched ({})",
                c.test,
                c.unpatched,
                c.patched,
                c.reason.as_deref().unwrap_or("-")
            );
        }
        for t in &diff.failing_in_both {
            let _ = writeln!(
                out,
                "    fails in both (environment) {}: {}",
                t.test,
                t.reason.as_deref().unwrap_or("-")
            );
        }
        for t in &diff.only_unpatched {
            let _ = writeln!(
                out,
                "    only in the unpatched tree: {} {}",
                t.test, t.status
            );
        }
        for t in &diff.unsupported {
            let _ = writeln!(
                out,
                "    UNSUPPORTED {}: {}",
                t.test,
                t.reason.as_deref().unwrap_or("-")
            );
        }
    }
    let s = report.seconds;
    let _ = writeln!(
        out,
        "    time: builds {}, elf suites {}, matrices {}, total {}",
        minutes(s.build_pair),
        minutes(s.elf_suite_pair),
        minutes(s.matrix),
        minutes(s.total)
    );
    out
}

/// docs/support.md: when and from what it was made, the table, and each cell's details.
pub fn markdown(reports: &[CellReport], now: &str, commit: &str, cached_only: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Support table\n");
    let flag = if cached_only { " --cached-only" } else { "" };
    let _ = writeln!(
        out,
        "Generated by `cargo xtask verify --release all --target all --markdown{flag}` on {now}, from commit `{commit}`.\nEach cell says when it was verified; `cargo xtask verify check-support` (run by `cargo xtask ci`) fails when a series changed after its row was produced, or a row fails. A cell marked \"not verified\" has no verdict yet: it claims nothing.\n"
    );
    let _ = writeln!(out, "| {} |", COLUMNS.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(COLUMNS.len()));
    for report in reports {
        let mut row = cells(report);
        if report.from_cache {
            row[8] = minutes(report.seconds.total);
        }
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    let _ = writeln!(out, "\n## Series\n");
    let _ = writeln!(out, "| release | series content id | verified |");
    let _ = writeln!(out, "|---|---|---|");
    let mut seen = Vec::new();
    for report in reports {
        if seen.contains(&report.release) {
            continue;
        }
        seen.push(report.release.clone());
        let _ = writeln!(
            out,
            "| {} | `{}` | {} (commit `{}`) |",
            report.release, report.series, report.verified_at, report.commit
        );
    }
    let _ = writeln!(out, "\n## Details\n\n```");
    for report in reports {
        out.push_str(&details(report));
    }
    let _ = writeln!(out, "```");
    out
}
