//! Moving a patch series onto another release with a 3-way merge (`cargo xtask
//! rebase-glibc`): start, stop at a conflict or a failed check, continue or abort, and check
//! that every series still applies to its own release.
//!
//! One patch at a time: merge it ([`crate::merge::merge_commit`], NEWS entries placed by
//! rule), replay the recorded resolutions that match what the merge produced ([`records`]),
//! commit, run the checks after it ([`patch_checks`]: `--build-check`, `--exec`). A conflict no
//! record resolves, or a failed check, stops the rebase with a work tree to fix and state to
//! `--continue` from ([`state`]); what the human made there is recorded, and written with the
//! series when every patch went through.

pub(crate) mod command;
pub(crate) mod intake;
pub(crate) mod outcome;
pub mod patch_checks;
pub(crate) mod range_diff;
pub mod records;
pub mod series_check;
pub(crate) mod state;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::Oid;

pub use series_check::check;
pub(crate) use series_check::check_release;

use crate::merge::{self, applied, commit_like, Merged, PatchFate};
use crate::series::{Series, Workspace};
use crate::util::{durable, fault, together};
use model::Release;
use patch_checks::{Checker, Checks, CompileCheck};
use records::{Kind, Resolution, Resolutions};
use state::{ConflictFile, RebaseState, Stop, Used};

pub use outcome::RebaseOutcome;
pub(crate) use outcome::Resume;
use outcome::{Conflict, RecordsWritten, StopReport, StopWhy, Written};

/// How a rebase runs, besides what to move where.
pub struct Options {
    /// What runs after each patch (taken from the state by `--continue`).
    pub checks: Checks,
    /// Where to write the series (`None`: `patches/<onto>/`; taken from the state by
    /// `--continue`).
    pub out: Option<PathBuf>,
    /// The build check (the sysroot stage's, from a compiled tree); `None`: refused.
    pub compiled: Option<Box<dyn CompileCheck>>,
    /// Where the checks' logs go.
    pub logs: PathBuf,
    pub resume: Resume,
    /// A `patches/`-like directory whose recorded resolutions for the target are replayed
    /// too, over those of patches/: an update's candidate, where the resolutions made in a
    /// run whose verification failed wait for the next run.
    pub carried_records: Option<PathBuf>,
}

impl Options {
    /// No checks, the series into `patches/<onto>/`.
    pub fn plain(ws: &Workspace) -> Options {
        Options {
            checks: Checks::default(),
            out: None,
            compiled: None,
            logs: ws.rebase_dir.join("logs"),
            resume: Resume::rebase_glibc(),
            carried_records: None,
        }
    }
}

/// Moves the series of `from` (default: the newest) onto `onto`, with no checks.
pub fn start(ws: &Workspace, from: Option<Release>, onto: Release) -> Result<RebaseOutcome> {
    start_with(ws, from, onto, Options::plain(ws))
}

/// Moves the series of `from` (default: the newest) onto `onto`.
pub fn start_with(
    ws: &Workspace,
    from: Option<Release>,
    onto: Release,
    options: Options,
) -> Result<RebaseOutcome> {
    if state::state_dir(ws, onto).join("state").exists() {
        bail!(
            "a rebase onto glibc {onto} is already in progress: finish it with `{}` or drop it with `{}`",
            options.resume.continue_,
            options.resume.abort
        );
    }
    // What --check would refuse is not moved (a patch cut short would be written smaller).
    let from = match from {
        Some(release) => release,
        None => ws.newest_release_with_series()?,
    };
    let from = series_check::passing_series(ws, from)?;
    let (_, commits) = ws.commit_series(&from)?;
    let head = ws.store.ensure_release(onto)?;
    let checks = options.checks.clone();
    let out = options.out.clone();
    let mut run = Run::new(ws, &from, onto, commits, checks, out, options)?;
    let mut steps = Vec::new();
    let stopped = run.pick(0, head, &mut steps)?;
    fault::point("rebase:picked");
    match stopped {
        None => run.finish(steps, Vec::new()),
        Some(stopped) => run.stop(stopped, steps),
    }
}

/// Takes the resolved work tree of the stopped rebase onto `onto` and goes on, with no build
/// check available.
pub fn continue_rebase(
    ws: &Workspace,
    onto: Release,
    deletions: &[String],
) -> Result<RebaseOutcome> {
    continue_with(ws, onto, deletions, Options::plain(ws))
}

/// Takes the resolved work tree of the stopped rebase onto `onto` and goes on. `deletions`
/// are the paths the user said the resolution deletes (`--delete`); see [`intake`] for what
/// else is taken and refused. What the user made of the produced files is recorded; the
/// checks of the state run on the patch again.
pub fn continue_with(
    ws: &Workspace,
    onto: Release,
    deletions: &[String],
    options: Options,
) -> Result<RebaseOutcome> {
    let (state, from) = RebaseState::load(ws, onto)?;
    let (_, commits) = ws.commit_series(&from)?;
    let repo = ws.store.repo();
    let original = repo
        .find_commit(commits[state.at])
        .context("the stopped patch's commit is missing from the store")?;
    let tree_dir = state::tree_dir(ws, onto);
    let taken = intake::take(
        repo,
        &intake::Stopped {
            tree_dir: &tree_dir,
            recorded: state.tree,
            conflicts: &state.conflicts,
            patch: &original,
            patch_name: &from.patches[state.at].name,
            store_dir: ws.store.dir(),
        },
        deletions,
    )?;
    fault::point("continue:taken");
    let mut run = Run::new(
        ws,
        &from,
        onto,
        commits.clone(),
        state.checks.clone(),
        state.out.clone(),
        options,
    )?;
    run.used = state.used.clone();
    let mut notes = taken.notes;
    notes.extend(run.record(state.at, state.produced, taken.tree, &state.conflicts)?);
    let mut steps = state.steps;
    let head = match commit_like(repo, &original, state.head, taken.tree)? {
        Some(id) => {
            if let Some(failure) = run.check(state.at, state.head, taken.tree)? {
                let stopped = Stopped {
                    at: state.at,
                    head: state.head,
                    stop: Stop::Check(failure),
                    produced: state.produced,
                    written: taken.tree,
                    conflicts: state.conflicts,
                    files: Vec::new(),
                    notes,
                };
                return run.stop(stopped, steps);
            }
            steps.push(PatchFate::Applied(id));
            id
        }
        None => {
            steps.push(PatchFate::Dropped);
            state.head
        }
    };
    let stopped = run.pick(state.at + 1, head, &mut steps)?;
    fault::point("rebase:picked");
    match stopped {
        None => run.finish(steps, notes),
        Some(mut stopped) => {
            notes.append(&mut stopped.notes);
            stopped.notes = notes;
            run.stop(stopped, steps)
        }
    }
}

/// Drops the state of the stopped rebase onto `onto`; an error if there is none. Returns the
/// directory the rebase had already written its series into, when it was interrupted after
/// that write (so that no one says the series is unchanged).
pub fn abort(ws: &Workspace, onto: Release) -> Result<Option<PathBuf>> {
    let written = state::written_before_abort(ws, onto);
    state::remove(ws, onto)?;
    Ok(written)
}

/// Where and why picking stopped.
struct Stopped {
    at: usize,
    head: Oid,
    stop: Stop,
    produced: Oid,
    /// What the work tree is written from: `produced` with the matching records replayed.
    written: Oid,
    conflicts: Vec<String>,
    /// The conflicts no record resolved.
    files: Vec<ConflictFile>,
    notes: Vec<String>,
}

/// One rebase run: the series, what it replays and records, and its checks.
struct Run<'a> {
    ws: &'a Workspace,
    from: &'a Series,
    onto: Release,
    commits: Vec<Oid>,
    /// The target release's tree: what "the series so far touches" is measured against.
    base_tree: Oid,
    /// `patches/resolutions/<onto>/` as the run found it.
    records: Resolutions,
    used: Used,
    checker: Checker,
    /// What the checks said per patch (this run only), for the summary.
    check_lines: Vec<(usize, Vec<String>)>,
    out: Option<PathBuf>,
    resume: Resume,
}

impl<'a> Run<'a> {
    fn new(
        ws: &'a Workspace,
        from: &'a Series,
        onto: Release,
        commits: Vec<Oid>,
        checks: Checks,
        out: Option<PathBuf>,
        options: Options,
    ) -> Result<Run<'a>> {
        if checks.build_check && options.compiled.is_none() {
            bail!("the build check needs a compiled glibc tree, and none was provided");
        }
        let base = ws.store.ensure_release(onto)?;
        let base_tree = ws
            .store
            .repo()
            .find_commit(base)
            .with_context(|| format!("the store's {} is not a commit", onto.tag()))?
            .tree_id();
        // What --check refuses is not replayed.
        let mut records = Resolutions::load(&ws.patches_dir, onto)?;
        if let Some(carried) = &options.carried_records {
            for record in Resolutions::load(carried, onto)?.list {
                records.put(record);
            }
        }
        records.keep_rules(&ws.scope()?).with_context(|| {
                format!(
                    "refusing to replay the recorded resolutions in {}: `cargo xtask rebase-glibc --check` does not pass them",
                records::dir(&ws.patches_dir, onto).display()
            )
        })?;
        let checker = Checker::new(checks, &ws.rebase_dir, &options.logs, options.compiled);
        Ok(Run {
            ws,
            from,
            onto,
            commits,
            base_tree,
            records,
            used: Used::default(),
            checker,
            check_lines: Vec::new(),
            out,
            resume: options.resume,
        })
    }

    fn repo(&self) -> &'a git2::Repository {
        self.ws.store.repo()
    }

    fn labels(&self, at: usize) -> (String, String) {
        (
            format!("glibc {} (+ patches so far)", self.onto),
            self.from.patches[at].name.clone(),
        )
    }

    /// Picks patches `at..` onto `head` until one stops the rebase (`Some`) or all went
    /// through (`None`).
    fn pick(
        &mut self,
        start: usize,
        mut head: Oid,
        steps: &mut Vec<PatchFate>,
    ) -> Result<Option<Stopped>> {
        let repo = self.repo();
        for at in start..self.commits.len() {
            let commit = repo
                .find_commit(self.commits[at])
                .context("a commit of the series is missing from the store")?;
            let (produced, tree, files, conflicts) = match merge::merge_commit(repo, &commit, head)?
            {
                Merged::Clean(produced) => {
                    let (tree, _) = self.replay(at, produced)?;
                    (produced, tree, Vec::new(), Vec::new())
                }
                Merged::Conflict(index) => {
                    let (ours, theirs) = self.labels(at);
                    let (files, produced) = state::conflict_tree(repo, &index, (&ours, &theirs))?;
                    let (tree, resolved) = self.replay(at, produced)?;
                    let conflicts: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
                    let open: Vec<ConflictFile> = files
                        .into_iter()
                        .filter(|f| !resolved.contains(&f.path))
                        .collect();
                    (produced, tree, open, conflicts)
                }
            };
            if !files.is_empty() {
                return Ok(Some(Stopped {
                    at,
                    head,
                    stop: Stop::Conflict,
                    produced,
                    written: tree,
                    conflicts,
                    files,
                    notes: Vec::new(),
                }));
            }
            match commit_like(repo, &commit, head, tree)? {
                Some(new) => {
                    if let Some(failure) = self.check(at, head, tree)? {
                        return Ok(Some(Stopped {
                            at,
                            head,
                            stop: Stop::Check(failure),
                            produced,
                            written: tree,
                            conflicts,
                            files: Vec::new(),
                            notes: Vec::new(),
                        }));
                    }
                    head = new;
                    steps.push(PatchFate::Applied(new));
                }
                None => steps.push(PatchFate::Dropped),
            }
        }
        Ok(None)
    }

    /// `produced` with every recorded resolution of patch `at` whose key matches replayed;
    /// and the paths they resolved.
    fn replay(&mut self, at: usize, produced: Oid) -> Result<(Oid, Vec<String>)> {
        let repo = self.repo();
        let name = &self.from.patches[at].name;
        let tree = repo
            .find_tree(produced)
            .context("a merged tree is missing from the store")?;
        let matching: Vec<Resolution> = self
            .records
            .matching(name, &tree)
            .into_iter()
            .cloned()
            .collect();
        if matching.is_empty() {
            return Ok((produced, Vec::new()));
        }
        let mut update = git2::build::TreeUpdateBuilder::new();
        let mut paths = Vec::new();
        for record in matching {
            let entry = tree
                .get_path(Path::new(&record.path))
                .context("a matching resolution's file is in the tree by construction")?;
            let blob = repo
                .find_blob(entry.id())
                .with_context(|| format!("the blob of {} is missing", record.path))?;
            match record.replay(blob.content())? {
                Some(bytes) => {
                    let id = repo
                        .blob(&bytes)
                        .context("cannot store a replayed resolution")?;
                    update.upsert(&record.path, id, merge::file_mode(entry.filemode() as u32));
                }
                None => {
                    update.remove(&record.path);
                }
            }
            paths.push(record.path.clone());
            self.used.set.put(record);
        }
        let tree = update
            .create_updated(repo, &tree)
            .context("cannot apply the recorded resolutions")?;
        Ok((tree, paths))
    }

    /// Records what the human made of patch `at`: every file that differs between what the
    /// rebase produced and the taken tree. Returns notes for what could not be recorded.
    fn record(
        &mut self,
        at: usize,
        produced: Oid,
        taken: Oid,
        conflicts: &[String],
    ) -> Result<Vec<String>> {
        let repo = self.repo();
        let name = self.from.patches[at].name.clone();
        let (produced_tree, taken_tree) = (
            repo.find_tree(produced)
                .context("the produced tree of the stopped rebase is missing from the store")?,
            repo.find_tree(taken)
                .context("the taken work tree is missing from the store")?,
        );
        let bytes = |tree: &git2::Tree<'_>, path: &str| -> Result<Option<Vec<u8>>> {
            let Ok(entry) = tree.get_path(Path::new(path)) else {
                return Ok(None);
            };
            let blob = repo
                .find_blob(entry.id())
                .with_context(|| format!("the blob of {path} is missing"))?;
            Ok(Some(blob.content().to_vec()))
        };
        let mut notes = Vec::new();
        let mut unrecorded = Vec::new();
        for path in patch_checks::changed_paths(repo, produced, taken)? {
            let Some(old) = bytes(&produced_tree, &path)? else {
                unrecorded.push(format!(
                    "{path} (new: no text the rebase produced to key it by)"
                ));
                continue;
            };
            let new = bytes(&taken_tree, &path)?;
            let kind = if conflicts.contains(&path) {
                Kind::Conflict
            } else {
                Kind::FixUp
            };
            let Some(record) =
                Resolution::make(&name, &path, kind, self.from.base, &old, new.as_deref())
            else {
                unrecorded.push(format!("{path} (not UTF-8 text)"));
                continue;
            };
            // A replayed record the human left alone is the record's, not theirs.
            let replayed = self.used.set.list.contains(&record);
            if !replayed && !self.used.made.iter().any(|(p, f)| *p == name && *f == path) {
                self.used.made.push((name.clone(), path.clone()));
            }
            self.used.set.put(record);
        }
        if !unrecorded.is_empty() {
            notes.push(format!(
                "not recorded (the next rebase stops here again): {}",
                unrecorded.join(", ")
            ));
        }
        Ok(notes)
    }

    /// The checks after patch `at` (picked onto `head`, giving `tree`): `Some(report)` when
    /// one failed.
    fn check(&mut self, at: usize, head: Oid, tree: Oid) -> Result<Option<String>> {
        if self.checker.checks.is_empty() {
            return Ok(None);
        }
        let repo = self.repo();
        let head_tree = repo
            .find_commit(head)
            .context("the commit picked onto is missing from the store")?
            .tree_id();
        let touched = patch_checks::changed_paths(repo, head_tree, tree)?;
        let series_touched = patch_checks::changed_paths(repo, self.base_tree, tree)?;
        let patch = patch_checks::Patch {
            number: at + 1,
            name: &self.from.patches[at].name,
            tree,
            touched: &touched,
            series_touched: &series_touched,
        };
        diagln!(
            "checking patch {}/{} {}",
            at + 1,
            self.from.patches.len(),
            patch.name
        );
        match self.checker.run(repo, self.onto, &patch)? {
            patch_checks::ChecksOutcome::Passed(lines) => {
                self.check_lines.push((at, lines));
                Ok(None)
            }
            patch_checks::ChecksOutcome::Failed(report) => Ok(Some(report)),
        }
    }

    /// The series' guard over the patches so far (see `series::guard`).
    fn check_scope(&self, steps: &[PatchFate]) -> Result<()> {
        let scope = self.ws.scope()?;
        let named = named_steps(self.from, steps);
        crate::series::guard(&scope, self.repo(), &named).with_context(|| {
            format!(
                "refusing to write the series for glibc {}; {} is unchanged",
                self.onto,
                self.ws.patches_dir.display()
            )
        })
    }

    /// Saves the state at the stop and says what to do.
    fn stop(&mut self, stopped: Stopped, steps: Vec<PatchFate>) -> Result<RebaseOutcome> {
        self.check_scope(&steps)?;
        let state = RebaseState {
            onto: self.onto,
            head: stopped.head,
            at: stopped.at,
            steps,
            stop: stopped.stop.clone(),
            conflicts: stopped.conflicts.clone(),
            tree: stopped.written,
            produced: stopped.produced,
            checks: self.checker.checks.clone(),
            out: self.out.clone(),
            used: self.used.clone(),
        };
        state.save(self.ws, self.from)?;
        let patch = &self.from.patches[stopped.at];
        let why = match &stopped.stop {
            Stop::Conflict => StopWhy::Conflict(
                stopped
                    .files
                    .iter()
                    .map(|file| Conflict {
                        path: file.path.clone(),
                        hunks: file.hunks.clone(),
                        stale_record: self.records.for_path(&patch.name, &file.path).next().map(
                            |_| {
                                records::dir(&self.ws.patches_dir, self.onto).join(format!(
                                    "{}{}",
                                    patch.name,
                                    records::SUFFIX
                                ))
                            },
                        ),
                    })
                    .collect(),
            ),
            Stop::Check(failure) => StopWhy::Check(failure.clone()),
        };
        Ok(RebaseOutcome::Stopped(StopReport {
            onto: self.onto,
            notes: stopped.notes,
            so_far: self.so_far(),
            number: stopped.at + 1,
            total: self.from.patches.len(),
            patch: patch.name.clone(),
            why,
            tree: state::tree_dir(self.ws, self.onto),
            resume: self.resume.clone(),
            patches_dir: self.ws.patches_dir.clone(),
        }))
    }

    /// What happened to the patches before a stop, when a record or a check did something.
    fn so_far(&self) -> Vec<(String, Vec<String>)> {
        self.from
            .patches
            .iter()
            .enumerate()
            .map(|(at, patch)| (patch.name.clone(), self.patch_notes(at)))
            .filter(|(_, notes)| !notes.is_empty())
            .collect()
    }

    /// Lines under patch `at` in a summary: NEWS by rule, resolutions, checks.
    fn patch_notes(&self, at: usize) -> Vec<String> {
        let mut notes = Vec::new();
        let name = &self.from.patches[at].name;
        let adds_news = self
            .repo()
            .find_commit(self.commits[at])
            .ok()
            .and_then(|c| merge::adds_news_entry(self.repo(), &c).ok())
            .unwrap_or(false);
        if adds_news {
            notes.push(format!(
                "NEWS: its entry placed first under glibc {}'s \"Major new features:\" (by rule, not merged)",
                self.onto
            ));
        }
        let mut used: Vec<&Resolution> = self
            .used
            .set
            .list
            .iter()
            .filter(|r| r.patch == *name)
            .collect();
        used.sort_by(|a, b| a.path.cmp(&b.path));
        for r in used {
            let made = self
                .used
                .made
                .iter()
                .any(|(p, f)| p == name && *f == r.path);
            if made {
                notes.push(format!(
                    "recorded: your resolution, the {} (replayed the next time)",
                    r.kind.describe(&r.path)
                ));
            } else {
                notes.push(format!(
                    "resolved from record: the {}",
                    r.kind.describe(&r.path)
                ));
            }
        }
        for (_, lines) in self.check_lines.iter().filter(|(a, _)| *a == at) {
            notes.extend(lines.iter().cloned());
        }
        notes
    }

    /// Every patch went through: writes the resolutions and the series, drops the state.
    fn finish(&mut self, steps: Vec<PatchFate>, notes: Vec<String>) -> Result<RebaseOutcome> {
        self.check_scope(&steps)?;
        let onto = self.onto;
        let commits = applied(&steps);
        if commits.is_empty() {
            bail!("every patch of the series is already in glibc {onto}: nothing to write");
        }
        let new = Series::from_commits(self.repo(), onto, &commits)?;
        let records = self.resolutions_to_keep();
        // Against patches/ as it is: records carried from elsewhere (an update's candidate)
        // are a change of patches/ even when this run met them all.
        let records_changed =
            records.texts(onto) != Resolutions::load(&self.ws.patches_dir, onto)?.texts(onto);
        let dir = self.out.clone().unwrap_or_else(|| self.ws.series_dir(onto));
        // The records go with the series: into patches/, or into the candidate `patches/`
        // the series is written to (update-release), whole, where they wait with it for the
        // verification instead of reaching patches/ before it.
        let records_root = match &self.out {
            Some(out) => out
                .parent()
                .context("the series' directory has no parent")?
                .to_path_buf(),
            None => self.ws.patches_dir.clone(),
        };
        let write_records = records_changed || self.out.is_some();
        // A continued rebase has a state to drop once the series is written: until then a
        // marker says that the write may have happened (see `state::written_before_abort`).
        let has_state = state::state_dir(self.ws, onto).join("state").exists();
        if has_state {
            state::mark_finishing(self.ws, onto, &dir, &new)?;
        }
        publish(
            &new,
            &dir,
            write_records.then_some((&records, records_root.as_path())),
            onto,
        )?;
        fault::point("rebase:written");
        if has_state {
            state::remove(self.ws, onto)?;
        }
        let per_patch: Vec<Vec<String>> = (0..self.from.patches.len())
            .map(|at| self.patch_notes(at))
            .collect();
        let summary = range_diff::summarize(self.from, onto, &new, &steps, &per_patch);
        let records = records_changed.then(|| RecordsWritten {
            dir: records::dir(&records_root, onto),
            count: records.list.len(),
            stale: self
                .records
                .list
                .iter()
                .filter(|r| !records.list.contains(r))
                .count(),
            from: self.from.base,
        });
        Ok(RebaseOutcome::Written(Written {
            notes,
            summary,
            records,
            series_dir: dir,
        }))
    }

    /// The resolutions `patches/resolutions/<onto>/` keeps: those this rebase used or made,
    /// and those made for rebases from other releases (this one cannot tell whether they
    /// are stale). A record from the same source that this rebase never met is stale.
    fn resolutions_to_keep(&self) -> Resolutions {
        let mut kept = Resolutions {
            list: self
                .records
                .list
                .iter()
                .filter(|r| r.from != self.from.base)
                .cloned()
                .collect(),
        };
        for r in &self.used.set.list {
            kept.put(r.clone());
        }
        kept
    }
}

/// Writes `series` into `series_dir` and, when given, `records` as the whole of
/// `<records root>/resolutions/<onto>/`: both or neither, whatever fails or kills the run
/// (`util::together`). Each directory is replaced whole, so one holding files neither wrote
/// is refused before anything is written.
pub(crate) fn publish(
    series: &Series,
    series_dir: &Path,
    records: Option<(&Resolutions, &Path)>,
    onto: Release,
) -> Result<()> {
    crate::series::refuse_foreign_files(series_dir)?;
    let Some((records, records_root)) = records else {
        return series.write(series_dir);
    };
    let records_dir = records::dir(records_root, onto);
    records::refuse_foreign_files(&records_dir)?;
    let staged_series = series.stage(series_dir)?;
    let records_parent = records_dir
        .parent()
        .context("records have a parent")?
        .to_path_buf();
    let staged_records = match records.stage(records_root, onto) {
        Ok(staged) => staged,
        Err(e) => {
            // Staging made `resolutions/`; nothing else is to be left of this write.
            let _ = std::fs::remove_dir(&records_parent);
            return Err(e);
        }
    };
    fault::point("rebase:staged");
    let journal_dir = series_dir
        .parent()
        .context("the series' directory has no parent")?;
    let pairs = [
        together::Pair {
            staged: staged_series.keep(),
            dest: series_dir.to_path_buf(),
        },
        together::Pair {
            staged: staged_records.keep(),
            dest: records_dir.clone(),
        },
    ];
    if let Err(e) = together::replace(journal_dir, onto.version(), &pairs) {
        for pair in &pairs {
            let _ = durable::remove_tree(&pair.staged);
        }
        return Err(e);
    }
    // No records: the directory goes (it was swapped in empty), and `resolutions/` with it
    // when it held nothing else.
    if records.list.is_empty() {
        let _ = std::fs::remove_dir(&records_dir);
        let _ = std::fs::remove_dir(&records_parent);
    }
    Ok(())
}

/// The patches of `from` that went through so far, named, for the scope guard.
fn named_steps(from: &Series, steps: &[PatchFate]) -> Vec<(String, Oid)> {
    from.patches
        .iter()
        .zip(steps)
        .filter_map(|(patch, step)| match step {
            PatchFate::Applied(id) => Some((patch.name.clone(), *id)),
            PatchFate::Dropped => None,
        })
        .collect()
}

/// The stopped rebase `--continue`/`--abort` mean: the one named, or the only one.
pub(crate) fn stopped_rebase(ws: &Workspace, onto: Option<Release>) -> Result<Release> {
    if let Some(onto) = onto {
        return Ok(onto);
    }
    match state::in_progress(ws).as_slice() {
        [one] => Ok(*one),
        [] => bail!(
            "no rebase is in progress (state lives in {}): there is nothing to continue or abort",
            ws.rebase_dir.display()
        ),
        many => bail!(
            "rebases onto {} are in progress: say which with --onto X.Y",
            model::listed(many)
        ),
    }
}
