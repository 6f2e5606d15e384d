//! How a rebase ended, as data: written (where, with which records), or stopped (at which
//! patch, why: the conflicting files and their hunks, or the failed check's report), and
//! what the report tells the user to run. The renderings, the text `rebase-glibc` and
//! `update-release` print, are the functions below, apart from the data.

use std::fmt::Write;
use std::path::PathBuf;

use model::Release;

/// How a rebase ended.
pub enum Outcome {
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
    pub summary: String,
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

impl Outcome {
    /// What the command prints (the summary on stdout, a stop's report on stderr).
    pub fn render(&self) -> String {
        match self {
            Outcome::Written(written) => written.render(),
            Outcome::Stopped(stop) => stop.render(),
        }
    }
}

impl Written {
    pub fn render(&self) -> String {
        let mut text = String::new();
        for note in &self.notes {
            let _ = writeln!(text, "note: {note}");
        }
        text.push_str(&self.summary);
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
}
