//! `cargo xtask bench store`: an import of the newest release into a fresh store, next to what
//! git's command line takes for the same tarball (`tar -x && git add -A && git commit`),
//! alternating the two so that both see the same load.
//!
//! The fresh stores and the git CLI's work trees go in a scratch directory beside the store
//! (`--store` or `$LD_FALLBACK_STORE`, else the cache), removed afterwards; the store itself is
//! never opened or written.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use xshell::cmd;

use crate::cli::Env;
use crate::store::import::{debian, Source};
use crate::store::SourceStore;
use crate::util::{paths, shell};
use model::Release;

const RUNS: usize = 3;

pub(crate) fn run(env: &Env) -> Result<()> {
    let newest = Release::newest();
    let tarball = debian::fetch_release_orig(newest, &paths::downloads_dir()?)?;
    let store = env.store.clone();
    let beside = store.parent().unwrap_or(std::path::Path::new("."));
    let mut ours = Vec::new();
    let mut git = Vec::new();
    for _ in 0..RUNS {
        let scratch = crate::util::staging::tempdir_in(beside, "bench")?;
        let fresh = SourceStore::open(&scratch.path().join("glibc.git"))?;
        let started = Instant::now();
        fresh.import(newest, &Source::Tarball(tarball.clone()))?;
        ours.push(started.elapsed());

        let dir = scratch.path().join("git-cli");
        std::fs::create_dir_all(&dir).context("cannot create the git CLI directory")?;
        // Without gc.auto=0, git commit starts `git gc --auto` in the background (20,000 loose
        // objects): untimed, it would pack on the cores the next run of ours is timed on, and
        // write into the directory being removed.
        let script = "tar -xf \"$1\" && cd glibc-* && git init -q && git add -A && \
                      git -c gc.auto=0 -c maintenance.auto=false -c user.name=bench \
                      -c user.email=bench@example.invalid commit -qm import";
        let sh = shell::in_dir(&dir)?;
        let started = Instant::now();
        cmd!(sh, "sh -c {script} sh {tarball}")
            .quiet()
            .run()
            .context("tar -x && git add -A && git commit failed")?;
        git.push(started.elapsed());
    }
    outln!(
        "import of glibc {newest} from {} into a fresh store (median of {RUNS}, alternating):",
        tarball.display()
    );
    outln!(
        "  cargo xtask store import:                  {}",
        summary(&mut ours)
    );
    outln!(
        "  tar -x && git add -A && git commit:        {}",
        summary(&mut git)
    );
    outln!(
        "  load average afterwards: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    Ok(())
}

fn summary(times: &mut [Duration]) -> String {
    times.sort();
    let all: Vec<String> = times
        .iter()
        .map(|t| format!("{:.1}", t.as_secs_f64()))
        .collect();
    format!(
        "{:.1} s (runs: {} s)",
        times[times.len() / 2].as_secs_f64(),
        all.join(", ")
    )
}
