//! `cargo xtask build-glibc`: cached patched and unpatched glibc sysroots.

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
