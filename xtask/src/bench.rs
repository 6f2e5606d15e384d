//! `cargo xtask bench ...`: figures for the slow paths, printed, never asserted.

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Command {
    /// Time an import of one release and a rebase of the series across every release.
    Store,
    /// Time cold, cached and incremental glibc builds.
    Build(crate::build::BenchArgs),
    /// Time the resolution matrix once builds are cached.
    Resolution(crate::resolution::BenchArgs),
}

impl Command {
    pub fn run(self) -> Result<()> {
        match self {
            Command::Store => crate::store_bench::run(),
            Command::Build(args) => args.run(),
            Command::Resolution(args) => args.run(),
        }
    }
}
