//! `cargo xtask test-resolution`: the LD_FALLBACK_PATH resolution matrix against built
//! glibc sysroots, as a table (or JSON) with one verdict per scenario.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use loader_tests::report::{self, Outcome};
use loader_tests::root::Bench;
use loader_tests::{Sysroot, Target};

use crate::release::{parse_selection, Release};
use crate::tools::{require, Tool};

#[derive(clap::Args)]
pub struct Args {
    /// `X.Y` or `all`; default: the newest supported release.
    #[arg(long)]
    pub release: Option<String>,
    /// `x86_64` (native) or `aarch64` (under QEMU user mode).
    #[arg(long, default_value = "x86_64")]
    pub target: String,
    /// Run against glibc without the patch series: scenarios that need the patch must fail
    /// the documented way, everything else must behave as with the patch.
    #[arg(long)]
    pub unpatched: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Only scenarios whose id contains this text.
    #[arg(long)]
    pub scenario: Option<String>,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let target = crate::target::parse(&self.target)?;
        let releases: Vec<Option<Release>> = match &self.release {
            Some(text) => parse_selection(text)?.into_iter().map(Some).collect(),
            None => vec![None],
        };
        let patched = !self.unpatched;
        let mut failed = Vec::new();
        let mut documents = Vec::new();
        for release in releases {
            let sysroot = obtain_sysroot(release, target, patched)?;
            let (outcomes, _) = run_matrix(sysroot.clone(), self.scenario.as_deref())?;
            if self.json {
                documents.push(report::json(
                    &sysroot.release,
                    target.name(),
                    patched,
                    &outcomes,
                ));
            } else {
                println!(
                    "glibc {} {} ({}), {}",
                    sysroot.release,
                    target.name(),
                    if patched { "patched" } else { "unpatched" },
                    sysroot.path.display()
                );
                print!("{}", report::table(&outcomes));
                println!("{}\n", report::summary(&outcomes));
                if !patched && self.scenario.is_none() {
                    println!("{}\n", sensitivity_line(&outcomes));
                }
            }
            if outcomes.iter().any(|o| o.verdict.is_failure()) {
                failed.push(format!("{} {}", sysroot.release, target.name()));
            }
        }
        if self.json {
            println!("[{}]", documents.join(","));
        }
        if !failed.is_empty() {
            bail!(
                "resolution matrix mismatches on glibc {}",
                failed.join(", ")
            );
        }
        Ok(())
    }
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// `x86_64` (native) or `aarch64` (under QEMU user mode).
    #[arg(long, default_value = "x86_64")]
    pub target: String,
    /// Run against glibc without the patch series.
    #[arg(long)]
    pub unpatched: bool,
    /// How many timed runs of the whole matrix (after one warm-up run).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

impl BenchArgs {
    /// Prints the matrix's wall time once sysroot and fixtures are cached: a warm-up run
    /// (builds or fetches what is missing) and then `runs` timed runs.
    pub fn run(self) -> Result<()> {
        let target = crate::target::parse(&self.target)?;
        let patched = !self.unpatched;
        let sysroot = obtain_sysroot(None, target, patched)?;
        let (warmup, warmup_time) = run_matrix(sysroot.clone(), None)?;
        println!(
            "resolution matrix, glibc {} {} ({}), {} scenarios, {} CPUs",
            sysroot.release,
            target.name(),
            if patched { "patched" } else { "unpatched" },
            warmup.len(),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        println!(
            "  warm-up run (fixtures checked/compiled): {:.2} s",
            secs(warmup_time)
        );
        let mut times = Vec::new();
        let mut last = warmup;
        for i in 1..=self.runs.max(1) {
            let (outcomes, time) = run_matrix(sysroot.clone(), None)?;
            println!("  run {i}: {:.2} s", secs(time));
            times.push(time);
            last = outcomes;
        }
        times.sort();
        println!(
            "  min {:.2} s, median {:.2} s, max {:.2} s",
            secs(times[0]),
            secs(times[times.len() / 2]),
            secs(times[times.len() - 1])
        );
        last.sort_by_key(|o| std::cmp::Reverse(o.elapsed));
        let slowest: Vec<String> = last
            .iter()
            .take(5)
            .map(|o| {
                format!(
                    "{} {:.0} ms",
                    o.scenario.id,
                    o.elapsed.as_secs_f64() * 1000.0
                )
            })
            .collect();
        println!("  slowest scenarios (last run): {}", slowest.join(", "));
        let failures = last.iter().filter(|o| o.verdict.is_failure()).count();
        if failures > 0 {
            println!("  note: {failures} scenarios mismatched (see cargo xtask test-resolution)");
        }
        Ok(())
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Runs the matrix (or the scenarios matching `filter`) and says how long the runs took,
/// fixtures and roots included, sysroot build excluded.
pub fn run_matrix(sysroot: Sysroot, filter: Option<&str>) -> Result<(Vec<Outcome>, Duration)> {
    require(&[
        Tool::new("bwrap", "bubblewrap"),
        Tool::new("chroot", "coreutils"),
        Tool::new(cc(sysroot.target), cc_package(sysroot.target)),
    ])?;
    let started = Instant::now();
    let cache = crate::paths::cache_dir()?;
    let bench = Bench::new(sysroot, &cache).context("cannot prepare the scenario bench")?;
    let outcomes = report::run(&bench, filter);
    Ok((outcomes, started.elapsed()))
}

/// Row 23 of the contract: without the patch, exactly the scenarios that need it fail.
fn sensitivity_line(outcomes: &[Outcome]) -> String {
    let failing: Vec<&str> = outcomes
        .iter()
        .filter(|o| !matches!(o.verdict, report::Verdict::Skipped(_)))
        .filter(|o| o.actual != o.scenario.expected)
        .map(|o| o.scenario.id)
        .collect();
    let needing: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.scenario.needs_patch() && !matches!(o.verdict, report::Verdict::Skipped(_)))
        .map(|o| o.scenario.id)
        .collect();
    if failing == needing {
        format!(
            "row 23: the {} scenarios that differ from the patched expectation are exactly those that need the patch",
            failing.len()
        )
    } else {
        format!("row 23: MISMATCH: differing {failing:?}, needing the patch {needing:?}")
    }
}

/// A sysroot from `$LD_FALLBACK_SYSROOT[_AARCH64][_UNPATCHED]` when set (and of `release`,
/// if one is asked for), else from `build-glibc` and its cache (default: newest release).
pub fn obtain_sysroot(release: Option<Release>, target: Target, patched: bool) -> Result<Sysroot> {
    let var = loader_tests::sysroot_env_var(target, patched);
    if let Some(path) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
        let sysroot = Sysroot::at(&PathBuf::from(path), target, patched)
            .with_context(|| format!("${var} does not name a usable sysroot"))?;
        if release.is_none_or(|r| r.version == sysroot.release) {
            return Ok(sysroot);
        }
    }
    let release = release.unwrap_or_else(Release::newest);
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    crate::build::ensure_sysroot(release, target, patched, jobs).with_context(|| {
        format!(
            "cannot get the glibc {release} {} sysroot (or set ${var} to a ready one)",
            target.name()
        )
    })
}

fn cc(target: Target) -> &'static str {
    match target {
        Target::X86_64 => "gcc",
        Target::Aarch64 => "aarch64-linux-gnu-gcc",
    }
}

fn cc_package(target: Target) -> &'static str {
    match target {
        Target::X86_64 => "gcc",
        Target::Aarch64 => "gcc-aarch64-linux-gnu",
    }
}
