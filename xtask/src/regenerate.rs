//! `cargo xtask regenerate [--check]`: every generated file and block of the project
//! (`generated::PARTS`, each naming its generator), written again or, with `--check`,
//! compared with what its generator makes now. The parts this command can make itself (the
//! CI workflow, the support page from docs/support.json, docs/contract.md's scenario list,
//! README's sentence on the supported releases, from data/releases.json, README's "What to
//! set" and the 222 entry's note, from the Jetson replay's definitions)
//! are made and compared; those a run of the real loaders writes (the example outputs, the
//! lddtree table, docs/jetson.md) are checked for their markers and said to be SKIPPED here,
//! with the command that writes them (docs/jetson.md's table also for the series its
//! provenance line names). Exit status 2 when a part is stale.

use std::path::Path;

use anyhow::{Context, Result};
use generated::{Freshness, Kind, Part};
use loader_tests::matrix::{Contract, Unpatched, MATRIX};

use crate::util::exit::NeedsAttention;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Compare instead of writing: name each stale part and exit with status 2.
    #[arg(long)]
    pub check: bool,
}

impl Args {
    pub(crate) fn run(self) -> Result<()> {
        let root = crate::util::paths::project_root();
        let report = run(&root, generated::PARTS, self.check)?;
        out!("{}", report.text);
        if report.stale > 0 {
            return Err(NeedsAttention(format!(
                "{} generated part(s) stale: run the command named with each",
                report.stale
            ))
            .into());
        }
        Ok(())
    }
}

/// Writes every part this command makes under `root` and says, part by part, what it did
/// and which parts a run of the loaders writes: for the commands that change the table of
/// releases (a new release's update, a retirement).
pub(crate) fn write_all(root: &Path) -> Result<String> {
    Ok(run(root, generated::PARTS, false)?.text)
}

/// What a run found and said.
pub(crate) struct Report {
    pub text: String,
    pub stale: usize,
}

/// Checks or writes `parts` under `root`.
pub(crate) fn run(root: &Path, parts: &[Part], check: bool) -> Result<Report> {
    let mut text = String::new();
    let mut stale = 0;
    for part in parts {
        let label = part.label();
        let line = match render(root, part)? {
            Some(wanted) if check => match part.compare(root, &wanted)? {
                Freshness::Fresh => format!("fresh    {label}"),
                Freshness::Stale { line, regenerate } => {
                    stale += 1;
                    format!("STALE    {label}: differs from line {line} on; run `{regenerate}`")
                }
                Freshness::OldMarker { regenerate } => {
                    stale += 1;
                    format!("STALE    {label}: its begin marker names another generator; run `{regenerate}`")
                }
            },
            Some(wanted) => match part.write(root, &wanted)? {
                true => format!("wrote    {label}"),
                false => format!("fresh    {label}"),
            },
            None => match by_run(root, part)? {
                None => format!(
                    "SKIPPED  {label}: written by a run of the loaders, `{}`; not made here",
                    part.generator
                ),
                Some(why) => {
                    stale += 1;
                    format!("STALE    {label}: {why}; run `{}`", part.generator)
                }
            },
        };
        text.push_str(&line);
        text.push('\n');
    }
    Ok(Report { text, stale })
}

/// What the part's generator makes now, when this command can make it.
fn render(root: &Path, part: &Part) -> Result<Option<String>> {
    Ok(Some(if *part == generated::WORKFLOW {
        crate::ci::workflow::render()
    } else if *part == generated::SUPPORT_PAGE {
        let doc = crate::verify::support::SupportDoc::read(root)?
            .context("docs/support.json is missing: the support page is rendered from it")?;
        doc.markdown()
    } else if *part == generated::CONTRACT_SCENARIOS {
        contract_scenarios()
    } else if *part == generated::README_RELEASES {
        releases_sentence()
    } else if *part == generated::README_WHAT_TO_SET {
        loader_tests::replay::facts::what_to_set()
    } else if *part == generated::JIT_MISMATCH_NOTE {
        loader_tests::replay::facts::jit_mismatch_note()
    } else if *part == generated::JETSON_SOURCES {
        loader_tests::replay::sources::table()
    } else {
        return Ok(None);
    }))
}

/// A part a run writes: its markers must be there and name its generator, and the Jetson
/// replay's table must say it was made from the series patches/ holds (the newest release's,
/// as `jetson-replay --write-doc` makes it); `Some(why)` when not.
fn by_run(root: &Path, part: &Part) -> Result<Option<String>> {
    let path = root.join(part.path);
    let file = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(match part.kind {
        Kind::Whole => None,
        Kind::Block(_) if part.read(&file, &path).is_err() => {
            Some("its block's markers are missing".into())
        }
        Kind::Block(_) if !file.contains(&part.begin()) => {
            Some("its begin marker names another generator".into())
        }
        Kind::Block(_) if *part == generated::JETSON_TABLE => {
            crate::jetson_replay::stale_page(&path, model::Release::newest())?
        }
        Kind::Block(_) => None,
    })
}

/// README's sentence on the supported releases: data/releases.json's rows, the newest last.
fn releases_sentence() -> String {
    let versions: Vec<&str> = model::supported().iter().map(|r| r.version()).collect();
    let listed = match versions.as_slice() {
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => unreachable!("a table has one row at least"),
    };
    format!(
        "The series applies to glibc {listed}; this repository keeps it\n\
         applying, building and proven on each, for x86_64 and aarch64.\n"
    )
}

/// docs/contract.md's list of scenarios: the matrix table, row by row.
fn contract_scenarios() -> String {
    let mut out = String::from(
        "| row | scenario | with the patch | without the patch |\n|---|---|---|---|\n",
    );
    for s in MATRIX {
        let row = match s.contract {
            Contract::Row(n) => n.to_string(),
            Contract::Story => "story".to_string(),
        };
        let without = match s.unpatched {
            Unpatched::Same => "same".to_string(),
            Unpatched::Gives(answer) => answer.to_string(),
        };
        out.push_str(&format!(
            "| {row} | `{}` | {} | {without} |\n",
            s.id, s.expected
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The project's own parts as they are committed: those made here are fresh, those a
    /// run writes are SKIPPED with their command; one edited by hand is named stale, with
    /// the line and the command, and written back.
    #[test]
    fn every_part_is_fresh_skipped_or_named_stale() {
        let root = crate::util::paths::project_root();
        let report = run(&root, generated::PARTS, true).unwrap();
        assert_eq!(report.text, "\
fresh    .github/workflows/verify.yml
fresh    README.md (block releases)
fresh    README.md (block what-to-set)
SKIPPED  README.md (block explain-example): written by a run of the loaders, `cargo test -p ld-fallback-explain --test examples`; not made here
fresh    docs/contract.md (block scenarios)
SKIPPED  docs/explain.md (block explain-example-full): written by a run of the loaders, `cargo test -p ld-fallback-explain --test examples`; not made here
SKIPPED  docs/explain.md (block explain-json-example): written by a run of the loaders, `cargo test -p ld-fallback-explain --test examples`; not made here
SKIPPED  docs/explain.md (block lddtree): written by a run of the loaders, `cargo test -p loader-tests --test explain`; not made here
SKIPPED  docs/jetson.md (block jetson-replay summary): written by a run of the loaders, `cargo xtask jetson-replay --write-doc`; not made here
SKIPPED  docs/jetson.md (block jetson-replay): written by a run of the loaders, `cargo xtask jetson-replay --write-doc`; not made here
fresh    docs/jetson.md (block jetson-sources)
fresh    docs/support.md
fresh    docs/troubleshooting.md (block jit-mismatch)
SKIPPED  docs/troubleshooting.md (block ld-debug-example): written by a run of the loaders, `cargo test -p ld-fallback-explain --test examples`; not made here
SKIPPED  docs/troubleshooting.md (block ld-so-help-example): written by a run of the loaders, `cargo test -p ld-fallback-explain --test examples`; not made here
");
        assert_eq!(report.stale, 0);

        let copy = tempfile::TempDir::new().unwrap();
        let docs = copy.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        let contract = std::fs::read_to_string(root.join("docs/contract.md")).unwrap();
        let edited = contract.replacen("| `01-", "| `01x-", 1);
        assert_ne!(edited, contract);
        std::fs::write(docs.join("contract.md"), &edited).unwrap();
        let jetson = std::fs::read_to_string(root.join("docs/jetson.md")).unwrap();
        std::fs::write(
            docs.join("jetson.md"),
            jetson.replace("<!-- jetson-replay: end -->", ""),
        )
        .unwrap();
        let parts = [generated::CONTRACT_SCENARIOS, generated::JETSON_TABLE];
        let report = run(copy.path(), &parts, true).unwrap();
        let changed = edited.lines().position(|l| l.contains("`01x-")).unwrap()
            - contract
                .lines()
                .position(|l| l.starts_with("<!-- scenarios: begin"))
                .unwrap();
        assert_eq!(
            report.text,
            format!("\
STALE    docs/contract.md (block scenarios): differs from line {changed} on; run `cargo xtask regenerate`
STALE    docs/jetson.md (block jetson-replay): its block's markers are missing; run `cargo xtask jetson-replay --write-doc`
")
        );
        assert_eq!(report.stale, 2);
        run(copy.path(), &parts[..1], false).unwrap();
        assert_eq!(
            std::fs::read_to_string(docs.join("contract.md")).unwrap(),
            contract
        );
    }

    /// docs/jetson.md's table made from another series than patches/ holds is stale, and
    /// says which: the check `cargo xtask ci` relies on, instead of a second replay.
    #[test]
    fn a_jetson_table_from_another_series_is_stale() {
        let root = crate::util::paths::project_root();
        let page = std::fs::read_to_string(root.join("docs/jetson.md")).unwrap();
        let release = model::Release::newest();
        let marker = format!("series patches/{release} ");
        let at = page.find(&marker).unwrap() + marker.len();
        let id = &page[at..at + 12];
        let edited = page.replace(&format!("{marker}{id}"), &format!("{marker}000000000000"));
        let copy = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(copy.path().join("docs")).unwrap();
        std::fs::write(copy.path().join("docs/jetson.md"), edited).unwrap();
        let report = run(copy.path(), &[generated::JETSON_TABLE], true).unwrap();
        assert_eq!(
            report.text,
            format!("STALE    docs/jetson.md (block jetson-replay): it was made from patches/{release} 000000000000, which is now {id}; run `cargo xtask jetson-replay --write-doc`\n")
        );
        assert_eq!(report.stale, 1);
    }
}
