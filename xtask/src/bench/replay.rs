//! `cargo xtask bench replay`: the Jetson replay (docs/jetson.md's tables) under its three
//! loaders, run both ways in one bench, alternating: every run's root built and run on its
//! own, and each world (runs whose roots and commands are written down alike) built and run
//! once. The two reports must be the same, run for run: the bench fails where they are not.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use loader_tests::replay::{self, ReplayReport};

use crate::cli::{self, Env, OneRelease};
use crate::jetson_replay::Prepared;
use model::Target;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub release: OneRelease,
    /// Target: `aarch64` (under QEMU user mode, as docs/jetson.md's replay) or `x86_64`.
    #[arg(long, value_parser = cli::target(), default_value = "aarch64")]
    pub target: Target,
    /// How many timed runs of each way (sysroots and fixtures are prepared first, untimed).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let (release, target) = (self.release.release, self.target);
        let prepared = Prepared::new(env, release, target)?;
        let benches = prepared.benches();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        outln!("the Jetson replay, glibc {release} {target}, three loaders, {cpus} CPUs:");
        type Way = fn(&replay::Benches<'_>) -> ReplayReport;
        let ways: [(&str, Way); 2] = [
            ("every run on its own", replay::run_every_one),
            ("each world run once", replay::run),
        ];
        let mut times: [Vec<Duration>; 2] = Default::default();
        let mut first: Option<serde_json::Value> = None;
        for run in 1..=self.runs.max(1) {
            for (i, (name, way)) in ways.iter().enumerate() {
                let started = Instant::now();
                let report = way(&benches);
                let time = started.elapsed();
                // Removed untimed: the next run starts from the same empty scratch.
                for bench in benches.benches.values().flatten() {
                    bench
                        .0
                        .remove_roots(cpus)
                        .context("cannot remove the roots")?;
                }
                outln!(
                    "  run {run}, {name}: {:.1} s, {} runs",
                    time.as_secs_f64(),
                    report.runs().count()
                );
                if report.has_unrun() {
                    bail!(
                        "some runs could not be made ({name}):\n{}",
                        report.render_text(false)
                    );
                }
                let seen = serde_json::to_value(&report).context("cannot write the report")?;
                match &first {
                    None => first = Some(seen),
                    Some(first) if *first != seen => bail!(
                        "the replay's report {name} differs from the first run's: {}",
                        first_difference(first, &seen)
                    ),
                    Some(_) => {}
                }
                times[i].push(time);
            }
        }
        let plain = super::median_secs(&mut times[0]);
        let shared = super::median_secs(&mut times[1]);
        outln!(
            "  median: every run on its own {plain:.1} s, each world run once {shared:.1} s ({:.1}x); the reports are the same",
            plain / shared.max(0.001)
        );
        Ok(())
    }
}

/// Where two JSON values first differ, as a path and the two values there.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> String {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if v == w => {}
                    Some(w) => return format!(".{k}{}", first_difference(v, w)),
                    None => return format!(".{k}: only in the first"),
                }
            }
            "keys only in the second".to_string()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .position(|(v, w)| v != w)
            .map(|i| format!("[{i}]{}", first_difference(&x[i], &y[i])))
            .unwrap_or_default(),
        _ => format!(": {a} against {b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::first_difference;
    use serde_json::json;

    #[test]
    fn a_difference_is_named_by_its_path() {
        let a = json!({"rows": [{"outcome": "runs"}, {"outcome": "fails"}]});
        let b = json!({"rows": [{"outcome": "runs"}, {"outcome": "runs"}]});
        assert_eq!(
            first_difference(&a, &b),
            ".rows[1].outcome: \"fails\" against \"runs\""
        );
    }
}
