//! `cargo xtask series status`: per release, whether its series applies, or whether the
//! newest series would merge onto it.
//!
//! Reads the store only, unless told to import what it lacks: a release that is not there
//! gets a row saying so and the command that imports it.

use std::fmt::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use git2::Oid;

use crate::merge::{self, PatchFate, Picked};
use crate::series::workspace::SeriesEntry;
use crate::series::{is_defect, Judge, Workspace};
use crate::store::ReleaseNotImported;
use model::Release;

/// Which series a row's verdict is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// The release's own series, made on this tree of it.
    Own { release: Release, tree: Oid },
    /// The release's own series, which could not be read.
    Unreadable,
    /// No series of its own: the newest one is what was tried.
    Newest,
}

/// `glibc-2.44 <tree>`, `?` or `-`, as the table shows it.
impl fmt::Display for Base {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Base::Own { release, tree } => write!(f, "{} {tree}", release.tag()),
            Base::Unreadable => f.write_str("?"),
            Base::Newest => f.write_str("-"),
        }
    }
}

/// The state of one release's series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Its own series applies exactly.
    AppliesCleanly { base: Base },
    /// Its own series applies, but its files are not what its commits export (`--check`'s
    /// DRIFT): a line per difference.
    Drift { base: Base, lines: Vec<String> },
    /// Its own series does not apply (the files are off: a defect of the series), or no
    /// series of its own and the newest one does not apply to its own release.
    DoesNotApply { base: Base, why: String },
    /// No series of its own; the newest one merges without conflicts.
    NeedsRebase { from: Release, dropped: usize },
    /// No series of its own; the newest one conflicts in these files.
    Conflicts { from: Release, files: Vec<String> },
    /// No series anywhere: `why` says what `patches/` is (gone, not a directory, empty).
    NoSeries { why: String },
    /// A release the answer needs (`missing`: the row's own, or the base of the newest
    /// series tried on it) is not in the store, which the command may not import to.
    NotImported { missing: Release, why: String },
    /// The status could not be found out: a failure to read or write, not a finding.
    Error { why: String },
}

impl State {
    /// A row the user has to act on: exit status 2. Only a series of its own that applies
    /// needs nothing; a release without one needs a rebase at least, whatever the newest
    /// series would make of it.
    pub(crate) fn needs_attention(&self) -> bool {
        !matches!(self, State::AppliesCleanly { .. } | State::Error { .. })
    }

    fn of_error(base: Base, e: &anyhow::Error) -> State {
        if let Some(absent) = e.downcast_ref::<ReleaseNotImported>() {
            State::NotImported {
                missing: absent.release,
                why: format!("{e:#}"),
            }
        } else if is_defect(e) {
            State::DoesNotApply {
                base,
                why: format!("{e:#}"),
            }
        } else {
            State::Error {
                why: format!("{e:#}"),
            }
        }
    }
}

/// A row per release; a release's own series as `judge` (`rebase-glibc --check`'s) finds it.
pub fn states(ws: &Workspace, releases: &[Release], judge: Judge) -> Result<Vec<(Release, State)>> {
    let newest = ws.newest_series().ok();
    let newest_commits = newest
        .as_ref()
        .map(|series| ws.commit_series(series).map(|c| c.1));
    let mut rows = Vec::new();
    for release in releases.iter().copied() {
        let state = if ws.series_dirs().contains(&release) {
            match ws.load_series(release) {
                Ok(series) => {
                    let base = Base::Own {
                        release: series.base,
                        tree: series.base_tree,
                    };
                    match judge(ws, series) {
                        Ok((_, drift)) if drift.is_empty() => State::AppliesCleanly { base },
                        Ok((_, lines)) => State::Drift { base, lines },
                        Err(e) => State::of_error(base, &e),
                    }
                }
                Err(e) => State::of_error(Base::Unreadable, &e),
            }
        } else if let SeriesEntry::Unfit(why) = ws.series_entry(release) {
            State::DoesNotApply {
                base: Base::Unreadable,
                why: format!("{}: {why}", ws.series_dir(release).display()),
            }
        } else if let SeriesEntry::Unknown(why) = ws.series_entry(release) {
            State::Error {
                why: format!("{}: {why}", ws.series_dir(release).display()),
            }
        } else if let (Some(series), Some(Err(e))) = (&newest, &newest_commits) {
            match State::of_error(Base::Newest, e) {
                State::DoesNotApply { base, why } => State::DoesNotApply {
                    base,
                    why: format!(
                        "no series; patches/{} itself does not apply: {why}",
                        series.base
                    ),
                },
                other => other,
            }
        } else if let (Some(series), Some(Ok(commits))) = (&newest, &newest_commits) {
            match merge_newest(ws, release, commits) {
                Ok(Merged::Clean(dropped)) => State::NeedsRebase {
                    from: series.base,
                    dropped,
                },
                Ok(Merged::Conflicts(files)) => State::Conflicts {
                    from: series.base,
                    files,
                },
                Err(e) => State::of_error(Base::Newest, &e),
            }
        } else {
            State::NoSeries {
                why: why_no_series(ws),
            }
        };
        rows.push((release, state));
    }
    Ok(rows)
}

/// What `patches/` is when it holds no series: a directory that is gone, a file, or an empty
/// directory are three different mistakes (a wrong `$LD_FALLBACK_PATCHES`, say).
fn why_no_series(ws: &Workspace) -> String {
    let dir = ws.patches_dir.display();
    match std::fs::metadata(&ws.patches_dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!("{dir} does not exist"),
        Err(e) => format!("cannot look at {dir}: {e}"),
        Ok(_) => format!("{dir} holds no series"),
    }
}

enum Merged {
    Clean(usize),
    Conflicts(Vec<String>),
}

fn merge_newest(ws: &Workspace, release: Release, commits: &[git2::Oid]) -> Result<Merged> {
    let head = ws.store.ensure_release(release)?;
    let mut steps = Vec::new();
    Ok(
        match merge::pick(ws.store.repo(), commits, 0, head, &mut steps)? {
            Picked::Done { .. } => {
                Merged::Clean(steps.iter().filter(|s| **s == PatchFate::Dropped).count())
            }
            Picked::Conflict { index, .. } => {
                let mut files = Vec::new();
                for conflict in index.conflicts()? {
                    let c = conflict?;
                    if let Some(e) = c.our.or(c.their).or(c.ancestor) {
                        files.push(String::from_utf8_lossy(&e.path).into_owned());
                    }
                }
                Merged::Conflicts(files)
            }
        },
    )
}

/// What `cargo xtask series status` found: a row per release.
pub struct StatusReport {
    pub rows: Vec<(Release, State)>,
    /// `patches/`, which the table names.
    pub patches_dir: PathBuf,
}

/// The rows of `cargo xtask series status`, each release's own series judged by `judge`.
pub fn status(ws: &Workspace, releases: &[Release], judge: Judge) -> Result<StatusReport> {
    // A file where patches/ should be is bad input (exit status 1, as `--check` ends), not
    // a finding about series: say what it is before any row would.
    if std::fs::metadata(&ws.patches_dir).is_ok_and(|meta| !meta.is_dir()) {
        anyhow::bail!(
            "{} is not a directory: `$LD_FALLBACK_PATCHES` (or the checkout's patches/) names the directory of the series",
            ws.patches_dir.display()
        );
    }
    Ok(StatusReport {
        rows: states(ws, releases, judge)?,
        patches_dir: ws.patches_dir.clone(),
    })
}

impl StatusReport {
    /// A row the user has to act on: exit status 2.
    pub fn needs_attention(&self) -> bool {
        self.rows.iter().any(|(_, state)| state.needs_attention())
    }

    /// A row whose state could not be found out: a failure.
    pub fn errors(&self) -> bool {
        self.rows
            .iter()
            .any(|(_, state)| matches!(state, State::Error { .. }))
    }

    /// The table the command prints.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{:<8} {:<16} {}\n",
            "release", "state", "series base / details"
        );
        for (release, state) in &self.rows {
            let (name, detail) = row(*release, state);
            let _ = writeln!(out, "{:<8} {:<16} {detail}", release.version(), name);
        }
        out
    }
}

/// A row's state in a word, and what it says.
fn row(release: Release, state: &State) -> (&'static str, String) {
    match state {
            State::AppliesCleanly { base } => ("applies cleanly", base.to_string()),
            State::Drift { base, lines } => (
                "drift",
                format!(
                    "{base}: applies, but its files are not what its commits export: {} (`cargo xtask rebase-glibc --check` says more)",
                    lines.join("; ")
                ),
            ),
            State::DoesNotApply { base, why } => ("does not apply", format!("{base}: {why}")),
            State::NeedsRebase { from, dropped } => (
                "needs rebase",
                format!(
                    "no series; patches/{from} merges cleanly ({}): cargo xtask rebase-glibc --onto {release}",
                    if *dropped == 0 { "nothing dropped".to_string() } else { format!("{dropped} already upstream") }
                ),
            ),
            State::Conflicts { from, files } => (
                "conflicts",
                format!("no series; patches/{from} conflicts in {}: cargo xtask rebase-glibc --onto {release}", files.join(", ")),
            ),
            State::NoSeries { why } => ("no series", why.clone()),
            State::NotImported { missing, why } if *missing == release => (
                "not imported",
                format!("{why}, or run `cargo xtask series status --import-missing`"),
            ),
            // The row's release is there; the series tried on it is what cannot be read.
            State::NotImported { missing, why } => (
                "no series",
                format!("no series of its own, and patches/{missing} cannot be tried on it: {why}, or run `cargo xtask series status --import-missing`"),
            ),
            State::Error { why } => ("error", why.clone()),
    }
}
