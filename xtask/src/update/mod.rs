//! `cargo xtask update-release X.Y`: one glibc release from import to verdict in one command,
//! a release the project has never seen included.
//!
//! 1. import the release into the store (from Debian, when it is not there, or from the
//!    `--source` named); a release without a row in data/releases.json gets one, pinning the
//!    tree the import made ([`new_release`]);
//! 2. rebase the nearest series onto it (`rebase-glibc`, with the build check after each
//!    patch, recorded resolutions replayed), writing the series into a candidate copy of
//!    `patches/` under `<cache>/update/X.Y/`;
//! 3. verify the release's cells (both sysroots built, matrix, glibc's `elf/` tests) with
//!    `verify`'s library, from the candidate;
//! 4. only when they are verified, write `patches/X.Y/` and the release's cells of
//!    docs/support.json, with docs/support.md rendered from it, and the counts of its first
//!    verified run into its row;
//!
//! For a new release, every generated part that follows from the table (the CI workflow, the
//! blocks that name the supported or the newest release) is written as soon as its row is,
//! and those that a run of the loaders writes are named with their commands.
//!
//! A stop is a finding (exit status 2) with the precise report and the commands that go on:
//! the rebase's work tree to fix, then `update-release X.Y --continue`. The rebase's state is
//! crash-safe and every later step is cached (builds, verified cells), so a run killed
//! anywhere goes on by running the same command again. `--no-verify` skips steps 3 and 4's
//! page (the series goes straight to `patches/X.Y/`): the rebase part alone, for rehearsals.

pub(crate) mod new_release;
pub(crate) mod retire;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cli::{self, Env, SomeTargets};
use crate::rebase::patch_checks::Checks;
use crate::rebase::records::Resolutions;
use crate::rebase::state::{self, RebaseState};
use crate::rebase::{self, command::options_for_cli, RebaseOutcome, Resume};
use crate::series::scope::SCOPE_FILE;
use crate::series::{Series, Workspace};
use crate::store::import::Source;
use crate::sysroot::compile_check;
use crate::util::exit::NeedsAttention;
use crate::util::{durable, paths, release_table, together};
use crate::verify::provenance::{Provenance, WrittenBy};
use crate::verify::support::SupportDoc;
use crate::verify::{self, CellReport, CellState};
use anyhow::{bail, Context, Result};
use model::{supported, Release};
use new_release::Asked;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The release to bring up to date: a supported one, or a new one (it gets a row in
    /// data/releases.json).
    #[arg(value_name = "X.Y", value_parser = new_release::parse_asked)]
    pub release: Asked,
    /// Where to import the release from when the store lacks it: `debian` (the orig tarball
    /// of its Debian version, through apt), `tarball:<path>` or `git:<url-or-path>`. A
    /// supported release's import is held to its pinned tree; a new one's pins what it makes.
    #[arg(long, default_value = "debian", value_parser = Source::parse, conflicts_with_all = ["continue_", "abort"])]
    pub source: Source,
    /// A new release's Debian source version, for its row [default: with --source debian,
    /// the newest the archive lists; otherwise none until Debian carries it].
    #[arg(long, value_name = "VERSION", conflicts_with_all = ["continue_", "abort"])]
    pub debian_version: Option<String>,
    /// The series to move onto it [default: the nearest other release with a series, the
    /// newer one when two are as near].
    #[arg(long, value_name = "X.Y", value_parser = cli::release(), conflicts_with_all = ["continue_", "abort"])]
    pub from: Option<Release>,
    /// Go on after fixing what the last run stopped at, in the work tree it named.
    #[arg(long = "continue", conflicts_with = "abort")]
    pub continue_: bool,
    /// With --continue: the fix deletes PATH (relative to the work tree).
    #[arg(long = "delete", value_name = "PATH", requires = "continue_")]
    pub delete: Vec<String>,
    /// Give up the stopped update; patches/ is untouched.
    #[arg(long)]
    pub abort: bool,
    /// Skip the build check after each patch (it takes a compiled build tree of the release:
    /// a cold build the first time).
    #[arg(long, conflicts_with_all = ["continue_", "abort"])]
    pub no_build_check: bool,
    /// Also run CMD (`sh -c`, in the work tree) after each patch, as `rebase-glibc --exec`.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["continue_", "abort"])]
    pub exec: Vec<String>,
    /// Skip the builds and the verification: write patches/X.Y/ as soon as the rebase went
    /// through, and leave docs/support.md alone (its row is then stale). For rehearsing the
    /// rebase part.
    #[arg(long, conflicts_with = "abort")]
    pub no_verify: bool,
    /// The cells to verify.
    #[command(flatten)]
    pub targets: SomeTargets,
    /// Verify again even cells whose cached report is current.
    #[arg(long)]
    pub force: bool,
}

/// Writes every generated part this process can make (`regenerate`'s, passed in from above)
/// under the checkout's root, and says what it did, part by part.
pub(crate) type Regenerate<'a> = &'a dyn Fn(&Path) -> Result<String>;

impl Args {
    pub(crate) fn run(self, env: &Env, regenerate: Regenerate<'_>) -> Result<()> {
        let ws = Workspace::open(env)?;
        for said in ws.recover()?.into_iter().chain(state::recover(&ws)?) {
            diagln!("{said}");
        }
        let onto = match &self.release {
            Asked::Supported(release) => {
                if self.debian_version.is_some() {
                    bail!(
                        "glibc {release} has a row already (Debian version {}): edit it in {}",
                        release.debian_version().unwrap_or("none"),
                        model::TABLE_PATH
                    );
                }
                *release
            }
            Asked::New(version) if self.continue_ || self.abort => bail!(
                "there is no update of glibc {version} to go on with or give up: glibc {version} has no row in {} \
                 (`cargo xtask update-release {version}` adds it)",
                model::TABLE_PATH
            ),
            Asked::New(version) => {
                diagln!("==== update-release glibc {version}: a new release");
                let release = new_release::admit(
                    &ws.store,
                    version,
                    &self.source,
                    self.debian_version.clone(),
                )?;
                // What follows from the table alone (the workflow's cells, the pages' lists
                // of releases) is the new table's from now on, whatever the rest of the run
                // comes to.
                out!("{}", regenerate(&paths::project_root())?);
                release
            }
        };
        // For the whole run: the final write comes long after the rebase.
        let _lock = ws.lock_release(onto)?;
        let candidate = candidate_dir(onto)?;
        // The candidate is written like patches/ (a series and its records together).
        for said in together::recover(&candidate)? {
            diagln!("{said}");
        }
        if self.abort {
            let written = rebase::abort(&ws, onto)?;
            durable::remove_tree(&candidate)?;
            match written.filter(|dir| *dir == ws.series_dir(onto)) {
                None => outln!("aborted the update of glibc {onto}; patches/ is unchanged"),
                Some(dir) => outln!(
                    "dropped the update of glibc {onto}, whose rebase had already written {} when it was interrupted: that is the rebased series now (git restores the old one)",
                    dir.display()
                ),
            }
            return Ok(());
        }
        let started = Instant::now();
        let mut phases: Vec<(&str, f64)> = Vec::new();

        diagln!("==== update-release glibc {onto}: import");
        let phase = Instant::now();
        let commit = match ws.store.release_commit(onto)? {
            Some(commit) => commit,
            None => {
                diagln!(
                    "importing glibc {onto} into {} (from {})",
                    ws.store.dir().display(),
                    self.source.describe()
                );
                ws.store.import(onto, &self.source)?
            }
        };
        diagln!("glibc {onto} is {} in {}", commit, ws.store.dir().display());
        phases.push(("import", phase.elapsed().as_secs_f64()));

        diagln!("==== update-release glibc {onto}: rebase");
        let phase = Instant::now();
        let resume = Resume {
            continue_: format!("cargo xtask update-release {onto} --continue"),
            abort: format!("cargo xtask update-release {onto} --abort"),
        };
        let mut options = options_for_cli(env, resume, compile_check::for_rebase(env));
        // What was fixed in a run whose verification failed waits in the candidate.
        options.carried_records = Some(candidate.clone());
        let (outcome, written_to) = if self.continue_ {
            let (stopped, _) = RebaseState::load(&ws, onto).with_context(|| {
                format!("there is no stopped update of glibc {onto} to continue: run `cargo xtask update-release {onto}`")
            })?;
            let out = stopped.out.clone();
            (
                rebase::continue_with(&ws, onto, &self.delete, options)?,
                out,
            )
        } else {
            if state::state_dir(&ws, onto).join("state").exists() {
                return Err(NeedsAttention(format!(
                    "a rebase onto glibc {onto} is stopped (in {}): fix what it stopped at there, then run \
                     `cargo xtask update-release {onto} --continue`, or give it up with `cargo xtask update-release {onto} --abort`",
                    state::tree_dir(&ws, onto).display()
                ))
                .into());
            }
            let from = match self.from {
                Some(from) => from,
                None => nearest_series(&ws, onto)?,
            };
            diagln!("moving the series of glibc {from} onto glibc {onto}");
            options.checks = Checks {
                exec: self.exec.clone(),
                build_check: !self.no_build_check,
            };
            let out = if self.no_verify {
                None
            } else {
                prepare_candidate(&ws, &candidate)?;
                Some(candidate.join(onto.version()))
            };
            options.out = out.clone();
            (rebase::start_with(&ws, Some(from), onto, options)?, out)
        };
        match outcome {
            RebaseOutcome::Written(written) => out!("{}", written.render()),
            RebaseOutcome::Stopped(stop) => {
                diag!("{}", stop.render());
                return Err(NeedsAttention(format!(
                    "the update of glibc {onto} stopped in its rebase (see above); after the fix: cargo xtask update-release {onto} --continue"
                ))
                .into());
            }
        }
        phases.push(("rebase", phase.elapsed().as_secs_f64()));

        let series_dir = match written_to {
            // Asked not to verify on a --continue of a run that was to: the candidate goes
            // to patches/ as it is.
            Some(candidate_series) if self.no_verify => {
                write_from_candidate(&ws, onto, &candidate_series)?;
                durable::remove_tree(&candidate)?;
                None
            }
            other => other,
        };
        let Some(series_dir) = series_dir else {
            // Written to patches/ directly: no verification asked (or a rebase started
            // without one). The records a candidate carried are in patches/ now too.
            durable::remove_tree(&candidate)?;
            carry_variants(&ws, onto)?;
            print_phases(onto, &phases, started);
            outln!(
                "patches/{onto} is written, not verified: docs/support.md's rows for {onto} are stale until \
                 `cargo xtask update-release {onto}` (or `cargo xtask verify --release {onto}`) runs"
            );
            return Ok(());
        };

        diagln!("==== update-release glibc {onto}: build pair and verify");
        let phase = Instant::now();
        let patches_dir = series_dir
            .parent()
            .context("the candidate series has a parent directory")?
            .to_path_buf();
        copy_scope(&ws, &patches_dir)?;
        let reports =
            verify::verify_release(env, &patches_dir, onto, &self.targets.targets.0, self.force)?;
        phases.push(("verify", phase.elapsed().as_secs_f64()));
        out!("{}", verify::render::table(&reports));
        let failed: Vec<String> = reports
            .iter()
            .filter(|r| r.state() != CellState::Verified)
            .map(|r| format!("{} {}", r.release, r.target))
            .collect();
        if !failed.is_empty() {
            print_phases(onto, &phases, started);
            let incomplete: Vec<String> = reports
                .iter()
                .filter_map(|r| match r.state() {
                    CellState::Incomplete(missing) => Some(format!(
                        "{} {}: {}",
                        r.release,
                        r.target,
                        missing.join("; ")
                    )),
                    _ => None,
                })
                .collect();
            if incomplete.len() == failed.len() {
                return Err(NeedsAttention(format!(
                    "verification is incomplete (a skip is not proof): patches/{onto} is not written (the candidate series is {}); \
                     run again where the missing inputs are (as root, with Debian's archive reachable):\n  {}",
                    series_dir.display(),
                    incomplete.join("\n  ")
                ))
                .into());
            }
            bail!(
                "verification failed for {}: patches/ is not written (the candidate series is {}, and the resolutions recorded in this run wait beside it for the next run to replay). \
                 To find the patch at fault, rebase with a check that shows the failure, e.g. \
                 `cargo xtask update-release {onto} --exec '<command>'`: it stops after the first patch that fails it, \
                 the fix you make there is recorded, and the next update replays it",
                failed.join(", "),
                series_dir.display()
            );
        }
        let root = paths::project_root();
        let counted = with_counts(&release_table::read()?, onto, &reports)?;
        let support = support_with(&root, onto, reports)?;

        diagln!("==== update-release glibc {onto}: write");
        // The support record's new text was made above: one that cannot take the cells stops
        // the update before the series changed, not after.
        if let Some(table) = counted {
            release_table::write(&table)?;
        }
        write_from_candidate(&ws, onto, &series_dir)?;
        let [record, page] = support.write(&root)?;
        durable::remove_tree(&candidate)?;
        carry_variants(&ws, onto)?;
        print_phases(onto, &phases, started);
        outln!(
            "wrote {} and the cells of glibc {onto} in {} and {}: review and commit them (with patches/resolutions/{onto}/ if it changed)",
            ws.series_dir(onto).display(),
            record.display(),
            page.display()
        );
        Ok(())
    }
}

/// Writes the candidate's series and its recorded resolutions (the whole set for `onto`, as
/// the rebase left them beside it) into `patches/`, together.
fn write_from_candidate(ws: &Workspace, onto: Release, candidate_series: &Path) -> Result<()> {
    let series = Series::load(candidate_series).with_context(|| {
        format!(
            "cannot read the rebased series {}",
            candidate_series.display()
        )
    })?;
    let candidate_root = candidate_series
        .parent()
        .context("the candidate series has a parent directory")?;
    let records = Resolutions::load(candidate_root, onto)?;
    let current = Resolutions::load(&ws.patches_dir, onto)?;
    let changed = records.texts(onto) != current.texts(onto);
    rebase::publish(
        &series,
        &ws.series_dir(onto),
        changed.then_some((&records, ws.patches_dir.as_path())),
        onto,
    )
}

/// `<cache>/update/<X.Y>/`: the candidate `patches/` a verified update is written from.
fn candidate_dir(onto: Release) -> Result<PathBuf> {
    Ok(paths::cache_dir()?.join("update").join(onto.version()))
}

/// A candidate `patches/` with the checkout's scope (what the verification's `rebase-glibc
/// --check` holds the series to) and nothing else but the recorded resolutions an earlier
/// run left there (made by a human, replayed by this run: see `Options::carried_records`).
fn prepare_candidate(ws: &Workspace, candidate: &Path) -> Result<()> {
    std::fs::create_dir_all(candidate)
        .with_context(|| format!("cannot create {}", candidate.display()))?;
    for entry in std::fs::read_dir(candidate)
        .with_context(|| format!("cannot read {}", candidate.display()))?
    {
        let entry = entry.with_context(|| format!("cannot read {}", candidate.display()))?;
        if entry.file_name() == crate::series::RESOLUTIONS_DIR {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            durable::remove_tree(&path)?;
        } else {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    copy_scope(ws, candidate)
}

fn copy_scope(ws: &Workspace, patches_dir: &Path) -> Result<()> {
    copy_series_data(&ws.patches_dir, patches_dir)
}

/// The files of the series directory `source` that are no release's series, copied into
/// `patches_dir`: the scope, and the declaration of the tests without the patch where
/// `source` has one.
fn copy_series_data(source: &Path, patches_dir: &Path) -> Result<()> {
    let (from, to) = (source.join(SCOPE_FILE), patches_dir.join(SCOPE_FILE));
    if from == to {
        return Ok(());
    }
    std::fs::copy(&from, &to)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    // What the series directory declares of its tests without the patch judges the new
    // release's cells as it judges the others'.
    let declared = crate::verify::cell::DECLARATION;
    let (from, to) = (source.join(declared), patches_dir.join(declared));
    if from.exists() {
        std::fs::copy(&from, &to)
            .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    }
    Ok(())
}

/// The series to move onto `onto`: the nearest other release with one (by position in the
/// supported list), the newer of two as near, since the series is developed on the newest;
/// `onto`'s own when it is the only one.
pub(crate) fn nearest_series(ws: &Workspace, onto: Release) -> Result<Release> {
    let at = |r: Release| supported().iter().position(|s| *s == r).unwrap_or(0) as i64;
    let with = ws.releases_with_series();
    let nearest = with
        .iter()
        .filter(|r| **r != onto)
        .min_by_key(|r| ((at(**r) - at(onto)).abs(), -at(**r)))
        .copied();
    match nearest {
        Some(from) => Ok(from),
        None if with.contains(&onto) => Ok(onto),
        None => bail!(
            "no patch series in {} to move onto glibc {onto}",
            ws.patches_dir.display()
        ),
    }
}

/// The variants of the series (`patches/variants/<name>/<X.Y>/`) that `onto` lacks, carried
/// from the newest older release that has one, when `onto` is the newest release: the
/// variants' users (the Jetson replay, CI's build of the variant) take the newest. The same
/// patch files are taken when they apply exactly on top of `onto`'s series, and written whole
/// or not at all; otherwise the command says so and what to do (patches/variants/README.md).
fn carry_variants(ws: &Workspace, onto: Release) -> Result<()> {
    if onto != Release::newest() {
        return Ok(());
    }
    for variant in model::Flavour::VARIANTS.iter().filter_map(|f| f.variant()) {
        let dest = crate::series::variant::dir(&ws.patches_dir, variant, onto);
        if dest.exists() {
            continue;
        }
        let Some(from) = supported()
            .iter()
            .rev()
            .copied()
            .filter(|r| *r < onto)
            .find(|r| crate::series::variant::dir(&ws.patches_dir, variant, *r).is_dir())
        else {
            continue;
        };
        let source = crate::series::variant::dir(&ws.patches_dir, variant, from);
        let parent = dest
            .parent()
            .context("a variant's directory has a parent")?;
        let staged = crate::util::staging::tempdir_in(parent, "variant")?;
        // Laid out as patches/ is, so that the check reads it as it will read the real one.
        let copy = crate::series::variant::dir(staged.path(), variant, onto);
        std::fs::create_dir_all(&copy)
            .with_context(|| format!("cannot create {}", copy.display()))?;
        for entry in std::fs::read_dir(&source)
            .with_context(|| format!("cannot read {}", source.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", source.display()))?;
            let text = crate::series::read_own(
                &entry.path(),
                crate::series::PATCH_LIMIT,
                crate::series::Head::Text,
            )?;
            durable::write_synced(&copy.join(entry.file_name()), text.as_bytes())?;
        }
        let mut series = ws.load_series(onto)?;
        let applies = crate::series::variant::append(&mut series, staged.path(), variant, onto)
            .and_then(|()| ws.commit_series(&series).map(drop));
        match applies {
            Ok(()) => {
                std::fs::rename(&copy, &dest)
                    .with_context(|| format!("cannot move {} into place", dest.display()))?;
                durable::sync_dir(parent)?;
                outln!(
                    "carried the {variant} variant from glibc {from}: {} applies on top of patches/{onto} as it is",
                    dest.display()
                );
            }
            Err(e) => outln!(
                "the {variant} variant of glibc {from} does not apply on top of patches/{onto} ({e:#}): \
                 carry it by hand (patches/variants/README.md); until then the Jetson replay and CI's build of the variant, which take the newest release, fail for want of it"
            ),
        }
    }
    Ok(())
}

/// `table` with the counts of the elf tests `reports` list unpatched added to `onto`'s row,
/// for the targets it has none for (the first verified run's count is the one a record is
/// held to: a later run that lists fewer is not what the release lists). `None` when the row
/// has every count already.
fn with_counts(
    table: &model::Table,
    onto: Release,
    reports: &[CellReport],
) -> Result<Option<model::Table>> {
    let mut facts = table
        .row(onto.version())
        .with_context(|| format!("glibc {onto} has no row in {}", model::TABLE_PATH))?
        .clone();
    let before = facts.clone();
    for report in reports.iter().filter(|r| r.release == onto) {
        let listed = report
            .run
            .as_ref()
            .and_then(|run| run.steps.elf_regressions.figures())
            .map(|diff| diff.listed.unpatched.count);
        if let Some(count) = listed {
            facts
                .elf_tests_unpatched
                .entry(report.target)
                .or_insert(count);
        }
    }
    if facts == before {
        return Ok(None);
    }
    Ok(Some(table.with(facts)?))
}

/// docs/support.json with the release's cells replaced (the others kept; only these when
/// there is none yet), to be written with docs/support.md once the series is.
fn support_with(root: &Path, onto: Release, reports: Vec<CellReport>) -> Result<SupportDoc> {
    let provenance = Provenance::now(root, WrittenBy::UpdateRelease { release: onto });
    Ok(match SupportDoc::read(root)? {
        Some(record) => record.with_cells(provenance, reports),
        None => SupportDoc::new(provenance, reports),
    })
}

fn print_phases(onto: Release, phases: &[(&str, f64)], started: Instant) {
    let parts: Vec<String> = phases
        .iter()
        .map(|(name, secs)| format!("{name} {secs:.1} s"))
        .collect();
    outln!(
        "update-release glibc {onto}: {} (total {:.1} s)",
        parts.join(", "),
        started.elapsed().as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The candidate's directory is judged as the checkout's series is: the scope and the
    /// declaration of the tests without the patch go with it; a directory without a
    /// declaration leaves none.
    #[test]
    fn the_series_data_travels_with_the_candidate() {
        let (source, candidate) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let declared = crate::verify::cell::DECLARATION;
        std::fs::write(source.path().join(SCOPE_FILE), "elf/**\n").unwrap();
        copy_series_data(source.path(), candidate.path()).unwrap();
        assert!(candidate.path().join(SCOPE_FILE).is_file());
        assert!(!candidate.path().join(declared).exists());
        std::fs::write(source.path().join(declared), r#"{"harness": 1}"#).unwrap();
        copy_series_data(source.path(), candidate.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(candidate.path().join(declared)).unwrap(),
            r#"{"harness": 1}"#
        );
    }

    /// A release's first verified runs give its row the counts it lacks; a row that has them
    /// keeps them (a later run listing fewer tests is judged against them, not taken).
    #[test]
    fn the_first_verified_run_counts_the_elf_tests_of_the_row() {
        use crate::verify::outcome::StepOutcome;
        use model::Target;
        let newest = Release::newest();
        let listing = |target, count| {
            let mut cell = crate::verify::render::tests::verified(newest.version(), target, "s");
            if let Some(run) = cell.run.as_mut() {
                if let StepOutcome::Done(diff) = &mut run.steps.elf_regressions {
                    diff.listed.unpatched.count = count;
                }
            }
            cell
        };
        let reports = [listing(Target::X86_64, 600), listing(Target::Aarch64, 550)];
        let mut row = newest.facts().clone();
        row.elf_tests_unpatched.clear();
        let table = release_table::read().unwrap().with(row).unwrap();
        let counted = with_counts(&table, newest, &reports).unwrap().unwrap();
        let counts = &counted.row(newest.version()).unwrap().elf_tests_unpatched;
        assert_eq!(counts.get(&Target::X86_64), Some(&600));
        assert_eq!(counts.get(&Target::Aarch64), Some(&550));
        let again = [listing(Target::X86_64, 100)];
        assert!(with_counts(&counted, newest, &again).unwrap().is_none());
    }

    #[test]
    fn the_nearest_series_is_the_closest_release_and_the_newer_of_two() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace {
            store: crate::store::SourceStore::open(&tmp.path().join("glibc.git")).unwrap(),
            patches_dir: tmp.path().join("patches"),
            rebase_dir: tmp.path().join("rebase"),
        };
        let rel = |v| Release::parse(v).unwrap();
        let with = |versions: &[&str]| {
            let _ = std::fs::remove_dir_all(&ws.patches_dir);
            for v in versions {
                let dir = ws.patches_dir.join(v);
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(crate::series::SERIES_FILE), "").unwrap();
            }
        };
        with(&["2.36", "2.42", "2.44"]);
        assert_eq!(nearest_series(&ws, rel("2.43")).unwrap(), rel("2.44"));
        assert_eq!(nearest_series(&ws, rel("2.41")).unwrap(), rel("2.42"));
        assert_eq!(nearest_series(&ws, rel("2.40")).unwrap(), rel("2.36"));
        assert_eq!(nearest_series(&ws, rel("2.44")).unwrap(), rel("2.42"));
        with(&["2.44"]);
        assert_eq!(nearest_series(&ws, rel("2.44")).unwrap(), rel("2.44"));
        with(&[]);
        assert!(nearest_series(&ws, rel("2.44")).is_err());
    }
}
