//! `cargo xtask rebase-glibc --check`: every series in `patches/` applies exactly to its
//! release, stays inside the declared scope, and re-exports byte for byte.
//!
//! Each supported release (and each directory of `patches/resolutions/`) gets one verdict: `ok`, `DRIFT` (applies, but the files are not what the
//! commits export), `FAILED` (a defect of the series: does not parse, does not apply, leaves
//! the scope, lost its series file), `MISSING` (its release is not in the store; the check
//! imports nothing unless asked) or `ERROR` (the check itself could not read something: not
//! a finding about the series, and never reported as one).

use std::fmt::Write;

use anyhow::{Context, Result};
use git2::{Oid, Repository};

use crate::rebase::records::Resolutions;
use crate::series::Workspace;
use crate::series::{
    first_difference, format_patch, is_defect, quote_line, Drift, Series, RESOLUTIONS_DIR,
};
use crate::store::ReleaseNotImported;
use model::{Release, SUPPORTED};

pub struct CheckReport {
    /// Nothing needs attention.
    pub ok: bool,
    /// Something could not be checked (a failure to read or write, not a finding).
    pub errors: bool,
    pub text: String,
}

enum Verdict {
    Clean(Series),
    Drift(Vec<String>),
}

/// Checks every series directory in `patches/` (see the module docs).
pub fn check(ws: &Workspace) -> Result<CheckReport> {
    let releases = ws.series_dirs();
    let mut report = CheckReport {
        ok: true,
        errors: false,
        text: String::new(),
    };
    if releases.is_empty() {
        report.ok = false;
        let _ = writeln!(report.text, "no series in {}", ws.patches_dir.display());
    }
    // Every supported release is accounted for: one whose directory is gone is a finding,
    // not a release with nothing to check.
    for release in SUPPORTED.iter().filter(|r| !releases.contains(r)) {
        let dir = ws.series_dir(*release);
        match dir.try_exists() {
            Ok(false) => {
                report.ok = false;
                let _ = writeln!(
                    report.text,
                    "FAILED  {}: glibc {release} is a supported release, but it has no series (the directory is gone): restore it from git, or make it with `cargo xtask update-release {release}`",
                    dir.display()
                );
            }
            Ok(true) => {
                report.ok = false;
                let _ = writeln!(
                    report.text,
                    "FAILED  {}: not a directory: the series of glibc {release} lives in a directory of that name",
                    dir.display()
                );
            }
            Err(e) => {
                report.errors = true;
                let _ = writeln!(
                    report.text,
                    "ERROR   {}: cannot tell whether it exists: {e}\n        (the check could not read what it needs: this says nothing about the series)",
                    dir.display()
                );
            }
        }
    }
    for stray in ws.unknown_series_dirs()? {
        report.ok = false;
        let _ = writeln!(
            report.text,
            "FAILED  {}: not a supported release ({}); move or delete it",
            stray.display(),
            model::supported_list()
        );
    }
    for release in releases.iter().copied() {
        let dir = ws.series_dir(release);
        match check_one(ws, release) {
            Ok(Verdict::Clean(series)) => {
                let _ = writeln!(
                    report.text,
                    "ok      {}: {} patch(es) apply exactly to {} (tree {}), stay in scope, and re-export byte for byte",
                    dir.display(),
                    series.patches.len(),
                    series.base.tag(),
                    series.base_tree
                );
            }
            Ok(Verdict::Drift(lines)) => {
                report.ok = false;
                let _ = writeln!(report.text, "DRIFT   {}: {}", dir.display(), lines[0]);
                for line in &lines[1..] {
                    let _ = writeln!(report.text, "        {line}");
                }
                let _ = writeln!(
                    report.text,
                    "        the files differ from what the series' own commits export (edited by hand, or cut short?): restore them from git (`git diff -- {}` shows what changed),\n        or, if the edit is meant, take the files as they are:\n            cargo xtask patches import --release {release} --replace <the patch files, in order>",
                    dir.display()
                );
            }
            Err(e) if e.downcast_ref::<ReleaseNotImported>().is_some() => {
                report.ok = false;
                let _ = writeln!(
                    report.text,
                    "MISSING {}: {e:#}, or run the check with --import-missing",
                    dir.display()
                );
            }
            Err(e) if is_defect(&e) => {
                report.ok = false;
                let _ = writeln!(report.text, "FAILED  {}: {e:#}", dir.display());
                let other = releases.iter().rev().find(|r| **r != release);
                let again = match other {
                    Some(other) => format!(
                        ", or make them again from another series: cargo xtask rebase-glibc --onto {release} --from {other}"
                    ),
                    None => String::new(),
                };
                let _ = writeln!(
                    report.text,
                    "        restore the files from git (`git diff -- {}` shows what changed){again}",
                    dir.display()
                );
            }
            Err(e) => {
                report.errors = true;
                let _ = writeln!(
                    report.text,
                    "ERROR   {}: {e:#}\n        (the check could not read or write what it needs: this says nothing about the series)",
                    dir.display()
                );
            }
        }
    }
    check_resolutions(ws, &mut report);
    report.ok &= !report.errors;
    Ok(report)
}

/// `patches/resolutions/<X.Y>/`: each directory a supported release, each file a recorded
/// resolution that parses, for paths `patches/scope` allows, making text without conflict
/// markers. (Whether a rebase still meets
/// them, only the rebase can tell: it drops the stale ones when it writes.)
fn check_resolutions(ws: &Workspace, report: &mut CheckReport) {
    let root = ws.patches_dir.join(RESOLUTIONS_DIR);
    // None is fine (no rebase needed a resolution); one that cannot be read is not "none".
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            report.ok = false;
            let _ = writeln!(
                report.text,
                "FAILED  {}: not a directory (recorded resolutions live in {}/<X.Y>/)",
                root.display(),
                root.display()
            );
            return;
        }
        Err(e) => {
            report.errors = true;
            let _ = writeln!(
                report.text,
                "ERROR   {}: cannot read it: {e}\n        (the check could not read what it needs: this says nothing about the resolutions)",
                root.display()
            );
            return;
        }
    };
    let mut dirs: Vec<std::path::PathBuf> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let scope = ws.scope();
    for dir in dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(release) = Release::parse(&name).ok().filter(|_| dir.is_dir()) else {
            report.ok = false;
            let _ = writeln!(
                report.text,
                "FAILED  {}: not a supported release ({}); move or delete it",
                dir.display(),
                model::supported_list()
            );
            continue;
        };
        let loaded = Resolutions::load_dir(&dir).and_then(|set| {
            let scope = scope.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
            set.keep_rules(scope)?;
            Ok(set)
        });
        match loaded {
            Ok(set) => {
                let _ = writeln!(
                    report.text,
                    "ok      {}: {} recorded resolution(s) for rebases onto {}, in scope",
                    dir.display(),
                    set.list.len(),
                    release.tag()
                );
            }
            Err(e) if is_defect(&e) => {
                report.ok = false;
                let _ = writeln!(report.text, "FAILED  {}: {e:#}", dir.display());
            }
            Err(e) => {
                report.errors = true;
                let _ = writeln!(
                    report.text,
                    "ERROR   {}: {e:#}\n        (the check could not read what it needs: this says nothing about the resolutions)",
                    dir.display()
                );
            }
        }
    }
}

/// Release's series applies exactly to it and stays in scope: the series, and a line per
/// way the files of `patches/<X.Y>/` differ from what its commits export (none when it
/// re-exports byte for byte). An error is a [`crate::series::SeriesDefect`], a
/// [`ReleaseNotImported`], or a failure to read or write.
pub fn check_release(ws: &Workspace, release: Release) -> Result<(Series, Vec<String>)> {
    let series = ws.load_series(release)?;
    let (_, commits) = ws.commit_series(&series)?;
    let again = Series::from_commits(ws.store.repo(), series.base, &commits)?;
    let dir = ws.series_dir(release);
    let drift = again.drift_against(&dir)?;
    if drift.is_empty() {
        return Ok((series, Vec::new()));
    }
    let lines = explain_drift(ws.store.repo(), &dir, &again, &drift);
    Ok((series, lines))
}

/// The series of `release`, if `--check` passes it: what a rebase moves and `format-series`
/// mails. A series that does not parse, apply or stay in its rules is refused with the
/// defect; one whose files drifted from what its commits export (a patch cut short by hand
/// still applies, and would be moved smaller) with what drifted.
pub fn passing_series(ws: &Workspace, release: Release) -> Result<Series> {
    let dir = ws.series_dir(release);
    let refused = || {
        format!(
            "refusing to use the series in {}: `cargo xtask rebase-glibc --check` does not pass it",
            dir.display()
        )
    };
    let (series, drift) = check_release(ws, release).with_context(refused)?;
    if drift.is_empty() {
        return Ok(series);
    }
    Err(anyhow::anyhow!(
        "{}; restore the files from git (`git diff -- {}` shows what changed), or, if the edit is meant, take the files as they are with `cargo xtask patches import --release {release} --replace <the patch files>`",
        drift.join("; "),
        dir.display()
    )
    .context(format!("{}: its files drifted from what its commits export", refused())))
}

fn check_one(ws: &Workspace, release: Release) -> Result<Verdict> {
    Ok(match check_release(ws, release)? {
        (series, lines) if lines.is_empty() => Verdict::Clean(series),
        (_, lines) => Verdict::Drift(lines),
    })
}

/// One line per real difference. A patch edited by hand changes the commit ids of every patch
/// after it, so those differ too, in their `From` line only: they are named as following from
/// the edit, not as edits of their own. When the commit a patch's `From` line names is in the
/// store (the unedited series was committed there before), the edit is shown against it, at
/// the line the user changed; otherwise against the export.
fn explain_drift(
    repo: &Repository,
    dir: &std::path::Path,
    again: &Series,
    drift: &[Drift],
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut follows = Vec::new();
    let mut edited_before = false;
    let total = again.patches.len();
    for d in drift {
        let Drift::Differs { name, .. } = d else {
            lines.push(d.to_string());
            continue;
        };
        let Some(n) = again.patches.iter().position(|p| &p.name == name) else {
            lines.push(d.to_string());
            continue;
        };
        let text = std::fs::read(dir.join(name))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        match original_of(repo, &text, n + 1, total) {
            Some((_, original)) if original == text => follows.push(name.clone()),
            Some((commit, original)) => {
                edited_before = true;
                let (line, in_file, in_commit) =
                    first_difference(&text, &original).unwrap_or((1, None, None));
                lines.push(format!(
                    "{name} was edited at line {line}: the file has {}, its commit {} has {}",
                    quote_line(in_file),
                    &commit.to_string()[..12],
                    quote_line(in_commit)
                ));
            }
            None => {
                let exported = &again.patches[n].text;
                let only_from_line = text.split_once('\n').map(|(_, rest)| rest)
                    == exported.split_once('\n').map(|(_, rest)| rest);
                if only_from_line && edited_before {
                    follows.push(name.clone());
                } else {
                    edited_before = true;
                    let mut line = d.to_string();
                    if only_from_line {
                        line.push_str(" (its content no longer makes the commit its From line names: something in it was edited)");
                    }
                    lines.push(line);
                }
            }
        }
    }
    if !follows.is_empty() {
        lines.push(format!(
            "{} differ(s) only because an earlier patch changed: the From line names the commit of the unedited series",
            follows.join(", ")
        ));
    }
    lines
}

/// The commit a patch's `From <id>` line names, if the store has it, and that commit
/// formatted as patch `n` of `total`: the file as it was written.
fn original_of(repo: &Repository, text: &str, n: usize, total: usize) -> Option<(Oid, String)> {
    let id = text.strip_prefix("From ")?.split_whitespace().next()?;
    let commit = repo.find_commit(Oid::from_str(id).ok()?).ok()?;
    let original = format_patch(repo, &commit, n, total).ok()?;
    Some((commit.id(), original))
}
