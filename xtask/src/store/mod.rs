//! The glibc source store: a bare git repository outside the checkout holding one root commit
//! per imported release, tagged `glibc-X.Y` like upstream.
//!
//! Imports are deterministic (fixed author, date and message, no parent), so a release's
//! commit id is the same on every machine and patches exported against it are reproducible.
//! The tag is the commit point of an import: objects written before it are unreferenced and
//! harmless, and a tree that does not match the id pinned in data/releases.json is refused before
//! anything is written (`store import` verifies before the store is even created, so rejected
//! input leaves no empty store behind). Checks and reports open the store read-only
//! ([`Access::ReadOnly`]): they write nothing and import nothing.

pub(crate) mod command;
pub mod import;
pub(crate) mod pack;
pub mod snapshot;
pub(crate) mod worktree;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository, Signature, Time};
use tempfile::TempDir;

use crate::util::{durable, fault, git, paths, staging};
use import::Source;
use model::Release;

pub struct SourceStore {
    dir: PathBuf,
    downloads: PathBuf,
    repo: Repository,
    access: Access,
    /// The empty repository behind a read-only view of a store that does not exist yet.
    _scratch: Option<TempDir>,
}

/// Whether a command may change the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Missing releases are imported; commits of series and rebases are stored.
    ReadWrite,
    /// Nothing is written: objects a command computes stay in memory, and a missing release
    /// is an error ([`ReleaseNotImported`]) instead of a download. For checks and reports,
    /// which must work on a store they may not write (CI caches, other users' stores).
    ReadOnly,
}

/// A release the store lacks, where the command may not import it.
#[derive(Debug)]
pub(crate) struct ReleaseNotImported {
    pub release: Release,
    pub store: PathBuf,
}

impl std::fmt::Display for ReleaseNotImported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let flag = match paths::store_dir(None) {
            Ok(default) if default == self.store => String::new(),
            _ => format!(" --store {}", self.store.display()),
        };
        write!(
            f,
            "glibc {} is not in the store {}; import it with `cargo xtask{flag} store import {}`",
            self.release,
            self.store.display(),
            self.release
        )
    }
}

impl std::error::Error for ReleaseNotImported {}

/// One release as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRelease {
    pub tag: String,
    pub commit: Oid,
    pub tree: Oid,
}

/// A release whose tree matched its pin (or, for a release without one yet, whatever tree it
/// is), held outside any store until it is written into one.
pub(crate) struct VerifiedRelease {
    incoming: Incoming,
    tree: Oid,
    objects: VerifiedObjects,
    /// The scratch repository a git import's objects come from.
    _staging: Option<TempDir>,
}

enum VerifiedObjects {
    /// A tarball's objects, read and deflated in one pass (see [`import::tarball`]).
    Pack(pack::Pack),
    Repository(Repository),
}

/// What an import is to bring in: a release by version, where its files come from in Debian,
/// and the tree it must make (`None` for a release without a row yet: the import pins what it
/// makes, `update-release` writes it to the row).
#[derive(Debug, Clone)]
pub(crate) struct Incoming {
    pub version: String,
    pub debian: Option<String>,
    pub tree: Option<Oid>,
}

impl Incoming {
    /// A supported release, held to its pin.
    pub(crate) fn pinned(release: Release) -> Result<Incoming> {
        Ok(Incoming {
            version: release.version().to_string(),
            debian: release.debian_version().map(str::to_string),
            tree: Some(pinned_tree(release)?),
        })
    }

    /// `glibc-X.Y`, upstream's tag and the store's.
    pub(crate) fn tag(&self) -> String {
        format!("glibc-{}", self.version)
    }

    /// Where an expected tree is pinned, for messages.
    fn pinned_where(&self) -> String {
        format!("its row in {}", model::TABLE_PATH)
    }
}

impl VerifiedRelease {
    /// Fetches or extracts the release from `source` and checks its tree against the one
    /// `incoming` expects (the pin, but for synthetic releases in tests; none for a release
    /// without a row). Scratch space goes below `scratch_parent`; no store is opened or
    /// created.
    pub(crate) fn prepare(
        incoming: Incoming,
        source: &Source,
        downloads: &Path,
        scratch_parent: &Path,
    ) -> Result<VerifiedRelease> {
        match source {
            Source::Debian => {
                let Some(debian) = &incoming.debian else {
                    bail!(
                        "glibc {} has no Debian version to download: import it from tarball:<path> or git:<url>, or name the Debian version \
                         (`update-release --debian-version` for a release without a row, `debian` in its row of {} otherwise)",
                        incoming.version,
                        model::TABLE_PATH
                    );
                };
                let tarball = import::debian::fetch_orig(&incoming.version, debian, downloads)?;
                verify_tarball(incoming, &tarball, scratch_parent)
            }
            Source::Tarball(path) => verify_tarball(incoming, path, scratch_parent),
            Source::Git(url) => {
                let (scratch, repo, tree) = import::git::fetch_tag(scratch_parent, &incoming, url)?;
                Ok(VerifiedRelease {
                    incoming,
                    tree,
                    objects: VerifiedObjects::Repository(repo),
                    _staging: Some(scratch),
                })
            }
        }
    }
}

fn verify_tarball(
    incoming: Incoming,
    tarball: &Path,
    _scratch_parent: &Path,
) -> Result<VerifiedRelease> {
    let version = incoming.version.clone();
    match model::file::regular(tarball, "a release tarball") {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("tarball {} does not exist", tarball.display())
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", tarball.display())),
    }
    let started = std::time::Instant::now();
    diagln!("glibc {version}: reading {}", tarball.display());
    let imported = import::tarball::import(tarball, &[import::DROPPED_TOP_LEVEL])?;
    fault::point("import:read");
    diagln!(
        "glibc {version}: {} files hashed and packed, tree {} ({:.1} s)",
        imported.files,
        imported.root,
        started.elapsed().as_secs_f64()
    );
    match incoming.tree {
        Some(expected) if imported.root != expected => bail!(
            "{} does not hold glibc {version} as pinned: its tree (minus manual/) is {}, \
             expected {expected} ({}); the store is unchanged. \
             Is it the right, unmodified release tarball?",
            tarball.display(),
            imported.root,
            incoming.pinned_where()
        ),
        Some(_) => diagln!("glibc {version}: tree verified"),
        None => diagln!("glibc {version}: no tree pinned yet; this one will be"),
    }
    Ok(VerifiedRelease {
        incoming,
        tree: imported.root,
        objects: VerifiedObjects::Pack(imported.pack),
        _staging: None,
    })
}

/// `cargo xtask store import`: verifies the release before the store is opened, so that
/// rejected input (a missing tarball, the wrong tree) never creates an empty store.
pub(crate) fn import_into(dir: &Path, release: Release, source: &Source) -> Result<Oid> {
    recover_beside(dir);
    if dir.exists() {
        return SourceStore::open(dir)?.import(release, source);
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    let downloads = paths::downloads_dir().unwrap_or_else(|_| parent.join("downloads"));
    let verified =
        VerifiedRelease::prepare(Incoming::pinned(release)?, source, &downloads, parent)?;
    SourceStore::open(dir)?.write_verified(verified)
}

impl SourceStore {
    /// Opens the store at `dir`, creating it if absent. Downloads go to the cache's downloads
    /// dir unless [`SourceStore::with_downloads`] says otherwise.
    pub fn open(dir: &Path) -> Result<SourceStore> {
        recover_beside(dir);
        let downloads = paths::downloads_dir().unwrap_or_else(|_| dir.join("downloads"));
        let repo = open_or_create(dir)?;
        Ok(SourceStore {
            dir: dir.to_path_buf(),
            downloads,
            repo,
            access: Access::ReadWrite,
            _scratch: None,
        })
    }

    /// Opens the store at `dir` without ever writing to it (see [`Access::ReadOnly`]); a store
    /// that does not exist reads as one without releases, and is not created.
    pub(crate) fn open_read_only(dir: &Path) -> Result<SourceStore> {
        recover_beside(dir);
        let downloads = paths::downloads_dir().unwrap_or_else(|_| dir.join("downloads"));
        let (repo, scratch) = if exists(dir)? {
            (open_existing(dir)?, None)
        } else {
            let scratch = TempDir::new().context("cannot create a scratch repository")?;
            let repo =
                git::init_bare(scratch.path()).context("cannot create a scratch repository")?;
            (repo, Some(scratch))
        };
        // Objects go to the highest-priority backend that can write: this in-memory one.
        repo.odb()
            .and_then(|odb| odb.add_new_mempack_backend(1000).map(drop))
            .with_context(|| format!("cannot open {} read-only", dir.display()))?;
        Ok(SourceStore {
            dir: dir.to_path_buf(),
            downloads,
            repo,
            access: Access::ReadOnly,
            _scratch: scratch,
        })
    }

    /// Keeps downloaded tarballs in `dir` instead of the cache's downloads dir.
    pub fn with_downloads(mut self, dir: &Path) -> SourceStore {
        self.downloads = dir.to_path_buf();
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
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

    /// The release's commit, importing it from Debian first if the store lacks it (a
    /// read-only store says which release is missing instead).
    pub fn ensure_release(&self, release: Release) -> Result<Oid> {
        if let Some(commit) = self.release_commit(release)? {
            return Ok(commit);
        }
        self.refuse_to_import_if_read_only(release)?;
        diagln!(
            "glibc {release} is not in the store ({}): importing it from Debian",
            self.dir.display()
        );
        self.import(release, &Source::Debian)
    }

    /// A read-only store cannot take `release`: it says which release is missing.
    fn refuse_to_import_if_read_only(&self, release: Release) -> Result<()> {
        if self.access == Access::ReadOnly {
            return Err(ReleaseNotImported {
                release,
                store: self.dir.clone(),
            }
            .into());
        }
        Ok(())
    }

    /// Imports `release` from `source`; a no-op if it is already stored.
    pub fn import(&self, release: Release, source: &Source) -> Result<Oid> {
        self.import_expecting(release, pinned_tree(release)?, source)
    }

    /// [`SourceStore::import`], verifying the tree against `tree` instead of the pin: for
    /// synthetic releases in tests, whose trees cannot be the real ones.
    pub fn import_expecting(&self, release: Release, tree: Oid, source: &Source) -> Result<Oid> {
        if let Some(commit) = self.release_commit(release)? {
            diagln!("glibc {release} is already in the store as {commit}");
            return Ok(commit);
        }
        self.refuse_to_import_if_read_only(release)?;
        let incoming = Incoming {
            tree: Some(tree),
            ..Incoming::pinned(release)?
        };
        self.import_incoming(incoming, source)
    }

    /// Imports a release that has no row yet (no pin): whatever tree `source` holds for
    /// `version`, which the caller pins. Returns the commit and its tree; a release the store
    /// has already is not imported again.
    pub(crate) fn import_unpinned(
        &self,
        version: &str,
        debian: Option<&str>,
        source: &Source,
    ) -> Result<StoredRelease> {
        let incoming = Incoming {
            version: version.to_string(),
            debian: debian.map(str::to_string),
            tree: None,
        };
        if let Some(commit) = self.tag_commit(&incoming.tag())? {
            diagln!(
                "glibc {version} is already in the store as {commit}: its source is not read again"
            );
        } else {
            if self.access == Access::ReadOnly {
                bail!(
                    "glibc {version} is not in the store {}, which this command may not write",
                    self.dir.display()
                );
            }
            self.import_incoming(incoming.clone(), source)?;
        }
        self.stored(&incoming.tag())?
            .with_context(|| format!("the store lost glibc {version} as it imported it"))
    }

    fn import_incoming(&self, incoming: Incoming, source: &Source) -> Result<Oid> {
        let parent = self.dir.parent().unwrap_or(Path::new("."));
        let verified = VerifiedRelease::prepare(incoming, source, &self.downloads, parent)?;
        self.write_verified(verified)
    }

    /// The stored release tagged `tag`.
    fn stored(&self, tag: &str) -> Result<Option<StoredRelease>> {
        let Some(commit) = self.tag_commit(tag)? else {
            return Ok(None);
        };
        let tree = self.repo.find_commit(commit)?.tree_id();
        Ok(Some(StoredRelease {
            tag: tag.to_string(),
            commit,
            tree,
        }))
    }

    /// Writes a verified release's objects, then its commit and tag (the commit point).
    pub(crate) fn write_verified(&self, verified: VerifiedRelease) -> Result<Oid> {
        let release = verified.incoming.version.as_str();
        diagln!("glibc {release}: writing it into the store");
        let written = match &verified.objects {
            VerifiedObjects::Pack(pack) => pack.install(&self.repo).map(|written| {
                diagln!("glibc {release}: {written} objects the store lacked, written as one pack");
            }),
            VerifiedObjects::Repository(scratch) => {
                import::git::copy_tree(scratch, &self.repo, verified.tree)
            }
        };
        written
            .map_err(|e| durable::explain_full_disk(e, &self.dir))
            .with_context(|| {
                format!(
                    "cannot write glibc {release} into the store {}",
                    self.dir.display()
                )
            })?;
        fault::point("import:objects-written");
        self.commit_release(&verified.incoming, verified.tree)
            .map_err(|e| durable::explain_full_disk(e, &self.dir))
    }

    /// The deterministic root commit for a verified tree, then the tag (the commit point).
    fn commit_release(&self, incoming: &Incoming, tree: Oid) -> Result<Oid> {
        let (release, tag) = (&incoming.version, incoming.tag());
        let tree = self
            .repo
            .find_tree(tree)
            .context("imported tree is missing")?;
        let sig = import_signature()?;
        let message = format!(
            // The command's name before it was `store`: the message is part of every
            // release's commit id, which must not change.
            "glibc {release}\n\nThe upstream tag {tag} without manual/, imported by `cargo xtask glibc import`.\n"
        );
        let commit = self
            .repo
            .commit(None, &sig, &sig, &message, &tree, &[])
            .context("cannot create the release commit")?;
        fault::point("import:committed");
        // Forced: another process importing the same release computes the same commit.
        self.repo
            .reference(&format!("refs/tags/{tag}"), commit, true, "import")
            .with_context(|| format!("cannot tag {tag}"))?;
        diagln!(
            "imported glibc {release}: commit {commit}, tree {}",
            tree.id()
        );
        Ok(commit)
    }

    /// Every stored release, by tag name.
    pub fn list(&self) -> Result<Vec<StoredRelease>> {
        let mut out = Vec::new();
        for name in self.repo.tag_names(Some("glibc-*"))?.iter().flatten() {
            out.extend(self.stored(name)?);
        }
        Ok(out)
    }

    /// Writes the release's files into the empty directory `dest` (with a series applied:
    /// `Series::export`).
    pub fn export_tree(&self, release: Release, dest: &Path) -> Result<()> {
        let commit = self.ensure_release(release)?;
        let tree = self.repo.find_commit(commit)?.tree_id();
        worktree::write_tree(&self.repo, tree, dest)
    }
}

/// The tree id pinned for `release` (its row in data/releases.json): what an import must
/// produce.
pub(crate) fn pinned_tree(release: Release) -> Result<Oid> {
    Oid::from_str(release.pinned_tree())
        .with_context(|| format!("the pinned tree id of glibc {release} is malformed"))
}

/// Removes what killed imports left beside the store (`.import-*` extractions, `.fetch-*`
/// scratch repositories, `.store-*` half-created stores, of processes that are gone), and
/// says so. Their `tar` died with them (`util::child`), so nothing writes there any more.
fn recover_beside(dir: &Path) {
    let parent = dir.parent().unwrap_or(Path::new("."));
    for kind in ["import", "fetch", "store"] {
        for left in staging::remove_orphans(parent, kind) {
            diagln!(
                "removed {}, left by an interrupted import (its process is gone)",
                left.display()
            );
        }
    }
}

/// Author and committer of every release commit: fixed, so that commit ids are reproducible.
pub(crate) fn import_signature() -> Result<Signature<'static>> {
    Ok(Signature::new(
        "ld-fallback",
        "ld-fallback@example.invalid",
        &Time::new(0, 0),
    )?)
}

/// A new store is built in a temporary directory and renamed into place, so that an
/// interrupted creation never leaves a half-initialized repository at `dir`.
/// Whether something is at `dir`: only "no such file" is no; a path that cannot be
/// followed (a symlink loop, a file where a directory should be) is an error naming it, not
/// a store without releases.
fn exists(dir: &Path) -> Result<bool> {
    dir.try_exists()
        .with_context(|| format!("cannot look at the store {}", dir.display()))
}

/// The store at `dir`, which exists: a bare git repository whose every ref is a release's
/// `glibc-X.Y` tag. Another repository (a glibc clone, a project's) is no store without
/// releases: importing into it would mix the two.
fn open_existing(dir: &Path) -> Result<Repository> {
    let not_a_store = || {
        format!(
            "{} is not a glibc source store (a bare git repository of glibc-X.Y tags)",
            dir.display()
        )
    };
    let repo = match git::open_bare(dir) {
        Ok(repo) => repo,
        // libgit2 reads git's configuration ($HOME/.gitconfig too) to open any repository:
        // one it cannot read says nothing of the store.
        Err(e) if git::is_configuration_error(&e) => {
            return Err(e).with_context(|| {
                format!(
                    "cannot read git's configuration, which opening the store {} needs",
                    dir.display()
                )
            })
        }
        Err(e) => return Err(e).with_context(not_a_store),
    };
    for reference in repo.references().with_context(not_a_store)? {
        let reference = reference.with_context(not_a_store)?;
        let name = String::from_utf8_lossy(reference.name_bytes()).into_owned();
        let release = name.strip_prefix("refs/tags/glibc-");
        if !release.is_some_and(is_version) {
            anyhow::bail!(
                "{}: it holds {}, which no store holds (only glibc-X.Y tags): name the store with --store or $LD_FALLBACK_STORE, or leave both unset for the cache's",
                not_a_store(),
                model::printable(&name)
            );
        }
    }
    Ok(repo)
}

/// `X.Y`: a release's version, supported or not (a store may hold a release a later
/// checkout dropped).
fn is_version(text: &str) -> bool {
    text.split_once('.').is_some_and(|(major, minor)| {
        [major, minor]
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn open_or_create(dir: &Path) -> Result<Repository> {
    if exists(dir)? {
        return open_existing(dir);
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = crate::util::staging::tempdir_in(parent, "store")?;
    git::init_bare(staging.path()).context("cannot initialize the store")?;
    fault::point("store-create:initialized");
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, dir) {
        let _ = std::fs::remove_dir_all(&staged);
        // Another process may have created it meanwhile.
        if !dir.exists() {
            return Err(e).with_context(|| format!("cannot create the store at {}", dir.display()));
        }
    }
    git::open_bare(dir).with_context(|| format!("cannot open the store at {}", dir.display()))
}
