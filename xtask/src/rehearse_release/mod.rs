//! `cargo xtask rehearse-release`: the day of a glibc release the project has never seen, run
//! on a pretend one. The next version after the newest supported release is made from the
//! newest's tree in the store (`version.h`, `include/features.h` and `NEWS` moved on, as a
//! release moves them), written as a release tarball, and taken through
//! `update-release X.Y --source tarball:...` in a scratch copy of the checkout and of the
//! store, by this same binary. The rehearsal passes when the update exits 0, `rebase-glibc
//! --check` then passes on every release of the copy (the new one included), and no source
//! file of the copy changed (no `.rs`, `Cargo.toml` or `Cargo.lock`): a new release is data.
//!
//! The copy of the checkout is its files as they are on disk (not those git ignores), committed in a
//! repository of their own so that what the update changed is `git status` there. The store's
//! copy borrows the store's objects (git alternates) and copies its tags: the store is only
//! read. The update runs without builds (`--no-verify --no-build-check`) unless `--full`, which
//! builds and verifies the pretend release's cells in the scratch cache as `update-release`
//! does: cold builds, an hour or more.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use git2::{Oid, Signature, Status, StatusOptions, Time};
use model::Release;
use xshell::cmd;

use crate::cli::Env;
use crate::store::SourceStore;
use crate::util::{child, paths, shell, staging};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Build and verify the pretend release's cells too (`update-release` without
    /// `--no-verify --no-build-check`): cold builds in the scratch cache, an hour or more.
    #[arg(long)]
    pub full: bool,
    /// Make the scratch copies in DIR (which must not exist) and keep them, instead of a
    /// directory under the cache that is removed at the end.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// Source files: a new release must not need one of them changed.
const SOURCE_FILES: [&str; 3] = [".rs", "Cargo.toml", "Cargo.lock"];

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let started = Instant::now();
        let newest = Release::newest();
        let next = next_version(newest)?;
        let (scratch, _removed_at_end) = match &self.keep {
            Some(dir) => {
                if dir.exists() {
                    bail!("{} exists: name a directory to create", dir.display());
                }
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                (dir.clone(), None)
            }
            None => {
                let tmp = staging::tempdir_in(&env.cache.join("rehearsal"), "rehearsal")?;
                (tmp.path().to_path_buf(), Some(tmp))
            }
        };
        let rehearsal = Rehearsal {
            checkout: scratch.join("checkout"),
            store: scratch.join("glibc.git"),
            cache: scratch.join("cache"),
            tarball: scratch.join(format!("glibc-{next}.tar")),
        };
        diagln!(
            "==== rehearse-release: glibc {next}, made from glibc {newest}, in {}",
            scratch.display()
        );

        let phase = Instant::now();
        let store = SourceStore::open_read_only(&env.store)?;
        let source = store.release_commit(newest)?.with_context(|| {
            format!(
                "glibc {newest} is not in the store {}: import it first (`cargo xtask rebase-glibc --check --import-missing` imports every release the check needs)",
                env.store.display()
            )
        })?;
        let missing: Vec<String> = model::supported()
            .iter()
            .filter(|r| !matches!(store.release_commit(**r), Ok(Some(_))))
            .map(|r| r.version().to_string())
            .collect();
        if !missing.is_empty() {
            bail!(
                "the store {} lacks glibc {}, which the rehearsal's check needs: `cargo xtask rebase-glibc --check --import-missing` imports them",
                env.store.display(),
                missing.join(", ")
            );
        }
        copy_checkout(&paths::project_root(), &rehearsal.checkout)?;
        borrow_store(&store, &rehearsal.store)?;
        make_tarball(&rehearsal.store, source, newest, &next, &rehearsal.tarball)?;
        let prepared = phase.elapsed().as_secs_f64();

        let phase = Instant::now();
        let tarball = format!("tarball:{}", rehearsal.tarball.display());
        let mut update = vec!["update-release", &next, "--source", &tarball];
        if !self.full {
            update.extend(["--no-verify", "--no-build-check"]);
        } else {
            update.extend(["--target", "all"]);
        }
        rehearsal.run(&update, "the update of the pretend release")?;
        let updated = phase.elapsed().as_secs_f64();

        let phase = Instant::now();
        rehearsal.run(
            &["rebase-glibc", "--check"],
            "the check of every series after it",
        )?;
        let checked = phase.elapsed().as_secs_f64();

        let changed = changed_paths(&rehearsal.checkout)?;
        let sources: Vec<&String> = changed
            .iter()
            .filter(|path| SOURCE_FILES.iter().any(|s| path.ends_with(s)))
            .collect();
        outln!(
            "rehearse-release: glibc {next} (made from {newest}) changed {} files of the copy:",
            changed.len()
        );
        for path in &changed {
            outln!("  {path}");
        }
        if !sources.is_empty() {
            bail!(
                "the update changed source files, which a new release must not need: {}",
                sources
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !changed
            .iter()
            .any(|p| p.starts_with(&format!("patches/{next}/")))
        {
            bail!("the update wrote no patches/{next}/");
        }
        outln!(
            "rehearse-release: passed: no source file changed; `rebase-glibc --check` passes on every release, {next} included \
             (copies made in {prepared:.1} s, update {updated:.1} s, check {checked:.1} s, total {:.1} s)",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
}

/// The scratch copies a rehearsal runs in.
struct Rehearsal {
    checkout: PathBuf,
    store: PathBuf,
    cache: PathBuf,
    tarball: PathBuf,
}

impl Rehearsal {
    /// Runs this binary on the copies with `args`; it must exit 0.
    fn run(&self, args: &[&str], what: &str) -> Result<()> {
        let exe = std::env::current_exe().context("cannot find the xtask binary")?;
        diagln!("==== rehearse-release: cargo xtask {}", args.join(" "));
        let mut cmd = Command::new(exe);
        cmd.arg("--store")
            .arg(&self.store)
            .args(args)
            .env("LD_FALLBACK_CHECKOUT", &self.checkout)
            .env("LD_FALLBACK_CACHE", &self.cache)
            .env_remove("LD_FALLBACK_PATCHES")
            .env_remove("LD_FALLBACK_STORE");
        let status = child::dies_with_us(&mut cmd)
            .status()
            .with_context(|| format!("cannot run {what}"))?;
        if !status.success() {
            bail!(
                "{what} failed ({status}): `cargo xtask {}` in the copy {} (its output is above)",
                args.join(" "),
                self.checkout.display()
            );
        }
        Ok(())
    }
}

/// `X.(Y+1)`: the version after `release`.
fn next_version(release: Release) -> Result<String> {
    let (major, minor) = model::version_numbers(release.version())?;
    let minor = minor
        .checked_add(1)
        .context("no glibc version follows this one")?;
    Ok(format!("{major}.{minor}"))
}

/// The files of the checkout at `root` as they are on disk (those git tracks and the new ones
/// it does not ignore: a change not yet committed is rehearsed too), into `dest`, committed
/// there as the rehearsal's starting point.
fn copy_checkout(root: &Path, dest: &Path) -> Result<()> {
    let sh = shell::in_dir(root)?;
    let listed = cmd!(sh, "git ls-files -z --cached --others --exclude-standard")
        .quiet()
        .read()
        .with_context(|| format!("cannot list the tracked files of {}", root.display()))?;
    for path in listed.split('\0').filter(|p| !p.is_empty()) {
        let from = root.join(path);
        // A tracked file deleted on disk is not in the copy either.
        if std::fs::symlink_metadata(&from).is_err() {
            continue;
        }
        let to = dest.join(path);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::copy(&from, &to)
            .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    }
    let repo = crate::util::git::init(dest)
        .with_context(|| format!("cannot create {}", dest.display()))?;
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let who = Signature::new(
        "rehearse-release",
        "rehearsal@ld-fallback.invalid",
        &Time::new(0, 0),
    )?;
    repo.commit(
        Some("HEAD"),
        &who,
        &who,
        "The checkout before the rehearsal\n",
        &tree,
        &[],
    )
    .context("cannot commit the copy of the checkout")?;
    Ok(())
}

/// A store at `dest` that reads `store`'s objects (git alternates) and holds its tags: the
/// rehearsal writes its own objects there, never into `store`.
fn borrow_store(store: &SourceStore, dest: &Path) -> Result<()> {
    let repo = crate::util::git::init_bare(dest)
        .with_context(|| format!("cannot create {}", dest.display()))?;
    let objects = store.dir().join("objects");
    let alternates = dest.join("objects/info/alternates");
    std::fs::write(&alternates, format!("{}\n", objects.display()))
        .with_context(|| format!("cannot write {}", alternates.display()))?;
    let repo = crate::util::git::open_bare(repo.path())
        .with_context(|| format!("cannot open {}", dest.display()))?;
    for tag in store.list()? {
        repo.reference(
            &format!("refs/tags/{}", tag.tag),
            tag.commit,
            false,
            "rehearsal",
        )
        .with_context(|| format!("cannot copy the tag {}", tag.tag))?;
    }
    Ok(())
}

/// The release tarball of glibc `next` made from `newest`'s commit `source`: its tree with
/// `version.h`'s version, `include/features.h`'s minor number and a `NEWS` section for it, as
/// `glibc-<next>/` in a plain tar (the import reads any tar).
fn make_tarball(
    store_dir: &Path,
    source: Oid,
    newest: Release,
    next: &str,
    tarball: &Path,
) -> Result<()> {
    let repo = crate::util::git::open_bare(store_dir)
        .with_context(|| format!("cannot open {}", store_dir.display()))?;
    let old = repo.find_commit(source)?.tree()?;
    let (_, new_minor) = model::version_numbers(next)?;
    let (_, old_minor) = model::version_numbers(newest.version())?;
    let edit = |path: &str, change: &dyn Fn(&str) -> Option<String>| -> Result<Oid> {
        let entry = old
            .get_path(Path::new(path))
            .with_context(|| format!("glibc {newest} has no {path}"))?;
        let blob = repo.find_blob(entry.id())?;
        let text = String::from_utf8_lossy(blob.content());
        let changed = change(&text).with_context(|| {
            format!("{path} of glibc {newest} is not as expected: cannot move it on to {next}")
        })?;
        Ok(repo.blob(changed.as_bytes())?)
    };
    let version_h = edit("version.h", &|text| {
        let from = format!("#define VERSION \"{}\"", newest.version());
        text.contains(&from)
            .then(|| text.replace(&from, &format!("#define VERSION \"{next}\"")))
    })?;
    let features_h = edit("include/features.h", &|text| {
        let from = format!("#define\t__GLIBC_MINOR__\t{old_minor}\n");
        text.contains(&from)
            .then(|| text.replace(&from, &format!("#define\t__GLIBC_MINOR__\t{new_minor}\n")))
    })?;
    let news = edit("NEWS", &|text| {
        let from = format!("\nVersion {}\n", newest.version());
        let section = format!(
            "\nVersion {next}\n\nMajor new features:\n\n* A pretend release for the project's rehearsal, made from {}.\n",
            newest.version()
        );
        text.contains(&from)
            .then(|| text.replacen(&from, &format!("{section}{from}"), 1))
    })?;
    let mut root = repo.treebuilder(Some(&old))?;
    root.insert("version.h", version_h, 0o100644)?;
    root.insert("NEWS", news, 0o100644)?;
    let include = old
        .get_path(Path::new("include"))?
        .to_object(&repo)?
        .peel_to_tree()?;
    let mut include = repo.treebuilder(Some(&include))?;
    include.insert("features.h", features_h, 0o100644)?;
    root.insert("include", include.write()?, 0o040000)?;
    let tree = root.write()?.to_string();
    let prefix = format!("glibc-{next}/");
    let sh = shell::here()?;
    cmd!(
        sh,
        "git -C {store_dir} archive --format=tar --prefix={prefix} -o {tarball} {tree}"
    )
    .quiet()
    .run()
    .with_context(|| format!("cannot write {}", tarball.display()))?;
    Ok(())
}

/// Every path of the copy that differs from its first commit (changed, added or deleted).
fn changed_paths(checkout: &Path) -> Result<Vec<String>> {
    let repo = crate::util::git::open(checkout)
        .with_context(|| format!("cannot open {}", checkout.display()))?;
    let mut options = StatusOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = repo.statuses(Some(&mut options))?;
    let mut changed: Vec<String> = statuses
        .iter()
        .filter(|s| s.status() != Status::CURRENT && !s.status().is_ignored())
        .filter_map(|s| s.path().map(str::to_string))
        .collect();
    changed.sort();
    Ok(changed)
}
