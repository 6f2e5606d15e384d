//! `cargo xtask glibc import|list`: the local store of glibc releases.

use anyhow::{bail, Result};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Command {
    /// Import a release into the store (deterministic: same tree, same commit id everywhere).
    Import {
        /// `X.Y`, one of the supported releases.
        version: String,
    },
    /// List the releases in the store.
    List,
}

impl Command {
    pub fn run(self) -> Result<()> {
        bail!("not implemented yet")
    }
}
