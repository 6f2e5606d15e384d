//! The resolution matrix against built sysroots (`cargo xtask test-resolution`): one
//! [`MatrixReport`] per selected (release, target, flavour).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use loader_tests::host::{self, tools};
use loader_tests::report::{self, MatrixReport};
use loader_tests::root::Bench;
use model::{Cell, Flavour, Sysroot, Target};

use crate::cli::{Env, Selection};
use crate::sysroot::Builder;
use model::Release;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub selection: Selection,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Only scenarios whose id contains this text.
    #[arg(long)]
    pub scenario: Option<String>,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let mut reports = Vec::new();
        for (Cell { release, target }, flavour) in self.selection.iter() {
            let sysroot = obtain_sysroot(env, release, target, flavour)?;
            let (report, _) = run_matrix(sysroot, self.scenario.as_deref())?;
            if !self.json {
                outln!("{}", report.render());
            }
            reports.push(report);
        }
        if self.json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&reports).context("cannot write the JSON report")?
            );
        }
        let failed: Vec<String> = reports
            .iter()
            .filter(|r| r.has_failures())
            .map(|r| format!("{} {} {}", r.release, r.target, r.flavour))
            .collect();
        if !failed.is_empty() {
            bail!(
                "resolution matrix mismatches on glibc {}",
                failed.join(", ")
            );
        }
        Ok(())
    }
}

/// Runs the matrix (or the scenarios whose id contains `filter`) and says how long it took,
/// fixtures and roots included, sysroot build excluded.
pub(crate) fn run_matrix(
    sysroot: Sysroot,
    filter: Option<&str>,
) -> Result<(MatrixReport, Duration)> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    run_matrix_with(sysroot, filter, cpus)
}

/// [`run_matrix`] with `workers` scenarios at a time.
pub(crate) fn run_matrix_with(
    sysroot: Sysroot,
    filter: Option<&str>,
    workers: usize,
) -> Result<(MatrixReport, Duration)> {
    host::require(&[tools::BWRAP, tools::CHROOT])?;
    let started = Instant::now();
    let cache = host::cache_dir()?;
    let bench = Bench::new(sysroot, &cache).context("cannot prepare the scenario bench")?;
    let report = report::run_with(&bench, filter, workers);
    Ok((report, started.elapsed()))
}

/// A sysroot from `$LD_FALLBACK_SYSROOT[_AARCH64][_UNPATCHED]` when it names one of `release`,
/// else from `sysroot` and its cache.
pub(crate) fn obtain_sysroot(
    env: &Env,
    release: Release,
    target: Target,
    flavour: Flavour,
) -> Result<Sysroot> {
    let var = model::sysroot_env_var(target, flavour);
    if let Some(path) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
        let sysroot = Sysroot::at(&PathBuf::from(path), target, flavour)
            .with_context(|| format!("${var} does not name a usable sysroot"))?;
        if sysroot.release == release {
            return Ok(sysroot);
        }
    }
    let built = Builder::new(env)
        .ensure(release, target, flavour)
        .with_context(|| {
            format!("cannot get the glibc {release} {target} {flavour} sysroot (or set ${var} to a ready one)")
        })?;
    Ok(built.sysroot)
}
