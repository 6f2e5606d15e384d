//! docs/support.json and docs/support.md: the cells' reports as recorded, and the page
//! rendered from them. `cargo xtask verify check-support` (run by `cargo xtask ci`) trusts
//! neither: it judges every cell again from its figures, renders the page again and compares,
//! holds the cells to the supported releases and to the series in patches/ now, and compares
//! them with this machine's verify cache where that holds a current report.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use model::file::Limit;
use model::{Cell, Target};
use serde::{Deserialize, Serialize};

use super::cell;
use super::outcome::{CellReport, CellState, StepOutcome};
use super::provenance::{self, Provenance, CHANGES};
use super::render;
use super::testsuite::{self, TestList};
use crate::series::{is_defect, Series};
use crate::util::durable;
use model::{supported, Release};

/// The page, and the record it is rendered from.
pub(crate) const PAGE: &str = "docs/support.md";
pub(crate) const RECORD: &str = "docs/support.json";
/// A record of cells (docs/support.json, a `verify --json` record `verify merge` reads) or
/// its page: the record of all 12 cells is 180 KB.
pub(crate) const RECORD_LIMIT: Limit = Limit {
    bytes: 16 << 20,
    what: "a record of verified cells or its page",
};

/// How to write both from what this machine has proven, building and running nothing.
pub(crate) const REGENERATE: &str =
    "cargo xtask verify --release all --target all --cached-only --write-support";

/// The record's format, bumped when what it holds changes meaning, so that an older record
/// is refused by name rather than misread. 1 (records without the field): the machine's
/// facts were part of each cell's figures, aarch64 cells had no glibc suite, a commit with
/// changes did not say which. 2: each cell's run holds `steps` (the proof) and `machine`.
/// 3: the steps hold the series' tests against the unpatched loader and the hardcoded-path
/// configuration.
pub(crate) const FORMAT: u64 = 3;

/// What docs/support.json holds: how it was written, and every cell's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SupportDoc {
    pub format: u64,
    pub provenance: Provenance,
    /// In table order: release by release, targets as `Target::ALL` lists them.
    pub cells: Vec<CellReport>,
}

/// Releases oldest first, each on its targets in `Target::ALL`'s order: the types' own.
fn table_order(cell: &CellReport) -> Cell {
    Cell::new(cell.release, cell.target)
}

impl SupportDoc {
    pub(crate) fn new(provenance: Provenance, mut cells: Vec<CellReport>) -> SupportDoc {
        cells.sort_by_key(table_order);
        SupportDoc {
            format: FORMAT,
            provenance,
            cells,
        }
    }

    /// This record with `cells` in place of its cells of the same (release, target), the
    /// others kept, written by `provenance`.
    pub(crate) fn with_cells(self, provenance: Provenance, cells: Vec<CellReport>) -> SupportDoc {
        let mut all: Vec<CellReport> = self
            .cells
            .into_iter()
            .filter(|old| {
                !cells
                    .iter()
                    .any(|new| (new.release, new.target) == (old.release, old.target))
            })
            .collect();
        all.extend(cells);
        SupportDoc::new(provenance, all)
    }

    /// This record without the cells of `release`, written by `provenance`.
    pub(crate) fn without(self, provenance: Provenance, release: Release) -> SupportDoc {
        let cells = self
            .cells
            .into_iter()
            .filter(|cell| cell.release != release)
            .collect();
        SupportDoc::new(provenance, cells)
    }

    pub(crate) fn markdown(&self) -> String {
        render::markdown(&self.provenance, &self.cells)
    }

    pub(crate) fn json(&self) -> Result<String> {
        let mut text =
            serde_json::to_string_pretty(self).context("cannot serialize the support record")?;
        text.push('\n');
        Ok(text)
    }

    /// A record of this format; one of another format is refused, saying what to do.
    pub(crate) fn parse(text: &str, origin: &Path) -> Result<SupportDoc> {
        let not_a_record = || {
            format!(
                "{} is not a support record (`cargo xtask verify --json` output)",
                origin.display()
            )
        };
        let value: serde_json::Value = serde_json::from_str(text).with_context(not_a_record)?;
        match value.get("format").map(serde_json::Value::as_u64) {
            Some(Some(FORMAT)) => {}
            Some(Some(newer)) if newer > FORMAT => bail!(
                "{} was written by a newer cargo xtask (record format {newer}; this one reads {FORMAT}): update this checkout",
                origin.display()
            ),
            None if value.get("cells").is_some() => bail!(
                "{} was written by an older cargo xtask (record format 1; this one reads {FORMAT}): its cells must be verified again (`cargo xtask verify --release all --target all --write-support`, or `verify merge` of the CI engine's cells)",
                origin.display()
            ),
            Some(Some(older)) => bail!(
                "{} was written by an older cargo xtask (record format {older}; this one reads {FORMAT}): its cells must be verified again (`cargo xtask verify --release all --target all --write-support`)",
                origin.display()
            ),
            _ => bail!(not_a_record()),
        }
        serde_json::from_value(value).with_context(not_a_record)
    }

    /// docs/support.json of `root`; `None` when there is none yet.
    pub(crate) fn read(root: &Path) -> Result<Option<SupportDoc>> {
        let path = root.join(RECORD);
        match SupportDoc::read_file(&path) {
            Ok(doc) => Ok(Some(doc)),
            Err(err)
                if err
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
            {
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }

    /// The record in `path`: a regular file of at most [`RECORD_LIMIT`], told to be a JSON
    /// object from its first bytes before the rest is read.
    pub(crate) fn read_file(path: &Path) -> Result<SupportDoc> {
        let bytes = crate::util::read::judged(path, RECORD_LIMIT, 256, |head| {
            match head.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{') | None => Ok(()),
                Some(_) => Err(
                    "it is not a support record (`cargo xtask verify --json` output): it does not start with `{`, as the JSON object of a record does"
                        .to_string(),
                ),
            }
        })
        .with_context(|| format!("cannot read {}", path.display()))?;
        let text = String::from_utf8(bytes)
            .with_context(|| format!("{} is not UTF-8 text", path.display()))?;
        SupportDoc::parse(&text, path)
    }

    /// Writes docs/support.json and docs/support.md: both are made and flushed beside their
    /// places before either is moved there, so that an interrupted write leaves the old pair,
    /// or (killed between the two renames) a page that check-support reports as not the
    /// record's rendering. Returns the two paths.
    pub(crate) fn write(&self, root: &Path) -> Result<[PathBuf; 2]> {
        let paths = [root.join(RECORD), root.join(PAGE)];
        let texts = [self.json()?, self.markdown()];
        let mut staged = Vec::new();
        for (path, text) in paths.iter().zip(&texts) {
            let dir = path
                .parent()
                .with_context(|| format!("{} has no directory", path.display()))?;
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let mut tmp = tempfile::NamedTempFile::new_in(dir)
                .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
            tmp.write_all(text.as_bytes())
                .and_then(|()| tmp.as_file().sync_all())
                .with_context(|| format!("cannot write {}", tmp.path().display()))?;
            staged.push(tmp);
        }
        for (tmp, path) in staged.into_iter().zip(&paths) {
            tmp.persist(path)
                .with_context(|| format!("cannot move a new {} into place", path.display()))?;
        }
        durable::sync_dir(&root.join("docs"))?;
        Ok(paths)
    }
}

/// What this machine's verify cache says of a cell: its current verified report, none, or
/// why that could not be told.
pub(crate) type Local<'a> = &'a dyn Fn(Release, Target) -> Result<Option<CellReport>>;

/// `rebase-glibc --check`'s judge of a series (see [`crate::series::Judge`]), where this
/// machine has the source store to judge it with (`Ok(None)` where it has none).
pub(crate) type SeriesJudge<'a> = &'a dyn Fn(Series) -> Result<Option<(Series, Vec<String>)>>;

/// The elf suite's test lists (unpatched, patched) of the builds a cell of the series now
/// is made of, where this machine recorded their results; `None` for a tree it did not run.
pub(crate) type OwnLists<'a> = &'a dyn Fn(Release, Target) -> Result<[Option<TestList>; 2]>;

/// Fails naming every cell of docs/support.json (under `root`) that is missing, failed,
/// incomplete, contradicts its own figures, was produced from another series than
/// `patches`' now, or differs from this machine's current verified report of it; and when
/// docs/support.md is not the record rendered; and every cell whose elf suite lists other
/// tests than its trees do ([`listed_problems`]).
pub(crate) fn check(
    root: &Path,
    patches: &Path,
    local: Local,
    lists: OwnLists,
    judge: SeriesJudge,
) -> Result<()> {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    // Cells this machine judged again under another key, reaching the record's figures.
    let mut rejudged = Vec::new();
    // The series first: what the page must describe, whatever state the page is in, each
    // with the verdict of `rebase-glibc --check`, the one judge of a series.
    let mut series = Vec::new();
    let mut unjudged = Vec::new();
    for release in supported() {
        let dir = patches.join(release.version());
        let loaded = match Series::load(&dir) {
            Ok(loaded) => loaded,
            Err(e) if is_defect(&e) => {
                problems.push(format!(
                    "{}: FAILED (`rebase-glibc --check` says more): {e:#}",
                    dir.display()
                ));
                continue;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot load the series {}", dir.display()))
            }
        };
        series.push((
            *release,
            dir.clone(),
            loaded.content_id(),
            cell::series_tests(&loaded),
        ));
        match judge(loaded) {
            Ok(Some((_, drift))) if drift.is_empty() => {}
            Ok(Some((_, lines))) => problems.push(format!(
                "{}: DRIFT (`rebase-glibc --check` says more): {}",
                dir.display(),
                lines.join("; ")
            )),
            Ok(None) => unjudged.push(release.version()),
            Err(e) if is_defect(&e) => problems.push(format!(
                "{}: FAILED (`rebase-glibc --check` says more): {e:#}",
                dir.display()
            )),
            Err(e) => notes.push(format!("{}: not judged: {e:#}", dir.display())),
        }
    }
    if !unjudged.is_empty() {
        notes.push(format!(
            "the series of {} were not judged against their releases: no source store here (`rebase-glibc --check` judges them)",
            unjudged.join(", ")
        ));
    }
    let record_path = root.join(RECORD);
    let Some(doc) = SupportDoc::read(root)? else {
        bail!(
            "{} is missing: write it (and {PAGE}) with `{REGENERATE}`",
            record_path.display()
        );
    };
    let page_path = root.join(PAGE);
    let page = model::file::read_regular_text(&page_path, RECORD_LIMIT)
        .with_context(|| format!("cannot read {}", page_path.display()))?;
    let mut machines = Vec::new();
    let mut unverified = Vec::new();

    // Exactly the supported cells, once each, in table order.
    let expected: Vec<(Release, Target)> = supported()
        .iter()
        .flat_map(|r| Target::ALL.map(|t| (*r, t)))
        .collect();
    let recorded: Vec<(Release, Target)> =
        doc.cells.iter().map(|c| (c.release, c.target)).collect();
    if recorded != expected {
        for (release, target) in &expected {
            let count = recorded
                .iter()
                .filter(|cell| **cell == (*release, *target))
                .count();
            if count != 1 {
                problems.push(format!("{release} {target}: {count} cells, not one"));
            }
        }
        if problems.is_empty() {
            problems.push("the cells are not in table order".into());
        }
    }

    for (release, dir, current, tests) in &series {
        for cell in doc.cells.iter().filter(|c| c.release == *release) {
            if cell.series != *current {
                problems.push(format!(
                    "{release} {}: produced from series {}, {} is now {current}",
                    cell.target,
                    cell.series,
                    dir.display()
                ));
            }
            if let Some(missing) = series_tests_missing(cell, tests) {
                problems.push(format!("{release} {}: {missing}", cell.target));
            }
        }
    }

    // When and from what each proof was made.
    let history = History::open(root);
    let now = crate::util::clock::now_secs() as i64;
    if let Some(problem) = time_problem(&doc.provenance.written_at, now) {
        problems.push(format!("{RECORD} written {problem}"));
    }
    for cell in &doc.cells {
        let Some(run) = &cell.run else { continue };
        let name = format!("{} {}", cell.release, cell.target);
        if let Some(problem) = time_problem(&run.verified_at, now) {
            problems.push(format!("{name}: verified {problem}"));
        }
        match history.commit_problem(&run.commit) {
            Ok(None) => {}
            Ok(Some(problem)) => problems.push(format!("{name}: {problem}")),
            Err(note) => notes.push(format!("{name}: {note}")),
        }
    }

    for cell in &doc.cells {
        let name = format!("{} {}", cell.release, cell.target);
        for gap in cell.gaps() {
            problems.push(format!("{name}: figures not whole: {gap}"));
        }
        for contradiction in cell.contradictions() {
            problems.push(format!("{name}: {RECORD} edited? {contradiction}"));
        }
        let own = lists(cell.release, cell.target).unwrap_or_else(|err| {
            notes.push(format!("{name}: {err:#}"));
            [None, None]
        });
        for problem in listed_problems(cell, &own) {
            problems.push(format!("{name}: {problem}"));
        }
        match cell.state() {
            CellState::Verified => {}
            CellState::NotVerified => unverified.push(name.clone()),
            CellState::Failed => problems.push(format!(
                "{name}: failed: {}",
                render::line(cell).replace('\n', ";")
            )),
            CellState::Incomplete(missing) => problems.push(format!(
                "{name}: incomplete (a skip is not proof): {}",
                missing.join("; ")
            )),
        }
        match local(cell.release, cell.target) {
            Ok(Some(current)) if !same_proof(cell, &current) => problems.push(format!(
                "{name}: differs from this machine's current verified report of the cell (key {}, recorded key {})",
                current.key, cell.key
            )),
            Ok(Some(current)) => {
                if current.key != cell.key {
                    rejudged.push(format!(
                        "{name}: key {} here, {} in the record",
                        current.key, cell.key
                    ));
                }
                if let Some(differs) = machine_differs(cell, &current) {
                    machines.push(format!("{name}: {differs}"));
                }
            }
            Ok(None) => {}
            Err(err) => notes.push(format!("{name}: {err:#}")),
        }
    }

    let rendered = doc.markdown();
    if page != rendered {
        let diff = similar::TextDiff::from_lines(&rendered, &page)
            .unified_diff()
            .context_radius(1)
            .header(RECORD, PAGE)
            .to_string();
        let shown: Vec<&str> = diff.lines().take(40).collect();
        problems.push(format!(
            "{PAGE} is not {RECORD} rendered:\n{}",
            shown.join("\n")
        ));
    }

    if !notes.is_empty() {
        outln!("not checked here:\n  {}", notes.join("\n  "));
    }
    if !rejudged.is_empty() {
        outln!(
            "judged again here with today's judging sources and builds, every figure the same as recorded:\n  {}",
            rejudged.join("\n  ")
        );
    }
    if !machines.is_empty() {
        outln!(
            "the same proof, on another machine (facts, not failures):\n  {}",
            machines.join("\n  ")
        );
    }
    if !unverified.is_empty() {
        outln!(
            "{PAGE}: not verified yet (the page says so): {}",
            unverified.join(", ")
        );
    }
    if !problems.is_empty() {
        // A finding (exit status 2), like every check's.
        return Err(crate::util::exit::NeedsAttention(format!(
            "{} does not stand:\n  {}\nverify what failed or is incomplete, then write both files again: {REGENERATE}",
            page_path.display(),
            problems.join("\n  ")
        ))
        .into());
    }
    outln!("{PAGE} and {RECORD} describe the series in patches/ as they are");
    Ok(())
}

/// What a verified cell's series-tests step lacks of the tests the series adds now (or has
/// beyond them); `None` when it holds them all, or claims nothing.
fn series_tests_missing(cell: &CellReport, tests: &[String]) -> Option<String> {
    let run = cell.run.as_ref()?;
    let recorded: Vec<&str> = match run.steps.series_tests.figures() {
        Some(figures) => figures.tests.iter().map(|t| t.test.as_str()).collect(),
        None => return None,
    };
    let missing: Vec<&str> = tests
        .iter()
        .map(String::as_str)
        .filter(|t| !recorded.contains(t))
        .collect();
    let extra: Vec<&str> = recorded
        .iter()
        .copied()
        .filter(|t| !tests.iter().any(|own| own == t))
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    let mut text = format!(
        "series tests: the record names {} of the {} tests the series adds",
        recorded.len() - extra.len(),
        tests.len()
    );
    if !missing.is_empty() {
        text.push_str(&format!(" (missing: {})", missing.join(", ")));
    }
    if !extra.is_empty() {
        text.push_str(&format!(
            " and {} it does not add ({})",
            extra.len(),
            extra.join(", ")
        ));
    }
    Some(text)
}

/// Why the tests a cell's elf suite lists, by its record, are not every test its trees list:
/// each tree's list is held to the one this machine's build of that tree gave (`own`,
/// unpatched and patched, where it ran them), else the unpatched tree's to the release's
/// known size (the patched tree's is the unpatched one's and the series' own tests, which
/// the figures check). The record's figures agree with each other, cut or not: only the
/// trees can say what they list.
fn listed_problems(cell: &CellReport, own: &[Option<TestList>; 2]) -> Vec<String> {
    let Some(diff) = cell
        .run
        .as_ref()
        .and_then(|run| run.steps.elf_regressions.figures())
    else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let recorded = [&diff.listed.unpatched, &diff.listed.patched];
    for ((tree, recorded), own) in ["unpatched", "patched"].iter().zip(recorded).zip(own) {
        if let Some(own) = own {
            if own != recorded {
                problems.push(format!(
                    "the {tree} tree's elf suite lists {} tests (digest {}) in this machine's run of the same build, the record {} (digest {}): not what the tree lists",
                    own.count, own.digest, recorded.count, recorded.digest
                ));
            }
        }
    }
    if own[0].is_none() {
        let count = diff.listed.unpatched.count;
        match testsuite::known_unpatched_count(cell.release, cell.target) {
            Some(known) if count < testsuite::unpatched_floor(known) => problems.push(format!(
                "the record's unpatched tree lists {count} elf tests, where glibc {} on {} lists {known} (at least {} with any toolchain): a list cut short is no proof",
                cell.release,
                cell.target,
                testsuite::unpatched_floor(known)
            )),
            Some(_) => {}
            None => problems.push(format!(
                "how many elf tests glibc {} on {} lists is not known: its row in {} has no `elf_tests_unpatched` count for {}: `cargo xtask update-release {}` writes the count of its first verified run",
                cell.release, cell.target, model::TABLE_PATH, cell.target, cell.release
            )),
        }
    }
    problems
}

/// Why a time a record gives cannot be when something was proven: unreadable, or later
/// than `now`.
fn time_problem(time: &str, now: i64) -> Option<String> {
    match crate::series::mail_date::parse_utc_minutes(time) {
        Err(err) => Some(format!("at an unreadable time: {err:#}")),
        Ok(at) if at > now => Some(format!(
            "at {time}, which is in the future (now: {})",
            provenance::now()
        )),
        Ok(_) => None,
    }
}

/// The repository's history, for the commits a record names.
struct History {
    repo: std::result::Result<git2::Repository, String>,
}

impl History {
    fn open(root: &Path) -> History {
        History {
            repo: crate::util::git::open(root).map_err(|err| {
                format!(
                    "{} is not a git checkout ({err}): commits not checked",
                    root.display()
                )
            }),
        }
    }

    /// Why `commit` (`<12 hex>` or `<12 hex>+changes-<digest>`) cannot be what a cell was
    /// proven from: not in this checkout's history, or uncommitted changes it does not name.
    /// An error when that cannot be told here (not a checkout, a shallow clone).
    fn commit_problem(&self, commit: &str) -> std::result::Result<Option<String>, String> {
        let (id, changes) = match commit.split_once('+') {
            Some((id, rest)) => (id, Some(rest)),
            None => (commit, None),
        };
        if let Some(changes) = changes {
            let digest = changes.strip_prefix(&CHANGES[1..]);
            if !digest.is_some_and(|d| d.len() == 12 && d.bytes().all(|b| b.is_ascii_hexdigit())) {
                return Ok(Some(format!(
                    "proven from commit {id} with uncommitted changes it does not name (`{commit}`): verify it again from a commit"
                )));
            }
        }
        if id.len() < 12 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Some(format!("`{commit}` names no commit")));
        }
        let repo = self.repo.as_ref().map_err(Clone::clone)?;
        let found = repo
            .revparse_single(id)
            .ok()
            .and_then(|object| object.peel_to_commit().ok());
        let head = repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .ok_or("the checkout has no commit: commits not checked")?;
        match found {
            Some(c) if c.id() == head.id() || repo.graph_descendant_of(head.id(), c.id()).unwrap_or(false) => Ok(None),
            _ if repo.is_shallow() => Err(format!(
                "commit {id} is not in this shallow clone: not checked (fetch the history to check it)"
            )),
            Some(_) => Ok(Some(format!(
                "commit {id} is not in the history of this checkout's HEAD"
            ))),
            None => Ok(Some(format!("commit {id} is not in this repository's history"))),
        }
    }
}

/// Where this machine's facts about a cell differ from the record's (another CPU, another
/// kernel, other tests failing in both trees): said, never a failure.
fn machine_differs(recorded: &CellReport, current: &CellReport) -> Option<String> {
    let (ours, theirs) = (
        &current.run.as_ref()?.machine,
        &recorded.run.as_ref()?.machine,
    );
    if ours == theirs {
        return None;
    }
    let names = |m: &super::outcome::Machine| -> Vec<String> {
        m.elf_suite
            .iter()
            .flat_map(|f| f.failing_in_both.iter().map(|t| t.test.clone()))
            .collect()
    };
    Some(format!(
        "this machine ({}, {}) has {} tests failing in both trees ({}), the record's ({}, {}) {}",
        ours.cpu,
        ours.kernel,
        names(ours).len(),
        names(ours).join(", "),
        theirs.cpu,
        theirs.kernel,
        names(theirs).len()
    ))
}

/// The same series and the same figures (the build step's built-or-cached aside, and when,
/// where and how fast the run was). The key may differ: a cell judged again after a change of
/// the judging sources (a refactor, a fix that changes no verdict) that reaches every figure
/// of the record confirms it; any figure that moved does not.
fn same_proof(recorded: &CellReport, current: &CellReport) -> bool {
    let figures = |report: &CellReport| {
        report.run.as_ref().map(|run| {
            let mut steps = run.steps.clone();
            let built = steps.build.verdict();
            steps.build = StepOutcome::NotRun;
            (steps, built)
        })
    };
    (&recorded.series, figures(recorded)) == (&current.series, figures(current))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::outcome::{CellRun, StepVerdict};
    use crate::verify::provenance::WrittenBy;
    use crate::verify::render::tests::{run_mut, verified, with_series_tests};

    /// A scratch checkout: docs/support.json and docs/support.md written by the code, every
    /// cell verified on the series of the real patches/.
    struct Page {
        root: tempfile::TempDir,
        patches: PathBuf,
        doc: SupportDoc,
    }

    /// A checkout with one commit, whose id the cells name.
    fn checkout() -> (tempfile::TempDir, String) {
        let root = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(root.path()).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let who = git2::Signature::new("t", "t@t.invalid", &git2::Time::new(0, 0)).unwrap();
        let id = repo
            .commit(Some("HEAD"), &who, &who, "proof", &tree, &[])
            .unwrap();
        (root, id.to_string()[..12].to_string())
    }

    fn page() -> Page {
        let patches = crate::util::paths::project_root().join("patches");
        let (root, commit) = checkout();
        let cells = supported()
            .iter()
            .flat_map(|r| {
                let series = Series::load(&patches.join(r.version())).unwrap();
                let tests = cell::series_tests(&series);
                let id = series.content_id();
                let commit = commit.clone();
                Target::ALL.map(move |t| {
                    let mut cell = verified(r.version(), t, &id);
                    // As many tests as the release's tree lists.
                    if let StepOutcome::Done(d) = &mut run_mut(&mut cell).steps.elf_regressions {
                        d.listed.unpatched.count = testsuite::known_unpatched_count(*r, t).unwrap();
                    }
                    with_series_tests(&mut cell, &tests);
                    run_mut(&mut cell).commit = commit.clone();
                    cell
                })
            })
            .collect();
        let provenance = Provenance {
            written_at: "2026-12-01 12:00 UTC".into(),
            commit,
            by: WrittenBy::Verify { cached_only: true },
        };
        let doc = SupportDoc::new(provenance, cells);
        doc.write(root.path()).unwrap();
        Page { root, patches, doc }
    }

    fn nothing_local(_: Release, _: Target) -> Result<Option<CellReport>> {
        Ok(None)
    }

    fn no_own_lists(_: Release, _: Target) -> Result<[Option<TestList>; 2]> {
        Ok([None, None])
    }

    fn no_judge(_: Series) -> Result<Option<(Series, Vec<String>)>> {
        Ok(None)
    }

    /// This machine's verify cache as `check` asks it, holding for each cell the record's
    /// report with `edit`'s changes: a proof made again, elsewhere or otherwise.
    fn cache_of<'a>(
        doc: &'a SupportDoc,
        edit: impl Fn(&mut CellRun) + 'a,
    ) -> impl Fn(Release, Target) -> Result<Option<CellReport>> + 'a {
        move |release, target| {
            let mut cell = doc
                .cells
                .iter()
                .find(|c| (c.release, c.target) == (release, target))
                .unwrap()
                .clone();
            edit(run_mut(&mut cell));
            Ok(Some(cell))
        }
    }

    impl Page {
        fn check(&self) -> Result<()> {
            self.check_with(&nothing_local)
        }

        fn check_with(&self, local: Local) -> Result<()> {
            check(
                self.root.path(),
                &self.patches,
                local,
                &no_own_lists,
                &no_judge,
            )
        }

        fn edit(&self, file: &str, edit: impl Fn(&str) -> String) {
            let path = self.root.path().join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            let edited = edit(&text);
            assert_ne!(text, edited, "the edit changed nothing");
            std::fs::write(&path, edited).unwrap();
        }

        fn rewrite(&self, doc: &SupportDoc) {
            doc.write(self.root.path()).unwrap();
        }

        /// The record with the patched matrix figures of its `n`th cell edited.
        fn with_matrix(
            &self,
            n: usize,
            edit: impl FnOnce(&mut crate::verify::outcome::Matrix),
        ) -> SupportDoc {
            let mut doc = self.doc.clone();
            let StepOutcome::Done(matrix) = &mut run_mut(&mut doc.cells[n]).steps.matrix else {
                panic!("cell {n} of the test record has no matrix figures");
            };
            edit(matrix);
            doc
        }
    }

    fn fails_with(page: &Page, what: &str) {
        let err = format!("{:#}", page.check().expect_err("the check passed"));
        assert!(err.contains(what), "`{what}` not in:\n{err}");
    }

    #[test]
    fn a_page_written_from_its_record_passes() {
        page().check().unwrap();
    }

    /// A row edited to "ok" with failing figures.
    #[test]
    fn a_row_saying_ok_with_mismatches_fails() {
        let page = page();
        let rows = loader_tests::matrix::MATRIX.len();
        page.edit(PAGE, |t| {
            t.replacen(
                &format!("ok: {rows} pass, 0 skipped, 0 n/a, 0 mismatch"),
                &format!("ok: {rows} pass, 0 skipped, 0 n/a, 3 mismatch"),
                1,
            )
        });
        fails_with(&page, "docs/support.md is not docs/support.json rendered");
    }

    /// `ok: 0 PASS ... 7 FAIL`.
    #[test]
    fn a_row_saying_ok_with_failing_series_tests_fails() {
        let page = page();
        let ok = match &run_mut(&mut page.doc.clone().cells[0]).steps.series_tests {
            StepOutcome::Done(t) => format!("ok: {} PASS, 0 UNSUPPORTED, 0 FAIL", t.tests.len()),
            other => panic!("the first cell's series tests did not run: {other:?}"),
        };
        page.edit(PAGE, |t| {
            t.replacen(&ok, "ok: 0 PASS, 0 UNSUPPORTED, 7 FAIL", 1)
        });
        fails_with(&page, "docs/support.md is not docs/support.json rendered");
    }

    /// A Details section that contradicts its row.
    #[test]
    fn details_that_contradict_their_row_fail() {
        let page = page();
        let ok = format!(
            "  matrix           ok: {} pass",
            loader_tests::matrix::MATRIX.len()
        );
        page.edit(PAGE, |t| {
            t.replacen(&ok, "  matrix           FAIL: 60 pass", 1)
        });
        fails_with(&page, &format!("-{ok}"));
    }

    /// A row for a release that is not supported, in the page or the record.
    #[test]
    fn a_row_for_an_unsupported_release_fails() {
        let page = page();
        page.edit(PAGE, |t| {
            t.replacen("| 2.40 | x86_64 |", "| 2.39 | x86_64 | verified | ok: 2 patches | ok | ok | ok | ok | ok | 1.0 min |\n| 2.40 | x86_64 |", 1)
        });
        fails_with(&page, "+| 2.39 | x86_64 | verified");
        let page = self::page();
        page.edit(RECORD, |t| {
            t.replacen("\"release\": \"2.40\"", "\"release\": \"2.39\"", 1)
        });
        fails_with(&page, "glibc 2.39 is not a supported release");
    }

    /// The record edited to say a cell passes when its figures say it does not.
    #[test]
    fn a_record_whose_verdicts_its_figures_do_not_give_fails() {
        let page = page();
        let doc = page.with_matrix(0, |m| {
            m.pass -= 3;
            m.mismatch = vec!["01-a".into(), "01-b".into(), "01-c".into()];
        });
        // The figures, and the page rendered from them, fail the cell: a failed cell fails.
        page.rewrite(&doc);
        fails_with(&page, "2.36 x86_64: failed");
        // The same figures with the verdicts edited back to "pass": the figures decide.
        page.edit(RECORD, |t| {
            t.replacen("\"state\": \"failed\"", "\"state\": \"verified\"", 1)
                .replacen("\"matrix\": \"fail\"", "\"matrix\": \"pass\"", 1)
        });
        fails_with(&page, "it says Verified, its figures give Failed");
        fails_with(&page, "it says Matrix is Pass, its figures give Fail");
    }

    /// A skip is not proof; check-support fails on an incomplete cell.
    #[test]
    fn an_incomplete_cell_fails() {
        let page = page();
        let mut doc = page.with_matrix(11, |m| {
            m.pass -= 1;
            m.skipped = vec![crate::verify::outcome::Unrun {
                id: "01-real-llp-bug".into(),
                reason: "Debian archive unreachable: no mirror".into(),
            }];
        });
        assert_eq!(
            run_mut(&mut doc.cells[11]).steps.matrix.verdict(),
            StepVerdict::Incomplete
        );
        page.rewrite(&doc);
        fails_with(
            &page,
            "2.44 aarch64: incomplete (a skip is not proof): patched matrix skipped 01-real-llp-bug: Debian archive unreachable: no mirror",
        );
    }

    #[test]
    fn a_not_verified_cell_claims_nothing_and_passes() {
        let page = page();
        let mut doc = page.doc.clone();
        doc.cells[3].run = None;
        page.rewrite(&doc);
        page.check().unwrap();
    }

    #[test]
    fn missing_duplicated_and_stale_cells_fail() {
        let page = page();
        let mut doc = page.doc.clone();
        doc.cells.remove(2);
        page.rewrite(&doc);
        fails_with(&page, "2.40 x86_64: 0 cells, not one");
        let mut doc = page.doc.clone();
        doc.cells.push(doc.cells[0].clone());
        page.rewrite(&doc);
        fails_with(&page, "2.36 x86_64: 2 cells, not one");
        let mut doc = page.doc.clone();
        doc.cells[10].series = "0123".into();
        page.rewrite(&doc);
        fails_with(&page, "2.44 x86_64: produced from series 0123");
    }

    #[test]
    fn the_series_are_those_of_the_patches_dir_given() {
        let page = page();
        let other = tempfile::tempdir().unwrap();
        for release in supported() {
            let to = other.path().join(release.version());
            std::fs::create_dir(&to).unwrap();
            for entry in std::fs::read_dir(page.patches.join(release.version())).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
            }
        }
        check(
            page.root.path(),
            other.path(),
            &nothing_local,
            &no_own_lists,
            &no_judge,
        )
        .unwrap();
        let series = other.path().join("2.42/series");
        let text = std::fs::read_to_string(&series).unwrap();
        std::fs::write(&series, format!("{text}# edited\n")).unwrap();
        let err = format!(
            "{:#}",
            check(
                page.root.path(),
                other.path(),
                &nothing_local,
                &no_own_lists,
                &no_judge
            )
            .unwrap_err()
        );
        assert!(err.contains("2.42 x86_64: produced from series"), "{err}");
        assert!(err.contains("2.42 aarch64: produced from series"), "{err}");
    }

    #[test]
    fn a_cell_must_match_this_machine_s_current_report_of_it() {
        let page = page();
        let doc = page.doc.clone();
        // The same proof, run again later (when, how fast and built-or-cached differ): fine.
        let again = cache_of(&doc, |run| {
            run.verified_at = "later".into();
            run.seconds.total += 1.0;
            run.steps.build = StepOutcome::Done(crate::verify::outcome::Build {
                patched: crate::verify::outcome::Origin::Built,
                unpatched: crate::verify::outcome::Origin::Built,
            });
        });
        page.check_with(&again).unwrap();
        // Judged again by other judging sources, with every figure the same: it stands.
        let rekeyed = |release: Release, target: Target| -> Result<Option<CellReport>> {
            let mut cell = again(release, target)?.unwrap();
            if release.version() == "2.43" && target == Target::X86_64 {
                cell.key = "newer".into();
            }
            Ok(Some(cell))
        };
        page.check_with(&rekeyed).unwrap();
        // Other inputs and other figures: the record is not this machine's proof.
        let moved = |release: Release, target: Target| -> Result<Option<CellReport>> {
            let mut cell = rekeyed(release, target)?.unwrap();
            if release.version() == "2.43" && target == Target::X86_64 {
                if let StepOutcome::Done(d) = &mut run_mut(&mut cell).steps.elf_regressions {
                    d.listed.patched.count += 1;
                }
            }
            Ok(Some(cell))
        };
        let err = format!("{:#}", page.check_with(&moved).unwrap_err());
        assert!(
            err.contains("2.43 x86_64: differs from this machine's current verified report of the cell (key newer"),
            "{err}"
        );
        // Another series, the figures the same: not this series' proof.
        let reseries = |release: Release, target: Target| -> Result<Option<CellReport>> {
            let mut cell = again(release, target)?.unwrap();
            if release.version() == "2.43" && target == Target::X86_64 {
                cell.series = "another series".into();
            }
            Ok(Some(cell))
        };
        let err = format!("{:#}", page.check_with(&reseries).unwrap_err());
        assert!(err.contains("2.43 x86_64: differs"), "{err}");
        let refigured = |release: Release, target: Target| -> Result<Option<CellReport>> {
            let mut cell = again(release, target)?.unwrap();
            if let StepOutcome::Done(d) = &mut run_mut(&mut cell).steps.elf_regressions {
                d.listed.unpatched.digest = "another list of tests".into();
            }
            Ok(Some(cell))
        };
        let err = format!("{:#}", page.check_with(&refigured).unwrap_err());
        assert!(err.contains("2.36 x86_64: differs"), "{err}");
        // What cannot be told is said, and fails nothing.
        let unknown = |_: Release, _: Target| -> Result<Option<CellReport>> { bail!("no store") };
        page.check_with(&unknown).unwrap();
    }

    /// Figures edited to agree with themselves, and with the page, but not
    /// with what the cell must contain.
    #[test]
    fn figures_that_agree_with_themselves_but_are_not_whole_fail() {
        let page = page();
        // The matrix: 10 scenarios run, 10 pass, of the table's rows.
        let doc = page.with_matrix(0, |m| (m.total, m.pass) = (10, 10));
        page.rewrite(&doc);
        fails_with(
            &page,
            &format!(
                "2.36 x86_64: figures not whole: the patched matrix counts 10 scenarios, the table has {}",
                loader_tests::matrix::MATRIX.len()
            ),
        );
        // The series' tests: 1 of those it adds.
        let mut doc = page.doc.clone();
        let steps = &mut run_mut(&mut doc.cells[2]).steps;
        let mut adds = 0;
        if let StepOutcome::Done(t) = &mut steps.series_tests {
            adds = t.tests.len();
            t.tests.truncate(1);
        }
        if let StepOutcome::Done(d) = &mut steps.elf_regressions {
            d.series_own.truncate(1);
            d.listed.patched.count = d.listed.unpatched.count + 1;
        }
        page.rewrite(&doc);
        fails_with(
            &page,
            &format!(
                "2.40 x86_64: series tests: the record names 1 of the {adds} tests the series adds (missing: elf/tst-fallback-path-audit,"
            ),
        );
        // The elf suite: 552 tests in the patched tree, which its other figures do not give.
        let mut doc = page.doc.clone();
        if let StepOutcome::Done(d) = &mut run_mut(&mut doc.cells[4]).steps.elf_regressions {
            d.listed.patched.count = 552;
        }
        page.rewrite(&doc);
        fails_with(&page, "2.41 x86_64: failed");
        fails_with(
            &page,
            "the figures do not add up (552 tests patched, 473 unpatched)",
        );
        // A step said not to apply: every step applies to every cell.
        let mut doc = page.doc.clone();
        run_mut(&mut doc.cells[5]).steps.elf_regressions =
            StepOutcome::NotApplicable("QEMU".into());
        page.rewrite(&doc);
        fails_with(
            &page,
            "2.41 aarch64: figures not whole: ElfRegressions is n/a, and it applies to glibc 2.41 aarch64",
        );
        // A series test not run without the patch, or not accounted for in the
        // hardcoded-path configuration; that configuration left out where it is declared, or
        // recorded where it is not.
        let last = page.doc.cells.len() - 2;
        let mut doc = page.doc.clone();
        let mut without = 0;
        if let StepOutcome::Done(w) = &mut run_mut(&mut doc.cells[0]).steps.without_the_patch {
            w.tests.pop();
            without = w.tests.len();
        }
        page.rewrite(&doc);
        fails_with(
            &page,
            &format!(
                "2.36 x86_64: figures not whole: the series tests run without the patch ({without}) are not those run with it ({})",
                without + 1
            ),
        );
        let mut doc = page.doc.clone();
        let newest = run_mut(&mut doc.cells[last]);
        let (mut run, mut not_built) = (0, 0);
        if let StepOutcome::Done(h) = &mut newest.steps.hardcoded_paths {
            h.series_tests.tests.pop();
            (run, not_built) = (h.series_tests.tests.len(), h.not_built.len());
        }
        let adds = newest
            .steps
            .series_tests
            .figures()
            .map_or(0, |t| t.tests.len());
        page.rewrite(&doc);
        fails_with(
            &page,
            &format!("figures not whole: the series tests of the hardcoded-path configuration ({run} run, {not_built} not built) are not the series' tests ({adds})"),
        );
        let mut doc = page.doc.clone();
        run_mut(&mut doc.cells[last]).steps.hardcoded_paths =
            StepOutcome::NotApplicable("no".into());
        page.rewrite(&doc);
        fails_with(
            &page,
            "figures not whole: HardcodedPaths is n/a, and it applies to glibc 2.44 x86_64",
        );
        let mut doc = page.doc.clone();
        let hardcoded = run_mut(&mut doc.cells[last]).steps.hardcoded_paths.clone();
        run_mut(&mut doc.cells[0]).steps.hardcoded_paths = hardcoded;
        page.rewrite(&doc);
        fails_with(
            &page,
            "2.36 x86_64: figures not whole: the hardcoded-path configuration has figures, and it is declared for another cell than glibc 2.36 x86_64",
        );
    }

    /// Both trees' lists cut alike (537 -> 100, and the patched tree's by as many), or the
    /// unpatched one to nothing: every figure agrees with every other, and the page with the
    /// record, but not with what the trees list.
    #[test]
    fn test_lists_cut_to_agree_with_themselves_fail() {
        let page = page();
        let newest = page.doc.cells.len() - 2;
        let cut = |count: usize| {
            let mut doc = page.doc.clone();
            if let StepOutcome::Done(d) = &mut run_mut(&mut doc.cells[newest]).steps.elf_regressions
            {
                let own = d.listed.patched.count - d.listed.unpatched.count;
                d.listed.unpatched.count = count;
                d.listed.patched.count = count + own;
            }
            doc
        };
        page.rewrite(&cut(100));
        fails_with(
            &page,
            "2.44 x86_64: the record's unpatched tree lists 100 elf tests, where glibc 2.44 on x86_64 lists 537 (at least 484 with any toolchain): a list cut short is no proof",
        );
        page.rewrite(&cut(0));
        fails_with(
            &page,
            "2.44 x86_64: the record's unpatched tree lists 0 elf tests",
        );
        // A tenth fewer is another toolchain's list, not a cut.
        page.rewrite(&cut(484));
        page.check().unwrap();
        // Where this machine ran the same builds' suites, each list is held to theirs.
        page.rewrite(&page.doc);
        let recorded = |cell: &CellReport| {
            let d = cell
                .run
                .as_ref()
                .unwrap()
                .steps
                .elf_regressions
                .figures()
                .unwrap();
            [
                Some(d.listed.unpatched.clone()),
                Some(d.listed.patched.clone()),
            ]
        };
        let own = |release: Release, target: Target| {
            let cell = page
                .doc
                .cells
                .iter()
                .find(|c| (c.release, c.target) == (release, target));
            let mut lists = recorded(cell.unwrap());
            if (release, target) == (Release::newest(), Target::X86_64) {
                lists[1] = Some(TestList {
                    count: 565,
                    digest: "the build's own".into(),
                });
            }
            Ok(lists)
        };
        let err = check(
            page.root.path(),
            &page.patches,
            &nothing_local,
            &own,
            &no_judge,
        )
        .unwrap_err();
        let err = format!("{err:#}");
        let newest_patched = recorded(&page.doc.cells[newest])[1].clone().unwrap().count;
        assert!(
            err.contains(&format!("2.44 x86_64: the patched tree's elf suite lists 565 tests (digest the build's own) in this machine's run of the same build, the record {newest_patched} (digest digest-of-486): not what the tree lists")),
            "{err}"
        );
    }

    /// A commit the history lacks, changes that are not named, a time to come.
    #[test]
    fn a_proof_names_a_commit_of_the_history_and_a_time_past() {
        let page = page();
        let edit = |edit: &dyn Fn(&mut CellRun)| {
            let mut doc = page.doc.clone();
            edit(run_mut(&mut doc.cells[11]));
            page.rewrite(&doc);
        };
        edit(&|run| run.commit = "deadbeefdead".into());
        fails_with(
            &page,
            "2.44 aarch64: commit deadbeefdead is not in this repository's history",
        );
        let commit = page.doc.provenance.commit.clone();
        edit(&|run| run.commit = format!("{commit}+changes"));
        fails_with(
            &page,
            &format!("2.44 aarch64: proven from commit {commit} with uncommitted changes it does not name (`{commit}+changes`)"),
        );
        edit(&|run| run.commit = format!("{commit}+changes-0123456789ab"));
        page.check().unwrap();
        edit(&|run| run.verified_at = "2099-01-01 00:00 UTC".into());
        fails_with(
            &page,
            "2.44 aarch64: verified at 2099-01-01 00:00 UTC, which is in the future",
        );
        edit(&|run| run.verified_at = "last week".into());
        fails_with(&page, "2.44 aarch64: verified at an unreadable time");
    }

    /// The same proof made on another machine (another CPU, two tests
    /// failing in both trees there) stands; the difference is said.
    #[test]
    fn another_machine_s_facts_are_reported_not_judged() {
        let page = page();
        let doc = page.doc.clone();
        let elsewhere = cache_of(&doc, |run| {
            let machine = &mut run.machine;
            machine.cpu = "Other CPU".into();
            if let Some(facts) = &mut machine.elf_suite {
                for test in [
                    "elf/tst-cpu-features-cpuinfo",
                    "elf/tst-cpu-features-cpuinfo-static",
                ] {
                    facts.failing_in_both.push(crate::verify::testsuite::Named {
                        test: test.into(),
                        status: crate::verify::testsuite::Status::Fail,
                        reason: Some("cpuinfo differs".into()),
                    });
                }
                facts.patched.pass -= 2;
                facts.patched.fail += 2;
            }
        });
        page.check_with(&elsewhere).unwrap();
        assert_eq!(
            machine_differs(&doc.cells[0], &elsewhere(doc.cells[0].release, doc.cells[0].target).unwrap().unwrap()).unwrap(),
            "this machine (Other CPU, Linux 6.18.44) has 2 tests failing in both trees (elf/tst-cpu-features-cpuinfo, elf/tst-cpu-features-cpuinfo-static), the record's (Example CPU @ 2.00GHz (2 cores), Linux 6.18.44) 0"
        );
    }

    /// The record of format 1 (the first one committed) is refused by name.
    #[test]
    fn a_record_of_an_older_format_says_to_verify_again() {
        let page = page();
        page.edit(RECORD, |t| t.replacen("  \"format\": 3,\n", "", 1));
        fails_with(
            &page,
            "docs/support.json was written by an older cargo xtask (record format 1; this one reads 3): its cells must be verified again",
        );
        page.edit(RECORD, |t| t.replacen("{\n", "{\n  \"format\": 2,\n", 1));
        fails_with(
            &page,
            "was written by an older cargo xtask (record format 2; this one reads 3)",
        );
        page.edit(RECORD, |t| {
            t.replacen("\"format\": 2,", "\"format\": 4,", 1)
        });
        fails_with(
            &page,
            "was written by a newer cargo xtask (record format 4; this one reads 3)",
        );
    }

    #[test]
    fn a_missing_record_says_how_to_write_it() {
        let page = page();
        std::fs::remove_file(page.root.path().join(RECORD)).unwrap();
        fails_with(&page, REGENERATE);
    }

    #[test]
    fn cells_replace_their_own_and_keep_the_others() {
        let doc = page().doc;
        let mut new = doc.cells[5].clone();
        new.run = None;
        let provenance = Provenance {
            written_at: "now".into(),
            commit: "x".into(),
            by: WrittenBy::UpdateRelease {
                release: new.release,
            },
        };
        let updated = doc
            .clone()
            .with_cells(provenance.clone(), vec![new.clone()]);
        let mut expected = doc.cells.clone();
        expected[5] = new;
        assert_eq!(updated.cells, expected);
        assert_eq!(updated.provenance, provenance);
    }

    #[test]
    fn the_record_reads_back_as_written() {
        let page = page();
        let read = SupportDoc::read(page.root.path()).unwrap().unwrap();
        assert_eq!(read, page.doc);
        assert!(read.cells.iter().all(|c| c.contradictions().is_empty()));
        assert_eq!(read.markdown(), page.doc.markdown());
    }
}
