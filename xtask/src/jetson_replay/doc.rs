//! docs/jetson.md's generated blocks: the tables (with the helpers tables and the rules) and
//! the summary, written from a replay (`--write-doc`) or checked against one (`--check`). The
//! Sources table needs no run: `cargo xtask regenerate` writes it.
//! Each block is
//! compared without its provenance line; the page is rewritten in one write, so an
//! interrupted `--write-doc` leaves the old page or the new one.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use loader_tests::replay::report::{self, Block};
use loader_tests::replay::ReplayReport;

use crate::util::exit::NeedsAttention;
use crate::util::paths;
use model::Target;

/// The target docs/jetson.md is the replay of: Jetson boards'.
pub(crate) const TARGET: Target = Target::Aarch64;

/// docs/jetson.md of the checkout.
pub(crate) fn doc_path() -> PathBuf {
    paths::project_root().join("docs/jetson.md")
}

/// The page's blocks and what this report renders for each.
fn blocks(report: &ReplayReport) -> [(Block, String); 2] {
    [
        (report::TABLE, report.render_markdown()),
        (report::SUMMARY, report.render_summary()),
    ]
}

/// Fails, with a diff per block, when the page's blocks are not this report's.
pub(crate) fn check(doc: &Path, report: &ReplayReport) -> Result<()> {
    let page =
        std::fs::read_to_string(doc).with_context(|| format!("cannot read {}", doc.display()))?;
    let mut diffs = String::new();
    for (block, rendered) in blocks(report) {
        let Some(current) = report::generated_block(&page, block) else {
            bail!("{} has no generated block {}", doc.display(), block.begin);
        };
        let (old, new) = (report::body(current), report::body(&rendered));
        if old != new {
            diffs.push_str(
                &similar::TextDiff::from_lines(&old, &new)
                    .unified_diff()
                    .header("docs/jetson.md", "this run")
                    .to_string(),
            );
        }
    }
    if diffs.is_empty() {
        return Ok(());
    }
    // A finding (exit status 2), like every check's.
    Err(NeedsAttention(format!(
        "{} is out of date with the replay:\n{diffs}\nupdate it with `cargo xtask jetson-replay --target {TARGET} --write-doc`",
        doc.display()
    ))
    .into())
}

/// Replaces the page's generated blocks with this report's.
pub(crate) fn write(doc: &Path, report: &ReplayReport) -> Result<()> {
    let page =
        std::fs::read_to_string(doc).with_context(|| format!("cannot read {}", doc.display()))?;
    let updated = with_blocks(&page, &blocks(report))
        .with_context(|| format!("cannot update {}", doc.display()))?;
    let staged = doc.with_extension("md.new");
    std::fs::write(&staged, updated)
        .with_context(|| format!("cannot write {}", staged.display()))?;
    std::fs::rename(&staged, doc).with_context(|| format!("cannot replace {}", doc.display()))
}

/// `page` with each block replaced by its new text; every block must be there.
fn with_blocks(page: &str, blocks: &[(Block, String)]) -> Result<String> {
    let mut page = page.to_string();
    for (block, rendered) in blocks {
        let Some(current) = report::generated_block(&page, *block) else {
            bail!(
                "no generated block: add the lines {} and {} where it goes",
                block.begin,
                block.end
            );
        };
        page = page.replacen(current, rendered, 1);
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_is_replaced_and_a_missing_one_is_named() {
        let page = format!(
            "intro\n{}\nold summary\n{}\nmiddle\n{}\nold table\n{}\nend\n",
            report::SUMMARY.begin,
            report::SUMMARY.end,
            report::TABLE.begin,
            report::TABLE.end
        );
        let new_table = format!(
            "{}\nnew table\n{}\n",
            report::TABLE.begin,
            report::TABLE.end
        );
        let new_summary = format!(
            "{}\nnew summary\n{}\n",
            report::SUMMARY.begin,
            report::SUMMARY.end
        );
        let updated = with_blocks(
            &page,
            &[
                (report::TABLE, new_table.clone()),
                (report::SUMMARY, new_summary.clone()),
            ],
        )
        .unwrap();
        assert!(updated.contains("new table") && updated.contains("new summary"));
        assert!(!updated.contains("old table") && !updated.contains("old summary"));
        assert!(updated.starts_with("intro\n") && updated.ends_with("end\n"));
        let without = page.replace(report::SUMMARY.begin, "");
        let err = with_blocks(&without, &[(report::SUMMARY, new_summary)]).unwrap_err();
        assert!(format!("{err:#}").contains("jetson-replay summary: begin"));
    }
}
