//! The generated CI-engine workflow (`.github/workflows/verify.yml`), read the way GitHub
//! reads it: one job per cell of the project's release list and targets, each running
//! commands `cargo xtask` accepts, and a job merging the cells into the support table.

use std::path::Path;

use clap::Parser;
use github_actions_models::common::expr::LoE;
use github_actions_models::common::If;
use github_actions_models::workflow::job::{Container, NormalJob, Step};
use github_actions_models::workflow::{Job, Workflow};
use model::Target;
use model::{supported, Release};
use xtask::ci::workflow;
use xtask::commands::Cli;

fn workflow() -> Workflow {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(workflow::path(root)).expect("the workflow is committed");
    assert_eq!(
        text,
        workflow::render(),
        "stale: run cargo xtask ci --workflow"
    );
    yaml_serde::from_str(&text).expect("the workflow parses as a GitHub workflow")
}

fn job<'w>(workflow: &'w Workflow, name: &str) -> &'w NormalJob {
    match workflow.jobs.get(name) {
        Some(Job::NormalJob(job)) => job,
        _ => panic!("no normal job {name}"),
    }
}

fn runs(job: &NormalJob) -> Vec<&str> {
    job.steps
        .iter()
        .filter_map(|step| match step {
            Step::Run(run) => Some(run.run.as_str()),
            _ => None,
        })
        .collect()
}

fn uses(job: &NormalJob) -> Vec<String> {
    job.steps
        .iter()
        .filter_map(|step| match step {
            Step::Uses(step) => Some(format!("{:?}", step.uses)),
            _ => None,
        })
        .collect()
}

/// Every `cargo xtask ...` line of a step, with the matrix filled in.
fn xtask_commands(job: &NormalJob, release: &str, target: &str) -> Vec<Vec<String>> {
    runs(job)
        .iter()
        .flat_map(|run| run.lines())
        .filter_map(|line| line.split("cargo xtask ").nth(1))
        .map(|rest| {
            let rest = rest
                .replace("${{ matrix.release }}", release)
                .replace("${{ matrix.target }}", target);
            let command = rest.split(['|', '>', ';', ')']).next().unwrap();
            let mut argv = vec!["cargo xtask".to_string()];
            argv.extend(command.split_whitespace().map(str::to_string));
            argv
        })
        .collect()
}

#[test]
fn one_job_per_cell_of_the_release_list() {
    let workflow = workflow();
    let cell = job(&workflow, "cell");
    let strategy = cell.strategy.as_ref().expect("the cell job has a matrix");
    let Some(LoE::Literal(matrix)) = &strategy.matrix else {
        panic!("the matrix is literal");
    };
    let LoE::Literal(dimensions) = &matrix.dimensions else {
        panic!("literal dimensions");
    };
    let values = |name: &str| -> Vec<String> {
        match dimensions.get(name) {
            Some(LoE::Literal(values)) => values
                .iter()
                .map(|v| v.as_str().expect("string matrix values").to_string())
                .collect(),
            _ => panic!("no {name} dimension"),
        }
    };
    let releases: Vec<String> = supported()
        .iter()
        .map(|r| r.version().to_string())
        .collect();
    assert_eq!(values("release"), releases);
    let targets: Vec<String> = Target::ALL.iter().map(|t| t.name().to_string()).collect();
    assert_eq!(values("target"), targets);
}

#[test]
fn cells_run_in_a_privileged_debian_container() {
    let workflow = workflow();
    let cell = job(&workflow, "cell");
    match &cell.container {
        Some(Container::Container { image, options, .. }) => {
            assert!(
                format!("{image:?}").contains("debian:bookworm"),
                "{image:?}"
            );
            assert_eq!(options.as_deref(), Some("--privileged"));
        }
        other => panic!("the cell job needs a Debian container, not {other:?}"),
    }
}

#[test]
fn every_command_is_one_cargo_xtask_accepts() {
    let workflow = workflow();
    let mut checked = 0;
    for name in ["cell", "support-table"] {
        for argv in xtask_commands(job(&workflow, name), "2.44", "aarch64") {
            checked += 1;
            if let Err(err) = Cli::try_parse_from(&argv) {
                panic!(
                    "job {name} runs `{}`, which cargo xtask refuses:\n{err}",
                    argv.join(" ")
                );
            }
        }
    }
    // sysroot --print-key, verify, jetson-replay --check, sysroot --print-sysroot
    // (the docs' examples), verify merge.
    assert_eq!(checked, 5, "the scan for commands found too few");
}

#[test]
fn each_cell_is_verified_cached_and_reported() {
    let workflow = workflow();
    let cell = job(&workflow, "cell");
    let commands = xtask_commands(cell, "2.41", "x86_64");
    let verify = commands
        .iter()
        .find(|argv| argv.get(1).map(String::as_str) == Some("verify"))
        .expect("a cell runs cargo xtask verify");
    assert_eq!(
        verify[2..],
        ["--release", "2.41", "--target", "x86_64", "--json"]
    );
    let actions = uses(cell).join("\n");
    for action in [
        "actions/checkout",
        "actions/cache",
        "actions/upload-artifact",
    ] {
        assert!(
            actions.contains(action),
            "no {action} in the cell job:\n{actions}"
        );
    }
    assert!(
        runs(cell).iter().any(|r| r.contains("--print-key")),
        "the cache is keyed by sysroot's own keys"
    );
    let table = job(&workflow, "support-table");
    assert_eq!(table.needs, ["cell"]);
    assert_eq!(
        runs(table),
        [
            "apt-get update -qq && apt-get install -y -qq --no-install-recommends curl \
             ca-certificates git build-essential",
            "cargo xtask verify merge cells/*/cell.json --markdown --write-support >> \
             \"$GITHUB_STEP_SUMMARY\"",
        ]
    );
    assert!(
        uses(table).join("\n").contains("actions/upload-artifact"),
        "the merged record is kept, to commit"
    );
}

/// docs/jetson.md is checked where its sysroots are built anyway: in the newest release's
/// aarch64 cell, whatever became of the verification before it.
#[test]
fn the_newest_aarch64_cell_checks_the_jetson_replay() {
    let workflow = workflow();
    let cell = job(&workflow, "cell");
    let replays: Vec<_> = cell
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Run(run) if run.run.contains("jetson-replay") => Some(run),
            _ => None,
        })
        .collect();
    assert_eq!(replays.len(), 1, "one step runs the Jetson replay");
    let step = replays[0];
    let newest = Release::newest().version();
    let argv = xtask_commands(cell, newest, "aarch64")
        .into_iter()
        .find(|argv| argv.get(1).map(String::as_str) == Some("jetson-replay"))
        .unwrap();
    assert_eq!(
        argv[2..],
        ["--release", newest, "--target", "aarch64", "--check"]
    );
    let Some(If::Expr(condition)) = &step.shared.r#if else {
        panic!(
            "the replay must run in one cell only, not {:?}",
            step.shared.r#if
        );
    };
    // Whatever became of the verification before it (`!cancelled()`), in one cell.
    assert_eq!(
        condition.to_string(),
        format!(
            "${{{{ !cancelled() && matrix.release == '{newest}' && matrix.target == 'aarch64' }}}}"
        )
    );
}

/// The series on nixpkgs' glibc patches: nixpkgs checked out at every pinned commit (its
/// glibc directory only), then one `nix-stack` over all of them.
#[test]
fn the_nix_stack_job_checks_out_every_pin_and_runs_the_check() {
    let workflow = workflow();
    let nix = job(&workflow, "nix-stack");
    let argv = xtask_commands(nix, "", "");
    assert_eq!(
        argv,
        [[
            "cargo xtask",
            "nix-stack",
            "--release",
            "all",
            "--target",
            "all",
            "--nixpkgs",
            "nixpkgs"
        ]]
    );
    Cli::try_parse_from(&argv[0]).expect("cargo xtask accepts the nix-stack command");
    let checkouts: Vec<String> = nix
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Uses(step) => Some(format!("{:?}", step.with)),
            _ => None,
        })
        .filter(|with| with.contains("NixOS/nixpkgs"))
        .collect();
    let pins = supported()
        .iter()
        .filter(|r| r.facts().nixpkgs.is_some())
        .count();
    assert_eq!(
        checkouts.len(),
        pins,
        "one nixpkgs checkout per pin:\n{checkouts:#?}"
    );
    for with in &checkouts {
        assert!(
            with.contains("pkgs/development/libraries/glibc"),
            "a sparse checkout of nixpkgs' glibc: {with}"
        );
    }
}

/// The series on Debian's stable branches: every release imported, then one `debian-stack`
/// over all of them.
#[test]
fn the_debian_stack_job_imports_every_release_and_runs_the_check() {
    let workflow = workflow();
    let debian = job(&workflow, "debian-stack");
    let argv = xtask_commands(debian, "", "");
    assert_eq!(
        argv,
        [
            vec!["cargo xtask", "rebase-glibc", "--check", "--import-missing"],
            vec!["cargo xtask", "debian-stack", "--release", "all"]
        ]
    );
    for command in &argv {
        Cli::try_parse_from(command).expect("cargo xtask accepts the command");
    }
}

/// The repository's flake against real nixpkgs: a current Nix, then `nix flake check` without
/// building, on both systems, against the flake's own nixpkgs and against each nixpkgs commit
/// the nix-stack job checks out.
#[test]
fn the_nix_flake_job_checks_the_flake_against_every_pinned_nixpkgs() {
    let workflow = workflow();
    let flake = job(&workflow, "nix-flake");
    assert!(
        uses(flake).join("\n").contains("cachix/install-nix-action"),
        "the job installs Nix"
    );
    let checks: Vec<&str> = runs(flake);
    for check in &checks {
        assert!(
            check.starts_with("nix flake check --no-build --all-systems --no-write-lock-file"),
            "evaluation only, on every system, nothing written: {check}"
        );
    }
    let pinned: Vec<String> = job(&workflow, "nix-stack")
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Uses(step) => Some(format!("{:?}", step.with)),
            _ => None,
        })
        .filter_map(|with| {
            let at = with.find("ref")? + "ref".len();
            let commit: String = with[at..]
                .chars()
                .skip_while(|c| !c.is_ascii_hexdigit())
                .take_while(char::is_ascii_hexdigit)
                .collect();
            (commit.len() == 40).then_some(commit)
        })
        .collect();
    assert_eq!(pinned.len(), 4, "the nix-stack job's pins: {pinned:?}");
    let overridden: Vec<&str> = checks
        .iter()
        .filter_map(|c| {
            c.split("--override-input nixpkgs github:NixOS/nixpkgs/")
                .nth(1)
        })
        .collect();
    assert_eq!(overridden, pinned, "one check per pinned nixpkgs");
    assert_eq!(
        checks.len(),
        pinned.len() + 1,
        "and one against the flake's own nixpkgs"
    );
}

/// The stand-alone explain crate is installed as users install it, on arm64.
#[test]
fn explain_installs_on_its_own_on_arm64() {
    let workflow = workflow();
    let explain = job(&workflow, "explain-arm64");
    let runner = format!("{:?}", explain.runs_on);
    assert!(runner.contains("ubuntu-24.04-arm"), "{runner}");
    assert_eq!(
        runs(explain),
        [
            "cargo install --locked --path explain --root \"$RUNNER_TEMP/explain\"",
            "\"$RUNNER_TEMP/explain/bin/ld-fallback-explain\" /usr/bin/ls --fallback-path \
             /usr/lib/aarch64-linux-gnu/nvidia\n\"$RUNNER_TEMP/explain/bin/ld-fallback-explain\" \
             /usr/bin/ls --json > explain.json\n",
        ]
    );
}
