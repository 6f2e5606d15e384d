//! The summary block of docs/jetson.md: first, per kind of host as jetpack-nixos and nixpkgs
//! set it up by default, what happens and what to do; then, per column, which approaches run
//! the app (and how sure that is), which nobody can call, and what the user sets for them.
//! Every entry is a reading of the cells, with each column's own driver directory, so
//! `--check` catches a summary the detail no longer supports.

use std::fmt::Write;

use super::report::{CellReport, ReplayReport, RowReport, RunReport, SUMMARY};
use super::rules::Basis;
use super::{App, Approach, Kernel, Linkage, Origin, Status, APPROACHES, COLUMNS};
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
                && r.key.kernel == Kernel::Ptx
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

/// `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => "none".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Approach names grouped by their mark, replayed ones first without one:
/// `` `a` and `b`; `c` [E 803-l4t] ``.
fn grouped(items: &[(&'static str, Basis)]) -> String {
    if items.is_empty() {
        return "none".to_string();
    }
    let mut marks: Vec<Basis> = items.iter().map(|(_, b)| *b).collect();
    marks.sort();
    marks.dedup();
    marks
        .iter()
        .map(|mark| {
            let names: Vec<String> = items
                .iter()
                .filter(|(_, b)| b == mark)
                .map(|(n, _)| format!("`{n}`"))
                .collect();
            match mark {
                Basis::Replayed => list(&names),
                other => format!("{} [{}]", list(&names), other.mark()),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn approach_of(row: &RowReport) -> Option<&'static Approach> {
    APPROACHES.iter().find(|a| a.number == row.approach)
}

/// What the user sets for `approach` in a column whose driver directory is `dir`.
fn sets(approach: &Approach, dir: &str) -> String {
    approach.user_sets.replace("{dir}", dir)
}

impl ReplayReport {
    /// The summary block of docs/jetson.md (the first table, per kind of host, then the lead
    /// table, per column), markers included.
    pub fn render_summary(&self) -> String {
        format!(
            "{}\n{}\n{}{}\n",
            SUMMARY.begin,
            first_table(self),
            lead(self),
            SUMMARY.end
        )
    }
}

/// A row of the first table: a kind of host as jetpack-nixos and nixpkgs give it, read from
/// one column.
struct Kind {
    /// The host, and what its software is by default.
    host: &'static str,
    /// The column whose cells say what happens.
    column: &'static str,
    /// The row that is what the user has without doing anything.
    default: u8,
    /// What to do when no approach runs a PTX kernel there.
    otherwise: &'static str,
}

/// The kinds of host, the defaults first.
const KINDS: &[Kind] = &[
    Kind {
        host: "NixOS, JetPack 5: CUDA 11.4, no cuda_compat (jetpack-nixos' default)",
        column: "nixos-jp5-default",
        default: 1,
        otherwise: "",
    },
    Kind {
        host: "NixOS, JetPack 6: `cudaPackages_12` (12.9), cuda_compat off (jetpack-nixos' and nixpkgs' defaults)",
        column: "nixos-jp6-default",
        default: 1,
        otherwise: "build for the board's CUDA (`cudaPackages_12_6`)",
    },
    Kind {
        host: "NixOS, JetPack 7 (R39.2, Orin): `cudaPackages_13` (13.4), cuda_compat off (the defaults)",
        column: "nixos-jp7-default",
        default: 1,
        otherwise: "build for the board's CUDA (`cudaPackages_13_2`)",
    },
    Kind {
        host: "NixOS, JetPack 6: a program nixpkgs did not build (wheel, conda, download)",
        column: "nixos-jp6-wheel",
        default: 1,
        otherwise: "",
    },
    Kind {
        host: "NixOS, JetPack 6: `cudaPackages_12` (12.9) with `config.enableCudaDriverCompat = true` (jetpack-nixos' cuda_compat)",
        column: "gate-newer",
        default: 6,
        otherwise: "",
    },
    Kind {
        host: "NixOS, JetPack 5: cuda_compat 12.2 (nixos-cuda/cuda-legacy, `enableCudaDriverCompat`, jetpack-nixos' cuda_compat)",
        column: "nixos-jp5",
        default: 6,
        otherwise: "",
    },
    Kind {
        host: "NixOS, JetPack 6: CUDA 13.2 with `cuda_compat_orin` (no nixpkgs package; jetpack-nixos' module refuses CUDA 13 on JetPack 6)",
        column: "nixos-jp6-compat-orin",
        default: 1,
        otherwise: "",
    },
    Kind {
        host: "Nix on a JetPack 6 host (Ubuntu): `cudaPackages_12_6`, cuda_compat off",
        column: "jetpack6-default",
        default: 1,
        otherwise: "",
    },
    Kind {
        host: "Nix on a JetPack 5 host (Ubuntu): cuda_compat 12.2 (nixos-cuda/cuda-legacy)",
        column: "jetpack5",
        default: 1,
        otherwise: "",
    },
    Kind {
        host: "Nix on a JetPack 7 host (Ubuntu, R38.4, Thor): CUDA 13.0, cuda_compat off",
        column: "jetpack7-default",
        default: 1,
        otherwise: "settle `thor-closure` first (`readelf -d` of R38.4's `libcuda.so.1.1`, or `cargo xtask jetson-replay --real-driver` on a Thor)",
    },
];

/// One run of `cell` under its row's loader, nixpkgs' RUNPATH unless `origin` says
/// otherwise, DT_NEEDED, the C++ app.
fn the_run(
    row: &RowReport,
    cell: &CellReport,
    origin: Origin,
    kernel: Kernel,
) -> Option<RunReport> {
    let way = cell.runs.first().and_then(|r| r.key.way);
    cell.runs
        .iter()
        .find(|r| {
            r.key.flavour == row.flavour
                && r.key.way == way
                && r.key.origin == origin
                && r.key.kernel == kernel
                && r.key.linkage == Linkage::Needed
                && r.key.app == App::Cxx
        })
        .cloned()
}

/// A run in a few words, with its mark: `[R] runs`, `[E mvc] fails: ...`, `[? rule] unknown`.
fn short(run: &RunReport) -> String {
    let text = if run.works {
        "runs".to_string()
    } else if run.outcome.starts_with("unknown") {
        "unknown".to_string()
    } else {
        // The failure itself, without which driver ran.
        let outcome = run.outcome.split("; NSS lookup").next().unwrap_or_default();
        match outcome.split_once(": ") {
            Some(("fails", what)) => format!("fails: {}", what.split(" + ").next().unwrap_or(what)),
            _ => outcome.to_string(),
        }
    };
    format!("[{}] {text}", run.basis.mark())
}

/// The first table: per kind of host, what its defaults do and what to do.
fn first_table(report: &ReplayReport) -> String {
    let triplet = report.target.triplet();
    let mut out = String::from("| host, as set up by default | a PTX kernel | a SASS kernel | what to do |\n|---|---|---|---|\n");
    for kind in KINDS {
        let Some(at) = COLUMNS.iter().position(|c| c.id == kind.column) else {
            continue;
        };
        let dir = COLUMNS[at].host.driver_dir(triplet);
        let Some(default_row) = report.rows.iter().find(|r| r.approach == kind.default) else {
            continue;
        };
        let Some(cell) = default_row.cells.get(at) else {
            continue;
        };
        let ptx = the_run(default_row, cell, Origin::Last, Kernel::Ptx);
        let sass = the_run(default_row, cell, Origin::Last, Kernel::Sass);
        let describe =
            |run: &Option<RunReport>| run.as_ref().map(short).unwrap_or_else(|| "-".into());
        let default_runs = matches!(
            verdict(default_row, cell),
            Verdict::Runs(_) | Verdict::CxxOnly(_)
        );
        let mut todo: Vec<String> = Vec::new();
        if default_runs {
            todo.push("nothing".to_string());
        } else {
            // cuda_compat's own helper first: the one change to the default row itself.
            if let Some(first) = the_run(default_row, cell, Origin::First, Kernel::Ptx) {
                if first.works {
                    todo.push(format!(
                        "[{}] `$ORIGIN` first in cuda_compat's RUNPATH ([below](#origin-first))",
                        first.basis.mark()
                    ));
                }
            }
            // The approaches that run the app here, shipped ones first (the rows' order).
            for row in &report.rows {
                let Some(approach) = approach_of(row) else {
                    continue;
                };
                // The default is what fails, and a mistake is nothing to do.
                if row.approach == kind.default || approach.status == Status::Mistake {
                    continue;
                }
                let Some(cell) = row.cells.get(at) else {
                    continue;
                };
                let (basis, cxx) = match verdict(row, cell) {
                    Verdict::Runs(b) => (b, ""),
                    Verdict::CxxOnly(b) => (b, ", a C++ app only"),
                    _ => continue,
                };
                let shipped = matches!(approach.status, Status::Shipped(_));
                todo.push(format!(
                    "[{}] `{}`{}{cxx}: {}",
                    basis.mark(),
                    approach.name,
                    if shipped { "" } else { " (proposed)" },
                    sets(approach, &dir)
                ));
            }
            if todo.is_empty() {
                let sass_runs = sass.as_ref().is_some_and(|r| r.works);
                todo.push(match (sass_runs, kind.otherwise.is_empty()) {
                    (true, false) => format!(
                        "nothing for SASS (nixpkgs builds it for `config.cudaCapabilities`); for PTX, {}",
                        kind.otherwise
                    ),
                    (_, false) => format!("nothing here works yet: {}", kind.otherwise),
                    (_, true) => "nothing here works yet".to_string(),
                });
            }
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            kind.host,
            describe(&ptx),
            describe(&sass),
            todo.join("<br>")
        );
    }
    out
}

/// The lead table, one row per column.
pub(crate) fn lead(report: &ReplayReport) -> String {
    let mut out = String::from(
        "\n| column | runs the app | runs only a C++ app | not known | what the user sets for the ones that run |\n|---|---|---|---|---|\n",
    );
    let triplet = report.target.triplet();
    for (at, column) in COLUMNS.iter().enumerate() {
        if column.short.is_empty() {
            continue;
        }
        let dir = column.host.driver_dir(triplet);
        let (mut runs, mut cxx, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
        let mut set: Vec<(String, Vec<String>)> = Vec::new();
        for row in &report.rows {
            let Some(cell) = row.cells.get(at) else {
                continue;
            };
            let Some(approach) = approach_of(row) else {
                continue;
            };
            let mut works = |name: &str| {
                let what = sets(approach, &dir);
                match set.iter_mut().find(|(w, _)| *w == what) {
                    Some((_, names)) => names.push(format!("`{name}`")),
                    None => set.push((what, vec![format!("`{name}`")])),
                }
            };
            match verdict(row, cell) {
                Verdict::Runs(basis) => {
                    runs.push((row.name, basis));
                    works(row.name);
                }
                Verdict::CxxOnly(basis) => {
                    cxx.push((row.name, basis));
                    works(row.name);
                }
                Verdict::Unknown(basis) => unknown.push((row.name, basis)),
                Verdict::Fails | Verdict::NotApplicable => {}
            }
        }
        let set: Vec<String> = set
            .iter()
            .map(|(what, names)| format!("{}: {what}", list(names)))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            column.short,
            grouped(&runs),
            grouped(&cxx),
            grouped(&unknown),
            if set.is_empty() {
                "-".to_string()
            } else {
                set.join("; ")
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
        .map(|row| format!("`{}`", row.name))
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
    use crate::replay::rules::Rule;
    use crate::replay::{approach, column, Column, RunKey};
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
                run.outcome = if works { "runs" } else { "fails: x not found" }.into();
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

    fn line<'a>(text: &'a str, start: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in\n{text}"))
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
        assert_eq!(
            line(&lead, "| Nix on a JetPack 5 host"),
            "| Nix on a JetPack 5 host (Ubuntu): cuda_compat 12.2 | `nixpkgs' compat RUNPATH`; \
             `jetpack-nixos' cuda_compat` [E 803-l4t] | `LD_FALLBACK_PATH` | `pure binding` \
             [? two-drivers] | `nixpkgs' compat RUNPATH`: nothing (nixpkgs' packaging); \
             `jetpack-nixos' cuda_compat`: nothing (jetpack-nixos' cuda_compat, built with its \
             l4t-core); `LD_FALLBACK_PATH`: `LD_FALLBACK_PATH=/usr/lib/aarch64-linux-gnu/tegra` |"
        );
        // `LD_FALLBACK_PATH` runs there with the patch and fails without it (every run here
        // "fails" unpatched), so it is named as needing the patch.
        assert!(
            lead.ends_with("(the unpatched loader fails where they run): `LD_FALLBACK_PATH`.\n"),
            "{lead}"
        );
    }

    #[test]
    fn the_first_table_says_what_to_do_when_the_default_fails() {
        let report = report(|approach, column| match (approach.number, column.id) {
            (7 | 2, "jetpack6-default") => ("c-fails", Basis::Replayed),
            (1, "nixos-jp5-default") => ("runs", Basis::Replayed),
            _ => ("fails", Basis::Replayed),
        });
        let first = first_table(&report);
        assert!(
            line(&first, "| NixOS, JetPack 5:").ends_with("| [R] runs | [R] runs | nothing |"),
            "{first}"
        );
        // Shipped approaches first (the rows' order), each with what to set for this host.
        assert!(
            line(&first, "| Nix on a JetPack 6 host").ends_with(
                "| [R] fails: x not found | [R] fails: x not found | \
                 [R] `LD_LIBRARY_PATH`, a C++ app only: `LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu/nvidia`<br>\
                 [R] `LD_FALLBACK_PATH` (proposed), a C++ app only: `LD_FALLBACK_PATH=/usr/lib/aarch64-linux-gnu/nvidia` |"
            ),
            "{first}"
        );
        // Where nothing runs, it says so, and what to do instead.
        assert!(
            line(&first, "| Nix on a JetPack 7 host").ends_with(
                "| nothing here works yet: settle `thor-closure` first (`readelf -d` of R38.4's \
                 `libcuda.so.1.1`, or `cargo xtask jetson-replay --real-driver` on a Thor) |"
            ),
            "{first}"
        );
    }

    /// Each driver directory a summary line names is its own column's: a JetPack 6 host is
    /// never told `tegra/` (the summary once named one directory per kind of host, the first
    /// column's), and every row that runs in a column is named in that column's line.
    #[test]
    fn the_summary_and_the_table_agree() {
        // Each kind's default fails and everything else runs: every line names what to set.
        let report = report(|approach, column| {
            let default = KINDS
                .iter()
                .any(|k| k.column == column.id && k.default == approach.number);
            (if default { "fails" } else { "runs" }, Basis::Replayed)
        });
        let (first, lead) = (first_table(&report), lead(&report));
        let triplet = report.target.triplet();
        let named_dirs = |text: &str| -> Vec<String> {
            text.split("_PATH=")
                .skip(1)
                .filter_map(|rest| rest.split('`').next())
                .map(str::to_string)
                .collect()
        };
        for kind in KINDS {
            let row = line(&first, &format!("| {} |", kind.host));
            let dir = column(kind.column).host.driver_dir(triplet);
            let named = named_dirs(row);
            assert!(!named.is_empty(), "{row}");
            for named in named {
                assert_eq!(named, dir, "{}", kind.host);
            }
        }
        for (at, column) in COLUMNS.iter().enumerate() {
            if column.short.is_empty() {
                continue;
            }
            let row = line(&lead, &format!("| {} |", column.short));
            let dir = column.host.driver_dir(triplet);
            for named in named_dirs(row) {
                assert_eq!(named, dir, "{}", column.id);
            }
            for report_row in &report.rows {
                let runs = matches!(
                    verdict(report_row, &report_row.cells[at]),
                    Verdict::Runs(_) | Verdict::CxxOnly(_)
                );
                assert_eq!(
                    runs,
                    row.split(" | ")
                        .nth(1)
                        .unwrap_or_default()
                        .contains(&format!("`{}`", report_row.name)),
                    "{} in {}",
                    report_row.name,
                    column.id
                );
            }
        }
        // Each kind reads a column that exists, and its default row exists.
        for kind in KINDS {
            let _ = column(kind.column);
            let _ = approach(kind.default);
        }
    }
}
