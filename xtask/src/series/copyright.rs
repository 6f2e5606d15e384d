//! The copyright line of the files a series adds. glibc takes contributions under the DCO
//! (a `Signed-off-by`, no copyright assignment to the FSF), and those files then say
//! "Copyright The GNU Toolchain Authors." instead of the FSF line of glibc's template. The
//! carried series says so too, so that there is one form, in `patches/<X.Y>/` and in the mails
//! `format-series` makes of it. Upstream's own files keep theirs: only added files are read.

use anyhow::{Context, Result};
use git2::{Delta, Oid, Repository};

use super::refuse_first;
use super::scope::commit_diff;
use crate::util::text::listed;

/// The line every file the series adds carries.
pub(crate) const DCO_LINE: &str = "Copyright The GNU Toolchain Authors.";

/// Whether `line` is the FSF copyright line of glibc's template (`Copyright (C) 2026 Free
/// Software Foundation, Inc.`, with any years).
fn is_fsf_line(line: &str) -> bool {
    let line = line.trim();
    let line = line.strip_prefix("/*").unwrap_or(line);
    let line = line.strip_suffix("*/").unwrap_or(line);
    line.trim()
        .strip_prefix("Copyright (C) ")
        .and_then(|rest| {
            rest.trim_end()
                .strip_suffix(" Free Software Foundation, Inc.")
        })
        .is_some_and(|years| {
            years
                .chars()
                .all(|c| c.is_ascii_digit() || c == '-' || c == ',')
        })
}

/// The files `commit` adds that carry the FSF line.
pub(crate) fn found_in(repo: &Repository, commit: Oid) -> Result<Vec<String>> {
    let diff = commit_diff(repo, commit)?;
    let mut found = Vec::new();
    for delta in diff.deltas().filter(|d| d.status() == Delta::Added) {
        let path = delta
            .new_file()
            .path()
            .map_or("?".to_string(), |p| p.display().to_string());
        let blob = repo
            .find_blob(delta.new_file().id())
            .with_context(|| format!("the blob of {path} is missing"))?;
        let Ok(text) = std::str::from_utf8(blob.content()) else {
            continue;
        };
        if text.lines().any(is_fsf_line) {
            found.push(path);
        }
    }
    Ok(found)
}

/// Refuses (as a defect) the first of `patches` (name, commit) that adds a file with the FSF
/// line.
pub(crate) fn check(repo: &Repository, patches: &[(String, Oid)]) -> Result<()> {
    refuse_first(patches, |name, commit| {
        let found = found_in(repo, commit)?;
        Ok((!found.is_empty()).then(|| {
            format!(
                "{name} adds {} with the FSF copyright line of glibc's template: the series is contributed under the DCO, so the files it adds say `{DCO_LINE}`",
                listed(&found)
            )
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_template_s_fsf_line_is_one() {
        assert!(is_fsf_line(
            "   Copyright (C) 2026 Free Software Foundation, Inc."
        ));
        assert!(is_fsf_line(
            "/* Copyright (C) 1995-2026 Free Software Foundation, Inc.  */"
        ));
        assert!(!is_fsf_line("   Copyright The GNU Toolchain Authors."));
        assert!(!is_fsf_line(
            "   as published by the Free Software Foundation; either"
        ));
    }
}
