//! A patch series: `patches/<X.Y>/series` plus `NNNN-<subject>.patch` files in `git
//! format-patch` form, consumable by `git am`, quilt and `patch -p1`.
//!
//! The files are generated, and byte-identical on every machine: commit ids are
//! deterministic (release commits are, and patch commits take author, committer and date from
//! the patch header), and the trailer is fixed instead of naming a git or libgit2 version.

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{DiffOptions, DiffStatsFormat, ObjectType, Oid, Repository, Signature, Time};

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
        let time = parse_date(date.context("no Date: header")?)?;
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
        Ok(PatchMail {
            author_name: author_name.to_string(),
            author_email: author_email.to_string(),
            time,
            subject: subject.to_string(),
            body,
            diff: after[diff_start..].to_string(),
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
        let diff =
            git2::Diff::from_buffer(self.diff.as_bytes()).context("cannot parse the diff")?;
        let mut index = repo
            .apply_to_tree(&tree, &diff, None)
            .context("hunks do not apply")?;
        let new_tree = repo.find_tree(index.write_tree_to(repo)?)?;
        let sig = self.signature()?;
        Ok(repo.commit(None, &sig, &sig, &self.message(), &new_tree, &[parent])?)
    }
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
    let stat = diff.stats()?.to_buf(DiffStatsFormat::FULL, 72)?;
    let mut text = format!(
        "From {id} Mon Sep 17 00:00:00 2001\nFrom: {name} <{email}>\nDate: {}\nSubject: [PATCH {n}/{total}] {subject}\n\n{body}---\n{}\n",
        format_date(author.when()),
        stat.as_str().context("diffstat is not UTF-8")?
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

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// RFC 2822, in the author's own offset, as git prints it.
fn format_date(time: Time) -> String {
    let offset = i64::from(time.offset_minutes());
    let local = time.seconds() + offset * 60;
    let days = local.div_euclid(86400);
    let secs = local.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    let sign = if offset < 0 { '-' } else { '+' };
    format!(
        "{}, {d} {} {y} {:02}:{:02}:{:02} {sign}{:02}{:02}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        offset.abs() / 60,
        offset.abs() % 60
    )
}

fn parse_date(text: &str) -> Result<Time> {
    let bad = || format!("Date: `{text}` is not like `Mon, 17 Sep 2001 00:00:00 +0000`");
    let words: Vec<&str> = text.split_whitespace().collect();
    let [_, d, mon, y, hms, zone] = words.as_slice() else {
        bail!(bad())
    };
    let d: i64 = d.parse().with_context(bad)?;
    let m = MONTHS.iter().position(|x| x == mon).with_context(bad)? as i64 + 1;
    let y: i64 = y.parse().with_context(bad)?;
    let hms: Vec<i64> = hms
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(bad)?;
    let [h, min, s] = hms.as_slice() else {
        bail!(bad())
    };
    let sign = match zone.as_bytes().first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => bail!(bad()),
    };
    let zone: i64 = zone[1..].parse().with_context(bad)?;
    let offset = sign * (zone / 100 * 60 + zone % 100);
    let local = days_from_civil(y, m, d) * 86400 + h * 3600 + min * 60 + s;
    Ok(Time::new(local - offset * 60, offset as i32))
}

// Howard Hinnant's algorithms for the proleptic Gregorian calendar.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_in_the_authors_offset() {
        for (secs, offset) in [
            (0, 0),
            (1_764_491_400, 60),
            (951_782_400, -330),
            (4_102_444_800, 0),
        ] {
            let time = Time::new(secs, offset);
            let text = format_date(time);
            let back = parse_date(&text).unwrap();
            assert_eq!(
                (back.seconds(), back.offset_minutes()),
                (secs, offset),
                "{text}"
            );
        }
        assert_eq!(
            format_date(Time::new(0, 0)),
            "Thu, 1 Jan 1970 00:00:00 +0000"
        );
        assert_eq!(
            format_date(Time::new(951_782_400, 0)),
            "Tue, 29 Feb 2000 00:00:00 +0000"
        );
    }

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
