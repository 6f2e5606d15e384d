//! One patch as a mail, in `git format-patch` form: parsed into author, date, message and
//! diff, applied exactly to a tree, and written back byte for byte as git would.

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{DiffOptions, Oid, Repository, Signature, Time};

use super::scope::file_path;
use super::{diffstat, mail_date, TRAILER};

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
    /// Parses a patch file; every failure is a [`super::SeriesDefect`] naming what is wrong.
    pub fn parse(text: &str) -> Result<PatchMail> {
        PatchMail::parse_inner(text).map_err(|e| super::defect(format!("{e:#}")))
    }

    fn parse_inner(text: &str) -> Result<PatchMail> {
        if text.trim().is_empty() {
            bail!("the patch file is empty");
        }
        if let Some(at) = text.find('\r') {
            let line = text[..at].matches('\n').count() + 1;
            let every = text.split_inclusive('\n').all(|l| l.ends_with("\r\n"));
            bail!(
                "line {line} ends in a carriage return ({}CRLF line endings, as Windows editors and some mailers write): convert the file with `sed -i 's/\\r$//'` or dos2unix",
                if every { "the file has " } else { "" }
            );
        }
        let Some(text) = text.strip_suffix(TRAILER) else {
            if !text.ends_with('\n') {
                bail!("the patch's last line has no newline: was it cut short, or saved by an editor that drops it?");
            }
            bail!(
                "the patch does not end with the trailer {TRAILER:?} (git format-patch writes `-- ` and a version there; `series import` accepts that): was it edited by hand or cut short?"
            );
        };
        let (headers, rest) = text
            .split_once("\n\n")
            .context("no blank line after the mail headers")?;
        let mut lines = headers.lines();
        if !lines.next().is_some_and(|l| l.starts_with("From ")) {
            bail!("the first line is not `From <commit> Mon Sep 17 00:00:00 2001`");
        }
        // A header folded over several lines (git folds a long encoded name) is one header.
        let mut unfolded: Vec<String> = Vec::new();
        for line in lines {
            match unfolded.last_mut() {
                Some(last) if line.starts_with([' ', '\t']) => last.push_str(line),
                _ => unfolded.push(line.to_string()),
            }
        }
        let (mut from, mut date, mut subject) = (None, None, None);
        for line in &unfolded {
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
            .and_then(|f| f.rsplit_once(" <"))
            .context("From: is not `Name <email>`")?;
        let author_name = read_header_name(author_name)?;
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
    pub(crate) fn message(&self) -> String {
        if self.body.is_empty() {
            format!("{}\n", self.subject)
        } else {
            format!("{}\n\n{}", self.subject, self.body)
        }
    }

    pub(crate) fn signature(&self) -> Result<Signature<'static>> {
        Ok(Signature::new(
            &self.author_name,
            &self.author_email,
            &self.time,
        )?)
    }

    /// Applies the diff exactly to `parent`'s tree and commits it (committer = author).
    ///
    /// A patch that does not apply is a [`super::SeriesDefect`] naming the file and hunk; a
    /// failure to read or write the store is an error of its own, never "does not apply".
    pub(crate) fn commit_on(&self, repo: &Repository, parent: &git2::Commit<'_>) -> Result<Oid> {
        let tree = parent.tree().context("cannot read the parent's tree")?;
        check_preimages(&tree, &self.diff).map_err(|e| super::defect(format!("{e:#}")))?;
        let (diff_text, empty_files) = split_empty_new_files(&self.diff);
        let mut new_tree = tree.clone();
        if !diff_text.is_empty() {
            let diff = git2::Diff::from_buffer(diff_text.as_bytes())
                .map_err(|e| super::defect(format!("cannot parse the diff: {}", e.message())))?;
            let mut index = match repo.apply_to_tree(&tree, &diff, None) {
                Ok(index) => index,
                Err(e) if is_content_error(&e) => {
                    return Err(super::defect(failed_hunk(repo, &tree, &diff_text, &e)))
                }
                Err(e) => return Err(e).context("cannot apply the diff"),
            };
            let written = index
                .write_tree_to(repo)
                .context("cannot write the patched tree")?;
            new_tree = repo
                .find_tree(written)
                .context("a tree just written is missing")?;
        }
        if !empty_files.is_empty() {
            let empty = repo.blob(b"").context("cannot write an empty blob")?;
            let mut update = git2::build::TreeUpdateBuilder::new();
            for (path, mode) in &empty_files {
                update.upsert(path.as_str(), empty, *mode);
            }
            let written = update
                .create_updated(repo, &new_tree)
                .context("cannot write the patched tree")?;
            new_tree = repo
                .find_tree(written)
                .context("a tree just written is missing")?;
        }
        let sig = self.signature()?;
        repo.commit(None, &sig, &sig, &self.message(), &new_tree, &[parent])
            .context("cannot write the commit")
    }
}

/// Whether libgit2 failed on the patch's content (a hunk that does not match, a malformed
/// diff), as opposed to reading or writing objects.
fn is_content_error(e: &git2::Error) -> bool {
    e.class() == git2::ErrorClass::Patch || e.message().contains("did not apply")
}

/// Which file's hunk failed, and where in the diff: libgit2 says only "hunk at line N did not
/// apply", so each file's part of the diff is applied alone to find the one that fails.
fn failed_hunk(repo: &Repository, tree: &git2::Tree<'_>, diff: &str, err: &git2::Error) -> String {
    for section in diff_sections(diff) {
        let Ok(one) = git2::Diff::from_buffer(section.as_bytes()) else {
            continue;
        };
        let Err(e) = repo.apply_to_tree(tree, &one, None) else {
            continue;
        };
        let file = section
            .lines()
            .next()
            .and_then(|h| h.strip_prefix("diff --git a/"))
            .and_then(|r| r.split_once(" b/"))
            .map_or("?", |(a, _)| a);
        // "hunk at line N": N is the hunk's start in the new file, as its header says.
        let at = e
            .message()
            .split_whitespace()
            .find_map(|w| w.parse::<usize>().ok());
        let header = at.and_then(|n| {
            section.lines().find(|l| {
                l.starts_with("@@ ")
                    && l.split_whitespace()
                        .nth(2)
                        .and_then(|new| new.trim_start_matches('+').split(',').next())
                        .and_then(|start| start.parse::<usize>().ok())
                        == Some(n)
            })
        });
        return match header {
            Some(text) => format!("{file}: the hunk `{text}` does not match the release's {file}"),
            None => format!("{file}: {}", e.message()),
        };
    }
    format!("hunks do not apply: {}", err.message())
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
pub(crate) fn file_stats(diff: &git2::Diff<'_>) -> Result<Vec<diffstat::FileStat>> {
    let mut stats = Vec::new();
    for idx in 0..diff.deltas().len() {
        let patch = git2::Patch::from_diff(diff, idx)?.context("empty patch")?;
        let (_, insertions, deletions) = patch.line_stats()?;
        let delta = patch.delta();
        let (old, new) = (delta.old_file(), delta.new_file());
        let summary = match delta.status() {
            git2::Delta::Added => Some(format!(
                "create mode {:o} {}",
                u32::from(new.mode()),
                file_path(&new)
            )),
            git2::Delta::Deleted => Some(format!(
                "delete mode {:o} {}",
                u32::from(old.mode()),
                file_path(&old)
            )),
            _ if old.mode() != new.mode() => Some(format!(
                "mode change {:o} => {:o} {}",
                u32::from(old.mode()),
                u32::from(new.mode()),
                file_path(&new)
            )),
            _ => None,
        };
        let path = if delta.status() == git2::Delta::Deleted {
            file_path(&old)
        } else {
            file_path(&new)
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
pub(crate) fn format_patch(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    n: usize,
    total: usize,
) -> Result<String> {
    format_patch_tagged(repo, commit, &format!("PATCH {n}/{total}"))
}

/// The same, with the subject's tag as given (`PATCH v2 1/3`).
pub(crate) fn format_patch_tagged(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    tag: &str,
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
    if !subject.is_ascii() {
        bail!("commit {id}: the subject must be ASCII (a subject is not RFC 2047-encoded here)");
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
        "From {id} Mon Sep 17 00:00:00 2001\nFrom: {} <{email}>\nDate: {}\nSubject: [{tag}] {subject}\n{}\n{body}---\n{}\n",
        header_name(name),
        mail_date::format(author.when()),
        content_headers(message),
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

/// A name as `git format-patch` writes it in `From:` (after the six characters `From: `):
/// as it is when it is plain ASCII; in double quotes when it holds one of RFC 822's special
/// characters; RFC 2047-encoded (`=?UTF-8?q?...?=`, a space as `=20`) when it holds a
/// character outside ASCII or `=?`, in encoded words folded so that no line passes 76
/// characters, a character never split.
pub(crate) fn header_name(name: &str) -> String {
    const PREFIX: usize = "From: ".len();
    const OPEN: &str = "=?UTF-8?q?";
    const MAX_LINE: usize = 76;
    if !name.is_ascii() || name.contains("=?") {
        let mut out = String::from(OPEN);
        let mut line = PREFIX + OPEN.len();
        for c in name.chars() {
            // RFC 2047, section 5 (3): in a phrase, only letters, digits and `!*+-/` stand
            // for themselves.
            let plain = c.is_ascii_alphanumeric() || "!*+-/".contains(c);
            let encoded = if plain {
                c.to_string()
            } else {
                let mut bytes = [0; 4];
                c.encode_utf8(&mut bytes)
                    .bytes()
                    .map(|b| format!("={b:02X}"))
                    .collect()
            };
            if line + encoded.len() + 2 > MAX_LINE {
                out.push_str("?=\n ");
                out.push_str(OPEN);
                line = 1 + OPEN.len();
            }
            line += encoded.len();
            out.push_str(&encoded);
        }
        out.push_str("?=");
        out
    } else if name.contains([
        '(', ')', '<', '>', '[', ']', ':', ';', '@', ',', '.', '"', '\\',
    ]) {
        let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
        format!("\"{escaped}\"")
    } else {
        name.to_string()
    }
}

/// A `From:` name as a mail has it, back to the name: [`header_name`] undone (RFC 2047
/// encoded words in UTF-8, `Q` encoding, the blanks between two of them dropped; a quoted
/// string unquoted).
fn read_header_name(text: &str) -> Result<String> {
    if let Some(quoted) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        let mut name = String::new();
        let mut chars = quoted.chars();
        while let Some(c) = chars.next() {
            name.push(if c == '\\' {
                chars.next().unwrap_or(c)
            } else {
                c
            });
        }
        return Ok(name);
    }
    if !text.contains("=?") {
        return Ok(text.to_string());
    }
    let mut bytes = Vec::new();
    let mut pending_blank = String::new();
    let mut after_word = false;
    for token in text.split_inclusive([' ', '\t']) {
        let word = token.trim_end_matches([' ', '\t']);
        let blank = &token[word.len()..];
        match word.strip_prefix("=?").and_then(|w| w.strip_suffix("?=")) {
            Some(encoded) => {
                let mut parts = encoded.splitn(3, '?');
                let (charset, encoding, data) = (
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                );
                if !charset.eq_ignore_ascii_case("utf-8") || !encoding.eq_ignore_ascii_case("q") {
                    bail!("From: has an encoded word in {charset}/{encoding}; only UTF-8 in Q encoding (as git format-patch writes it) is read");
                }
                // RFC 2047, 6.2: the blanks between two encoded words are not part of the name.
                if !after_word {
                    bytes.extend_from_slice(pending_blank.as_bytes());
                }
                let data = data.as_bytes();
                let mut i = 0;
                while i < data.len() {
                    match data[i] {
                        b'=' => {
                            let hex = std::str::from_utf8(data.get(i + 1..i + 3).unwrap_or(b""))
                                .ok()
                                .and_then(|h| u8::from_str_radix(h, 16).ok())
                                .context("From: has a malformed `=XX` in an encoded word")?;
                            bytes.push(hex);
                            i += 3;
                        }
                        b'_' => {
                            bytes.push(b' ');
                            i += 1;
                        }
                        b => {
                            bytes.push(b);
                            i += 1;
                        }
                    }
                }
                after_word = true;
            }
            None => {
                bytes.extend_from_slice(pending_blank.as_bytes());
                bytes.extend_from_slice(word.as_bytes());
                after_word = false;
            }
        }
        pending_blank = blank.to_string();
    }
    String::from_utf8(bytes).context("From: decodes to a name that is not UTF-8")
}

/// The headers `git format-patch` adds after `Subject:` when the message (subject or body)
/// is not ASCII: it is sent as UTF-8, unencoded.
pub(crate) fn content_headers(message: &str) -> &'static str {
    if message.is_ascii() {
        ""
    } else {
        "MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n"
    }
}

/// `(subject, body)` as format-patch shows them; the body is empty or ends in `\n`.
pub(crate) fn split_message(message: &str) -> (&str, String) {
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
pub(crate) fn slug(subject: &str) -> String {
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

    /// Each form `git format-patch` (2.47) wrote for these names.
    #[test]
    fn names_take_the_form_git_gives_them_in_from() {
        assert_eq!(header_name("Ada Lovelace"), "Ada Lovelace");
        assert_eq!(header_name("J. Random Hacker"), "\"J. Random Hacker\"");
        assert_eq!(
            header_name("A. \"Q\" Person (x)"),
            "\"A. \\\"Q\\\" Person (x)\""
        );
        assert_eq!(
            header_name("José Müller"),
            "=?UTF-8?q?Jos=C3=A9=20M=C3=BCller?="
        );
        assert_eq!(
            header_name("Ángel Ñúñez-Özdemir de la Peña y Castañeda Ü"),
            "=?UTF-8?q?=C3=81ngel=20=C3=91=C3=BA=C3=B1ez-=C3=96zdemir=20de=20la?=\n =?UTF-8?q?=20Pe=C3=B1a=20y=20Casta=C3=B1eda=20=C3=9C?="
        );
    }

    /// What `format_patch` writes, `parse` reads back: the author of a mail is the author of
    /// the commit it came from, whatever the name.
    #[test]
    fn a_mail_s_author_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path()).unwrap();
        let tree = {
            let mut builder = repo.treebuilder(None).unwrap();
            builder
                .insert("a", repo.blob(b"a\n").unwrap(), 0o100644)
                .unwrap();
            builder.write().unwrap()
        };
        let empty = repo.treebuilder(None).unwrap().write().unwrap();
        for name in [
            "Ada Lovelace",
            "José Müller",
            "Ángel Ñúñez-Özdemir de la Peña y Castañeda Ü",
            "J. Random Hacker",
            "A. \"Q\" Person (x)",
            "a=?b",
        ] {
            let sig = Signature::new(name, "a@gnu.org", &Time::new(1_764_000_000, 0)).unwrap();
            let base = repo
                .commit(
                    None,
                    &sig,
                    &sig,
                    "base\n",
                    &repo.find_tree(empty).unwrap(),
                    &[],
                )
                .unwrap();
            let base = repo.find_commit(base).unwrap();
            let id = repo
                .commit(
                    None,
                    &sig,
                    &sig,
                    &format!("s: add a\n\nSigned-off-by: {name} <a@gnu.org>\n"),
                    &repo.find_tree(tree).unwrap(),
                    &[&base],
                )
                .unwrap();
            let text = format_patch(&repo, &repo.find_commit(id).unwrap(), 1, 1).unwrap();
            let mail = PatchMail::parse(&text).unwrap();
            assert_eq!(
                (mail.author_name.as_str(), mail.author_email.as_str()),
                (name, "a@gnu.org"),
                "{text}"
            );
        }
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
