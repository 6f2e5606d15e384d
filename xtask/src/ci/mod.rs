//! `cargo xtask ci`: everything CI checks, in the order a failure is cheapest to find.
//!
//! Each step runs this same binary (or cargo) as a child process, so a step behaves exactly
//! as the command it prints, and a developer can rerun the one that failed.

pub mod workflow;

use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use model::{sysroot_env_var, Flavour, Target};

use crate::cli::Env;
use crate::sysroot::Builder;
use crate::util::output;
use model::Release;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Skip the aarch64 (QEMU) builds and matrix.
    #[arg(long)]
    pub no_aarch64: bool,
    /// Write .github/workflows/verify.yml (one CI-engine job per cell) instead of running CI.
    #[arg(long)]
    pub workflow: bool,
    /// With --workflow: fail when the committed workflow is stale instead of writing it.
    #[arg(long, requires = "workflow")]
    pub check: bool,
}

struct CiStep {
    /// What a developer types to rerun it.
    shown: String,
    command: Command,
    /// Hand the sysroots built by the earlier steps to this one (the test suite), so that it
    /// runs the aarch64 tests too; under CI it would fail without them.
    wants_sysroots: bool,
    /// Later steps depend on this one (a build): after it fails they are not run, since each
    /// would start the same failing glibc build again.
    gates_the_rest: bool,
}

impl CiStep {
    /// A check or a run of this binary: its failure is counted and the rest still run.
    fn xtask(args: &[&str]) -> Result<CiStep> {
        let exe = std::env::current_exe().context("cannot find the xtask binary")?;
        let mut command = Command::new(exe);
        command.args(args);
        Ok(CiStep {
            shown: format!("cargo xtask {}", args.join(" ")),
            command,
            wants_sysroots: false,
            gates_the_rest: false,
        })
    }

    /// `sysroot` of the newest release's `flavour` (`None`: both flavours) on `target`:
    /// the steps after it need the build, so its failure ends the run.
    fn build(target: Target, flavour: Option<Flavour>) -> Result<CiStep> {
        let flavour = flavour.map_or("both", Flavour::name);
        let mut step =
            CiStep::xtask(&["sysroot", "--target", target.name(), "--flavour", flavour])?;
        step.gates_the_rest = true;
        Ok(step)
    }

    fn cargo(args: &[&str]) -> CiStep {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command.args(args);
        CiStep {
            shown: format!("cargo {}", args.join(" ")),
            command,
            wants_sysroots: false,
            gates_the_rest: false,
        }
    }
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        if self.workflow {
            return workflow::write_or_check(&crate::util::paths::project_root(), self.check);
        }
        let targets: &[Target] = if self.no_aarch64 {
            &[Target::X86_64]
        } else {
            &Target::ALL
        };
        // The series on nixpkgs' own glibc patches (docs/nix.md) needs nixpkgs checked out,
        // which only a machine that reaches nixpkgs' repository has (the workflow's nix-stack
        // job); the project commits none of nixpkgs' files. Run where the checkouts are named,
        // and say so where they are not: the check is then not part of this run, never a pass.
        let nix_stack = std::env::var_os("LD_FALLBACK_NIXPKGS").is_some_and(|v| !v.is_empty());
        if !nix_stack {
            outln!(
                "ci: nix-stack is not part of this run: it needs nixpkgs checkouts \
                 ($LD_FALLBACK_NIXPKGS), which the workflow's nix-stack job makes"
            );
        }
        let steps = plan(targets, nix_stack)?;
        let ran = run_steps(
            steps,
            |step| {
                // The store reaches the child processes the way they read it when not given.
                step.command.env("LD_FALLBACK_STORE", &env.store);
                if step.wants_sysroots {
                    for (var, path) in built_sysroots(targets, env) {
                        diagln!("{var}={path}");
                        step.command.env(var, path);
                    }
                }
            },
            output::reader_left,
        )?;
        let Ran::Ended { total, failed } = ran else {
            // `main` ends the run with the status of a writer whose reader left.
            return Ok(());
        };
        let not_run = total.steps - total.ran;
        outln!(
            "ci: {} passed, {} failed, {not_run} not run",
            total.ran - failed.len(),
            failed.len()
        );
        if !failed.is_empty() || not_run > 0 {
            bail!(
                "failed steps (rerun them locally):\n  {}",
                failed.join("\n  ")
            );
        }
        Ok(())
    }
}

/// The CI budget of `fuzz-model`: 80 to 150 ms a trial on the loaded 2-core x86_64 machine
/// (docs/measurements.md).
const FUZZ_TRIALS: &str = "1000";
const FUZZ_SEED: &str = "20261204";

/// Every step of a CI run on `targets`, in order; `nix_stack`: with the nix-stack check.
fn plan(targets: &[Target], nix_stack: bool) -> Result<Vec<CiStep>> {
    let mut steps = vec![
        CiStep::cargo(&["test", "--package", "xtask", "--test", "it", "--", "tidy::"]),
        // Every generated file and block: the workflow, the support page, the contract's
        // scenario list made and compared; those a run writes checked for their markers.
        CiStep::xtask(&["regenerate", "--check"])?,
        CiStep::xtask(&["verify", "check-support"])?,
        // The check reads the store only; the builds after it need the releases anyway.
        CiStep::xtask(&["rebase-glibc", "--check", "--import-missing"])?,
    ];
    if nix_stack {
        steps.push(CiStep::xtask(&[
            "nix-stack",
            "--release",
            "all",
            "--target",
            "all",
        ])?);
    }
    for target in targets {
        steps.push(CiStep::build(*target, None)?);
    }
    // The second flavour came from the first one's tree with the series' headers kept:
    // a sample of the objects that kept them, compiled again, must be the same programs.
    steps.push(CiStep::xtask(&[
        "sysroot",
        "--target",
        "x86_64",
        "--check-kept-headers",
    ])?);
    // The loader model against the x86_64 loader on generated worlds: a fixed seed and a
    // budget of about two minutes; the long campaign is a documented command of its own
    // (docs/maintaining.md, "The model against the loader").
    steps.push(CiStep::xtask(&[
        "fuzz-model",
        "--target",
        "x86_64",
        "--trials",
        FUZZ_TRIALS,
        "--seed",
        FUZZ_SEED,
    ])?);
    // The Jetson replay's approach 8 runs under the fallback-first variant (aarch64 only).
    let jetson = targets.contains(&Target::Aarch64);
    if jetson {
        steps.push(CiStep::build(
            Target::Aarch64,
            Some(Flavour::FallbackFirst),
        )?);
    }
    // --no-fail-fast: a failing test binary must not hide the failures of the binaries after
    // it (cargo stops at the first failing binary, and the unit tests run after the docs'
    // examples: one stale example would leave every unit test unreported).
    let mut tests = CiStep::cargo(&["test", "--workspace", "--no-fail-fast"]);
    tests.wants_sysroots = true;
    steps.push(tests);
    // The default release's cells: the matrix patched and unpatched on each target, and
    // glibc's own elf tests patched vs unpatched on each (aarch64's under QEMU).
    let target = match targets {
        [one] => one.name(),
        _ => "all",
    };
    steps.push(CiStep::xtask(&["verify", "--target", target])?);
    // No `jetson-replay --check`: the test step's loader-tests/tests/jetson.rs replays every
    // cuda_compat approach on every host and compares docs/jetson.md with it, and
    // `regenerate --check` checks the page's provenance line against patches/.
    Ok(steps)
}

/// How a run of the steps ended.
enum Ran {
    /// Every step ran, or a failed build stopped the rest: the failed steps, by name.
    Ended { total: Counted, failed: Vec<String> },
    /// The reader of the output left (`cargo xtask ci | head`): nothing more was run or said.
    ReaderGone,
}

struct Counted {
    steps: usize,
    ran: usize,
}

/// Runs `steps` in order, each made ready by `prepare` first. After each step, `reader_left`
/// says whether the reader of the output is gone: a step that met the closed pipe failed
/// for that reason alone, and every step after it would write into it too, so the run ends
/// there, quietly, as every command ends when its reader leaves.
fn run_steps(
    steps: Vec<CiStep>,
    prepare: impl Fn(&mut CiStep),
    reader_left: impl Fn() -> bool,
) -> Result<Ran> {
    let mut failed = Vec::new();
    let total = steps.len();
    let mut ran = 0;
    for (i, mut step) in steps.into_iter().enumerate() {
        ran += 1;
        diagln!("\n==== ci step {}/{total}: {}", i + 1, step.shown);
        prepare(&mut step);
        let started = Instant::now();
        let status = step
            .command
            .status()
            .with_context(|| format!("cannot run {}", step.shown))?;
        if reader_left() {
            return Ok(Ran::ReaderGone);
        }
        let secs = started.elapsed().as_secs_f64();
        let verdict = if status.success() { "ok" } else { "FAILED" };
        diagln!("==== {verdict} in {secs:.1} s: {}", step.shown);
        if !status.success() {
            failed.push(step.shown);
            if step.gates_the_rest {
                diagln!("==== not running the remaining steps: they need this build");
                break;
            }
        }
    }
    Ok(Ran::Ended {
        total: Counted { steps: total, ran },
        failed,
    })
}

/// `$LD_FALLBACK_SYSROOT*` for every sysroot of `targets` that is built (the build steps made
/// them; a sysroot whose build failed is left out, and the tests then fail naming it).
///
/// Found in this process rather than by running `sysroot --print-sysroot`: an earlier
/// step's `cargo test` may have rebuilt `target/debug/xtask`, and then `current_exe()` names
/// a deleted file, which cannot be run.
fn built_sysroots(targets: &[Target], env: &Env) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for target in targets {
        let variants = (*target == Target::Aarch64).then_some(Flavour::FallbackFirst);
        for flavour in Flavour::ALL.into_iter().chain(variants) {
            let var = sysroot_env_var(*target, flavour);
            match Builder::new(env).ensure(Release::newest(), *target, flavour) {
                Ok(built) => vars.push((var, built.sysroot.path.display().to_string())),
                Err(err) => diagln!("{var} left unset: {err:#}"),
            }
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sh -c SCRIPT` as a step.
    fn step(script: &str) -> CiStep {
        let sh = crate::util::shell::here().unwrap();
        let command = Command::from(xshell::cmd!(sh, "sh -c {script}"));
        CiStep {
            shown: script.to_string(),
            command,
            wants_sysroots: false,
            gates_the_rest: false,
        }
    }

    /// `cargo xtask ci | head`: the first step writes into a pipe whose reader is gone (and
    /// dies of it); the run ends there, and the steps after it never start.
    #[test]
    fn a_reader_that_left_ends_the_run_after_the_step_that_met_it() {
        use std::os::fd::AsRawFd;
        let tmp = tempfile::TempDir::new().unwrap();
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let fd = writer.as_raw_fd();
        let mut first = step("yes");
        first.command.stdout(writer.try_clone().unwrap());
        let later = tmp.path().join("later");
        let steps = vec![first, step(&format!("touch {}", later.display()))];
        let ran = run_steps(steps, |_| {}, || output::reader_left_on(&[fd])).unwrap();
        assert!(matches!(ran, Ran::ReaderGone));
        assert!(!later.exists(), "a step ran after the reader left");
        drop(writer);
    }

    /// With the reader there, a failed step is a failure, and the others still run.
    #[test]
    fn a_failed_step_is_counted_and_the_rest_run() {
        let steps = vec![step("exit 3"), step("true")];
        let Ran::Ended { total, failed } = run_steps(steps, |_| {}, || false).unwrap() else {
            panic!("the reader did not leave");
        };
        assert_eq!((total.steps, total.ran), (2, 2));
        assert_eq!(failed, ["exit 3"]);
    }

    /// Only the glibc builds end the run when they fail: the kept-headers check and the
    /// test suite after them are counted and the rest still run.
    #[test]
    fn only_the_builds_gate_the_rest() {
        let gated: Vec<(String, bool)> = plan(&Target::ALL, true)
            .unwrap()
            .into_iter()
            .map(|step| (step.shown, step.gates_the_rest))
            .collect();
        let expected = [
            ("cargo test --package xtask --test it -- tidy::", false),
            ("cargo xtask regenerate --check", false),
            ("cargo xtask verify check-support", false),
            ("cargo xtask rebase-glibc --check --import-missing", false),
            ("cargo xtask nix-stack --release all --target all", false),
            ("cargo xtask sysroot --target x86_64 --flavour both", true),
            ("cargo xtask sysroot --target aarch64 --flavour both", true),
            (
                "cargo xtask sysroot --target x86_64 --check-kept-headers",
                false,
            ),
            (
                "cargo xtask fuzz-model --target x86_64 --trials 1000 --seed 20261204",
                false,
            ),
            (
                "cargo xtask sysroot --target aarch64 --flavour fallback-first",
                true,
            ),
            ("cargo test --workspace --no-fail-fast", false),
            ("cargo xtask verify --target all", false),
        ]
        .map(|(shown, gates)| (shown.to_string(), gates));
        assert_eq!(gated, expected);
    }
}
