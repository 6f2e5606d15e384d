//! `cargo xtask rebase-glibc`: `--onto X.Y [--from X.Y]`, `--continue`, `--abort` or `--check`.

use anyhow::{bail, Result};

use super::{abort, check, continue_rebase, start, stopped_rebase, Outcome};
use crate::cli::{self, Global};
use crate::series::Workspace;
use crate::store::release::Release;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["onto", "continue_", "abort", "check"])))]
pub struct Args {
    /// Move the series onto this release, writing patches/<X.Y>/ if every patch applies.
    #[arg(long, value_name = "X.Y", value_parser = cli::release())]
    pub onto: Option<Release>,
    /// The series to move [default: the newest one in patches/].
    #[arg(long, value_name = "X.Y", value_parser = cli::release(), requires = "onto")]
    pub from: Option<Release>,
    /// Go on after resolving the conflicts in the work tree.
    #[arg(long = "continue")]
    pub continue_: bool,
    /// Give up a stopped rebase; patches/ was never touched.
    #[arg(long)]
    pub abort: bool,
    /// Verify that every series applies exactly to its release and re-exports byte for byte.
    #[arg(long)]
    pub check: bool,
    /// With --continue or --abort: which stopped rebase, when more than one is.
    #[arg(long = "release", value_name = "X.Y", value_parser = cli::release(), conflicts_with_all = ["onto", "check"])]
    pub stopped: Option<Release>,
}

impl Args {
    pub fn run(self, global: &Global) -> Result<()> {
        let ws = Workspace::open_default(global.store.as_deref())?;
        if self.check {
            let report = check(&ws)?;
            print!("{}", report.text);
            if !report.ok {
                bail!(
                    "the series in {} need attention (see above)",
                    ws.patches_dir.display()
                );
            }
            return Ok(());
        }
        if self.abort {
            let onto = stopped_rebase(&ws, self.stopped)?;
            abort(&ws, onto)?;
            println!("aborted the rebase onto glibc {onto}; patches/ is unchanged");
            return Ok(());
        }
        let outcome = match self.onto {
            Some(onto) => start(&ws, self.from, onto)?,
            None => continue_rebase(&ws, stopped_rebase(&ws, self.stopped)?)?,
        };
        match outcome {
            Outcome::Written(summary) => {
                print!("{summary}");
                Ok(())
            }
            Outcome::Conflict(report) => {
                eprint!("{report}");
                bail!("the rebase stopped at a conflict")
            }
        }
    }
}
