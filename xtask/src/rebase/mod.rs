//! Moving a patch series onto another release with a 3-way merge (`cargo xtask
//! rebase-glibc`): start, stop at a conflict, continue or abort, and check that every series
//! still applies to its own release.

pub mod bench;
pub mod check;
pub mod command;
pub mod engine;
pub mod intake;
pub mod range_diff;
pub mod state;

use std::fmt::Write;

use anyhow::{bail, Context, Result};
use git2::Oid;

pub use check::{check, check_release, CheckReport};

use crate::series::{Series, Workspace};
use crate::store::release::Release;
use crate::util::fault;
use engine::{applied, commit_like, Picked, Step};
use state::{ConflictFile, RebaseState};

/// How a rebase ended.
pub enum Outcome {
    /// `patches/<onto>/` was written; the summary says what happened to each patch.
    Written(String),
    /// Stopped at a conflict; the report names the files and how to go on.
    Conflict(String),
}

/// Moves the series of `from` (default: the newest) onto `onto`.
pub fn start(ws: &Workspace, from: Option<Release>, onto: Release) -> Result<Outcome> {
    if state::state_dir(ws, onto).join("state").exists() {
        bail!("a rebase onto glibc {onto} is already in progress: finish it with --continue or drop it with --abort");
    }
    let from = match from {
        Some(release) => ws.load_series(release)?,
        None => ws.newest_series()?,
    };
    let (_, commits) = ws.commit_series(&from)?;
    let head = ws.store.ensure_release(onto)?;
    let mut steps = Vec::new();
    let picked = engine::pick(ws.store.repo(), &commits, 0, head, &mut steps)?;
    fault::point("rebase:picked");
    settle(ws, &from, onto, steps, picked, Vec::new())
}

/// Takes the resolved work tree of the stopped rebase onto `onto` and goes on. `deletions`
/// are the paths the user said the resolution deletes (`--delete`); see [`intake`] for what
/// else is taken and refused.
pub fn continue_rebase(ws: &Workspace, onto: Release, deletions: &[String]) -> Result<Outcome> {
    let (state, from) = RebaseState::load(ws, onto)?;
    let (_, commits) = ws.commit_series(&from)?;
    let repo = ws.store.repo();
    let original = repo
        .find_commit(commits[state.at])
        .context("the conflicting patch's commit is missing from the store")?;
    let tree_dir = state::tree_dir(ws, onto);
    let taken = intake::take(
        repo,
        &intake::Stopped {
            tree_dir: &tree_dir,
            recorded: state.tree,
            conflicts: &state.conflicts,
            patch: &original,
            patch_name: &from.patches[state.at].name,
            store_dir: ws.store.dir(),
        },
        deletions,
    )?;
    fault::point("continue:taken");
    let mut steps = state.steps;
    let head = match commit_like(repo, &original, state.head, taken.tree)? {
        Some(id) => {
            steps.push(Step::Applied(id));
            id
        }
        None => {
            steps.push(Step::Dropped);
            state.head
        }
    };
    let picked = engine::pick(repo, &commits, state.at + 1, head, &mut steps)?;
    fault::point("rebase:picked");
    settle(ws, &from, onto, steps, picked, taken.notes)
}

/// Drops the state of the stopped rebase onto `onto`; an error if there is none.
pub fn abort(ws: &Workspace, onto: Release) -> Result<()> {
    state::remove(ws, onto)
}

/// The patches of `from` that went through so far, named, for the scope guard.
fn named_steps(from: &Series, steps: &[Step]) -> Vec<(String, Oid)> {
    from.patches
        .iter()
        .zip(steps)
        .filter_map(|(patch, step)| match step {
            Step::Applied(id) => Some((patch.name.clone(), *id)),
            Step::Dropped => None,
        })
        .collect()
}

/// Writes the series when every patch went through, else saves the state at the conflict.
/// Either way, the patches so far must stay inside the declared scope.
fn settle(
    ws: &Workspace,
    from: &Series,
    onto: Release,
    steps: Vec<Step>,
    picked: Picked,
    notes: Vec<String>,
) -> Result<Outcome> {
    let scope = ws.scope()?;
    scope
        .check(ws.store.repo(), &named_steps(from, &steps))
        .with_context(|| {
            format!(
                "refusing to write a series for glibc {onto} that leaves the declared scope; {} is unchanged",
                ws.patches_dir.display()
            )
        })?;
    let mut text = String::new();
    for note in notes {
        let _ = writeln!(text, "note: {note}");
    }
    match picked {
        Picked::Done { .. } => {
            let commits = applied(&steps);
            if commits.is_empty() {
                bail!("every patch of the series is already in glibc {onto}: nothing to write");
            }
            let new = Series::from_commits(ws.store.repo(), onto, &commits)?;
            let dir = ws.series_dir(onto);
            new.write(&dir)?;
            fault::point("rebase:written");
            if state::state_dir(ws, onto).join("state").exists() {
                state::remove(ws, onto)?;
            }
            text.push_str(&range_diff::summarize(from, onto, &new, &steps));
            let _ = writeln!(text, "wrote {}", dir.display());
            Ok(Outcome::Written(text))
        }
        Picked::Conflict { at, head, index } => {
            let patch = &from.patches[at];
            let mut state = RebaseState {
                onto,
                head,
                at,
                steps,
                conflicts: Vec::new(),
                tree: Oid::zero(),
            };
            let files = state.save(
                ws,
                from,
                &index,
                (&format!("glibc {onto} (+ patches so far)"), &patch.name),
            )?;
            text.push_str(&conflict_report(ws, from, onto, &state, &files));
            Ok(Outcome::Conflict(text))
        }
    }
}

fn conflict_report(
    ws: &Workspace,
    from: &Series,
    onto: Release,
    state: &RebaseState,
    files: &[ConflictFile],
) -> String {
    let patch = &from.patches[state.at];
    let mut out = format!(
        "patch {}/{} {} does not merge into glibc {onto}:\n",
        state.at + 1,
        from.patches.len(),
        patch.name
    );
    for file in files {
        let _ = writeln!(out, "  conflict in {}:", file.path);
        for (line, hunk) in &file.hunks {
            if *line > 0 {
                let _ = writeln!(out, "    at line {line}:");
            }
            write_hunk(&mut out, hunk);
        }
    }
    let tree = state::tree_dir(ws, onto);
    let _ = write!(
        out,
        "The work tree {} holds glibc {onto} with the patches so far and conflict markers in the files above.\n\
         Resolve them there (remove every marker), then run:\n    cargo xtask rebase-glibc --continue\n\
         or give up with:\n    cargo xtask rebase-glibc --abort\n{} is untouched.\n",
        tree.display(),
        ws.patches_dir.display()
    );
    out
}

/// Lines of one side of a conflict hunk shown before the rest is counted, not printed: a
/// release's NEWS section is a side of its own, and the work tree has it all anyway.
const SIDE_LINES: usize = 8;

fn write_hunk(out: &mut String, hunk: &str) {
    let mut shown = 0;
    let mut elided = 0;
    let flush = |out: &mut String, elided: &mut usize| {
        if *elided > 0 {
            let _ = writeln!(out, "      ... ({elided} more lines)");
            *elided = 0;
        }
    };
    for text in hunk.lines() {
        let marker = ["<<<<<<<", "|||||||", "=======", ">>>>>>>"]
            .iter()
            .any(|m| text.starts_with(m));
        if marker {
            flush(out, &mut elided);
            shown = 0;
        } else if shown == SIDE_LINES {
            elided += 1;
            continue;
        } else {
            shown += 1;
        }
        let _ = writeln!(out, "      {text}");
    }
    flush(out, &mut elided);
}

/// The stopped rebase `--continue`/`--abort` mean: the one named, or the only one.
pub fn stopped_rebase(ws: &Workspace, onto: Option<Release>) -> Result<Release> {
    if let Some(onto) = onto {
        return Ok(onto);
    }
    match state::in_progress(ws).as_slice() {
        [one] => Ok(*one),
        [] => bail!(
            "no rebase is in progress (state lives in {}): there is nothing to continue or abort",
            ws.rebase_dir.display()
        ),
        many => bail!(
            "rebases onto {} are in progress: say which with --release X.Y",
            many.iter()
                .map(|r| r.version)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_conflict_sides_are_counted_not_printed() {
        let ours: String = (0..20).map(|i| format!("ours {i}\n")).collect();
        let hunk = format!("<<<<<<< a\n{ours}=======\ntheirs\n>>>>>>> b\n");
        let mut out = String::new();
        write_hunk(&mut out, &hunk);
        assert!(
            out.contains("ours 7\n") && !out.contains("ours 8\n"),
            "{out}"
        );
        assert!(
            out.contains("... (12 more lines)\n      =======\n      theirs\n"),
            "{out}"
        );
    }
}
