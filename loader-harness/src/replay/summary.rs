//! The summary of docs/jetson.md, computed from the replay's runs: every bullet is a reading
//! of the table (which approaches run where, what the patch changes, where it does not help,
//! how a user opts out, which JIT helper cuda_compat's driver gets, what enters the process
//! from the host's multiarch directory), so `--check` catches a summary that the table no
//! longer supports.

use std::fmt::Write;
use std::path::Path;

use super::report::{CellReport, ReplayReport, RunReport, SUMMARY};
use super::{Origin, APPROACHES, COLUMNS};
use model::Flavour;

/// What a cell came to under its row's loader (first way, nixpkgs' RUNPATH).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Every run worked on cuda_compat's driver.
    Compat,
    /// Every run worked on the board's driver.
    Board,
    /// No run worked: the outcome.
    Fails(String),
    /// Some runs worked: the outcome, runs named.
    Depends(String),
}

fn main_runs(cell: &CellReport, flavour: Flavour) -> Vec<&RunReport> {
    let way = cell.runs.first().and_then(|r| r.key.way);
    cell.runs
        .iter()
        .filter(|r| r.key.flavour == flavour && r.key.origin == Origin::Last && r.key.way == way)
        .collect()
}

fn verdict(cell: &CellReport, flavour: Flavour) -> Verdict {
    let runs = main_runs(cell, flavour);
    if !runs.is_empty() && runs.iter().all(|r| r.works) {
        if runs.iter().all(|r| r.outcome.starts_with("runs: compat")) {
            Verdict::Compat
        } else if runs.iter().all(|r| r.outcome.starts_with("runs: driver")) {
            Verdict::Board
        } else {
            Verdict::Depends(cell.outcome().to_string())
        }
    } else if runs.iter().any(|r| r.works) {
        Verdict::Depends(cell.outcome().to_string())
    } else {
        Verdict::Fails(cell.outcome().to_string())
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

fn heading<'r>(report: &'r ReplayReport, column: &'r str) -> &'r str {
    report
        .columns
        .iter()
        .find(|c| c.id == column)
        .map(|c| c.heading.as_str())
        .unwrap_or(column)
}

/// The host's own libraries a run had mapped, by file name.
fn from_host(report: &ReplayReport, run: &RunReport) -> Vec<String> {
    let host_lib = format!("/usr/lib/{}", report.target.triplet());
    run.loaded
        .iter()
        .filter(|p| {
            Path::new(p)
                .parent()
                .is_some_and(|d| d == Path::new(&host_lib))
        })
        .filter_map(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect()
}

impl ReplayReport {
    /// The summary block of docs/jetson.md, markers included.
    pub fn render_summary(&self) -> String {
        format!("{}\n{}{}\n", SUMMARY.begin, bullets(self), SUMMARY.end)
    }
}

/// The bullets, one line each, ending with a newline.
pub(crate) fn bullets(report: &ReplayReport) -> String {
    let mut out = String::new();
    per_host(report, &mut out);
    the_patch(report, &mut out);
    opting_out(report, &mut out);
    helpers(report, &mut out);
    the_host_directory(report, &mut out);
    placements(report, &mut out);
    out
}

/// `outcome` without its `fails: ` words, for "approach N fails (<why>)".
fn why(outcome: &str) -> String {
    outcome
        .strip_prefix("fails: ")
        .unwrap_or(outcome)
        .replace(": fails: ", ": ")
}

/// Approach numbers grouped by a text, in row order: `1, 4 and 5 fail (x); 2 fails (y)`.
fn grouped(items: &[(u8, String)], verb: (&str, &str)) -> Vec<String> {
    let mut groups: Vec<(Vec<String>, &str)> = Vec::new();
    for (number, text) in items {
        match groups.iter_mut().find(|(_, t)| *t == text.as_str()) {
            Some((numbers, _)) => numbers.push(number.to_string()),
            None => groups.push((vec![number.to_string()], text)),
        }
    }
    groups
        .iter()
        .map(|(numbers, text)| {
            let verb = if numbers.len() == 1 { verb.0 } else { verb.1 };
            format!("{} {verb} ({text})", list(numbers))
        })
        .collect()
}

/// Per host column: which approaches run the app on which driver, which fail and why.
fn per_host(report: &ReplayReport, out: &mut String) {
    for column in COLUMNS.iter().filter(|c| !c.opt_out && !c.nss) {
        let (mut compat, mut board) = (Vec::new(), Vec::new());
        let (mut fails, mut depends) = (Vec::new(), Vec::new());
        let mut mismatched = Vec::new();
        for row in &report.rows {
            let Some(cell) = row.cells.iter().find(|c| c.column == column.id) else {
                continue;
            };
            match verdict(cell, row.flavour) {
                Verdict::Compat => compat.push(row.approach.to_string()),
                Verdict::Board => board.push(row.approach.to_string()),
                Verdict::Fails(outcome) => fails.push((row.approach, why(&outcome))),
                Verdict::Depends(how) => depends.push((row.approach, how)),
            }
            if cell.outcome().contains("(mismatch)") {
                mismatched.push(row.approach.to_string());
            }
        }
        let mut parts = Vec::new();
        if !compat.is_empty() {
            parts.push(format!(
                "cuda_compat's driver runs the app with {}",
                list(&compat)
            ));
        }
        if !board.is_empty() {
            parts.push(format!("the board's driver runs it with {}", list(&board)));
        }
        parts.extend(grouped(&fails, ("fails", "fail")));
        parts.extend(
            depends
                .iter()
                .map(|(number, how)| format!("{number} depends on the run ({how})")),
        );
        let _ = write!(
            out,
            "- **{}**: {}",
            heading(report, column.id),
            parts.join("; ")
        );
        if !mismatched.is_empty() {
            let _ = write!(
                out,
                ". The driver that runs loads another driver's JIT helper with {}",
                list(&mismatched)
            );
        }
        out.push_str(".\n");
    }
}

/// Rows 7 and 8 against the unpatched loader: where the patch makes CUDA work, and where the
/// fallback does not help.
fn the_patch(report: &ReplayReport, out: &mut String) {
    for approach in APPROACHES
        .iter()
        .filter(|a| a.flavours().contains(&Flavour::Unpatched))
    {
        let Some(row) = report.rows.iter().find(|r| r.approach == approach.number) else {
            continue;
        };
        let (mut needs, mut partly, mut fails) = (Vec::new(), Vec::new(), Vec::new());
        let cuda = |outcome: &str| why(outcome.split("; NSS lookup").next().unwrap_or_default());
        for cell in &row.cells {
            let with = main_runs(cell, row.flavour);
            let without = main_runs(cell, Flavour::Unpatched);
            let all = !with.is_empty() && with.iter().all(|r| r.works);
            let some = with.iter().any(|r| r.works);
            let none_without = without.iter().all(|r| !r.works);
            let unpatched = cuda(cell.unpatched().unwrap_or("not run"));
            if all && none_without {
                needs.push(format!("{} (without: {unpatched})", cell.column));
            } else if some && none_without {
                partly.push(format!(
                    "{} ({}; without: {unpatched})",
                    cell.column,
                    cuda(cell.outcome())
                ));
            } else if !some {
                fails.push(format!("{} ({})", cell.column, cuda(cell.outcome())));
            }
        }
        let _ = writeln!(
            out,
            "- **Approach {} ({})** makes CUDA work where the unpatched loader does not, in every \
             run in: {}; in some runs in: {}. It does not run the app in: {}.",
            approach.number,
            if approach.flavour == Flavour::Patched {
                "LD_FALLBACK_PATH searched last"
            } else {
                "LD_FALLBACK_PATH searched before the default directories"
            },
            list(&needs),
            list(&partly),
            list(&fails)
        );
    }
}

/// The opt-out column: what each approach lets a user set for one run, and what happens.
fn opting_out(report: &ReplayReport, out: &mut String) {
    let Some(column) = COLUMNS.iter().find(|c| c.opt_out) else {
        return;
    };
    let mut works = Vec::new();
    let mut stuck = Vec::new();
    for row in &report.rows {
        let Some(cell) = row.cells.iter().find(|c| c.column == column.id) else {
            continue;
        };
        let ways: Vec<String> = cell
            .ways
            .iter()
            .filter(|w| w.outcome.starts_with("runs: driver") && !w.outcome.contains("; "))
            .map(|w| {
                let action = w.action.as_deref().unwrap_or("nothing");
                let caveat = if w.outcome.contains("libcuda.so.1 mapped") {
                    " (with both libcuda.so.1 mapped)"
                } else {
                    ""
                };
                format!("`{}`{caveat}", short(action))
            })
            .collect();
        if ways.is_empty() {
            let tried: Vec<String> = cell
                .ways
                .iter()
                .map(|w| {
                    format!(
                        "`{}` → {}",
                        short(w.action.as_deref().unwrap_or("nothing")),
                        w.outcome
                    )
                })
                .collect();
            stuck.push(format!("{} ({})", row.approach, tried.join("; ")));
        } else {
            works.push(format!("{}: {}", row.approach, ways.join(" or ")));
        }
    }
    let _ = write!(out, "- **{}**: ", heading(report, column.id));
    if !works.is_empty() {
        let _ = write!(out, "the board's driver runs the app with {}", list(&works));
    }
    if !stuck.is_empty() {
        let _ = write!(
            out,
            "{}no way tried works with {}",
            if works.is_empty() { "" } else { "; " },
            list(&stuck)
        );
    }
    out.push_str(".\n");
}

/// `/nix/store/<hash>-x` shortened as in the table.
fn short(text: &str) -> String {
    match text.find("/nix/store/") {
        Some(at) if text.len() > at + 11 + 32 => {
            format!("{}/nix/store/…{}", &text[..at], &text[at + 11 + 32..])
        }
        _ => text.to_string(),
    }
}

/// The helper runs: which JIT helper cuda_compat's driver gets, by where `$ORIGIN` is.
fn helpers(report: &ReplayReport, out: &mut String) {
    let mut parts = Vec::new();
    for origin in [Origin::Last, Origin::First, Origin::Absent] {
        // (helper, column, approaches), in table order.
        let mut found: Vec<(String, &str, Vec<String>)> = Vec::new();
        for row in &report.rows {
            for cell in &row.cells {
                let run = cell.runs.iter().find(|r| {
                    r.key.flavour == row.flavour
                        && r.key.origin == origin
                        && r.key.linkage == super::Linkage::Needed
                        && r.key.app == super::App::Cxx
                });
                let Some(jit) = run.and_then(|r| r.jit.clone()) else {
                    continue;
                };
                match found
                    .iter_mut()
                    .find(|(j, c, _)| *j == jit && *c == cell.column)
                {
                    Some((_, _, rows)) => rows.push(row.approach.to_string()),
                    None => found.push((jit, cell.column, vec![row.approach.to_string()])),
                }
            }
        }
        let mut by_helper: Vec<(String, Vec<String>)> = Vec::new();
        for (jit, column, rows) in found {
            let place = format!("{column} ({})", list(&rows));
            match by_helper.iter_mut().find(|(j, _)| *j == jit) {
                Some((_, places)) => places.push(place),
                None => by_helper.push((jit, vec![place])),
            }
        }
        let text = by_helper
            .iter()
            .map(|(jit, places)| format!("{jit} in {}", places.join(", ")))
            .collect::<Vec<_>>()
            .join("; ");
        parts.push(format!(
            "With {}: {}",
            origin.label(),
            if text.is_empty() {
                "never reached"
            } else {
                &text
            }
        ));
    }
    let _ = writeln!(
        out,
        "- **cuda_compat's JIT helper** (where its driver loads a module; column (approaches)): {}.",
        parts.join(". ")
    );
}

/// The NSS column: what the process loads from the host's multiarch directory, for the rows
/// whose variable lists it and, as the control, for the others.
fn the_host_directory(report: &ReplayReport, out: &mut String) {
    let Some(column) = COLUMNS.iter().find(|c| c.nss) else {
        return;
    };
    let (mut listed, mut control) = (Vec::new(), Vec::new());
    for row in &report.rows {
        let Some(cell) = row.cells.iter().find(|c| c.column == column.id) else {
            continue;
        };
        let mut apps = Vec::new();
        for app in super::App::ALL {
            let loaded: Vec<String> = main_runs(cell, row.flavour)
                .into_iter()
                .filter(|r| r.key.app == app)
                .flat_map(|r| from_host(report, r))
                .fold(Vec::new(), |mut all, name| {
                    if !all.contains(&name) {
                        all.push(name);
                    }
                    all
                });
            let loaded = if loaded.is_empty() {
                "nothing".to_string()
            } else {
                loaded.join(", ")
            };
            apps.push((app.label(), loaded));
        }
        let text = if apps.iter().all(|(_, l)| *l == apps[0].1) {
            apps[0].1.clone()
        } else {
            apps.iter()
                .map(|(app, loaded)| format!("{app}: {loaded}"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let has_variable = APPROACHES
            .iter()
            .any(|a| a.number == row.approach && a.variable.is_some());
        if has_variable {
            listed.push(format!("{} ({text})", row.approach));
        } else {
            control.push((row.approach, text));
        }
    }
    let _ = writeln!(
        out,
        "- **{}**: loaded from the host's directory with {}; without a variable (the control): {}.",
        heading(report, column.id),
        list(&listed),
        grouped(&control, ("loads", "load")).join("; ")
    );
}

/// Rows 7 and 8 side by side: the cells whose outcome differs.
fn placements(report: &ReplayReport, out: &mut String) {
    let (Some(last), Some(first)) = (
        report.rows.iter().find(|r| r.approach == 7),
        report.rows.iter().find(|r| r.approach == 8),
    ) else {
        return;
    };
    let differ: Vec<String> = last
        .cells
        .iter()
        .zip(&first.cells)
        .filter(|(a, b)| a.outcome() != b.outcome())
        .map(|(a, b)| format!("{} (7: {}; 8: {})", a.column, a.outcome(), b.outcome()))
        .collect();
    let _ = writeln!(
        out,
        "- **Searched last (7) vs before the default directories (8)**: the outcomes differ in \
         {}.",
        list(&differ)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::report::{ColumnReport, RowReport};
    use crate::replay::{App, RunKey};
    use model::Target;

    /// A report whose every run of every cell gives `outcome(approach, column, flavour)`.
    fn replayed(outcome: impl Fn(u8, &str, Flavour) -> &'static str) -> ReplayReport {
        replayed_by(|approach, column, key| outcome(approach, column, key.flavour))
    }

    /// A report whose runs give `outcome(approach, column, run)`.
    fn replayed_by(outcome: impl Fn(u8, &str, &RunKey) -> &'static str) -> ReplayReport {
        let rows = APPROACHES
            .iter()
            .map(|approach| {
                let cells = COLUMNS
                    .iter()
                    .map(|column| {
                        let runs = RunKey::all(approach, column)
                            .into_iter()
                            .map(|key| {
                                let text = outcome(approach.number, column.id, &key);
                                RunReport {
                                    key,
                                    action: None,
                                    outcome: text.into(),
                                    works: text.starts_with("runs"),
                                    jit: text.starts_with("runs: compat").then(|| "own".into()),
                                    command: String::new(),
                                    loaded: Vec::new(),
                                    invocation: None,
                                }
                            })
                            .collect();
                        CellReport::new(approach, column, runs)
                    })
                    .collect();
                RowReport::new(approach, cells)
            })
            .collect();
        ReplayReport {
            release: model::Release::parse("2.44").unwrap(),
            target: Target::Aarch64,
            provenance: None,
            host_libraries: Vec::new(),
            columns: COLUMNS
                .iter()
                .map(|c| ColumnReport {
                    id: c.id,
                    heading: c.heading("aarch64-linux-gnu"),
                })
                .collect(),
            rows,
        }
    }

    #[test]
    fn the_bullets_read_the_table() {
        let report = replayed(
            |approach, column, flavour| match (approach, column, flavour) {
                (7, "jetpack5", Flavour::Patched) => {
                    "runs: compat 12.2 + libnvrm from x, own JIT helper"
                }
                (7, "jetpack5", _) => "fails: libnvrm_gpu.so not found",
                (_, "jetpack5", _) => "fails: libnvrm_gpu.so not found",
                (2, _, _) => "fails: driver 11.4 too old",
                _ => "runs: driver 12.6, own JIT helper",
            },
        );
        let text = bullets(&report);
        assert!(
            text.contains(
                "(`/usr/lib/aarch64-linux-gnu/tegra`, driver 11.4, compat 12.2)**: cuda_compat's \
                 driver runs the app with 7; 1, 2, 3, 4, 5, 6 and 8 fail (libnvrm_gpu.so not found)."
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "**Approach 7 (LD_FALLBACK_PATH searched last)** makes CUDA work where the \
                 unpatched loader does not, in every run in: jetpack5 (without: libnvrm_gpu.so not \
                 found); in some runs in: none."
            ),
            "{text}"
        );
        assert!(text.contains("2 fails (driver 11.4 too old)"), "{text}");
        // The summary changes with the table: a replay where row 7 fails there too says so.
        let worse = replayed(|_, column, _| match column {
            "jetpack5" => "fails: libnvrm_gpu.so not found",
            _ => "runs: driver 12.6, own JIT helper",
        });
        assert!(bullets(&worse).contains(
            "makes CUDA work where the unpatched loader does not, in every run in: none; in some \
             runs in: none."
        ));
        // A C app that fails where the C++ one runs is a cell that works in some runs.
        let partly = replayed_by(
            |approach, column, key| match (approach, column, key.flavour) {
                (7, "jetpack5", Flavour::Patched) if key.app == App::C => {
                    "fails: libstdc++.so.6 not found"
                }
                (7, "jetpack5", Flavour::Patched) => {
                    "runs: compat 12.2 + libnvrm from x, own JIT helper"
                }
                (_, "jetpack5", _) => "fails: libnvrm_gpu.so not found",
                _ => "runs: driver 12.6, own JIT helper",
            },
        );
        let text = bullets(&partly);
        assert!(
            text.contains(
                "in every run in: none; in some runs in: jetpack5 (C++ app: runs: compat 12.2 + \
                 libnvrm from x, own JIT helper; C app: libstdc++.so.6 not found; without: \
                 libnvrm_gpu.so not found)."
            ),
            "{text}"
        );
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(list(&[]), "none");
        assert_eq!(list(&["1".into()]), "1");
        assert_eq!(list(&["1".into(), "2".into(), "3".into()]), "1, 2 and 3");
    }

    #[test]
    fn store_paths_are_shortened() {
        assert_eq!(
            short("LD_LIBRARY_PATH=/nix/store/jz7fkrrb0jfgx2qpzpy5x3mj4w619z3f-nvidia-l4t-cuda-36.4.3/lib"),
            "LD_LIBRARY_PATH=/nix/store/…-nvidia-l4t-cuda-36.4.3/lib"
        );
    }
}
