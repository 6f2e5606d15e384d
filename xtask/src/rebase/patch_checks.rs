//! What runs after each applied patch of a rebase, like `git rebase --exec`: the build check
//! (`--build-check`: a [`CompileCheck`], which the sysroot stage provides from a compiled
//! build tree) and `--exec` commands, in a scratch work tree that holds the target release
//! with the patches so far.
//!
//! The scratch tree (`<rebase_dir>/.check-<pid>-*`) is written once per run and then kept in
//! step with each patch by writing only what it changed; it is never the stopped rebase's
//! work tree, so whatever a command leaves there (objects of an in-tree build, say) never
//! reaches a patch. When a check fails, the rebase stops with a fresh work tree holding the
//! patch applied, for the fix. A killed run's scratch tree is removed by the next run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use git2::{Oid, Repository};
use tempfile::TempDir;
use xshell::cmd;

use crate::store::worktree;
use crate::util::{logged, shell, staging};
use model::Release;

/// The staging kind of scratch trees in the rebase directory (`.check-<pid>-*`).
pub(crate) const SCRATCH: &str = "check";

/// The environment an `--exec` command gets, besides its work directory (the scratch tree).
pub(crate) const ENV_RELEASE: &str = "LD_FALLBACK_REBASE_RELEASE";
pub(crate) const ENV_PATCH: &str = "LD_FALLBACK_REBASE_PATCH";
pub(crate) const ENV_TREE: &str = "LD_FALLBACK_REBASE_TREE";

/// One patch to check: where it is in the series and what it changed.
pub(crate) struct Patch<'a> {
    pub number: usize,
    pub name: &'a str,
    /// The tree with this patch applied.
    pub tree: Oid,
    /// Paths this patch changes.
    pub touched: &'a [String],
    /// Paths the series so far changes (this patch included).
    pub series_touched: &'a [String],
}

/// What runs in the work tree after each applied patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checks {
    /// `--exec` commands, run by `sh -c`, in order.
    pub exec: Vec<String>,
    /// `--build-check`: the loader files the patch touches compile in the release's real
    /// configuration.
    pub build_check: bool,
}

impl Checks {
    pub(crate) fn is_empty(&self) -> bool {
        self.exec.is_empty() && !self.build_check
    }
}

/// `--build-check` after a patch: the C files it touches, compiled in the release's real
/// configuration. The sysroot stage provides it (`sysroot::compile_check`, from a compiled
/// build tree of the release); a rebase knows only what it answers.
pub trait CompileCheck {
    /// Compiles every object of `files` (paths of `.c` files) from the work tree `tree`,
    /// logging to `log`.
    fn check(
        &mut self,
        onto: Release,
        tree: &Path,
        files: &[String],
        log: &Path,
    ) -> Result<Compiled>;
}

/// What a compile check found.
pub enum Compiled {
    /// Every object compiled; what was compiled, for the summary.
    Compiled(String),
    /// Nothing the patch touches has an object in the release's build.
    Nothing(String),
    /// The report: which file, which object, the compiler's error and the log.
    Failed(String),
}

/// How a check ended.
pub(crate) enum ChecksOutcome {
    /// Every check passed; a line each, for the summary.
    Passed(Vec<String>),
    /// A check failed: the report (what failed, the output's tail, the log).
    Failed(String),
}

/// The checks of one run, with their scratch tree and compiled build tree, made when first
/// needed.
pub(crate) struct Checker {
    pub checks: Checks,
    rebase_dir: PathBuf,
    logs: PathBuf,
    scratch: Option<(TempDir, Oid)>,
    /// `None` when none was provided (then the build check is refused up front).
    build: Option<Box<dyn CompileCheck>>,
}

impl Checker {
    pub(crate) fn new(
        checks: Checks,
        rebase_dir: &Path,
        logs: &Path,
        build: Option<Box<dyn CompileCheck>>,
    ) -> Checker {
        Checker {
            checks,
            rebase_dir: rebase_dir.to_path_buf(),
            logs: logs.to_path_buf(),
            scratch: None,
            build,
        }
    }

    /// Runs the checks on `patch` (applied onto `onto`).
    pub(crate) fn run(
        &mut self,
        repo: &Repository,
        onto: Release,
        patch: &Patch<'_>,
    ) -> Result<ChecksOutcome> {
        if self.checks.is_empty() {
            return Ok(ChecksOutcome::Passed(Vec::new()));
        }
        let tree = self.scratch_holding(repo, patch.tree)?;
        std::fs::create_dir_all(&self.logs)
            .with_context(|| format!("cannot create {}", self.logs.display()))?;
        let stamp = crate::util::clock::now_secs();
        let mut passed = Vec::new();
        if self.checks.build_check {
            let files = files_to_compile(patch);
            let log = self.logs.join(format!(
                "rebase-{onto}-{:04}-build-check-{stamp}.log",
                patch.number
            ));
            let build = self
                .build
                .as_mut()
                .context("the build check needs a compiled glibc tree, and none was provided")?;
            if files.is_empty() {
                passed.push("build check: the patch touches no C file".to_string());
            } else {
                match build.check(onto, &tree, &files, &log)? {
                    Compiled::Compiled(line) | Compiled::Nothing(line) => passed.push(line),
                    Compiled::Failed(report) => return Ok(ChecksOutcome::Failed(report)),
                }
            }
        }
        for (i, command) in self.checks.exec.clone().iter().enumerate() {
            let log = self.logs.join(format!(
                "rebase-{onto}-{:04}-exec{}-{stamp}.log",
                patch.number,
                i + 1
            ));
            let started = Instant::now();
            let sh = shell::in_dir(&tree)?;
            let mut cmd = Command::from(
                cmd!(sh, "sh -c {command}")
                    .env(ENV_RELEASE, onto.version())
                    .env(ENV_PATCH, patch.name)
                    .env(ENV_TREE, &tree),
            );
            // logged::run_to_end makes it die with us, and all it starts.
            let label = format!("exec `{command}` after {}", patch.name);
            let status = logged::run_to_end(&mut cmd, &log, &label, |_| None, None)?;
            if !status.success() {
                return Ok(ChecksOutcome::Failed(format!(
                    "exec `{command}` failed ({status}) after {}:\n{}  (it ran in a scratch copy of the work tree named below; full log: {})",
                    patch.name,
                    tail(&log),
                    log.display()
                )));
            }
            passed.push(format!(
                "exec `{command}`: ok in {:.1} s",
                started.elapsed().as_secs_f64()
            ));
        }
        Ok(ChecksOutcome::Passed(passed))
    }

    /// The scratch tree, made to hold `tree`.
    fn scratch_holding(&mut self, repo: &Repository, tree: Oid) -> Result<PathBuf> {
        match &mut self.scratch {
            Some((dir, holds)) => {
                if *holds != tree {
                    worktree::update_tree(repo, *holds, tree, dir.path())
                        .with_context(|| format!("cannot update {}", dir.path().display()))?;
                    *holds = tree;
                }
                Ok(dir.path().to_path_buf())
            }
            None => {
                let dir = staging::tempdir_in(&self.rebase_dir, SCRATCH)?;
                diagln!(
                    "writing the work tree the checks run in: {}",
                    dir.path().display()
                );
                worktree::write_tree(repo, tree, dir.path())
                    .context("cannot write the work tree the checks run in")?;
                let path = dir.path().to_path_buf();
                self.scratch = Some((dir, tree));
                Ok(path)
            }
        }
    }
}

/// The C files the build check compiles after a patch: those it touches, and when it touches
/// a header, every C file the series touches so far (they are the ones that include the
/// series' headers).
pub(crate) fn files_to_compile(patch: &Patch<'_>) -> Vec<String> {
    let c = |paths: &[String]| -> Vec<String> {
        paths
            .iter()
            .filter(|p| p.ends_with(".c"))
            .cloned()
            .collect()
    };
    let touches_header = patch.touched.iter().any(|p| p.ends_with(".h"));
    let mut files = if touches_header {
        c(patch.series_touched)
    } else {
        c(patch.touched)
    };
    files.sort();
    files.dedup();
    files
}

/// The last lines of a log, indented, for a report.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in &lines[lines.len().saturating_sub(20)..] {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Paths that differ between two trees (old and new names).
pub(crate) fn changed_paths(repo: &Repository, old: Oid, new: Oid) -> Result<Vec<String>> {
    let diff = worktree::tree_diff(repo, old, new)?;
    let mut paths = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path() {
                let p = p.to_string_lossy().into_owned();
                if !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_change_compiles_what_the_series_touched() {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let series = strings(&["elf/dl-load.c", "elf/rtld.c", "NEWS", "include/link.h"]);
        let only_c = strings(&["elf/rtld.c", "NEWS"]);
        let compiled = |touched: &[String]| {
            files_to_compile(&Patch {
                number: 1,
                name: "p",
                tree: Oid::zero(),
                touched,
                series_touched: &series,
            })
        };
        assert_eq!(compiled(&only_c), ["elf/rtld.c"]);
        let header = strings(&["include/link.h"]);
        assert_eq!(compiled(&header), ["elf/dl-load.c", "elf/rtld.c"]);
        assert!(compiled(&strings(&["elf/Makefile"])).is_empty());
    }
}
