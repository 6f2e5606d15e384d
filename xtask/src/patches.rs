//! `cargo xtask patches ...`: the state of the series in `patches/`.

use anyhow::{bail, Result};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Command {
    /// One row per supported release: applies cleanly, needs rebase, or conflicts.
    Status,
}

impl Command {
    pub fn run(self) -> Result<()> {
        bail!("not implemented yet")
    }
}
