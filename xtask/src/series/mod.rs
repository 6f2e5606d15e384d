//! A patch series: `patches/<X.Y>/series` plus `NNNN-<subject>.patch` files in `git
//! format-patch` form, consumable by `git am`, quilt and `patch -p1`.
//!
//! The files are generated, and byte-identical on every machine: commit ids are
//! deterministic (release commits are, and patch commits take author, committer and date from
//! the patch header), and the trailer is fixed instead of naming a git or libgit2 version.

pub(crate) mod command;
pub(crate) mod copyright;
pub(crate) mod diffstat;
pub mod import;
pub(crate) mod kinds;
pub(crate) mod mail;
pub(crate) mod mail_date;
pub(crate) mod markers;
pub(crate) mod parts;
pub(crate) mod scope;
pub mod status;
pub(crate) mod variant;
pub(crate) mod workspace;

pub use mail::PatchMail;
pub(crate) use mail::{format_patch, slug};
pub use workspace::Workspace;

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{ObjectType, Oid, Repository};

use crate::store::{worktree, SourceStore};
use crate::util::{durable, fault};
use model::file::Limit;
use model::Release;

/// The series file's name, as quilt expects it.
pub(crate) const SERIES_FILE: &str = "series";
/// `patches/<RESOLUTIONS_DIR>/<X.Y>/`: the recorded resolutions of the rebases onto X.Y
/// (see `rebase::records`), kept with the series but not part of any.
pub(crate) const RESOLUTIONS_DIR: &str = "resolutions";
/// `patches/<STABLE_DIR>/<X.Y>/`: what the series of X.Y needs to apply on the stable branch
/// users build (Debian's source package of the release), where it does not as it is (see
/// `series::stable`).
pub(crate) const STABLE_DIR: &str = "stable";
/// Ends every patch: the mail signature `git format-patch` would fill with its version.
pub const TRAILER: &str = "-- \nld-fallback\n";
const BASE_PREFIX: &str = "# base: ";

crate::util::exit::message_error! {
    /// Something wrong with a series' files: they do not parse, do not apply to their release,
    /// or change what the series may not change. A finding about the series (`--check` reports
    /// it and goes on), as opposed to a failure to read or write (reported as the error it is,
    /// never as "does not apply").
    SeriesDefect
}

/// A [`SeriesDefect`] as an error.
pub(crate) fn defect(message: impl Into<String>) -> anyhow::Error {
    SeriesDefect(message.into()).into()
}

/// Whether `err` is (or wraps) a [`SeriesDefect`].
pub(crate) fn is_defect(err: &anyhow::Error) -> bool {
    err.downcast_ref::<SeriesDefect>().is_some()
}

/// The one judge of a series read from `patches/<X.Y>/`: `rebase-glibc --check`'s
/// (`rebase::series_check::check_read`), handed down to the commands below it in the
/// pipeline that report its verdict (`series status`, `verify check-support`). Ok with the
/// lines its files drift by from what its commits export (none when it passes); else the
/// series' defect, a release the store lacks, or a failure to read.
pub type Judge<'a> = &'a dyn Fn(&Workspace, Series) -> Result<(Series, Vec<String>)>;

/// A patch or a recorded resolution, read whole: a patch that rewrote glibc 2.44's largest
/// file (`math/auto-libm-test-out-narrow-fma`, 5.8 MB) whole would be about 12 MB.
pub(crate) const PATCH_LIMIT: Limit = Limit {
    bytes: 64 << 20,
    what: "a patch",
};

/// A series file or the scope: a file name or a glob per line.
pub(crate) const LIST_LIMIT: Limit = Limit {
    bytes: 1 << 20,
    what: "a series or scope file",
};

/// What a file of a series starts with, judged from its first [`Head::BYTES`] before the rest
/// (up to 64 MiB for a patch) is read: a file of the wrong kind is refused from its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    /// Any text (a series file, the scope: small files).
    Text,
    /// A mail as `git format-patch` writes one: `From <commit> Mon Sep 17 00:00:00 2001`.
    Mail,
    /// A recorded resolution: comment lines, then `resolution <kind> <path>`.
    Resolution,
}

impl Head {
    /// How many bytes decide.
    const BYTES: u64 = 16;

    /// The whole of `path`, a regular file of at most `limit` that starts as this kind does
    /// (`util::read::judged`: the first bytes decide before the rest is read).
    pub(crate) fn read(self, path: &Path, limit: Limit) -> std::io::Result<Vec<u8>> {
        crate::util::read::judged(path, limit, Head::BYTES, |first| self.judge(first))
    }

    /// Why `head` (a file's first bytes) is not the start of this kind of file. An empty
    /// file passes: what reads it says what an empty one lacks.
    fn judge(self, head: &[u8]) -> std::result::Result<(), String> {
        let first_line = head.split(|b| *b == b'\n').next().unwrap_or_default();
        let fits = match self {
            Head::Text => true,
            Head::Mail => head.is_empty() || head.starts_with(b"From "),
            Head::Resolution => {
                first_line.starts_with(b"#")
                    || first_line.starts_with(b"resolution ")
                    || first_line.iter().all(u8::is_ascii_whitespace)
            }
        };
        match (fits, self) {
            (true, _) | (_, Head::Text) => Ok(()),
            (false, Head::Mail) => Err(
                "it is not a mail as git format-patch writes one: it does not start with `From <commit> Mon Sep 17 00:00:00 2001`"
                    .to_string(),
            ),
            (false, Head::Resolution) => Err(
                "it is not a recorded resolution: it does not start with a `#` comment or a `resolution <kind> <path>` line"
                    .to_string(),
            ),
        }
    }
}

/// A patch of `patches/`, as every command reads it: see [`read_own`].
pub(crate) fn read_own_patch(path: &Path) -> Result<String> {
    read_own(path, PATCH_LIMIT, Head::Mail)
}

/// A file of `patches/` (a series file, a patch, the scope, a recorded resolution), as every
/// command reads it: a regular file where it is, never a symlink, of at most `limit`, whose
/// first bytes are what `head` says. What a link points at is not in the repository (or not
/// where a reviewer reads it), so a series holding one is refused by every command alike,
/// naming the link, before anything reads through it.
pub(crate) fn read_own(path: &Path, limit: Limit, head: Head) -> Result<String> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|e| format!("unreadable: {e}"));
            return Err(defect(format!(
                "{} is a symlink (to {target}): the files of patches/ are regular files, so that what is checked, built and mailed is what the repository holds; copy the file over the link",
                path.display()
            )));
        }
    }
    read_text(path, limit, head)
}

/// A UTF-8 text file of at most `limit` whose first bytes are what `head` says (a patch a
/// user names, too: `series import` follows links there). A file that is not there, not a
/// regular file (a FIFO, `/dev/zero`), larger than the limit or of another kind is a defect
/// of the series that lists it, said before the rest of it is read; a byte that is not UTF-8
/// is named with its line.
pub(crate) fn read_text(path: &Path, limit: Limit, head: Head) -> Result<String> {
    let bytes = match head.read(path, limit) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(defect(format!("{} does not exist", path.display())));
        }
        // What model::file refuses: another kind of file, or one larger than the limit.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData
            ) =>
        {
            return Err(defect(format!("cannot read {}: {e}", path.display())));
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
        defect(format!(
            "{}: line {line} has the byte 0x{:02x}, which is not UTF-8: the series must be UTF-8 text (was it saved in another encoding?)",
            path.display(),
            bytes[at]
        ))
    })
}

/// Refuses to replace the series directory `dir` while it holds anything but its `series`
/// file and the patches that file lists (or, when it is gone, files named like patches):
/// replacing the directory would delete them.
pub(crate) fn refuse_foreign_files(dir: &Path) -> Result<()> {
    let listed: Option<Vec<String>> =
        model::file::read_regular_text(&dir.join(SERIES_FILE), LIST_LIMIT)
            .ok()
            .map(|text| {
                text.lines()
                    .filter_map(|l| l.split_whitespace().next())
                    .filter(|w| !w.starts_with('#'))
                    .map(str::to_string)
                    .collect()
            });
    durable::refuse_foreign_entries(dir, "not part of its series", |name| {
        name == SERIES_FILE
            || match &listed {
                Some(listed) => listed.iter().any(|l| l == name),
                None => is_patch_name(name),
            }
    })
}

/// `NNNN-<slug>.patch`, as a series names its patches.
fn is_patch_name(name: &str) -> bool {
    name.len() > 11
        && name.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && name.as_bytes()[4] == b'-'
        && name.ends_with(".patch")
}

/// Everything a patch of a series is held to, whatever made it (a rebase, an import, a hand):
/// the declared scope, no conflict marker, regular files that keep their modes. The first of
/// `patches` (name, commit) that breaks a rule is refused as a defect.
pub(crate) fn guard(
    scope: &scope::Scope,
    repo: &Repository,
    patches: &[(String, Oid)],
) -> Result<()> {
    scope.check(repo, patches)?;
    markers::check(repo, patches)?;
    kinds::check(repo, patches)?;
    copyright::check(repo, patches)
}

/// Refuses (as a defect) the first of `patches` (name, commit) of which `problem` says what
/// breaks a rule: the loop of each rule of [`guard`].
pub(crate) fn refuse_first(
    patches: &[(String, Oid)],
    problem: impl Fn(&str, Oid) -> Result<Option<String>>,
) -> Result<()> {
    for (name, commit) in patches {
        if let Some(why) = problem(name, *commit)? {
            return Err(defect(why));
        }
    }
    Ok(())
}

/// The first line where `a` and `b` differ: its number (1-based) and both versions (`None`
/// past the end of a text).
pub(crate) fn first_difference<'t>(
    a: &'t str,
    b: &'t str,
) -> Option<(usize, Option<&'t str>, Option<&'t str>)> {
    let (mut la, mut lb) = (a.split_inclusive('\n'), b.split_inclusive('\n'));
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => return Some((n, x, y)),
        }
    }
    None
}

/// One file of a series directory that is not what the series' commits export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// Other bytes: the first differing line, as in the file and as exported.
    Differs {
        name: String,
        line: usize,
        file: Option<String>,
        exported: Option<String>,
    },
    Missing {
        name: String,
    },
    /// In the directory, not in the series.
    Extra {
        name: String,
    },
}

/// A line for a message: trimmed, shown in backquotes, or "(end of file)".
pub(crate) fn quote_line(line: Option<&str>) -> String {
    match line {
        Some(text) => {
            let text = text.trim_end_matches('\n');
            let shown: String = text.chars().take(100).collect();
            let more = if shown.len() < text.len() { "..." } else { "" };
            format!("`{shown}{more}`")
        }
        None => "(end of file)".to_string(),
    }
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Drift::Differs {
                name,
                line,
                file,
                exported,
            } => write!(
                f,
                "{name} differs at line {line}: the file has {}, the series' commits export {}",
                quote_line(file.as_deref()),
                quote_line(exported.as_deref())
            ),
            Drift::Missing { name } => write!(f, "{name} is missing"),
            Drift::Extra { name } => write!(f, "{name} is not part of the series"),
        }
    }
}

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
        let series_text = read_own(&path, LIST_LIMIT, Head::Text)?;
        // Invisible, it would make the first line's first word something else.
        if series_text.starts_with('\u{feff}') {
            return Err(defect(format!(
                "{} starts with a byte order mark (U+FEFF), which a series file has none of (some Windows editors write one): save it without",
                path.display()
            )));
        }
        let mut base = None;
        let mut patches = Vec::new();
        for line in series_text.lines() {
            if let Some(rest) = line.strip_prefix(BASE_PREFIX) {
                let mut words = rest.split_whitespace();
                let (Some(tag), Some(tree)) = (words.next(), words.next()) else {
                    return Err(defect(format!(
                        "{}: malformed base line {}; expected `# base: glibc-X.Y <tree id>`",
                        path.display(),
                        quote_line(Some(line))
                    )));
                };
                let release = Release::parse(tag)
                    .map_err(|e| defect(format!("{}: bad base release: {e:#}", path.display())))?;
                let tree = Oid::from_str(tree).map_err(|_| {
                    defect(format!(
                        "{}: bad base tree id {}",
                        path.display(),
                        quote_line(Some(tree))
                    ))
                })?;
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
            // A file of this directory, by name: `dir.join` of an absolute path or of `../x`
            // would read a file no check of this series looks at.
            if name.contains('/') || name == "." || name == ".." {
                return Err(defect(format!(
                    "{} lists {}, which is not a file of {} (a series names its patches by file name)",
                    path.display(),
                    quote_line(Some(name)),
                    dir.display()
                )));
            }
            // NAME_MAX: a longer name is no file (and would be said back whole by the error
            // that opening it gives).
            if name.len() > 255 {
                return Err(defect(format!(
                    "{} lists a name of {} bytes ({}), longer than a file name can be (255)",
                    path.display(),
                    name.len(),
                    quote_line(Some(name))
                )));
            }
            // Applied twice, a patch fails on what it did the first time, and says so in
            // words about the tree ("NEWS is blob ...") rather than about the list.
            if patches.iter().any(|p: &Patch| p.name == name) {
                return Err(defect(format!(
                    "{} lists {} twice: a series names each patch once",
                    path.display(),
                    quote_line(Some(name))
                )));
            }
            let patch = dir.join(name);
            let text = read_own_patch(&patch)
                .with_context(|| format!("{} lists {name}", path.display()))?;
            patches.push(Patch {
                name: name.to_string(),
                text,
            });
        }
        let Some((base, base_tree)) = base else {
            return Err(defect(format!(
                "{} has no `# base: glibc-X.Y <tree id>` line: which release does it apply to?",
                path.display()
            )));
        };
        if patches.is_empty() {
            return Err(defect(format!(
                "{} lists no patch: a series is at least one (were its lines deleted?)",
                path.display()
            )));
        }
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

    /// Writes its release's files with every patch applied into the empty directory `dest`,
    /// importing the release into `store` first if it lacks it.
    pub fn export(&self, store: &SourceStore, dest: &Path) -> Result<()> {
        let base = store.ensure_release(self.base)?;
        let head = self
            .commit_on(store.repo(), base)?
            .last()
            .copied()
            .unwrap_or(base);
        let tree = store
            .repo()
            .find_commit(head)
            .context("a commit of the series is missing from the store")?
            .tree_id();
        worktree::write_tree(store.repo(), tree, dest)
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
                .map_err(|e| e.context(format!("cannot parse {}", patch.name)))?;
            let oid = mail.commit_on(repo, &head).map_err(|e| {
                if is_defect(&e) {
                    e.context(format!(
                        "{} does not apply to glibc {}",
                        patch.name, self.base
                    ))
                } else {
                    e.context(format!(
                        "cannot commit {} on glibc {} in the store",
                        patch.name, self.base
                    ))
                }
            })?;
            head = repo
                .find_commit(oid)
                .context("a commit just made is missing")?;
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

    /// Writes the series into `dir` (replacing it) through a temporary sibling directory
    /// swapped into place in one step, so that `dir` is at every moment the old series or the
    /// new one, never half of each (see `util::durable`).
    pub fn write(&self, dir: &Path) -> Result<()> {
        refuse_foreign_files(dir)?;
        durable::replace_dir(&self.stage(dir)?.keep(), dir)
    }

    /// The series' files, written and flushed into a new staging directory beside `dir`
    /// (removed when dropped): what replaces `dir`.
    pub(crate) fn stage(&self, dir: &Path) -> Result<tempfile::TempDir> {
        let parent = dir.parent().context("series dir has no parent")?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let staging = crate::util::staging::tempdir_in(parent, "series")?;
        durable::write_synced(
            &staging.path().join(SERIES_FILE),
            self.series_text.as_bytes(),
        )?;
        for patch in &self.patches {
            durable::write_synced(&staging.path().join(&patch.name), patch.text.as_bytes())?;
            fault::point("series-write:patch");
        }
        Ok(staging)
    }

    /// Files of `dir` that differ from this series (missing, extra, or other bytes, with the
    /// first differing line).
    pub fn drift_against(&self, dir: &Path) -> Result<Vec<Drift>> {
        self.drift(dir, |name| {
            let path = dir.join(name);
            match model::file::read_regular(&path, PATCH_LIMIT) {
                Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
            }
        })
    }

    /// [`Series::drift_against`] the files of `dir` as `read` (`Series::load(dir)`) holds
    /// them: none is read again, the directory is only listed for files the series does
    /// not name.
    pub fn drift_against_read(&self, read: &Series, dir: &Path) -> Result<Vec<Drift>> {
        self.drift(dir, |name| {
            Ok(if name == SERIES_FILE {
                Some(read.series_text.clone())
            } else {
                read.patches
                    .iter()
                    .find(|p| p.name == name)
                    .map(|p| p.text.clone())
            })
        })
    }

    /// How `dir` differs from this series: `file` gives a file's text, `None` when absent.
    fn drift(
        &self,
        dir: &Path,
        file: impl Fn(&str) -> Result<Option<String>>,
    ) -> Result<Vec<Drift>> {
        let mut expected: Vec<(&str, &str)> = vec![(SERIES_FILE, self.series_text.as_str())];
        expected.extend(
            self.patches
                .iter()
                .map(|p| (p.name.as_str(), p.text.as_str())),
        );
        let mut drift = Vec::new();
        for (name, text) in &expected {
            match file(name)? {
                Some(file) if file == *text => {}
                Some(file) => {
                    let (line, in_file, exported) =
                        first_difference(&file, text).unwrap_or((1, None, None));
                    drift.push(Drift::Differs {
                        name: name.to_string(),
                        line,
                        file: in_file.map(str::to_string),
                        exported: exported.map(str::to_string),
                    });
                }
                None => drift.push(Drift::Missing {
                    name: name.to_string(),
                }),
            }
        }
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !expected.iter().any(|(n, _)| *n == name) {
                drift.push(Drift::Extra { name });
            }
        }
        Ok(drift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_utf8_byte_is_named_with_its_line() {
        let tmp = tempfile::TempDir::new().unwrap();
        let path = tmp.path().join("0001-x.patch");
        std::fs::write(&path, b"From x\nSubject: caf\xe9\n").unwrap();
        let err = format!(
            "{:#}",
            read_text(&path, PATCH_LIMIT, Head::Mail).unwrap_err()
        );
        assert!(err.contains("line 2 has the byte 0xe9"), "{err}");
        assert!(is_defect(
            &read_text(&path, PATCH_LIMIT, Head::Mail).unwrap_err()
        ));
        assert!(is_defect(
            &read_text(&tmp.path().join("none"), PATCH_LIMIT, Head::Mail).unwrap_err()
        ));
    }

    /// A file of the wrong kind is a defect told from its first bytes; so is one of 64 MiB
    /// that is no patch, whose rest is never read.
    #[test]
    fn a_file_of_another_kind_is_told_from_its_head() {
        let tmp = tempfile::TempDir::new().unwrap();
        let path = tmp.path().join("0001-x.patch");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(PATCH_LIMIT.bytes)
            .unwrap();
        let err = read_text(&path, PATCH_LIMIT, Head::Mail).unwrap_err();
        assert!(is_defect(&err));
        assert_eq!(
            format!("{err:#}"),
            format!("cannot read {}: it is not a mail as git format-patch writes one: it does not start with `From <commit> Mon Sep 17 00:00:00 2001`", path.display())
        );
        std::fs::write(&path, "From x\n").unwrap();
        let err = read_text(&path, PATCH_LIMIT, Head::Resolution).unwrap_err();
        assert!(
            format!("{err:#}").contains("it is not a recorded resolution"),
            "{err:#}"
        );
        std::fs::write(&path, "\n# a comment\nresolution conflict x\n").unwrap();
        read_text(&path, PATCH_LIMIT, Head::Resolution).unwrap();
        std::fs::write(&path, "").unwrap();
        read_text(&path, PATCH_LIMIT, Head::Mail).unwrap();
    }

    #[test]
    fn first_difference_names_the_line() {
        assert_eq!(
            first_difference("a\nb\nc\n", "a\nB\nc\n"),
            Some((2, Some("b\n"), Some("B\n")))
        );
        assert_eq!(
            first_difference("a\n", "a\nb\n"),
            Some((2, None, Some("b\n")))
        );
        assert_eq!(first_difference("a\n", "a\n"), None);
    }

    #[test]
    fn a_defect_is_recognised_under_context() {
        let err = defect("does not apply").context("0001").context("check");
        assert!(is_defect(&err));
        assert!(!is_defect(&anyhow::anyhow!("io").context("x")));
    }
}
