//! `cargo xtask bench ...`: timing figures for the slow paths, each taken through the stages
//! it times (a bench may take several: the build bench's inner loop runs the matrix).

pub(crate) mod build;
pub(crate) mod compiler_cache;
pub(crate) mod differential;
pub mod rebase;
pub(crate) mod replay;
pub(crate) mod resolution;
pub(crate) mod store;
pub(crate) mod suite;

use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;

use crate::cli::Env;

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Time an import of the newest release into a fresh store.
    Store,
    /// Time a rebase of the series onto every other release.
    Rebase,
    /// Time cold, cached and incremental glibc builds.
    Build(build::BenchArgs),
    /// Time a second configuration's build of the same sources through ccache and without.
    CompilerCache(compiler_cache::Args),
    /// Time the resolution matrix once builds are cached.
    Resolution(resolution::Args),
    /// Time the search model's differential test: every run on its own, then each world once.
    Differential(differential::Args),
    /// Time the Jetson replay: every run on its own, then each world once (the reports compared).
    Replay(replay::Args),
    /// Time glibc's elf suite in the x86_64 tree (natively) and the aarch64 tree (under QEMU).
    Suite(suite::Args),
}

impl Command {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        match self {
            Command::Store => store::run(env),
            Command::Rebase => rebase::run(env),
            Command::Build(args) => args.run(env),
            Command::CompilerCache(args) => args.run(env),
            Command::Resolution(args) => args.run(env),
            Command::Suite(args) => args.run(env),
            Command::Differential(args) => args.run(env),
            Command::Replay(args) => args.run(env),
        }
    }
}

/// The median of `times`, in seconds (`times` sorted in place; at least one).
pub(crate) fn median_secs(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64()
}
