//! `cargo xtask bench rebase`: how long moving the series onto every other release takes.

use std::time::Instant;

use anyhow::{Context, Result};
use git2::{Oid, Repository, Signature, Time};

use crate::cli::Env;
use crate::merge::{pick, PatchFate, Picked};
use crate::series::Series;
use crate::series::Workspace;
use model::{supported, Release};

/// A one-patch series on `release` touching `elf/dl-load.c` next to the default-path search,
/// where a real LD_FALLBACK_PATH patch hooks in: used while `patches/` has no series.
pub fn synthetic_series(repo: &Repository, release: Release, base: Oid) -> Result<Series> {
    let parent = repo.find_commit(base)?;
    let tree = parent.tree()?;
    let path = std::path::Path::new("elf/dl-load.c");
    let blob = repo.find_blob(tree.get_path(path)?.id())?;
    let text = std::str::from_utf8(blob.content()).context("dl-load.c is not UTF-8")?;
    let anchor = "/* Finally, try the default path.  */\n";
    let at = text
        .find(anchor)
        .context("dl-load.c has no default-path search")?
        + anchor.len();
    let patched = format!(
        "{}      /* LD_FALLBACK_PATH is searched after this.  */\n{}",
        &text[..at],
        &text[at..]
    );
    let mut builder = git2::build::TreeUpdateBuilder::new();
    builder.upsert(path, repo.blob(patched.as_bytes())?, git2::FileMode::Blob);
    let new_tree = repo.find_tree(builder.create_updated(repo, &tree)?)?;
    let sig = Signature::new(
        "ld-fallback developers",
        "ld-fallback@example.invalid",
        &Time::new(1_764_460_800, 0),
    )?;
    let commit = repo.commit(
        None,
        &sig,
        &sig,
        "elf: Mark where LD_FALLBACK_PATH is searched\n",
        &new_tree,
        &[&parent],
    )?;
    Series::from_commits(repo, release, &[commit])
}

pub(crate) fn run(env: &Env) -> Result<()> {
    let ws = Workspace::open(env)?;
    let newest = Release::newest();
    for release in supported() {
        ws.store.ensure_release(*release)?;
    }
    let series = match ws.newest_series() {
        Ok(series) => series,
        Err(_) => {
            diagln!("no series in patches/: timing a synthetic one-patch series on glibc {newest}");
            synthetic_series(ws.store.repo(), newest, ws.store.ensure_release(newest)?)?
        }
    };
    let started = Instant::now();
    let (_, commits) = ws.commit_series(&series)?;
    let mut rows = Vec::new();
    for release in supported().iter().filter(|&&r| r != series.base) {
        let one = Instant::now();
        let head = ws.store.ensure_release(*release)?;
        let mut steps = Vec::new();
        let outcome = match pick(ws.store.repo(), &commits, 0, head, &mut steps)? {
            Picked::Done { .. } => format!(
                "clean, {} dropped",
                steps.iter().filter(|s| **s == PatchFate::Dropped).count()
            ),
            Picked::Conflict { at, .. } => format!("conflict at patch {}", at + 1),
        };
        rows.push((release.version(), outcome, one.elapsed()));
    }
    let rebase = started.elapsed();

    outln!(
        "rebase of the {}-patch series from glibc {} onto every other release: {:.2} s (target < 10 s)",
        series.patches.len(),
        series.base,
        rebase.as_secs_f64()
    );
    for (version, outcome, took) in rows {
        outln!("  onto {version}: {outcome} ({:.2} s)", took.as_secs_f64());
    }
    Ok(())
}
