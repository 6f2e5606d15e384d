//! docs/support.md must describe the series as they are: a row produced from an older series
//! is a stale claim. `cargo xtask verify check-support` (run by `cargo xtask ci`) compares the
//! series content ids the page records with those of patches/ now.

use std::path::Path;

use anyhow::{bail, Context, Result};
use loader_tests::Target;

use crate::series::Series;
use crate::store::release::SUPPORTED;

pub const PAGE: &str = "docs/support.md";

/// Fails naming every release whose row is missing, failing or stale: the page of the
/// checkout at `root` against the series in `patches_dir`.
pub fn check(root: &Path, patches_dir: &Path) -> Result<()> {
    let path = root.join(PAGE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {}: generate it with `cargo xtask verify --release all --target all --markdown > {PAGE}`",
            path.display()
        )
    })?;
    let mut problems = Vec::new();
    let mut unverified = Vec::new();
    for release in SUPPORTED {
        let dir = patches_dir.join(release.version);
        let current = Series::load(&dir)
            .with_context(|| format!("cannot load the series {}", dir.display()))?
            .content_id();
        match recorded_series(&text, release.version) {
            None => problems.push(format!("{release}: no series row")),
            Some(id) if id != current => problems.push(format!(
                "{release}: the page was produced from series {id}, patches/{release} is now {current}"
            )),
            Some(_) => {}
        }
        for target in Target::ALL {
            match cell_row(&text, release.version, target) {
                None => problems.push(format!("{release} {target}: no row")),
                Some(row) => match classify(row) {
                    Row::Passes => {}
                    Row::Unverified => unverified.push(format!("{release} {target}")),
                    Row::Fails => {
                        problems.push(format!("{release} {target}: the row does not pass: {row}"))
                    }
                },
            }
        }
    }
    if !unverified.is_empty() {
        outln!(
            "{PAGE}: not verified yet (the page says so): {}",
            unverified.join(", ")
        );
    }
    if !problems.is_empty() {
        bail!(
            "{} is stale or incomplete:\n  {}\nregenerate it: cargo xtask verify --release all --target all --markdown > {PAGE}",
            path.display(),
            problems.join("\n  ")
        );
    }
    outln!("{PAGE} describes the series in patches/ as they are");
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum Row {
    Passes,
    Fails,
    /// Says so itself and claims nothing, so it is not a stale claim.
    Unverified,
}

/// By the verdict each cell starts with (`ok: ...`, `FAIL: ...`, `skipped: ...`, `not run`),
/// never by words inside a summary: "0 FAIL" or "XPASS/XFAIL" in a passing row are counts.
fn classify(row: &str) -> Row {
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // `| release | target | applies | ... | elf regressions | time |`: the verdicts only.
    let verdicts = cells
        .get(3..cells.len().saturating_sub(2))
        .unwrap_or_default();
    if verdicts
        .iter()
        .any(|cell| cell.starts_with("FAIL") || cell.starts_with("not run"))
    {
        Row::Fails
    } else if verdicts
        .first()
        .is_some_and(|cell| cell.starts_with(crate::verify::cell::NOT_VERIFIED))
    {
        Row::Unverified
    } else {
        Row::Passes
    }
}

/// The series content id recorded for `release` in the "Series" table.
fn recorded_series(text: &str, release: &str) -> Option<String> {
    let section = text.split("## Series").nth(1)?;
    section.lines().find_map(|line| {
        let mut cells = line.split('|').map(str::trim).skip(1);
        if cells.next()? != release {
            return None;
        }
        Some(cells.next()?.trim_matches('`').to_string())
    })
}

/// The main table's row of one cell.
fn cell_row<'t>(text: &'t str, release: &str, target: Target) -> Option<&'t str> {
    let table = text.split("## Series").next()?;
    table.lines().find(|line| {
        let mut cells = line.split('|').map(str::trim).skip(1);
        cells.next() == Some(release) && cells.next() == Some(target.name())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE_TEXT: &str = "| release | target | applies |\n|---|---|---|\n| 2.44 | x86_64 | ok: 2 patches |\n| 2.44 | aarch64 | FAIL: drift |\n\n## Series\n\n| release | series content id | verified |\n|---|---|---|\n| 2.44 | `abc123` | then |\n";

    #[test]
    fn rows_and_series_ids_are_found() {
        assert_eq!(
            recorded_series(PAGE_TEXT, "2.44").as_deref(),
            Some("abc123")
        );
        assert_eq!(recorded_series(PAGE_TEXT, "2.43"), None);
        assert!(cell_row(PAGE_TEXT, "2.44", Target::X86_64)
            .unwrap()
            .contains("ok"));
        assert!(cell_row(PAGE_TEXT, "2.44", Target::Aarch64)
            .unwrap()
            .contains("FAIL"));
        assert!(cell_row(PAGE_TEXT, "2.36", Target::X86_64).is_none());
    }

    #[test]
    fn a_failing_row_fails_and_an_unverified_one_is_only_listed() {
        let passing = "| 2.43 | x86_64 | ok: 2 patches | ok | ok: 63 pass | ok: 6 PASS, 1 UNSUPPORTED, 0 FAIL | ok: 0 regressions, 4 expected to fail (XPASS/XFAIL) | 0.2 min |";
        assert_eq!(classify(passing), Row::Passes);
        let skipped = "| 2.44 | aarch64 | ok: 2 patches | ok | skipped: under QEMU | 0.3 min |";
        assert_eq!(classify(skipped), Row::Passes);
        let failing = "| 2.44 | x86_64 | ok | ok | FAIL: 1 regression | 1.0 min |";
        assert_eq!(classify(failing), Row::Fails);
        let broken = "| 2.44 | x86_64 | FAIL: does not apply | not run | 0.0 min |";
        assert_eq!(classify(broken), Row::Fails);
        let unverified =
            "| 2.36 | x86_64 | not verified: cargo xtask verify --release 2.36 | - | - |";
        assert_eq!(classify(unverified), Row::Unverified);
    }
}
