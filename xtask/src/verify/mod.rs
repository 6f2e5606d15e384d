//! `cargo xtask verify`: every selected cell — one (release, target) — proven from scratch
//! or from the cache: the series applies, both flavours build, the matrix passes patched and
//! fails exactly where it must unpatched, and glibc's own `elf/` tests show no regression
//! (natively, or under QEMU for a foreign target: see emulated.rs). Cells run one at a time; a failing cell does not stop the others.
//!
//! A cell's report is cached under `<cache>/verify/`, keyed by every input of its verdict
//! (series, both build keys, the harness and fixture sources, the judging files here:
//! cell.rs, outcome.rs, testsuite.rs, emulated.rs), so an interrupted
//! run goes on where it stopped and an unchanged cell is reported with the date it was
//! verified.

pub(crate) mod cell;
pub(crate) mod emulated;
pub(crate) mod outcome;
pub(crate) mod provenance;
pub(crate) mod render;
pub(crate) mod support;
pub(crate) mod testsuite;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use model::{Cell, Flavour, Target};

use cell::Plan;
pub(crate) use outcome::{CellReport, CellState};
use outcome::{CellRun, Machine, Seconds, StepOutcome, Steps};
use provenance::{Provenance, WrittenBy};
use support::SupportDoc;
use testsuite::TestList;

use crate::cli::{Cells, Env};
use crate::series::Workspace;
use crate::sysroot::Builder;
use crate::util::exit::NeedsAttention;
use crate::util::paths;
use model::Release;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub other: Option<Other>,
    #[command(flatten)]
    pub cells: Cells,
    /// Print the support record as JSON (docs/support.json's form: how it was made, and every
    /// cell's figures) instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the support page as markdown (docs/support.md's form) instead of the table.
    #[arg(long)]
    pub markdown: bool,
    /// Write the cells into docs/support.json (the other cells there kept) and docs/support.md
    /// rendered from it.
    #[arg(long)]
    pub write_support: bool,
    /// Verify again even cells whose cached report is current.
    #[arg(long)]
    pub force: bool,
    /// Build and run nothing: report the cells whose cached report is current, and the others
    /// as not verified (a support page of what has been proven so far, on this machine).
    #[arg(long, conflicts_with = "force")]
    pub cached_only: bool,
}

#[derive(Subcommand)]
pub(crate) enum Other {
    /// Merge support records written by `verify --json` (one job per cell on a CI engine)
    /// into one: the support table, or with --write-support docs/support.json and .md.
    Merge {
        /// Files holding `verify --json` output (docs/support.json is one).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the support page as markdown instead of the table.
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
        /// Print the merged support record as JSON instead of the table.
        #[arg(long)]
        json: bool,
        /// Write docs/support.json and docs/support.md from the merged record.
        #[arg(long)]
        write_support: bool,
    },
    /// Fail when docs/support.json and docs/support.md do not stand: a cell failed or is
    /// incomplete, a verdict is not what its figures give, the page is not the record
    /// rendered, a series changed since, or a cell differs from this machine's current report.
    CheckSupport,
}

/// What every cell of one run shares.
pub(crate) struct Run {
    pub workspace: Workspace,
    pub builder: Builder,
    /// When this run started (UTC), and the project commit it runs from.
    pub now: String,
    pub commit: String,
    pub progress: Progress,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let root = paths::project_root();
        match self.other {
            Some(Other::Merge {
                files,
                markdown,
                json,
                write_support,
            }) => {
                let output = Output {
                    json,
                    markdown,
                    write_support,
                };
                return merge(&root, &files, output);
            }
            Some(Other::CheckSupport) => return check_support(env, &root),
            None => {}
        }
        let cells: Vec<Cell> = self.cells.iter().collect();
        let run = Run {
            workspace: Workspace::open(env)?,
            builder: Builder::new(env),
            now: provenance::now(),
            commit: provenance::project_commit(&root),
            progress: Progress::new(cells.len()),
        };
        let mut reports = Vec::new();
        for Cell { release, target } in cells {
            let report = if self.cached_only {
                cached_cell(&run, release, target)
            } else {
                verify_cell(&run, release, target, self.force)
            };
            diagln!("{}", render::line(&report));
            reports.push(report);
            run.progress.cell_done();
        }
        let provenance = Provenance {
            written_at: run.now.clone(),
            commit: run.commit.clone(),
            by: WrittenBy::Verify {
                cached_only: self.cached_only,
            },
        };
        let output = Output {
            json: self.json,
            markdown: self.markdown,
            write_support: self.write_support,
        };
        output.show(&root, SupportDoc::new(provenance, reports))
    }
}

/// What a command prints and writes of its cells.
struct Output {
    json: bool,
    markdown: bool,
    write_support: bool,
}

impl Output {
    /// Prints the cells, writes them when asked, and ends the way their states say: a
    /// failed cell fails (1), an incomplete one needs attention (2).
    fn show(&self, root: &Path, doc: SupportDoc) -> Result<()> {
        if self.json {
            out!("{}", doc.json()?);
        } else if self.markdown {
            out!("{}", doc.markdown());
        } else {
            out!("{}", render::table(&doc.cells));
        }
        if self.write_support {
            let cells = doc.cells.clone();
            let written = match record_to_extend(root, &cells)? {
                Some(record) => {
                    // Said, so that a merge of fewer cells than the table holds is not taken
                    // for a record of only these.
                    let kept: Vec<String> = record
                        .cells
                        .iter()
                        .filter(|k| {
                            !cells
                                .iter()
                                .any(|c| (c.release, c.target) == (k.release, k.target))
                        })
                        .map(|k| format!("{} {}", k.release, k.target))
                        .collect();
                    if !kept.is_empty() {
                        diagln!(
                            "kept the record's rows of the cells this run does not have: {}",
                            kept.join(", ")
                        );
                    }
                    record.with_cells(doc.provenance.clone(), cells)
                }
                None => SupportDoc::new(doc.provenance.clone(), cells),
            };
            let [json, page] = written.write(root)?;
            diagln!("wrote {} and {}", json.display(), page.display());
        }
        judge(&doc.cells)
    }
}

/// The record whose other cells a run's `cells` join: none when the run has every cell of
/// the table, which then replaces the record whole. Not read in that case, so a record of an
/// older format is rewritten by the very command its refusal names.
fn record_to_extend(root: &Path, cells: &[CellReport]) -> Result<Option<SupportDoc>> {
    let every_cell = model::supported().iter().all(|&release| {
        Target::ALL.iter().all(|&target| {
            cells
                .iter()
                .any(|c| (c.release, c.target) == (release, target))
        })
    });
    if every_cell {
        return Ok(None);
    }
    SupportDoc::read(root)
}

/// Ok when no cell failed or is incomplete (cells not verified are listed, and claim
/// nothing).
fn judge(reports: &[CellReport]) -> Result<()> {
    let name = |r: &CellReport| format!("{} {}", r.release, r.target);
    let mut unverified = Vec::new();
    let mut failed = Vec::new();
    let mut incomplete = Vec::new();
    for report in reports {
        match report.state() {
            CellState::Verified => {}
            CellState::NotVerified => unverified.push(name(report)),
            CellState::Failed => failed.push(name(report)),
            CellState::Incomplete(missing) => {
                incomplete.push(format!("{}: {}", name(report), missing.join("; ")))
            }
        }
    }
    if !unverified.is_empty() {
        diagln!(
            "not verified on this machine yet (no current report): {}",
            unverified.join(", ")
        );
    }
    if !failed.is_empty() {
        bail!("verification failed for {}", failed.join(", "));
    }
    if !incomplete.is_empty() {
        return Err(NeedsAttention(format!(
            "incomplete, so not verified (a skip is not proof; run where the inputs are: as root, with Debian's archive reachable):\n  {}",
            incomplete.join("\n  ")
        ))
        .into());
    }
    Ok(())
}

/// Verifies (or takes from the cache) the cells of `release`, one per target, with the series
/// in `patches_dir` (a copy of `patches/` not yet written, say): what `cargo xtask
/// update-release` runs before it writes a series into `patches/`. The cache keys are the
/// series' content, not where it lives, so a later `cargo xtask verify` of the same series
/// is a cache hit.
pub(crate) fn verify_release(
    env: &Env,
    patches_dir: &Path,
    release: Release,
    targets: &[Target],
    force: bool,
) -> Result<Vec<CellReport>> {
    let mut workspace = Workspace::open(env)?;
    workspace.patches_dir = patches_dir.to_path_buf();
    let run = Run {
        workspace,
        builder: Builder {
            patches_dir: patches_dir.to_path_buf(),
            ..Builder::new(env)
        },
        now: provenance::now(),
        commit: provenance::project_commit(&paths::project_root()),
        progress: Progress::new(targets.len()),
    };
    let mut reports = Vec::new();
    for target in targets {
        let report = verify_cell(&run, release, *target, force);
        diagln!("{}", render::line(&report));
        reports.push(report);
        run.progress.cell_done();
    }
    Ok(reports)
}

/// The cell's report: from the cache when its key is current, else verified now (and cached
/// when verified: a failed or incomplete cell is looked at again next time).
fn verify_cell(run: &Run, release: Release, target: Target, force: bool) -> CellReport {
    let (key, series, cached) = match identify(run, release, target) {
        Ok(found) => found,
        Err(err) => return broken(run, release, target, err),
    };
    let path = cache_path(release, target, &key);
    if !force {
        if let Some(mut report) = path.as_ref().ok().and_then(|p| load(p, &key)) {
            report.from_cache = true;
            return report;
        }
    }
    let plan = Plan {
        release,
        target,
        cached,
        recorded: cell::Recorded::look(&run.builder, release, target),
    };
    run.progress
        .start_cell(release, target, plan.estimate_minutes());
    let report = cell::verify(run, &plan, key, series);
    if report.state() == CellState::Verified {
        if let Ok(path) = &path {
            if let Err(err) = store(path, &report) {
                diagln!("warning: cannot cache the report of {release} {target}: {err:#}");
            }
        }
    }
    report
}

/// The cell's current cached report, or one that says it was not verified: nothing is built
/// or run.
fn cached_cell(run: &Run, release: Release, target: Target) -> CellReport {
    let (key, series, _) = match identify(run, release, target) {
        Ok(found) => found,
        Err(err) => return broken(run, release, target, err),
    };
    let cached = cache_path(release, target, &key)
        .ok()
        .and_then(|path| load(&path, &key));
    if let Some(mut report) = cached {
        report.from_cache = true;
        return report;
    }
    CellReport::new(release, target, series, key)
}

/// The cell's key, its series' content id, and which flavours' sysroots are cached.
fn identify(run: &Run, release: Release, target: Target) -> Result<(String, String, [bool; 2])> {
    let series = run.workspace.load_series(release)?.content_id();
    let declared = cell::Declaration::of(&run.workspace.patches_dir)?.id();
    let mut builds = Vec::new();
    let mut cached = [false; 2];
    for (i, flavour) in Flavour::ALL.into_iter().enumerate() {
        let (key, hit) = run.builder.key(release, target, flavour)?;
        builds.push(key);
        cached[i] = hit;
    }
    Ok((cell_key(&series, &declared, &builds)?, series, cached))
}

/// The cell's current key without writing anything (the store is only read): for
/// check-support.
fn current_key(
    workspace: &Workspace,
    builder: &Builder,
    release: Release,
    target: Target,
) -> Result<String> {
    let series = workspace.load_series(release)?.content_id();
    let declared = cell::Declaration::of(&workspace.patches_dir)?.id();
    let builds = Flavour::ALL
        .into_iter()
        .map(|flavour| builder.key_read_only(release, target, flavour))
        .collect::<Result<Vec<String>>>()?;
    cell_key(&series, &declared, &builds)
}

/// Hash of every input of a cell's verdict: what it checks (`cell::RECIPE`), the series and
/// what its directory declares of its tests without the patch, both builds (patched,
/// unpatched) and the sources that judge.
fn cell_key(series: &str, declared: &str, builds: &[String]) -> Result<String> {
    let mut text = format!(
        "recipe {}\nseries {series}\nwithout the patch {declared}\n",
        cell::RECIPE
    );
    for (flavour, key) in Flavour::ALL.into_iter().zip(builds) {
        text.push_str(&format!("build {flavour} {key}\n"));
    }
    text.push_str(&format!("harness {}\n", harness_digest()?));
    Ok(
        git2::Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
            .context("cannot hash the cell's inputs")?
            .to_string(),
    )
}

/// The digest of the sources that decide how a cell is judged (the harness, the fixtures,
/// the resolution stage, this module's judging files), as this binary was built from them
/// (see build.rs and `util/source_digest.rs`).
fn harness_digest() -> Result<String> {
    Ok(include_str!(concat!(env!("OUT_DIR"), "/harness_digest")).to_string())
}

/// A cell whose inputs could not even be resolved: a failed report, not a failed run.
fn broken(run: &Run, release: Release, target: Target, err: anyhow::Error) -> CellReport {
    let mut report = CellReport::new(release, target, "?".into(), String::new());
    report.run = Some(CellRun {
        verified_at: run.now.clone(),
        commit: run.commit.clone(),
        steps: Steps {
            applies: StepOutcome::Error(format!(
                "the cell's inputs could not be resolved: {err:#}"
            )),
            ..Steps::not_run()
        },
        machine: Machine::default(),
        seconds: Seconds::default(),
        suites_ran: None,
    });
    report
}

/// `<cache>/verify/cells/<release>-<target>-<key>.json`: one report per key, so that two
/// series of a release (main's and one under review) keep their reports side by side
/// instead of each evicting the other's.
fn cache_path(release: Release, target: Target, key: &str) -> Result<PathBuf> {
    Ok(cells_dir()?.join(format!("{release}-{target}-{key}.json")))
}

fn cells_dir() -> Result<PathBuf> {
    Ok(paths::cache_dir()?.join("verify/cells"))
}

/// Whether the cache holds a report of the cell under any key (else its current key need
/// not be computed to look for one).
fn any_cached(release: Release, target: Target) -> Result<bool> {
    let prefix = format!("{release}-{target}-");
    let dir = cells_dir()?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", dir.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The cached report at `path` when its key is `key` and it is verified.
fn load(path: &Path, key: &str) -> Option<CellReport> {
    let text = std::fs::read_to_string(path).ok()?;
    let report: CellReport = serde_json::from_str(&text).ok()?;
    (report.key == key && report.state() == CellState::Verified).then_some(report)
}

/// Written whole or not at all: a killed run leaves the old report or the new one.
fn store(path: &Path, report: &CellReport) -> Result<()> {
    let text = serde_json::to_string_pretty(report).context("cannot serialize a cell report")?;
    crate::util::durable::replace_file(path, text.as_bytes())
}

/// One record of the cells in `files` (records of `verify --json`), each cell once.
fn merge(root: &Path, files: &[PathBuf], output: Output) -> Result<()> {
    let mut cells: Vec<CellReport> = Vec::new();
    for file in files {
        let doc = SupportDoc::read_file(file)?;
        for cell in doc.cells {
            if cells
                .iter()
                .any(|c| (c.release, c.target) == (cell.release, cell.target))
            {
                bail!(
                    "glibc {} {} is in more than one of the files: merge each cell once",
                    cell.release,
                    cell.target
                );
            }
            cells.push(cell);
        }
    }
    let doc = SupportDoc::new(Provenance::now(root, WrittenBy::Merge), cells);
    if doc
        .cells
        .iter()
        .any(|c| c.state() == CellState::NotVerified)
    {
        output.show(root, doc)?;
        bail!("not every cell was verified");
    }
    output.show(root, doc)
}

/// `verify check-support`, with this machine's verify cache compared where it holds a
/// current report (the cell's current key is computed only then, reading the store).
fn check_support(env: &Env, root: &Path) -> Result<()> {
    paths::named_patches_dir_exists(&env.patches)?;
    let context = Workspace::open_read_only(env).map(|workspace| (workspace, Builder::new(env)));
    let local = |release: Release, target: Target| -> Result<Option<CellReport>> {
        if !any_cached(release, target)? {
            return Ok(None);
        }
        let (workspace, builder) = context.as_ref().map_err(|err| anyhow::anyhow!("{err:#}"))?;
        let key = current_key(workspace, builder, release, target).with_context(|| {
            format!("cannot tell whether the cached report of {release} {target} is current")
        })?;
        Ok(load(&cache_path(release, target, &key)?, &key))
    };
    // The lists the builds of each cell gave, where this machine ran their suites.
    let any_recorded = testsuite::any_recorded();
    let lists = |release: Release, target: Target| -> Result<[Option<TestList>; 2]> {
        if !any_recorded {
            return Ok([None, None]);
        }
        let (_, builder) = context.as_ref().map_err(|err| anyhow::anyhow!("{err:#}"))?;
        let list = |flavour: Flavour| -> Result<Option<TestList>> {
            let key = builder.key_read_only(release, target, flavour)?;
            testsuite::recorded_list(&key, cell::SUITE)
        };
        Ok([list(Flavour::Unpatched)?, list(Flavour::Patched)?])
    };
    // The one judge of a series, where the store is here to judge with.
    let judge = |series: crate::series::Series| {
        let Ok((workspace, _)) = context.as_ref() else {
            return Ok(None);
        };
        crate::rebase::series_check::check_read(workspace, series).map(Some)
    };
    support::check(root, &env.patches, &local, &lists, &judge)
}

/// Which cell and step is running, and an estimate of what is left.
pub(crate) struct Progress {
    cells: usize,
    started: Instant,
    state: std::cell::RefCell<ProgressState>,
}

#[derive(Default)]
struct ProgressState {
    done: usize,
    /// Estimated minutes of the cells not started yet (filled as cells start).
    current_estimate: f64,
    cell_started: Option<Instant>,
}

impl Progress {
    fn new(cells: usize) -> Progress {
        Progress {
            cells,
            started: Instant::now(),
            state: Default::default(),
        }
    }

    fn start_cell(&self, release: Release, target: Target, minutes: f64) {
        let mut state = self.state.borrow_mut();
        state.current_estimate = minutes;
        state.cell_started = Some(Instant::now());
        let left = self.cells - state.done;
        diagln!(
            "==== cell {}/{} glibc {release} {target}: estimated {minutes:.0} min (cells left: {left}, elapsed {:.0} min)",
            state.done + 1,
            self.cells,
            self.started.elapsed().as_secs_f64() / 60.0
        );
    }

    fn step(&self, release: Release, target: Target, what: &str) {
        let state = self.state.borrow();
        let spent = state
            .cell_started
            .map_or(0.0, |t| t.elapsed().as_secs_f64() / 60.0);
        diagln!(
            "---- {release} {target}: {what} (cell {}/{}, {spent:.1} of ~{:.0} min)",
            state.done + 1,
            self.cells,
            state.current_estimate
        );
    }

    fn cell_done(&self) {
        self.state.borrow_mut().done += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of an older format is refused when a run of some cells would join it, and
    /// replaced, not read, by a run of every cell: the command its refusal names.
    #[test]
    fn a_run_of_every_cell_replaces_a_record_of_an_older_format() {
        let root = tempfile::TempDir::new().unwrap();
        std::fs::create_dir(root.path().join("docs")).unwrap();
        std::fs::write(
            root.path().join(support::RECORD),
            "{\n  \"format\": 2,\n  \"cells\": []\n}\n",
        )
        .unwrap();
        let cell = |release, target| CellReport::new(release, target, "s".into(), "k".into());
        let every: Vec<CellReport> = model::supported()
            .iter()
            .flat_map(|&release| Target::ALL.map(|target| cell(release, target)))
            .collect();
        assert!(record_to_extend(root.path(), &every).unwrap().is_none());
        let err = record_to_extend(root.path(), &every[..1]).unwrap_err();
        assert!(
            format!("{err:#}").contains("record format 2; this one reads 3"),
            "{err:#}"
        );
    }
}
