//! `cargo xtask patches status|import`: the series in `patches/`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use crate::cli::{self, Global};
use crate::series::Workspace;
use crate::store::release::{Release, SUPPORTED};

#[derive(Subcommand)]
pub enum Command {
    /// One row per supported release: applies cleanly, needs rebase, or conflicts.
    Status,
    /// Take `git format-patch` files made elsewhere as the series of a release: they must
    /// apply exactly to it; they are written in the project's canonical form.
    Import {
        /// The release the patches were made against.
        #[arg(long, value_name = "X.Y", value_parser = cli::release())]
        release: Release,
        /// Overwrite an existing `patches/<X.Y>/`.
        #[arg(long)]
        replace: bool,
        /// The patch files, in order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

impl Command {
    pub fn run(self, global: &Global) -> Result<()> {
        let ws = Workspace::open_default(global.store.as_deref())?;
        match self {
            Command::Status => {
                print!("{}", super::status::status(&ws, SUPPORTED)?);
                Ok(())
            }
            Command::Import {
                release,
                replace,
                files,
            } => {
                let dir = super::import::import(&ws, release, &files, replace)?;
                println!("imported {} patches into {}", files.len(), dir.display());
                Ok(())
            }
        }
    }
}
