//! The model's answer for a reader: the loader it models, then every library in the order
//! the loader takes them (the file and the rule that chose it, then each place passed over
//! and why, as libtree tells "why this path"), what is not found, the hazards and notes.

use std::fmt::Write;

use super::{Candidate, Explanation, How, Load, Match, Outcome, Verdict};

/// The whole explanation as text.
pub fn text(x: &Explanation) -> String {
    let mut out = String::new();
    let l = &x.loader;
    let flavour = if l.patched { "patched" } else { "unpatched" };
    let _ = writeln!(
        out,
        "{}: glibc {} {} loader, {flavour}{}",
        x.program,
        l.release,
        l.target,
        match &l.path {
            Some(path) => format!(" ({path})"),
            None => " (a static program: its own libc searches)".into(),
        }
    );
    let dirs: Vec<&str> = l.system_dirs.iter().map(|d| d.as_str()).collect();
    let _ = writeln!(
        out,
        "  default dirs: {} ({})",
        dirs.join(" "),
        l.system_dirs_source
    );
    let subdirs: Vec<&str> = l
        .subdirs
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('/'))
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
        let _ = writeln!(out, "  LD_LIBRARY_PATH: {}", x.library_path.join(" "));
    }
    if !x.fallback_path.is_empty() {
        let _ = writeln!(out, "  fallback: {}", x.fallback_path.join(" "));
    }
    for note in &x.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out.push('\n');
    let width = x
        .loads
        .iter()
        .flat_map(|load| load.candidates.iter().map(|c| c.rule.to_string().len()))
        .max()
        .unwrap_or(0);
    for load in &x.loads {
        load_text(&mut out, load, &x.loader.subdirs, width);
    }
    let missing: Vec<&str> = x
        .loads
        .iter()
        .filter(|l| matches!(l.outcome, Outcome::NotFound | Outcome::Failed { .. }))
        .map(|l| l.name.as_str())
        .collect();
    out.push('\n');
    if missing.is_empty() {
        let _ = writeln!(out, "every library is found");
    } else {
        let _ = writeln!(out, "not found: {}", missing.join(", "));
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
    for hazard in &x.hazards {
        let _ = writeln!(out, "hazard: {}", hazard.text);
    }
    out
}

fn load_text(out: &mut String, load: &Load, subdirs: &[String], width: usize) {
    let how = match load.how {
        How::Needed => format!("needed by {}", load.requested_by),
        How::Dlopen => format!("dlopen from {}", load.requested_by),
        How::Audit => "LD_AUDIT module".to_string(),
        How::Dlmopen => format!(
            "dlmopen (namespace {}) from {}",
            load.namespace, load.requested_by
        ),
    };
    match &load.outcome {
        Outcome::AlreadyLoaded { path, by } => {
            let text = match by {
                Match::Name => "by name",
                Match::SameFile => "the search found the same file",
            };
            let _ = writeln!(
                out,
                "{} ({how}): already loaded, {path} ({text})",
                load.name
            );
            if *by == Match::Name {
                return;
            }
        }
        Outcome::Mapped { path, rule } => {
            let _ = writeln!(out, "{} ({how})\n  -> {path}  [{rule}]", load.name);
        }
        Outcome::NotFound => {
            let _ = writeln!(out, "{} ({how})\n  -> NOT FOUND", load.name);
        }
        Outcome::Failed { error } => {
            let _ = writeln!(out, "{} ({how})\n  -> FAILS: {error}", load.name);
        }
    }
    // Notes and candidates in the loader's order of tiers.
    let mut lines: Vec<(usize, String, String)> = grouped(&load.candidates, &load.name, subdirs)
        .into_iter()
        .map(|(tier, text)| (rank(&tier), tier, text))
        .collect();
    for note in &load.notes {
        let at = lines
            .iter()
            .position(|(r, _, _)| *r > rank(&note.tier))
            .unwrap_or(lines.len());
        lines.insert(at, (rank(&note.tier), note.tier.clone(), note.note.clone()));
    }
    for (_, tier, text) in lines {
        let _ = writeln!(out, "     {tier:width$}  {text}");
    }
}

/// Where a tier comes in the search, by the name rules and notes give it.
fn rank(tier: &str) -> usize {
    const ORDER: [&str; 7] = [
        "RPATH",
        "LD_LIBRARY_PATH",
        "RUNPATH",
        "ld.so.cache",
        "default dir",
        "fallback",
        "path",
    ];
    let tier = if tier == "--library-path" {
        "LD_LIBRARY_PATH"
    } else {
        tier
    };
    ORDER
        .iter()
        .position(|t| tier.starts_with(t))
        .unwrap_or(ORDER.len())
}

/// The candidates one line per directory: the tries in its subdirectories (glibc-hwcaps,
/// legacy hwcaps) fold into the directory's line unless something other than "absent" or
/// "not tried" happened there.
fn grouped(candidates: &[Candidate], name: &str, subdirs: &[String]) -> Vec<(String, String)> {
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut folded = 0usize;
    for c in candidates {
        let dir = c.path.strip_suffix(name).unwrap_or(&c.path);
        let subdir = subdirs
            .iter()
            .filter(|s| !s.is_empty())
            .find(|s| dir.ends_with(s.as_str()) && dir.len() > s.len());
        let quiet = matches!(c.verdict, Verdict::Absent | Verdict::DirMissing);
        if subdir.is_some() && quiet {
            folded += 1;
            continue;
        }
        let mut text = format!("{}  {}", c.path, c.verdict.text());
        if folded > 0 {
            text.push_str(&format!(
                " (and {folded} hwcaps subdirector{} without it)",
                if folded == 1 { "y" } else { "ies" }
            ));
            folded = 0;
        }
        lines.push((c.rule.to_string(), text));
    }
    lines
}
