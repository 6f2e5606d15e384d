//! The Jetson replay (`cargo xtask jetson-replay`) as tests: its table as a snapshot, docs/
//! jetson.md's tables and lead table the same as this run's, and the cells that need the patch
//! failing without it. The replay is about aarch64 boards: it runs under QEMU with the
//! sysroots named by `$LD_FALLBACK_SYSROOT_AARCH64`, `..._UNPATCHED` and `..._FALLBACK_FIRST`
//! (`cargo xtask ci` sets them) and Debian's arm64 host libraries (fetched once); without the
//! sysroots the tests are ignored, and under CI they fail.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Failed, Trial};
use loader_tests::host::{cache_dir, in_ci};
use loader_tests::replay::rules::Basis;
use loader_tests::replay::{
    self, report, Benches, HostLibs, JetsonFixtures, ReplayReport, Testbed,
};
use loader_tests::replay::{App, Kernel, Linkage, Origin, RunKey, APPROACHES, COLUMNS};
use loader_tests::root::Bench;
use model::{sysroot_env_var, Flavour, Sysroot, Target};

const TARGET: Target = Target::Aarch64;
const FLAVOURS: [Flavour; 3] = [Flavour::Patched, Flavour::Unpatched, Flavour::FallbackFirst];

/// The cells where LD_FALLBACK_PATH is what makes CUDA work: (approach, column).
const NEED_THE_PATCH: &[(u8, &str)] = &[
    (7, "nixos-jp6-wheel"),
    (7, "jetpack6-default"),
    (7, "jetpack5"),
    (7, "jetpack6"),
    (7, "jetpack5-nss"),
    (8, "nixos-jp6-wheel"),
    (8, "jetpack6-default"),
    (8, "jetpack5"),
    (8, "jetpack6"),
    (8, "jetpack5-nss"),
];

/// The cells where LD_FALLBACK_PATH changes how the app fails, into an outcome that rests on a
/// rule or premise nobody can support: on the R38 host cuda_compat finds the board's
/// `libnvrm_*` only through the variable, then meets a driver of its own version
/// (`803-same`); a program without cuda_compat finds the board's driver only through it, and
/// what a Thor's driver needs is the Orin closure only by the model (`thor-closure`).
const PATCH_REACHES_AN_UNKNOWN: &[(u8, &str)] = &[
    (7, "jetpack7"),
    (8, "jetpack7"),
    (7, "jetpack7-default"),
    (8, "jetpack7-default"),
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
    let mut trials: Vec<Trial> = tests
        .into_iter()
        .map(|(name, test)| {
            Trial::test(format!("{TARGET}::{name}"), move || {
                test(replayed()?).map_err(Failed::from)
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    trials.push(
        Trial::test(
            format!("{TARGET}::the-cache-rows-are-decided-by-their-cache"),
            || decided_by_the_cache().map_err(Failed::from),
        )
        .with_ignored_flag(ignored),
    );
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
            drop(benches);
            // The report borrows nothing: the roots go now, side by side, not when the
            // test binary's next run sweeps them (LD_FALLBACK_KEEP_ROOTS=1 keeps them).
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            for (flavour, bench, _) in made {
                if let Err(err) = bench.remove_roots(cpus) {
                    eprintln!("{flavour}: {err:#}");
                }
            }
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
    // `newest` for the newest supported release, as the matrix's snapshots: a new release
    // changes the text (which names the release) in place.
    let release = match report.release == model::Release::newest() {
        true => "newest".to_string(),
        false => report.release.version().to_string(),
    };
    let name = format!("jetson-replay-{release}-{}", report.target);
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
            let reaches_unknown = PATCH_REACHES_AN_UNKNOWN.contains(&(row.approach, cell.column));
            let main = |flavour: Flavour| -> Vec<_> {
                cell.runs
                    .iter()
                    .filter(|r| {
                        r.key.flavour == flavour
                            && r.key.origin == Origin::Last
                            && r.key.kernel == Kernel::Ptx
                    })
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
            } else if reaches_unknown {
                without.iter().all(|r| !r.works)
                    && with.iter().all(|r| !r.works)
                    && with.iter().any(|r| matches!(r.basis, Basis::Unknown(_)))
                    && cell.unpatched() != Some(cell.outcome())
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
                    } else if reaches_unknown {
                        "the patch reaches an unknown"
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

/// Rows 12 and 13 read the `ld.so.cache` their roots declare, and it decides: the container
/// toolkit's root with and without the `00-compat-*.conf` entry (nothing else changed) gets
/// cuda_compat's driver and the board's; row 13's packages are row 1's, which without the
/// cache find no `libnvrm_*` on a JetPack host. Only the unpatched loader is needed: a few
/// runs, not the whole replay.
fn decided_by_the_cache() -> Result<(), String> {
    let e = |e: anyhow::Error| format!("{e:#}");
    let var = sysroot_env_var(TARGET, Flavour::Unpatched);
    let path = std::env::var_os(&var)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("${var} is not set"))?;
    let cache = cache_dir().map_err(e)?;
    let host = HostLibs::ensure(TARGET, &cache).map_err(|why| why.reason())?;
    let sysroot = Sysroot::at(Path::new(&path), TARGET, Flavour::Unpatched).map_err(e)?;
    let bench = Bench::new(sysroot, &cache).map_err(e)?;
    let fixtures =
        JetsonFixtures::ensure(&bench.sysroot, &bench.layout, &cache, &host).map_err(e)?;
    let column = |id: &str| COLUMNS.iter().find(|c| c.id == id).unwrap();
    let approach = |n: u8| APPROACHES.iter().find(|a| a.number == n).unwrap();
    let key = RunKey {
        flavour: Flavour::Unpatched,
        way: None,
        linkage: Linkage::Needed,
        app: App::Cxx,
        origin: Origin::Last,
        kernel: Kernel::Ptx,
    };
    let driver_of = |loaded: &[String]| {
        loaded
            .iter()
            .find(|p| {
                p.rsplit('/')
                    .next()
                    .is_some_and(|f| f.starts_with("libcuda.so"))
            })
            .cloned()
            .unwrap_or_default()
    };
    let testbed = Testbed {
        bench: &bench,
        fixtures: &fixtures,
        host: &host,
    };
    let mut seen = Vec::new();
    for compat_entry in [true, false] {
        let run = replay::run_container_with_compat_entry(
            &testbed,
            column("gate-newer"),
            key,
            compat_entry,
        );
        seen.push((
            format!("toolkit, gate-newer, 00-compat entry {compat_entry}"),
            run.outcome.clone(),
            driver_of(&run.loaded),
        ));
    }
    for (number, id) in [
        (12, "gate-newer"),
        (12, "gate-same"),
        (13, "jetpack5"),
        (1, "jetpack5"),
    ] {
        let run = replay::run_one(&testbed, approach(number), column(id), key);
        seen.push((
            format!("row {number}, {id}"),
            run.outcome.clone(),
            driver_of(&run.loaded),
        ));
    }
    let expected = EXPECTED_CACHE_RUNS
        .iter()
        .map(|(what, outcome, driver)| (what.to_string(), outcome.to_string(), driver.to_string()))
        .collect::<Vec<_>>();
    if seen == expected {
        Ok(())
    } else {
        Err(format!("expected\n{expected:#?}\nran\n{seen:#?}"))
    }
}

/// What [`decided_by_the_cache`] runs see: (run, outcome, the `libcuda.so.1` mapped).
const EXPECTED_CACHE_RUNS: &[(&str, &str, &str)] = &[
    (
        "toolkit, gate-newer, 00-compat entry true",
        "runs: compat 12.9 + libnvrm from /usr/lib/aarch64-linux-gnu/nvidia, own JIT helper",
        "/usr/local/cuda/compat/libcuda.so.1",
    ),
    // The board's 12.6 driver runs the 12.9 runtime (minor-version compatibility), not its
    // PTX.
    (
        "toolkit, gate-newer, 00-compat entry false",
        "fails: PTX of CUDA 12.9 newer than driver 12.6's JIT (222)",
        "/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1",
    ),
    // The hook's own decision: on an Orin it looks in compat_orin/ only, and the image's
    // cuda-compat-12-9 is in compat/: no entry, though 12.9 is newer than the board's 12.6...
    (
        "row 12, gate-newer",
        "fails: PTX of CUDA 12.9 newer than driver 12.6's JIT (222)",
        "/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1",
    ),
    // ...and none for compat 12.6 on driver 12.6 either.
    (
        "row 12, gate-same",
        "runs: driver 12.6, own JIT helper",
        "/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1",
    ),
    (
        "row 13, jetpack5",
        "runs: compat 12.2 + libnvrm from /usr/lib/aarch64-linux-gnu/tegra, own JIT helper",
        "/nix/store/nzmmcf65il90laghlxik3sc7zjlf3ahy-cuda_compat-12.2/compat/libcuda.so.1",
    ),
    // Row 13's packages without the cache.
    ("row 1, jetpack5", "fails: libnvrm_gpu.so not found", ""),
];
