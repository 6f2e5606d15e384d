//! `cargo xtask ci`: everything CI checks, in the order a failure is cheapest to find.
//!
//! Each step runs this same binary (or cargo) as a child process, so a step behaves exactly
//! as the command it prints, and a developer can rerun the one that failed.

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use loader_tests::Target;

#[derive(clap::Args)]
pub struct Args {
    /// Skip the aarch64 (QEMU) builds and matrix.
    #[arg(long)]
    pub no_aarch64: bool,
}

struct Step {
    /// What a developer types to rerun it.
    shown: String,
    command: Command,
    /// Hand the sysroots built by the earlier steps to this one (the test suite), so that it
    /// runs the aarch64 tests too instead of skipping them.
    wants_sysroots: bool,
    /// Later steps depend on this one (a build): after it fails they are not run, since each
    /// would start the same failing glibc build again.
    gates_the_rest: bool,
}

impl Step {
    fn xtask(args: &[&str]) -> Result<Step> {
        let exe = std::env::current_exe().context("cannot find the xtask binary")?;
        let mut command = Command::new(exe);
        command.args(args);
        Ok(Step {
            shown: format!("cargo xtask {}", args.join(" ")),
            command,
            wants_sysroots: false,
            gates_the_rest: args[0] == "build-glibc",
        })
    }

    fn cargo(args: &[&str]) -> Step {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command.args(args);
        Step {
            shown: format!("cargo {}", args.join(" ")),
            command,
            wants_sysroots: false,
            gates_the_rest: false,
        }
    }
}

impl Args {
    pub fn run(self) -> Result<()> {
        let mut steps = vec![Step::xtask(&["rebase-glibc", "--check"])?];
        let targets: &[&str] = if self.no_aarch64 {
            &["x86_64"]
        } else {
            &["x86_64", "aarch64"]
        };
        for target in targets {
            steps.push(Step::xtask(&["build-glibc", "--target", target])?);
            steps.push(Step::xtask(&[
                "build-glibc",
                "--target",
                target,
                "--unpatched",
            ])?);
        }
        let mut tests = Step::cargo(&["test", "--workspace"]);
        tests.wants_sysroots = true;
        steps.push(tests);
        for target in targets {
            steps.push(Step::xtask(&["test-resolution", "--target", target])?);
            steps.push(Step::xtask(&[
                "test-resolution",
                "--target",
                target,
                "--unpatched",
            ])?);
        }

        let mut failed = Vec::new();
        let total = steps.len();
        let mut ran = 0;
        for (i, mut step) in steps.into_iter().enumerate() {
            ran += 1;
            eprintln!("\n==== ci step {}/{total}: {}", i + 1, step.shown);
            if step.wants_sysroots {
                for (var, path) in built_sysroots(targets) {
                    eprintln!("{var}={}", path);
                    step.command.env(var, path);
                }
            }
            let started = Instant::now();
            let status = step
                .command
                .status()
                .with_context(|| format!("cannot run {}", step.shown))?;
            let secs = started.elapsed().as_secs_f64();
            let verdict = if status.success() { "ok" } else { "FAILED" };
            eprintln!("==== {verdict} in {secs:.1} s: {}", step.shown);
            if !status.success() {
                failed.push(step.shown);
                if step.gates_the_rest {
                    eprintln!("==== not running the remaining steps: they need this build");
                    break;
                }
            }
        }
        let not_run = total - ran;
        println!(
            "ci: {} passed, {} failed",
            ran - failed.len(),
            failed.len() + not_run
        );
        if !failed.is_empty() {
            bail!(
                "failed steps (rerun them locally):\n  {}",
                failed.join("\n  ")
            );
        }
        Ok(())
    }
}

/// `$LD_FALLBACK_SYSROOT*` for every sysroot of `targets` that is already built (a cache hit
/// of `build-glibc --print-sysroot`; a sysroot whose build failed is left out).
fn built_sysroots(targets: &[&str]) -> Vec<(String, String)> {
    let Ok(exe) = std::env::current_exe() else {
        return Vec::new();
    };
    let mut vars = Vec::new();
    for target in targets {
        let Some(parsed) = Target::parse(target) else {
            continue;
        };
        for patched in [true, false] {
            let mut cmd = Command::new(&exe);
            cmd.args(["build-glibc", "--target", target, "--print-sysroot"]);
            if !patched {
                cmd.arg("--unpatched");
            }
            let Ok(out) = cmd.output() else { continue };
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !path.is_empty() {
                vars.push((loader_tests::sysroot_env_var(parsed, patched), path));
            }
        }
    }
    vars
}
