//! `cargo xtask sysroot`: cached patched and unpatched glibc sysroots.
//!
//! A build writes the release (plus the series) into the persistent work directory of its
//! release and target, which every flavour shares, rewriting only the files that differ from
//! what it held; runs configure once and make incrementally; installs into a staging
//! directory and publishes it under a key that hashes every input. So the second flavour of a
//! release costs what differs from the first (the loader's files and the links after them),
//! not a second build: the series' header changes only declare new names, and such a header
//! keeps its mtime (`declarations`) so that make does not recompile what includes it.

pub(crate) mod cache;
pub(crate) mod command;
pub(crate) mod compare;
pub mod compile_check;
pub(crate) mod compiler_cache;
pub(crate) mod declarations;
pub(crate) mod memo;
pub(crate) mod quick;
pub(crate) mod recipe;
pub(crate) mod source;
pub(crate) mod spot_check;
pub(crate) mod workdir;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use model::{Flavour, Sysroot, Target};

use crate::cli::Env;
use crate::store::SourceStore;
use crate::util::lock;
use cache::{BuildCache, KeyInputs, Manifest};
use model::Release;
use recipe::Recipe;
use source::BuildSource;
use workdir::WorkDir;

/// Where builds, work directories and logs live under one cache root.
#[derive(Debug, Clone)]
pub struct Layout {
    pub builds: PathBuf,
    pub work: PathBuf,
    pub logs: PathBuf,
    /// ccache's directory, used when `LD_FALLBACK_CCACHE=1` (see `compiler_cache`).
    pub ccache: PathBuf,
}

impl Layout {
    pub(crate) fn under(root: &Path) -> Layout {
        Layout {
            builds: root.join("builds"),
            work: root.join("work"),
            logs: root.join("logs"),
            ccache: root.join("ccache"),
        }
    }

    /// The one work directory of a release and target in the default configuration,
    /// whatever the flavour.
    pub(crate) fn work_dir(&self, release: Release, target: Target) -> WorkDir {
        self.work_dir_named(&format!("{release}-{target}"))
    }

    pub(crate) fn work_dir_named(&self, name: &str) -> WorkDir {
        WorkDir::new(self.work.join(name))
    }
}

/// Builds glibc from a store and a `patches/` into a cache (see `cargo xtask sysroot`).
#[derive(Debug, Clone)]
pub struct Builder {
    pub layout: Layout,
    /// The source store (imported into when it lacks a release, but for `key_read_only`).
    pub store: PathBuf,
    pub patches_dir: PathBuf,
    pub jobs: usize,
    pub rebuild: bool,
    /// How the tests are linked; every configuration has build trees of its own.
    pub configuration: recipe::Configuration,
    /// Whether configure and make compile through ccache (in `layout.ccache`).
    pub compiler_cache: bool,
    /// What this builder has read and checked already (a clone's starts empty).
    pub(crate) memo: memo::Memo,
}

/// What `Builder::ensure` did.
#[derive(Debug)]
pub struct Ensured {
    pub sysroot: Sysroot,
    /// False for a cache hit.
    pub built: bool,
    /// Time spent waiting for locks held by other builds.
    pub lock_wait: Duration,
}

/// What a build is made from, resolved: the key inputs, the recipe and the sources.
struct Prepared {
    inputs: KeyInputs,
    recipe: Recipe,
    source: BuildSource,
}

/// A flavour's build tree, up to date and compiled, locked for as long as this lives: for
/// running glibc's own tests in it.
pub(crate) struct BuiltTree {
    pub work: WorkDir,
    pub recipe: Recipe,
    /// Where the build's output went; test runs may append to it.
    pub log: PathBuf,
    pub label: String,
    _work_lock: lock::FileLock,
    _machine_lock: lock::FileLock,
}

impl Builder {
    /// The builder of a command: the environment's store, series and cache, one make job per
    /// CPU, cached builds taken as they are.
    pub fn new(env: &Env) -> Builder {
        Builder {
            layout: Layout::under(&env.cache),
            store: env.store.clone(),
            patches_dir: env.patches.clone(),
            jobs: default_jobs(),
            rebuild: false,
            configuration: recipe::Configuration::Default,
            compiler_cache: env.compiler_cache,
            memo: memo::Memo::default(),
        }
    }

    /// The same builder for another configuration of the tests.
    pub(crate) fn configured(&self, configuration: recipe::Configuration) -> Builder {
        Builder {
            configuration,
            ..self.clone()
        }
    }

    /// The one work directory of a release and target in this builder's configuration,
    /// whatever the flavour.
    pub(crate) fn work_dir(&self, release: Release, target: Target) -> WorkDir {
        self.layout.work_dir_named(&format!(
            "{release}-{target}{}",
            self.configuration.suffix()
        ))
    }

    /// The cached sysroot of a flavour, built first if needed. Progress goes to stderr.
    pub fn ensure(&self, release: Release, target: Target, flavour: Flavour) -> Result<Ensured> {
        let prepared = self.prepare(release, target, flavour)?;
        let name = prepared.inputs.entry_name();
        let cache = BuildCache::new(&self.layout.builds);
        let outcome = |entry: cache::Entry, built, lock_wait| Ensured {
            sysroot: Sysroot {
                path: entry.sysroot(),
                target,
                release,
                flavour,
            },
            built,
            lock_wait,
        };
        let cached = || cache.lookup(&name).filter(|_| !self.rebuild);
        if let Some(entry) = cached() {
            return Ok(outcome(entry, false, Duration::ZERO));
        }
        self.guard_series(release, flavour)?;
        let key_lock = cache.lock(&name)?;
        // Whoever held the lock may just have built it.
        if let Some(entry) = cached() {
            return Ok(outcome(entry, false, key_lock.waited));
        }
        let work = self.work_dir(release, target);
        let work_lock = work.lock()?;
        let (entry, machine_wait) = self.build(&cache, &prepared, &work)?;
        let lock_wait = key_lock.waited + work_lock.waited + machine_wait;
        Ok(outcome(entry, true, lock_wait))
    }

    /// Refuses to build a flavour from a series `rebase-glibc --check` does not pass (one
    /// that drifted from what its commits export, left its scope, carries a marker): the
    /// guard a rebase and `format-series` run, before every build. A cache hit needs no
    /// guard: its key is the series' content, which the build that made it passed.
    pub(crate) fn guard_series(&self, release: Release, flavour: Flavour) -> Result<()> {
        if flavour == Flavour::Unpatched {
            return Ok(());
        }
        self.memo.guard(&self.patches_dir, release, || {
            let ws = crate::series::Workspace {
                store: SourceStore::open(&self.store)?,
                patches_dir: self.patches_dir.clone(),
                // Never used by the check; where the environment keeps rebases.
                rebase_dir: self.layout.work.with_file_name("rebase"),
            };
            let series = self.series(release)?;
            crate::rebase::series_check::passing_read(&ws, series).map(drop)
        })
    }

    /// `patches/<X.Y>/`, read once per builder (`source::load_series`).
    fn series(&self, release: Release) -> Result<crate::series::Series> {
        self.memo.series(&self.patches_dir, release, || {
            source::load_series(&self.patches_dir, release)
        })
    }

    /// The series a flavour builds from (`source::series_for`), its base read once.
    pub(crate) fn series_for(
        &self,
        release: Release,
        flavour: Flavour,
    ) -> Result<Option<crate::series::Series>> {
        source::series_on(&self.patches_dir, release, flavour, || self.series(release))
    }

    /// The cache key of a flavour's build, and whether that build is cached.
    pub(crate) fn key(
        &self,
        release: Release,
        target: Target,
        flavour: Flavour,
    ) -> Result<(String, bool)> {
        let prepared = self.prepare(release, target, flavour)?;
        let cache = BuildCache::new(&self.layout.builds);
        let cached = cache.lookup(&prepared.inputs.entry_name()).is_some();
        Ok((prepared.inputs.key(), cached))
    }

    /// The flavour's build tree, brought up to date and compiled (nothing is installed or
    /// published), with the work dir's and the machine's build locks held.
    pub(crate) fn tree(
        &self,
        release: Release,
        target: Target,
        flavour: Flavour,
    ) -> Result<BuiltTree> {
        let prepared = self.prepare(release, target, flavour)?;
        self.guard_series(release, flavour)?;
        let work = self.work_dir(release, target);
        let work_lock = work.lock()?;
        let name = prepared.inputs.entry_name();
        let log = self.new_log(&format!("{name}-tree"))?;
        let label = prepared.inputs.label();
        let (machine_lock, _) = self.compile(&prepared, &work, &log, &label, None)?;
        Ok(BuiltTree {
            work,
            recipe: prepared.recipe.clone(),
            log,
            label,
            _work_lock: work_lock,
            _machine_lock: machine_lock,
        })
    }

    /// The compiled tree of `commit`, a commit of `store`'s repository that is no release
    /// (an upstream commit the repository reads from its checkout, or the series moved onto
    /// one: `format-series --test-base`), in the work directory `work_name`, which every such
    /// commit of the target shares; and its build's key. `release` is the release nearest
    /// it, which names the build; `flavour`, whether the commit has the series.
    pub(crate) fn tree_of_commit(
        &self,
        store: SourceStore,
        commit: git2::Oid,
        release: Release,
        target: Target,
        flavour: Flavour,
        work_name: &str,
    ) -> Result<(String, BuiltTree)> {
        let source = BuildSource::of_commit(store, release, commit)?;
        let prepared = self.prepared(source, release, target, flavour)?;
        let work = self.layout.work_dir_named(work_name);
        let work_lock = work.lock()?;
        let key = prepared.inputs.key();
        let log = self.new_log(&format!("{work_name}-{}", &key[..16]))?;
        let label = format!("{work_name} {flavour}");
        let (machine_lock, _) = self.compile(&prepared, &work, &log, &label, None)?;
        Ok((
            key,
            BuiltTree {
                work,
                recipe: prepared.recipe.clone(),
                log,
                label,
                _work_lock: work_lock,
                _machine_lock: machine_lock,
            },
        ))
    }

    /// The flavour's sysroot if the cache holds it (never builds: the store is only read).
    pub(crate) fn cached(
        &self,
        release: Release,
        target: Target,
        flavour: Flavour,
    ) -> Result<Option<Sysroot>> {
        let store = SourceStore::open_read_only(&self.store)?;
        let prepared = self.prepare_from(Some(store), release, target, flavour)?;
        let cache = BuildCache::new(&self.layout.builds);
        Ok(cache
            .lookup(&prepared.inputs.entry_name())
            .map(|entry| Sysroot {
                path: entry.sysroot(),
                target,
                release,
                flavour,
            }))
    }

    /// [`Builder::key`] for checks: the store is only read, and a release it lacks is an
    /// error (`store::ReleaseNotImported`), not an import.
    pub(crate) fn key_read_only(
        &self,
        release: Release,
        target: Target,
        flavour: Flavour,
    ) -> Result<String> {
        let store = SourceStore::open_read_only(&self.store)?;
        Ok(self
            .prepare_from(Some(store), release, target, flavour)?
            .inputs
            .key())
    }

    fn prepare(&self, release: Release, target: Target, flavour: Flavour) -> Result<Prepared> {
        self.prepare_from(None, release, target, flavour)
    }

    /// The build's inputs, from `store` (else the builder's, opened for writing).
    fn prepare_from(
        &self,
        store: Option<SourceStore>,
        release: Release,
        target: Target,
        flavour: Flavour,
    ) -> Result<Prepared> {
        let series = self.series_for(release, flavour)?;
        let store = match store {
            Some(store) => store,
            None => SourceStore::open(&self.store)?,
        };
        let source = BuildSource::resolve_in(store, release, series)?;
        self.prepared(source, release, target, flavour)
    }

    /// The build of `source`: the key inputs and the recipe.
    fn prepared(
        &self,
        source: BuildSource,
        release: Release,
        target: Target,
        flavour: Flavour,
    ) -> Result<Prepared> {
        let recipe = Recipe::for_target(target)
            .configured(self.configuration)
            .compiled_through(if self.compiler_cache {
                Some(compiler_cache::CompilerCache::new(
                    &self.layout.ccache,
                    &self.layout.work,
                )?)
            } else {
                None
            });
        let compiler = self.memo.compiler(target, || {
            recipe.require()?;
            recipe.compiler_version()
        })?;
        let inputs = KeyInputs {
            release,
            tree_id: source.tree_id.clone(),
            series_id: source.series_id(),
            flavour,
            target,
            configure_flags: recipe.configure_flags(),
            environment: recipe
                .environment()
                .into_iter()
                .map(|(var, value)| (var.to_string(), value))
                .collect(),
            compiler,
            recipe: recipe::RECIPE_VERSION,
        };
        Ok(Prepared {
            inputs,
            recipe,
            source,
        })
    }

    /// Brings the work dir's sources up to date, configures if needed and compiles; the
    /// caller holds the work dir's lock. With `quick`, a build that may start from the tree's
    /// last published one (see `quick`) compiles only the loader and returns that base.
    /// Returns the machine-wide build lock, still held.
    fn compile(
        &self,
        prepared: &Prepared,
        work: &WorkDir,
        log: &Path,
        label: &str,
        quick: Option<&BuildCache>,
    ) -> Result<(lock::FileLock, Option<quick::Base>)> {
        let Prepared {
            inputs,
            recipe,
            source,
        } = prepared;
        let started = Instant::now();
        diagln!("{label}: writing sources into {}", work.src().display());
        let tree = source.source_tree()?;
        let base = match quick {
            Some(cache) => quick::base_for(work, cache, source.repo(), work.source_tree(), tree)?,
            None => None,
        };
        let stats = work.update_source(source.repo(), tree, |dest| source.export(dest))?;
        diagln!(
            "{label}: sources: {} files written, {} removed, {} unchanged ({:.1} s)",
            stats.written,
            stats.removed,
            stats.unchanged,
            started.elapsed().as_secs_f64()
        );
        for (header, names) in &stats.kept_headers {
            if names.is_empty() {
                diagln!("{label}: {header} keeps its mtime: its change only rewords comments");
            } else {
                diagln!(
                    "{label}: {header} keeps its mtime: its change only declares {}, which \
                     nothing but rewritten files mentions (and rewords comments, if anything)",
                    names.join(", ")
                );
            }
        }
        for (header, why) in &stats.rebuilt_headers {
            diagln!("{label}: {header} is rebuilt with what includes it: {why}");
        }

        let machine_lock = lock::acquire(
            Path::new(lock::MACHINE_LOCK),
            "the machine-wide glibc build lock",
        )?;
        // What configure saw; the sources may change under a configured build dir (make
        // copes), these may not.
        let fingerprint = format!(
            "recipe {}\ntarget {}\ncompiler {}\nconfigure {:?}\nenv {:?}\nsrc {}\n",
            inputs.recipe,
            inputs.target.name(),
            inputs.compiler,
            inputs.configure_flags,
            inputs.environment,
            work.src().display()
        );
        if let Some(cache) = &recipe.compiler_cache {
            diagln!("{label}: compiling {}", cache.describe());
        }
        let base = base.filter(|_| work.is_configured(&fingerprint));
        if !work.is_configured(&fingerprint) {
            work.reset_build()?;
            recipe.configure(&work.src(), &work.build(), log, label)?;
            work.mark_configured(&fingerprint)?;
        }
        match &base {
            Some(base) => {
                diagln!(
                    "{label}: only the loader's sources differ from the last published build \
                     ({}): make subdirs=elf, then its sysroot with what that rebuilt",
                    base.changed.join(", ")
                );
                recipe.make_loader(&work.build(), self.jobs, log, label)?;
            }
            None => recipe.make(&work.build(), self.jobs, log, label)?,
        }
        Ok((machine_lock, base))
    }

    /// Compiles, installs and publishes; the caller holds the key's and the work dir's locks.
    /// Returns the entry and the wait for the machine lock.
    fn build(
        &self,
        cache: &BuildCache,
        prepared: &Prepared,
        work: &WorkDir,
    ) -> Result<(cache::Entry, Duration)> {
        let inputs = &prepared.inputs;
        let name = inputs.entry_name();
        let staging = cache.stage(&name)?;
        let label = inputs.label();
        let log = self.new_log(&name)?;
        let started = Instant::now();
        let tree = prepared.source.source_tree()?;
        let (machine_lock, base) = self.compile(prepared, work, &log, &label, Some(cache))?;
        // Until this build is published, the tree is in no state a record describes.
        quick::forget(work)?;
        match &base {
            Some(base) => {
                let replaced = quick::stage(base, &work.build(), &staging.sysroot())?;
                diagln!(
                    "{label}: {} installed files replaced in a copy of {}",
                    replaced.len(),
                    base.sysroot.display()
                );
            }
            None => {
                prepared.recipe.install(
                    &work.build(),
                    &staging.sysroot(),
                    self.jobs,
                    &log,
                    &label,
                )?;
                place_loader(&staging.sysroot(), inputs.target)?;
            }
        }
        let machine_wait = machine_lock.waited;
        drop(machine_lock);

        let build_seconds = started.elapsed().saturating_sub(machine_wait).as_secs();
        let entry = staging.publish(&Manifest::new(inputs, build_seconds, &log))?;
        match &base {
            Some(base) => quick::record_quick(work, base, tree, &name)?,
            None => {
                // Without the record the next build takes the full path: slower, not wrong.
                if let Err(err) = quick::record_full(work, tree, &name, &entry.sysroot()) {
                    diagln!("{label}: no quick path after this build: {err:#}");
                    quick::forget(work)?;
                }
            }
        }
        diagln!(
            "{label}: published {} ({}:{:02}; log {})",
            entry.dir.display(),
            build_seconds / 60,
            build_seconds % 60,
            log.display()
        );
        Ok((entry, machine_wait))
    }

    fn new_log(&self, name: &str) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.layout.logs)
            .with_context(|| format!("cannot create {}", self.layout.logs.display()))?;
        Ok(self
            .layout
            .logs
            .join(format!("{name}-{}.log", crate::util::clock::now_secs())))
    }
}

/// Makes the loader reachable at its standard path inside the sysroot, whatever directory
/// glibc installed it in (a relative symlink, so it resolves from outside the root as well).
pub(crate) fn place_loader(sysroot: &Path, target: Target) -> Result<()> {
    let wanted = sysroot.join(target.loader_path().trim_start_matches('/'));
    if wanted.symlink_metadata().is_ok() {
        return Ok(());
    }
    let file_name = wanted.file_name().expect("loader paths name a file");
    let parent = wanted.parent().expect("loader paths have a directory");
    for dir in ["lib64", "lib", "usr/lib64", "usr/lib"] {
        let candidate = sysroot.join(dir).join(file_name);
        if candidate.is_file() && candidate != wanted {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
            let depth = target.loader_path().matches('/').count() - 1;
            let link = "../".repeat(depth) + dir + "/" + &file_name.to_string_lossy();
            std::os::unix::fs::symlink(&link, &wanted)
                .with_context(|| format!("cannot link {}", wanted.display()))?;
            return Ok(());
        }
    }
    bail!(
        "make install put no dynamic loader {} into {}",
        target.loader_path(),
        sysroot.display()
    )
}

pub(crate) fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

pub(crate) fn print_list(cache: &BuildCache) -> Result<()> {
    let entries = cache.list()?;
    if entries.is_empty() {
        outln!("no cached glibc builds in {}", cache.root().display());
        return Ok(());
    }
    // The longest flavour's name (`fallback-first`).
    outln!(
        "{:<8} {:<8} {:<14} {:>9} {:>6}  path",
        "release",
        "target",
        "flavour",
        "size",
        "age"
    );
    let now = crate::util::clock::now_secs();
    for entry in entries {
        let m = &entry.manifest;
        let size = cache::disk_usage(&entry.sysroot()) as f64 / (1024.0 * 1024.0);
        outln!(
            "{:<8} {:<8} {:<14} {:>5.0} MiB {:>6}  {}",
            m.release,
            m.target,
            // Display does not pad: the text does.
            m.flavour.to_string(),
            size,
            format_age(now.saturating_sub(m.created)),
            entry.dir.display()
        );
    }
    Ok(())
}

fn format_age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

#[cfg(test)]
mod tests;
