//! `cargo xtask`: the ld-fallback tooling.
//!
//! Data flows one way: source store -> series -> rebase -> build -> sysroot -> scenarios ->
//! report. Each command lives in the module of its stage; this file only dispatches.

use clap::Parser;
use xtask::cli::{Bench, Cli, Command};
use xtask::{rebase, store};

fn main() -> anyhow::Result<()> {
    let Cli { global, command } = Cli::parse();
    match command {
        Command::Glibc(cmd) => cmd.run(&global),
        Command::Patches(cmd) => cmd.run(&global),
        Command::FormatSeries(args) => args.run(&global),
        Command::RebaseGlibc(args) => args.run(&global),
        Command::BuildGlibc(args) => args.run(&global),
        Command::TestResolution(args) => args.run(&global),
        Command::Verify(args) => args.run(&global),
        Command::Bench(Bench::Store) => store::bench::run(),
        Command::Bench(Bench::Rebase) => rebase::bench::run(&global),
        Command::Bench(Bench::Build(args)) => args.run(&global),
        Command::Bench(Bench::Resolution(args)) => args.run(&global),
        Command::Ci(args) => args.run(),
    }
}
