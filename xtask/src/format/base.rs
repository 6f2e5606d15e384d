//! The base the mails apply to: a commit of the sender's checkout of upstream glibc (`--base
//! REV`, default its `HEAD`), typically the development branch, which is where a contribution
//! goes. The series is moved there with the project's own 3-way merge (`merge::pick`: each
//! patch cherry-picked, the NEWS entry placed by rule, first under the base's newest "Major
//! new features:"), in the store's repository, which reads the checkout's objects for the
//! run; nothing of patches/ or of the store's releases changes. A conflict stops it with
//! nothing written.
//!
//! Which series moves: `--release`, else the one whose release is nearest the base, measured
//! as the lines that differ between that release's tree and the base in the files the series
//! changes (the fewer, the less the merge has to bridge).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository};

use crate::merge::{self, Picked, Step};
use crate::series::{Series, Workspace};
use model::Release;

/// A commit of the sender's checkout, resolved.
pub struct Base {
    /// The checkout's git directory, whose objects the store's repository reads.
    git_dir: PathBuf,
    pub commit: Oid,
    /// How the cover letter names it: `master at 04e750e75b73` (or the commit alone).
    pub name: String,
    /// The version under development on the base, from its `version.h`: `2.43` for a
    /// development branch at `2.42.9000`, `2.45` for the release `2.44`.
    pub development: String,
}

impl Base {
    /// `rev` (default `HEAD`) of the git checkout `dir`; `None` when `dir` is no git
    /// repository and no `rev` was asked for (an exported snapshot: the mails then apply to the
    /// series' own release, as the letter says).
    pub fn resolve(dir: &Path, rev: Option<&str>) -> Result<Option<Base>> {
        let repo = match Repository::open(dir) {
            Ok(repo) => repo,
            Err(e) if e.code() == git2::ErrorCode::NotFound && rev.is_none() => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "--base needs a git checkout of upstream glibc, and {} is not one",
                        dir.display()
                    )
                })
            }
        };
        let spec = rev.unwrap_or("HEAD");
        let commit = repo
            .revparse_single(spec)
            .and_then(|o| o.peel_to_commit())
            .with_context(|| format!("{spec} is not a commit of {}", dir.display()))?;
        let id = commit.id();
        let short = &id.to_string()[..12];
        let name = match rev {
            None => match repo.head().ok().filter(|h| h.is_branch()) {
                Some(head) => format!("{} at {short}", head.shorthand().unwrap_or("HEAD")),
                None => short.to_string(),
            },
            Some(spec) if spec.starts_with(short) || short.starts_with(spec) => short.to_string(),
            Some(spec) => format!("{spec} at {short}"),
        };
        let version = read_blob(&repo, &commit.tree()?, "version.h")
            .with_context(|| format!("{spec} of {} is no glibc tree", dir.display()))?;
        let development = development_version(&version).with_context(|| {
            format!(
                "cannot read the version from version.h at {spec} of {}",
                dir.display()
            )
        })?;
        Ok(Some(Base {
            git_dir: repo.path().to_path_buf(),
            commit: id,
            name,
            development,
        }))
    }

    /// Lets `repo` (the store's) read the checkout's objects, for as long as it is open.
    fn reach(&self, repo: &Repository) -> Result<()> {
        let objects = self.git_dir.join("objects");
        repo.odb()
            .and_then(|odb| odb.add_disk_alternate(&objects.display().to_string()))
            .with_context(|| format!("cannot read the objects of {}", objects.display()))?;
        repo.find_commit(self.commit)
            .with_context(|| format!("the base {} cannot be read", self.name))?;
        Ok(())
    }
}

/// `version.h`'s `VERSION` and `RELEASE` as the version under development: `2.42.9000` in
/// a `development` release is `2.43`; a released `2.44` is followed by `2.45`.
fn development_version(version_h: &str) -> Option<String> {
    let value = |name: &str| {
        version_h.lines().find_map(|line| {
            let rest = line.strip_prefix("#define ")?.strip_prefix(name)?;
            Some(rest.trim().trim_matches('"').to_string())
        })
    };
    let version = value("VERSION")?;
    let mut parts = version.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    Some(format!("{major}.{}", minor + 1))
}

fn read_blob(repo: &Repository, tree: &git2::Tree<'_>, path: &str) -> Result<String> {
    let entry = tree
        .get_path(Path::new(path))
        .with_context(|| format!("it has no {path}"))?;
    let blob = repo
        .find_blob(entry.id())
        .with_context(|| format!("its {path} is not a file"))?;
    String::from_utf8(blob.content().to_vec()).with_context(|| format!("its {path} is not UTF-8"))
}

/// The series moved onto the base: what the cover letter says of it.
pub struct Moved {
    /// The release whose series was moved.
    pub from: Release,
    /// The commits on the base, one per patch that still changes something.
    pub commits: Vec<Oid>,
    /// The patches the base already has (dropped: their cherry-pick changed nothing).
    pub dropped: Vec<String>,
}

/// The series of `from` moved onto `base`.
pub fn move_series(ws: &Workspace, base: &Base, from: Release) -> Result<Moved> {
    let repo = ws.store.repo();
    base.reach(repo)?;
    let series = crate::rebase::series_check::passing_series(ws, from)?;
    let (_, commits) = ws.commit_series(&series)?;
    let mut steps = Vec::new();
    match merge::pick(repo, &commits, 0, base.commit, &mut steps)? {
        Picked::Done { .. } => {}
        Picked::Conflict { at, index, .. } => {
            let mut paths: Vec<String> = index
                .conflicts()?
                .filter_map(|c| c.ok())
                .filter_map(|c| c.our.or(c.their).or(c.ancestor))
                .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
                .collect();
            paths.dedup();
            bail!(
                "the glibc {from} series does not apply to {} without a conflict: {} conflicts in {}; rebase the series onto a release nearer that base first (`cargo xtask rebase-glibc --onto X.Y`), or name another series with --release; nothing was written",
                base.name,
                series.patches[at].name,
                paths.join(", ")
            );
        }
    }
    let dropped = series
        .patches
        .iter()
        .zip(&steps)
        .filter(|(_, step)| **step == Step::Dropped)
        .map(|(patch, _)| patch.name.clone())
        .collect();
    Ok(Moved {
        from,
        commits: merge::applied(&steps),
        dropped,
    })
}

/// The release with a series whose tree differs least from the base in the files the series
/// changes; of two as near, the newer. Releases the store lacks are not measured.
pub(crate) fn nearest_release(ws: &Workspace, base: &Base) -> Result<Release> {
    let repo = ws.store.repo();
    base.reach(repo)?;
    let base_tree = repo.find_commit(base.commit)?.tree()?;
    let mut best: Option<(usize, Release)> = None;
    let mut measured = Vec::new();
    for release in ws.releases_with_series() {
        let Ok(Some(commit)) = ws.store.release_commit(release) else {
            measured.push(format!("{release}: not in the store, not measured"));
            continue;
        };
        let series = ws.load_series(release)?;
        let paths = changed_paths(&series);
        let mut options = git2::DiffOptions::new();
        for path in &paths {
            options.pathspec(path);
        }
        let release_tree = repo.find_commit(commit)?.tree()?;
        let diff =
            repo.diff_tree_to_tree(Some(&release_tree), Some(&base_tree), Some(&mut options))?;
        let stats = diff.stats()?;
        let distance = stats.insertions() + stats.deletions();
        measured.push(format!("{release}: {distance}"));
        if best.is_none_or(|(d, _)| distance <= d) {
            best = Some((distance, release));
        }
    }
    if let Some((_, release)) = best {
        diagln!(
            "the glibc {release} series, the nearest to {} (lines that differ in the files the series changes: {})",
            base.name,
            measured.join(", ")
        );
    }
    best.map(|(_, release)| release).with_context(|| {
        format!(
            "no release with a series is in the store to move onto {}: import one (`cargo xtask glibc import X.Y`) or name it with --release",
            base.name
        )
    })
}

/// The paths a series' patches change.
fn changed_paths(series: &Series) -> Vec<String> {
    let mut paths: Vec<String> = series
        .patches
        .iter()
        .flat_map(|p| p.text.lines())
        .filter_map(|line| line.strip_prefix("diff --git a/"))
        .filter_map(|paths| paths.split_once(" b/").map(|(_, new)| new.to_string()))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_development_version_comes_from_version_h() {
        let dev = "#define RELEASE \"development\"\n#define VERSION \"2.42.9000\"\n";
        assert_eq!(development_version(dev).as_deref(), Some("2.43"));
        let stable = "#define RELEASE \"stable\"\n#define VERSION \"2.44\"\n";
        assert_eq!(development_version(stable).as_deref(), Some("2.45"));
        assert_eq!(development_version("int x;\n"), None);
    }
}
