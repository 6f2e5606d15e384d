//! `cargo xtask test-resolution`: the LD_FALLBACK_PATH resolution matrix.

use anyhow::{bail, Result};

#[derive(clap::Args)]
pub struct Args {
    /// `X.Y` or `all`; default: the newest supported release.
    #[arg(long)]
    pub release: Option<String>,
}

impl Args {
    pub fn run(self) -> Result<()> {
        bail!("not implemented yet")
    }
}
