//! A patch series: `patches/<X.Y>/series` plus `NNNN-<subject>.patch` files in `git
//! format-patch` form, consumable by `git am`, quilt and `patch -p1`.
//!
//! The files are generated, and byte-identical on every machine: commit ids are
//! deterministic (release commits are, and patch commits take author, committer and date from
//! the patch header), and the trailer is fixed instead of naming a git or libgit2 version.

pub mod command;
pub mod diffstat;
pub mod format;
pub mod import;
pub mod mail;
pub mod mail_date;
pub mod news;
pub mod status;
mod workspace;

pub use mail::{format_patch, slug, PatchMail};
pub use workspace::Workspace;

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{ObjectType, Oid, Repository};

use crate::store::release::Release;

/// The series file's name, as quilt expects it.
pub const SERIES_FILE: &str = "series";
/// Ends every patch: the mail signature `git format-patch` would fill with its version.
pub const TRAILER: &str = "-- \nld-fallback\n";
const BASE_PREFIX: &str = "# base: ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// File name, `NNNN-<subject>.patch`.
    pub name: String,
    /// The whole file.
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Series {
    /// The release the series applies to.
    pub base: Release,
    /// That release's tree as recorded in the series file.
    pub base_tree: Oid,
    pub patches: Vec<Patch>,
    /// The series file as read (or as generated).
    pub series_text: String,
}

impl Series {
    /// Reads `dir/series` and the patches it lists.
    pub fn load(dir: &Path) -> Result<Series> {
        let path = dir.join(SERIES_FILE);
        let series_text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read series file {}", path.display()))?;
        let mut base = None;
        let mut patches = Vec::new();
        for line in series_text.lines() {
            if let Some(rest) = line.strip_prefix(BASE_PREFIX) {
                let mut words = rest.split_whitespace();
                let (Some(tag), Some(tree)) = (words.next(), words.next()) else {
                    bail!(
                        "{}: malformed base line `{line}`; expected `# base: glibc-X.Y <tree id>`",
                        path.display()
                    );
                };
                let release = Release::parse(tag)
                    .with_context(|| format!("{}: bad base release", path.display()))?;
                let tree = Oid::from_str(tree)
                    .with_context(|| format!("{}: bad base tree id `{tree}`", path.display()))?;
                base = Some((release, tree));
                continue;
            }
            let Some(name) = line
                .split_whitespace()
                .next()
                .filter(|w| !w.starts_with('#'))
            else {
                continue;
            };
            let patch = dir.join(name);
            let text = std::fs::read_to_string(&patch).with_context(|| {
                format!(
                    "cannot read patch {} listed in {}",
                    patch.display(),
                    path.display()
                )
            })?;
            patches.push(Patch {
                name: name.to_string(),
                text,
            });
        }
        let Some((base, base_tree)) = base else {
            bail!(
                "{} has no `# base: glibc-X.Y <tree id>` line: which release does it apply to?",
                path.display()
            );
        };
        Ok(Series {
            base,
            base_tree,
            patches,
            series_text,
        })
    }

    /// A stable hash of the series file and every patch text (for build cache keys).
    pub fn content_id(&self) -> String {
        let mut canonical = Vec::new();
        for (name, text) in std::iter::once((SERIES_FILE, self.series_text.as_str())).chain(
            self.patches
                .iter()
                .map(|p| (p.name.as_str(), p.text.as_str())),
        ) {
            canonical.extend_from_slice(format!("{name}\0{}\0", text.len()).as_bytes());
            canonical.extend_from_slice(text.as_bytes());
        }
        Oid::hash_object(ObjectType::Blob, &canonical)
            .expect("hashing in memory cannot fail")
            .to_string()
    }

    /// Commits every patch, in order, on `base_commit` (the series' release in `repo`).
    /// A patch must apply exactly: its `index` lines must name the blobs it meets, and its
    /// hunks must match. Returns the commits, oldest first.
    pub fn commit_on(&self, repo: &Repository, base_commit: Oid) -> Result<Vec<Oid>> {
        let mut head = repo
            .find_commit(base_commit)
            .context("base commit missing from the store")?;
        let mut commits = Vec::new();
        for patch in &self.patches {
            let mail = PatchMail::parse(&patch.text)
                .with_context(|| format!("cannot parse {}", patch.name))?;
            let oid = mail
                .commit_on(repo, &head)
                .with_context(|| format!("{} does not apply to glibc {}", patch.name, self.base))?;
            head = repo.find_commit(oid)?;
            commits.push(oid);
        }
        Ok(commits)
    }

    /// The series for `commits` (each the child of the previous, the first a child of
    /// `base`'s release commit).
    pub fn from_commits(repo: &Repository, base: Release, commits: &[Oid]) -> Result<Series> {
        let Some(first) = commits.first() else {
            bail!("cannot write an empty series for glibc {base}");
        };
        let base_tree = repo.find_commit(*first)?.parent(0)?.tree_id();
        let mut patches = Vec::new();
        let mut listing = String::new();
        for (i, commit) in commits.iter().enumerate() {
            let commit = repo.find_commit(*commit)?;
            let text = format_patch(repo, &commit, i + 1, commits.len())?;
            let name = format!(
                "{:04}-{}.patch",
                i + 1,
                slug(commit.summary().unwrap_or("patch"))
            );
            listing.push_str(&name);
            listing.push('\n');
            patches.push(Patch { name, text });
        }
        let series_text = format!(
            "{BASE_PREFIX}{} {base_tree}\n# LD_FALLBACK_PATH for glibc {base}; apply in order with git am, quilt, or patch -p1.\n# Generated by `cargo xtask rebase-glibc`; edit the commits, not these files.\n{listing}",
            base.tag()
        );
        Ok(Series {
            base,
            base_tree,
            patches,
            series_text,
        })
    }

    /// Writes the series into `dir` (replacing it) through a temporary sibling directory,
    /// so that `dir` never holds half a series.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let parent = dir.parent().context("series dir has no parent")?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let staging = crate::util::staging::tempdir_in(parent, "series")?;
        std::fs::write(staging.path().join(SERIES_FILE), &self.series_text)
            .context("cannot write series")?;
        for patch in &self.patches {
            std::fs::write(staging.path().join(&patch.name), &patch.text)
                .with_context(|| format!("cannot write {}", patch.name))?;
        }
        let staged = staging.keep();
        let old = parent.join(format!(
            ".old-{}",
            dir.file_name().unwrap().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&old);
        if dir.exists() {
            std::fs::rename(dir, &old)
                .with_context(|| format!("cannot move {} aside", dir.display()))?;
        }
        std::fs::rename(&staged, dir)
            .with_context(|| format!("cannot move the new series to {}", dir.display()))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    }

    /// Files of `dir` that differ from this series (missing, extra, or other bytes).
    pub fn drift_against(&self, dir: &Path) -> Result<Vec<String>> {
        let mut expected: Vec<(&str, &str)> = vec![(SERIES_FILE, self.series_text.as_str())];
        expected.extend(
            self.patches
                .iter()
                .map(|p| (p.name.as_str(), p.text.as_str())),
        );
        let mut drift = Vec::new();
        for (name, text) in &expected {
            match std::fs::read(dir.join(name)) {
                Ok(bytes) if bytes == text.as_bytes() => {}
                Ok(_) => drift.push(format!("{name} differs")),
                Err(_) => drift.push(format!("{name} is missing")),
            }
        }
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if !expected.iter().any(|(n, _)| *n == name) {
                drift.push(format!("{name} is not part of the series"));
            }
        }
        Ok(drift)
    }
}
