//! What the series may change: `patches/scope`, a list of path globs. Every patch of every
//! series is held to it by `rebase-glibc` (--onto, --continue, --check) and `series import`:
//! a patch that touches another path, or deletes a file without a `delete` line allowing it,
//! is refused. The guard does not trust the code that made the patch: whatever bug or stray
//! file a rebase picks up, 239 deleted glibc files cannot become "ok".
//!
//! Format, one entry per line, `#` comments:
//!
//! ```text
//! elf/**            # may add and change files below elf/
//! NEWS              # may change NEWS
//! delete elf/old.c  # may also delete elf/old.c
//! ```
//!
//! `*` matches within one path component, `**` (a whole component) any number of components,
//! `?` one character. The file lives beside the series it governs (`patches/scope`), so that
//! a new kind of series there (variants, say) is held to the same list; so are the recorded
//! resolutions in `patches/resolutions/` (`rebase-glibc --check` refuses one for a path the
//! list does not allow, and what a replayed one makes is a patch like any other).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git2::{Delta, Oid, Repository};

use super::{defect, refuse_first};
use crate::util::text::listed;

/// The name of the scope file in `patches/`.
pub(crate) const SCOPE_FILE: &str = "scope";

#[derive(Debug, Clone)]
pub(crate) struct Scope {
    /// Where the list was read from, for messages.
    pub path: PathBuf,
    /// Paths a patch may add or change.
    touch: Vec<String>,
    /// Paths a patch may delete.
    delete: Vec<String>,
}

impl Scope {
    /// Reads `<patches_dir>/scope`. Its absence is a defect: a series with no declared scope
    /// could change anything.
    pub(crate) fn load(patches_dir: &Path) -> Result<Scope> {
        let path = patches_dir.join(SCOPE_FILE);
        let text = super::read_own(&path, super::LIST_LIMIT, super::Head::Text).map_err(|e| {
            // Only a scope that is not there declares nothing (a symlink or bad bytes are
            // named as what they are).
            if super::is_defect(&e) && std::fs::symlink_metadata(&path).is_err() {
                e.context(format!(
                    "the series declare no scope: write {} (one path glob per line; docs/maintaining.md, \"Safety\", says more)",
                    path.display()
                ))
            } else {
                e
            }
        })?;
        Scope::parse(&text, &path)
    }

    pub(crate) fn parse(text: &str, path: &Path) -> Result<Scope> {
        let mut scope = Scope {
            path: path.to_path_buf(),
            touch: Vec::new(),
            delete: Vec::new(),
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (None, ..) => {}
                (Some("delete"), Some(glob), None) => scope.delete.push(glob.to_string()),
                (Some(glob), None, None) => scope.touch.push(glob.to_string()),
                _ => {
                    return Err(defect(format!(
                        "{}:{}: `{line}` is neither a path glob nor `delete <glob>`",
                        path.display(),
                        n + 1
                    )))
                }
            }
        }
        Ok(scope)
    }

    /// What `commit` changes outside the scope: paths it may not touch, files it may not
    /// delete. Empty when it stays inside.
    pub(crate) fn violations(&self, repo: &Repository, commit: Oid) -> Result<Violations> {
        let diff = commit_diff(repo, commit)?;
        let mut found = Violations::default();
        for delta in diff.deltas() {
            if delta.status() == Delta::Deleted {
                let old = file_path(&delta.old_file());
                if !self.delete.iter().any(|g| glob_matches(g, &old)) {
                    found.deleted.push(old);
                }
                continue;
            }
            let new = file_path(&delta.new_file());
            if !self.touch.iter().any(|g| glob_matches(g, &new)) {
                found.outside.push(new);
            }
        }
        Ok(found)
    }

    /// Whether a patch may change `path` (or delete it, when `deleted`).
    pub(crate) fn allows(&self, path: &str, deleted: bool) -> bool {
        let globs = if deleted { &self.delete } else { &self.touch };
        globs.iter().any(|g| glob_matches(g, path))
    }

    /// Refuses (as a defect) the first of `patches` (name, commit) that leaves the scope.
    pub(crate) fn check(&self, repo: &Repository, patches: &[(String, Oid)]) -> Result<()> {
        refuse_first(patches, |name, commit| {
            let found = self.violations(repo, commit)?;
            Ok((!found.is_empty()).then(|| found.describe(name, &self.path)))
        })
    }
}

/// What one patch changes outside the scope.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Violations {
    /// Added or changed paths no glob allows.
    pub outside: Vec<String>,
    /// Deleted paths no `delete` line allows.
    pub deleted: Vec<String>,
}

impl Violations {
    pub(crate) fn is_empty(&self) -> bool {
        self.outside.is_empty() && self.deleted.is_empty()
    }

    fn describe(&self, name: &str, scope: &Path) -> String {
        let scope = scope.display();
        let findings = [
            (
                &self.deleted,
                format!(
                    "deletes {} file(s), which {scope} does not allow",
                    self.deleted.len()
                ),
                "if the patch must delete them, add `delete <path>` lines there",
            ),
            (
                &self.outside,
                format!(
                    "changes {} path(s) outside the scope declared in {scope}",
                    self.outside.len()
                ),
                "if the patch must change them, add them there",
            ),
        ];
        let parts: Vec<String> = findings
            .iter()
            .filter(|(paths, ..)| !paths.is_empty())
            .map(|(paths, what, hint)| format!("{what}: {} ({hint})", listed(paths)))
            .collect();
        format!("{name} {}", parts.join("; and "))
    }
}

/// The path of one side of a diff's delta, as text ("" for none).
pub(crate) fn file_path(file: &git2::DiffFile<'_>) -> String {
    file.path()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What `commit` changes against its parent.
pub(crate) fn commit_diff(repo: &Repository, commit: Oid) -> Result<git2::Diff<'_>> {
    let commit = repo
        .find_commit(commit)
        .with_context(|| format!("commit {commit} of the series is missing from the store"))?;
    let parent = commit
        .parent(0)
        .with_context(|| format!("commit {} has no parent", commit.id()))?;
    repo.diff_tree_to_tree(Some(&parent.tree()?), Some(&commit.tree()?), None)
        .context("cannot diff a commit against its parent")
}

/// Whether `path` (`/`-separated, relative) matches `glob` (see the module docs).
pub(crate) fn glob_matches(glob: &str, path: &str) -> bool {
    let glob: Vec<&str> = glob.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    // `elf/../Makefile` is not below elf/, whatever `elf/**` would say of its components; a
    // path written by hand (a recorded resolution's) may hold such components, git's never.
    if path.iter().any(|c| matches!(*c, "" | "." | "..")) {
        return false;
    }
    match_components(&glob, &path)
}

fn match_components(glob: &[&str], path: &[&str]) -> bool {
    match glob.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| match_components(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((component, path_rest)) => {
                match_component(first.as_bytes(), component.as_bytes())
                    && match_components(rest, path_rest)
            }
            None => false,
        },
    }
}

fn match_component(glob: &[u8], name: &[u8]) -> bool {
    match glob.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| match_component(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && match_component(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && match_component(rest, &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_components() {
        assert!(glob_matches("NEWS", "NEWS"));
        assert!(!glob_matches("NEWS", "NEWS~"));
        assert!(glob_matches("elf/**", "elf/dl-load.c"));
        assert!(glob_matches(
            "elf/**",
            "elf/tst-fallback-path-container.root/postclean.req"
        ));
        assert!(!glob_matches("elf/**", "elfish/x"));
        assert!(glob_matches("elf/*", "elf/rtld.c"));
        assert!(!glob_matches("elf/*", "elf/a/b.c"));
        assert!(glob_matches("elf/tst-*.c", "elf/tst-fallback-path.c"));
        assert!(glob_matches("**/Makefile", "elf/Makefile"));
        assert!(glob_matches("**/Makefile", "Makefile"));
        assert!(glob_matches(
            "sysdeps/generic/ld?odefs.h",
            "sysdeps/generic/ldsodefs.h"
        ));
    }

    #[test]
    fn a_path_that_climbs_out_matches_nothing() {
        for path in [
            "elf/../Makefile",
            "elf/./x.c",
            "elf//x.c",
            "/elf/x.c",
            "elf/",
        ] {
            assert!(!glob_matches("elf/**", path), "{path}");
            assert!(!glob_matches("**", path), "{path}");
        }
    }

    #[test]
    fn the_file_parses_and_refuses_nonsense() {
        let path = Path::new("patches/scope");
        let scope = Scope::parse("# c\nelf/**\n\ndelete elf/old.c # why\n", path).unwrap();
        assert_eq!(scope.touch, ["elf/**"]);
        assert_eq!(scope.delete, ["elf/old.c"]);
        let err = Scope::parse("elf/** NEWS\n", path).unwrap_err().to_string();
        assert!(err.contains("patches/scope:1"), "{err}");
    }

    #[test]
    fn a_refusal_lists_some_paths_and_counts_the_rest() {
        let found = Violations {
            outside: vec!["NEWS~".into()],
            deleted: (0..239).map(|i| format!("f{i}")).collect(),
        };
        let text = found.describe("0001-x.patch", Path::new("patches/scope"));
        assert!(
            text.starts_with(
                "0001-x.patch deletes 239 file(s), which patches/scope does not allow: f0, f1,"
            ),
            "{text}"
        );
        assert!(text.contains("f9 and 229 more"), "{text}");
        assert!(
            text.contains("outside the scope declared in patches/scope: NEWS~"),
            "{text}"
        );
    }
}
