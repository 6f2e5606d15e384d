//! `cargo xtask verify`: every selected cell — one (release, target) — proven from scratch
//! or from the cache: the series applies, both flavours build, the matrix passes patched and
//! fails exactly where it must unpatched, and (natively) glibc's own `elf/` tests show no
//! regression. Cells run one at a time; a failing cell does not stop the others.
//!
//! A cell's report is cached under `<cache>/verify/`, keyed by every input of its verdict
//! (series, both build keys, the harness and fixture sources, this module), so an interrupted
//! run goes on where it stopped and an unchanged cell is reported with the date it was
//! verified.

mod cell;
pub mod render;
pub mod support;
mod testsuite;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use loader_tests::{Flavour, Target};

use cell::Plan;
pub use cell::{CellReport, Check, Verdict};

use crate::build::{Builder, Layout};
use crate::cli::{Cells, Global};
use crate::series::Workspace;
use crate::store::release::Release;
use crate::util::paths;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub other: Option<Other>,
    #[command(flatten)]
    pub cells: Cells,
    /// Print the reports as JSON (one array of cells) instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the support table as markdown (what docs/support.md holds).
    #[arg(long)]
    pub markdown: bool,
    /// Verify again even cells whose cached report is current.
    #[arg(long)]
    pub force: bool,
    /// Build and run nothing: report the cells whose cached report is current, and the others
    /// as not verified (a support page of what has been proven so far, on this machine).
    #[arg(long, conflicts_with = "force")]
    pub cached_only: bool,
}

#[derive(Subcommand)]
pub enum Other {
    /// Merge cell reports written by `verify --json` (one job per cell on a CI engine) into
    /// the support table.
    Merge {
        /// Files holding `verify --json` output.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long)]
        markdown: bool,
    },
    /// Fail when docs/support.md does not describe the series in patches/ as they are now.
    CheckSupport,
}

/// What every cell of one run shares.
pub struct Run {
    pub workspace: Workspace,
    pub builder: Builder,
    /// When this run started (UTC), and the project commit it runs from.
    pub now: String,
    pub commit: String,
    pub progress: Progress,
}

impl Args {
    pub fn run(self, global: &Global) -> Result<()> {
        match self.other {
            Some(Other::Merge { files, markdown }) => return merge(&files, markdown),
            Some(Other::CheckSupport) => {
                return support::check(&paths::project_root(), &paths::patches_dir())
            }
            None => {}
        }
        let cells: Vec<(Release, Target)> = self.cells.iter().collect();
        let run = Run {
            workspace: Workspace::open_default(global.store.as_deref())?,
            builder: Builder {
                layout: Layout::from_env()?,
                store: global.store.clone(),
                patches_dir: paths::patches_dir(),
                jobs: crate::build::default_jobs(),
                rebuild: false,
            },
            now: render::now(),
            commit: render::project_commit(&paths::project_root()),
            progress: Progress::new(cells.len()),
        };
        let mut reports = Vec::new();
        for (release, target) in cells {
            let report = if self.cached_only {
                cached_cell(&run, release, target)
            } else {
                verify_cell(&run, release, target, self.force)
            };
            diagln!("{}", render::line(&report));
            reports.push(report);
            run.progress.cell_done();
        }
        if self.json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&reports).context("cannot write the JSON report")?
            );
        } else if self.markdown {
            out!(
                "{}",
                render::markdown(&reports, &run.now, &run.commit, self.cached_only)
            );
        } else {
            out!("{}", render::table(&reports));
        }
        let unverified: Vec<String> = reports
            .iter()
            .filter(|r| r.is_unverified())
            .map(|r| format!("{} {}", r.release, r.target))
            .collect();
        if !unverified.is_empty() {
            diagln!(
                "not verified on this machine yet (no current report): {}",
                unverified.join(", ")
            );
        }
        let failed: Vec<String> = reports
            .iter()
            .filter(|r| !r.passed && !r.is_unverified())
            .map(|r| format!("{} {}", r.release, r.target))
            .collect();
        if !failed.is_empty() {
            bail!("verification failed for {}", failed.join(", "));
        }
        Ok(())
    }
}

/// Verifies (or takes from the cache) the cells of `release`, one per target, with the series
/// in `patches_dir` (a copy of `patches/` not yet written, say): what `cargo xtask
/// update-release` runs before it writes a series into `patches/`. The cache keys are the
/// series' content, not where it lives, so a later `cargo xtask verify` of the same series
/// is a cache hit.
pub fn verify_release(
    global: &Global,
    patches_dir: &Path,
    release: Release,
    targets: &[Target],
    force: bool,
) -> Result<Vec<CellReport>> {
    let mut workspace = Workspace::open_default(global.store.as_deref())?;
    workspace.patches_dir = patches_dir.to_path_buf();
    let run = Run {
        workspace,
        builder: Builder {
            layout: Layout::from_env()?,
            store: global.store.clone(),
            patches_dir: patches_dir.to_path_buf(),
            jobs: crate::build::default_jobs(),
            rebuild: false,
        },
        now: render::now(),
        commit: render::project_commit(&paths::project_root()),
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
/// when it passed: a failure is looked at again next time).
fn verify_cell(run: &Run, release: Release, target: Target, force: bool) -> CellReport {
    let (key, series, cached) = match identify(run, release, target) {
        Ok(found) => found,
        Err(err) => return broken(run, release, target, err),
    };
    let path = cache_path(release, target);
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
    };
    run.progress
        .start_cell(release, target, plan.estimate_minutes());
    let report = cell::verify(run, &plan, key, series);
    if report.passed {
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
    let cached = cache_path(release, target)
        .ok()
        .and_then(|path| load(&path, &key));
    if let Some(mut report) = cached {
        report.from_cache = true;
        return report;
    }
    let mut report = broken(run, release, target, anyhow::anyhow!("not verified"));
    report.series = series;
    report.key = key;
    report.mark_unverified();
    report
}

/// The cell's key, its series' content id, and which flavours' sysroots are cached.
fn identify(run: &Run, release: Release, target: Target) -> Result<(String, String, [bool; 2])> {
    let series = run.workspace.load_series(release)?.content_id();
    let mut text = format!("recipe {}\nseries {series}\n", cell::RECIPE);
    let mut cached = [false; 2];
    for (i, flavour) in Flavour::ALL.into_iter().enumerate() {
        let (key, hit) = run.builder.key(release, target, flavour)?;
        text.push_str(&format!("build {flavour} {key}\n"));
        cached[i] = hit;
    }
    text.push_str(&format!("harness {}\n", harness_digest()?));
    let key = git2::Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
        .context("cannot hash the cell's inputs")?
        .to_string();
    Ok((key, series, cached))
}

/// The sources that decide how a cell is judged: the harness, the fixtures, this module.
fn harness_digest() -> Result<String> {
    let root = paths::project_root();
    let mut files = Vec::new();
    for dir in [
        "loader-tests/src",
        "c-fixtures",
        "xtask/src/verify",
        "xtask/src/resolution",
    ] {
        collect_files(&root.join(dir), &mut files)?;
    }
    files.sort();
    let mut text = Vec::new();
    for file in files {
        let bytes =
            std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let rel = file.strip_prefix(&root).unwrap_or(&file);
        text.extend_from_slice(format!("{}\0{}\0", rel.display(), bytes.len()).as_bytes());
        text.extend_from_slice(&bytes);
    }
    Ok(git2::Oid::hash_object(git2::ObjectType::Blob, &text)
        .context("cannot hash the harness sources")?
        .to_string())
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        if path.is_dir() {
            collect_files(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// A cell whose inputs could not even be resolved: a failed report, not a failed run.
fn broken(run: &Run, release: Release, target: Target, err: anyhow::Error) -> CellReport {
    let not_run = || Check {
        verdict: Verdict::NotRun,
        summary: "the cell's inputs could not be resolved".into(),
    };
    CellReport {
        release: release.version.to_string(),
        target,
        verified_at: run.now.clone(),
        commit: run.commit.clone(),
        series: "?".into(),
        key: String::new(),
        applies: Check {
            verdict: Verdict::Fail,
            summary: format!("{err:#}"),
        },
        build: not_run(),
        matrix: not_run(),
        sensitivity: not_run(),
        series_tests: not_run(),
        elf_regressions: not_run(),
        series_test_results: Vec::new(),
        elf: None,
        seconds: Default::default(),
        passed: false,
        from_cache: false,
    }
}

fn cache_path(release: Release, target: Target) -> Result<PathBuf> {
    Ok(paths::cache_dir()?
        .join("verify")
        .join(format!("{release}-{target}.json")))
}

fn load(path: &Path, key: &str) -> Option<CellReport> {
    let text = std::fs::read_to_string(path).ok()?;
    let report: CellReport = serde_json::from_str(&text).ok()?;
    (report.key == key && report.passed).then_some(report)
}

/// Written whole or not at all: a killed run leaves the old report or the new one.
fn store(path: &Path, report: &CellReport) -> Result<()> {
    let text = serde_json::to_string_pretty(report).context("cannot serialize a cell report")?;
    crate::util::durable::replace_file(path, text.as_bytes())
}

fn merge(files: &[PathBuf], markdown: bool) -> Result<()> {
    let mut reports: Vec<CellReport> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let cells: Vec<CellReport> = serde_json::from_str(&text)
            .with_context(|| format!("{} is not `verify --json` output", file.display()))?;
        reports.extend(cells);
    }
    reports.sort_by(|a, b| (&a.release, a.target).cmp(&(&b.release, b.target)));
    if markdown {
        let commit = reports.first().map_or("?".into(), |r| r.commit.clone());
        out!(
            "{}",
            render::markdown(&reports, &render::now(), &commit, false)
        );
    } else {
        out!("{}", render::table(&reports));
    }
    if reports.iter().any(|r| !r.passed) {
        bail!("not every cell passed");
    }
    Ok(())
}

/// Which cell and step is running, and an estimate of what is left.
pub struct Progress {
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
