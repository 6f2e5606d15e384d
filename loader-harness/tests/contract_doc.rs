//! docs/contract.md and the matrix table in the code say the same: every row the code cites
//! is in the page, every row of the page has scenarios, and the page's list of scenarios is
//! the code's. An out-of-date list is rewritten (commit the result) and the test fails.

use std::collections::BTreeSet;
use std::path::PathBuf;

use loader_harness::matrix::{Contract, Unpatched, MATRIX};

const BEGIN: &str = "<!-- scenarios: begin";
const END: &str = "<!-- scenarios: end -->";
/// The row checked over the whole matrix rather than by a scenario of its own.
const SENSITIVITY_ROW: u8 = 23;

fn contract_md() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/contract.md")
}

/// The numbers of the page's "The rows" table.
fn documented_rows(text: &str) -> BTreeSet<u8> {
    let section = text
        .split("## The rows")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/contract.md has a `## The rows` section");
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| ")?.split(' ').next()?.parse().ok())
        .collect()
}

fn scenario_list() -> String {
    let mut out = String::from(
        "| row | scenario | with the patch | without the patch |\n|---|---|---|---|\n",
    );
    for s in MATRIX {
        let row = match s.contract {
            Contract::Row(n) => n.to_string(),
            Contract::Story => "story".to_string(),
        };
        let without = match s.unpatched {
            Unpatched::Same => "same",
            Unpatched::Gives(text) => text,
        };
        out.push_str(&format!(
            "| {row} | `{}` | {} | {without} |\n",
            s.id, s.expected
        ));
    }
    out
}

#[test]
fn every_row_the_code_cites_is_documented_and_every_documented_row_is_checked() {
    let text = std::fs::read_to_string(contract_md()).expect("docs/contract.md is readable");
    let documented = documented_rows(&text);
    let cited: BTreeSet<u8> = MATRIX
        .iter()
        .filter_map(|s| match s.contract {
            Contract::Row(n) => Some(n),
            Contract::Story => None,
        })
        .collect();
    let undocumented: Vec<_> = cited.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "rows cited by the code but not in docs/contract.md: {undocumented:?}"
    );
    let unchecked: Vec<_> = documented
        .iter()
        .filter(|n| **n != SENSITIVITY_ROW && !cited.contains(n))
        .collect();
    assert!(
        unchecked.is_empty(),
        "rows of docs/contract.md without a scenario: {unchecked:?}"
    );
    assert!(
        documented.contains(&SENSITIVITY_ROW),
        "docs/contract.md lost row 23"
    );
}

#[test]
fn the_scenario_list_is_the_code_table() {
    let path = contract_md();
    let text = std::fs::read_to_string(&path).expect("docs/contract.md is readable");
    let begin = text
        .find(BEGIN)
        .expect("docs/contract.md has the scenarios-begin marker");
    let list_start = begin + text[begin..].find('\n').expect("a line after the marker") + 1;
    let end = text
        .find(END)
        .expect("docs/contract.md has the scenarios-end marker");
    let wanted = scenario_list();
    if text[list_start..end] == wanted {
        return;
    }
    let updated = format!("{}{wanted}{}", &text[..list_start], &text[end..]);
    std::fs::write(&path, updated).expect("docs/contract.md is writable");
    panic!(
        "the scenario list in {} was out of date with the matrix table; it has been rewritten: review and commit it",
        path.display()
    );
}
