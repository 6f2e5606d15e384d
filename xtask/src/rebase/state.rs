//! A stopped rebase: `<rebase_dir>/<X.Y>` holds `state` (where and why it stopped, the work
//! tree as written and as the rebase produced it, the checks to run after each patch),
//! `from/` (a copy of the series being moved), `resolutions/` (the recorded resolutions
//! replayed or made so far, written with the series at the end) and `tree/` (the target
//! release with the patches so far, and either conflict markers in the files the next patch
//! could not merge, or that patch applied when a check after it failed).
//!
//! Every change of the state is atomic. `<X.Y>` is a symlink to a generation directory
//! `.state-X.Y-<pid>-<random>/`: a new generation is written whole and flushed, then published
//! by renaming a new symlink over `<X.Y>` (one rename(2)); only then is the old generation
//! deleted. Removing the state unlinks `<X.Y>` before deleting anything. So `<X.Y>` is at
//! every moment absent or a complete generation, whatever kills us; what a kill leaves is an
//! unreferenced generation, which the next run removes and says so ([`recover`]).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Index, IndexEntry, MergeFileOptions, Oid, Repository};

use crate::merge::{file_mode, PatchFate};
use crate::rebase::patch_checks::Checks;
use crate::rebase::records::Resolutions;
use crate::series::markers::is_marker_line;
use crate::series::Series;
use crate::series::Workspace;
use crate::store::worktree;
use crate::util::{durable, fault, staging};
use model::{supported, Release};

/// A rebase's state file: a line per patch and per conflict, written by the rebase.
const STATE_LIMIT: model::file::Limit = model::file::Limit {
    bytes: 16 << 20,
    what: "a rebase's state",
};

pub(crate) struct RebaseState {
    pub onto: Release,
    /// The target-release commit the stopped patch is being picked onto.
    pub head: Oid,
    /// Index of the stopped patch in the source series.
    pub at: usize,
    /// What happened to the patches before it.
    pub steps: Vec<PatchFate>,
    /// Why it stopped.
    pub stop: Stop,
    /// Paths that had conflicts when the rebase stopped (none after a failed check).
    pub conflicts: Vec<String>,
    /// The work tree as it was written, as a tree in the store: what `--continue` compares
    /// the resolved tree against, to name every file that appeared, vanished or changed.
    pub tree: Oid,
    /// What the rebase produced for the stopped patch before any recorded resolution was
    /// replayed (conflict markers included): the keys of the resolutions `--continue`
    /// records.
    pub produced: Oid,
    /// What runs after each applied patch; `--continue` runs it too.
    pub checks: Checks,
    /// Where the series is written when every patch went through (`None`: `patches/<X.Y>/`).
    pub out: Option<PathBuf>,
    /// The recorded resolutions this rebase replayed or made so far (see [`Used`]).
    pub used: Used,
}

/// Why a rebase stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The patch does not merge.
    Conflict,
    /// The patch merged, but a check after it failed; the text says which.
    Check(String),
}

/// The recorded resolutions a rebase replayed or made, and which of them a human made in this
/// rebase (patch, path), for the summary.
#[derive(Debug, Clone, Default)]
pub(crate) struct Used {
    pub set: Resolutions,
    pub made: Vec<(String, String)>,
}

/// One conflicting file: its path and each conflict region, with its first line number.
pub(crate) struct ConflictFile {
    pub path: String,
    pub hunks: Vec<(usize, String)>,
}

pub(crate) fn state_dir(ws: &Workspace, onto: Release) -> PathBuf {
    ws.rebase_dir.join(onto.version())
}

pub(crate) fn tree_dir(ws: &Workspace, onto: Release) -> PathBuf {
    state_dir(ws, onto).join("tree")
}

/// Target releases with a rebase in progress.
pub(crate) fn in_progress(ws: &Workspace) -> Vec<Release> {
    supported()
        .iter()
        .copied()
        .filter(|r| state_dir(ws, *r).join("state").is_file())
        .collect()
}

/// In a state generation: the resolutions replayed or made so far.
const USED_DIR: &str = "resolutions";

impl RebaseState {
    /// Writes state, series copy, resolutions so far and the work tree (`self.tree`) as a
    /// new generation, and publishes it (see the module docs).
    pub(crate) fn save(&self, ws: &Workspace, from: &Series) -> Result<()> {
        std::fs::create_dir_all(&ws.rebase_dir)
            .with_context(|| format!("cannot create {}", ws.rebase_dir.display()))?;
        // Kept (not deleted on drop) only once it is whole: a write that fails (a full disk,
        // the file size limit) removes its half generation itself.
        let staged = tempfile::Builder::new()
            .prefix(&format!(
                ".state-{}-{}-",
                self.onto.version(),
                std::process::id()
            ))
            .tempdir_in(&ws.rebase_dir)
            .with_context(|| {
                format!(
                    "cannot create a state directory in {}",
                    ws.rebase_dir.display()
                )
            })?;
        let generation = staged.path();
        from.write(&generation.join("from"))?;
        fault::point("rebase-save:from-written");
        self.used
            .set
            .write_files(&generation.join(USED_DIR), self.onto)?;
        worktree::write_tree(ws.store.repo(), self.tree, &generation.join("tree"))
            .context("cannot write the rebase's work tree")?;
        fault::point("rebase-save:tree-written");
        durable::write_synced(&generation.join("state"), self.to_text().as_bytes())?;
        durable::sync_dir(generation)?;
        fault::point("rebase-save:state-written");
        publish(ws, self.onto, &staged.keep())
    }

    fn to_text(&self) -> String {
        let mut text = format!(
            "onto {}\nhead {}\nat {}\ntree {}\nproduced {}\n",
            self.onto.version(),
            self.head,
            self.at,
            self.tree,
            self.produced
        );
        match &self.stop {
            Stop::Conflict => text.push_str("stopped conflict\n"),
            Stop::Check(what) => {
                for line in what.lines() {
                    text.push_str(&format!("stopped check {line}\n"));
                }
            }
        }
        for c in &self.conflicts {
            text.push_str(&format!("conflict {c}\n"));
        }
        for step in &self.steps {
            match step {
                PatchFate::Applied(id) => text.push_str(&format!("step applied {id}\n")),
                PatchFate::Dropped => text.push_str("step dropped\n"),
            }
        }
        if self.checks.build_check {
            text.push_str("build-check yes\n");
        }
        for command in &self.checks.exec {
            // One line each: a newline in a command would be read back as two commands.
            text.push_str(&format!("exec {}\n", command.replace('\n', " ")));
        }
        if let Some(out) = &self.out {
            text.push_str(&format!("out {}\n", out.display()));
        }
        for (patch, path) in &self.used.made {
            text.push_str(&format!("made {patch} {path}\n"));
        }
        text
    }

    pub(crate) fn load(ws: &Workspace, onto: Release) -> Result<(RebaseState, Series)> {
        let dir = state_dir(ws, onto);
        let path = dir.join("state");
        let text = match model::file::read_regular_text(&path, STATE_LIMIT) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "no rebase onto glibc {onto} is in progress ({} does not exist)",
                path.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let mut state = RebaseState {
            onto,
            head: Oid::zero(),
            at: 0,
            steps: Vec::new(),
            stop: Stop::Conflict,
            conflicts: Vec::new(),
            tree: Oid::zero(),
            produced: Oid::zero(),
            checks: Checks::default(),
            out: None,
            used: Used::default(),
        };
        let mut check_lines: Vec<&str> = Vec::new();
        let malformed = || format!("malformed rebase state {}", path.display());
        for line in text.lines() {
            let (key, value) = line.split_once(' ').with_context(malformed)?;
            match key {
                "onto" => {}
                "head" => state.head = Oid::from_str(value).with_context(malformed)?,
                "at" => state.at = value.parse().with_context(malformed)?,
                "tree" => state.tree = Oid::from_str(value).with_context(malformed)?,
                "produced" => state.produced = Oid::from_str(value).with_context(malformed)?,
                "stopped" if value == "conflict" => {}
                "stopped" => {
                    check_lines.push(value.strip_prefix("check ").with_context(malformed)?)
                }
                "conflict" => state.conflicts.push(value.to_string()),
                "step" if value == "dropped" => state.steps.push(PatchFate::Dropped),
                "step" => state.steps.push(PatchFate::Applied(
                    Oid::from_str(value.strip_prefix("applied ").with_context(malformed)?)
                        .with_context(malformed)?,
                )),
                "build-check" => state.checks.build_check = true,
                "exec" => state.checks.exec.push(value.to_string()),
                "out" => state.out = Some(PathBuf::from(value)),
                "made" => {
                    let (patch, file) = value.split_once(' ').with_context(malformed)?;
                    state.used.made.push((patch.to_string(), file.to_string()));
                }
                _ => bail!("malformed rebase state line `{line}` in {}", path.display()),
            }
        }
        if !check_lines.is_empty() {
            state.stop = Stop::Check(check_lines.join("\n"));
        }
        if state.tree.is_zero() {
            bail!(
                "the rebase state in {} was written by an older cargo xtask, which kept no record of the work tree: \
                 --continue could not tell a resolved tree from a damaged one. Copy your resolutions out of {}, \
                 run `cargo xtask rebase-glibc --abort`, and start again with --onto {onto}",
                dir.display(),
                dir.join("tree").display()
            );
        }
        // A state from before recorded resolutions: the tree as written is what was produced.
        if state.produced.is_zero() {
            state.produced = state.tree;
        }
        state.used.set = Resolutions::load_dir(&dir.join(USED_DIR))
            .with_context(|| format!("cannot read the resolutions kept in {}", dir.display()))?;
        let from = Series::load(&dir.join("from"))
            .with_context(|| format!("cannot read the series copy in {}", dir.display()))?;
        Ok((state, from))
    }
}

/// Points `<X.Y>` at `generation` with one rename, then deletes the generation it replaced.
fn publish(ws: &Workspace, onto: Release, generation: &Path) -> Result<()> {
    let link = state_dir(ws, onto);
    let old = match std::fs::symlink_metadata(&link) {
        Ok(meta) if meta.file_type().is_symlink() => Some(generation_of(&link)?),
        Ok(_) => bail!(
            "{} is a directory written by an older cargo xtask: drop it with --abort first",
            link.display()
        ),
        Err(_) => None,
    };
    let name = generation
        .file_name()
        .context("a state generation has no name")?;
    let staged_link =
        ws.rebase_dir
            .join(format!(".link-{}-{}", onto.version(), std::process::id()));
    let _ = std::fs::remove_file(&staged_link);
    std::os::unix::fs::symlink(name, &staged_link)
        .with_context(|| format!("cannot create {}", staged_link.display()))?;
    std::fs::rename(&staged_link, &link)
        .with_context(|| format!("cannot publish the rebase state at {}", link.display()))?;
    durable::sync_dir(&ws.rebase_dir)?;
    fault::point("rebase-save:published");
    if let Some(old) = old {
        remove_generation(&old)?;
    }
    Ok(())
}

/// The generation directory `<X.Y>` points at.
fn generation_of(link: &Path) -> Result<PathBuf> {
    let target =
        std::fs::read_link(link).with_context(|| format!("cannot read {}", link.display()))?;
    Ok(link
        .parent()
        .context("state link has no parent")?
        .join(target))
}

/// Deletes a generation nothing points at any more (so a kill halfway is harmless).
fn remove_generation(dir: &Path) -> Result<()> {
    durable::remove_tree(&dir.join("tree"))?;
    fault::point("rebase-remove:tree-removed");
    durable::remove_tree(dir)
}

/// Drops the state onto `onto`: unlinks `<X.Y>` (the commit point), then deletes what it
/// pointed at. Nothing to drop is an error: `--abort` must not claim to have aborted.
pub(crate) fn remove(ws: &Workspace, onto: Release) -> Result<()> {
    let link = state_dir(ws, onto);
    let meta = match std::fs::symlink_metadata(&link) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("no rebase onto glibc {onto} is in progress: there is nothing to drop")
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", link.display())),
    };
    if meta.file_type().is_symlink() {
        let generation = generation_of(&link)?;
        std::fs::remove_file(&link).with_context(|| format!("cannot remove {}", link.display()))?;
        durable::sync_dir(&ws.rebase_dir)?;
        fault::point("rebase-remove:unlinked");
        return remove_generation(&generation);
    }
    // A state directory of an older cargo xtask: its `state` file is what makes it a rebase
    // in progress, so it goes first.
    let state = link.join("state");
    if state.exists() {
        std::fs::remove_file(&state)
            .with_context(|| format!("cannot remove {}", state.display()))?;
    }
    durable::remove_tree(&link)
}

/// In the live generation: written (and flushed) before a continued rebase writes its
/// series, gone with the generation once its state is removed. A kill between the two leaves
/// the series written and the state there: `--continue` writes it again, and `--abort` must
/// say that patches/ did change ([`written_before_abort`]).
const FINISHING: &str = "finishing";

/// Says that the rebase onto `onto` is about to write `series` into `dir`.
pub(crate) fn mark_finishing(
    ws: &Workspace,
    onto: Release,
    dir: &Path,
    series: &Series,
) -> Result<()> {
    let text = format!(
        "series {}\ncontent {}\n",
        dir.display(),
        series.content_id()
    );
    let generation = state_dir(ws, onto);
    durable::write_synced(&generation.join(FINISHING), text.as_bytes())?;
    durable::sync_dir(&generation)
}

/// The directory the stopped rebase onto `onto` had already written its series into when it
/// was interrupted (after the write, before its state was removed), if it had.
pub(crate) fn written_before_abort(ws: &Workspace, onto: Release) -> Option<PathBuf> {
    let text =
        model::file::read_regular_text(&state_dir(ws, onto).join(FINISHING), STATE_LIMIT).ok()?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(' ')))
    };
    let dir = PathBuf::from(field("series")?);
    let written = Series::load(&dir).ok()?.content_id() == field("content")?;
    written.then_some(dir)
}

/// Removes what killed runs left in the rebase directory: generations nothing points at
/// (written but never published, or replaced but not yet deleted) and staged symlinks.
/// Returns a sentence per removal, for the user.
pub(crate) fn recover(ws: &Workspace) -> Result<Vec<String>> {
    let mut said = Vec::new();
    let Some(names) = crate::util::paths::sorted_entry_names(&ws.rebase_dir) else {
        return Ok(said);
    };
    let live: Vec<PathBuf> = supported()
        .iter()
        .filter_map(|r| generation_of(&state_dir(ws, *r)).ok())
        .collect();
    for name in names {
        let path = ws.rebase_dir.join(&name);
        let (is_link, rest) = match (name.strip_prefix(".state-"), name.strip_prefix(".link-")) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => continue,
        };
        // `<X.Y>-<pid>[-<random>]`
        let mut words = rest.split('-');
        let (Some(version), Some(pid)) = (words.next(), words.next()) else {
            continue;
        };
        if live.contains(&path) || Path::new("/proc").join(pid).exists() {
            continue;
        }
        // A live command on the release (an `--abort` between unlinking the state and
        // removing it) may be removing this very state: only the lock says it is gone.
        let _held = match Release::parse(version) {
            Ok(release) => match ws.try_lock_release(release)? {
                Some(lock) => Some(lock),
                None => continue,
            },
            Err(_) => None,
        };
        if is_link {
            if std::fs::remove_file(&path).is_ok() {
                said.push(format!(
                    "removed {}, a link to a rebase state a killed run never published",
                    path.display()
                ));
            }
            continue;
        }
        durable::remove_tree(&path)?;
        let now = match Release::parse(version) {
            Ok(onto) if state_dir(ws, onto).join("state").is_file() => {
                format!("the rebase onto glibc {onto} is where its last completed step left it")
            }
            Ok(onto) => format!("no rebase onto glibc {onto} is in progress"),
            Err(_) => "it belonged to no supported release".to_string(),
        };
        said.push(format!(
            "removed {}, a rebase state a killed run left unpublished or undeleted; {now}",
            path.display()
        ));
    }
    for left in staging::remove_orphans(&ws.rebase_dir, "rebase") {
        said.push(format!(
            "removed {}, a rebase state a killed run left unfinished",
            left.display()
        ));
    }
    for left in staging::remove_orphans(&ws.rebase_dir, crate::rebase::patch_checks::SCRATCH) {
        said.push(format!(
            "removed {}, the work tree a killed run checked its patches in",
            left.display()
        ));
    }
    Ok(said)
}

/// The merged index as a tree: merged files as they are, conflicting files with diff3-style
/// markers (ours = the target release so far, theirs = the patch). Returns the conflicts and
/// the tree (built from the index, not by hashing files): what the rebase produced.
pub(crate) fn conflict_tree(
    repo: &Repository,
    index: &Index,
    (ours, theirs): (&str, &str),
) -> Result<(Vec<ConflictFile>, Oid)> {
    let mut written = git2::build::TreeUpdateBuilder::new();
    for entry in index.iter() {
        if (entry.flags >> 12) & 3 != 0 {
            continue;
        }
        written.upsert(
            std::ffi::OsStr::from_bytes(&entry.path),
            entry.id,
            file_mode(entry.mode),
        );
    }
    let mut files = Vec::new();
    for conflict in index
        .conflicts()
        .context("cannot read the merge's conflicts")?
    {
        let conflict = conflict.context("cannot read the merge's conflicts")?;
        let any = conflict
            .our
            .as_ref()
            .or(conflict.their.as_ref())
            .or(conflict.ancestor.as_ref())
            .context("empty conflict")?;
        let rel = String::from_utf8_lossy(&any.path).into_owned();
        let hunks = match (&conflict.ancestor, &conflict.our, &conflict.their) {
            (Some(base), Some(our), Some(their)) => {
                let mut opts = MergeFileOptions::new();
                opts.ancestor_label("original release")
                    .our_label(ours)
                    .their_label(theirs)
                    .style_diff3(true);
                let merged = repo
                    .merge_file_from_index(base, our, their, Some(&mut opts))
                    .with_context(|| format!("cannot merge {rel}"))?;
                let blob = repo
                    .blob(merged.content())
                    .with_context(|| format!("cannot store the conflicted {rel}"))?;
                written.upsert(rel.as_str(), blob, file_mode(our.mode));
                marker_hunks(merged.content())
            }
            (_, our, their) => {
                let kept: &IndexEntry = our
                    .as_ref()
                    .or(their.as_ref())
                    .context("deleted on both sides")?;
                written.upsert(rel.as_str(), kept.id, file_mode(kept.mode));
                let what = if our.is_none() {
                    "the patch changes a file the release deleted"
                } else {
                    "the patch deletes or adds a file the release changed"
                };
                vec![(
                    0,
                    format!(
                        "{what}; the work tree has {}'s version",
                        if our.is_some() { ours } else { theirs }
                    ),
                )]
            }
        };
        files.push(ConflictFile { path: rel, hunks });
    }
    let empty = repo
        .treebuilder(None)
        .and_then(|b| b.write())
        .context("cannot write an empty tree")?;
    let empty = repo.find_tree(empty).context("cannot read an empty tree")?;
    let tree = written
        .create_updated(repo, &empty)
        .context("cannot record the work tree in the store")?;
    Ok((files, tree))
}

/// Each `<<<<<<<` .. `>>>>>>>` region with its 1-based starting line.
fn marker_hunks(content: &[u8]) -> Vec<(usize, String)> {
    let text = String::from_utf8_lossy(content);
    let mut hunks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("<<<<<<<") && is_marker_line(line.as_bytes()) {
            current = Some((n + 1, String::new()));
        }
        if let Some((_, hunk)) = current.as_mut() {
            hunk.push_str(line);
            hunk.push('\n');
        }
        if line.starts_with(">>>>>>>") && is_marker_line(line.as_bytes()) {
            hunks.extend(current.take());
        }
    }
    hunks
}
