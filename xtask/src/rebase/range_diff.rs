//! A range-diff-like summary of a rebase, as data ([`RangeDiff`], rendered by `outcome`): per patch, unchanged / changed / dropped, and for a
//! changed patch the diff of its content with line numbers, `index` lines, commit ids and
//! numbering stripped, so a reviewer sees only what really changed. NEWS, whose entry the
//! rebase places by rule, shows its added and removed lines only: the release's lines around
//! the entry change with every release, and say nothing about the patch.

use similar::TextDiff;

use crate::merge::PatchFate;
use crate::series::Series;
use model::Release;

/// What a reviewer needs to compare: the patch minus what moves with every rebase.
pub(crate) fn normalize(text: &str) -> String {
    let mut out = String::new();
    let mut in_news = false;
    for (n, line) in text.lines().enumerate() {
        if n == 0 && line.starts_with("From ") || line.starts_with("index ") {
            continue;
        }
        if line.starts_with("diff --git ") {
            in_news = line == "diff --git a/NEWS b/NEWS";
        } else if in_news && (line.starts_with(' ') || line.starts_with("@@")) {
            continue;
        }
        let line = if let Some(rest) = line.strip_prefix("Subject: [PATCH ") {
            format!(
                "Subject: [PATCH] {}",
                rest.split_once("] ").map_or(rest, |(_, s)| s)
            )
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            match rest.split_once(" @@") {
                Some((_, context)) => format!("@@{context}"),
                None => line.to_string(),
            }
        } else {
            line.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn without_hunk_context(normalized: &str) -> String {
    normalized
        .lines()
        .map(|l| if l.starts_with("@@") { "@@" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a rebase did to each patch of the old series, as data; `outcome` renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeDiff {
    pub from: Release,
    pub onto: Release,
    /// How many patches the old series had.
    pub count: usize,
    /// One per patch of the old series the rebase got to, in series order.
    pub patches: Vec<PatchDiff>,
}

/// One patch of the old series and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchDiff {
    /// Its file name in the old series.
    pub name: String,
    pub change: Change,
    /// What the rebase did to it: NEWS by rule, resolutions, checks.
    pub notes: Vec<String>,
}

/// What became of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Already in the release rebased onto.
    Dropped,
    /// Its content is the same; `now` is its file name in the new series.
    Unchanged { now: String },
    /// Only the functions named in hunk headers differ: the code moved upstream. `diff`: the
    /// lines of the unified diff of the normalized texts, line numbers stripped.
    Moved { now: String, diff: Vec<String> },
    /// Its content changed.
    Changed { now: String, diff: Vec<String> },
}

/// Each patch of `from` against its counterpart in `new`, with its `notes` (what the rebase
/// did to it: NEWS, resolutions, checks).
pub(crate) fn summarize(
    from: &Series,
    onto: Release,
    new: &Series,
    steps: &[PatchFate],
    notes: &[Vec<String>],
) -> RangeDiff {
    let mut patches = Vec::new();
    let mut next = new.patches.iter();
    for (at, (old, step)) in from.patches.iter().zip(steps).enumerate() {
        let notes = notes.get(at).cloned().unwrap_or_default();
        let change = match step {
            PatchFate::Dropped => Change::Dropped,
            PatchFate::Applied(_) => {
                let Some(patch) = next.next() else { break };
                let now = patch.name.clone();
                let (a, b) = (normalize(&old.text), normalize(&patch.text));
                if a == b {
                    Change::Unchanged { now }
                } else {
                    let old_name = format!("{}/{}", from.base, old.name);
                    let new_name = format!("{onto}/{}", patch.name);
                    let diff = TextDiff::from_lines(&a, &b)
                        .unified_diff()
                        .context_radius(3)
                        .header(&old_name, &new_name)
                        .to_string()
                        .lines()
                        // Line numbers into the normalized text would only be noise too.
                        .map(|line| if line.starts_with("@@ -") { "@@" } else { line })
                        .map(str::to_string)
                        .collect();
                    if without_hunk_context(&a) == without_hunk_context(&b) {
                        Change::Moved { now, diff }
                    } else {
                        Change::Changed { now, diff }
                    }
                }
            }
        };
        patches.push(PatchDiff {
            name: old.name.clone(),
            change,
            notes,
        });
    }
    RangeDiff {
        from: from.base,
        onto,
        count: from.patches.len(),
        patches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_strips_what_moves_with_a_rebase() {
        let a = "From 1111 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 1/3] x\nindex abc..def 100644\n@@ -10,3 +10,4 @@ int f (void)\n+new\n";
        let b = "From 2222 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 2/2] x\nindex 123..456 100644\n@@ -90,3 +91,4 @@ int f (void)\n+new\n";
        assert_eq!(normalize(a), normalize(b));
        assert_eq!(normalize(a), "Subject: [PATCH] x\n@@ int f (void)\n+new\n");
        assert_ne!(normalize(a), normalize(&b.replace("+new", "+other")));
    }

    #[test]
    fn news_shows_only_the_entry() {
        let a = "diff --git a/NEWS b/NEWS\n@@ -9,6 +9,8 @@ Version 2.44\n Major new features:\n \n+* Entry.\n+\n * Tunables.\ndiff --git a/elf/x.c b/elf/x.c\n@@ -1 +1 @@ f\n ctx\n+x\n";
        let b = a
            .replace("Version 2.44", "Version 2.43")
            .replace("Tunables", "Other");
        assert_eq!(normalize(a), normalize(&b));
        assert!(normalize(a).contains("+* Entry.\n") && normalize(a).contains(" ctx\n"));
    }
}
