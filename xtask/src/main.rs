//! `cargo xtask`: the ld-fallback tooling.
//!
//! Data flows one way: source store -> series -> rebase -> build -> sysroot -> scenarios ->
//! report. Each command lives in the module of its stage; this file only dispatches.

use clap::{Parser, Subcommand};
use xtask::cli::Global;
use xtask::{build, ci, rebase, resolution, series, store};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Keep the LD_FALLBACK_PATH glibc patch series applying, building and resolving",
    arg_required_else_help = true
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import glibc releases into the local source store and list them.
    #[command(subcommand)]
    Glibc(store::command::Command),
    /// Inspect the patch series, or take one made elsewhere.
    #[command(subcommand)]
    Patches(series::command::Command),
    /// Move the patch series onto another glibc release with a 3-way merge.
    RebaseGlibc(rebase::command::Args),
    /// Build glibc, patched or not, into a cached sysroot.
    BuildGlibc(build::command::Args),
    /// Run the LD_FALLBACK_PATH resolution matrix against a built glibc.
    TestResolution(resolution::Args),
    /// Print timing figures for the slow paths.
    #[command(subcommand)]
    Bench(Bench),
    /// Run everything CI checks (tidy, series, builds, tests, matrix on x86_64 and aarch64).
    Ci(ci::Args),
}

#[derive(Subcommand)]
enum Bench {
    /// Time an import of the newest release into a fresh store.
    Store,
    /// Time a rebase of the series onto every other release.
    Rebase,
    /// Time cold, cached and incremental glibc builds.
    Build(build::bench::BenchArgs),
    /// Time the resolution matrix once builds are cached.
    Resolution(resolution::bench::Args),
}

fn main() -> anyhow::Result<()> {
    let Cli { global, command } = Cli::parse();
    match command {
        Command::Glibc(cmd) => cmd.run(&global),
        Command::Patches(cmd) => cmd.run(&global),
        Command::RebaseGlibc(args) => args.run(&global),
        Command::BuildGlibc(args) => args.run(&global),
        Command::TestResolution(args) => args.run(&global),
        Command::Bench(Bench::Store) => store::bench::run(),
        Command::Bench(Bench::Rebase) => rebase::bench::run(&global),
        Command::Bench(Bench::Build(args)) => args.run(&global),
        Command::Bench(Bench::Resolution(args)) => args.run(&global),
        Command::Ci(args) => args.run(),
    }
}
