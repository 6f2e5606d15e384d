//! The glibc source store: a bare git repository outside the checkout holding one root commit
//! per imported release, tagged `glibc-X.Y` like upstream.
//!
//! Imports are deterministic (fixed author, date and message, no parent), so a release's
//! commit id is the same on every machine and patches exported against it are reproducible.
//! The tag is the commit point of an import: objects written before it are unreferenced and
//! harmless, and a tree that does not match the id pinned in `release.rs` is refused before
//! anything is written.

pub mod bench;
pub mod command;
pub mod import;
pub mod release;
pub mod snapshot;
pub mod worktree;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository, Signature, Time};

use crate::series::Series;
use crate::util::paths;
use import::Source;
use release::Release;
use snapshot::Snapshot;

pub struct SourceStore {
    dir: PathBuf,
    downloads: PathBuf,
    repo: Repository,
}

/// One release as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRelease {
    pub tag: String,
    pub commit: Oid,
    pub tree: Oid,
}

impl SourceStore {
    /// Opens the store at `dir`, creating it if absent. Downloads go to the cache's downloads
    /// dir unless [`SourceStore::with_downloads`] says otherwise.
    pub fn open(dir: &Path) -> Result<SourceStore> {
        let downloads = paths::downloads_dir().unwrap_or_else(|_| dir.join("downloads"));
        let repo = open_or_create(dir)?;
        Ok(SourceStore {
            dir: dir.to_path_buf(),
            downloads,
            repo,
        })
    }

    /// Opens the store named by `--store`, `$LD_FALLBACK_STORE`, or the cache default.
    pub fn open_default(flag: Option<&Path>) -> Result<SourceStore> {
        SourceStore::open(&paths::store_dir(flag)?)
    }

    /// Keeps downloaded tarballs in `dir` instead of the cache's downloads dir.
    pub fn with_downloads(mut self, dir: &Path) -> SourceStore {
        self.downloads = dir.to_path_buf();
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn downloads(&self) -> &Path {
        &self.downloads
    }

    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The release's commit, if it has been imported.
    pub fn release_commit(&self, release: Release) -> Result<Option<Oid>> {
        self.tag_commit(&release.tag())
    }

    fn tag_commit(&self, tag: &str) -> Result<Option<Oid>> {
        match self.repo.find_reference(&format!("refs/tags/{tag}")) {
            Ok(reference) => {
                let commit = reference
                    .peel_to_commit()
                    .with_context(|| format!("tag {tag} in the store is not a commit"))?;
                Ok(Some(commit.id()))
            }
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read tag {tag}")),
        }
    }

    /// The release's commit, importing it from Debian first if the store lacks it.
    pub fn ensure_release(&self, release: Release) -> Result<Oid> {
        if let Some(commit) = self.release_commit(release)? {
            return Ok(commit);
        }
        eprintln!(
            "glibc {release} is not in the store ({}): importing it from Debian",
            self.dir.display()
        );
        self.import(release, &Source::Debian)
    }

    /// Imports `release` from `source`; a no-op if it is already stored.
    pub fn import(&self, release: Release, source: &Source) -> Result<Oid> {
        if let Some(commit) = self.release_commit(release)? {
            eprintln!("glibc {release} is already in the store as {commit}");
            return Ok(commit);
        }
        if release.tree.is_empty() {
            bail!("glibc {release} has no pinned tree id in xtask/src/release.rs: cannot verify an import");
        }
        let expected = Oid::from_str(release.tree)
            .with_context(|| format!("pinned tree id of glibc {release} is malformed"))?;
        let tree = match source {
            Source::Debian => {
                let tarball = import::debian::fetch_orig(release, &self.downloads)?;
                self.import_tarball(release, &tarball, expected)?
            }
            Source::Tarball(path) => self.import_tarball(release, path, expected)?,
            Source::Git(url) => {
                import::git::import_tag(&self.repo, &self.dir, release, url, expected)?
            }
        };
        self.commit_release(release, tree)
    }

    fn import_tarball(&self, release: Release, tarball: &Path, expected: Oid) -> Result<Oid> {
        let staging = crate::util::staging::tempdir_in(
            self.dir.parent().unwrap_or(Path::new(".")),
            "import",
        )?;
        let started = std::time::Instant::now();
        eprintln!("glibc {release}: extracting {}", tarball.display());
        let top = import::tarball::extract(tarball, staging.path())?;
        let snapshot = Snapshot::of_dir(&top, &[import::DROPPED_TOP_LEVEL])?;
        eprintln!(
            "glibc {release}: {} files hashed, tree {} ({:.0} s)",
            snapshot.files,
            snapshot.root,
            started.elapsed().as_secs_f64()
        );
        if snapshot.root != expected {
            bail!(
                "{} does not hold glibc {release} as pinned: its tree (minus manual/) is {}, \
                 expected {expected} (xtask/src/release.rs); the store is unchanged. \
                 Is it the right, unmodified release tarball?",
                tarball.display(),
                snapshot.root
            );
        }
        eprintln!("glibc {release}: tree verified; writing it into the store");
        snapshot
            .write(
                &self
                    .repo
                    .odb()
                    .context("cannot open the store's object database")?,
            )
            .context("cannot write the release into the store")?;
        Ok(snapshot.root)
    }

    /// The deterministic root commit for a verified tree, then the tag (the commit point).
    fn commit_release(&self, release: Release, tree: Oid) -> Result<Oid> {
        let tree = self
            .repo
            .find_tree(tree)
            .context("imported tree is missing")?;
        let sig = import_signature()?;
        let message = format!(
            "glibc {release}\n\nThe upstream tag {} without manual/, imported by `cargo xtask glibc import`.\n",
            release.tag()
        );
        let commit = self
            .repo
            .commit(None, &sig, &sig, &message, &tree, &[])
            .context("cannot create the release commit")?;
        // Forced: another process importing the same release computes the same commit.
        self.repo
            .reference(
                &format!("refs/tags/{}", release.tag()),
                commit,
                true,
                "import",
            )
            .with_context(|| format!("cannot tag {}", release.tag()))?;
        eprintln!(
            "imported glibc {release}: commit {commit}, tree {}",
            tree.id()
        );
        Ok(commit)
    }

    /// Every stored release, by tag name.
    pub fn list(&self) -> Result<Vec<StoredRelease>> {
        let mut out = Vec::new();
        for name in self.repo.tag_names(Some("glibc-*"))?.iter().flatten() {
            if let Some(commit) = self.tag_commit(name)? {
                let tree = self.repo.find_commit(commit)?.tree_id();
                out.push(StoredRelease {
                    tag: name.to_string(),
                    commit,
                    tree,
                });
            }
        }
        Ok(out)
    }

    /// Writes the release's files, with `series` applied, into the empty directory `dest`.
    pub fn export_tree(
        &self,
        release: Release,
        series: Option<&Series>,
        dest: &Path,
    ) -> Result<()> {
        let commit = self.ensure_release(release)?;
        let mut tree = self.repo.find_commit(commit)?.tree_id();
        if let Some(series) = series {
            if series.base.version != release.version {
                bail!(
                    "the series is for glibc {}, not {release}: rebase it first (cargo xtask rebase-glibc --onto {release})",
                    series.base
                );
            }
            let commits = series.commit_on(&self.repo, commit)?;
            if let Some(last) = commits.last() {
                tree = self.repo.find_commit(*last)?.tree_id();
            }
        }
        crate::store::worktree::write_tree(&self.repo, tree, dest)
    }
}

/// Author and committer of every release commit: fixed, so that commit ids are reproducible.
pub fn import_signature() -> Result<Signature<'static>> {
    Ok(Signature::new(
        "ld-fallback",
        "ld-fallback@example.invalid",
        &Time::new(0, 0),
    )?)
}

/// A new store is built in a temporary directory and renamed into place, so that an
/// interrupted creation never leaves a half-initialized repository at `dir`.
fn open_or_create(dir: &Path) -> Result<Repository> {
    if dir.exists() {
        return Repository::open_bare(dir).with_context(|| {
            format!(
                "{} is not a glibc source store (a bare git repository)",
                dir.display()
            )
        });
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = crate::util::staging::tempdir_in(parent, "store")?;
    Repository::init_bare(staging.path()).context("cannot initialize the store")?;
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, dir) {
        let _ = std::fs::remove_dir_all(&staged);
        // Another process may have created it meanwhile.
        if !dir.exists() {
            return Err(e).with_context(|| format!("cannot create the store at {}", dir.display()));
        }
    }
    Repository::open_bare(dir)
        .with_context(|| format!("cannot open the store at {}", dir.display()))
}
