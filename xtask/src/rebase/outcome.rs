//! How a rebase ended, as data: written (where, with which records), or stopped (at which
//! patch, why: the conflicting files and their hunks, or the failed check's report), and
//! what the report tells the user to run. The renderings, the text `rebase-glibc` and
//! `update-release` print, are the functions below, apart from the data.

use std::fmt::Write;
use std::path::PathBuf;

use model::Release;

use super::range_diff::{Change, RangeDiff};

/// How a rebase ended.
pub enum RebaseOutcome {
    /// Every patch went through: the series (and its records) are written.
    Written(Written),
    /// Stopped at a patch, with its state saved and a work tree to fix.
    Stopped(StopReport),
}

/// A written series.
pub struct Written {
    /// What `--continue` noted while taking the work tree.
    pub notes: Vec<String>,
    /// What happened to each patch, as the range diff tells it (`range_diff::summarize`).
    pub summary: RangeDiff,
    /// The recorded resolutions written with it, when they changed.
    pub records: Option<RecordsWritten>,
    /// Where the series went.
    pub series_dir: PathBuf,
}

/// The recorded resolutions a rebase wrote.
pub struct RecordsWritten {
    pub dir: PathBuf,
    pub count: usize,
    /// Records of a rebase from the same release that this one no longer met, dropped.
    pub stale: usize,
    pub from: Release,
}

/// Where and why a rebase stopped, and how to go on.
pub struct StopReport {
    pub onto: Release,
    /// What `--continue` noted while taking the work tree.
    pub notes: Vec<String>,
    /// The patches whose merge did something worth saying (a record replayed, a check
    /// passed, NEWS placed), with what: before the stop, in series order.
    pub so_far: Vec<(String, Vec<String>)>,
    /// The stopped patch: its number in the series (from 1), the series' length, its name.
    pub number: usize,
    pub total: usize,
    pub patch: String,
    pub why: StopWhy,
    /// The work tree to resolve or fix in.
    pub tree: PathBuf,
    /// The commands that go on or give up.
    pub resume: Resume,
    /// `patches/`, untouched by a stop.
    pub patches_dir: PathBuf,
}

/// Why a patch stopped the rebase.
pub enum StopWhy {
    /// It does not merge: the files no record resolved.
    Conflict(Vec<Conflict>),
    /// It merged, but the check after it failed: the check's report.
    Check(String),
}

/// One file that does not merge.
pub struct Conflict {
    pub path: String,
    /// Each conflict region, with its first line number (0: unknown).
    pub hunks: Vec<(usize, String)>,
    /// The file of a recorded resolution of this path for this patch, made for other text.
    pub stale_record: Option<PathBuf>,
}

/// The commands a report tells the user to go on with.
#[derive(Debug, Clone)]
pub struct Resume {
    pub continue_: String,
    pub abort: String,
}

impl Resume {
    pub(crate) fn rebase_glibc() -> Resume {
        Resume {
            continue_: "cargo xtask rebase-glibc --continue".into(),
            abort: "cargo xtask rebase-glibc --abort".into(),
        }
    }
}

impl RebaseOutcome {
    /// What the command prints (the summary on stdout, a stop's report on stderr).
    pub fn render(&self) -> String {
        match self {
            RebaseOutcome::Written(written) => written.render(),
            RebaseOutcome::Stopped(stop) => stop.render(),
        }
    }
}

impl Written {
    pub fn render(&self) -> String {
        let mut text = String::new();
        for note in &self.notes {
            let _ = writeln!(text, "note: {note}");
        }
        text.push_str(&self.summary.render());
        if let Some(records) = &self.records {
            let _ = writeln!(
                text,
                "wrote {} ({} recorded resolution(s){}): commit it with the series",
                records.dir.display(),
                records.count,
                if records.stale > 0 {
                    format!(
                        "; {} stale one(s) dropped: this rebase from glibc {} no longer meets them",
                        records.stale, records.from
                    )
                } else {
                    String::new()
                }
            );
        }
        let _ = writeln!(text, "wrote {}", self.series_dir.display());
        text
    }
}

impl RangeDiff {
    /// One line per patch, its notes under it, and the content diff under a changed one.
    pub fn render(&self) -> String {
        let mut out = format!(
            "rebased {} patch{} from glibc {} onto glibc {}:\n",
            self.count,
            if self.count == 1 { "" } else { "es" },
            self.from,
            self.onto
        );
        for patch in &self.patches {
            let (what, diff) = match &patch.change {
                Change::Dropped => (format!("dropped: already in glibc {}", self.onto), None),
                Change::Unchanged { now } => (format!("unchanged -> {now}"), None),
                Change::Moved { now, diff } => (
                    format!("unchanged, hunks now in other functions -> {now}"),
                    Some(diff),
                ),
                Change::Changed { now, diff } => (format!("changed -> {now}"), Some(diff)),
            };
            let _ = writeln!(out, "  {:<50} {what}", patch.name);
            for line in patch.notes.iter().chain(diff.into_iter().flatten()) {
                let _ = writeln!(out, "      {line}");
            }
        }
        out
    }
}

impl StopReport {
    pub fn is_conflict(&self) -> bool {
        matches!(self.why, StopWhy::Conflict(_))
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        for (patch, notes) in &self.so_far {
            let _ = writeln!(out, "  {patch}:");
            for note in notes {
                let _ = writeln!(out, "      {note}");
            }
        }
        let (onto, tree) = (self.onto, self.tree.display());
        let (number, total, patch) = (self.number, self.total, &self.patch);
        match &self.why {
            StopWhy::Conflict(files) => {
                let _ = writeln!(
                    out,
                    "patch {number}/{total} {patch} does not merge into glibc {onto}:"
                );
                for file in files {
                    let _ = writeln!(out, "  conflict in {}:", file.path);
                    for (line, hunk) in &file.hunks {
                        if *line > 0 {
                            let _ = writeln!(out, "    at line {line}:");
                        }
                        write_hunk(&mut out, hunk);
                    }
                    if let Some(record) = &file.stale_record {
                        let _ = writeln!(
                            out,
                            "    a recorded resolution of {} exists for this patch, but for other text (the series or the release changed since); \
                             it may help: {}",
                            file.path,
                            record.display()
                        );
                    }
                }
                let _ = write!(
                    out,
                    "The work tree {tree} holds glibc {onto} with the patches so far and conflict markers in the files above.\n\
                     Resolve them there (remove every marker; your resolution is recorded and replayed the next time), then run:\n    {}\n\
                     or give up with:\n    {}\n{} is untouched.\n",
                    self.resume.continue_,
                    self.resume.abort,
                    self.patches_dir.display()
                );
            }
            StopWhy::Check(failure) => {
                let _ = write!(
                    out,
                    "patch {number}/{total} {patch} applies to glibc {onto}, but the check after it fails:\n{failure}\n\
                     The work tree {tree} holds glibc {onto} with the patches so far and this one applied.\n\
                     Fix it there (the fix becomes part of {patch}, and is recorded and replayed the next time), then run:\n    {}\n\
                     (the checks run again on the fixed patch) or give up with:\n    {}\n{} is untouched.\n",
                    self.resume.continue_,
                    self.resume.abort,
                    self.patches_dir.display()
                );
            }
        }
        out
    }
}

/// Lines of one side of a conflict hunk shown before the rest is counted, not printed: a
/// release's NEWS section is a side of its own, and the work tree has it all anyway.
const SIDE_LINES: usize = 8;

fn write_hunk(out: &mut String, hunk: &str) {
    let mut shown = 0;
    let mut elided = 0;
    let flush = |out: &mut String, elided: &mut usize| {
        if *elided > 0 {
            let _ = writeln!(out, "      ... ({elided} more lines)");
            *elided = 0;
        }
    };
    for text in hunk.lines() {
        let marker = crate::series::markers::is_marker_line(text.as_bytes());
        if marker {
            flush(out, &mut elided);
            shown = 0;
        } else if shown == SIDE_LINES {
            elided += 1;
            continue;
        } else {
            shown += 1;
        }
        let _ = writeln!(out, "      {text}");
    }
    flush(out, &mut elided);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rebase::range_diff::PatchDiff;

    #[test]
    fn long_conflict_sides_are_counted_not_printed() {
        let ours: String = (0..20).map(|i| format!("ours {i}\n")).collect();
        let hunk = format!("<<<<<<< a\n{ours}=======\ntheirs\n>>>>>>> b\n");
        let mut out = String::new();
        write_hunk(&mut out, &hunk);
        assert!(
            out.contains("ours 7\n") && !out.contains("ours 8\n"),
            "{out}"
        );
        assert!(
            out.contains("... (12 more lines)\n      =======\n      theirs\n"),
            "{out}"
        );
    }

    /// A stop's report, rendered from its data alone: which patch, where, what to run.
    #[test]
    fn a_check_stop_renders_what_failed_and_how_to_go_on() {
        let stop = StopReport {
            onto: Release::parse("2.42").unwrap(),
            notes: vec!["took elf/x.c".into()],
            so_far: vec![("0001-a.patch".into(), vec!["resolved from record".into()])],
            number: 2,
            total: 3,
            patch: "0002-b.patch".into(),
            why: StopWhy::Check("exec `make` failed".into()),
            tree: PathBuf::from("/r/2.42/tree"),
            resume: Resume::rebase_glibc(),
            patches_dir: PathBuf::from("/p"),
        };
        assert!(!stop.is_conflict());
        assert_eq!(
            stop.render(),
            "note: took elf/x.c\n  0001-a.patch:\n      resolved from record\n\
             patch 2/3 0002-b.patch applies to glibc 2.42, but the check after it fails:\n\
             exec `make` failed\n\
             The work tree /r/2.42/tree holds glibc 2.42 with the patches so far and this one applied.\n\
             Fix it there (the fix becomes part of 0002-b.patch, and is recorded and replayed the next time), then run:\n    \
             cargo xtask rebase-glibc --continue\n\
             (the checks run again on the fixed patch) or give up with:\n    cargo xtask rebase-glibc --abort\n\
             /p is untouched.\n"
        );
    }

    /// The range diff as data, rendered whole: each kind of change, its notes, its diff.
    #[test]
    fn a_range_diff_renders_each_change_with_its_notes_and_diff() {
        let patch = |name: &str, change, notes: &[&str]| PatchDiff {
            name: name.into(),
            change,
            notes: notes.iter().map(|n| n.to_string()).collect(),
        };
        let diff = vec!["--- 2.41/0003-c.patch".to_string(), "+new".to_string()];
        let written = Written {
            notes: vec!["took NEWS".into()],
            summary: RangeDiff {
                from: Release::parse("2.41").unwrap(),
                onto: Release::parse("2.42").unwrap(),
                count: 4,
                patches: vec![
                    patch("0001-a.patch", Change::Dropped, &[]),
                    patch(
                        "0002-b.patch",
                        Change::Unchanged {
                            now: "0001-b.patch".into(),
                        },
                        &["NEWS: entry placed"],
                    ),
                    patch(
                        "0003-c.patch",
                        Change::Moved {
                            now: "0002-c.patch".into(),
                            diff: diff.clone(),
                        },
                        &[],
                    ),
                    patch(
                        "0004-d.patch",
                        Change::Changed {
                            now: "0003-d.patch".into(),
                            diff,
                        },
                        &["resolved from record"],
                    ),
                ],
            },
            records: None,
            series_dir: PathBuf::from("/p/2.42"),
        };
        assert_eq!(
            written.render(),
            "note: took NEWS\n\
             rebased 4 patches from glibc 2.41 onto glibc 2.42:\n  \
             0001-a.patch                                       dropped: already in glibc 2.42\n  \
             0002-b.patch                                       unchanged -> 0001-b.patch\n      \
             NEWS: entry placed\n  \
             0003-c.patch                                       unchanged, hunks now in other functions -> 0002-c.patch\n      \
             --- 2.41/0003-c.patch\n      \
             +new\n  \
             0004-d.patch                                       changed -> 0003-d.patch\n      \
             resolved from record\n      \
             --- 2.41/0003-c.patch\n      \
             +new\n\
             wrote /p/2.42\n"
        );
    }
}
