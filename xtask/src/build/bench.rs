//! `cargo xtask bench build`: cold, cached and incremental build times for one release.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use loader_tests::{Flavour, Target};

use super::cache::BuildCache;
use super::lock;
use super::recipe::Recipe;
use super::source::{self, BuildSource};
use super::{default_jobs, workdir, Builder, Layout};
use crate::cli::{self, Global};
use crate::store::release::Release;
use crate::util::paths;

/// The file the incremental run touches: the loader's search code, which the series edits.
const TOUCHED: &str = "elf/dl-load.c";

#[derive(clap::Args)]
pub struct BenchArgs {
    /// The release [default: the newest].
    #[arg(long, value_name = "X.Y", value_parser = cli::release())]
    pub release: Option<Release>,
    #[arg(long, value_parser = cli::target(), default_value = "x86_64")]
    pub target: Target,
    /// Time the unpatched build instead of the patched one.
    #[arg(long, value_parser = cli::flavour(), default_value = "patched")]
    pub flavour: Flavour,
    #[arg(long, value_parser = cli::at_least_one::<usize>)]
    pub jobs: Option<usize>,
    /// Cache root to build in; the cold build is timed only if it does not hold this build
    /// yet. Default: a fresh directory under the cache root, removed afterwards.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    #[arg(long, default_value_t = 5, value_parser = cli::at_least_one::<usize>)]
    pub hit_runs: usize,
    #[arg(long, default_value_t = 1, value_parser = cli::at_least_one::<usize>)]
    pub incremental_runs: usize,
    /// Also time a plain `configure && make && make install` of the same sources (~7 min).
    #[arg(long)]
    pub plain: bool,
}

impl BenchArgs {
    pub fn run(self, global: &Global) -> Result<()> {
        let release = self.release.unwrap_or_else(Release::newest);
        let (target, flavour) = (self.target, self.flavour);
        let jobs = self.jobs.unwrap_or_else(default_jobs);
        let scratch;
        let root = match &self.cache {
            Some(dir) => dir.clone(),
            None => {
                let cache = paths::cache_dir()?;
                fs::create_dir_all(&cache)
                    .with_context(|| format!("cannot create {}", cache.display()))?;
                scratch = tempfile::Builder::new()
                    .prefix("bench-")
                    .tempdir_in(&cache)
                    .context("cannot create a bench cache")?;
                scratch.path().to_path_buf()
            }
        };
        let layout = Layout::under(&root);
        let work = layout.work_dir(release, target, flavour);
        let cached = BuildCache::new(&layout.builds)
            .list()?
            .into_iter()
            .any(|e| {
                e.manifest.release == release.version
                    && e.manifest.target == target.name()
                    && e.manifest.flavour == flavour.name()
            });
        let cold_possible = !cached && !work.root().exists();
        if !cold_possible {
            diagln!(
                "{} already holds a glibc {release} {} {flavour} build: not timing a cold one \
                 (omit --cache for a fresh cache)",
                root.display(),
                target.name()
            );
        }
        let mut builder = Builder {
            layout: layout.clone(),
            store: global.store.clone(),
            patches_dir: paths::patches_dir(),
            jobs,
            rebuild: false,
        };

        let cold_time = match cold_possible {
            true => {
                let started = Instant::now();
                let cold = builder.ensure(release, target, flavour)?;
                Some(started.elapsed().saturating_sub(cold.lock_wait))
            }
            false => {
                // Bring the cache up to date so that the runs below are hits.
                builder.ensure(release, target, flavour)?;
                None
            }
        };

        let mut hits = Vec::new();
        for _ in 0..self.hit_runs.max(1) {
            let started = Instant::now();
            let outcome = builder.ensure(release, target, flavour)?;
            hits.push(started.elapsed());
            if outcome.built {
                bail!("a repeated build was not a cache hit");
            }
        }

        builder.rebuild = true;
        let mut incremental = Vec::new();
        for _ in 0..self.incremental_runs.max(1) {
            touch(&work.src().join(TOUCHED))?;
            let started = Instant::now();
            let outcome = builder.ensure(release, target, flavour)?;
            incremental.push(started.elapsed().saturating_sub(outcome.lock_wait));
        }

        let plain = match self.plain {
            true => Some(plain_build(global, &root, release, target, flavour, jobs)?),
            false => None,
        };

        outln!(
            "glibc {release} {} {flavour}, make -j{jobs} (times exclude waiting for locks)",
            target.name()
        );
        match cold_time {
            Some(time) => outln!("cold build:           {} (1 run)", minutes(time)),
            None => outln!("cold build:           not run (the cache already held the build)"),
        }
        outln!(
            "cached hit:           {:.3} s (median of {})",
            median(&mut hits).as_secs_f64(),
            hits.len()
        );
        outln!(
            "incremental, {TOUCHED} touched: {} (median of {})",
            minutes(median(&mut incremental)),
            incremental.len()
        );
        match plain {
            Some(time) => outln!(
                "plain configure && make -j{jobs} && make install: {} (1 run)",
                minutes(time)
            ),
            None => outln!("plain configure && make && make install: not run (pass --plain)"),
        }
        Ok(())
    }
}

/// The baseline: what a developer would do by hand, in a fresh directory.
fn plain_build(
    global: &Global,
    root: &Path,
    release: Release,
    target: Target,
    flavour: Flavour,
    jobs: usize,
) -> Result<Duration> {
    let dir = tempfile::Builder::new()
        .prefix("plain-")
        .tempdir_in(root)
        .context("cannot create a directory for the plain build")?;
    let (src, build, dest) = (
        dir.path().join("src"),
        dir.path().join("build"),
        dir.path().join("dest"),
    );
    let series = source::series_for(&paths::patches_dir(), release, flavour)?;
    let incoming = dir.path().join("incoming");
    fs::create_dir_all(&incoming).context("cannot create the plain source dir")?;
    BuildSource::resolve(global.store.as_deref(), release, series)?.export(&incoming)?;
    workdir::add_manual_stub(&incoming)?;
    // Like an unpacked tarball: one mtime for all files (see workdir::set_mtime).
    workdir::sync_tree(&incoming, &src)?;
    fs::create_dir_all(&build).context("cannot create the plain build dir")?;
    let log = dir.path().join("build.log");
    let toolchain = Recipe::for_target(target);
    let label = format!("plain glibc {release} {}", target.name());
    let machine_lock = lock::acquire(
        Path::new(lock::MACHINE_LOCK),
        "the machine-wide glibc build lock",
    )?;
    let started = Instant::now();
    toolchain.configure(&src, &build, &log, &label)?;
    toolchain.make(&build, jobs, &log, &label)?;
    toolchain.install(&build, &dest, jobs, &log, &label)?;
    let time = started.elapsed();
    drop(machine_lock);
    Ok(time)
}

fn touch(path: &Path) -> Result<()> {
    fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(SystemTime::now()))
        .with_context(|| format!("cannot touch {}", path.display()))
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn minutes(time: Duration) -> String {
    let secs = time.as_secs();
    format!("{}:{:02} min", secs / 60, secs % 60)
}
