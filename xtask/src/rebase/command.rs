//! `cargo xtask rebase-glibc`: `--onto X.Y [--from X.Y]`, `--continue`, `--abort` or `--check`.

use anyhow::{bail, Result};
use git2::ErrorClass;

use super::{abort, check, continue_rebase, start, state, stopped_rebase, Outcome};
use crate::cli::{self, Global, NeedsAttention};
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
    /// With --continue: the resolution deletes PATH (relative to the work tree). A file
    /// missing from the work tree is refused unless the patch deletes it or this says so.
    #[arg(long = "delete", value_name = "PATH", requires = "continue_")]
    pub delete: Vec<String>,
    /// Give up a stopped rebase; patches/ was never touched.
    #[arg(long)]
    pub abort: bool,
    /// Verify that every series applies exactly to its release, stays inside patches/scope,
    /// and re-exports byte for byte. Reads the store only.
    #[arg(long)]
    pub check: bool,
    /// With --check: import the releases the store lacks (from Debian) instead of reporting
    /// them as MISSING.
    #[arg(long, requires = "check")]
    pub import_missing: bool,
    /// With --continue or --abort: which stopped rebase, when more than one is.
    #[arg(long = "release", value_name = "X.Y", value_parser = cli::release(), conflicts_with_all = ["onto", "check"])]
    pub stopped: Option<Release>,
}

impl Args {
    pub fn run(self, global: &Global) -> Result<()> {
        let ws = if self.check && !self.import_missing {
            Workspace::open_read_only(global.store.as_deref())?
        } else {
            Workspace::open_default(global.store.as_deref())?
        };
        for said in ws.recover()?.into_iter().chain(state::recover(&ws)?) {
            eprintln!("{said}");
        }
        if self.check {
            let report = check(&ws)?;
            print!("{}", report.text);
            if report.errors {
                bail!("the check could not read or write what it needs (see ERROR above)");
            }
            if !report.ok {
                return Err(NeedsAttention(format!(
                    "the series in {} need attention (see above)",
                    ws.patches_dir.display()
                ))
                .into());
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
            Some(onto) => start(&ws, self.from, onto),
            None => continue_rebase(&ws, stopped_rebase(&ws, self.stopped)?, &self.delete),
        }
        .map_err(|e| explain_unwritable_store(e, &ws))?;
        match outcome {
            Outcome::Written(summary) => {
                print!("{summary}");
                Ok(())
            }
            Outcome::Conflict(report) => {
                eprint!("{report}");
                Err(NeedsAttention("the rebase stopped at a conflict".into()).into())
            }
        }
    }
}

/// A rebase stores its commits in the store: on one it may not write, say so, instead of
/// leaving the user with libgit2's "failed to create temporary file".
fn explain_unwritable_store(err: anyhow::Error, ws: &Workspace) -> anyhow::Error {
    let unwritable = err.chain().any(|cause| {
        cause.downcast_ref::<git2::Error>().is_some_and(|e| {
            e.class() == ErrorClass::Os
                && (e.message().contains("Read-only file system")
                    || e.message().contains("Permission denied"))
        })
    });
    if unwritable {
        err.context(format!(
            "the store {} is not writable, and a rebase keeps its commits there",
            ws.store.dir().display()
        ))
    } else {
        err
    }
}
