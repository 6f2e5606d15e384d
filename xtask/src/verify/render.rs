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
            "    elf suite: patched {} PASS / {} FAIL / {} UNSUPPORTED / {} XPASS or XFAIL of {}; unpatched {} / {} / {} / {} of {}",
            diff.patched.pass,
            diff.patched.fail,
            diff.patched.unsupported,
            diff.patched.other,
            diff.patched.total,
            diff.unpatched.pass,
            diff.unpatched.fail,
            diff.unpatched.unsupported,
            diff.unpatched.other,
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
        for t in &diff.expected_to_fail {
            let _ = writeln!(
                out,
                "    {} {} (glibc marks it as expected to fail in this configuration)",
                t.status, t.test
            );
        }
        for t in &diff.never_ran {
            let _ = writeln!(out, "    NEVER RAN {}", t.test);
        }
        for t in &diff.only_unpatched {
            let _ = writeln!(
                out,
                "    RAN ONLY WITHOUT THE PATCH {} {}",
                t.test, t.status
            );
        }
        for t in &diff.only_patched {
            let _ = writeln!(
                out,
                "    RAN ONLY WITH THE PATCH (not one of the series' tests) {} {}",
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

/// docs/support.md (`page`) with the rows of one release — the main table's, the series
/// table's and the details — replaced by `reports` (all of one release), the other releases'
/// left as they are: what `cargo xtask update-release` writes after verifying one release.
pub fn with_release_rows(page: &str, reports: &[CellReport]) -> Result<String, String> {
    let Some(first) = reports.first() else {
        return Ok(page.to_string());
    };
    let release = first.release.as_str();
    let (Some(table_at), Some(series_at), Some(details_at)) = (
        page.find("\n| release | target |"),
        page.find("\n## Series\n"),
        page.find("\n## Details\n"),
    ) else {
        return Err(
            "it lacks the table, \"## Series\" or \"## Details\" of a page `cargo xtask verify --markdown` made".into(),
        );
    };
    if !(table_at < series_at && series_at < details_at) {
        return Err(
            "its sections are not in the order `cargo xtask verify --markdown` writes them".into(),
        );
    }
    let order = |version: &str| {
        crate::store::release::SUPPORTED
            .iter()
            .position(|r| r.version == version)
            .unwrap_or(usize::MAX)
    };
    let row_release = |line: &str| -> Option<String> {
        let mut cells = line.split('|').map(str::trim).skip(1);
        let first = cells.next()?;
        (order(first) != usize::MAX).then(|| first.to_string())
    };
    // Replaces the release's lines among `lines` (rows, or detail blocks) by `new`, placed
    // before the first of a newer release.
    let splice = |items: Vec<(Option<String>, String)>, new: Vec<String>| -> String {
        let mut out = String::new();
        let mut placed = false;
        for (of, text) in items {
            if of.as_deref() == Some(release) {
                continue;
            }
            if !placed && of.as_deref().is_some_and(|r| order(r) > order(release)) {
                new.iter().for_each(|n| out.push_str(n));
                placed = true;
            }
            out.push_str(&text);
        }
        if !placed {
            new.iter().for_each(|n| out.push_str(n));
        }
        out
    };
    let rows_of = |section: &str| -> Vec<(Option<String>, String)> {
        section
            .split_inclusive('\n')
            .map(|line| (row_release(line), line.to_string()))
            .collect()
    };
    // Only the table rows move: a row is a line that starts with `| <release> |`.
    let table = &page[table_at..series_at];
    let new_rows: Vec<String> = reports
        .iter()
        .map(|r| {
            let mut row = cells(r);
            if r.from_cache {
                row[8] = minutes(r.seconds.total);
            }
            format!("| {} |\n", row.join(" | "))
        })
        .collect();
    let series = &page[series_at..details_at];
    let new_series = vec![format!(
        "| {} | `{}` | {} (commit `{}`) |\n",
        release, first.series, first.verified_at, first.commit
    )];
    let detail_section = &page[details_at..];
    let (fence_open, fence_close) =
        match (detail_section.find("```\n"), detail_section.rfind("\n```")) {
            (Some(open), Some(close)) if open + 4 <= close + 1 => (open + 4, close + 1),
            _ => return Err("its details are not in a ``` block".into()),
        };
    let mut blocks: Vec<(Option<String>, String)> = Vec::new();
    for line in detail_section[fence_open..fence_close].split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("glibc ") {
            let version = rest.split_whitespace().next().unwrap_or_default();
            blocks.push((Some(version.to_string()), String::new()));
        } else if blocks.is_empty() {
            blocks.push((None, String::new()));
        }
        blocks.last_mut().expect("pushed above").1.push_str(line);
    }
    let new_details: Vec<String> = reports.iter().map(details).collect();
    Ok(format!(
        "{}{}{}{}{}{}",
        &page[..table_at],
        splice(rows_of(table), new_rows),
        splice(rows_of(series), new_series),
        &detail_section[..fence_open],
        splice(blocks, new_details),
        &detail_section[fence_close..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::cell::Seconds;
    use loader_tests::Target;

    fn report(release: &str, target: Target, series: &str, verdict: Verdict) -> CellReport {
        let check = |summary: &str| Check {
            verdict,
            summary: summary.to_string(),
        };
        CellReport {
            release: release.into(),
            target,
            verified_at: format!("when {series}"),
            commit: "c0ffee".into(),
            series: series.into(),
            key: String::new(),
            applies: check("applies"),
            build: check("built"),
            matrix: check("matrix"),
            sensitivity: check("sensitivity"),
            series_tests: check("tests"),
            elf_regressions: check("elf"),
            series_test_results: Vec::new(),
            elf: None,
            seconds: Seconds::default(),
            passed: verdict == Verdict::Pass,
            from_cache: false,
        }
    }

    #[test]
    fn one_release_s_rows_are_replaced_and_the_others_kept() {
        let all: Vec<CellReport> = ["2.36", "2.43", "2.44"]
            .iter()
            .flat_map(|r| Target::ALL.map(|t| report(r, t, &format!("old-{r}"), Verdict::Fail)))
            .collect();
        let page = markdown(&all, "then", "abc", false);
        let new: Vec<CellReport> = Target::ALL
            .map(|t| report("2.43", t, "new-2.43", Verdict::Pass))
            .to_vec();
        let updated = with_release_rows(&page, &new).unwrap();
        let mut expected = all.clone();
        expected.splice(2..4, new.iter().cloned());
        assert_eq!(updated, markdown(&expected, "then", "abc", false));
        // A release the page lacks goes where it belongs.
        let without: Vec<CellReport> = all
            .iter()
            .filter(|r| r.release != "2.43")
            .cloned()
            .collect();
        let page = markdown(&without, "then", "abc", false);
        assert_eq!(
            with_release_rows(&page, &new).unwrap(),
            markdown(&expected, "then", "abc", false)
        );
        assert!(with_release_rows("# not a support page\n", &new).is_err());
    }

    /// A cell of a `verify --cached-only` page, with no current report.
    fn unverified(release: &str, target: Target) -> CellReport {
        let mut report = report(release, target, &format!("id-{release}"), Verdict::NotRun);
        report.mark_unverified();
        assert!(report.is_unverified());
        report
    }

    #[test]
    fn an_update_s_rows_replace_the_release_s_unverified_ones() {
        let all: Vec<CellReport> = ["2.36", "2.43", "2.44"]
            .iter()
            .flat_map(|r| Target::ALL.map(|t| unverified(r, t)))
            .collect();
        let page = markdown(&all, "then", "abc", true);
        assert_eq!(page.matches("| not verified: ").count(), 6, "{page}");
        let new: Vec<CellReport> = Target::ALL
            .map(|t| report("2.43", t, "new-2.43", Verdict::Pass))
            .to_vec();
        let updated = with_release_rows(&page, &new).unwrap();
        let mut expected = all.clone();
        expected.splice(2..4, new.iter().cloned());
        assert_eq!(updated, markdown(&expected, "then", "abc", true));
        assert_eq!(updated.matches("| not verified: ").count(), 4, "{updated}");
        assert!(
            updated.contains("| 2.43 | x86_64 | ok: applies |"),
            "{updated}"
        );
    }
}
