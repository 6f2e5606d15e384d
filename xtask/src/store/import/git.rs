//! Imports from an upstream glibc git repository: the tag's tree minus `manual/`.

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};
use xshell::{cmd, Shell};

use crate::store::release::Release;
use loader_tests::host::{self, tools};

/// Fetches tag `glibc-X.Y` from `url` into a scratch repository, verifies its tree minus
/// `manual/` against `expected`, then copies the objects into `store`. Returns the tree id.
pub fn import_tag(
    store: &Repository,
    store_dir: &Path,
    release: Release,
    url: &str,
    expected: Oid,
) -> Result<Oid> {
    host::require(&[tools::GIT])?;
    let scratch =
        crate::util::staging::tempdir_in(store_dir.parent().unwrap_or(Path::new(".")), "fetch")?;
    let tag = release.tag();
    let sh = Shell::new()?;
    let dir = scratch.path();
    cmd!(sh, "git init --quiet --bare {dir}")
        .run()
        .context("cannot create a scratch repository")?;
    // git2 is built without network transports; the git CLI fetches from any URL or path.
    cmd!(
        sh,
        "git -C {dir} fetch --quiet --depth=1 --no-tags {url} refs/tags/{tag}:refs/tags/{tag}"
    )
    .run()
    .with_context(|| format!("cannot fetch tag {tag} from {url}"))?;
    let scratch_repo = Repository::open_bare(dir).context("cannot open the scratch repository")?;
    let upstream = scratch_repo
        .find_reference(&format!("refs/tags/{tag}"))?
        .peel_to_tree()
        .with_context(|| format!("tag {tag} of {url} is not a commit"))?;
    let mut root = scratch_repo.treebuilder(Some(&upstream))?;
    if root.get(crate::store::import::DROPPED_TOP_LEVEL)?.is_some() {
        root.remove(crate::store::import::DROPPED_TOP_LEVEL)?;
    }
    let tree = root
        .write()
        .context("cannot write the tree without manual/")?;
    if tree != expected {
        bail!(
            "tag {tag} of {url} does not hold glibc {release} as pinned: its tree minus manual/ is {tree}, \
             expected {expected} (xtask/src/release.rs); the store is unchanged"
        );
    }
    copy_tree(&scratch_repo, store, tree)?;
    Ok(tree)
}

fn copy_tree(from: &Repository, to: &Repository, tree: Oid) -> Result<()> {
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
    }
    Ok(())
}
