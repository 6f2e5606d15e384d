//! How a support record was made: when, from which commit of this checkout (and which
//! uncommitted changes), by which command. The record (support.rs) holds it and the page
//! (render.rs) states it; both take it from here, which depends on neither.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::series::mail_date;
use model::Release;

/// When, from which commit and by which command the record was last written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Provenance {
    pub written_at: String,
    pub commit: String,
    pub by: WrittenBy,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "kebab-case")]
pub(crate) enum WrittenBy {
    /// `verify --write-support`; with `--cached-only` nothing was built or run.
    Verify { cached_only: bool },
    /// `verify merge --write-support`: cells verified elsewhere (one CI job each).
    Merge,
    /// `update-release X.Y`: that release's cells, the others kept.
    UpdateRelease { release: Release },
    /// `retire-release X.Y`: that release's cells dropped, the others kept. (By version: the
    /// release is no longer one.)
    RetireRelease { version: String },
}

impl Provenance {
    pub(crate) fn now(root: &Path, by: WrittenBy) -> Provenance {
        Provenance {
            written_at: now(),
            commit: project_commit(root),
            by,
        }
    }

    pub(crate) fn cached_only(&self) -> bool {
        self.by == WrittenBy::Verify { cached_only: true }
    }
}

/// `2026-11-30 14:05 UTC`.
pub(crate) fn now() -> String {
    utc_minutes_of(std::time::SystemTime::now())
}

/// `time` as `2026-11-30 14:05 UTC`.
pub(crate) fn utc_minutes_of(time: std::time::SystemTime) -> String {
    let secs = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    mail_date::utc_minutes(secs)
}

/// The checkout's commit; when the tracked files differ from it, `+changes-` and a digest
/// of those changes (the diff of the work tree against the commit), so that a cell proven
/// from uncommitted changes says which.
pub(crate) fn project_commit(root: &Path) -> String {
    let Ok(repo) = crate::util::git::open(root) else {
        return "unknown (not a git checkout)".into();
    };
    let Ok(head) = repo.head().and_then(|h| h.peel_to_commit()) else {
        return "unknown (no commit)".into();
    };
    let id = head.id().to_string()[..12].to_string();
    match changes_digest(&repo, &head) {
        Ok(None) => id,
        Ok(Some(digest)) => format!("{id}{CHANGES}{digest}"),
        Err(err) => format!("{id}+changes (unreadable: {err})"),
    }
}

/// What separates a commit from the digest of the changes on top of it.
pub(crate) const CHANGES: &str = "+changes-";

/// A digest of the tracked files' differences from `head` (index and work tree), or `None`
/// when there are none.
fn changes_digest(
    repo: &git2::Repository,
    head: &git2::Commit,
) -> std::result::Result<Option<String>, git2::Error> {
    let tree = head.tree()?;
    let diff = repo.diff_tree_to_workdir_with_index(Some(&tree), None)?;
    if diff.deltas().len() == 0 {
        return Ok(None);
    }
    let mut hash = sha1_smol::Sha1::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        hash.update(&[line.origin() as u8]);
        hash.update(line.content());
        true
    })?;
    Ok(Some(hash.digest().to_string()[..12].to_string()))
}
