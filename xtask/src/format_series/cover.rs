//! The cover letter (`[PATCH vN 0/M]`), as glibc contributors write one: what the series
//! does and why in a few paragraphs, the decision a reviewer will ask about first (where in
//! the search order), the new public interface named as such, a testing statement of a few
//! plain lines ([`super::testing`]), from v2 on what changed since the previous version, then
//! what `git format-patch --cover-letter` adds: the shortlog, the diffstat, and the range diff
//! against the previous version.

use std::fmt::Write;

use anyhow::{Context, Result};
use git2::{Oid, Repository};

use super::base::Moved;
use super::testing::{fill, WIDTH};
use super::Request;
use crate::series::mail::{content_headers, file_stats, header_name};
use crate::series::{diffstat, mail_date, TRAILER};

const SUBJECT: &str = "elf: Add LD_FALLBACK_PATH, searched after every other directory";

/// What the series does and why, paragraph by paragraph (each filled to [`WIDTH`]): the
/// problem, why a list searched last, the alternatives weighed, prior art, the interface.
/// docs/upstream.md ("Questions a reviewer is likely to ask") holds the longer answers and
/// their sources. No count of patches or tests here: those come from the series.
const WHAT_AND_WHY: &[&str] = &[
    "This series adds LD_FALLBACK_PATH, a list of directories that the dynamic linker searches for a shared object after every other place: after DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache and the default directories.  The new ld.so option --fallback-path sets the list for one invocation and overrides the variable, as --library-path does for LD_LIBRARY_PATH.",
    "The problem: on NVIDIA Jetson boards, a program built by a distribution with its own glibc (NixOS) finds a newer compatibility libcuda.so.1 through its DT_RUNPATH, and that library then needs helper libraries (libnvrm_gpu.so, libnvrm_mem.so) that exist only in the board's driver directory, next to an older libcuda.so.1: LD_LIBRARY_PATH would put the old driver in front of the new one, and without the directory the helpers are not found.",
    "Why last: a program of such a distribution has its own glibc in its default directory.  A host directory searched before it would replace libm.so.6, libnss_*.so.2 and the rest with copies built against another glibc.  Searched after every other place, the directory supplies only what is found nowhere else, which is all the case needs; replacing a library that is found is what LD_LIBRARY_PATH and LD_PRELOAD already do.  For the same reason the list is still searched for objects linked with -z nodefaultlib and under ld.so --inhibit-cache.",
    "Alternatives weighed.  A tunable, in GLIBC_TUNABLES or in a tunables file read system-wide: the loader's search lists are LD_* variables with an ld.so option, a directory list cannot be a tunable's value (tunables are separated by ':'), tunables are documented as no stable interface, and a system-wide setting reaches every program of the machine, where the list is meant for one environment.",
    "An LD_AUDIT module's la_objsearch would be the alternative without a change to the loader: it can only rename a candidate the loader is about to try, so it cannot come after the default directories, the loaded object is named after the candidate it replaced, -z nodefaultlib objects and static programs' dlopen are out of its reach, and the module brings a second libc into every process.",
    "Editing DT_RUNPATH (patchelf): the lookup that fails is made by a vendor library and by programs the distribution did not build, the driver directory differs from host to host, and DT_RUNPATH is searched before the default directories.  ld.so.conf or an ldconfig cache entry: ld.so.cache is searched before the default directories, and it is one per system, written by root, where the need is per program or environment.",
    "Prior art: macOS's dyld has DYLD_FALLBACK_LIBRARY_PATH, a list searched when a library is not found at its install path (dyld(1)).  An earlier proposal of the same variable for nixpkgs' glibc searched the list just before the default directories, to override system libraries without a chroot; this series keeps to supplying what is missing, for the reason above, and adds no audit flag.",
    "Only absolute directories are searched: an empty or relative entry (after $ORIGIN, $LIB and $PLATFORM expansion) is ignored, because a list meant for system integration must not depend on the working directory.  In secure mode the variable is ignored and removed from the environment (it is in UNSECURE_ENVVARS), for dynamic and static programs.",
    "LD_FALLBACK_PATH and the ld.so option --fallback-path are new public interface, documented in NEWS and in the manual (the last patch).  No symbol, type or constant is added: LD_DEBUG=libs labels the new search \"LD_FALLBACK_PATH\" or \"--fallback-path\", ld.so --help lists the fallback directories after the system directories, dlinfo (RTLD_DI_SERINFO) reports them last, and an audit module's la_objsearch sees their candidates with the existing flag LA_SER_LIBPATH.",
];

/// One cover letter's inputs.
pub(super) struct Letter<'a> {
    pub request: &'a Request,
    /// The commit the series applies to: the release's, or the upstream base's.
    pub base: Oid,
    /// The version the NEWS entry is written for.
    pub development: &'a str,
    /// How the series came onto the upstream base, when it has one.
    pub moved: Option<&'a Moved>,
    /// The mails' commits: the series', then the manual's.
    pub patches: &'a [Oid],
    /// `PATCH vN 0/M`.
    pub tag: String,
}

impl Letter<'_> {
    /// The letter; `mails` are the patches' (file name, text), for the changes since the
    /// previous version.
    pub(super) fn write(&self, repo: &Repository, mails: &[(String, String)]) -> Result<String> {
        let request = self.request;
        let author = &request.author;
        let mut body = String::new();
        for paragraph in WHAT_AND_WHY {
            let _ = writeln!(body, "{}", fill(paragraph, WIDTH));
        }
        let (series_patches, manual_patch) = self.patches.split_at(self.patches.len() - 1);
        let _ = writeln!(body, "{}", fill(&self.applies_to(), WIDTH));
        if let (Some(base), Some(moved)) = (&request.base, self.moved) {
            let _ = writeln!(
                body,
                "{}",
                fill(
                    &format!(
                        "The series was moved onto {} from the glibc {} series with a 3-way merge{}.  {}  What ran on the releases:",
                        base.name,
                        moved.from,
                        match moved.dropped.len() {
                            0 => ", without a conflict".to_string(),
                            n => format!(
                                ", without a conflict ({n} patches the base already has dropped: {})",
                                moved.dropped.join(", ")
                            ),
                        },
                        match &request.base_run {
                            Some(run) => run.sentence(base),
                            None => format!("It was not built or tested on {}.", base.name),
                        }
                    ),
                    WIDTH
                )
            );
        }
        match &request.testing {
            Some(statement) => body.push_str(statement),
            None => body.push_str("Testing: not stated (no support record was given).\n\n"),
        }
        if let Some(previous) = &request.previous {
            let _ = writeln!(body, "Changes since v{}:", request.version - 1);
            body.push_str(&changes(previous, mails));
            body.push('\n');
        }
        let _ = writeln!(body, "{} ({}):", author.name, self.patches.len());
        for id in self.patches {
            let _ = writeln!(body, "  {}", repo.find_commit(*id)?.summary().unwrap_or(""));
        }
        // The diffstat of every patch together: the series' files, then the manual's.
        let last_of_series =
            repo.find_commit(*series_patches.last().context("an empty series")?)?;
        let mut stats = file_stats(&repo.diff_tree_to_tree(
            Some(&repo.find_commit(self.base)?.tree()?),
            Some(&last_of_series.tree()?),
            None,
        )?)?;
        let manual = repo.find_commit(manual_patch[0])?;
        stats.extend(file_stats(&repo.diff_tree_to_tree(
            Some(&manual.parent(0)?.tree()?),
            Some(&manual.tree()?),
            None,
        )?)?);
        // In path order, as one diff of the whole would list them.
        stats.sort_by(|a, b| a.path.cmp(&b.path));
        let _ = write!(body, "\n{}\n", diffstat::render(&stats, 72));
        if let Some(previous) = &request.previous {
            let _ = writeln!(body, "Range-diff against v{}:", request.version - 1);
            body.push_str(&range_diff(previous, mails));
        }
        // As `git format-patch --base` writes it: what b4 and the CI bots apply the series to.
        if request.base.is_some() {
            let _ = write!(body, "\nbase-commit: {}\n", self.base);
        }
        let when = last_of_series.author().when();
        Ok(format!(
            "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: {} <{}>\nDate: {}\nSubject: [{}] {SUBJECT}\n{}\n{body}{TRAILER}",
            header_name(&author.name),
            author.email,
            mail_date::format(when),
            self.tag,
            content_headers(&body),
        ))
    }
}

impl Letter<'_> {
    /// What the patches apply to, and where the NEWS entry and the manual's change go.
    fn applies_to(&self) -> String {
        let request = self.request;
        let series = self.patches.len() - 1;
        let patches = match series {
            1 => "Patch 1 applies".to_string(),
            2 => "Patches 1 and 2 apply".to_string(),
            n => format!("Patches 1 to {n} apply"),
        };
        match &request.base {
            Some(base) => format!(
                "The series applies to {} of upstream glibc (commit {}, the base-commit below); the NEWS entry is under Version {}, the version in development there.  Patch {}, the manual's, changes {PATH} at that commit; the release builds the testing below describes were made without the manual.",
                base.name,
                self.base,
                self.development,
                self.patches.len(),
                PATH = "manual/dynlink.texi",
            ),
            None => format!(
                "{patches} to the glibc-{} release; the NEWS entry is written for {}.  Patch {}, the manual's, applies to {}.",
                request.release,
                self.development,
                self.patches.len(),
                request.manual.source
            ),
        }
    }
}

/// The subject of a mail without its `[PATCH ...]` tag: what identifies a patch across
/// versions.
pub(super) fn subject(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("Subject: "))
        .map(|s| s.split_once("] ").map_or(s, |(_, rest)| rest).to_string())
        .unwrap_or_default()
}

/// The parts of a normalized mail a reviewer tells apart: the message, and each file's diff.
fn parts(normalized: &str) -> Vec<(String, String)> {
    let (message, diff) = normalized.split_once("\n---\n").unwrap_or((normalized, ""));
    let message = message
        .lines()
        .filter(|l| !l.starts_with("Date: "))
        .collect::<Vec<_>>()
        .join("\n");
    let mut parts = vec![("the commit message".to_string(), message)];
    let mut current: Option<(String, String)> = None;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            parts.extend(current.take());
            let path = rest.split_once(" b/").map_or(rest, |(a, _)| a);
            current = Some((path.to_string(), String::new()));
        } else if let Some((_, text)) = &mut current {
            if line == "-- " {
                break;
            }
            text.push_str(line);
            text.push('\n');
        }
    }
    parts.extend(current);
    parts
}

/// Per patch of the new version, one line: new, unchanged, or which of its parts changed;
/// then the patches of the previous version that are gone.
fn changes(previous: &[(String, String)], current: &[(String, String)]) -> String {
    use crate::rebase::range_diff::normalize;
    let mut out = String::new();
    let patches = |mails: &'_ [(String, String)]| -> Vec<String> {
        mails
            .iter()
            .filter(|(n, _)| !n.contains("cover-letter"))
            .map(|(_, text)| text.clone())
            .collect()
    };
    let previous_mails = previous;
    let (previous, current) = (patches(previous), patches(current));
    for (i, text) in current.iter().enumerate() {
        let title = subject(text);
        let line = match previous.iter().find(|old| subject(old) == title) {
            None => "new".to_string(),
            Some(old) => {
                let (before, after) = (parts(&normalize(old)), parts(&normalize(text)));
                let mut changed: Vec<&str> = after
                    .iter()
                    .filter(|part| !before.contains(part))
                    .map(|(name, _)| name.as_str())
                    .collect();
                changed.extend(
                    before
                        .iter()
                        .filter(|(name, _)| !after.iter().any(|(n, _)| n == name))
                        .map(|(name, _)| name.as_str()),
                );
                if changed.is_empty() {
                    "unchanged".to_string()
                } else {
                    format!("changed: {}", changed.join(", "))
                }
            }
        };
        let _ = writeln!(out, "- {}/{} {title}: {line}", i + 1, current.len());
    }
    for (name, old) in previous_mails
        .iter()
        .filter(|(n, _)| !n.contains("cover-letter"))
    {
        if !current.iter().any(|text| subject(text) == subject(old)) {
            // A mail is named by its subject; one without (read elsewhere than by the
            // command, which refuses it) by its file, never by nothing.
            let title = Some(subject(old))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| name.clone());
            let _ = writeln!(out, "- dropped: {title}");
        }
    }
    out
}

/// Per changed patch, the diff of its normalized text against the previous version's.
fn range_diff(previous: &[(String, String)], current: &[(String, String)]) -> String {
    use crate::rebase::range_diff::normalize;
    let mut out = String::new();
    for (name, text) in current.iter().filter(|(n, _)| !n.contains("cover-letter")) {
        let Some((_, old)) = previous
            .iter()
            .filter(|(n, _)| !n.contains("cover-letter"))
            .find(|(_, old)| subject(old) == subject(text))
        else {
            let _ = writeln!(out, "  {name}: new");
            continue;
        };
        let (a, b) = (normalize(old), normalize(text));
        if a == b {
            let _ = writeln!(out, "  {name}: unchanged");
            continue;
        }
        let _ = writeln!(out, "  {name}: changed");
        let diff = similar::TextDiff::from_lines(&a, &b);
        for line in diff.unified_diff().context_radius(2).to_string().lines() {
            let _ = writeln!(out, "      {line}");
        }
    }
    out
}
