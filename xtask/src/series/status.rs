//! `cargo xtask patches status`: per release, whether its series applies, or whether the
//! newest series would merge onto it.
//!
//! Reads the store only, unless told to import what it lacks: a release that is not there
//! gets a row saying so and the command that imports it.

use std::fmt::Write;

use anyhow::Result;

use crate::merge::{self, Picked, Step};
use crate::series::{is_defect, Workspace};
use crate::store::ReleaseNotImported;
use model::Release;

/// The state of one release's series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Its own series applies exactly.
    AppliesCleanly { base: String },
    /// Its own series does not apply (the files are off: a defect of the series).
    DoesNotApply { base: String, why: String },
    /// No series of its own; the newest one merges without conflicts.
    NeedsRebase { from: Release, dropped: usize },
    /// No series of its own; the newest one conflicts in these files.
    Conflicts { from: Release, files: Vec<String> },
    /// No series anywhere.
    NoSeries,
    /// A release the answer needs is not in the store, which the command may not import to.
    NotImported { why: String },
    /// The status could not be found out: a failure to read or write, not a finding.
    Error { why: String },
}

impl State {
    /// A row the user has to act on: exit status 2.
    pub fn needs_attention(&self) -> bool {
        matches!(self, State::DoesNotApply { .. } | State::NotImported { .. })
    }

    fn of_error(base: String, e: &anyhow::Error) -> State {
        if e.downcast_ref::<ReleaseNotImported>().is_some() {
            State::NotImported {
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

/// A row per release.
pub fn states(ws: &Workspace, releases: &[Release]) -> Result<Vec<(Release, State)>> {
    let newest = ws.newest_series().ok();
    let newest_commits = newest
        .as_ref()
        .map(|series| ws.commit_series(series).map(|c| c.1));
    let mut rows = Vec::new();
    for release in releases.iter().copied() {
        let state = if ws.series_dirs().contains(&release) {
            match ws.load_series(release) {
                Ok(series) => {
                    let base = format!("{} {}", series.base.tag(), series.base_tree);
                    match ws.commit_series(&series) {
                        Ok(_) => State::AppliesCleanly { base },
                        Err(e) => State::of_error(base, &e),
                    }
                }
                Err(e) => State::of_error("?".into(), &e),
            }
        } else if let (Some(series), Some(Err(e))) = (&newest, &newest_commits) {
            match State::of_error("-".into(), e) {
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
                Err(e) => State::of_error("-".into(), &e),
            }
        } else {
            State::NoSeries
        };
        rows.push((release, state));
    }
    Ok(rows)
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
                Merged::Clean(steps.iter().filter(|s| **s == Step::Dropped).count())
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

/// What `cargo xtask patches status` prints, and whether a row needs attention or failed.
pub struct StatusReport {
    pub text: String,
    pub needs_attention: bool,
    pub errors: bool,
}

/// The table `cargo xtask patches status` prints.
pub fn status(ws: &Workspace, releases: &[Release]) -> Result<StatusReport> {
    let mut out = format!(
        "{:<8} {:<16} {}\n",
        "release", "state", "series base / details"
    );
    let (mut needs_attention, mut errors) = (false, false);
    for (release, state) in states(ws, releases)? {
        needs_attention |= state.needs_attention();
        errors |= matches!(state, State::Error { .. });
        let (name, detail) = match state {
            State::AppliesCleanly { base } => ("applies cleanly", base),
            State::DoesNotApply { base, why } => ("does not apply", format!("{base}: {why}")),
            State::NeedsRebase { from, dropped } => (
                "needs rebase",
                format!(
                    "no series; patches/{from} merges cleanly ({}): cargo xtask rebase-glibc --onto {release}",
                    if dropped == 0 { "nothing dropped".to_string() } else { format!("{dropped} already upstream") }
                ),
            ),
            State::Conflicts { from, files } => (
                "conflicts",
                format!("no series; patches/{from} conflicts in {}: cargo xtask rebase-glibc --onto {release}", files.join(", ")),
            ),
            State::NoSeries => ("no series", format!("nothing in {}", ws.patches_dir.display())),
            State::NotImported { why } => (
                "not imported",
                format!("{why}, or run `cargo xtask patches status --import-missing`"),
            ),
            State::Error { why } => ("error", why),
        };
        let _ = writeln!(out, "{:<8} {:<16} {detail}", release.version(), name);
    }
    Ok(StatusReport {
        text: out,
        needs_attention,
        errors,
    })
}
