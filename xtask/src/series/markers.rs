//! Conflict markers: what a merge leaves in a file, and what no resolution, patch or recorded
//! resolution may carry.
//!
//! A marker line is seven `<`, `|`, `=` or `>` and nothing more, or followed by whitespace
//! (and a label): git writes `<<<<<<< ours`, `||||||| base`, `=======` and `>>>>>>> theirs`,
//! and a hand-edited file may keep any of them bare. A longer run (`==========` under a
//! heading) is text. No supported glibc release has a marker line in any file, so the scan
//! cannot refuse upstream's text.

use std::path::Path;

use anyhow::{Context, Result};
use git2::{Delta, Oid, Repository};

use super::refuse_first;

/// Whether `line` (without its newline) is a conflict marker line.
pub(crate) fn is_marker_line(line: &[u8]) -> bool {
    let Some(&first) = line.first() else {
        return false;
    };
    matches!(first, b'<' | b'|' | b'=' | b'>')
        && line.len() >= 7
        && line[..7].iter().all(|b| *b == first)
        && line.get(7).is_none_or(|b| b.is_ascii_whitespace())
}

/// The 1-based numbers of `bytes`' marker lines.
pub(crate) fn marker_lines(bytes: &[u8]) -> Vec<usize> {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, line)| is_marker_line(line))
        .map(|(n, _)| n + 1)
        .collect()
}

/// Whether a file holds conflict markers.
pub(crate) fn has_markers(bytes: &[u8]) -> bool {
    bytes.split(|b| *b == b'\n').any(is_marker_line)
}

/// The marker lines `commit` adds, one `path line N: `text`` each: those of a file it adds
/// or changes that its parent's version does not have as many of.
pub(crate) fn added_by(repo: &Repository, commit: Oid) -> Result<Vec<String>> {
    let diff = super::scope::commit_diff(repo, commit)?;
    let lines_of = |id: Oid| -> Result<(Vec<usize>, Vec<u8>)> {
        if id.is_zero() {
            return Ok((Vec::new(), Vec::new()));
        }
        let blob = repo
            .find_blob(id)
            .with_context(|| format!("blob {id} is missing from the store"))?;
        Ok((marker_lines(blob.content()), blob.content().to_vec()))
    };
    let mut found = Vec::new();
    for delta in diff.deltas() {
        if delta.status() == Delta::Deleted {
            continue;
        }
        let (new, text) = lines_of(delta.new_file().id())?;
        let (old, _) = lines_of(delta.old_file().id())?;
        if new.len() <= old.len() {
            continue;
        }
        let path = delta.new_file().path().map(Path::display);
        let line = text.split(|b| *b == b'\n').nth(new[0] - 1).unwrap_or(b"");
        found.push(format!(
            "{} line {}: `{}`",
            path.map_or("?".to_string(), |p| p.to_string()),
            new[0],
            String::from_utf8_lossy(line).trim_end()
        ));
    }
    Ok(found)
}

/// Refuses (as a defect) the first of `patches` (name, commit) that adds a marker line.
pub(crate) fn check(repo: &Repository, patches: &[(String, Oid)]) -> Result<()> {
    refuse_first(patches, |name, commit| {
        let found = crate::util::text::listed(&added_by(repo, commit)?);
        Ok((!found.is_empty())
            .then(|| format!("{name} adds conflict markers, left from a merge: {found}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_seven_signs_alone_or_before_whitespace() {
        for line in [
            "=======",
            "<<<<<<<",
            ">>>>>>>",
            "|||||||",
            "<<<<<<< ours",
            ">>>>>>> 0001-x.patch",
            "=======\r",
            "======= ",
            "<<<<<<<\tx",
        ] {
            assert!(is_marker_line(line.as_bytes()), "{line:?}");
        }
        for line in [
            "",
            "======",
            "========",
            "==========",
            "<<<<<<<<",
            "<<<<<<<x",
            "a=======",
        ] {
            assert!(!is_marker_line(line.as_bytes()), "{line:?}");
        }
        assert_eq!(marker_lines(b"a\n=======\nb\n>>>>>>>\n"), vec![2, 4]);
    }
}
