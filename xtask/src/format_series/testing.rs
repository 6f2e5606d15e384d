//! The cover letter's testing statement: a few plain lines, made from docs/support.json, in
//! the terms a glibc reviewer reads (releases, target triplets, `make check` patched against
//! unpatched, new failures, what ran under QEMU user mode), never the support page's table.
//! Only verified cells are claimed; every other cell is named as not verified.

use std::collections::{BTreeMap, BTreeSet};

use model::{Release, Target};

use crate::verify::outcome::StepOutcome;
use crate::verify::support::SupportDoc;
use crate::verify::{CellReport, CellState};

/// The lines a mail is filled to.
pub(crate) const WIDTH: usize = 72;

/// The statement: a sentence, a list of one item per target and one for the resolution
/// tests, and the cells that are not verified; filled to [`WIDTH`], ending in a blank line.
pub(crate) fn statement(doc: &SupportDoc) -> String {
    let verified: Vec<&CellReport> = doc
        .cells
        .iter()
        .filter(|cell| cell.state() == CellState::Verified)
        .collect();
    let mut out = String::new();
    if verified.is_empty() {
        out.push_str(&fill("Not tested: no release and target is verified in the project's support record (docs/support.json).", WIDTH));
    } else {
        let releases: BTreeSet<Release> = verified.iter().map(|cell| cell.release).collect();
        let releases: Vec<&str> = releases.iter().map(|r| r.version()).collect();
        let onto = match releases.len() {
            1 => "the series applied to that release",
            _ => "the series rebased onto each release",
        };
        out.push_str(&fill(
            &format!("Tested on glibc {}, with {onto}:", in_words(&releases)),
            WIDTH,
        ));
        let targets: Vec<Tested> = Target::ALL
            .iter()
            .filter_map(|&target| Tested::of(target, &verified))
            .collect();
        for tested in &targets {
            out.push_str(&fill(&tested.suite_line(), WIDTH));
        }
        if let Some(line) = without_the_patch_line(&verified) {
            out.push_str(&fill(&line, WIDTH));
        }
        for line in hardcoded_lines(&verified) {
            out.push_str(&fill(&line, WIDTH));
        }
        out.push_str(&fill(&matrix_line(&targets), WIDTH));
    }
    let unverified: Vec<String> = doc
        .cells
        .iter()
        .filter(|cell| cell.state() != CellState::Verified)
        .map(|cell| {
            let state = match cell.state() {
                CellState::Failed => "failed",
                CellState::Incomplete(_) => "incomplete",
                _ => "not verified",
            };
            format!("{} {} ({state})", cell.release, cell.target.triplet())
        })
        .collect();
    if !unverified.is_empty() {
        out.push('\n');
        out.push_str(&fill(
            &format!("Not verified: {}.", unverified.join(", ")),
            WIDTH,
        ));
    }
    out.push('\n');
    out
}

/// What the verified cells of one target show.
struct Tested {
    target: Target,
    /// glibc's own tests ran: per release, (tests compared, new failures, tests the series
    /// adds, how many of those pass, how many QEMU user mode cannot run), and the tests
    /// failing with and without the series.
    suite: BTreeMap<Release, (usize, usize, usize, usize, usize)>,
    failing_in_both: BTreeSet<String>,
    /// The series' tests QEMU user mode cannot run (declared by verify), with why.
    imposed_by_qemu: BTreeMap<String, String>,
    /// The target's programs ran under QEMU user mode.
    emulated: bool,
    /// Per release: scenarios, passing with the series, not applicable, failing without it.
    matrix: BTreeMap<Release, (usize, usize, usize, usize)>,
}

impl Tested {
    fn of(target: Target, verified: &[&CellReport]) -> Option<Tested> {
        let mut tested = Tested {
            target,
            suite: BTreeMap::new(),
            failing_in_both: BTreeSet::new(),
            imposed_by_qemu: BTreeMap::new(),
            emulated: !target.is_native(),
            matrix: BTreeMap::new(),
        };
        for cell in verified.iter().filter(|cell| cell.target == target) {
            let Some(run) = &cell.run else { continue };
            let steps = &run.steps;
            if let (StepOutcome::Done(diff), StepOutcome::Done(own)) =
                (&steps.elf_regressions, &steps.series_tests)
            {
                let passing = own
                    .tests
                    .iter()
                    .filter(|t| t.status == crate::verify::testsuite::Status::Pass)
                    .count();
                tested.suite.insert(
                    cell.release,
                    (
                        diff.compared(),
                        diff.regressions.len(),
                        own.tests.len(),
                        passing,
                        own.imposed_by_qemu.len(),
                    ),
                );
                tested.imposed_by_qemu.extend(own.imposed_by_qemu.clone());
                // What the machine made fail in both builds: said, as the machine's.
                let facts = run.machine.elf_suite.iter();
                tested
                    .failing_in_both
                    .extend(facts.flat_map(|f| f.failing_in_both.iter().map(|t| t.test.clone())));
            }
            if let (StepOutcome::Done(matrix), StepOutcome::Done(without)) =
                (&steps.matrix, &steps.sensitivity)
            {
                tested.matrix.insert(
                    cell.release,
                    (
                        matrix.total,
                        matrix.pass,
                        matrix.not_applicable.len(),
                        without.matrix.fails_without_patch,
                    ),
                );
            }
        }
        (!tested.matrix.is_empty() || !tested.suite.is_empty()).then_some(tested)
    }

    fn suite_line(&self) -> String {
        let triplet = self.target.triplet();
        if self.suite.is_empty() {
            return match self.emulated {
                true => format!("- {triplet}: cross-compiled, run under QEMU user mode; glibc's testsuite was not run there, only the resolution tests."),
                false => format!("- {triplet}: glibc's testsuite was not run, only the resolution tests."),
            };
        }
        let compared = range(self.suite.values().map(|s| s.0));
        let new_failures: usize = self.suite.values().map(|s| s.1).sum();
        let added = added_tests(&self.suite);
        let all_pass = self.suite.values().all(|s| s.2 == s.3);
        // Those that did not pass are all tests QEMU user mode cannot run: named, with why.
        let all_run_pass = self.suite.values().all(|s| s.2 == s.3 + s.4);
        let outcome = if all_pass {
            "pass".to_string()
        } else if all_run_pass {
            let names: Vec<&str> = self.imposed_by_qemu.keys().map(String::as_str).collect();
            let whys: BTreeSet<&str> = self.imposed_by_qemu.values().map(String::as_str).collect();
            format!(
                "pass, but for {}, UNSUPPORTED under QEMU user mode: {}",
                names.join(", "),
                whys.into_iter().collect::<Vec<_>>().join("; ")
            )
        } else {
            "do not all pass".to_string()
        };
        let mut line = format!(
            "- {triplet}: {}make check subdirs=elf with and without the series, compared test by test: {} ({compared} tests per release); the {added} {}.",
            if self.emulated {
                "cross-compiled, every program run under QEMU user mode through binfmt_misc: "
            } else {
                ""
            },
            match new_failures {
                0 => "no new failures".to_string(),
                1 => "1 new failure".to_string(),
                n => format!("{n} new failures"),
            },
            outcome
        );

        if !self.failing_in_both.is_empty() {
            let names: Vec<&str> = self.failing_in_both.iter().map(String::as_str).collect();
            line.push_str(&format!(
                "  Failing with and without the series on the test machine: {}.",
                names.join(", ")
            ));
        }
        line
    }
}

/// The series' tests against the loader without its change, over every verified cell: they
/// fail there, but for those observed to pass there, which the series names with why; and
/// whether the runs recorded which loader they ran under.
fn without_the_patch_line(verified: &[&CellReport]) -> Option<String> {
    let mut by_design: BTreeMap<String, String> = BTreeMap::new();
    let mut cells = 0;
    let mut unchecked = 0;
    for cell in verified {
        let Some(StepOutcome::Done(without)) =
            cell.run.as_ref().map(|r| &r.steps.without_the_patch)
        else {
            continue;
        };
        cells += 1;
        unchecked += usize::from(without.loaders.is_none());
        by_design.extend(without.by_design.clone());
    }
    if cells == 0 {
        return None;
    }
    let names = |map: &BTreeMap<String, String>| -> Vec<String> {
        map.keys()
            .map(|t| t.trim_start_matches("elf/").to_string())
            .collect()
    };
    let loaders = match unchecked {
        0 => " (each run in a test container installed from that build, its loader checked to be the unpatched one)",
        _ => "",
    };
    Some(match by_design.is_empty() {
        true => format!("- Each test the series adds also ran in a build with the series' tests and support code but without its loader change{loaders}: every one fails there."),
        false => format!(
            "- Each test the series adds also ran in a build with the series' tests and support code but without its loader change{loaders}: every one fails there but {}, which passed there too.",
            in_words(&names(&by_design)),
        ),
    })
}

/// The verified cells' `--enable-hardcoded-path-in-tests` builds, one line each.
fn hardcoded_lines(verified: &[&CellReport]) -> Vec<String> {
    let mut lines = Vec::new();
    for cell in verified {
        let Some(StepOutcome::Done(h)) = cell.run.as_ref().map(|r| &r.steps.hardcoded_paths) else {
            continue;
        };
        let changed: Vec<String> = h
            .changed_upstream
            .iter()
            .map(|t| t.test.trim_start_matches("elf/").to_string())
            .collect();
        let not_built: Vec<String> = h
            .not_built
            .keys()
            .map(|t| t.trim_start_matches("elf/").to_string())
            .collect();
        lines.push(format!(
            "- glibc {} on {}, configured with --enable-hardcoded-path-in-tests: make check subdirs=elf with and without the series, compared: {} ({} tests); the {} series tests built there pass{}{}.",
            cell.release,
            cell.target.triplet(),
            match h.elf_regressions.regressions.len() {
                0 => "no new failures".to_string(),
                n => format!("{n} new failures"),
            },
            h.elf_regressions.compared(),
            h.series_tests.tests.len(),
            match not_built.is_empty() {
                true => String::new(),
                false => format!(" ({} is built only without that option)", in_words(&not_built)),
            },
            match changed.is_empty() {
                true => String::new(),
                false => format!(", and {}, which the series extends, passes", in_words(&changed)),
            }
        ));
    }
    lines
}

/// The resolution tests, over every target.
fn matrix_line(targets: &[Tested]) -> String {
    let mut with = Vec::new();
    let mut without = Vec::new();
    let mut total = BTreeSet::new();
    for tested in targets.iter().filter(|t| !tested_nothing(t)) {
        let triplet = tested.target.triplet();
        let values = tested.matrix.values();
        total.extend(values.clone().map(|m| m.0));
        let pass = range(values.clone().map(|m| m.1));
        if values.clone().all(|m| m.2 == 0) {
            with.push(format!("all {pass} pass on {triplet}"));
        } else {
            let where_ = if tested.emulated {
                " under QEMU user mode"
            } else {
                ""
            };
            with.push(format!(
                "{pass} on {triplet} ({} do not apply{where_})",
                range(values.clone().map(|m| m.2))
            ));
        }
        without.push(format!("{} on {triplet}", range(values.map(|m| m.3))));
    }
    format!(
        "- Resolution tests outside glibc's testsuite ({} scenarios: each step of the search order for DT_NEEDED, dlopen, dlmopen and static dlopen, secure mode, -z nodefaultlib, --inhibit-cache): with the series {}; without it the scenarios that depend on it fail ({}) and the others pass.",
        in_words(&total.iter().map(|n| n.to_string()).collect::<Vec<_>>()),
        with.join(", "),
        without.join(", ")
    )
}

fn tested_nothing(tested: &Tested) -> bool {
    tested.matrix.is_empty()
}

/// `355` or `355 to 537`.
/// How many tests the series adds, as "27", or "27 tests the series adds (26 on 2.36)" where
/// a release has fewer: the series rebased onto an older release may leave out the test of
/// something that release lacks (2.36 has no glibc.rtld.enable_secure, so no
/// tst-fallback-path-secure-tunable), and a bare "26 to 27" leaves a reviewer to guess which.
fn added_tests(suite: &BTreeMap<Release, (usize, usize, usize, usize, usize)>) -> String {
    let most = suite.values().map(|s| s.2).max().unwrap_or(0);
    let fewer: Vec<String> = suite
        .iter()
        .filter(|(_, s)| s.2 < most)
        .map(|(release, s)| format!("{} on {release}", s.2))
        .collect();
    match fewer.is_empty() {
        true => format!("{most} tests the series adds"),
        false => format!("{most} tests the series adds ({})", in_words(&fewer)),
    }
}

fn range(values: impl Iterator<Item = usize>) -> String {
    let values: Vec<usize> = values.collect();
    match (values.iter().min(), values.iter().max()) {
        (Some(min), Some(max)) if min == max => min.to_string(),
        (Some(min), Some(max)) => format!("{min} to {max}"),
        _ => "no".to_string(),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn in_words(items: &[impl AsRef<str>]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [rest @ .., last] => format!(
            "{} and {}",
            rest.iter()
                .map(AsRef::as_ref)
                .collect::<Vec<_>>()
                .join(", "),
            last.as_ref()
        ),
    }
}

/// `text` broken into lines of at most `width` characters at spaces (a word longer than
/// that stands alone); a line that starts with `- ` continues indented by two.
pub(crate) fn fill(text: &str, width: usize) -> String {
    let indent = if text.starts_with("- ") { "  " } else { "" };
    let mut out = String::new();
    let mut line = String::new();
    // Two spaces after a sentence, as glibc's texts have them, are kept inside a line.
    for word in text.split(' ') {
        let word_is_gap = word.is_empty();
        if line.is_empty() {
            if word_is_gap {
                continue;
            }
            line.push_str(word);
        } else if line.chars().count() + 1 + word.chars().count() > width && !word_is_gap {
            out.push_str(line.trim_end());
            out.push('\n');
            line = format!("{indent}{word}");
        } else {
            line.push(' ');
            line.push_str(word);
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::outcome::{CellRun, StepOutcome};
    use crate::verify::provenance::{Provenance, WrittenBy};
    use crate::verify::render::tests::{run_mut, verified};

    fn doc(cells: Vec<CellReport>) -> SupportDoc {
        SupportDoc::new(
            Provenance {
                written_at: "2026-12-01 12:00 UTC".into(),
                commit: "abcdef123456".into(),
                by: WrittenBy::Verify { cached_only: true },
            },
            cells,
        )
    }

    #[test]
    fn every_verified_cell_in_a_few_plain_lines() {
        // The table's size, whatever rows it has (the fixture cells are whole).
        let rows = loader_tests::matrix::MATRIX.len();
        let emulated = rows - 2;
        let cells = ["2.43", "2.44"]
            .iter()
            .flat_map(|r| Target::ALL.map(|t| verified(r, t, "id")))
            .collect();
        assert_eq!(
            statement(&doc(cells)),
            format!(
                "\
Tested on glibc 2.43 and 2.44, with the series rebased onto each
release:
- x86_64-linux-gnu: make check subdirs=elf with and without the series,
  compared test by test: no new failures (484 tests per release); the 2
  tests the series adds pass.
- aarch64-linux-gnu: cross-compiled, every program run under QEMU user
  mode through binfmt_misc: make check subdirs=elf with and without the
  series, compared test by test: no new failures (484 tests per
  release); the 2 tests the series adds pass.
- Each test the series adds also ran in a build with the series' tests
  and support code but without its loader change: every one fails there.
- glibc 2.44 on x86_64-linux-gnu, configured with
  --enable-hardcoded-path-in-tests: make check subdirs=elf with and
  without the series, compared: no new failures (484 tests); the 2
  series tests built there pass, and tst-env-setuid, which the series
  extends, passes.
- Resolution tests outside glibc's testsuite ({rows} scenarios: each step of
  the search order for DT_NEEDED, dlopen, dlmopen and static dlopen,
  secure mode, -z nodefaultlib, --inhibit-cache): with the series all {rows}
  pass on x86_64-linux-gnu, {emulated} on aarch64-linux-gnu (2 do not apply
  under QEMU user mode); without it the scenarios that depend on it fail
  (36 on x86_64-linux-gnu, 35 on aarch64-linux-gnu) and the others pass.

"
            )
        );
    }

    #[test]
    fn a_series_test_qemu_cannot_run_is_named_with_why() {
        let mut cell = verified("2.44", Target::Aarch64, "id");
        let mut name = String::new();
        if let StepOutcome::Done(own) = &mut run_mut(&mut cell).steps.series_tests {
            let test = &mut own.tests[0];
            test.status = crate::verify::testsuite::Status::Unsupported;
            test.reason = Some("unshare: Invalid argument".into());
            name = test.test.clone();
            own.imposed_by_qemu
                .insert(name.clone(), "no user namespace".into());
        }
        let declared = statement(&doc(vec![cell.clone()]));
        let lines: Vec<&str> = declared.lines().collect();
        assert_eq!(
            lines[1..7].join("\n"),
            format!(
                "\
- aarch64-linux-gnu: cross-compiled, every program run under QEMU user
  mode through binfmt_misc: make check subdirs=elf with and without the
  series, compared test by test: no new failures (484 tests per
  release); the 2 tests the series adds pass, but for
  {name}, UNSUPPORTED under QEMU user mode: no user
  namespace."
            )
        );
        // Not declared: the cell is incomplete, and the mail claims nothing for it.
        if let StepOutcome::Done(own) = &mut run_mut(&mut cell).steps.series_tests {
            own.imposed_by_qemu.clear();
        }
        assert_eq!(
            statement(&doc(vec![cell])),
            "Not tested: no release and target is verified in the project's support\nrecord (docs/support.json).\n\nNot verified: 2.44 aarch64-linux-gnu (incomplete).\n\n"
        );
    }

    /// A release whose series has fewer tests is named with its count, not folded into a
    /// range.
    #[test]
    fn a_release_with_fewer_series_tests_is_named() {
        // 2.43's series without its second test, everywhere the cell counts it.
        let mut older = verified("2.43", Target::X86_64, "id");
        let run = run_mut(&mut older);
        if let StepOutcome::Done(own) = &mut run.steps.series_tests {
            own.tests.pop();
        }
        if let StepOutcome::Done(without) = &mut run.steps.without_the_patch {
            without.tests.pop();
        }
        if let StepOutcome::Done(diff) = &mut run.steps.elf_regressions {
            diff.series_own.pop();
            diff.listed.patched.count -= 1;
        }
        if let Some(suite) = &mut run.machine.elf_suite {
            suite.patched.total -= 1;
            suite.patched.pass -= 1;
        }
        let text = statement(&doc(vec![older, verified("2.44", Target::X86_64, "id")]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[2..5].join("\n"),
            "\
- x86_64-linux-gnu: make check subdirs=elf with and without the series,
  compared test by test: no new failures (484 tests per release); the 2
  tests the series adds (1 on 2.43) pass."
        );
    }

    #[test]
    fn cells_that_are_not_verified_are_named_and_claim_nothing() {
        // The table's size, whatever rows it has (the fixture cells are whole).
        let rows = loader_tests::matrix::MATRIX.len();
        let mut failing = verified("2.44", Target::X86_64, "id");
        if let StepOutcome::Done(diff) = &mut run_mut(&mut failing).steps.elf_regressions {
            diff.regressions.push(crate::verify::testsuite::Change {
                test: "elf/tst-x".into(),
                unpatched: crate::verify::testsuite::Status::Pass,
                patched: crate::verify::testsuite::Status::Fail,
                reason: None,
            });
        }
        let mut unproven = verified("2.44", Target::Aarch64, "id");
        unproven.run = None::<CellRun>;
        let text = statement(&doc(vec![
            verified("2.43", Target::X86_64, "id"),
            failing,
            unproven,
        ]));
        assert_eq!(
            text,
            format!(
                "\
Tested on glibc 2.43, with the series applied to that release:
- x86_64-linux-gnu: make check subdirs=elf with and without the series,
  compared test by test: no new failures (484 tests per release); the 2
  tests the series adds pass.
- Each test the series adds also ran in a build with the series' tests
  and support code but without its loader change: every one fails there.
- Resolution tests outside glibc's testsuite ({rows} scenarios: each step of
  the search order for DT_NEEDED, dlopen, dlmopen and static dlopen,
  secure mode, -z nodefaultlib, --inhibit-cache): with the series all {rows}
  pass on x86_64-linux-gnu; without it the scenarios that depend on it
  fail (36 on x86_64-linux-gnu) and the others pass.

Not verified: 2.44 x86_64-linux-gnu (failed), 2.44 aarch64-linux-gnu
(not verified).

"
            )
        );
        assert_eq!(
            statement(&doc(Vec::new())),
            "Not tested: no release and target is verified in the project's support\nrecord (docs/support.json).\n\n"
        );
    }
}
