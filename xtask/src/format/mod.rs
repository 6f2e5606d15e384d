//! `cargo xtask format-series`: the series as a patch set to mail to libc-alpha.
//!
//! What changes from `patches/<X.Y>/`: the author is a real person (the series' placeholder
//! cannot be sent), every message ends in the author's `Signed-off-by` (glibc takes DCO
//! contributions), the subjects carry `[PATCH vN m/n]`, the NEWS entry moves into a section
//! of its own for the development version (a contribution targets the next release, not a
//! released one), and a cover letter says why, how it was tested, and, from v2 on, what
//! changed since the previous version (a range diff).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository, Signature};

use crate::cli::{self, Env, OneRelease};
use crate::merge::news;
use crate::series::mail::{file_stats, format_patch_tagged, split_message};
use crate::series::{diffstat, mail_date, slug, Series, Workspace, TRAILER};
use crate::util::{durable, paths, staging};
use model::Release;

/// The placeholder author the series in `patches/` carry.
const PLACEHOLDER_DOMAIN: &str = "example.invalid";

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The series to format.
    #[command(flatten)]
    pub release: OneRelease,
    /// The version of the patch set: 1 for the first mail, 2 after the first review, ...
    #[arg(long, default_value_t = 1, value_parser = cli::at_least_one::<u32>)]
    pub version: u32,
    /// Write a cover letter (`0000-cover-letter.patch`) too.
    #[arg(long)]
    pub cover_letter: bool,
    /// Who sends it, `Name <email>` [default: git's user.name and user.email].
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,
    /// For v2 and later: the directory of the previous version's patches, for the range diff.
    #[arg(long, value_name = "DIR")]
    pub previous: Option<PathBuf>,
    /// Where to write the patches [default: target/format-series/v<N>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let ws = Workspace::open(env)?;
        let release = self.release.release;
        let author = match &self.author {
            Some(text) => Author::parse(text)?,
            None => Author::from_git_config()?,
        };
        let previous = match (&self.previous, self.version) {
            (Some(dir), _) => Some(read_patches(dir)?),
            (None, 1) => None,
            (None, v) => bail!(
                "v{v} needs the previous version's patches for the range diff: pass --previous DIR"
            ),
        };
        let support = std::fs::read_to_string(paths::project_root().join("docs/support.md")).ok();
        let request = Request {
            release,
            version: self.version,
            cover_letter: self.cover_letter,
            author,
            previous,
            support,
        };
        let out = self.out.unwrap_or_else(|| {
            paths::project_root()
                .join("target/format-series")
                .join(format!("v{}", self.version))
        });
        // Before any work: a directory that cannot take the mails is refused first.
        let target = OutDir::examine(&out, self.version, self.previous.as_deref())?;
        let mails = format(&ws, &request)?;
        target.write(self.version, release, &mails)?;
        for (name, _) in &mails {
            outln!("{}", out.join(name).display());
        }
        Ok(())
    }
}

/// A sender: `Name <email>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
}

impl Author {
    pub fn parse(text: &str) -> Result<Author> {
        // Quoted as Rust quotes strings: a newline in it must not break the error's one line.
        let not = |why: &str| anyhow::anyhow!("{text:?} is not `Name <email>`{why}");
        let Some((name, email)) = text
            .trim()
            .strip_suffix('>')
            .and_then(|t| t.split_once(" <"))
        else {
            return Err(not(""));
        };
        let author = Author {
            name: name.trim().to_string(),
            email: email.trim().to_string(),
        };
        if author.name.is_empty() || !author.email.contains('@') {
            return Err(not(""));
        }
        // What a mail header and libgit2's signature cannot hold: a line break or another
        // control character anywhere, an angle bracket in the name, a space in the address.
        if text.trim().chars().any(char::is_control)
            || author.name.contains(['<', '>'])
            || author.email.contains(['<', '>', ' '])
        {
            return Err(not(
                ": the name and the address must be one line, without control characters, the name without `<` or `>`, the address without spaces",
            ));
        }
        if author.email.ends_with(PLACEHOLDER_DOMAIN) || !author.name.is_ascii() {
            bail!("`{text}` cannot be sent: the address is a placeholder or the name is not ASCII");
        }
        Ok(author)
    }

    fn from_git_config() -> Result<Author> {
        let config = git2::Config::open_default().context("cannot read git's configuration")?;
        let get = |key: &str| config.get_string(key).ok();
        match (get("user.name"), get("user.email")) {
            (Some(name), Some(email)) => Author::parse(&format!("{name} <{email}>")),
            _ => bail!(
                "who sends the series? pass --author 'Name <email>', or set git's user.name and user.email; the series' own author ({PLACEHOLDER_DOMAIN}) cannot be sent"
            ),
        }
    }

    fn sign_off(&self) -> String {
        format!("Signed-off-by: {} <{}>", self.name, self.email)
    }
}

/// Everything one `format-series` run needs.
pub struct Request {
    pub release: Release,
    pub version: u32,
    pub cover_letter: bool,
    pub author: Author,
    /// The previous version's mails (file name, text), for the range diff.
    pub previous: Option<Vec<(String, String)>>,
    /// docs/support.md, whose table goes into the cover letter.
    pub support: Option<String>,
}

/// The mails, in order: (file name, text).
pub fn format(ws: &Workspace, request: &Request) -> Result<Vec<(String, String)>> {
    let release = request.release;
    // A series --check refuses is not mailed (a patch cut short would go out short).
    let series = crate::rebase::series_check::passing_series(ws, release)?;
    let (base, commits) = ws.commit_series(&series)?;
    let repo = ws.store.repo();
    let development = next_version(release);
    let rewritten = rewrite(repo, base, &commits, &request.author, &development)?;
    let total = rewritten.len();
    let tag = |n: usize| match request.version {
        1 => format!("PATCH {n}/{total}"),
        v => format!("PATCH v{v} {n}/{total}"),
    };
    let prefix = match request.version {
        1 => String::new(),
        v => format!("v{v}-"),
    };
    let mut mails = Vec::new();
    for (i, id) in rewritten.iter().enumerate() {
        let commit = repo.find_commit(*id)?;
        let text = format_patch_tagged(repo, &commit, &tag(i + 1))?;
        let name = format!(
            "{prefix}{:04}-{}.patch",
            i + 1,
            slug(commit.summary().unwrap_or("patch"))
        );
        mails.push((name, text));
    }
    if request.cover_letter {
        let cover = cover_letter(repo, base, &rewritten, request, &series, &tag(0), &mails)?;
        mails.insert(0, (format!("{prefix}0000-cover-letter.patch"), cover));
    }
    Ok(mails)
}

/// `2.44` -> `2.45`: the version under development after a release.
fn next_version(release: Release) -> String {
    let (major, minor) = release.version().split_once('.').expect("releases are X.Y");
    format!(
        "{major}.{}",
        minor.parse::<u32>().expect("a numeric minor") + 1
    )
}

/// The series' commits again, by `author`, signed off, with NEWS's entry in a section of its
/// own for the development version.
fn rewrite(
    repo: &Repository,
    base: Oid,
    commits: &[Oid],
    author: &Author,
    development: &str,
) -> Result<Vec<Oid>> {
    let mut parent = repo.find_commit(base)?;
    let base_tree = parent.tree()?;
    let mut out = Vec::new();
    for id in commits {
        let commit = repo.find_commit(*id)?;
        let mut tree = dco_copyright(repo, &base_tree, &commit.tree()?)?;
        let old_parent_tree = commit.parent(0)?.tree()?;
        let news_of = |tree: &git2::Tree<'_>| -> Result<Option<String>> {
            let Ok(entry) = tree.get_path(Path::new(news::PATH)) else {
                return Ok(None);
            };
            let blob = repo.find_blob(entry.id())?;
            Ok(Some(
                String::from_utf8(blob.content().to_vec()).context("NEWS is not UTF-8")?,
            ))
        };
        // NEWS as the rewritten parent has it, plus this commit's entry (if it adds one) in
        // the development version's section; a commit that leaves NEWS alone keeps the
        // parent's, or the original NEWS would come back in its diff.
        if let (Some(before), Some(after)) = (news_of(&old_parent_tree)?, news_of(&tree)?) {
            let parent_news = news_of(&parent.tree()?)?.unwrap_or_default();
            let news = match news::entry_added(&before, &after)? {
                Some(entry) => news::place_in_new_version(&parent_news, development, &entry)?,
                None => parent_news,
            };
            let mut update = git2::build::TreeUpdateBuilder::new();
            update.upsert(
                news::PATH,
                repo.blob(news.as_bytes())?,
                git2::FileMode::Blob,
            );
            tree = repo.find_tree(update.create_updated(repo, &tree)?)?;
        }
        let message = commit.message().context("a commit message is not UTF-8")?;
        let (subject, body) = split_message(message);
        let sign_off = author.sign_off();
        let message = if body.contains(&sign_off) {
            message.to_string()
        } else if body.is_empty() {
            format!("{subject}\n\n{sign_off}\n")
        } else {
            format!("{subject}\n\n{body}\n{sign_off}\n")
        };
        let signature = Signature::new(&author.name, &author.email, &commit.author().when())?;
        let new = repo.commit(None, &signature, &signature, &message, &tree, &[&parent])?;
        parent = repo.find_commit(new)?;
        out.push(new);
    }
    Ok(out)
}

/// The carried series' new files keep the FSF copyright line glibc's template has; a DCO
/// contribution (one with `Signed-off-by`, no copyright assignment) says instead
/// "Copyright The GNU Toolchain Authors." (glibc's contribution checklist). Only files the
/// series adds are touched: upstream's own files keep their lines.
fn dco_copyright<'r>(
    repo: &'r Repository,
    base: &git2::Tree<'_>,
    tree: &git2::Tree<'r>,
) -> Result<git2::Tree<'r>> {
    let diff = repo
        .diff_tree_to_tree(Some(base), Some(tree), None)
        .context("cannot compare the series with its release")?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    let mut changed = false;
    for delta in diff.deltas() {
        if delta.status() != git2::Delta::Added {
            continue;
        }
        let Some(path) = delta.new_file().path() else {
            continue;
        };
        let blob = repo.find_blob(delta.new_file().id())?;
        let Ok(text) = std::str::from_utf8(blob.content()) else {
            continue;
        };
        let Some(new_text) = dco_copyright_line(text) else {
            continue;
        };
        let mode = match delta.new_file().mode() {
            git2::FileMode::BlobExecutable => git2::FileMode::BlobExecutable,
            _ => git2::FileMode::Blob,
        };
        update.upsert(path, repo.blob(new_text.as_bytes())?, mode);
        changed = true;
    }
    if !changed {
        return Ok(tree.clone());
    }
    let id = update
        .create_updated(repo, tree)
        .context("cannot write the series' tree with DCO copyright lines")?;
    Ok(repo.find_tree(id)?)
}

/// `text` with its `Copyright (C) <years> Free Software Foundation, Inc.` line in the DCO
/// form, or `None` when it has no such line.
fn dco_copyright_line(text: &str) -> Option<String> {
    let mut found = false;
    let lines: Vec<String> = text
        .split_inclusive('\n')
        .map(|line| {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            let fsf = body
                .strip_prefix("Copyright (C) ")
                .and_then(|rest| {
                    rest.trim_end()
                        .strip_suffix(" Free Software Foundation, Inc.")
                })
                .is_some_and(|years| years.chars().all(|c| c.is_ascii_digit() || c == '-'));
            if fsf {
                found = true;
                let end = if line.ends_with('\n') { "\n" } else { "" };
                format!("{indent}Copyright The GNU Toolchain Authors.{end}")
            } else {
                line.to_string()
            }
        })
        .collect();
    found.then(|| lines.concat())
}

fn cover_letter(
    repo: &Repository,
    base: Oid,
    commits: &[Oid],
    request: &Request,
    series: &Series,
    tag: &str,
    mails: &[(String, String)],
) -> Result<String> {
    let author = &request.author;
    let last = repo.find_commit(*commits.last().context("an empty series")?)?;
    let when = last.author().when();
    let mut text = format!(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: {} <{}>\nDate: {}\nSubject: [{tag}] elf: Add LD_FALLBACK_PATH, searched after every other directory\n\n",
        author.name,
        author.email,
        mail_date::format(when)
    );
    text.push_str(COVER_TEXT);
    let _ = writeln!(
        text,
        "The patches apply to glibc {} (tree {});\nthe NEWS entry is written for the {} development version.\n",
        request.release,
        series.base_tree,
        next_version(request.release)
    );
    match &request.support {
        Some(page) => {
            text.push_str("Testing (glibc's own tests and a resolution matrix, per release and target;\nx86_64 natively, aarch64 under QEMU user mode):\n\n");
            for line in page.lines().filter(|l| l.starts_with('|')) {
                let _ = writeln!(text, "  {line}");
                if line.contains("## Series") {
                    break;
                }
            }
            text.push('\n');
        }
        None => {
            text.push_str("Testing: see the project's docs/support.md (not generated here).\n\n")
        }
    }
    if let Some(previous) = &request.previous {
        let _ = writeln!(text, "Changes since v{}:\n", request.version - 1);
        text.push_str(&range_diff(previous, mails));
        text.push('\n');
    }
    let _ = writeln!(text, "{} ({}):", author.name, commits.len());
    for id in commits {
        let _ = writeln!(text, "  {}", repo.find_commit(*id)?.summary().unwrap_or(""));
    }
    let mut options = git2::DiffOptions::new();
    let diff = repo.diff_tree_to_tree(
        Some(&repo.find_commit(base)?.tree()?),
        Some(&last.tree()?),
        Some(&mut options),
    )?;
    let _ = write!(text, "\n{}\n", diffstat::render(&file_stats(&diff)?, 72));
    text.push_str(TRAILER);
    Ok(text)
}

const COVER_TEXT: &str = "\
On NixOS and other systems whose glibc does not live in the FHS directories, a
program sometimes needs a few libraries from a host directory, and nothing else
from there.  The case that prompted this: CUDA on NVIDIA Jetson boards.  The
board's driver directory holds an old libcuda.so.1 and the helper libraries it
and a newer compatibility libcuda.so.1 need (libnvrm_gpu.so, libnvrm_mem.so).
The newer copy comes first through the program's DT_RUNPATH.  LD_LIBRARY_PATH
at the driver directory would shadow it, since LD_LIBRARY_PATH is searched
before DT_RUNPATH; leaving the directory out makes the helpers unfindable.

LD_FALLBACK_PATH is a list of directories, with LD_LIBRARY_PATH's syntax,
searched after everything else: after ld.so.cache and the default directories,
also for -z nodefaultlib objects and with --inhibit-cache.  So a fallback
directory only supplies what is found nowhere else.  It is searched last rather
than before the default directories because on such systems the default
directory is glibc's own library directory: a host directory in front of it
would shadow libm.so.6, libnss_*.so.2 and the rest with another glibc's copies.
ld.so --fallback-path sets the list for one run.  In secure mode the variable
is ignored and removed from the environment.  LD_DEBUG=libs, ld.so --help,
dlinfo (RTLD_DI_SERINFO) and la_objsearch report the fallback directories; no
new public interface is added.

";

/// Per patch of the new version: unchanged, changed (with the content diff) or new, against
/// the previous version's mails, compared without what moves with every formatting.
fn range_diff(previous: &[(String, String)], current: &[(String, String)]) -> String {
    use crate::rebase::range_diff::normalize;
    let mut out = String::new();
    let subject = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("Subject: "))
            .map(|s| s.split_once("] ").map_or(s, |(_, rest)| rest).to_string())
            .unwrap_or_default()
    };
    for (name, text) in current.iter().filter(|(n, _)| !n.contains("cover-letter")) {
        let title = subject(text);
        match previous.iter().find(|(_, old)| subject(old) == title) {
            None => {
                let _ = writeln!(out, "  {name}: new");
            }
            Some((_, old)) => {
                let (a, b) = (normalize(old), normalize(text));
                if a == b {
                    let _ = writeln!(out, "  {name}: unchanged");
                } else {
                    let _ = writeln!(out, "  {name}: changed");
                    let diff = similar::TextDiff::from_lines(&a, &b);
                    for line in diff.unified_diff().context_radius(2).to_string().lines() {
                        let _ = writeln!(out, "      {line}");
                    }
                }
            }
        }
    }
    for (name, old) in previous.iter().filter(|(n, _)| !n.contains("cover-letter")) {
        if !current
            .iter()
            .any(|(_, text)| subject(text) == subject(old))
        {
            let _ = writeln!(out, "  {name}: dropped");
        }
    }
    out
}

fn read_patches(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut patches = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "patch") {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            patches.push((name, text));
        }
    }
    patches.sort();
    if patches.is_empty() {
        bail!("{} holds no .patch files", dir.display());
    }
    Ok(patches)
}

/// The file format-series leaves in each directory it writes: the version and the mails it
/// wrote there, so that a later run replaces its own output and nothing else.
const OUTPUT_MARKER: &str = ".format-series";

/// Where the mails go, as found before writing: `--out` may name any directory, and what it
/// holds that format-series did not write is never deleted.
struct OutDir {
    path: PathBuf,
    state: OutState,
}

enum OutState {
    /// Nothing there: the mails are staged beside it and renamed into place.
    Absent,
    /// An empty directory (the user's, perhaps their shell's working directory): written in
    /// place, the marker first, so that an interrupted run leaves a directory the next run
    /// recognises as its own.
    Empty,
    /// A previous output of the same version, nothing else: replaced whole, in one swap.
    Previous,
}

impl OutDir {
    /// Refuses a directory that holds anything but a previous output of this `version`, and
    /// the directory of the `previous` version (the range diff's input).
    fn examine(dir: &Path, version: u32, previous: Option<&Path>) -> Result<OutDir> {
        let path = match dir.canonicalize() {
            Ok(path) => path,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::path::absolute(dir)
                .with_context(|| format!("cannot resolve {}", dir.display()))?,
            Err(e) => return Err(e).with_context(|| format!("cannot resolve {}", dir.display())),
        };
        if let Some(previous) = previous {
            if previous.canonicalize().is_ok_and(|p| p == path) {
                bail!(
                    "--out {} is the --previous directory: the v{version} mails would replace the ones they are compared with; write them elsewhere (the default is target/format-series/v{version})",
                    dir.display()
                );
            }
        }
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(OutDir {
                    path,
                    state: OutState::Absent,
                })
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                bail!("--out {} is not a directory", dir.display())
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        if names.is_empty() {
            return Ok(OutDir {
                path,
                state: OutState::Empty,
            });
        }
        let refuse = |why: String| {
            anyhow::anyhow!(
                "--out {}: {why}; nothing was written or deleted. Name a new or empty directory, or move those files away",
                dir.display()
            )
        };
        let marker = match std::fs::read_to_string(path.join(OUTPUT_MARKER)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(refuse(format!(
                    "the directory is not empty and is not an output of format-series (it has no {OUTPUT_MARKER}): it holds {}",
                    crate::util::text::listed(&names)
                )))
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot read {}", path.join(OUTPUT_MARKER).display()))
            }
        };
        let (written_version, written) = parse_marker(&marker);
        if written_version != Some(version) {
            let held = written_version.map_or("another version".to_string(), |v| format!("v{v}"));
            return Err(refuse(format!(
                "it holds {held} of the patch set, which a v{version} does not replace"
            )));
        }
        let foreign: Vec<String> = names
            .into_iter()
            .filter(|n| n != OUTPUT_MARKER && !written.contains(n))
            .collect();
        if !foreign.is_empty() {
            return Err(refuse(format!(
                "besides the mails format-series wrote there, it holds {}",
                crate::util::text::listed(&foreign)
            )));
        }
        Ok(OutDir {
            path,
            state: OutState::Previous,
        })
    }

    /// Writes the mails and the marker (see [`OutState`]).
    fn write(&self, version: u32, release: Release, mails: &[(String, String)]) -> Result<()> {
        let mut marker = format!(
            "# Written by `cargo xtask format-series`: a later run of the same version replaces this directory.\nversion {version}\nrelease {release}\n"
        );
        for (name, _) in mails {
            let _ = writeln!(marker, "mail {name}");
        }
        let write_into = |dir: &Path| -> Result<()> {
            durable::write_synced(&dir.join(OUTPUT_MARKER), marker.as_bytes())?;
            for (name, text) in mails {
                durable::write_synced(&dir.join(name), text.as_bytes())?;
            }
            Ok(())
        };
        match self.state {
            OutState::Empty => write_into(&self.path),
            OutState::Absent | OutState::Previous => {
                let parent = self
                    .path
                    .parent()
                    .with_context(|| format!("{} has no parent", self.path.display()))?;
                let staged = staging::tempdir_in(parent, "format-series")?;
                write_into(staged.path())?;
                durable::replace_dir(&staged.keep(), &self.path)
            }
        }
    }
}

/// The version and the mails a marker names.
fn parse_marker(text: &str) -> (Option<u32>, Vec<String>) {
    let mut version = None;
    let mut mails = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("version ") {
            version = v.trim().parse().ok();
        } else if let Some(name) = line.strip_prefix("mail ") {
            mails.push(name.to_string());
        }
    }
    (version, mails)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fsf_line_takes_the_dco_form() {
        let text = "/* Test.\n   Copyright (C) 2026 Free Software Foundation, Inc.\n   This file is part of the GNU C Library.\n";
        assert_eq!(
            dco_copyright_line(text).unwrap(),
            "/* Test.\n   Copyright The GNU Toolchain Authors.\n   This file is part of the GNU C Library.\n"
        );
        assert_eq!(
            dco_copyright_line("   Copyright (C) 1995-2026 Free Software Foundation, Inc.\n")
                .unwrap(),
            "   Copyright The GNU Toolchain Authors.\n"
        );
        assert_eq!(
            dco_copyright_line("Copyright (C) 2026 Someone Else\n"),
            None
        );
        assert_eq!(dco_copyright_line("int main;\n"), None);
    }

    #[test]
    fn placeholders_and_malformed_authors_are_refused() {
        assert!(Author::parse("A Person <a@example.org>").is_ok());
        assert!(Author::parse("ld-fallback developers <ld-fallback@example.invalid>").is_err());
        assert!(Author::parse("no address").is_err());
        assert!(Author::parse("<a@b>").is_err());
    }

    #[test]
    fn an_author_with_a_newline_is_refused_by_name_not_by_libgit2() {
        for text in [
            "A\nB <a@example.org>",
            "A B <a@exa\nmple.org>",
            "A\tB <a@example.org>",
            "A <B <a@example.org>",
            "A B <a b@example.org>",
        ] {
            let err = format!("{:#}", Author::parse(text).unwrap_err());
            assert!(err.contains("is not `Name <email>`"), "{text:?}: {err}");
            assert!(
                !err.contains('\n'),
                "{text:?}: the message is one line: {err}"
            );
        }
    }

    #[test]
    fn the_development_version_follows_the_release() {
        assert_eq!(next_version(Release::parse("2.44").unwrap()), "2.45");
        assert_eq!(next_version(Release::parse("2.36").unwrap()), "2.37");
    }
}
