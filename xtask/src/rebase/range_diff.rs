//! A range-diff-like summary of a rebase: per patch, unchanged / changed / dropped, and for a
//! changed patch the diff of its content with line numbers, `index` lines, commit ids and
//! numbering stripped, so a reviewer sees only what really changed. NEWS, whose entry the
//! rebase places by rule, shows its added and removed lines only: the release's lines around
//! the entry change with every release, and say nothing about the patch.

use std::fmt::Write;

use similar::TextDiff;

use crate::merge::Step;
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

/// One line per patch of `from`, its `notes` (what the rebase did to it: NEWS, resolutions,
/// checks), and the content diff under each changed one.
pub(crate) fn summarize(
    from: &Series,
    onto: Release,
    new: &Series,
    steps: &[Step],
    notes: &[Vec<String>],
) -> String {
    let mut out = format!(
        "rebased {} patch{} from glibc {} onto glibc {onto}:\n",
        from.patches.len(),
        if from.patches.len() == 1 { "" } else { "es" },
        from.base
    );
    let mut next = new.patches.iter();
    for (at, (old, step)) in from.patches.iter().zip(steps).enumerate() {
        let notes = notes.get(at).map(Vec::as_slice).unwrap_or_default();
        match step {
            Step::Dropped => {
                let _ = writeln!(out, "  {:<50} dropped: already in glibc {onto}", old.name);
                write_notes(&mut out, notes);
            }
            Step::Applied(_) => {
                let Some(patch) = next.next() else { break };
                let (a, b) = (normalize(&old.text), normalize(&patch.text));
                if a == b {
                    let _ = writeln!(out, "  {:<50} unchanged -> {}", old.name, patch.name);
                    write_notes(&mut out, notes);
                } else {
                    // Only the functions named in hunk headers differ: the code moved upstream.
                    let label = if without_hunk_context(&a) == without_hunk_context(&b) {
                        "unchanged, hunks now in other functions"
                    } else {
                        "changed"
                    };
                    let _ = writeln!(out, "  {:<50} {label} -> {}", old.name, patch.name);
                    write_notes(&mut out, notes);
                    let diff = TextDiff::from_lines(&a, &b);
                    let old_name = format!("{}/{}", from.base, old.name);
                    let new_name = format!("{onto}/{}", patch.name);
                    for line in diff
                        .unified_diff()
                        .context_radius(3)
                        .header(&old_name, &new_name)
                        .to_string()
                        .lines()
                    {
                        // Line numbers into the normalized text would only be noise too.
                        let line = if line.starts_with("@@ -") { "@@" } else { line };
                        let _ = writeln!(out, "      {line}");
                    }
                }
            }
        }
    }
    out
}

fn write_notes(out: &mut String, notes: &[String]) {
    for note in notes {
        let _ = writeln!(out, "      {note}");
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
