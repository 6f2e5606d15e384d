//! A patch series: `patches/<X.Y>/series` plus `NNNN-<subject>.patch` files in `git
//! format-patch` form, consumable by `git am`, quilt and `patch -p1`.
//!
//! The files are generated, and byte-identical on every machine: commit ids are
//! deterministic (release commits are, and patch commits take author, committer and date from
//! the patch header), and the trailer is fixed instead of naming a git or libgit2 version.

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{DiffOptions, ObjectType, Oid, Repository, Signature, Time};

use crate::diffstat;
use crate::mail_date;
use crate::release::Release;

/// The series file's name, as quilt expects it.
pub const SERIES_FILE: &str = "series";
/// Ends every patch: the mail signature `git format-patch` would fill with its version.
pub const TRAILER: &str = "-- \nld-fallback\n";
const BASE_PREFIX: &str = "# base: ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// File name, `NNNN-<subject>.patch`.
    pub name: String,
    /// The whole file.
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Series {
    /// The release the series applies to.
    pub base: Release,
    /// That release's tree as recorded in the series file.
    pub base_tree: Oid,
    pub patches: Vec<Patch>,
    /// The series file as read (or as generated).
    pub series_text: String,
}

impl Series {
    /// Reads `dir/series` and the patches it lists.
    pub fn load(dir: &Path) -> Result<Series> {
        let path = dir.join(SERIES_FILE);
        let series_text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read series file {}", path.display()))?;
        let mut base = None;
        let mut patches = Vec::new();
        for line in series_text.lines() {
            if let Some(rest) = line.strip_prefix(BASE_PREFIX) {
                let mut words = rest.split_whitespace();
                let (Some(tag), Some(tree)) = (words.next(), words.next()) else {
                    bail!(
                        "{}: malformed base line `{line}`; expected `# base: glibc-X.Y <tree id>`",
                        path.display()
                    );
                };
                let release = Release::parse(tag)
                    .with_context(|| format!("{}: bad base release", path.display()))?;
                let tree = Oid::from_str(tree)
                    .with_context(|| format!("{}: bad base tree id `{tree}`", path.display()))?;
                base = Some((release, tree));
                continue;
            }
            let Some(name) = line
                .split_whitespace()
                .next()
                .filter(|w| !w.starts_with('#'))
            else {
                continue;
            };
            let patch = dir.join(name);
            let text = std::fs::read_to_string(&patch).with_context(|| {
                format!(
                    "cannot read patch {} listed in {}",
                    patch.display(),
                    path.display()
                )
            })?;
            patches.push(Patch {
                name: name.to_string(),
                text,
            });
        }
        let Some((base, base_tree)) = base else {
            bail!(
                "{} has no `# base: glibc-X.Y <tree id>` line: which release does it apply to?",
                path.display()
            );
        };
        Ok(Series {
            base,
            base_tree,
            patches,
            series_text,
        })
    }

    /// A stable hash of the series file and every patch text (for build cache keys).
    pub fn content_id(&self) -> String {
        let mut canonical = Vec::new();
        for (name, text) in std::iter::once((SERIES_FILE, self.series_text.as_str())).chain(
            self.patches
                .iter()
                .map(|p| (p.name.as_str(), p.text.as_str())),
        ) {
            canonical.extend_from_slice(format!("{name}\0{}\0", text.len()).as_bytes());
            canonical.extend_from_slice(text.as_bytes());
        }
        Oid::hash_object(ObjectType::Blob, &canonical)
            .expect("hashing in memory cannot fail")
            .to_string()
    }

    /// Commits every patch, in order, on `base_commit` (the series' release in `repo`).
    /// A patch must apply exactly: its `index` lines must name the blobs it meets, and its
    /// hunks must match. Returns the commits, oldest first.
    pub fn commit_on(&self, repo: &Repository, base_commit: Oid) -> Result<Vec<Oid>> {
        let mut head = repo
            .find_commit(base_commit)
            .context("base commit missing from the store")?;
        let mut commits = Vec::new();
        for patch in &self.patches {
            let mail = PatchMail::parse(&patch.text)
                .with_context(|| format!("cannot parse {}", patch.name))?;
            let oid = mail
                .commit_on(repo, &head)
                .with_context(|| format!("{} does not apply to glibc {}", patch.name, self.base))?;
            head = repo.find_commit(oid)?;
            commits.push(oid);
        }
        Ok(commits)
    }

    /// The series for `commits` (each the child of the previous, the first a child of
    /// `base`'s release commit).
    pub fn from_commits(repo: &Repository, base: Release, commits: &[Oid]) -> Result<Series> {
        let Some(first) = commits.first() else {
            bail!("cannot write an empty series for glibc {base}");
        };
        let base_tree = repo.find_commit(*first)?.parent(0)?.tree_id();
        let mut patches = Vec::new();
        let mut listing = String::new();
        for (i, commit) in commits.iter().enumerate() {
            let commit = repo.find_commit(*commit)?;
            let text = format_patch(repo, &commit, i + 1, commits.len())?;
            let name = format!(
                "{:04}-{}.patch",
                i + 1,
                slug(commit.summary().unwrap_or("patch"))
            );
            listing.push_str(&name);
            listing.push('\n');
            patches.push(Patch { name, text });
        }
        let series_text = format!(
            "{BASE_PREFIX}{} {base_tree}\n# LD_FALLBACK_PATH for glibc {base}; apply in order with git am, quilt, or patch -p1.\n# Generated by `cargo xtask rebase-glibc`; edit the commits, not these files.\n{listing}",
            base.tag()
        );
        Ok(Series {
            base,
            base_tree,
            patches,
            series_text,
        })
    }

    /// Writes the series into `dir` (replacing it) through a temporary sibling directory,
    /// so that `dir` never holds half a series.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let parent = dir.parent().context("series dir has no parent")?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let staging = crate::staging::tempdir_in(parent, "series")?;
        std::fs::write(staging.path().join(SERIES_FILE), &self.series_text)
            .context("cannot write series")?;
        for patch in &self.patches {
            std::fs::write(staging.path().join(&patch.name), &patch.text)
                .with_context(|| format!("cannot write {}", patch.name))?;
        }
        let staged = staging.keep();
        let old = parent.join(format!(
            ".old-{}",
            dir.file_name().unwrap().to_string_lossy()
        ));
        let _ = std::fs::remove_dir_all(&old);
        if dir.exists() {
            std::fs::rename(dir, &old)
                .with_context(|| format!("cannot move {} aside", dir.display()))?;
        }
        std::fs::rename(&staged, dir)
            .with_context(|| format!("cannot move the new series to {}", dir.display()))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    }

    /// Files of `dir` that differ from this series (missing, extra, or other bytes).
    pub fn drift_against(&self, dir: &Path) -> Result<Vec<String>> {
        let mut expected: Vec<(&str, &str)> = vec![(SERIES_FILE, self.series_text.as_str())];
        expected.extend(
            self.patches
                .iter()
                .map(|p| (p.name.as_str(), p.text.as_str())),
        );
        let mut drift = Vec::new();
        for (name, text) in &expected {
            match std::fs::read(dir.join(name)) {
                Ok(bytes) if bytes == text.as_bytes() => {}
                Ok(_) => drift.push(format!("{name} differs")),
                Err(_) => drift.push(format!("{name} is missing")),
            }
        }
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if !expected.iter().any(|(n, _)| *n == name) {
                drift.push(format!("{name} is not part of the series"));
            }
        }
        Ok(drift)
    }
}

/// One patch file, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchMail {
    pub author_name: String,
    pub author_email: String,
    pub time: Time,
    pub subject: String,
    /// The message after the subject, each line ending in `\n`; empty if none.
    pub body: String,
    /// From the first `diff --git` line to the trailer.
    pub diff: String,
}

impl PatchMail {
    pub fn parse(text: &str) -> Result<PatchMail> {
        let Some(text) = text.strip_suffix(TRAILER) else {
            bail!("the patch does not end with the trailer {TRAILER:?}: was it edited by hand?");
        };
        let (headers, rest) = text
            .split_once("\n\n")
            .context("no blank line after the mail headers")?;
        let mut lines = headers.lines();
        if !lines.next().is_some_and(|l| l.starts_with("From ")) {
            bail!("the first line is not `From <commit> Mon Sep 17 00:00:00 2001`");
        }
        let (mut from, mut date, mut subject) = (None, None, None);
        for line in lines {
            if let Some(v) = line.strip_prefix("From: ") {
                from = Some(v);
            } else if let Some(v) = line.strip_prefix("Date: ") {
                date = Some(v);
            } else if let Some(v) = line.strip_prefix("Subject: ") {
                subject = Some(v);
            }
        }
        let from = from.context("no From: header")?;
        let (author_name, author_email) = from
            .strip_suffix('>')
            .and_then(|f| f.split_once(" <"))
            .context("From: is not `Name <email>`")?;
        let time = mail_date::parse(date.context("no Date: header")?)?;
        let subject = subject.context("no Subject: header")?;
        let subject = match subject.strip_prefix("[PATCH") {
            Some(tagged) => {
                tagged
                    .split_once("] ")
                    .context("unterminated [PATCH ...] tag")?
                    .1
            }
            None => subject,
        };
        let (body, after) = if let Some(after) = rest.strip_prefix("---\n") {
            ("", after)
        } else {
            rest.split_once(
                "
---
",
            )
            .context("no `---` line before the diffstat")?
        };
        let body = if body.is_empty() {
            String::new()
        } else {
            format!("{body}\n")
        };
        let diff_start = if after.starts_with("diff --git ") {
            0
        } else {
            after
                .find("\ndiff --git ")
                .context("no `diff --git` in the patch")?
                + 1
        };
        let diff = &after[diff_start..];
        if diff.contains("\nGIT binary patch\n") || diff.contains("\nBinary files ") {
            bail!(
                "the patch has a binary hunk; the series must stay text-only (quilt and patch -p1)"
            );
        }
        Ok(PatchMail {
            author_name: author_name.to_string(),
            author_email: author_email.to_string(),
            time,
            subject: subject.to_string(),
            body,
            diff: diff.to_string(),
        })
    }

    /// The commit message: the subject, then the body after a blank line.
    pub fn message(&self) -> String {
        if self.body.is_empty() {
            format!("{}\n", self.subject)
        } else {
            format!("{}\n\n{}", self.subject, self.body)
        }
    }

    pub fn signature(&self) -> Result<Signature<'static>> {
        Ok(Signature::new(
            &self.author_name,
            &self.author_email,
            &self.time,
        )?)
    }

    /// Applies the diff exactly to `parent`'s tree and commits it (committer = author).
    pub fn commit_on(&self, repo: &Repository, parent: &git2::Commit<'_>) -> Result<Oid> {
        let tree = parent.tree()?;
        check_preimages(&tree, &self.diff)?;
        let (diff_text, empty_files) = split_empty_new_files(&self.diff);
        let mut new_tree = tree.clone();
        if !diff_text.is_empty() {
            let diff =
                git2::Diff::from_buffer(diff_text.as_bytes()).context("cannot parse the diff")?;
            let mut index = repo
                .apply_to_tree(&tree, &diff, None)
                .context("hunks do not apply")?;
            new_tree = repo.find_tree(index.write_tree_to(repo)?)?;
        }
        if !empty_files.is_empty() {
            let empty = repo.blob(b"")?;
            let mut update = git2::build::TreeUpdateBuilder::new();
            for (path, mode) in &empty_files {
                update.upsert(path.as_str(), empty, *mode);
            }
            new_tree = repo.find_tree(update.create_updated(repo, &new_tree)?)?;
        }
        let sig = self.signature()?;
        Ok(repo.commit(None, &sig, &sig, &self.message(), &new_tree, &[parent])?)
    }
}

/// Takes the creations of empty files out of a diff.
///
/// `git format-patch` writes such a file as a header alone (`new file mode`, `index`, no
/// hunk), which libgit2's patch parser rejects ("invalid patch header"); glibc's tests need
/// them (`tst-*.root/postclean.req` markers). Returns the rest of the diff and each empty
/// file's path and mode.
fn split_empty_new_files(diff: &str) -> (String, Vec<(String, git2::FileMode)>) {
    let mut rest = String::new();
    let mut empty = Vec::new();
    for section in diff_sections(diff) {
        let mut lines = section.lines();
        let header = lines.next().unwrap_or("");
        let others: Vec<&str> = lines.collect();
        let mode = match others.as_slice() {
            [new_mode, index]
                if index.starts_with("index 0000000") && index.contains("..e69de29") =>
            {
                match new_mode.strip_prefix("new file mode ") {
                    Some("100755") => Some(git2::FileMode::BlobExecutable),
                    Some("100644") => Some(git2::FileMode::Blob),
                    _ => None,
                }
            }
            _ => None,
        };
        let path = header
            .strip_prefix("diff --git a/")
            .and_then(|r| r.split_once(" b/"))
            .map(|(a, _)| a.to_string());
        match (mode, path) {
            (Some(mode), Some(path)) => empty.push((path, mode)),
            _ => rest.push_str(section),
        }
    }
    (rest, empty)
}

/// Splits a diff at its `diff --git` lines; each section keeps its trailing newline.
fn diff_sections(diff: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = diff
        .match_indices("diff --git ")
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || diff.as_bytes()[i - 1] == b'\n')
        .collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    starts.push(diff.len());
    starts
        .windows(2)
        .map(|w| &diff[w[0]..w[1]])
        .filter(|s| !s.is_empty())
        .collect()
}

/// A patch applies exactly only to the blobs its `index` lines name.
fn check_preimages(tree: &git2::Tree<'_>, diff: &str) -> Result<()> {
    let mut path: Option<&str> = None;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            path = rest.split_once(" b/").map(|(a, _)| a);
        } else if let (Some(rest), Some(p)) = (line.strip_prefix("index "), path) {
            let old = rest.split("..").next().unwrap_or("");
            let current = tree.get_path(Path::new(p)).ok().map(|e| e.id().to_string());
            let new_file = old.bytes().all(|b| b == b'0');
            match current {
                None if new_file => {}
                Some(id) if !new_file && id.starts_with(old) => {}
                None => bail!("{p} does not exist in the tree"),
                Some(id) if new_file => bail!("{p} should be new but exists (blob {id})"),
                Some(id) => bail!("{p} is blob {id}, but the patch was made against {old}"),
            }
            path = None;
        }
    }
    Ok(())
}

/// Per-file line counts and `--summary` lines of `diff`, in diff order.
fn file_stats(diff: &git2::Diff<'_>) -> Result<Vec<diffstat::FileStat>> {
    let mut stats = Vec::new();
    for idx in 0..diff.deltas().len() {
        let patch = git2::Patch::from_diff(diff, idx)?.context("empty patch")?;
        let (_, insertions, deletions) = patch.line_stats()?;
        let delta = patch.delta();
        let path = |f: &git2::DiffFile<'_>| {
            f.path()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let (old, new) = (delta.old_file(), delta.new_file());
        let summary = match delta.status() {
            git2::Delta::Added => Some(format!(
                "create mode {:o} {}",
                u32::from(new.mode()),
                path(&new)
            )),
            git2::Delta::Deleted => Some(format!(
                "delete mode {:o} {}",
                u32::from(old.mode()),
                path(&old)
            )),
            _ if old.mode() != new.mode() => Some(format!(
                "mode change {:o} => {:o} {}",
                u32::from(old.mode()),
                u32::from(new.mode()),
                path(&new)
            )),
            _ => None,
        };
        let path = if delta.status() == git2::Delta::Deleted {
            path(&old)
        } else {
            path(&new)
        };
        stats.push(diffstat::FileStat {
            path,
            insertions,
            deletions,
            summary,
        });
    }
    Ok(stats)
}

/// `git format-patch -n` output for `commit`, with the fixed [`TRAILER`].
pub fn format_patch(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    n: usize,
    total: usize,
) -> Result<String> {
    let id = commit.id();
    let author = commit.author();
    let (Some(name), Some(email)) = (author.name(), author.email()) else {
        bail!("commit {id}: author is not UTF-8");
    };
    let message = commit
        .message()
        .with_context(|| format!("commit {id}: message is not UTF-8"))?;
    let (subject, body) = split_message(message);
    if !subject.is_ascii() || !name.is_ascii() {
        bail!("commit {id}: subject and author name must be ASCII (no RFC 2047 encoding here)");
    }
    if body.lines().any(|l| l == "---") {
        bail!("commit {id}: a `---` line in the message would end it early for git am");
    }
    let parent = commit
        .parent(0)
        .with_context(|| format!("commit {id} has no parent"))?;
    let mut opts = DiffOptions::new();
    opts.context_lines(3).id_abbrev(12);
    let diff = repo.diff_tree_to_tree(
        Some(&parent.tree()?),
        Some(&commit.tree()?),
        Some(&mut opts),
    )?;
    let stat = diffstat::render(&file_stats(&diff)?, 72);
    let mut text = format!(
        "From {id} Mon Sep 17 00:00:00 2001\nFrom: {name} <{email}>\nDate: {}\nSubject: [PATCH {n}/{total}] {subject}\n\n{body}---\n{}\n",
        mail_date::format(author.when()),
        stat
    );
    for idx in 0..diff.deltas().len() {
        let mut patch = git2::Patch::from_diff(&diff, idx)?.context("empty patch")?;
        let delta = patch.delta();
        if delta.flags().is_binary() {
            let path = delta
                .new_file()
                .path()
                .unwrap_or(Path::new("?"))
                .display()
                .to_string();
            bail!("commit {id}: {path} is binary; the series must stay text-only (quilt and patch -p1)");
        }
        text.push_str(patch.to_buf()?.as_str().context("diff is not UTF-8")?);
    }
    text.push_str(TRAILER);
    Ok(text)
}

/// `(subject, body)` as format-patch shows them; the body is empty or ends in `\n`.
fn split_message(message: &str) -> (&str, String) {
    let (subject, rest) = message.split_once('\n').unwrap_or((message, ""));
    let rest = rest.trim_start_matches('\n').trim_end();
    let body = if rest.is_empty() {
        String::new()
    } else {
        format!("{rest}\n")
    };
    (subject.trim_end(), body)
}

/// File-name slug of a subject, like git's: runs of other characters become one `-`.
pub fn slug(subject: &str) -> String {
    let mut out = String::new();
    for c in subject.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out = out.trim_start_matches(['-', '.']).to_string();
    out.truncate(52);
    out.trim_end_matches(['-', '.']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_follows_git() {
        assert_eq!(
            slug("elf: Add LD_FALLBACK_PATH (searched last)"),
            "elf-Add-LD_FALLBACK_PATH-searched-last"
        );
        assert_eq!(slug("..x.."), "x");
    }

    #[test]
    fn message_splits_into_subject_and_body() {
        assert_eq!(
            split_message("s\n\nb1\nb2\n\n"),
            ("s", "b1\nb2\n".to_string())
        );
        assert_eq!(split_message("s\n"), ("s", String::new()));
    }
}
