//! Recorded resolutions, what `git rerere` does for conflicts: what a human made once of a
//! file the rebase produced for (patch, release) — a conflict resolved, or a fix-up after a
//! check failed on a cleanly merged file — kept with the series and replayed the next time
//! the same rebase produces the same text, so that moving the series again is unattended.
//!
//! A resolution is keyed by the exact text the rebase produced for one file (conflict markers
//! included; for a fix-up, the cleanly merged text), as a git blob id, and holds the diff to
//! what the human made of it. It is replayed only on an exact key match, so it is safe by
//! construction: it never lands on text it was not made for. When the series or the release
//! changes under it, the key no longer matches, the rebase stops as if there were no record,
//! and the new resolution replaces the stale one when the rebase is written.
//!
//! `patches/resolutions/<X.Y>/<patch file>.resolution`, text, one section per file:
//!
//! ```text
//! resolution conflict sysdeps/generic/unsecvars.h
//! from 2.44
//! key 5b1f...       (blob id of the text the rebase produced)
//! result 0c2e...    (blob id of what the human made of it, or `deleted`)
//! --- sysdeps/generic/unsecvars.h (as the rebase produced it)
//! +++ sysdeps/generic/unsecvars.h (as resolved)
//! @@ -17,9 +17,8 @@
//!  ...
//! ```

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{ObjectType, Oid};
use similar::TextDiff;

use crate::series::defect;
use crate::series::markers::{has_markers, is_marker_line};
use crate::series::scope::Scope;
use crate::util::{durable, paths, staging};
use model::Release;

/// `patches/<DIR>/<X.Y>/`: where the resolutions of the rebases onto X.Y live.
pub(crate) const DIR: &str = crate::series::RESOLUTIONS_DIR;
/// The file name suffix of one patch's resolutions.
pub(crate) const SUFFIX: &str = ".resolution";

const HEADER: &str =
    "# Recorded resolutions: what a human made once of a file the rebase produced for this patch
# and release. `cargo xtask rebase-glibc` (and update-release) replays one only where the rebase
# produces exactly the text it was made for (its key, a git blob id). Review them like patches;
# README.md, \"Recorded resolutions\", says more.
";

/// What the human resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A conflict: the key text holds conflict markers.
    Conflict,
    /// A cleanly merged file changed after a check (`--exec`, `--build-check`) failed, or
    /// beside a conflict.
    FixUp,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Conflict => "conflict",
            Kind::FixUp => "fix-up",
        }
    }

    /// How a summary names it: "the conflict in X", "a fix-up of X".
    pub(crate) fn describe(self, path: &str) -> String {
        match self {
            Kind::Conflict => format!("conflict in {path}"),
            Kind::FixUp => format!("fix-up of {path}"),
        }
    }
}

/// One file's resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The patch's file name in the source series.
    pub patch: String,
    pub path: String,
    pub kind: Kind,
    /// The source series' release, for bookkeeping: a rebase from elsewhere keeps this
    /// resolution even when it does not meet it.
    pub from: Release,
    /// The blob the rebase produced at `path`. (A file the human created where the rebase
    /// produced none is not recorded: absence is no text to be sure of.)
    pub key: Oid,
    /// The blob the human made of it; `None`: the file was deleted.
    pub result: Option<Oid>,
    /// The unified diff from the key's text to the result's.
    pub diff: String,
}

impl Resolution {
    /// The resolution of `path` from `produced` to `resolved` (deleted: `None`); `None` when
    /// either side is not UTF-8 text, which a reviewer could not read.
    pub fn make(
        patch: &str,
        path: &str,
        kind: Kind,
        from: Release,
        produced: &[u8],
        resolved: Option<&[u8]>,
    ) -> Option<Resolution> {
        let old = std::str::from_utf8(produced).ok()?;
        let new = std::str::from_utf8(resolved.unwrap_or_default()).ok()?;
        let id = |bytes: &[u8]| Oid::hash_object(ObjectType::Blob, bytes).ok();
        Some(Resolution {
            patch: patch.to_string(),
            path: path.to_string(),
            kind,
            from,
            key: id(produced)?,
            result: resolved.and_then(id),
            diff: unified_diff(path, old, new),
        })
    }

    /// What the human made of `produced`, which must be the key's text.
    pub(crate) fn replay(&self, produced: &[u8]) -> Result<Option<Vec<u8>>> {
        let key =
            Oid::hash_object(ObjectType::Blob, produced).context("cannot hash a produced file")?;
        if key != self.key {
            bail!(
                "the recorded resolution of {} in {} was made for other text",
                self.path,
                self.patch
            );
        }
        let old = std::str::from_utf8(produced)
            .map_err(|_| self.damaged(anyhow::anyhow!("its key is not UTF-8 text")))?;
        let new = apply(old, &self.diff).map_err(|e| self.damaged(e))?;
        if self.result.is_some() && has_markers(new.as_bytes()) {
            return Err(self.damaged(anyhow::anyhow!("what it makes keeps conflict markers")));
        }
        let Some(result) = self.result else {
            return Ok(None);
        };
        let made = Oid::hash_object(ObjectType::Blob, new.as_bytes())
            .context("cannot hash a replayed file")?;
        if made != result {
            return Err(self.damaged(anyhow::anyhow!(
                "its diff makes blob {made}, not the recorded result {result}"
            )));
        }
        Ok(Some(new.into_bytes()))
    }

    /// Whether what it makes holds a conflict marker line, as far as the record shows: one
    /// its diff adds or keeps as context. (A replay checks the whole result.)
    pub(crate) fn keeps_markers(&self) -> bool {
        self.diff.lines().any(|line| {
            !line.starts_with("+++ ")
                && (line.strip_prefix('+').or_else(|| line.strip_prefix(' ')))
                    .is_some_and(|text| is_marker_line(text.as_bytes()))
        })
    }

    fn damaged(&self, why: anyhow::Error) -> anyhow::Error {
        defect(format!(
            "the recorded resolution of {} for {} is damaged (edited by hand?): {why:#}; \
             delete its section and let the rebase stop there again",
            self.path, self.patch
        ))
    }

    fn write_to(&self, out: &mut String) {
        let _ = write!(
            out,
            "resolution {} {}\nfrom {}\nkey {}\nresult {}\n{}",
            self.kind.word(),
            self.path,
            self.from,
            self.key,
            self.result
                .map_or("deleted".to_string(), |id| id.to_string()),
            self.diff
        );
    }
}

/// Every resolution of the rebases onto one release.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolutions {
    pub list: Vec<Resolution>,
}

impl Resolutions {
    /// `patches/resolutions/<onto>/`, or nothing when there is none.
    pub(crate) fn load(patches_dir: &Path, onto: Release) -> Result<Resolutions> {
        Resolutions::load_dir(&dir(patches_dir, onto))
    }

    /// Reads every `*.resolution` file of `dir` (absent: none).
    pub fn load_dir(dir: &Path) -> Result<Resolutions> {
        let Some(entries) = paths::entries_if_exists(dir)? else {
            return Ok(Resolutions::default());
        };
        let mut names = Vec::new();
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Some(patch) = name.strip_suffix(SUFFIX) else {
                return Err(defect(format!(
                    "{}: not a recorded resolution (they are named <patch file>{SUFFIX})",
                    entry.path().display()
                )));
            };
            names.push((patch.to_string(), entry.path()));
        }
        names.sort();
        let mut list = Vec::new();
        for (patch, path) in names {
            let text = crate::series::read_own(
                &path,
                crate::series::PATCH_LIMIT,
                crate::series::Head::Resolution,
            )?;
            list.extend(parse(&patch, &text, &path)?);
        }
        Ok(Resolutions { list })
    }

    /// Refuses (as a defect) resolutions for paths `scope` does not allow, and those whose
    /// result keeps conflict markers (as far as the record shows): what `--check` holds
    /// them to, and a rebase before it replays any.
    pub(crate) fn keep_rules(&self, scope: &Scope) -> Result<()> {
        let outside: Vec<String> = self
            .list
            .iter()
            .filter(|r| !scope.allows(&r.path, r.result.is_none()))
            .map(|r| format!("{} ({})", r.path, r.patch))
            .collect();
        if !outside.is_empty() {
            return Err(defect(format!(
                "recorded resolutions change paths {} does not allow: {}",
                scope.path.display(),
                outside.join(", ")
            )));
        }
        let marked: Vec<String> = self
            .list
            .iter()
            .filter(|r| r.keeps_markers())
            .map(|r| format!("{} ({})", r.path, r.patch))
            .collect();
        if !marked.is_empty() {
            return Err(defect(format!(
                "recorded resolutions keep conflict markers in what they make (a replay would put them into the series): {}",
                marked.join(", ")
            )));
        }
        Ok(())
    }

    /// The resolutions of `patch` whose key is what `produced` holds at their path.
    pub(crate) fn matching(&self, patch: &str, produced: &git2::Tree<'_>) -> Vec<&Resolution> {
        self.list
            .iter()
            .filter(|r| {
                r.patch == patch
                    && produced
                        .get_path(Path::new(&r.path))
                        .is_ok_and(|e| e.id() == r.key)
            })
            .collect()
    }

    /// The resolutions of `patch` at `path` (whatever their key): for "there is a record,
    /// but for other text" hints.
    pub(crate) fn for_path<'r>(
        &'r self,
        patch: &'r str,
        path: &'r str,
    ) -> impl Iterator<Item = &'r Resolution> {
        self.list
            .iter()
            .filter(move |r| r.patch == patch && r.path == path)
    }

    /// Adds `new`, replacing a resolution of the same patch, path and key.
    pub(crate) fn put(&mut self, new: Resolution) {
        self.list
            .retain(|r| !(r.patch == new.patch && r.path == new.path && r.key == new.key));
        self.list.push(new);
    }

    /// Writes one file per patch into the empty or absent directory `dir`.
    pub(crate) fn write_files(&self, dir: &Path, onto: Release) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (patch, text) in self.texts(onto) {
            durable::write_synced(&dir.join(format!("{patch}{SUFFIX}")), text.as_bytes())?;
        }
        Ok(())
    }

    /// The file text per patch, sections sorted so that the files are the same whatever the
    /// order the resolutions were made in.
    pub(crate) fn texts(&self, onto: Release) -> BTreeMap<String, String> {
        let mut by_patch: BTreeMap<&str, Vec<&Resolution>> = BTreeMap::new();
        for r in &self.list {
            by_patch.entry(&r.patch).or_default().push(r);
        }
        by_patch
            .into_iter()
            .map(|(patch, mut list)| {
                list.sort_by(|a, b| {
                    (&a.path, &a.from, a.key, a.kind).cmp(&(&b.path, &b.from, b.key, b.kind))
                });
                let mut text = format!("# {patch} on glibc {onto}\n{HEADER}");
                for r in list {
                    text.push('\n');
                    r.write_to(&mut text);
                }
                (patch.to_string(), text)
            })
            .collect()
    }

    /// These resolutions as the files of a new staging directory in
    /// `<patches_dir>/resolutions/` (none: an empty one), removed when dropped: what replaces
    /// `patches/resolutions/<onto>/`.
    pub(crate) fn stage(&self, patches_dir: &Path, onto: Release) -> Result<tempfile::TempDir> {
        let staged = staging::tempdir_in(&patches_dir.join(DIR), "resolutions")?;
        self.write_files(staged.path(), onto)?;
        Ok(staged)
    }

    /// Makes `patches/resolutions/<onto>/` hold exactly these resolutions (none: removed),
    /// replaced whole in one step like a series (see `util::durable`).
    pub fn publish(&self, patches_dir: &Path, onto: Release) -> Result<()> {
        let parent = patches_dir.join(DIR);
        let dest = dir(patches_dir, onto);
        refuse_foreign_files(&dest)?;
        if self.list.is_empty() {
            if !dest.exists() {
                return Ok(());
            }
            // Moved aside under a staging name first, so that a crash while deleting
            // leaves an orphan the next run removes, never half a set.
            let gone = staging::tempdir_in(&parent, "resolutions")?.keep();
            let aside = gone.join(onto.version());
            std::fs::rename(&dest, &aside)
                .with_context(|| format!("cannot move {} aside", dest.display()))?;
            durable::sync_dir(&parent)?;
            durable::remove_tree(&gone)?;
            if std::fs::read_dir(&parent).is_ok_and(|mut e| e.next().is_none()) {
                let _ = std::fs::remove_dir(&parent);
            }
            return Ok(());
        }
        let staged = staging::tempdir_in(&parent, "resolutions")?;
        self.write_files(staged.path(), onto)?;
        durable::replace_dir(&staged.keep(), &dest)
    }
}

/// Refuses to replace `dest` (a release's resolutions directory) while it holds anything but
/// recorded resolutions: publishing replaces the directory whole.
pub(crate) fn refuse_foreign_files(dest: &Path) -> Result<()> {
    durable::refuse_foreign_entries(dest, "not recorded resolutions", |name| {
        name.ends_with(SUFFIX) && !name.starts_with('.')
    })
}

/// `patches/resolutions/<onto>/`.
pub(crate) fn dir(patches_dir: &Path, onto: Release) -> PathBuf {
    patches_dir.join(DIR).join(onto.version())
}

/// The sections of one patch's file.
fn parse(patch: &str, text: &str, path: &Path) -> Result<Vec<Resolution>> {
    let mut list: Vec<(Resolution, Option<Release>)> = Vec::new();
    let malformed = |n: usize, why: &str| {
        defect(format!(
            "{}:{n}: {why}: not a recorded resolution (restore the file from git, or delete it and let the rebase stop there again)",
            path.display()
        ))
    };
    // A section read so far, and its `from` once read.
    let mut current: Option<(Resolution, Option<Release>)> = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        if let Some(rest) = line.strip_prefix("resolution ") {
            if let Some(done) = current.take() {
                list.push(done);
            }
            let rest = rest.trim_end_matches('\n');
            let (kind, file) = rest
                .split_once(' ')
                .ok_or_else(|| malformed(n, "expected `resolution <kind> <path>`"))?;
            let kind = match kind {
                "conflict" => Kind::Conflict,
                "fix-up" => Kind::FixUp,
                _ => return Err(malformed(n, "the kind is `conflict` or `fix-up`")),
            };
            current = Some((
                Resolution {
                    patch: patch.to_string(),
                    path: file.to_string(),
                    kind,
                    // Until its `from` line is read (checked below).
                    from: Release::newest(),
                    key: Oid::zero(),
                    result: None,
                    diff: String::new(),
                },
                None,
            ));
            continue;
        }
        let Some((r, from)) = current.as_mut() else {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            return Err(malformed(n, "text before the first `resolution` line"));
        };
        if !r.diff.is_empty() || line.starts_with("--- ") {
            if line.trim_end_matches('\n').is_empty() {
                // The blank line between sections.
                continue;
            }
            r.diff.push_str(line);
            continue;
        }
        let line = line.trim_end_matches('\n');
        let (field, value) = line
            .split_once(' ')
            .ok_or_else(|| malformed(n, "expected `from`, `key` or `result`"))?;
        let oid = |value: &str| Oid::from_str(value).map_err(|_| malformed(n, "not a blob id"));
        match field {
            "from" => {
                *from = Some(Release::parse(value).map_err(|e| malformed(n, &e.to_string()))?)
            }
            "key" => r.key = oid(value)?,
            "result" if value == "deleted" => r.result = None,
            "result" => r.result = Some(oid(value)?),
            _ => return Err(malformed(n, "expected `from`, `key` or `result`")),
        }
    }
    list.extend(current);
    list.into_iter()
        .map(|(mut r, from)| match from {
            Some(from) if !r.key.is_zero() && !r.diff.is_empty() => {
                r.from = from;
                Ok(r)
            }
            _ => Err(defect(format!(
                "{}: the resolution of {} lacks its `from` or `key` line or its diff",
                path.display(),
                r.path
            ))),
        })
        .collect()
}

/// `old` -> `new` as a unified diff (3 lines of context) under `--- path` / `+++ path`
/// headers; a missing final newline is marked the way diff(1) marks it.
fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let diff = TextDiff::from_lines(old, new);
    let mut text = diff
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{path} (as the rebase produced it)"),
            &format!("{path} (as resolved)"),
        )
        .to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.starts_with("--- ") {
        // No change: a header alone, so that the section still parses.
        text = format!("--- {path} (as the rebase produced it)\n+++ {path} (as resolved)\n");
    }
    text
}

/// Applies a unified diff to exactly the text it was made from: every context and removed
/// line must be where the hunk says. (The keys make that certain; this only guards a record
/// edited by hand.)
pub(crate) fn apply(old: &str, diff: &str) -> Result<String> {
    let lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::with_capacity(old.len() + diff.len());
    let mut at = 0usize;
    let mut diff_lines = diff.split_inclusive('\n').peekable();
    // The lines of the hunk being read: (marker, text).
    let mut hunk: Vec<(char, String)> = Vec::new();
    let mut start = None;
    let flush = |out: &mut String,
                 at: &mut usize,
                 start: Option<usize>,
                 hunk: &mut Vec<(char, String)>|
     -> Result<()> {
        let Some(start) = start else { return Ok(()) };
        if start < *at || start > lines.len() {
            bail!("a hunk starts at line {} out of order", start + 1);
        }
        out.extend(lines[*at..start].iter().copied());
        *at = start;
        for (marker, text) in hunk.drain(..) {
            match marker {
                ' ' | '-' => {
                    if lines.get(*at) != Some(&text.as_str()) {
                        bail!("line {} is not what the diff says", *at + 1);
                    }
                    if marker == ' ' {
                        out.push_str(&text);
                    }
                    *at += 1;
                }
                _ => out.push_str(&text),
            }
        }
        Ok(())
    };
    while let Some(line) = diff_lines.next() {
        if line.starts_with("--- ") || line.starts_with("+++ ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("@@ -") {
            flush(&mut out, &mut at, start, &mut hunk)?;
            let old_range = rest.split(' ').next().unwrap_or_default();
            let (first, count) = old_range.split_once(',').unwrap_or((old_range, "1"));
            let first: usize = first.parse().context("a hunk header has no line number")?;
            let count: usize = count.parse().context("a hunk header has no line count")?;
            // `-N,0` means "after line N".
            start = Some(if count == 0 {
                first
            } else {
                first.saturating_sub(1)
            });
            continue;
        }
        let mut chars = line.chars();
        let marker = chars.next().context("an empty line inside a hunk")?;
        if !matches!(marker, ' ' | '-' | '+') {
            bail!("unexpected line in a diff: {:?}", line.trim_end());
        }
        let mut text = chars.as_str().to_string();
        if diff_lines
            .peek()
            .is_some_and(|next| next.starts_with("\\ "))
        {
            diff_lines.next();
            if text.ends_with('\n') {
                text.pop();
            }
        }
        hunk.push((marker, text));
    }
    flush(&mut out, &mut at, start, &mut hunk)?;
    out.extend(lines[at..].iter().copied());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel() -> Release {
        Release::parse("2.36").unwrap()
    }

    /// A resolution of the file `f` in the patch `p` (on 2.36): from `produced` to `resolved`
    /// (`None`: deleted).
    fn resolution(kind: Kind, produced: &str, resolved: Option<&str>) -> Resolution {
        let resolved = resolved.map(str::as_bytes);
        Resolution::make("p", "f", kind, rel(), produced.as_bytes(), resolved).unwrap()
    }

    #[test]
    fn a_resolution_replays_exactly_and_round_trips_through_its_file() {
        let produced = "a\nb\n<<<<<<< x\nc\n=======\nd\n>>>>>>> y\ne\nf\ng\nh\n";
        let resolved = "a\nb\nc and d\ne\nf\ng\nh\n";
        let r = Resolution::make(
            "0001-x.patch",
            "elf/x.c",
            Kind::Conflict,
            rel(),
            produced.as_bytes(),
            Some(resolved.as_bytes()),
        )
        .unwrap();
        assert_eq!(
            r.replay(produced.as_bytes()).unwrap().unwrap(),
            resolved.as_bytes()
        );
        assert!(r.replay(b"other\n").is_err());

        let mut set = Resolutions::default();
        set.put(r.clone());
        let texts = set.texts(rel());
        let text = &texts["0001-x.patch"];
        assert!(
            text.contains("resolution conflict elf/x.c\nfrom 2.36\nkey "),
            "{text}"
        );
        assert!(text.contains("-<<<<<<< x\n"), "{text}");
        let parsed = parse("0001-x.patch", text, Path::new("t")).unwrap();
        assert_eq!(parsed, vec![r]);
    }

    /// A record's `from` is a supported release, read as one: another is a defect of the
    /// file, named at its line; a section without one is refused as before.
    #[test]
    fn a_record_from_an_unsupported_release_is_a_defect() {
        let r = Resolution::make(
            "0001-x.patch",
            "elf/x.c",
            Kind::Conflict,
            rel(),
            b"a\n",
            Some(b"b\n"),
        )
        .unwrap();
        let mut set = Resolutions::default();
        set.put(r);
        let text = set.texts(rel())["0001-x.patch"].clone();
        let err = parse(
            "p",
            &text.replace("from 2.36\n", "from 2.39\n"),
            Path::new("t"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("t:8: glibc 2.39 is not a supported release"),
            "{err}"
        );
        let err = parse("p", &text.replace("from 2.36\n", ""), Path::new("t"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("lacks its `from` or `key` line"), "{err}");
    }

    #[test]
    fn missing_final_newlines_deletions_and_new_files_replay() {
        for (old, new) in [
            ("a\nb", Some("a\nc")),
            ("a\n", Some("a\nb")),
            ("a\nb", Some("a\nb\n")),
            ("x\ny\n", None),
            ("", Some("x\n")),
            (
                "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
                Some("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n"),
            ),
        ] {
            let r = resolution(Kind::FixUp, old, new);
            let replayed = r.replay(old.as_bytes()).unwrap();
            assert_eq!(
                replayed.as_deref(),
                new.map(str::as_bytes),
                "{old:?} -> {new:?}"
            );
            let texts = Resolutions {
                list: vec![r.clone()],
            }
            .texts(rel());
            assert_eq!(parse("p", &texts["p"], Path::new("t")).unwrap(), vec![r]);
        }
    }

    #[test]
    fn a_record_edited_by_hand_is_refused_not_applied() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = old.replace("5\n", "five\n");
        let mut r = resolution(Kind::FixUp, old, Some(&new));
        r.diff = r.diff.replace("+five", "+FIVE");
        let err = format!("{:#}", r.replay(old.as_bytes()).unwrap_err());
        assert_eq!(
            err,
            "the recorded resolution of f for p is damaged (edited by hand?): its diff makes blob \
             a16574e47858a36f40dbe0803404c9e099200da3, not the recorded result \
             4c5701d775286e43e9f53ee570f38b6070b09616; delete its section and let the rebase \
             stop there again"
        );
        assert!(crate::series::is_defect(
            &r.replay(old.as_bytes()).unwrap_err()
        ));
    }

    #[test]
    fn a_record_that_keeps_a_marker_is_refused_when_replayed() {
        // The marker is outside the hunk: only the whole result shows it.
        let old = "<<<<<<< a\n1\n=======\n2\n>>>>>>> b\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "<<<<<<< a\n1\n=======\n2\n>>>>>>> b\n3\n4\n5\n6\n7\n8\nnine\n";
        let r = resolution(Kind::Conflict, old, Some(new));
        assert!(!r.keeps_markers(), "{}", r.diff);
        let err = format!("{:#}", r.replay(old.as_bytes()).unwrap_err());
        assert_eq!(
            err,
            "the recorded resolution of f for p is damaged (edited by hand?): what it makes keeps \
             conflict markers; delete its section and let the rebase stop there again"
        );
    }

    #[test]
    fn not_utf8_is_not_recorded() {
        assert!(Resolution::make("p", "f", Kind::FixUp, rel(), b"\xff\n", Some(b"x\n")).is_none());
    }
}
