//! `cargo xtask patches status`: per release, whether its series applies, or whether the
//! newest series would merge onto it.

use std::fmt::Write;

use anyhow::Result;

use crate::rebase::engine::{self, Picked, Step};
use crate::series::Workspace;
use crate::store::release::Release;

/// The state of one release's series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Its own series applies exactly.
    AppliesCleanly { base: String },
    /// Its own series does not apply (the store or the files are off).
    DoesNotApply { base: String, why: String },
    /// No series of its own; the newest one merges without conflicts.
    NeedsRebase { from: Release, dropped: usize },
    /// No series of its own; the newest one conflicts in these files.
    Conflicts { from: Release, files: Vec<String> },
    /// No series anywhere.
    NoSeries,
}

/// A row per release (importing the ones the store lacks).
pub fn states(ws: &Workspace, releases: &[Release]) -> Result<Vec<(Release, State)>> {
    let newest = ws.newest_series().ok();
    let newest_commits = newest
        .as_ref()
        .map(|series| ws.commit_series(series).map(|c| c.1));
    let mut rows = Vec::new();
    for release in releases.iter().copied() {
        let state = if ws.releases_with_series().contains(&release) {
            match ws.load_series(release) {
                Ok(series) => {
                    let base = format!("{} {}", series.base.tag(), series.base_tree);
                    match ws.commit_series(&series) {
                        Ok(_) => State::AppliesCleanly { base },
                        Err(e) => State::DoesNotApply {
                            base,
                            why: format!("{e:#}"),
                        },
                    }
                }
                Err(e) => State::DoesNotApply {
                    base: "?".into(),
                    why: format!("{e:#}"),
                },
            }
        } else if let (Some(series), Some(Err(e))) = (&newest, &newest_commits) {
            State::DoesNotApply {
                base: "-".into(),
                why: format!(
                    "no series; patches/{} itself does not apply: {e:#}",
                    series.base
                ),
            }
        } else if let (Some(series), Some(Ok(commits))) = (&newest, &newest_commits) {
            let head = ws.store.ensure_release(release)?;
            let mut steps = Vec::new();
            match engine::pick(ws.store.repo(), commits, 0, head, &mut steps)? {
                Picked::Done { .. } => State::NeedsRebase {
                    from: series.base,
                    dropped: steps.iter().filter(|s| **s == Step::Dropped).count(),
                },
                Picked::Conflict { index, .. } => {
                    let mut files = Vec::new();
                    for conflict in index.conflicts()? {
                        let c = conflict?;
                        if let Some(e) = c.our.or(c.their).or(c.ancestor) {
                            files.push(String::from_utf8_lossy(&e.path).into_owned());
                        }
                    }
                    State::Conflicts {
                        from: series.base,
                        files,
                    }
                }
            }
        } else {
            State::NoSeries
        };
        rows.push((release, state));
    }
    Ok(rows)
}

/// The table `cargo xtask patches status` prints.
pub fn status(ws: &Workspace, releases: &[Release]) -> Result<String> {
    let mut out = format!(
        "{:<8} {:<16} {}\n",
        "release", "state", "series base / details"
    );
    for (release, state) in states(ws, releases)? {
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
        };
        let _ = writeln!(out, "{:<8} {:<16} {detail}", release.version, name);
    }
    Ok(out)
}
