//! `cargo xtask jetson-replay`: every proposed way of using cuda_compat on Jetson, on every kind
//! of host, each cell a real run under the built loader (`loader_tests::replay`), as a table
//! for the terminal, as JSON, or as the generated block of docs/jetson.md.
//!
//! The rows run under the patched loader, `LD_FALLBACK_PATH, fallback first` under the
//! fallback-first variant, and the rows that set LD_FALLBACK_PATH under the unpatched loader
//! too; the three sysroots are taken from
//! `$LD_FALLBACK_SYSROOT_AARCH64[_UNPATCHED|_FALLBACK_FIRST]` or built (and cached) first. The
//! real host libraries come from Debian's archive once ([`loader_tests::replay::HostLibs`]).
//!
//! `--real-driver` runs the same setups against this machine's real NVIDIA driver instead
//! ([`driver_check`]).

pub(crate) mod doc;
pub(crate) mod driver_check;

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use loader_tests::host::{self, tools};
use loader_tests::replay::{self, report, Benches, HostLibs, JetsonFixtures};
use loader_tests::root::Bench;
use model::{Flavour, Target};

use crate::cli::{self, Env, OneRelease};
use crate::util::exit::NeedsAttention;
use crate::util::paths;
use model::Release;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub release: OneRelease,
    /// Target: `x86_64` (native) or `aarch64` (under QEMU user mode) [default: with
    /// `--check` or `--write-doc`, the page's: aarch64, Jetson boards'; else x86_64, as for
    /// every command, which runs the same roots natively, for a quick look].
    #[arg(long, value_parser = cli::target())]
    pub target: Option<Target>,
    /// Print the generated blocks of docs/jetson.md (the tables, the lead table) instead of the
    /// terminal table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Show each run's command and the libraries it mapped (the winning paths).
    #[arg(long)]
    pub why: bool,
    /// Fail when docs/jetson.md's tables or lead table differ from this run's, or its provenance
    /// line names a series other than patches/ holds now.
    #[arg(long, conflicts_with = "write_doc")]
    pub check: bool,
    /// Replace the generated blocks of docs/jetson.md (the tables and the lead table) with this
    /// run's.
    #[arg(long)]
    pub write_doc: bool,
    /// Run the setups against this machine's real NVIDIA driver (a GPU host or a Jetson
    /// board) under the patched and unpatched loaders, and compare with the x86_64
    /// GPU-host measurements; on a machine without a driver, say so: not run (exit status 2).
    #[arg(long, conflicts_with_all = ["markdown", "json", "why", "check", "write_doc"])]
    pub real_driver: bool,
}

/// The flavours whose loaders the replay runs under.
const FLAVOURS: [Flavour; 3] = [Flavour::Patched, Flavour::Unpatched, Flavour::FallbackFirst];

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let release = self.release.release;
        let for_page = self.check || self.write_doc;
        // The page holds one target's replay: checking or writing it means that target.
        let target = match self.target {
            Some(asked) => asked,
            None if for_page => doc::TARGET,
            None => cli::DEFAULT_TARGET_VALUE,
        };
        if self.real_driver {
            return driver_check::run(env, release);
        }
        if for_page && target != doc::TARGET {
            bail!(
                "docs/jetson.md is the {} replay (Jetson boards are {}), not {target}'s: run with --target {}",
                doc::TARGET,
                doc::TARGET,
                doc::TARGET
            );
        }
        if self.check {
            // Before the replay: a stale page fails without building anything.
            check_provenance(&doc::doc_path(), release)?;
        }
        let started = Instant::now();
        let prepared = Prepared::new(env, release, target)?;
        let preparation = started.elapsed();
        let benches = prepared.benches();
        let mut report = replay::run(&benches);
        report.provenance = Some(provenance(release, target, &report.host_libraries)?);
        diagln!(
            "jetson-replay: {} runs in {:.1} s (sysroots and fixtures ready in {:.1} s)",
            report.runs().count(),
            (started.elapsed() - preparation).as_secs_f64(),
            preparation.as_secs_f64()
        );
        if self.json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&report).context("cannot write the JSON report")?
            );
        } else if self.markdown {
            out!("{}", report.render_markdown());
            out!("\n{}", report.render_summary());
        } else {
            out!("{}", report.render_text(self.why));
        }
        if report.has_unrun() {
            bail!("some runs could not be made (see `not run` above)");
        }
        let doc = doc::doc_path();
        if self.write_doc {
            doc::write(&doc, &report)?;
            diagln!(
                "jetson-replay: wrote the tables and the lead table into {}",
                doc.display()
            );
        } else if self.check {
            doc::check(&doc, &report)?;
            diagln!("jetson-replay: {} is up to date", doc.display());
        }
        Ok(())
    }
}

/// The host libraries, and the bench of each flavour the replay runs under (or why it is
/// missing: its runs are then reported as not run, and the command fails).
pub(crate) struct Prepared {
    release: Release,
    target: Target,
    host: HostLibs,
    flavours: Vec<(Flavour, Result<FlavourBench, String>)>,
}

/// One flavour's bench, and the Jetson fixtures compiled for its sysroot.
type FlavourBench = (Bench, JetsonFixtures);

impl Prepared {
    /// The sysroots taken from `$LD_FALLBACK_SYSROOT_*` or built (and cached), the fixtures
    /// compiled for each, and the host libraries fetched once.
    pub(crate) fn new(env: &Env, release: Release, target: Target) -> Result<Prepared> {
        host::require(&[tools::BWRAP, tools::PATCHELF])?;
        let cache = host::cache_dir()?;
        let host_libs = HostLibs::ensure(target, &cache)
            .map_err(|why| anyhow::anyhow!("{}", why.reason()))
            .context("cannot fetch the host libraries the replay places")?;
        let mut flavours = Vec::new();
        for flavour in FLAVOURS {
            let bench = || -> Result<(Bench, JetsonFixtures)> {
                let sysroot = crate::resolution::obtain_sysroot(env, release, target, flavour)?;
                let bench = Bench::new(sysroot, &cache)
                    .with_context(|| format!("cannot prepare the {flavour} bench"))?;
                let fixtures =
                    JetsonFixtures::ensure(&bench.sysroot, &bench.layout, &cache, &host_libs)
                        .with_context(|| {
                            format!("cannot compile the Jetson fixtures ({flavour})")
                        })?;
                Ok((bench, fixtures))
            };
            // The patched loader is every row's: without it there is no table. The others'
            // rows (or lines) are reported as not run, with the reason, and the run fails.
            let bench = match bench() {
                Err(err) if flavour == Flavour::Patched => return Err(err),
                other => other.map_err(|err| format!("{err:#}")),
            };
            flavours.push((flavour, bench));
        }
        Ok(Prepared {
            release,
            target,
            host: host_libs,
            flavours,
        })
    }

    pub(crate) fn benches(&self) -> Benches<'_> {
        Benches {
            target: self.target,
            release: self.release,
            host: self.host.clone(),
            benches: self
                .flavours
                .iter()
                .map(|(flavour, bench)| {
                    let bench = match bench {
                        Ok((bench, fixtures)) => Ok((bench, fixtures.clone())),
                        Err(why) => Err(why.clone()),
                    };
                    (*flavour, bench)
                })
                .collect::<BTreeMap<_, _>>(),
        }
    }
}

/// `Generated on <UTC> from commit <id> ...`: the date, the checkout's commit and the content
/// ids of the series and the variant the loaders were built from.
fn provenance(release: Release, target: Target, host_libraries: &[String]) -> Result<String> {
    let root = paths::project_root();
    let repo = crate::util::git::discover(&root)
        .with_context(|| format!("cannot open the git repository of {}", root.display()))?;
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .context("cannot read the checkout's HEAD commit")?;
    let mut status = git2::StatusOptions::new();
    status.include_untracked(false);
    let dirty = !repo
        .statuses(Some(&mut status))
        .context("cannot read the checkout's status")?
        .is_empty();
    let [series, variant] = series_ids(release);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    Ok(format!(
        "{}on {} from commit {}{} (glibc {release} {target}; series patches/{release} {series}, fallback-first variant {variant}; host libraries: Debian 12 {}).",
        report::PROVENANCE,
        crate::series::mail_date::utc_minutes(now),
        &head.id().to_string()[..12],
        if dirty { " with local changes" } else { "" },
        host_libraries
            .iter()
            .map(|v| v.split(" (").next().unwrap_or(v))
            .collect::<Vec<_>>()
            .join(", "),
    ))
}

/// The short content ids of the series in patches/ and of its fallback-first variant, as
/// the provenance line names them.
fn series_ids(release: Release) -> [String; 2] {
    let patches = paths::patches_dir();
    [Flavour::Patched, Flavour::FallbackFirst].map(|flavour| {
        match crate::sysroot::source::series_for(&patches, release, flavour) {
            Ok(Some(series)) => series.content_id()[..12].to_string(),
            _ => "none".to_string(),
        }
    })
}

/// Fails when docs/jetson.md's provenance line names other series than patches/ holds now
/// for `release`: the table was made from loaders that are not this series'.
fn check_provenance(doc: &std::path::Path, release: Release) -> Result<()> {
    match stale_page(doc, release)? {
        None => Ok(()),
        // A finding (exit status 2), like every check's.
        Some(why) => Err(NeedsAttention(format!(
            "{} is stale: {why}; regenerate it with `cargo xtask jetson-replay --release {release} --target {} --write-doc`",
            doc.display(),
            doc::TARGET
        ))
        .into()),
    }
}

/// Why `doc`'s replay table was not made from the series patches/ holds now for `release`
/// (see [`stale_provenance`]), if it was not. `cargo xtask regenerate --check` asks too.
pub(crate) fn stale_page(doc: &std::path::Path, release: Release) -> Result<Option<String>> {
    let page =
        std::fs::read_to_string(doc).with_context(|| format!("cannot read {}", doc.display()))?;
    let block = report::generated_block(&page, report::TABLE).unwrap_or_default();
    Ok(stale_provenance(block, release, &series_ids(release)))
}

/// Why a generated block's provenance line (`... (glibc X.Y T; series patches/X.Y <id>,
/// fallback-first variant <id>).`) does not describe `release` with the series `current`
/// (the series' and the variant's short ids), if it does not.
fn stale_provenance(block: &str, release: Release, current: &[String; 2]) -> Option<String> {
    let Some(line) = block
        .lines()
        .find(|line| line.starts_with(report::PROVENANCE))
    else {
        return Some("its generated block has no provenance line".into());
    };
    let word_after = |marker: &str| {
        let rest = &line[line.find(marker)? + marker.len()..];
        // An id (or `none`) ends at the first character that cannot be part of one: `,`, `)`
        // or `;` (before the host libraries' versions), whatever follows.
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        Some(&rest[..end])
    };
    let recorded = [
        word_after(&format!("series patches/{release} ")),
        word_after("fallback-first variant "),
    ];
    let [Some(series), Some(variant)] = recorded else {
        return Some(format!(
            "its provenance line names no series of glibc {release} and its variant: {line}"
        ));
    };
    let names = [
        format!("patches/{release}"),
        "the fallback-first variant".to_string(),
    ];
    let stale: Vec<String> = names
        .iter()
        .zip([series, variant])
        .zip(current)
        .filter(|((_, recorded), now)| recorded != now)
        .map(|((what, recorded), now)| {
            format!("it was made from {what} {recorded}, which is now {now}")
        })
        .collect();
    (!stale.is_empty()).then(|| stale.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A docs/jetson.md line made from an older series: series 56c2e68776b1 while patches/2.44
    /// was 6ef488e4c62a.
    const LINE: &str = "Generated on 2026-11-30 16:13 UTC from commit 66138f4e4a94 (glibc 2.44 aarch64; series patches/2.44 56c2e68776b1, fallback-first variant 64e80d3727ed).";

    fn block(line: &str) -> String {
        format!(
            "{}\n{line}\n\n| approach |\n{}\n",
            report::TABLE.begin,
            report::TABLE.end
        )
    }

    fn ids(series: &str, variant: &str) -> [String; 2] {
        [series.to_string(), variant.to_string()]
    }

    #[test]
    fn a_provenance_line_naming_another_series_is_stale() {
        let release = Release::parse("2.44").unwrap();
        let block = block(LINE);
        assert_eq!(
            stale_provenance(&block, release, &ids("56c2e68776b1", "64e80d3727ed")),
            None
        );
        assert_eq!(
            stale_provenance(&block, release, &ids("6ef488e4c62a", "64e80d3727ed")).unwrap(),
            "it was made from patches/2.44 56c2e68776b1, which is now 6ef488e4c62a"
        );
        let why = stale_provenance(&block, release, &ids("56c2e68776b1", "none")).unwrap();
        assert!(
            why.contains("fallback-first variant 64e80d3727ed, which is now none"),
            "{why}"
        );
        // A page made for another release names no series of this one.
        let why = stale_provenance(&block, Release::parse("2.43").unwrap(), &ids("a", "b"));
        assert!(why.unwrap().contains("names no series of glibc 2.43"));
        // A line made with local changes reads the same.
        let dirty = LINE.replace("66138f4e4a94 (", "66138f4e4a94 with local changes (");
        assert_eq!(
            stale_provenance(
                &self::block(&dirty),
                release,
                &ids("56c2e68776b1", "64e80d3727ed")
            ),
            None
        );
        // The line may also name the host's Debian libraries after a `;`.
        let with_hosts = LINE.replace(
            "64e80d3727ed).",
            "64e80d3727ed; host libraries: Debian 12 libgcc-s1 12.2.0-14+deb12u1).",
        );
        assert_eq!(
            stale_provenance(
                &self::block(&with_hosts),
                release,
                &ids("56c2e68776b1", "64e80d3727ed")
            ),
            None
        );
        assert!(stale_provenance(&self::block(""), release, &ids("a", "b"))
            .unwrap()
            .contains("no provenance line"));
    }
}
