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

use crate::merge::{self, PatchFate, Picked};
use crate::series::{Series, Workspace};
use crate::util::git;
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
        let repo = match git::open(dir) {
            Ok(repo) => repo,
            Err(e) if git::is_configuration_error(&e) => {
                return Err(e).with_context(|| {
                    format!(
                        "cannot read git's configuration, which opening the checkout {} needs",
                        dir.display()
                    )
                })
            }
            Err(e) if git::error_code(&e) == Some(git2::ErrorCode::NotFound) && rev.is_none() => {
                return Ok(None)
            }
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
    /// The trees of the commits, in order.
    trees: Vec<Oid>,
}

impl Moved {
    fn tree_of(&self, commit: Oid) -> Result<Oid> {
        self.commits
            .iter()
            .position(|c| *c == commit)
            .map(|at| self.trees[at])
            .context("a commit that is not the moved series'")
    }
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
        .filter(|(_, step)| **step == PatchFate::Dropped)
        .map(|(patch, _)| patch.name.clone())
        .collect();
    let commits = merge::applied(&steps);
    let trees = commits
        .iter()
        .map(|c| Ok(repo.find_commit(*c)?.tree_id()))
        .collect::<Result<_>>()?;
    Ok(Moved {
        from,
        commits,
        dropped,
        trees,
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
            "no release with a series is in the store to move onto {}: import one (`cargo xtask store import X.Y`) or name it with --release",
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

/// What ran on the base: glibc's `elf` suite built for x86_64 with and without the series,
/// compared test by test, as a cell's elf step is. Recorded under `<cache>/verify/base/`,
/// keyed by the base commit and the tree the series makes of it, so that a later run of
/// `format-series` for the same series on the same base says it without building again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BaseRun {
    /// When the second suite ended (UTC).
    pub ran_at: String,
    pub target: String,
    /// Tests compared, and those that pass without the series and fail with it.
    pub compared: usize,
    pub regressions: Vec<String>,
    /// The tests the series adds, and those of them that did not pass.
    pub series_tests: usize,
    pub series_not_passing: Vec<String>,
    /// Tests only one tree ran that are not the series' own, or that never ran.
    pub not_compared: Vec<String>,
}

impl BaseRun {
    /// Nothing regressed, every test was compared, and every test of the series passed.
    pub fn passes(&self) -> bool {
        self.regressions.is_empty()
            && self.not_compared.is_empty()
            && self.series_not_passing.is_empty()
            && self.series_tests > 0
    }

    /// The testing statement's sentence, for the cover letter.
    pub fn sentence(&self, base: &Base) -> String {
        format!(
            "On {}, built for {} ({}): make check subdirs=elf with and without the series, compared test by test: {} ({} tests); {}.",
            base.name,
            self.target,
            self.ran_at,
            match self.regressions.len() {
                0 => "no new failures".to_string(),
                n => format!("{n} new failures ({})", self.regressions.join(", ")),
            },
            self.compared,
            match self.series_not_passing.len() {
                0 => format!("the {} tests the series adds pass", self.series_tests),
                n => format!(
                    "{n} of the {} tests the series adds do not pass ({})",
                    self.series_tests,
                    self.series_not_passing.join(", ")
                ),
            }
        )
    }
}

fn record_path(cache: &Path, base: &Base, patched_tree: Oid) -> PathBuf {
    cache
        .join("verify/base")
        .join(format!("{}-{patched_tree}.json", base.commit))
}

/// The record of an earlier run on `base` with the series `moved` there.
pub fn recorded_run(cache: &Path, base: &Base, moved: &Moved) -> Result<Option<BaseRun>> {
    let Some(head) = moved.commits.last() else {
        return Ok(None);
    };
    let path = record_path(cache, base, moved.tree_of(*head)?);
    let text = match model::file::read_regular_text(&path, crate::verify::support::RECORD_LIMIT) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    Ok(Some(serde_json::from_str(&text).with_context(|| {
        format!("{} is not a record of a run on a base", path.display())
    })?))
}

/// Builds the base for x86_64 with and without the moved series (one work tree for every
/// base: `<cache>/work/base-x86_64`), runs glibc's `elf` suite in both (each suite's results
/// recorded by its build's key, as a cell's are), compares them, and records the run.
pub fn test_on_base(
    env: &crate::cli::Env,
    base: &Base,
    moved: &Moved,
    series_tests: &[String],
) -> Result<BaseRun> {
    use crate::verify::testsuite::{self, Diff, Status};
    use model::{Flavour, Target};
    let builder = crate::sysroot::Builder::new(env);
    // The build asks the git command too about the trees (which files mention a name a
    // header declares): it must read the checkout's objects as the store's handle does.
    // Set before the build starts any thread.
    std::env::set_var(
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        base.git_dir.join("objects"),
    );
    let head = *moved
        .commits
        .last()
        .context("the moved series has no commit")?;
    let mut results = Vec::new();
    for (flavour, commit) in [(Flavour::Unpatched, base.commit), (Flavour::Patched, head)] {
        let store = crate::store::SourceStore::open(&env.store)?;
        base.reach(store.repo())?;
        let (key, tree) = builder.tree_of_commit(
            store,
            commit,
            moved.from,
            Target::X86_64,
            flavour,
            "base-x86_64",
        )?;
        let (found, _) = testsuite::results_for(&key, "elf", || {
            testsuite::run_check(&tree, "elf", builder.jobs, None)
        })
        .with_context(|| format!("cannot run glibc's tests on {} ({flavour})", base.name))?;
        results.push(found);
    }
    let (diff, _) = Diff::between(&results[0], &results[1], series_tests);
    let series_not_passing = series_tests
        .iter()
        .filter(|t| results[1].get(*t).map(|r| r.status) != Some(Status::Pass))
        .cloned()
        .collect();
    let mut not_compared: Vec<String> = diff
        .only_patched
        .iter()
        .chain(&diff.only_unpatched)
        .chain(&diff.never_ran)
        .map(|t| t.test.clone())
        .collect();
    not_compared.sort();
    let run = BaseRun {
        ran_at: crate::verify::provenance::now(),
        target: Target::X86_64.triplet().to_string(),
        compared: diff.compared(),
        regressions: diff.regressions.iter().map(|c| c.test.clone()).collect(),
        series_tests: series_tests.len(),
        series_not_passing,
        not_compared,
    };
    let path = record_path(&env.cache, base, moved.tree_of(head)?);
    let text = serde_json::to_string_pretty(&run).context("cannot serialize the base's run")?;
    crate::util::durable::replace_file(&path, text.as_bytes())
        .with_context(|| format!("cannot record the base's run in {}", path.display()))?;
    Ok(run)
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
