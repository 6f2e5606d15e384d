//! `cargo xtask rebase-glibc`: move a patch series onto another release with a 3-way merge.

use anyhow::{bail, Result};

#[derive(clap::Args)]
pub struct Args {
    /// The release to move the series onto.
    #[arg(long)]
    pub onto: Option<String>,
}

impl Args {
    pub fn run(self) -> Result<()> {
        bail!("not implemented yet")
    }
}
