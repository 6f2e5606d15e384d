//! The model's answer for a reader: the loader it models, then every library in the order
//! the loader takes them (the file and the rule that chose it, then each place passed over
//! and why, as libtree tells "why this path"), what is not found, the hazards and notes.
//!
//! Every value from outside (the program's name, paths, environment lists, names read from
//! ELF files, notes quoting them) is printed through `model::printable`: a newline or an
//! escape sequence in a fallback entry shows as `\n` or `\u{1b}`, never as a broken line or
//! a recoloured terminal.

use std::fmt::Write;

use model::printable as p;

use super::{
    Bytes, Candidate, CandidateVerdict, Explanation, How, Load, Match, RequestOutcome, Tier,
};

/// The whole explanation as text.
pub fn text(x: &Explanation) -> String {
    let mut out = String::new();
    let l = &x.loader;
    if let Some(why) = &x.cannot_start {
        let _ = writeln!(out, "{}: no library is searched", x.program);
        settings_text(&mut out, x);
        let _ = writeln!(out, "\nthe program does not start: {}", p(why));
        return out;
    }
    // What the file is, then what is modelled when that was asked for instead.
    let is = l.series.flavour();
    let _ = writeln!(
        out,
        "{}: glibc {} {} loader, {}{}{}",
        x.program,
        l.release,
        l.target,
        is,
        if l.flavour == is {
            String::new()
        } else {
            format!(", modelled as {}", l.flavour)
        },
        match &l.path {
            Some(path) => format!(" ({path})"),
            None => " (a static program: its own libc searches)".into(),
        }
    );
    if let Some(how) = &x.started_by {
        let _ = writeln!(out, "  loader: {}", p(how));
    }
    settings_text(&mut out, x);
    // How it is known: the loader's own --help, or its file's strings.
    let _ = writeln!(out, "  {is}: {}", p(&l.series.why));
    if let Some(caveat) = &l.series.caveat {
        let _ = writeln!(out, "  caveat: {}", p(caveat));
    }
    let dirs: Vec<_> = l.system_dirs.iter().map(|d| p(d)).collect();
    let _ = writeln!(
        out,
        "  default dirs: {} ({})",
        dirs.join(" "),
        l.system_dirs_source
    );
    let subdirs: Vec<_> = l
        .subdirs
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| p(s.trim_end_matches('/')))
        .collect();
    if !subdirs.is_empty() {
        let _ = writeln!(
            out,
            "  subdirectories tried first in each dir: {} (CPU: {})",
            subdirs.join(" "),
            l.cpu.source
        );
    }
    if !x.library_path.is_empty() {
        let _ = writeln!(out, "  LD_LIBRARY_PATH: {}", joined(&x.library_path, " "));
    }
    if !x.fallback_path.is_empty() {
        let _ = writeln!(out, "  fallback: {}", joined(&x.fallback_path, " "));
    }
    if let Some(ignored) = &x.fallback_ignored {
        let _ = writeln!(
            out,
            "  fallback: {} ({}) IGNORED, {}",
            ignored.value,
            p(&ignored.source),
            p(&ignored.why)
        );
    }
    for note in &x.notes {
        let _ = writeln!(out, "  note: {}", p(note));
    }
    out.push('\n');
    let width = x
        .loads
        .iter()
        .flat_map(|load| load.candidates.iter().map(|c| p(&c.rule.to_string()).len()))
        .max()
        .unwrap_or(0);
    for load in &x.loads {
        load_text(&mut out, load, &x.loader.subdirs, width);
    }
    let missing: Vec<Bytes> = x
        .loads
        .iter()
        .filter(|l| {
            matches!(
                l.outcome,
                RequestOutcome::NotFound
                    | RequestOutcome::Failed { .. }
                    | RequestOutcome::StopsAt { .. }
            )
        })
        .map(|l| l.name.clone())
        .collect();
    out.push('\n');
    for request in &x.not_followed {
        let _ = writeln!(out, "not followed: {}", p(request));
    }
    match (missing.is_empty(), x.not_followed.is_empty()) {
        // The loader refused to start at all (an option it does not know): nothing searched.
        (true, true) if !x.starts && x.loads.is_empty() => {
            let _ = writeln!(out, "no library is searched");
        }
        (true, true) => {
            let _ = writeln!(out, "every library is found");
        }
        // What an unfollowed request would load is unknown: no claim about every library.
        (true, false) => {
            let _ = writeln!(
                out,
                "every library of the requests followed is found; {} not followed",
                count(x.not_followed.len(), "request")
            );
        }
        (false, _) => {
            let _ = writeln!(out, "not found: {}", joined(&missing, ", "));
        }
    }
    let _ = writeln!(
        out,
        "the program {}",
        if x.starts {
            "starts (every DT_NEEDED entry is found)"
        } else {
            "does not start"
        }
    );
    for change in &x.to_change {
        let _ = writeln!(out, "to change: {}", p(change));
    }
    for hazard in &x.hazards {
        let _ = writeln!(out, "hazard: {}", p(&hazard.text));
    }
    out
}

/// The variables the program gets, each with where it came from.
fn settings_text(out: &mut String, x: &Explanation) {
    for setting in &x.settings {
        let _ = writeln!(
            out,
            "  {}={} (from {})",
            setting.name,
            setting.value,
            p(&setting.from)
        );
    }
}

/// `values`, each printable, joined by `sep`.
fn joined(values: &[Bytes], sep: &str) -> String {
    values
        .iter()
        .map(Bytes::to_string)
        .collect::<Vec<_>>()
        .join(sep)
}

/// `1 request`, `2 requests`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn load_text(out: &mut String, load: &Load, subdirs: &[String], width: usize) {
    let by = &load.requested_by;
    let how = match load.how {
        How::Needed => format!("needed by {by}"),
        How::Dlopen => format!("dlopen from {by}"),
        How::Audit => "LD_AUDIT module".to_string(),
        How::Preload => format!("preloaded for {by}"),
        How::Dlmopen => format!("dlmopen (namespace {}) from {by}", load.namespace),
    };
    let name = &load.name;
    match &load.outcome {
        RequestOutcome::AlreadyLoaded { path, by } => {
            let text = match by {
                Match::Name => "by name",
                Match::SameFile => "the search found the same file",
            };
            let _ = writeln!(out, "{name} ({how}): already loaded, {path} ({text})");
            if *by == Match::Name {
                return;
            }
        }
        RequestOutcome::Mapped { path, rule } => {
            let _ = writeln!(
                out,
                "{name} ({how})\n  -> {path}  [{}]",
                p(&rule.to_string())
            );
        }
        RequestOutcome::NotFound if load.how == How::Preload => {
            let _ = writeln!(
                out,
                "{name} ({how})\n  -> NOT FOUND (the loader says so and goes on without it)"
            );
        }
        RequestOutcome::NotFound => {
            let _ = writeln!(out, "{name} ({how})\n  -> NOT FOUND");
        }
        RequestOutcome::Failed { error } => {
            let _ = writeln!(out, "{name} ({how})\n  -> FAILS: {}", p(error));
        }
        RequestOutcome::StopsAt { path, why } => {
            let _ = writeln!(out, "{name} ({how})\n  -> STOPS at {path}: {}", p(why));
        }
    }
    // Notes and candidates in the loader's order of tiers.
    let mut lines: Vec<(Tier, String, String)> = grouped(&load.candidates, &load.name, subdirs);
    for note in &load.notes {
        let at = lines
            .iter()
            .position(|(tier, _, _)| *tier > note.tier)
            .unwrap_or(lines.len());
        lines.insert(
            at,
            (
                note.tier,
                p(&note.label).into_owned(),
                p(&note.note).into_owned(),
            ),
        );
    }
    for (_, label, text) in lines {
        let _ = writeln!(out, "     {label:width$}  {text}");
    }
}

/// The candidates one line per directory: the tries in its subdirectories (glibc-hwcaps,
/// legacy hwcaps) fold into the directory's line unless something other than "absent" or
/// "not tried" happened there.
fn grouped(
    candidates: &[Candidate],
    name: &[u8],
    subdirs: &[String],
) -> Vec<(Tier, String, String)> {
    let mut lines: Vec<(Tier, String, String)> = Vec::new();
    let mut folded = 0usize;
    for c in candidates {
        let dir = c.path.strip_suffix(name).unwrap_or(&c.path);
        let subdir = subdirs
            .iter()
            .filter(|s| !s.is_empty())
            .find(|s| dir.ends_with(s.as_bytes()) && dir.len() > s.len());
        let quiet = matches!(
            c.verdict,
            CandidateVerdict::Absent | CandidateVerdict::DirMissing
        );
        if subdir.is_some() && quiet {
            folded += 1;
            continue;
        }
        let mut text = format!("{}  {}", c.path, p(&c.verdict.text()));
        if folded > 0 {
            text.push_str(&format!(
                " (and {folded} hwcaps subdirector{} without it)",
                if folded == 1 { "y" } else { "ies" }
            ));
            folded = 0;
        }
        lines.push((c.rule.tier(), p(&c.rule.to_string()).into_owned(), text));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Rule, TierNote};

    fn note(tier: Tier, label: &str, note: &str) -> TierNote {
        TierNote {
            tier,
            label: label.into(),
            note: note.into(),
        }
    }

    /// A note on a tier the search passed stands between the candidates of the tiers before
    /// and after it, whatever order the notes were made in.
    #[test]
    fn notes_stand_in_their_tier_among_the_candidates() {
        let fallback = Rule::Fallback {
            source: "LD_FALLBACK_PATH".into(),
        };
        let load = Load {
            namespace: 0,
            name: "libcuda.so.1".into(),
            how: How::Needed,
            requested_by: "/app".into(),
            outcome: RequestOutcome::Mapped {
                path: "/t/libcuda.so.1".into(),
                rule: fallback.clone(),
            },
            candidates: vec![
                Candidate {
                    rule: Rule::Runpath { of: "/app".into() },
                    path: "/c/libcuda.so.1".into(),
                    verdict: CandidateVerdict::Absent,
                },
                Candidate {
                    rule: fallback,
                    path: "/t/libcuda.so.1".into(),
                    verdict: CandidateVerdict::Taken,
                },
            ],
            notes: vec![
                note(Tier::DefaultDirs, "default dirs", "not searched"),
                note(Tier::Cache, "ld.so.cache", "no entry for libcuda.so.1"),
                note(Tier::Rpath, "RPATH", "/app has a RUNPATH"),
            ],
        };
        let mut out = String::new();
        load_text(&mut out, &load, &[], 12);
        let tiers: Vec<&str> = out
            .lines()
            .skip(2)
            .map(|line| line.trim_start().split("  ").next().unwrap_or(""))
            .collect();
        assert_eq!(
            tiers,
            [
                "RPATH",
                "RUNPATH of /app",
                "ld.so.cache",
                "default dirs",
                "fallback (LD_FALLBACK_PATH)"
            ],
            "{out}"
        );
    }
}
