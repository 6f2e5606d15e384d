//! The Jetson replay (`cargo xtask jetson-replay`) as tests: its table as a snapshot, docs/
//! jetson.md's table and summary the same as this run's, and the cells that need the patch
//! failing without it. The replay is about aarch64 boards: it runs under QEMU with the
//! sysroots named by `$LD_FALLBACK_SYSROOT_AARCH64`, `..._UNPATCHED` and `..._FALLBACK_FIRST`
//! (`cargo xtask ci` sets them) and Debian's arm64 host libraries (fetched once); without the
//! sysroots the tests are ignored, and under CI they fail.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Failed, Trial};
use loader_harness::host::{cache_dir, in_ci};
use loader_harness::replay::Origin;
use loader_harness::replay::{self, report, Benches, HostLibs, JetsonFixtures, ReplayReport};
use loader_harness::root::Bench;
use model::{sysroot_env_var, Flavour, Sysroot, Target};

const TARGET: Target = Target::Aarch64;
const FLAVOURS: [Flavour; 3] = [Flavour::Patched, Flavour::Unpatched, Flavour::FallbackFirst];

/// The cells where LD_FALLBACK_PATH is what makes CUDA work: (approach, column).
const NEED_THE_PATCH: &[(u8, &str)] = &[
    (7, "jetpack5"),
    (7, "jetpack6"),
    (7, "jetpack5-nss"),
    (8, "jetpack5"),
    (8, "jetpack6"),
    (8, "jetpack5-nss"),
];

fn main() {
    let args = Arguments::from_args();
    let missing: Vec<String> = FLAVOURS
        .iter()
        .map(|f| sysroot_env_var(TARGET, *f))
        .filter(|var| std::env::var_os(var).is_none_or(|v| v.is_empty()))
        .collect();
    let ignored = !missing.is_empty() && !in_ci();
    if ignored {
        eprintln!(
            "jetson replay tests ignored: ${} not set (cargo xtask ci sets them; under CI this fails)",
            missing.join(", $")
        );
    }
    let tests: [(&str, Check); 3] = [
        ("snapshot-table", snapshot_table),
        ("docs-jetson-md-is-the-replay", doc_is_the_replay),
        ("cells-that-need-the-patch-fail-without-it", need_the_patch),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            Trial::test(format!("{TARGET}::{name}"), move || {
                test(replayed()?).map_err(Failed::from)
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// A test of the replay's report.
type Check = fn(&ReplayReport) -> Result<(), String>;

/// The replay, run once per test binary.
fn replayed() -> Result<&'static ReplayReport, String> {
    static REPORT: OnceLock<Result<ReplayReport, String>> = OnceLock::new();
    REPORT
        .get_or_init(|| {
            let cache = cache_dir().map_err(|e| format!("{e:#}"))?;
            let host = HostLibs::ensure(TARGET, &cache).map_err(|why| why.reason())?;
            let mut made = Vec::new();
            for flavour in FLAVOURS {
                let var = sysroot_env_var(TARGET, flavour);
                let path = std::env::var_os(&var)
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| format!("${var} is not set"))?;
                let prepare = || -> anyhow::Result<(Bench, JetsonFixtures)> {
                    let sysroot = Sysroot::at(Path::new(&path), TARGET, flavour)?;
                    let bench = Bench::new(sysroot, &cache)?;
                    let fixtures =
                        JetsonFixtures::ensure(&bench.sysroot, &bench.layout, &cache, &host)?;
                    Ok((bench, fixtures))
                };
                let (bench, fixtures) = prepare().map_err(|e| format!("{flavour}: {e:#}"))?;
                made.push((flavour, bench, fixtures));
            }
            let release = made[0].1.sysroot.release;
            // The benches live as long as the test binary: the report borrows nothing.
            let made: &'static [(Flavour, Bench, JetsonFixtures)] =
                Box::leak(made.into_boxed_slice());
            let benches = Benches {
                target: TARGET,
                release,
                host: host.clone(),
                benches: made
                    .iter()
                    .map(|(f, b, x)| (*f, Ok((b, x.clone()))))
                    .collect::<BTreeMap<_, _>>(),
            };
            let report = replay::run(&benches);
            if report.has_unrun() {
                return Err(format!(
                    "some runs could not be made:\n{}",
                    report.render_text(true)
                ));
            }
            Ok(report)
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn snapshot_table(report: &ReplayReport) -> Result<(), String> {
    let name = format!("jetson-replay-{}-{}", report.release, report.target);
    let text = report.render_text(false);
    std::panic::catch_unwind(move || insta::assert_snapshot!(name, text))
        .map_err(|_| "snapshot differs (see above; review with cargo insta review)".to_string())
}

fn doc_is_the_replay(report: &ReplayReport) -> Result<(), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/jetson.md");
    let page =
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read docs/jetson.md: {e}"))?;
    let mut differ = String::new();
    for (block, rendered) in [
        (report::TABLE, report.render_markdown()),
        (report::SUMMARY, report.render_summary()),
    ] {
        let current = report::generated_block(&page, block)
            .ok_or_else(|| format!("docs/jetson.md has no block starting {}", block.begin))?;
        let (documented, replayed) = (report::body(current), report::body(&rendered));
        if documented != replayed {
            differ.push_str(&format!(
                "--- docs/jetson.md\n{documented}\n+++ this run\n{replayed}\n"
            ));
        }
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(format!(
        "docs/jetson.md is not this replay's; update it with `cargo xtask jetson-replay --write-doc` and commit it\n{differ}"
    ))
}

/// Row 23 of the contract, for the replay: where the patch makes CUDA work (in any run of the
/// cell), the unpatched loader fails in every run; elsewhere in the rows that set the
/// variable, the unpatched loader gives the same outcome.
fn need_the_patch(report: &ReplayReport) -> Result<(), String> {
    let mut wrong = Vec::new();
    for row in report
        .rows
        .iter()
        .filter(|r| r.approach == 7 || r.approach == 8)
    {
        for cell in &row.cells {
            let needs = NEED_THE_PATCH.contains(&(row.approach, cell.column));
            let main = |flavour: Flavour| -> Vec<_> {
                cell.runs
                    .iter()
                    .filter(|r| r.key.flavour == flavour && r.key.origin == Origin::Last)
                    .collect()
            };
            let (with, without) = (main(row.flavour), main(Flavour::Unpatched));
            if without.is_empty() {
                wrong.push(format!(
                    "{} {}: not run unpatched",
                    row.approach, cell.column
                ));
                continue;
            }
            let ok = if needs {
                with.iter().any(|r| r.works) && without.iter().all(|r| !r.works)
            } else {
                cell.unpatched() == Some(cell.outcome())
            };
            if !ok {
                wrong.push(format!(
                    "{} {} ({}): with {:?}, without {:?}",
                    row.approach,
                    cell.column,
                    if needs {
                        "needs the patch"
                    } else {
                        "must not depend on it"
                    },
                    cell.outcome(),
                    cell.unpatched()
                ));
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n"))
    }
}
