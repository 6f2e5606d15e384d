//! The lead table of docs/jetson.md: per host kind, which approaches run the app (and how
//! sure that is), what the user sets for them, and which cells nobody knows. Every entry is
//! a reading of the cells, so `--check` catches a lead table the detail no longer supports.

use std::fmt::Write;

use super::report::{CellReport, ReplayReport, RowReport, SUMMARY};
use super::rules::Basis;
use super::{App, Origin, APPROACHES, COLUMNS};
use model::Flavour;

/// What a cell came to under its row's loader (first way, nixpkgs' RUNPATH, PTX app).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Every run worked.
    Runs(Basis),
    /// Only the C++ app's runs worked.
    CxxOnly(Basis),
    /// Some run rests on a rule nobody supports.
    Unknown(Basis),
    Fails,
    NotApplicable,
}

fn verdict(row: &RowReport, cell: &CellReport) -> Verdict {
    if cell.not_applicable.is_some() {
        return Verdict::NotApplicable;
    }
    let way = cell.runs.first().and_then(|r| r.key.way);
    let runs: Vec<_> = cell
        .runs
        .iter()
        .filter(|r| {
            r.key.flavour == row.flavour
                && r.key.origin == Origin::Last
                && r.key.way == way
                && r.key.kernel == super::Kernel::Ptx
        })
        .collect();
    let basis = runs
        .iter()
        .map(|r| r.basis)
        .max()
        .unwrap_or(Basis::Replayed);
    if matches!(basis, Basis::Unknown(_)) {
        return Verdict::Unknown(basis);
    }
    if !runs.is_empty() && runs.iter().all(|r| r.works) {
        Verdict::Runs(basis)
    } else if runs
        .iter()
        .filter(|r| r.key.app == App::Cxx)
        .all(|r| r.works)
        && runs.iter().any(|r| r.works)
    {
        Verdict::CxxOnly(basis)
    } else {
        Verdict::Fails
    }
}

/// `1, 3 and 4`.
fn list(items: &[String]) -> String {
    match items {
        [] => "none".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Approach numbers grouped by their mark, replayed ones first without one:
/// `1 and 6; 3 [E 803-l4t]`.
fn grouped(items: &[(u8, Basis)]) -> String {
    if items.is_empty() {
        return "none".to_string();
    }
    let mut marks: Vec<Basis> = items.iter().map(|(_, b)| *b).collect();
    marks.sort();
    marks.dedup();
    marks
        .iter()
        .map(|mark| {
            let numbers: Vec<String> = items
                .iter()
                .filter(|(_, b)| b == mark)
                .map(|(n, _)| n.to_string())
                .collect();
            match mark {
                Basis::Replayed => list(&numbers),
                other => format!("{} [{}]", list(&numbers), other.mark()),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl ReplayReport {
    /// The summary block of docs/jetson.md (the first section, per host kind, then the lead
    /// table), markers included.
    pub fn render_summary(&self) -> String {
        format!(
            "{}\n{}\n{}{}\n",
            SUMMARY.begin,
            brief(self),
            lead(self),
            SUMMARY.end
        )
    }
}

/// The host kinds of the first section, each the columns it stands for.
const KINDS: &[(&str, &[&str])] = &[
    (
        "NixOS (jetpack-nixos), a program nixpkgs built",
        &[
            "nixos-jp5",
            "nixos-jp6-newer",
            "gate-older",
            "gate-same",
            "gate-newer",
            "nixos-jp7",
            "nixos-jp7-newer",
        ],
    ),
    (
        "NixOS, a program nixpkgs did not build (wheel, conda, download)",
        &["nixos-jp6-wheel"],
    ),
    (
        "Nix on a JetPack 5 or 6 host (Ubuntu)",
        &["jetpack5", "jetpack6"],
    ),
    (
        "Nix on a JetPack 7 host (Ubuntu, R38, Thor)",
        &["jetpack7", "jetpack7-nocompat"],
    ),
];

/// The first section: per host kind, the rows that run the app in every column of the kind
/// (each with its weakest mark there, and what the user sets for it), and those that run in
/// some of its columns only. A reading of the same cells as the lead table.
pub(crate) fn brief(report: &ReplayReport) -> String {
    let triplet = report.target.triplet();
    let mut out = String::new();
    for (kind, ids) in KINDS {
        let at: Vec<usize> = ids
            .iter()
            .filter_map(|id| COLUMNS.iter().position(|c| c.id == *id))
            .collect();
        let (mut everywhere, mut somewhere) = (Vec::new(), Vec::new());
        for row in &report.rows {
            let verdicts: Vec<Verdict> = at
                .iter()
                .filter_map(|&i| row.cells.get(i).map(|cell| verdict(row, cell)))
                .collect();
            let runs = |v: &Verdict| matches!(v, Verdict::Runs(_) | Verdict::CxxOnly(_));
            let basis = |v: &Verdict| match v {
                Verdict::Runs(b) | Verdict::CxxOnly(b) => Some(*b),
                _ => None,
            };
            let weakest = verdicts
                .iter()
                .filter_map(basis)
                .max()
                .unwrap_or(Basis::Replayed);
            let cxx_only = verdicts.iter().any(|v| matches!(v, Verdict::CxxOnly(_)));
            if !verdicts.is_empty() && verdicts.iter().all(runs) {
                let sets = APPROACHES
                    .iter()
                    .find(|a| a.number == row.approach)
                    .map(|a| {
                        let dir = COLUMNS[at[0]].host.driver_dir(triplet);
                        a.user_sets.replace("{dir}", &dir)
                    })
                    .unwrap_or_default();
                everywhere.push(format!(
                    "{} [{}]{}: {sets}",
                    row.approach,
                    weakest.mark(),
                    if cxx_only { " (a C++ app only)" } else { "" }
                ));
            } else if verdicts.iter().any(runs) {
                somewhere.push(format!("{} [{}]", row.approach, weakest.mark()));
            }
        }
        let _ = writeln!(
            out,
            "- **{kind}** ({} {}): runs the app in each: {}. In some only: {}.",
            at.len(),
            if at.len() == 1 { "column" } else { "columns" },
            if everywhere.is_empty() {
                "none".to_string()
            } else {
                everywhere.join("; ")
            },
            list(&somewhere)
        );
    }
    out
}

/// The lead table, one row per host kind.
pub(crate) fn lead(report: &ReplayReport) -> String {
    let mut out = String::from(
        "| host | runs the app | runs only a C++ app | not known | what the user sets for the ones that run |\n|---|---|---|---|---|\n",
    );
    let triplet = report.target.triplet();
    for (at, column) in COLUMNS.iter().enumerate() {
        if column.short.is_empty() {
            continue;
        }
        let dir = column.host.driver_dir(triplet);
        let (mut runs, mut cxx, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
        let mut sets: Vec<(String, Vec<String>)> = Vec::new();
        for row in &report.rows {
            let Some(cell) = row.cells.get(at) else {
                continue;
            };
            let approach = APPROACHES.iter().find(|a| a.number == row.approach);
            let mut works = |number: String| {
                let what = approach
                    .map(|a| a.user_sets.replace("{dir}", &dir))
                    .unwrap_or_default();
                match sets.iter_mut().find(|(w, _)| *w == what) {
                    Some((_, numbers)) => numbers.push(number),
                    None => sets.push((what, vec![number])),
                }
            };
            match verdict(row, cell) {
                Verdict::Runs(basis) => {
                    runs.push((row.approach, basis));
                    works(row.approach.to_string());
                }
                Verdict::CxxOnly(basis) => {
                    cxx.push((row.approach, basis));
                    works(row.approach.to_string());
                }
                Verdict::Unknown(basis) => unknown.push((row.approach, basis)),
                Verdict::Fails | Verdict::NotApplicable => {}
            }
        }
        let sets: Vec<String> = sets
            .iter()
            .map(|(what, numbers)| format!("{}: {what}", list(numbers)))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            column.short,
            grouped(&runs),
            grouped(&cxx),
            grouped(&unknown),
            if sets.is_empty() {
                "-".to_string()
            } else {
                sets.join("; ")
            }
        );
    }
    let unpatched_help: Vec<String> = report
        .rows
        .iter()
        .filter(|row| {
            row.cells.iter().any(|cell| {
                let own = verdict(row, cell);
                let runs = |f: Flavour| {
                    cell.runs
                        .iter()
                        .filter(|r| r.key.flavour == f && r.key.origin == Origin::Last)
                        .any(|r| r.works)
                };
                matches!(own, Verdict::Runs(_) | Verdict::CxxOnly(_))
                    && row.flavour != Flavour::Unpatched
                    && cell
                        .runs
                        .iter()
                        .any(|r| r.key.flavour == Flavour::Unpatched)
                    && !runs(Flavour::Unpatched)
            })
        })
        .map(|row| row.approach.to_string())
        .collect();
    let _ = writeln!(
        out,
        "\nRows whose variable needs the patch somewhere (the unpatched loader fails where they run): {}.",
        list(&unpatched_help)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::report::RunReport;
    use crate::replay::rules::Rule;
    use crate::replay::{Approach, Column, RunKey};
    use model::{Release, Target};

    /// Every run of `approach` in `column`, as `outcome` says: `runs` works, `c-fails` fails
    /// for the C app only, anything else fails; under the unpatched loader every run fails.
    fn cell(approach: &Approach, column: &Column, outcome: &str, basis: Basis) -> CellReport {
        let runs = RunKey::all(approach, column)
            .into_iter()
            .map(|key| {
                let works = key.flavour != Flavour::Unpatched
                    && (outcome == "runs" || (outcome == "c-fails" && key.app == App::Cxx));
                let mut run = RunReport::not_run(key, "");
                run.outcome = if works { "runs" } else { "fails" }.into();
                run.works = works;
                run.basis = basis;
                run
            })
            .collect();
        CellReport::new(approach, column, runs)
    }

    fn report(outcome: impl Fn(&Approach, &Column) -> (&'static str, Basis)) -> ReplayReport {
        ReplayReport {
            release: Release::parse("2.44").unwrap(),
            target: Target::Aarch64,
            provenance: None,
            host_libraries: Vec::new(),
            columns: Vec::new(),
            rows: APPROACHES
                .iter()
                .map(|approach| {
                    let cells = COLUMNS
                        .iter()
                        .map(|column| {
                            let (text, basis) = outcome(approach, column);
                            cell(approach, column, text, basis)
                        })
                        .collect();
                    RowReport::new(approach, cells)
                })
                .collect(),
        }
    }

    fn brief_line(report: &ReplayReport) -> String {
        brief(report)
            .lines()
            .find(|l| l.starts_with("- **Nix on a JetPack 5 or 6 host"))
            .unwrap()
            .to_string()
    }

    #[test]
    fn the_lead_table_names_what_runs_what_is_unknown_and_what_to_set() {
        let report = report(|approach, column| match (approach.number, column.id) {
            (1, "jetpack5") => ("runs", Basis::Replayed),
            (7, "jetpack5") => ("c-fails", Basis::Replayed),
            (6, "jetpack5") => ("runs", Rule::CompatOtherL4t.basis()),
            (4, "jetpack5") => ("runs", Rule::TwoDrivers.basis()),
            _ => ("fails", Basis::Replayed),
        });
        let lead = lead(&report);
        let line = lead
            .lines()
            .find(|l| l.starts_with("| Nix on a JetPack 5 host"))
            .unwrap();
        assert_eq!(
            line,
            "| Nix on a JetPack 5 host (Ubuntu), cuda_compat 12.2 | 1; 6 [E 803-l4t] | 7 | \
             4 [? two-drivers] | 1: nothing (nixpkgs' packaging); 6: nothing (jetpack-nixos' \
             cuda_compat, built with its l4t-core); 7: \
             `LD_FALLBACK_PATH=/usr/lib/aarch64-linux-gnu/tegra` |"
        );
        // The first section reads the same cells per host kind: JetPack 6 runs nothing here.
        let brief = brief(&report);
        let line = brief
            .lines()
            .find(|l| l.starts_with("- **Nix on a JetPack 5 or 6 host"))
            .unwrap();
        assert_eq!(
            line,
            "- **Nix on a JetPack 5 or 6 host (Ubuntu)** (2 columns): runs the app in each: \
             none. In some only: 1 [R], 6 [E 803-l4t] and 7 [R]."
        );
        let report = self::report(|approach, column| match (approach.number, column.id) {
            (7, "jetpack5" | "jetpack6") => ("c-fails", Basis::Replayed),
            _ => ("fails", Basis::Replayed),
        });
        assert!(brief_line(&report).contains(
            "runs the app in each: 7 [R] (a C++ app only): `LD_FALLBACK_PATH=/usr/lib/aarch64-linux-gnu/tegra`. In some only: none."
        ));
        // Row 7 runs there with the patch and fails without it (every run here "fails"
        // unpatched), so it is named as needing the patch.
        assert!(
            lead.ends_with("(the unpatched loader fails where they run): 7.\n"),
            "{lead}"
        );
    }
}
