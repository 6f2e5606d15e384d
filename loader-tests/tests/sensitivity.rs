//! Row 23 of the contract: the same matrix against the unpatched loader fails exactly the
//! scenarios that need the patch, so the suite demonstrably can fail.

mod util;

use std::collections::BTreeSet;

use loader_tests::matrix::MATRIX;
use loader_tests::report::{self, Verdict};
use loader_tests::Target;

#[test]
fn unpatched_loader_fails_exactly_the_scenarios_that_need_the_patch() {
    let bench = util::bench(Target::X86_64, false);
    let outcomes = report::run(bench, None);
    let ran = |o: &&report::Outcome| !matches!(o.verdict, Verdict::Skipped(_));
    let differing: BTreeSet<&str> = outcomes
        .iter()
        .filter(ran)
        .filter(|o| o.actual != o.scenario.expected)
        .map(|o| o.scenario.id)
        .collect();
    let needing: BTreeSet<&str> = outcomes
        .iter()
        .filter(ran)
        .filter(|o| o.scenario.needs_patch())
        .map(|o| o.scenario.id)
        .collect();
    assert!(!needing.is_empty());
    assert_eq!(
        differing,
        needing,
        "without the patch, the scenarios that fail must be exactly those that need it\n{}",
        report::table(&outcomes)
    );
    assert!(
        outcomes.iter().all(|o| !o.verdict.is_failure()),
        "{}",
        report::table(&outcomes)
    );
    for o in outcomes.iter().filter(|o| !ran(o)) {
        eprintln!("SKIPPED {}: {}", o.scenario.id, o.verdict.text());
    }
    assert_eq!(outcomes.len(), MATRIX.len());
}
