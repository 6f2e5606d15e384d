//! `cargo xtask rebase-glibc --check`: every series in `patches/` applies exactly to its
//! release, stays inside the declared scope, and re-exports byte for byte.
//!
//! Each supported release (and each directory of `patches/resolutions/`) gets one verdict: `ok`, `DRIFT` (applies, but the files are not what the
//! commits export), `FAILED` (a defect of the series: does not parse, does not apply, leaves
//! the scope, lost its series file), `MISSING` (its release is not in the store; the check
//! imports nothing unless asked) or `ERROR` (the check itself could not read something: not
//! a finding about the series, and never reported as one).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use git2::{Oid, Repository};

use crate::rebase::records::Resolutions;
use crate::series::workspace::SeriesEntry;
use crate::series::{
    first_difference, format_patch, is_defect, quote_line, Drift, Series, RESOLUTIONS_DIR,
};
use crate::series::{variant, Workspace};
use crate::store::ReleaseNotImported;
use model::{supported, Flavour, Release};

/// What `--check` found: one finding per series directory (or stray entry) of `patches/` and
/// per directory of `patches/resolutions/`, in the order the check met them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// `patches/`.
    pub patches_dir: PathBuf,
    pub findings: Vec<Finding>,
}

/// One verdict of `--check`, on the directory it names (none for [`SeriesVerdict::NoSeries`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub dir: PathBuf,
    pub verdict: SeriesVerdict,
}

/// What the check says of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeriesVerdict {
    /// A series that applies exactly to its release, stays in scope and re-exports byte for
    /// byte.
    Applies {
        patches: usize,
        base: Release,
        tree: Oid,
    },
    /// Recorded resolutions that parse and stay in scope.
    Records { count: usize, onto: Release },
    /// `patches/` holds no series at all.
    NoSeries,
    /// A supported release whose series directory is gone.
    Absent { release: Release },
    /// Where a supported release's series lives, what no series can be (a symlink, a file
    /// that is not a directory): why.
    Unfit { why: String },
    /// `patches/resolutions` is not a directory.
    RecordsNotADirectory,
    /// A directory named after no supported release.
    Unsupported,
    /// The series applies, but its files differ from what its commits export: a line per
    /// difference.
    Drift {
        release: Release,
        lines: Vec<String>,
    },
    /// The release is not in the store (the check imports nothing unless asked).
    Missing { why: String },
    /// A defect of the series (does not parse, apply, stay in scope; lost its series file):
    /// `remake_from` is a series it can be made again from.
    Defect {
        release: Release,
        why: String,
        remake_from: Option<Release>,
    },
    /// A defect of recorded resolutions.
    RecordsDefect { why: String },
    /// A variant (`patches/variants/<name>/<X.Y>/`) that applies on top of the release's
    /// series.
    VariantApplies {
        variant: &'static str,
        release: Release,
    },
    /// A variant (`patches/variants/<name>/<X.Y>/`) that no longer applies on top of the
    /// release's series: the build of its flavour would fail.
    VariantDefect {
        variant: &'static str,
        release: Release,
        why: String,
    },
    /// The check could not read (or write, `wrote`) what it needs: says nothing about the
    /// series or records.
    Error {
        why: String,
        about: Subject,
        wrote: bool,
    },
}

/// What a check error says nothing about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Series,
    Resolutions,
}

impl SeriesVerdict {
    /// A finding the user must act on (exit status 2): neither a pass nor an error.
    fn needs_attention(&self) -> bool {
        !matches!(
            self,
            SeriesVerdict::Applies { .. }
                | SeriesVerdict::Records { .. }
                | SeriesVerdict::VariantApplies { .. }
                | SeriesVerdict::Error { .. }
        )
    }
}

impl CheckReport {
    /// Something could not be checked (a failure to read or write, not a finding).
    pub(crate) fn errors(&self) -> bool {
        self.findings
            .iter()
            .any(|f| matches!(f.verdict, SeriesVerdict::Error { .. }))
    }

    /// Nothing needs attention and everything could be checked.
    pub fn ok(&self) -> bool {
        !self.errors() && !self.findings.iter().any(|f| f.verdict.needs_attention())
    }

    fn push(&mut self, dir: &Path, verdict: SeriesVerdict) {
        self.findings.push(Finding {
            dir: dir.to_path_buf(),
            verdict,
        });
    }

    /// The report the command prints: a line (or a few) per finding.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for finding in &self.findings {
            render_finding(&mut text, finding, &self.patches_dir);
        }
        text
    }
}

fn render_finding(text: &mut String, finding: &Finding, patches_dir: &Path) {
    let dir = finding.dir.display();
    let _ = match &finding.verdict {
        SeriesVerdict::Applies {
            patches,
            base,
            tree,
        } => writeln!(
            text,
            "ok      {dir}: {patches} patch(es) apply exactly to {} (tree {tree}), stay in scope, and re-export byte for byte",
            base.tag()
        ),
        SeriesVerdict::Records { count, onto } => writeln!(
            text,
            "ok      {dir}: {count} recorded resolution(s) for rebases onto {}, in scope",
            onto.tag()
        ),
        SeriesVerdict::NoSeries => writeln!(text, "no series in {}", patches_dir.display()),
        SeriesVerdict::Absent { release } => writeln!(
            text,
            "FAILED  {dir}: glibc {release} is a supported release, but it has no series (the directory is gone): restore it from git, or make it with `cargo xtask update-release {release}`"
        ),
        SeriesVerdict::Unfit { why } => writeln!(text, "FAILED  {dir}: {why}"),
        SeriesVerdict::RecordsNotADirectory => writeln!(
            text,
            "FAILED  {dir}: not a directory (recorded resolutions live in {dir}/<X.Y>/)"
        ),
        SeriesVerdict::Unsupported => writeln!(
            text,
            "FAILED  {dir}: not a supported release ({}); move or delete it",
            model::supported_list()
        ),
        SeriesVerdict::Drift { release, lines } => {
            let _ = writeln!(text, "DRIFT   {dir}: {}", lines[0]);
            for line in &lines[1..] {
                let _ = writeln!(text, "        {line}");
            }
            writeln!(
                text,
                "        the files differ from what the series' own commits export (edited by hand, or cut short?): restore them from git (`git diff -- {dir}` shows what changed),\n        or, if the edit is meant, take the files as they are:\n            cargo xtask series import --release {release} --replace <the patch files, in order>"
            )
        }
        SeriesVerdict::Missing { why } => writeln!(
            text,
            "MISSING {dir}: {why}, or run the check with --import-missing"
        ),
        SeriesVerdict::Defect {
            release,
            why,
            remake_from,
        } => {
            let _ = writeln!(text, "FAILED  {dir}: {why}");
            let again = match remake_from {
                Some(other) => format!(
                    ", or make them again from another series: cargo xtask rebase-glibc --onto {release} --from {other}"
                ),
                None => String::new(),
            };
            writeln!(
                text,
                "        restore the files from git (`git diff -- {dir}` shows what changed){again}"
            )
        }
        SeriesVerdict::RecordsDefect { why } => writeln!(text, "FAILED  {dir}: {why}"),
        SeriesVerdict::VariantApplies { variant, release } => writeln!(
            text,
            "ok      {dir}: the {variant} variant applies on top of patches/{release}"
        ),
        SeriesVerdict::VariantDefect {
            variant,
            release,
            why,
        } => writeln!(
            text,
            "FAILED  {dir}: the {variant} variant does not apply on top of patches/{release}: {why}\n        \
             regenerate it: `git am` the series onto {tag}, then the variant with `git am -3`, and \
             `git format-patch --signature=ld-fallback` it back (patches/variants/README.md)",
            tag = release.tag()
        ),
        SeriesVerdict::Error { why, about, wrote } => {
            let about = match about {
                Subject::Series => "the series",
                Subject::Resolutions => "the resolutions",
            };
            let access = if *wrote { "read or write" } else { "read" };
            writeln!(
                text,
                "ERROR   {dir}: {why}\n        (the check could not {access} what it needs: this says nothing about {about})"
            )
        }
    };
}

/// Checks every series directory in `patches/` (see the module docs).
pub fn check(ws: &Workspace) -> Result<CheckReport> {
    let releases = ws.series_dirs();
    let mut report = CheckReport {
        patches_dir: ws.patches_dir.clone(),
        findings: Vec::new(),
    };
    if releases.is_empty() {
        report.push(&ws.patches_dir, SeriesVerdict::NoSeries);
    }
    // Every supported release is accounted for: one whose directory is gone is a finding,
    // not a release with nothing to check.
    for release in supported()
        .iter()
        .copied()
        .filter(|r| !releases.contains(r))
    {
        let dir = ws.series_dir(release);
        let verdict = match ws.series_entry(release) {
            SeriesEntry::Absent => SeriesVerdict::Absent { release },
            SeriesEntry::Unfit(why) => SeriesVerdict::Unfit { why },
            SeriesEntry::Unknown(why) => SeriesVerdict::Error {
                why,
                about: Subject::Series,
                wrote: false,
            },
            SeriesEntry::Directory => unreachable!("a directory is one of `releases`"),
        };
        report.push(&dir, verdict);
    }
    for stray in ws.unknown_series_dirs()? {
        report.push(&stray, SeriesVerdict::Unsupported);
    }
    for release in releases.iter().copied() {
        let dir = ws.series_dir(release);
        let mut applied = None;
        let verdict = match check_release(ws, release) {
            Ok((series, drift)) if drift.is_empty() => {
                let verdict = SeriesVerdict::Applies {
                    patches: series.patches.len(),
                    base: series.base,
                    tree: series.base_tree,
                };
                applied = Some(series);
                verdict
            }
            Ok((_, lines)) => SeriesVerdict::Drift { release, lines },
            Err(e) if e.downcast_ref::<ReleaseNotImported>().is_some() => SeriesVerdict::Missing {
                why: format!("{e:#}"),
            },
            Err(e) if is_defect(&e) => SeriesVerdict::Defect {
                release,
                why: format!("{e:#}"),
                remake_from: releases.iter().rev().find(|r| **r != release).copied(),
            },
            Err(e) => SeriesVerdict::Error {
                why: format!("{e:#}"),
                about: Subject::Series,
                wrote: true,
            },
        };
        report.push(&dir, verdict);
        if let Some(series) = applied {
            check_variants(ws, series, &mut report);
        }
    }
    check_resolutions(ws, &mut report);
    Ok(report)
}

/// Each variant of the release's series (which applies) applies on top of it, so that
/// building the variant's flavour cannot be the first to find out.
fn check_variants(ws: &Workspace, series: Series, report: &mut CheckReport) {
    let release = series.base;
    for flavour in Flavour::VARIANTS {
        let Some(variant) = flavour.variant() else {
            continue;
        };
        let dir = variant::dir(&ws.patches_dir, variant, release);
        if !dir.exists() {
            continue;
        }
        let mut series = series.clone();
        let applied = variant::append(&mut series, &ws.patches_dir, variant, release)
            .map_err(|e| crate::series::defect(format!("{e:#}")))
            .and_then(|()| ws.commit_series(&series));
        match applied {
            Ok(_) => report.push(&dir, SeriesVerdict::VariantApplies { variant, release }),
            Err(e) if is_defect(&e) => report.push(
                &dir,
                SeriesVerdict::VariantDefect {
                    variant,
                    release,
                    why: format!("{e:#}"),
                },
            ),
            Err(e) => report.push(
                &dir,
                SeriesVerdict::Error {
                    why: format!("{e:#}"),
                    about: Subject::Series,
                    wrote: true,
                },
            ),
        }
    }
}

/// `patches/resolutions/<X.Y>/`: each directory a supported release, each file a recorded
/// resolution that parses, for paths `patches/scope` allows, making text without conflict
/// markers. (Whether a rebase still meets them, only the rebase can tell: it drops the
/// stale ones when it writes.)
fn check_resolutions(ws: &Workspace, report: &mut CheckReport) {
    let root = ws.patches_dir.join(RESOLUTIONS_DIR);
    // None is fine (no rebase needed a resolution); one that cannot be read is not "none".
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            report.push(&root, SeriesVerdict::RecordsNotADirectory);
            return;
        }
        Err(e) => {
            let why = format!("cannot read it: {e}");
            report.push(
                &root,
                SeriesVerdict::Error {
                    why,
                    about: Subject::Resolutions,
                    wrote: false,
                },
            );
            return;
        }
    };
    let mut dirs: Vec<PathBuf> = entries
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
            report.push(&dir, SeriesVerdict::Unsupported);
            continue;
        };
        let loaded = Resolutions::load_dir(&dir).and_then(|set| {
            // The scope's defect (a FIFO, a directory) is the records' too, as the series';
            // a failure to read it stays a failure.
            let scope = scope.as_ref().map_err(|e| match is_defect(e) {
                true => crate::series::defect(format!("{e:#}")),
                false => anyhow::anyhow!("{e:#}"),
            })?;
            set.keep_rules(scope)?;
            Ok(set)
        });
        let verdict = match loaded {
            Ok(set) => SeriesVerdict::Records {
                count: set.list.len(),
                onto: release,
            },
            Err(e) if is_defect(&e) => SeriesVerdict::RecordsDefect {
                why: format!("{e:#}"),
            },
            Err(e) => SeriesVerdict::Error {
                why: format!("{e:#}"),
                about: Subject::Resolutions,
                wrote: false,
            },
        };
        report.push(&dir, verdict);
    }
}

/// Release's series applies exactly to it and stays in scope: the series, and a line per
/// way the files of `patches/<X.Y>/` differ from what its commits export (none when it
/// re-exports byte for byte). An error is a [`crate::series::SeriesDefect`], a
/// [`ReleaseNotImported`], or a failure to read or write.
pub(crate) fn check_release(ws: &Workspace, release: Release) -> Result<(Series, Vec<String>)> {
    check_read(ws, ws.load_series(release)?)
}

/// [`check_release`] of a series read from `patches/<X.Y>/` already: the one judge of a
/// series, whose verdict `series status` and `verify check-support` report too (they are
/// handed it as a [`crate::series::Judge`]).
pub fn check_read(ws: &Workspace, series: Series) -> Result<(Series, Vec<String>)> {
    let release = series.base;
    let (_, commits) = ws.commit_series(&series)?;
    let again = Series::from_commits(ws.store.repo(), series.base, &commits)?;
    let dir = ws.series_dir(release);
    let drift = again.drift_against_read(&series, &dir)?;
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
pub(crate) fn passing_series(ws: &Workspace, release: Release) -> Result<Series> {
    passing(ws, release, check_release(ws, release))
}

/// [`passing_series`] of a series read from `patches/<X.Y>/` already.
pub(crate) fn passing_read(ws: &Workspace, series: Series) -> Result<Series> {
    let release = series.base;
    passing(ws, release, check_read(ws, series))
}

fn passing(
    ws: &Workspace,
    release: Release,
    checked: Result<(Series, Vec<String>)>,
) -> Result<Series> {
    let dir = ws.series_dir(release);
    let refused = || {
        format!(
            "refusing to use the series in {}: `cargo xtask rebase-glibc --check` does not pass it",
            dir.display()
        )
    };
    let (series, drift) = match checked {
        Ok(checked) => checked,
        // A finding of the check is what refuses the series; a failure to read or write (a
        // read-only store) is no finding, and `--check` may well pass the series.
        Err(e) if is_defect(&e) || e.downcast_ref::<ReleaseNotImported>().is_some() => {
            return Err(e.context(refused()))
        }
        Err(e) => return Err(e),
    };
    if drift.is_empty() {
        return Ok(series);
    }
    Err(anyhow::anyhow!(
        "{}; restore the files from git (`git diff -- {}` shows what changed), or, if the edit is meant, take the files as they are with `cargo xtask series import --release {release} --replace <the patch files>`",
        drift.join("; "),
        dir.display()
    )
    .context(format!("{}: its files drifted from what its commits export", refused())))
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
        let text = model::file::read_regular(&dir.join(name), crate::series::PATCH_LIMIT)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(verdicts: Vec<SeriesVerdict>) -> CheckReport {
        CheckReport {
            patches_dir: PathBuf::from("/p"),
            findings: verdicts
                .into_iter()
                .map(|verdict| Finding {
                    dir: PathBuf::from("/p/2.42"),
                    verdict,
                })
                .collect(),
        }
    }

    /// The exit status comes from the verdicts, never from the text: a pass is ok, a finding
    /// needs attention, an error is a failure of the check and not a finding.
    #[test]
    fn the_verdicts_decide_not_the_text() {
        let release = Release::parse("2.42").unwrap();
        let applies = SeriesVerdict::Applies {
            patches: 2,
            base: release,
            tree: Oid::zero(),
        };
        let passing = report(vec![applies.clone()]);
        assert!(passing.ok() && !passing.errors());
        let finding = report(vec![applies.clone(), SeriesVerdict::Absent { release }]);
        assert!(!finding.ok() && !finding.errors());
        let error = report(vec![SeriesVerdict::Error {
            why: "EACCES".into(),
            about: Subject::Series,
            wrote: false,
        }]);
        assert!(!error.ok() && error.errors());
        assert_eq!(
            error.render(),
            "ERROR   /p/2.42: EACCES\n        (the check could not read what it needs: this says nothing about the series)\n"
        );
        assert!(!report(vec![SeriesVerdict::NoSeries]).ok());
    }
}
