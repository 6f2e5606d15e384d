//! `cargo xtask series status|import`: the series in `patches/`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Subcommand;

use crate::cli::{Env, OneRelease};
use crate::series::{Judge, Workspace};
use crate::util::exit::NeedsAttention;
use model::supported;

#[derive(Subcommand)]
pub(crate) enum Command {
    /// One row per supported release: applies cleanly, needs rebase, or conflicts. Reads
    /// the store only; exits 0 when every row applies cleanly, 2 when one needs attention
    /// (no series, a rebase, a conflict, not imported), 1 when a status cannot be found out.
    Status {
        /// Import the releases the store lacks (from Debian) instead of reporting them.
        #[arg(long)]
        import_missing: bool,
    },
    /// Take `git format-patch` files made elsewhere as the series of a release: they must
    /// apply exactly to it; they are written in the project's canonical form.
    Import {
        /// The release the patches were made against.
        #[command(flatten)]
        release: OneRelease,
        /// Overwrite an existing `patches/<X.Y>/`.
        #[arg(long)]
        replace: bool,
        /// The patch files, in order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

impl Command {
    /// Runs the command; `judge` is `rebase-glibc --check`'s, whose verdict `status` reports.
    pub(crate) fn run(self, env: &Env, judge: Judge) -> Result<()> {
        let ws = match self {
            Command::Status {
                import_missing: false,
            } => Workspace::open_read_only(env)?,
            _ => Workspace::open(env)?,
        };
        for said in ws.recover()? {
            diagln!("{said}");
        }
        match self {
            Command::Status { .. } => {
                let report = super::status::status(&ws, supported(), judge)?;
                out!("{}", report.render());
                if report.errors() {
                    bail!("the status of some releases could not be found out (see `error` above)");
                }
                if report.needs_attention() {
                    return Err(
                        NeedsAttention("some series need attention (see above)".into()).into(),
                    );
                }
                Ok(())
            }
            Command::Import {
                release: OneRelease { release },
                replace,
                files,
            } => {
                let _lock = ws.lock_release(release)?;
                let dir = super::import::import(&ws, release, &files, replace)?;
                outln!("imported {} patches into {}", files.len(), dir.display());
                Ok(())
            }
        }
    }
}
