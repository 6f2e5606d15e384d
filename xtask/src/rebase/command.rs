//! `cargo xtask rebase-glibc`: `--onto X.Y [--from X.Y] [--build-check] [--exec CMD]`,
//! `--continue [--onto X.Y]`, `--abort [--onto X.Y]` or `--check`.

use anyhow::{bail, Result};
use git2::ErrorClass;

use super::patch_checks::{Checks, CompileCheck};
use super::{
    abort, check, continue_with, start_with, state, stopped_rebase, Options, RebaseOutcome, Resume,
};
use crate::cli::{self, Env};
use crate::series::Workspace;
use crate::util::exit::NeedsAttention;
use model::Release;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).multiple(true).args(["onto", "continue_", "abort", "check"])))]
pub(crate) struct Args {
    /// Move the series onto this release, writing patches/<X.Y>/ if every patch applies. With
    /// --continue or --abort: the stopped rebase onto it (needed when more than one is).
    #[arg(long, value_name = "X.Y", value_parser = cli::release(), conflicts_with = "check")]
    pub onto: Option<Release>,
    /// The series to move [default: the newest one in patches/].
    #[arg(long, value_name = "X.Y", value_parser = cli::release(), requires = "onto", conflicts_with_all = ["continue_", "abort"])]
    pub from: Option<Release>,
    /// After each applied patch (clean or continued), compile the loader files it touches in
    /// the release's real configuration; stop at the first that does not compile. Takes a
    /// compiled build tree of the release (a cold build the first time).
    #[arg(long, requires = "onto", conflicts_with_all = ["continue_", "abort"])]
    pub build_check: bool,
    /// After each applied patch (clean or continued), run CMD with `sh -c` in a work tree
    /// holding the release with the patches so far; stop at the first failure, like `git
    /// rebase --exec`. May be given more than once.
    #[arg(long, value_name = "CMD", requires = "onto", conflicts_with_all = ["continue_", "abort"])]
    pub exec: Vec<String>,
    /// Go on after resolving the conflicts in the work tree.
    #[arg(long = "continue", conflicts_with_all = ["abort", "check"])]
    pub continue_: bool,
    /// With --continue: the resolution deletes PATH (relative to the work tree). A file
    /// missing from the work tree is refused unless the patch deletes it or this says so.
    #[arg(long = "delete", value_name = "PATH", requires = "continue_")]
    pub delete: Vec<String>,
    /// Give up a stopped rebase; patches/ was never touched.
    #[arg(long, conflicts_with = "check")]
    pub abort: bool,
    /// Verify that every series applies exactly to its release, stays inside patches/scope,
    /// and re-exports byte for byte. Reads the store only; exits 0 when every series
    /// passes, 2 when one needs attention, 1 when something could not be read.
    #[arg(long)]
    pub check: bool,
    /// With --check: import the releases the store lacks (from Debian) instead of reporting
    /// them as MISSING.
    #[arg(long, requires = "check")]
    pub import_missing: bool,
}

impl Args {
    /// Runs the command; `compiled` is the build check `--build-check` asks for.
    pub(crate) fn run(self, env: &Env, compiled: Box<dyn CompileCheck>) -> Result<()> {
        let ws = if self.check && !self.import_missing {
            Workspace::open_read_only(env)?
        } else {
            Workspace::open(env)?
        };
        for said in ws.recover()?.into_iter().chain(state::recover(&ws)?) {
            diagln!("{said}");
        }
        if self.check {
            let report = check(&ws)?;
            out!("{}", report.render());
            if report.errors() {
                bail!("the check could not read or write what it needs (see ERROR above)");
            }
            if !report.ok() {
                return Err(NeedsAttention(format!(
                    "the series in {} need attention (see above)",
                    ws.patches_dir.display()
                ))
                .into());
            }
            return Ok(());
        }
        if self.abort {
            let onto = stopped_rebase(&ws, self.onto)?;
            let _lock = ws.lock_release(onto)?;
            match abort(&ws, onto)? {
                None => outln!("aborted the rebase onto glibc {onto}; patches/ is unchanged"),
                Some(dir) => outln!(
                    "dropped the state of the rebase onto glibc {onto}, which had already written {} when it was interrupted: that is the rebased series now (git restores the old one)",
                    dir.display()
                ),
            }
            return Ok(());
        }
        let mut options = options_for_cli(env, Resume::rebase_glibc(), compiled);
        options.checks = Checks {
            exec: self.exec,
            build_check: self.build_check,
        };
        let onto = match self.onto {
            Some(onto) if !self.continue_ => onto,
            named => stopped_rebase(&ws, named)?,
        };
        let _lock = ws.lock_release(onto)?;
        let outcome = if self.continue_ {
            continue_with(&ws, onto, &self.delete, options)
        } else {
            start_with(&ws, self.from, onto, options)
        }
        .map_err(|e| explain_unwritable_store(e, &ws))?;
        finish(outcome)
    }
}

/// Prints what a rebase did; a stop is a finding (exit status 2).
pub(crate) fn finish(outcome: RebaseOutcome) -> Result<()> {
    match outcome {
        RebaseOutcome::Written(written) => {
            out!("{}", written.render());
            Ok(())
        }
        RebaseOutcome::Stopped(stop) => {
            diag!("{}", stop.render());
            let why = if stop.is_conflict() {
                "the rebase stopped at a conflict"
            } else {
                "the rebase stopped: a check failed after a patch"
            };
            Err(NeedsAttention(why.into()).into())
        }
    }
}

/// The options of a rebase run from the command line: the build check given (the sysroot
/// stage's, `sysroot::compile_check::for_rebase`), logs beside the builds'; no checks (the
/// caller sets them for a start).
pub(crate) fn options_for_cli(
    env: &Env,
    resume: Resume,
    compiled: Box<dyn CompileCheck>,
) -> Options {
    Options {
        checks: Checks::default(),
        out: None,
        logs: env.cache.join("logs"),
        compiled: Some(compiled),
        resume,
        carried_records: None,
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
