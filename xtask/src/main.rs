//! `cargo xtask`: the ld-fallback tooling.
//!
//! Data flows one way: source store -> series -> rebase -> build -> sysroot -> scenarios ->
//! report. Each command lives in the module of its stage; this file dispatches, and turns the
//! outcome into an exit status (`xtask::cli::exit_status`: 0 ok, 1 failure, 2 needs attention).

use std::process::ExitCode;

use clap::Parser;
use xtask::cli::{self, Bench, Cli, Command};
use xtask::util::{limits, output};
use xtask::{diagln, rebase, store};

/// Errors are printed here, as `error: <what>: <cause>: ...`: returning them from `main` would
/// print anyhow's debug form, with a backtrace whenever `RUST_BACKTRACE` is set (as in many
/// CI images), for what is a message to the user.
fn main() -> ExitCode {
    output::survive_closed_pipes();
    limits::survive();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(usage) => {
            let printed = usage.print();
            // Usage errors are failures (1), not findings: clap's own code 2 is ours.
            return ExitCode::from(if usage.use_stderr() {
                cli::EXIT_FAILURE
            } else if printed.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
                output::EXIT_READER_GONE
            } else {
                cli::EXIT_OK
            });
        }
    };
    let status = match run(cli) {
        Ok(()) => cli::EXIT_OK,
        Err(err) => {
            let err = limits::explain(err);
            diagln!("error: {err:#}");
            cli::exit_status(&err)
        }
    };
    // Output nobody read is not a failure of the work, but a pipeline should still see that
    // its writer outlived its reader, as it would from any tool that SIGPIPE ended.
    if status == cli::EXIT_OK && output::reader_gone() {
        return ExitCode::from(output::EXIT_READER_GONE);
    }
    ExitCode::from(status)
}

fn run(Cli { global, command }: Cli) -> anyhow::Result<()> {
    match command {
        Command::Glibc(cmd) => cmd.run(&global),
        Command::Patches(cmd) => cmd.run(&global),
        Command::FormatSeries(args) => args.run(&global),
        Command::RebaseGlibc(args) => args.run(&global),
        Command::UpdateRelease(args) => args.run(&global),
        Command::BuildGlibc(args) => args.run(&global),
        Command::TestResolution(args) => args.run(&global),
        Command::Verify(args) => args.run(&global),
        Command::JetsonReplay(args) => args.run(&global),
        Command::Explain(args) => args.run(),
        Command::Bench(Bench::Store) => store::bench::run(&global),
        Command::Bench(Bench::Rebase) => rebase::bench::run(&global),
        Command::Bench(Bench::Build(args)) => args.run(&global),
        Command::Bench(Bench::Resolution(args)) => args.run(&global),
        Command::Ci(args) => args.run(&global),
    }
}
