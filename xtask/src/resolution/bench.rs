//! `cargo xtask bench resolution`: the matrix's wall time once sysroot and fixtures are cached.

use std::time::Duration;

use anyhow::Result;

use super::{obtain_sysroot, run_matrix};
use crate::cli::{Env, OneFlavour, OneTarget};
use model::Release;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: OneTarget,
    #[command(flatten)]
    pub flavour: OneFlavour,
    /// How many timed runs of the whole matrix (after one warm-up run).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

impl Args {
    /// A warm-up run (builds or fetches what is missing), then `runs` timed runs.
    pub fn run(self, env: &Env) -> Result<()> {
        let (target, flavour) = (self.target.target, self.flavour.flavour);
        let release = Release::newest();
        let sysroot = obtain_sysroot(env, release, target, flavour)?;
        let (warmup, warmup_time) = run_matrix(sysroot.clone(), None)?;
        outln!(
            "resolution matrix, glibc {release} {target} ({flavour}), {} scenarios, {} CPUs",
            warmup.scenarios.len(),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        outln!(
            "  warm-up run (fixtures checked/compiled): {:.2} s",
            secs(warmup_time)
        );
        let mut times = Vec::new();
        let mut last = warmup;
        for i in 1..=self.runs.max(1) {
            let (report, time) = run_matrix(sysroot.clone(), None)?;
            outln!("  run {i}: {:.2} s", secs(time));
            times.push(time);
            last = report;
        }
        times.sort();
        outln!(
            "  min {:.2} s, median {:.2} s, max {:.2} s",
            secs(times[0]),
            secs(times[times.len() / 2]),
            secs(times[times.len() - 1])
        );
        let mut outcomes = last.scenarios.clone();
        outcomes.sort_by_key(|o| std::cmp::Reverse(o.elapsed));
        let slowest: Vec<String> = outcomes
            .iter()
            .take(5)
            .map(|o| format!("{} {:.0} ms", o.id, o.elapsed.as_secs_f64() * 1000.0))
            .collect();
        outln!("  slowest scenarios (last run): {}", slowest.join(", "));
        if last.summary.mismatch > 0 {
            outln!(
                "  note: {} scenarios mismatched (see cargo xtask test-resolution)",
                last.summary.mismatch
            );
        }
        Ok(())
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
