//! The manual's patch of the mail: docs/upstream/manual-dynlink.texi.patch, the text for
//! upstream's `manual/dynlink.texi`, which no `patches/<X.Y>/` series can carry (Debian's
//! tarballs, which the store imports, have no `manual/`). Nor does the project carry
//! upstream's file: it is read from the sender's own checkout of upstream glibc
//! (`--upstream DIR`, or `$LD_FALLBACK_GLIBC_UPSTREAM`), the tree a contribution is sent
//! from. The patch must have been made against that file (its `index` line names the file's
//! blob) and apply to it exactly: that is the check that it applies, and it gives the mail
//! real `index` lines, so that `git am -3` can fall back to a three-way merge on a newer
//! master. It goes out as a patch of its own after the series'.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository, Signature};

use super::Author;
use crate::util::{git, paths};
use loader_tests::host::non_empty_env;

/// The manual change, a diff of `manual/dynlink.texi`, in the project checkout.
pub(crate) const PATCH: &str = "docs/upstream/manual-dynlink.texi.patch";
/// The environment variable that names the sender's checkout when `--upstream` does not.
pub(crate) const UPSTREAM_ENV: &str = "LD_FALLBACK_GLIBC_UPSTREAM";
/// The environment variable that names another manual patch than [`PATCH`] (the tests run
/// the real binary on a synthetic manual that way, as `$LD_FALLBACK_PATCHES` for the series).
const PATCH_ENV: &str = "LD_FALLBACK_MANUAL_PATCH";
/// Where the file lives in glibc's tree.
const PATH: &str = "manual/dynlink.texi";
/// How a contributor gets a checkout (glibc's wiki, page GlibcGit).
const CLONE: &str = "git clone git://sourceware.org/git/glibc.git";
/// Hex digits of a blob id as the mails and messages write it (`core.abbrev=12`).
const ABBREV: usize = 12;

const MESSAGE: &str = "\
manual: Document LD_FALLBACK_PATH and ld.so --fallback-path

Describe LD_FALLBACK_PATH among the dynamic linker's environment
variables and --fallback-path among the options of ld.so: where the
fallback directories come in the search order, that -z nodefaultlib
and --inhibit-cache do not switch them off (and that the places those
skip are then not searched before them), the syntax and where it
differs from LD_LIBRARY_PATH (an empty or relative entry is ignored),
secure mode, and the diagnostics that report the fallback directories.
";

/// The manual's patch: `$LD_FALLBACK_MANUAL_PATCH`, else [`PATCH`] of the checkout.
pub(crate) fn patch_path() -> PathBuf {
    non_empty_env(PATCH_ENV).unwrap_or_else(|| paths::project_root().join(PATCH))
}

/// The sender's checkout of upstream glibc: `--upstream`, else `$LD_FALLBACK_GLIBC_UPSTREAM`
/// (`from_env`, its value when set and not empty). Refused without one: the manual's mail
/// is part of what a contributor sends, and only their checkout has upstream's file.
pub(crate) fn checkout(flag: Option<PathBuf>, from_env: Option<PathBuf>) -> Result<Checkout> {
    match (flag, from_env) {
        (Some(dir), _) => Ok(Checkout {
            dir,
            named_by: "--upstream",
        }),
        (None, Some(dir)) => Ok(Checkout {
            dir,
            named_by: "$LD_FALLBACK_GLIBC_UPSTREAM",
        }),
        (None, None) => bail!(
            "the mails need upstream glibc's manual/dynlink.texi, which the manual's patch ({PATCH}) must apply to, and this project carries no copy of it (Debian's release tarballs have no manual/, and upstream's file is not the project's to ship): pass --upstream DIR, your checkout of upstream glibc's master (`{CLONE}`), or set ${UPSTREAM_ENV}; nothing was written"
        ),
    }
}

/// A directory given as the sender's checkout, and the option or variable that named it.
pub struct Checkout {
    dir: PathBuf,
    named_by: &'static str,
}

impl Checkout {
    /// `dir`, named by `--upstream` (for callers of the library).
    pub fn new(dir: &Path) -> Checkout {
        Checkout {
            dir: dir.to_path_buf(),
            named_by: "--upstream",
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The manual's change and upstream's file it applies to, read and checked before any mail
/// is made.
pub struct Manual {
    patch_path: PathBuf,
    patch: String,
    /// Upstream's `manual/dynlink.texi`, as the checkout has it.
    upstream: Vec<u8>,
    /// That file as the cover letter names it: `manual/dynlink.texi of master at <commit>`.
    pub(crate) source: String,
}

/// Upstream's `manual/dynlink.texi`: one chapter of the manual, text a person writes.
const MANUAL_LIMIT: model::file::Limit = model::file::Limit {
    bytes: 16 << 20,
    what: "a chapter of the manual",
};

impl Manual {
    /// The patch at `patch_path` and the file of `checkout`. Refused, naming the cause, when
    /// the checkout has no such file, when the file is changed from the checkout's `HEAD`
    /// (the mail names that commit), or when the patch was not made against the file.
    pub fn read(patch_path: &Path, checkout: &Checkout) -> Result<Manual> {
        let dir = &checkout.dir;
        if !dir.is_dir() {
            bail!(
                "{} {} is not a directory: name your checkout of upstream glibc (`{CLONE}`)",
                checkout.named_by,
                dir.display()
            );
        }
        let file = dir.join(PATH);
        let upstream = match model::file::read_regular(&file, MANUAL_LIMIT) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{} {} has no {PATH}: it must be a checkout of upstream glibc (`{CLONE}`); a release tarball's tree has no manual/",
                checkout.named_by,
                dir.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        let blob = Oid::hash_object(git2::ObjectType::Blob, &upstream)
            .with_context(|| format!("cannot hash {}", file.display()))?
            .to_string();
        let source = match git::open(dir) {
            Ok(repo) => committed_source(&repo, dir, &file, &blob)?,
            // Not a git work tree (an exported snapshot): the file is named by its content.
            Err(e)
                if git::error_code(&e) == Some(git2::ErrorCode::NotFound)
                    && !git::is_configuration_error(&e) =>
            {
                format!("{PATH} as of blob {}", &blob[..ABBREV])
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot open {} with git", dir.display()))
            }
        };
        Manual::checked(
            patch_path,
            upstream,
            source,
            &file.display().to_string(),
            dir,
        )
    }

    /// The patch at `patch_path` and upstream's file as the base commit of the checkout `dir`
    /// has it (the mails apply to that commit, whatever its work tree holds).
    pub fn at_base(patch_path: &Path, dir: &Path, base: &super::Base) -> Result<Manual> {
        let repo =
            git::open(dir).with_context(|| format!("cannot open {} with git", dir.display()))?;
        let tree = repo
            .find_commit(base.commit)
            .and_then(|c| c.tree())
            .with_context(|| format!("cannot read {} of {}", base.name, dir.display()))?;
        let Ok(entry) = tree.get_path(Path::new(PATH)) else {
            bail!(
                "{} of {} has no {PATH}: the base must be a commit of upstream glibc (`{CLONE}`)",
                base.name,
                dir.display()
            );
        };
        let upstream = repo
            .find_blob(entry.id())
            .with_context(|| format!("{PATH} of {} is not a file", base.name))?
            .content()
            .to_vec();
        let source = format!("{PATH} of {}", base.name);
        let file = format!("{PATH} of {}", base.name);
        Manual::checked(patch_path, upstream, source, &file, dir)
    }

    /// The patch at `patch_path`, refused unless it was made against `upstream` (`file`, of
    /// the checkout `dir`).
    fn checked(
        patch_path: &Path,
        upstream: Vec<u8>,
        source: String,
        file: &str,
        dir: &Path,
    ) -> Result<Manual> {
        let blob = Oid::hash_object(git2::ObjectType::Blob, &upstream)
            .with_context(|| format!("cannot hash {file}"))?
            .to_string();
        let patch = model::file::read_regular(patch_path, crate::series::PATCH_LIMIT)
            .with_context(|| format!("cannot read {}", patch_path.display()))?;
        let patch = String::from_utf8(patch)
            .with_context(|| format!("{} is not UTF-8", patch_path.display()))?;
        let made_against = patch
            .lines()
            .find_map(|line| line.strip_prefix("index "))
            .and_then(|ids| ids.split("..").next())
            .filter(|id| id.len() >= 7 && id.bytes().all(|b| b.is_ascii_hexdigit()))
            .with_context(|| {
                format!(
                    "{} has no `index` line naming the blob it was made against: make it with git diff",
                    patch_path.display()
                )
            })?;
        if !blob.starts_with(made_against) {
            let patch_path = patch_path.display();
            bail!(
                "{patch_path} was made against blob {made_against} of {PATH}, not against {}, blob {}: make it again against that file: in {}, `git apply --3way {patch_path}` (and resolve what it cannot merge), then `git -c core.abbrev=12 diff HEAD -- {PATH} > {patch_path}` and `git checkout HEAD -- {PATH}`",
                file,
                &blob[..ABBREV],
                dir.display()
            );
        }
        Ok(Manual {
            patch_path: patch_path.to_path_buf(),
            patch,
            upstream,
            source,
        })
    }

    /// The manual change as a commit by `author` (signed off, dated `when`) on `parent`, a
    /// commit on the base whose tree has upstream's `manual/dynlink.texi`; refused when the
    /// patch does not apply exactly.
    pub(crate) fn commit_on(
        &self,
        repo: &Repository,
        parent: &git2::Commit<'_>,
        author: &Author,
        when: &git2::Time,
    ) -> Result<Oid> {
        let patch_path = self.patch_path.display();
        let diff = self.diff()?;
        let mut index = repo
            .apply_to_tree(&parent.tree()?, &diff, None)
            .map_err(|e| {
                anyhow::anyhow!(
                    "{patch_path} does not apply to {}: {}",
                    self.source,
                    e.message()
                )
            })?;
        let tree = repo.find_tree(index.write_tree_to(repo)?)?;
        let signature = Signature::new(&author.name, &author.email, when)?;
        let message = format!("{MESSAGE}\n{}\n", author.sign_off());
        Ok(repo.commit(None, &signature, &signature, &message, &tree, &[parent])?)
    }

    /// The patch as a diff, refused unless it changes `manual/dynlink.texi` alone.
    fn diff(&self) -> Result<git2::Diff<'static>> {
        let patch_path = self.patch_path.display();
        let diff = git2::Diff::from_buffer(self.patch.as_bytes())
            .with_context(|| format!("{patch_path} is not a diff"))?;
        let touched: Vec<String> = diff
            .deltas()
            .filter_map(|d| d.new_file().path().map(|p| p.display().to_string()))
            .collect();
        if touched != [PATH] {
            bail!(
                "{patch_path} must change {PATH} alone; it changes {}",
                touched.join(", ")
            );
        }
        Ok(diff)
    }

    /// The manual change as a commit by `author` (signed off, dated `when`) whose parent
    /// holds upstream's `manual/dynlink.texi` alone; refused when the patch does not apply
    /// exactly.
    pub(crate) fn commit(
        &self,
        repo: &Repository,
        author: &Author,
        when: &git2::Time,
    ) -> Result<Oid> {
        let patch_path = self.patch_path.display();
        let blob = repo
            .blob(&self.upstream)
            .context("cannot store upstream's manual/dynlink.texi")?;
        let mut tree = repo.treebuilder(None)?;
        let mut manual = repo.treebuilder(None)?;
        manual.insert("dynlink.texi", blob, git2::FileMode::Blob.into())?;
        tree.insert("manual", manual.write()?, git2::FileMode::Tree.into())?;
        let base_tree = repo.find_tree(tree.write()?)?;
        let diff = self.diff()?;
        let mut index = repo.apply_to_tree(&base_tree, &diff, None).map_err(|e| {
            anyhow::anyhow!(
                "{patch_path} does not apply to {}: {}",
                self.source,
                e.message()
            )
        })?;
        let new_tree = repo.find_tree(index.write_tree_to(repo)?)?;
        let signature = Signature::new(&author.name, &author.email, when)?;
        let base = repo.commit(
            None,
            &signature,
            &signature,
            &format!("upstream's {}\n", self.source),
            &base_tree,
            &[],
        )?;
        let message = format!("{MESSAGE}\n{}\n", author.sign_off());
        let parent = repo.find_commit(base)?;
        Ok(repo.commit(
            None,
            &signature,
            &signature,
            &message,
            &new_tree,
            &[&parent],
        )?)
    }
}

/// The file of a git checkout as the cover letter names it (`manual/dynlink.texi of master
/// at <commit>`), refused when the work tree's file (blob `blob`) is not its `HEAD`'s: the
/// letter would name a commit whose file the patch was not checked against.
fn committed_source(repo: &Repository, dir: &Path, file: &Path, blob: &str) -> Result<String> {
    let dir = dir.display();
    let head = repo
        .head()
        .with_context(|| format!("{dir} has no commit checked out (HEAD)"))?;
    let commit = head
        .peel_to_commit()
        .with_context(|| format!("cannot read HEAD of {dir}"))?;
    let at = commit.id().to_string();
    let committed = commit
        .tree()
        .with_context(|| format!("cannot read HEAD of {dir}"))?
        .get_path(Path::new(PATH))
        .ok()
        .map(|entry| entry.id().to_string());
    if committed.as_deref() != Some(blob) {
        bail!(
            "{} is not the one committed at HEAD ({}) of {dir}: the mail names that commit as upstream's, so the file must be as committed there; restore it (`git -C {dir} checkout HEAD -- {PATH}`) or stash the change",
            file.display(),
            &at[..ABBREV]
        );
    }
    Ok(match head.is_branch().then(|| head.shorthand()).flatten() {
        Some(branch) => format!("{PATH} of {branch} at {}", &at[..ABBREV]),
        None => format!("{PATH} of {}", &at[..ABBREV]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the manual says stays true to the contract: no claim that a fallback copy never
    /// wins over a system one (false where those are not searched), and the rule for empty
    /// and relative entries.
    #[test]
    fn the_manual_text_says_what_the_loader_does() {
        let root = crate::util::paths::project_root();
        let patch = std::fs::read_to_string(root.join(PATCH)).unwrap();
        let added: String = patch
            .lines()
            .filter_map(|l| l.strip_prefix('+'))
            .map(|l| format!("{l} "))
            .collect();
        let added = added.split_whitespace().collect::<Vec<_>>().join(" ");
        for untrue in ["never shadows", "never replaces", "can only supply"] {
            assert!(!added.contains(untrue), "{untrue:?} in {PATCH}");
        }
        for said in [
            "only absolute directories are searched: an entry that is empty, or that is a relative path after the expansion of the dynamic string tokens, is ignored",
            "for a loading object linked with @option{-Wl,-z,nodefaultlib}, or with @samp{--inhibit-cache}, a shared object can be loaded from a fallback directory even if the default directories or @file{ld.so.cache} have a copy of it.",
            "@env{LD_FALLBACK_PATH} is ignored and removed from the environment.",
        ] {
            assert!(added.contains(said), "{PATCH} does not say {said:?}");
        }
    }

    /// `--upstream` wins over the variable; neither is bad input naming both and why.
    #[test]
    fn the_checkout_is_the_option_s_else_the_variable_s_else_refused() {
        let (flag, env) = (PathBuf::from("/flag"), PathBuf::from("/env"));
        let named = |c: Checkout| (c.dir, c.named_by);
        assert_eq!(
            named(checkout(Some(flag.clone()), Some(env.clone())).unwrap()),
            (flag, "--upstream")
        );
        assert_eq!(
            named(checkout(None, Some(env.clone())).unwrap()),
            (env, "$LD_FALLBACK_GLIBC_UPSTREAM")
        );
        assert_eq!(
            format!("{:#}", checkout(None, None).err().unwrap()),
            "the mails need upstream glibc's manual/dynlink.texi, which the manual's patch (docs/upstream/manual-dynlink.texi.patch) must apply to, and this project carries no copy of it (Debian's release tarballs have no manual/, and upstream's file is not the project's to ship): pass --upstream DIR, your checkout of upstream glibc's master (`git clone git://sourceware.org/git/glibc.git`), or set $LD_FALLBACK_GLIBC_UPSTREAM; nothing was written"
        );
    }
}
