//! `cargo xtask bench resolution`: the matrix's wall time once sysroot and fixtures are cached.

use std::time::Duration;

use anyhow::Result;

use crate::cli::{Env, OneFlavour, OneTarget};
use crate::resolution::{obtain_sysroot, run_matrix, run_matrix_with};
use model::Release;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub target: OneTarget,
    #[command(flatten)]
    pub flavour: OneFlavour,
    /// How many timed runs of the whole matrix (after one warm-up run).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

impl Args {
    /// A warm-up run (builds or fetches what is missing), then `runs` timed runs of each way:
    /// one scenario at a time (the plain way, and how the matrix ran before) and side by
    /// side, one per CPU, alternating so that both see the same machine.
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let (target, flavour) = (self.target.target, self.flavour.flavour);
        let release = Release::newest();
        let sysroot = obtain_sysroot(env, release, target, flavour)?;
        let (warmup, warmup_time) = run_matrix(sysroot.clone(), None)?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        outln!(
            "resolution matrix, glibc {release} {target} ({flavour}), {} scenarios, {cpus} CPUs",
            warmup.scenarios.len(),
        );
        outln!(
            "  warm-up run (fixtures checked/compiled): {:.2} s",
            secs(warmup_time)
        );
        let ways = [("one at a time", 1), ("side by side", cpus)];
        let mut times: [Vec<Duration>; 2] = Default::default();
        let mut last = warmup;
        for run in 1..=self.runs.max(1) {
            for (i, (name, workers)) in ways.iter().enumerate() {
                let (report, time) = run_matrix_with(sysroot.clone(), None, *workers)?;
                outln!("  run {run}, {name}: {:.2} s", secs(time));
                times[i].push(time);
                last = report;
            }
        }
        let scenarios = last.scenarios.len().max(1) as f64;
        for ((name, _), times) in ways.iter().zip(times.iter_mut()) {
            times.sort();
            let median = times[times.len() / 2];
            outln!(
                "  {name:<14} min {:.2} s, median {:.2} s ({:.1} ms a scenario), max {:.2} s",
                secs(times[0]),
                secs(median),
                secs(median) * 1000.0 / scenarios,
                secs(times[times.len() - 1])
            );
        }
        let mut outcomes = last.scenarios.clone();
        outcomes.sort_by_key(|o| std::cmp::Reverse(o.elapsed));
        let slowest: Vec<String> = outcomes
            .iter()
            .take(5)
            .map(|o| format!("{} {:.0} ms", o.id, o.elapsed.as_secs_f64() * 1000.0))
            .collect();
        outln!("  slowest scenarios (last run): {}", slowest.join(", "));
        outln!(
            "  load average afterwards: {}",
            std::fs::read_to_string("/proc/loadavg")
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        );
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
