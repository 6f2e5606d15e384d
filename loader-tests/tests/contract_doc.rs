//! docs/contract.md and the matrix table in the code say the same: every row the code cites
//! is in the page, and every row of the page has scenarios. The page's list of scenarios is
//! a generated block: `cargo xtask regenerate` writes it, `--check` compares it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use loader_tests::matrix::{Contract, MATRIX};

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
