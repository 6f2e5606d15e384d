//! `cargo xtask bench differential`: the search model's differential test
//! (`cargo test -p loader-tests --test explain`) under the four loaders of the newest release,
//! run both ways in one bench, alternating: every run made, run and traced on its own, one
//! at a time per loader (`LD_FALLBACK_EXPLAIN_EVERY_RUN=1`), and each distinct world traced
//! once, the worlds side by side. Both ways run the same trials; the test prints, per loader,
//! its runs, distinct worlds and traced runs, repeated here under each time.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cli::Env;
use crate::resolution::obtain_sysroot;
use crate::util::paths;
use model::{sysroot_env_var, Flavour, Release, Target};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// How many timed runs of each way (the test is built first, untimed).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
}

/// The way the comparison runs, and the variable that selects it.
const WAYS: [(&str, &str); 2] = [
    ("every run on its own", "1"),
    ("each world traced once", "0"),
];

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let release = Release::newest();
        let mut vars = Vec::new();
        for target in Target::ALL {
            for flavour in [Flavour::Patched, Flavour::Unpatched] {
                let sysroot = obtain_sysroot(env, release, target, flavour)?;
                vars.push((
                    sysroot_env_var(target, flavour),
                    sysroot.path.display().to_string(),
                ));
            }
        }
        let test = |every_run: &str, no_run: bool| {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut command = Command::new(cargo);
            command
                .current_dir(paths::project_root())
                .args(["test", "--package", "loader-tests", "--test", "explain"])
                .env("LD_FALLBACK_EXPLAIN_EVERY_RUN", every_run)
                .envs(vars.iter().map(|(n, v)| (n, v)));
            if no_run {
                command.arg("--no-run");
            }
            command
        };
        let built = test("0", true)
            .output()
            .context("cannot run cargo test --no-run")?;
        if !built.status.success() {
            bail!(
                "the differential test does not build:\n{}",
                String::from_utf8_lossy(&built.stderr)
            );
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        outln!(
            "the search model's differential test (`cargo test -p loader-tests --test explain`), glibc {release}, four loaders, {cpus} CPUs:"
        );
        let mut times: [Vec<Duration>; 2] = Default::default();
        for run in 1..=self.runs.max(1) {
            for (i, (name, every_run)) in WAYS.iter().enumerate() {
                let started = Instant::now();
                let out = test(every_run, false)
                    .output()
                    .context("cannot run cargo test")?;
                let time = started.elapsed();
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                let result = stdout
                    .lines()
                    .find(|l| l.starts_with("test result:"))
                    .unwrap_or("no test result");
                outln!("  run {run}, {name}: {:.1} s, {result}", time.as_secs_f64());
                for line in stderr.lines().filter(|l| l.contains(" traced runs; ")) {
                    outln!("    {line}");
                }
                if !out.status.success() {
                    bail!(
                        "the differential test failed ({name}): its output ends\n{}",
                        tail(&stdout, 40)
                    );
                }
                times[i].push(time);
            }
        }
        let plain = super::median_secs(&mut times[0]);
        let keyed = super::median_secs(&mut times[1]);
        outln!(
            "  median: every run on its own {plain:.1} s, each world traced once {keyed:.1} s ({:.1}x)",
            plain / keyed.max(0.001)
        );
        outln!(
            "  load average afterwards: {}",
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
        Ok(())
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
