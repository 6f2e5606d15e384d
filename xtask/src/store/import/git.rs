//! Imports from an upstream glibc git repository: the tag's tree minus `manual/`.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};
use tempfile::TempDir;
use xshell::{cmd, Cmd};

use crate::store::Incoming;
use crate::util::{child, fault, shell};
use loader_tests::host::{self, tools};

/// Fetches tag `glibc-X.Y` from `url` into a scratch repository below `scratch_parent` and
/// verifies its tree minus `manual/` against the one `incoming` expects (when it expects
/// one); the caller copies it into a store with [`copy_tree`]. Returns the scratch directory
/// (removed on drop), the repository and the tree.
pub(crate) fn fetch_tag(
    scratch_parent: &Path,
    incoming: &Incoming,
    url: &str,
) -> Result<(TempDir, Repository, Oid)> {
    host::require(&[tools::GIT])?;
    let scratch = crate::util::staging::tempdir_in(scratch_parent, "fetch")?;
    let (release, tag) = (&incoming.version, incoming.tag());
    let dir = scratch.path();
    let sh = shell::here()?;
    git(cmd!(sh, "git init --quiet --bare {dir}")).context("cannot create a scratch repository")?;
    // git2 is built without network transports; the git CLI fetches from any URL or path.
    git(cmd!(
        sh,
        "git -C {dir} fetch --quiet --depth=1 --no-tags {url} refs/tags/{tag}:refs/tags/{tag}"
    ))
    .with_context(|| format!("cannot fetch tag {tag} from {url}"))?;
    fault::point("import:fetched");
    let scratch_repo =
        crate::util::git::open_bare(dir).context("cannot open the scratch repository")?;
    let tree = without_manual(&scratch_repo, &tag, url)?;
    if let Some(expected) = incoming.tree.filter(|expected| *expected != tree) {
        bail!(
            "tag {tag} of {url} does not hold glibc {release} as pinned: its tree minus manual/ is {tree}, \
             expected {expected} (its row in {}); the store is unchanged",
            model::TABLE_PATH
        );
    }
    Ok((scratch, scratch_repo, tree))
}

/// The tag's tree minus `manual/`, written into `repo`.
fn without_manual(repo: &Repository, tag: &str, url: &str) -> Result<Oid> {
    let upstream = repo
        .find_reference(&format!("refs/tags/{tag}"))?
        .peel_to_tree()
        .with_context(|| format!("tag {tag} of {url} is not a commit"))?;
    let mut root = repo.treebuilder(Some(&upstream))?;
    if root.get(crate::store::import::DROPPED_TOP_LEVEL)?.is_some() {
        root.remove(crate::store::import::DROPPED_TOP_LEVEL)?;
    }
    root.write()
        .context("cannot write the tree without manual/")
}

/// Runs a git command that dies with us, failing with its stderr; git's configuration is
/// checked first, as for every repository this program opens (`util::git`).
fn git(cmd: Cmd<'_>) -> Result<()> {
    crate::util::git::check_configuration(&[])?;
    let mut cmd = Command::from(cmd);
    // It runs in a process group of its own (`util::child`), away from the terminal, where
    // a prompt for a password would stop it for good: a URL that needs one fails instead.
    cmd.env("GIT_TERMINAL_PROMPT", "0");
    let out = child::dies_with_us(&mut cmd)
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "{} ({})",
            String::from_utf8_lossy(&out.stderr).trim_end(),
            out.status
        );
    }
    Ok(())
}

/// Copies `tree` and everything below it from `from` into `to` (objects `to` has are skipped).
pub(crate) fn copy_tree(from: &Repository, to: &Repository, tree: Oid) -> Result<()> {
    let src = from.odb()?;
    let dst = to.odb()?;
    let mut ids = vec![tree];
    from.find_tree(tree)?
        .walk(TreeWalkMode::PreOrder, |_, entry| {
            // Submodule entries (glibc has none) point at commits that carry no content.
            if entry.kind() != Some(ObjectType::Commit) {
                ids.push(entry.id());
            }
            TreeWalkResult::Ok
        })
        .context("cannot walk the fetched tree")?;
    for id in ids {
        if dst.exists(id) {
            continue;
        }
        let object = src
            .read(id)
            .with_context(|| format!("object {id} missing from the fetch"))?;
        dst.write(object.kind(), object.data())
            .context("cannot copy an object into the store")?;
        fault::point("store-write:object");
    }
    Ok(())
}
