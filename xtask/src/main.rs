//! `cargo xtask`: the ld-fallback tooling.
//!
//! Data flows one way: source store -> patched tree -> build -> sysroot -> scenarios -> report.
//! Each subcommand lives in its own module; this file only dispatches.

use clap::{Parser, Subcommand};
use xtask::{bench, build, ci, glibc, patches, rebase, resolution};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Keep the LD_FALLBACK_PATH glibc patch series applying, building and resolving",
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import glibc releases into the local source store and list them.
    #[command(subcommand)]
    Glibc(glibc::Command),
    /// Move the patch series onto another glibc release with a 3-way merge.
    RebaseGlibc(rebase::Args),
    /// Inspect the patch series.
    #[command(subcommand)]
    Patches(patches::Command),
    /// Build patched (or unpatched) glibc into a cached sysroot.
    BuildGlibc(build::Args),
    /// Run the LD_FALLBACK_PATH resolution matrix against a built glibc.
    TestResolution(resolution::Args),
    /// Print timing figures for the slow paths.
    #[command(subcommand)]
    Bench(bench::Command),
    /// Run everything CI checks (series, builds, tests, matrix on x86_64 and aarch64).
    Ci(ci::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Glibc(cmd) => cmd.run(),
        Command::RebaseGlibc(args) => args.run(),
        Command::Patches(cmd) => cmd.run(),
        Command::BuildGlibc(args) => args.run(),
        Command::TestResolution(args) => args.run(),
        Command::Bench(cmd) => cmd.run(),
        Command::Ci(args) => args.run(),
    }
}
