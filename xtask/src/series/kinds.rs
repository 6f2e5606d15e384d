//! File kinds and modes a series may carry: regular files, each keeping the mode it has.
//!
//! A series is text for `git am`, quilt and `patch -p1`; a symlink in it (to `/etc/passwd`,
//! say, picked up from a work tree) or a mode change (`chmod +x` of an upstream file) is
//! nothing a reviewer reads as a change, so it is refused like a path outside the scope. A
//! patch may add an executable file (`new file mode 100755` says so in the patch).

use anyhow::{Context, Result};
use git2::{Delta, FileMode, Oid, Repository};

use super::refuse_first;
use super::scope::commit_diff;
use crate::util::text::listed;

/// What `commit` does to file kinds and modes that a series may not do, one line each.
pub(crate) fn found_in(repo: &Repository, commit: Oid) -> Result<Vec<String>> {
    let diff = commit_diff(repo, commit)?;
    let mut found = Vec::new();
    for delta in diff.deltas() {
        if delta.status() == Delta::Deleted {
            continue;
        }
        let (old, new) = (delta.old_file(), delta.new_file());
        let path = new
            .path()
            .map_or("?".to_string(), |p| p.display().to_string());
        match new.mode() {
            FileMode::Link => {
                let blob = repo
                    .find_blob(new.id())
                    .with_context(|| format!("the blob of {path} is missing"))?;
                found.push(format!(
                    "adds a symlink {path} (to {})",
                    String::from_utf8_lossy(blob.content())
                ));
            }
            FileMode::Commit => found.push(format!("adds a submodule {path}")),
            mode if delta.status() == Delta::Modified && old.mode() != mode => found.push(format!(
                "changes the mode of {path} from {:o} to {:o}",
                u32::from(old.mode()),
                u32::from(mode)
            )),
            _ => {}
        }
    }
    Ok(found)
}

/// Refuses (as a defect) the first of `patches` (name, commit) that changes a mode or adds
/// anything but a regular file.
pub(crate) fn check(repo: &Repository, patches: &[(String, Oid)]) -> Result<()> {
    refuse_first(patches, |name, commit| {
        let found = listed(&found_in(repo, commit)?);
        Ok((!found.is_empty())
            .then(|| format!("{name} {found}: a series holds regular files and keeps their modes")))
    })
}
