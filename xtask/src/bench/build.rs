//! `cargo xtask bench build`: what a proof costs in glibc builds, beside the plain way, from one
//! run in a fresh cache: the first flavour of a release (cold), the second one derived from the
//! same tree (the pair), a variant on top, a plain `configure && make && make install` of the
//! same patched sources, whether the derived and the plain build installed the same programs,
//! and the inner loop (an edit under `elf/` to the matrix's verdict).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use model::{Flavour, Target};
use xshell::cmd;

use crate::cli::{self, Env, OneRelease, OneTarget};
use crate::store::SourceStore;
use crate::sysroot::recipe::Recipe;
use crate::sysroot::source::{self, BuildSource};
use crate::sysroot::{compare, default_jobs, quick, workdir, Builder, Layout};
use crate::util::{lock, shell};
use model::Release;

/// The file the inner loop edits: the loader's search code, which the series edits.
const EDITED: &str = "elf/dl-load.c";

#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub release: OneRelease,
    #[command(flatten)]
    pub target: OneTarget,
    #[arg(long, value_parser = cli::at_least_one::<usize>)]
    pub jobs: Option<usize>,
    /// An empty cache root to build in (kept afterwards). Default: a fresh directory under
    /// the cache root, removed afterwards.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Skip the plain build and the identical-output comparison (~15 min).
    #[arg(long)]
    pub no_plain: bool,
}

/// One timed step, for the table.
struct Row {
    what: String,
    time: Option<Duration>,
    note: String,
}

impl BenchArgs {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let release = self.release.release;
        let target = self.target.target;
        let jobs = self.jobs.unwrap_or_else(default_jobs);
        let scratch;
        let root = match &self.cache {
            Some(dir) => dir.clone(),
            None => {
                let cache = &env.cache;
                fs::create_dir_all(cache)
                    .with_context(|| format!("cannot create {}", cache.display()))?;
                scratch = tempfile::Builder::new()
                    .prefix("bench-")
                    .tempdir_in(cache)
                    .context("cannot create a bench cache")?;
                scratch.path().to_path_buf()
            }
        };
        let layout = Layout::under(&root);
        if layout.work.exists() || layout.builds.exists() {
            bail!(
                "{} already holds builds: the bench times cold builds, so it needs an empty \
                 cache (omit --cache for a fresh one)",
                root.display()
            );
        }
        let builder = Builder {
            layout: layout.clone(),
            jobs,
            ..Builder::new(env)
        };
        let label = format!("glibc {release} {}", target.name());
        let mut rows = Vec::new();
        let timed = |what: &str, flavour: Flavour| -> Result<(Duration, PathBuf)> {
            diagln!("==== bench build: {label} {flavour} ({what})");
            timed_build(&builder, release, target, flavour)
        };

        let (cold, _) = timed("cold", Flavour::Unpatched)?;
        rows.push(Row {
            what: format!("cold build ({label} unpatched)"),
            time: Some(cold),
            note: String::new(),
        });
        let (second, patched_sysroot) = timed("from the same tree", Flavour::Patched)?;
        rows.push(Row {
            what: "second flavour from the same tree (patched)".into(),
            time: Some(second),
            note: format!(
                "pair {} = {:.2}x the cold build",
                minutes(cold + second),
                (cold + second).as_secs_f64() / cold.as_secs_f64()
            ),
        });
        for variant in Flavour::VARIANTS {
            if source::series_for(&builder.patches_dir, release, variant).is_err() {
                rows.push(Row {
                    what: format!("variant {variant}"),
                    time: None,
                    note: format!("not run: the variant has no patches for glibc {release}"),
                });
                continue;
            }
            let (time, _) = timed("from the same tree", variant)?;
            rows.push(Row {
                what: format!("variant {variant} from the same tree"),
                time: Some(time),
                note: format!(
                    "{:.2}x the cold build",
                    time.as_secs_f64() / cold.as_secs_f64()
                ),
            });
        }

        let mut comparison = None;
        if self.no_plain {
            rows.push(Row {
                what: "plain configure && make && make install (patched)".into(),
                time: None,
                note: "not run (--no-plain)".into(),
            });
        } else {
            diagln!("==== bench build: {label} patched, the plain way");
            let (time, dest) = plain_build(&builder, &root, release, target)?;
            rows.push(Row {
                what: "plain configure && make && make install (patched)".into(),
                time: Some(time),
                note: format!(
                    "the pair above costs {:.2}x this",
                    (cold + second).as_secs_f64() / time.as_secs_f64()
                ),
            });
            comparison = Some(compare::compare_trees(&patched_sysroot, &dest)?);
        }

        diagln!("==== bench build: {label} inner loop (edit {EDITED} in a patch, build, matrix)");
        let (inner, verdict, quick_vs_full) = inner_loop(env, &builder, release, target, &root)?;
        rows.push(Row {
            what: format!("inner loop: {EDITED} edited in a patch -> matrix verdict"),
            time: Some(inner),
            note: verdict,
        });

        outln!(
            "glibc {release} {} builds, make -j{jobs}, in {} (times exclude waiting for locks)",
            target.name(),
            root.display()
        );
        for row in &rows {
            let time = row.time.map_or_else(|| "-".to_string(), minutes);
            outln!("  {:<52} {:>9}  {}", row.what, time, row.note);
        }
        match &comparison {
            Some(c) => {
                outln!(
                "identical output (derived patched sysroot vs the plain build's install): {}\n  {}",
                if c.same_programs() { "same programs" } else { "DIFFERENT" },
                c.render(8)
            )
            }
            None => outln!("identical output: not compared (--no-plain)"),
        }
        outln!(
            "inner loop's quick sysroot vs the full path's for the same edit: {}\n  {}",
            if quick_vs_full.same_programs() {
                "same programs"
            } else {
                "DIFFERENT"
            },
            quick_vs_full.render(8)
        );
        outln!("load average afterwards: {}", load_average());
        if comparison.as_ref().is_some_and(|c| !c.same_programs()) {
            bail!("the derived build and the plain build installed different programs");
        }
        if !quick_vs_full.same_programs() {
            bail!("the quick path and the full path installed different programs");
        }
        Ok(())
    }
}

/// The inner loop: a patch of the series edited under `elf/` (a message of `elf/dl-load.c`
/// changed, as a developer fixing a patch would), the build (the quick path, see `quick`),
/// and the matrix on it: the time from the edit to the verdict, and the verdict. Then the
/// same edit through the full path (whole make, `make install`), and whether the two
/// sysroots are the same programs.
fn inner_loop(
    env: &Env,
    builder: &Builder,
    release: Release,
    target: Target,
    root: &Path,
) -> Result<(Duration, String, compare::Comparison)> {
    builder.ensure(release, target, Flavour::Patched)?;
    let patches = root.join("edited-patches");
    edit_series(env, builder, release, &patches)?;
    let edited = Builder {
        patches_dir: patches,
        ..builder.clone()
    };
    let started = Instant::now();
    let quick = edited.ensure(release, target, Flavour::Patched)?;
    let (report, _) = crate::resolution::run_matrix(quick.sysroot.clone(), None)?;
    let time = started.elapsed().saturating_sub(quick.lock_wait);
    let s = report.summary;
    let verdict = format!(
        "{} pass, {} skipped, {} mismatch",
        s.pass, s.skipped, s.mismatch
    );

    // The same sources through the full path, beside it.
    let kept = root.join("quick-sysroot");
    let quick_sysroot = &quick.sysroot.path;
    let sh = shell::here()?;
    cmd!(sh, "cp -al {quick_sysroot} {kept}")
        .quiet()
        .run()
        .with_context(|| format!("cannot keep {}", quick_sysroot.display()))?;
    quick::forget(&builder.work_dir(release, target))?;
    let full = Builder {
        rebuild: true,
        ..edited
    }
    .ensure(release, target, Flavour::Patched)?;
    let comparison = compare::compare_trees(&kept, &full.sysroot.path)?;
    Ok((time, verdict, comparison))
}

/// Writes into `dir` a copy of `patches/` whose `release` series has `elf/dl-load.c` edited in
/// its last patch.
fn edit_series(env: &Env, builder: &Builder, release: Release, dir: &Path) -> Result<()> {
    const MESSAGE: &str = "cannot create cache for search path";
    let ws = crate::series::Workspace::open(env)?;
    let series = source::load_series(&builder.patches_dir, release)?;
    let (_, mut commits) = ws.commit_series(&series)?;
    let repo = ws.store.repo();
    let last = repo.find_commit(*commits.last().context("an empty series")?)?;
    let tree = last.tree()?;
    let entry = tree
        .get_path(Path::new(EDITED))
        .with_context(|| format!("the patched tree has no {EDITED}"))?;
    let text = String::from_utf8(repo.find_blob(entry.id())?.content().to_vec())
        .with_context(|| format!("{EDITED} is not UTF-8"))?;
    if !text.contains(MESSAGE) {
        bail!("{EDITED} of glibc {release} lacks the message the bench edits ({MESSAGE:?})");
    }
    let edited = text.replacen(MESSAGE, &format!("{MESSAGE} (edited)"), 1);
    let blob = repo.blob(edited.as_bytes())?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert(EDITED, blob, git2::FileMode::Blob);
    let new_tree = repo.find_tree(update.create_updated(repo, &tree)?)?;
    let parents: Vec<git2::Commit> = last.parents().collect();
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    let message = last.message().context("a patch without a message")?;
    let commit = repo.commit(
        None,
        &last.author(),
        &last.committer(),
        message,
        &new_tree,
        &parents,
    )?;
    *commits.last_mut().expect("not empty") = commit;
    let patches = &builder.patches_dir;
    let sh = shell::here()?;
    cmd!(sh, "cp -r {patches} {dir}")
        .quiet()
        .run()
        .with_context(|| format!("cannot copy {}", patches.display()))?;
    crate::series::Series::from_commits(repo, release, &commits)?
        .write(&dir.join(release.version()))
}

/// The baseline: what a developer would do by hand, in a fresh directory, with the same
/// configure flags. Returns the time and where it installed.
fn plain_build(
    builder: &Builder,
    root: &Path,
    release: Release,
    target: Target,
) -> Result<(Duration, PathBuf)> {
    let jobs = builder.jobs;
    let dir = root.join("plain");
    let (src, build, dest) = (dir.join("src"), dir.join("build"), dir.join("dest"));
    let series = source::series_for(&builder.patches_dir, release, Flavour::Patched)?;
    let incoming = dir.join("incoming");
    fs::create_dir_all(&incoming).context("cannot create the plain source dir")?;
    BuildSource::resolve_in(SourceStore::open(&builder.store)?, release, series)?
        .export(&incoming)?;
    workdir::add_manual_stub(&incoming)?;
    // Like an unpacked tarball: one mtime for all files (see workdir::set_mtime).
    workdir::sync_tree(&incoming, &src)?;
    fs::create_dir_all(&build).context("cannot create the plain build dir")?;
    let log = dir.join("build.log");
    let recipe = Recipe::for_target(target);
    let label = format!("plain glibc {release} {}", target.name());
    let machine_lock = lock::acquire(
        Path::new(lock::MACHINE_LOCK),
        "the machine-wide glibc build lock",
    )?;
    let started = Instant::now();
    recipe.configure(&src, &build, &log, &label)?;
    recipe.make(&build, jobs, &log, &label)?;
    recipe.install(&build, &dest, jobs, &log, &label)?;
    let time = started.elapsed();
    drop(machine_lock);
    crate::sysroot::place_loader(&dest, target)?;
    Ok((time, dest))
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// `builder.ensure` timed, the wait for other builds' locks left out: the time and the sysroot.
pub(super) fn timed_build(
    builder: &Builder,
    release: Release,
    target: Target,
    flavour: Flavour,
) -> Result<(Duration, PathBuf)> {
    let started = Instant::now();
    let outcome = builder.ensure(release, target, flavour)?;
    Ok((
        started.elapsed().saturating_sub(outcome.lock_wait),
        outcome.sysroot.path,
    ))
}

pub(super) fn minutes(time: Duration) -> String {
    let secs = time.as_secs();
    format!("{}:{:02} min", secs / 60, secs % 60)
}
