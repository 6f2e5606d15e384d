//! The command tree of `cargo xtask`, at the top of the crate: every command, the stage whose
//! module runs it, and the environment each gets ([`Global::resolve`]). Nothing imports this
//! module; it imports the stages. [`Cli`] is here rather than in main.rs so that tests can
//! parse commands (say, those a CI workflow runs) exactly as `cargo xtask` would.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cli::Global;
use crate::resolution;
use crate::sysroot;
use crate::util::exit::{self, EXIT_FAILURE, EXIT_OK};
use crate::util::{limits, output, release_table};
use crate::{
    bench, ci, debian_stack, explain, format_series, fuzz_model, jetson_replay, nix_stack, rebase,
};
use crate::{regenerate, rehearse_release, update, verify};
use crate::{series, store};

/// The command line of `cargo xtask`.
#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Keep the LD_FALLBACK_PATH glibc patch series applying, building and resolving",
    after_help = EXIT_STATUS_HELP,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The exit-status rule, the same for every command (README.md, "Exit codes").
const EXIT_STATUS_HELP: &str = "\
Exit status, the same for every command, status and check commands included:
  0    done, and nothing needs attention
  2    something needs attention: a check or a status found what to act on (a series that
       does not apply, drifted, lacks its release or needs a rebase; a stale page or
       workflow; a library not found), or a rebase stopped for a human
  1    the command failed: bad input or usage, an I/O error (a write to a full disk
       included), a refused change, a missing tool
  141  done, but the reader of the output left early (`... | head`)";

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Import glibc releases into the local source store and list them.
    #[command(subcommand, visible_alias = "glibc")]
    Store(store::command::Command),
    /// Inspect the patch series, or take one made elsewhere.
    #[command(subcommand, visible_alias = "patches")]
    Series(series::command::Command),
    /// Format a series as a patch set to mail upstream (libc-alpha).
    FormatSeries(format_series::Args),
    /// Apply the series on top of nixpkgs' own glibc patches, as a Nix user would (docs/nix.md).
    NixStack(nix_stack::Args),
    /// Apply the series on top of Debian's glibc patches (the release's stable branch,
    /// git-updates.diff first), as Debian builds it; patches/stable/ resolves what it rejects.
    DebianStack(debian_stack::Args),
    /// Move the patch series onto another glibc release with a 3-way merge.
    RebaseGlibc(rebase::command::Args),
    /// Bring one glibc release up to date, a new one included: import, rebase, build, verify,
    /// write the series (and a new release's row in data/releases.json).
    UpdateRelease(update::Args),
    /// Retire a glibc release: its series, cells and row go; what follows from the table is
    /// written again.
    RetireRelease(update::retire::Args),
    /// Rehearse a new release's day: the next version, made from the newest's tree, through
    /// update-release in scratch copies of the checkout and store; no source file may change.
    RehearseRelease(rehearse_release::Args),
    /// Build glibc, patched or not, into a cached sysroot.
    #[command(visible_alias = "build-glibc")]
    Sysroot(sysroot::command::Args),
    /// Run the LD_FALLBACK_PATH resolution matrix against a built glibc.
    TestResolution(resolution::Args),
    /// Prove cells (release x target): series, builds, matrix, glibc's own tests; the support table.
    Verify(verify::Args),
    /// Replay every way of using cuda_compat on Jetson, on every kind of host (docs/jetson.md).
    JetsonReplay(jetson_replay::Args),
    /// Which file a program would load for every library, with LD_FALLBACK_PATH, without
    /// running it (a model of the patched loader's search).
    Explain(explain::Args),
    /// Hold the loader model against the built loader on generated worlds (a program, a DAG
    /// of libraries, search lists, copies in several places); a disagreement is shrunk and
    /// printed as a reproducer.
    FuzzModel(fuzz_model::Args),
    /// Print timing figures for the slow paths.
    #[command(subcommand)]
    Bench(bench::Command),
    /// Write every generated file and block this command can make (the workflow, the support
    /// page, docs/contract.md's scenarios); --check: compare every generated part and name
    /// each stale one with the command that writes it.
    Regenerate(regenerate::Args),
    /// Run everything CI checks (tidy, series, builds, tests, matrix on x86_64 and aarch64).
    Ci(ci::Args),
}

/// `cargo xtask`: parses the command line, runs the command, and turns how it ended into the
/// exit status (0 ok, 1 failure, 2 needs attention).
///
/// Errors are printed here, as `error: <what>: <cause>: ...`: returning them from `main`
/// would print anyhow's debug form, with a backtrace whenever `RUST_BACKTRACE` is set (as in
/// many CI images), for what is a message to the user.
pub fn main() -> ExitCode {
    output::survive_closed_pipes();
    limits::survive();
    // Before the command line: its release values are the table's.
    if let Err(err) = release_table::load() {
        diagln!("error: {err:#}");
        return ExitCode::from(EXIT_FAILURE);
    }
    let cli = match parse() {
        Ok(cli) => cli,
        // clap's message quotes what the user typed: parsed again from the arguments
        // escaped, it quotes them escaped; plain text (no styles), written as every message.
        Err(usage) if usage.use_stderr() => {
            let again = model::printable_args(std::env::args_os())
                .and_then(|escaped| Cli::try_parse_from(escaped).err())
                .filter(|again| again.kind() == usage.kind());
            diag!("{}", again.as_ref().unwrap_or(&usage).render());
            return ExitCode::from(EXIT_FAILURE);
        }
        Err(usage) => {
            let printed = usage.print();
            // Usage errors are failures (1), not findings: clap's own code 2 is ours. Help
            // that could not be written (`--help > /dev/full`) is a failure too; only a
            // reader that left ends quietly.
            return ExitCode::from(match printed {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => output::EXIT_READER_GONE,
                Err(e) => {
                    diagln!("error: cannot write the help: {e}");
                    EXIT_FAILURE
                }
                Ok(()) => EXIT_OK,
            });
        }
    };
    let mut status = match run(cli) {
        Ok(()) => EXIT_OK,
        Err(err) => {
            let err = limits::explain(err);
            diagln!("error: {err:#}");
            exit::exit_status(&err)
        }
    };
    // A report cut short by a full disk (or the file size limit) behind a redirection is a
    // failure, whatever the work found: only a reader that left may end quietly.
    if let Some(err) = output::write_failure() {
        diagln!("error: {:#}", limits::explain(err));
        status = EXIT_FAILURE;
    }
    // Output nobody read is not a failure of the work, but a pipeline should still see that
    // its writer outlived its reader, as it would from any tool that SIGPIPE ended.
    if status == EXIT_OK && output::reader_gone() {
        return ExitCode::from(output::EXIT_READER_GONE);
    }
    ExitCode::from(status)
}

/// The command line, parsed; a value holding a control character is refused here, for every
/// command alike ([`values_printable`]).
fn parse() -> Result<Cli, clap::Error> {
    let matches = Cli::command().try_get_matches()?;
    if let Err(why) = values_printable(&Cli::command(), &matches) {
        return Err(Cli::command().error(clap::error::ErrorKind::ValueValidation, why));
    }
    Cli::from_arg_matches(&matches)
}

/// Refuses a value of the command line (`matches` of `cmd` and the subcommands under it) that
/// holds a control character, a newline or a tab: every message says the values it quotes
/// on one line (a list of the mails written, one a line, would list other files), and the
/// paths below a path named, and a rebase's state keeps its `--exec` commands one a line.
/// Said escaped. Not `explain`'s, which models the loader's search for any bytes (and says
/// them escaped).
fn values_printable(cmd: &clap::Command, matches: &clap::ArgMatches) -> Result<(), String> {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        let Ok(Some(values)) = matches.try_get_raw(id) else {
            continue;
        };
        for value in values {
            let text = value.to_string_lossy();
            if text.chars().any(char::is_control) {
                let name = match arg.get_long() {
                    Some(long) => format!("--{long}"),
                    None => format!("<{}>", id.to_uppercase()),
                };
                return Err(format!(
                    "{name} {} holds a control character: no value cargo xtask takes holds one (each message says it on one line); give it without",
                    model::printable(&text)
                ));
            }
        }
    }
    match matches.subcommand() {
        None | Some(("explain", _)) => Ok(()),
        Some((name, sub)) => match cmd.find_subcommand(name) {
            Some(sub_cmd) => values_printable(sub_cmd, sub),
            None => Ok(()),
        },
    }
}

fn run(Cli { global, command }: Cli) -> anyhow::Result<()> {
    let env = || global.resolve();
    match command {
        Command::Store(cmd) => cmd.run(&env()?),
        Command::Series(cmd) => cmd.run(&env()?, &rebase::series_check::check_read),
        Command::FormatSeries(args) => args.run(&env()?),
        Command::NixStack(args) => args.run(&env()?),
        Command::DebianStack(args) => args.run(&env()?),
        Command::RebaseGlibc(args) => {
            let env = env()?;
            args.run(&env, sysroot::compile_check::for_rebase(&env))
        }
        Command::UpdateRelease(args) => args.run(&env()?, &regenerate::write_all),
        Command::RetireRelease(args) => args.run(&env()?, &regenerate::write_all),
        Command::RehearseRelease(args) => args.run(&env()?),
        Command::Sysroot(args) => args.run(&env()?),
        Command::TestResolution(args) => args.run(&env()?),
        Command::Verify(args) => args.run(&env()?),
        Command::JetsonReplay(args) => args.run(&env()?),
        // Reads only the tree it is given: no store, series or cache.
        Command::Explain(args) => explain::run(&args),
        Command::FuzzModel(args) => args.run(&env()?),
        Command::Bench(bench) => bench.run(&env()?),
        Command::Ci(args) => args.run(&env()?),
        Command::Regenerate(args) => args.run(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commands whose module has another name, with the module: the rest live in
    /// `xtask/src/<name>` (`-` written `_`), a directory or a file.
    const MODULE_OF: &[(&str, &str)] = &[
        ("rebase-glibc", "rebase"),
        ("update-release", "update"),
        ("retire-release", "update"),
        ("test-resolution", "resolution"),
    ];

    /// The names users typed before a command was named for its module: each still runs it.
    const OLD_NAMES: &[(&str, &str)] = &[
        ("glibc", "store"),
        ("patches", "series"),
        ("build-glibc", "sysroot"),
    ];

    #[test]
    fn each_command_lives_in_the_module_of_its_name() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for sub in Cli::command().get_subcommands() {
            let name = sub.get_name();
            let module = MODULE_OF
                .iter()
                .find(|(command, _)| *command == name)
                .map_or_else(|| name.replace('-', "_"), |(_, module)| module.to_string());
            assert!(
                src.join(&module).is_dir() || src.join(format!("{module}.rs")).is_file(),
                "the command {name} has no module xtask/src/{module}"
            );
        }
    }

    #[test]
    fn old_command_names_are_aliases_of_the_new() {
        let cli = Cli::command();
        for (old, new) in OLD_NAMES {
            let sub = cli
                .find_subcommand(old)
                .unwrap_or_else(|| panic!("{old} runs no command"));
            assert_eq!(sub.get_name(), *new, "{old}");
            assert!(
                sub.get_visible_aliases().any(|alias| alias == *old),
                "{old} is not shown in {new}'s help"
            );
        }
    }

    #[test]
    fn counts_start_at_one() {
        for args in [
            &["format-series", "--version", "0"][..],
            &["sysroot", "--jobs", "0"],
            &["bench", "build", "--jobs", "0"],
        ] {
            let err =
                Cli::try_parse_from(std::iter::once("cargo-xtask").chain(args.iter().copied()))
                    .err()
                    .unwrap_or_else(|| panic!("{args:?} was accepted"));
            assert!(
                err.to_string().contains("give 1 or more"),
                "{args:?}: {err}"
            );
        }
    }
}
