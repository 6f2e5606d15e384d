//! glibc's own tests, run through glibc's test machinery in a build tree, and the regression
//! diff between the patched and the unpatched tree.
//!
//! `make check` leaves one `<test>.test-result` per test (`PASS: elf/tst-foo`, written by
//! `scripts/evaluate-test.sh`) beside its `<test>.out`, which holds what the test printed:
//! the reason of an UNSUPPORTED verdict is its last line there. Its last step writes the
//! top-level `tests.sum`: one line for every test the run was meant to run, the top-level
//! ones (`lint-makefiles`, the header checks) included, `UNRESOLVED` for each that left no
//! result. That file, not the result files found on disk, is what a run is judged by: a test
//! that never ran has no result file to be missed by, and a run whose test pass never started
//! (glibc 2.44's `make check` builds in one make and runs in a second, which a failure in the
//! first skips, `-k` or not) leaves the UNRESOLVED lines, or no `tests.sum` at all.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use model::{Release, Target};
use serde::{Deserialize, Serialize};

use super::emulated::Sandbox;
use crate::sysroot::BuiltTree;
use crate::util::logged;

/// A test's verdict, in glibc's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum Status {
    Pass,
    Fail,
    Unsupported,
    Xpass,
    Xfail,
    Error,
    /// In `tests.sum` without a result: the test never ran.
    Unresolved,
}

impl Status {
    fn parse(word: &str) -> Option<Status> {
        Some(match word {
            "PASS" => Status::Pass,
            "FAIL" => Status::Fail,
            "UNSUPPORTED" => Status::Unsupported,
            "XPASS" => Status::Xpass,
            "XFAIL" => Status::Xfail,
            "ERROR" => Status::Error,
            "UNRESOLVED" => Status::Unresolved,
            _ => return None,
        })
    }

    /// What fails glibc's own `make check`: FAIL and ERROR (and a test that never ran). An
    /// XPASS (a test the configuration marks as expected to fail, passing) is listed but
    /// fails nothing.
    pub(crate) fn is_failure(self) -> bool {
        matches!(self, Status::Fail | Status::Error | Status::Unresolved)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Unsupported => "UNSUPPORTED",
            Status::Xpass => "XPASS",
            Status::Xfail => "XFAIL",
            Status::Error => "ERROR",
            Status::Unresolved => "UNRESOLVED",
        };
        f.write_str(word)
    }
}

/// One test's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TestResult {
    pub status: Status,
    /// For anything but PASS: the last line the test printed, which says why.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

/// Bumped when the recorded results of a build change meaning, so that old records are not
/// read: v1 kept glibc's second line, `original exit status N`, in each test's name; v2 was
/// read from the result files on disk, and so could not see the tests that never ran; v3 took
/// whatever tests.sum there was, a first make's included; v4 could run a container test in
/// the other flavour's test root; v5 took a container test's last line (`running post-clean
/// rsync`) as its reason, v6 the support framework's closing count (`error: 1 test failures`);
/// v7 ran as root without a supplementary group, so that set-group-ID tests before 2.42 were
/// UNSUPPORTED (`Recipe::check_command` gives one now); v8 and v9 ran the series' tests
/// beside files another version of the series had left in the shared build tree's fixture
/// directory (`SERIES_FIXTURES`), which tests that expect a library to be found nowhere found.
const RESULTS_FORMAT: &str = "v10";

/// Results by test name (`elf/tst-foo`).
pub(crate) type Results = BTreeMap<String, TestResult>;

/// When a tree's suite ran: in this verify, or in an earlier one of the same build, whose
/// recorded results this one read (a report must not pass them off as run now).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SuiteRun {
    /// `2026-11-30 14:05 UTC`: when the results were recorded.
    pub at: String,
    /// Read from the record rather than run by this verify.
    pub reused: bool,
}

/// When each tree's suite ran, for a cell's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SuitesRan {
    pub unpatched: SuiteRun,
    pub patched: SuiteRun,
}

/// The results of `subdir`'s tests for the build with cache key `build_key`, and when they
/// ran: from `<cache>/verify/suites/` when that build's were recorded, else from `run`,
/// recorded then. The same build gives the same results (the build key covers every input),
/// so the unpatched half of a cell's comparison is not run again when only the series
/// changed.
pub(crate) fn results_for(
    build_key: &str,
    subdir: &str,
    run: impl FnOnce() -> Result<Results>,
) -> Result<(Results, SuiteRun)> {
    let path = results_path(build_key, subdir)?;
    if let Some(results) = read_results(&path) {
        // The record is written once, when its suite has run: its file's time is when the
        // run ended (on this machine; a cache copied from elsewhere gives the copy's time).
        let recorded = fs::metadata(&path)
            .and_then(|m| m.modified())
            .with_context(|| format!("cannot read the time of {}", path.display()))?;
        let at = super::provenance::utc_minutes_of(recorded);
        return Ok((results, SuiteRun { at, reused: true }));
    }
    let results = run()?;
    let text = serde_json::to_string_pretty(&results).context("cannot serialize test results")?;
    crate::util::durable::replace_file(&path, text.as_bytes())
        .with_context(|| format!("cannot record test results in {}", path.display()))?;
    let at = super::provenance::now();
    Ok((results, SuiteRun { at, reused: false }))
}

fn results_path(build_key: &str, subdir: &str) -> Result<std::path::PathBuf> {
    Ok(crate::util::paths::cache_dir()?
        .join("verify/suites")
        .join(format!("{build_key}-{subdir}-{RESULTS_FORMAT}.json")))
}

/// A record of one suite's results: some 30 KB for 2.44's elf suite.
const RESULTS_LIMIT: model::file::Limit = model::file::Limit {
    bytes: 64 << 20,
    what: "a record of test results",
};

fn read_results(path: &std::path::Path) -> Option<Results> {
    let text = model::file::read_regular_text(path, RESULTS_LIMIT).ok()?;
    serde_json::from_str(&text).ok()
}

/// The list of tests `subdir`'s suite of the build with cache key `build_key` gave, when this
/// machine recorded its results (`None` otherwise): what a record of that build must list.
pub(crate) fn recorded_list(build_key: &str, subdir: &str) -> Result<Option<TestList>> {
    Ok(read_results(&results_path(build_key, subdir)?).map(|r| TestList::of(&r)))
}

/// Whether this machine recorded the results of any suite (else no build's list is here to
/// look up, and no key need be computed for one).
pub(crate) fn any_recorded() -> bool {
    crate::util::paths::cache_dir()
        .ok()
        .and_then(|cache| std::fs::read_dir(cache.join("verify/suites")).ok())
        .is_some_and(|mut entries| entries.next().is_some())
}

/// How many tests the unpatched tree of `release` on `target` is known to list: its row of
/// data/releases.json, from the release's first verified run (`update-release` writes it). A
/// record of a cell that lists fewer than [`unpatched_floor`] of them was cut, whatever its
/// other figures say: they are checked against each other, this against the release.
pub(crate) fn known_unpatched_count(release: Release, target: Target) -> Option<usize> {
    release.facts().elf_tests_unpatched.get(&target).copied()
}

/// The fewest tests a whole run of a tree known to list `known` may list: glibc's makefiles
/// list some tests only where the toolchain has a feature (a C++ compiler, a linker option),
/// so another machine may list a few fewer; a tenth is allowed, a cut to a fraction is not.
pub(crate) fn unpatched_floor(known: usize) -> usize {
    known - known / 10
}

/// The test container's root, installed once per build tree by `make check`
/// (`testroot.pristine/install.stamp` is never made again) and copied per container test
/// (`testroot.root`). The flavours share one build tree, so a root left by another flavour's
/// run would run that flavour's loader in this one's container tests.
const TEST_ROOTS: [&str; 2] = ["testroot.pristine", "testroot.root"];

/// The directories the series' makefile assembles from its test modules (copies and links in
/// `fb/`, `rp/`, `cwd/`...), relative to the build tree. Every key of a release and target
/// shares one build tree, and make never removes a file its makefile no longer names: a
/// library that another version of the series copied there stays, and a test that expects
/// the name to be found nowhere finds it. Each run starts without them; make assembles this
/// series' set again in a second.
const SERIES_FIXTURES: [&str; 1] = ["elf/tst-fallback-path-dir"];

/// Removes what an earlier run in the tree leaves for the next one: the test container's roots
/// (`TEST_ROOTS`) with `with_test_roots`, and the series' fixture directories.
fn remove_leftovers(build: &Path, with_test_roots: bool) -> Result<()> {
    let roots = if with_test_roots {
        &TEST_ROOTS[..]
    } else {
        &[]
    };
    for dir in roots.iter().chain(SERIES_FIXTURES.iter()) {
        let path = build.join(dir);
        match fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(err).with_context(|| format!("cannot remove {}", path.display()))
            }
        }
    }
    Ok(())
}

/// Runs `make -k check subdirs=SUBDIR` in the tree, after removing the results of earlier
/// runs (make would not rerun a test whose output is up to date, and a stale result must
/// never be read as this run's) and the test container's root (see `TEST_ROOTS`), and reads
/// what the run says it ran: the top-level `tests.sum`, which covers SUBDIR's tests and the
/// top-level ones.
///
/// With a `sandbox` (a target this machine runs under QEMU), make runs in it.
pub(crate) fn run_check(
    tree: &BuiltTree,
    subdir: &str,
    jobs: usize,
    sandbox: Option<&Sandbox>,
) -> Result<Results> {
    let build = tree.work.build();
    remove_results(&build.join(subdir))?;
    remove_results(&build)?;
    remove_leftovers(&build, true)?;
    match sandbox {
        None => {
            tree.recipe
                .check(&build, subdir, jobs, &tree.log, &tree.label)?;
        }
        Some(sandbox) => {
            let inner = tree.recipe.check_command(&build, subdir, jobs);
            logged::run_to_end_started(
                &mut sandbox.command(&inner),
                &tree.log,
                &format!(
                    "{}: make check subdirs={subdir} ({})",
                    tree.label, "QEMU, binfmt_misc"
                ),
                crate::sysroot::recipe::make_status,
                &mut |child| sandbox.start(child),
            )?;
        }
    }
    let finished = read_summary(&build).and_then(|results| {
        let unlisted = unlisted_results(&build, subdir, &results)?;
        if unlisted.is_empty() {
            return Ok(results);
        }
        anyhow::bail!(
            "tests.sum lists {} tests, and {} more left results ({}{}): the summary is from a \
             part of the run before them (2.44's first make, which only builds the tests), not \
             from its end",
            results.len(),
            unlisted.len(),
            unlisted[..unlisted.len().min(5)].join(", "),
            if unlisted.len() > 5 { ", ..." } else { "" }
        )
    });
    finished.with_context(|| {
        let errors = make_errors(&tree.log);
        format!(
            "`make check subdirs={subdir}` did not finish its test run{}; its log: {}",
            if errors.is_empty() {
                String::new()
            } else {
                format!(" (make said: {})", errors.join(" | "))
            },
            tree.log.display()
        )
    })
}

/// Runs only `tests` (`elf/tst-foo`, all of `subdir`) in the tree, after removing their old
/// results, and reads each one's `.test-result`: a test that left none never ran
/// (UNRESOLVED, with the log's path). With a `sandbox`, make runs in it.
pub(crate) fn run_tests(
    tree: &BuiltTree,
    subdir: &str,
    tests: &[String],
    jobs: usize,
    sandbox: Option<&Sandbox>,
) -> Result<Results> {
    let build = tree.work.build();
    remove_leftovers(&build, false)?;
    run_tests_in(tree, &build, subdir, tests, jobs, sandbox)
}

/// Runs only `tests`, as [`run_tests`] does, in a test container made from this tree:
/// the test roots an earlier run left (another flavour's loader, say) are removed and
/// installed again from the tree before the tests run. Then asks the tree's loader and the
/// root's which kind each is: the evidence of the loaders every test of the run ran under
/// (a container test under the root's, every other under the tree's `elf/ld.so`).
pub(crate) fn run_tests_in_clean_roots(
    tree: &BuiltTree,
    target: model::Target,
    subdir: &str,
    tests: &[String],
    jobs: usize,
    sandbox: Option<&Sandbox>,
) -> Result<(Results, Loaders)> {
    let build = tree.work.build();
    remove_leftovers(&build, true)?;
    let mut cmd = tree.recipe.test_root_command(&build, jobs);
    let what = format!(
        "{}: the test container's root, installed from this tree",
        tree.label
    );
    let status = run_make(tree, &mut cmd, &what, sandbox)?;
    if !status.success() {
        anyhow::bail!(
            "cannot install the test container's root from the tree ({status}); its log: {}",
            tree.log.display()
        );
    }
    let results = run_tests_in(tree, &build, subdir, tests, jobs, sandbox)?;
    let loaders = Loaders {
        tree: loader_kind(&build.join("elf/ld.so"), sandbox),
        root: loader_kind(
            &build
                .join("testroot.pristine")
                .join(target.loader_path().trim_start_matches('/')),
            sandbox,
        ),
    };
    Ok((results, loaders))
}

/// Which loader a program is, by what its `--help` says: the patched loader documents
/// `--fallback-path` there, the unpatched one does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LoaderKind {
    /// Its `--help` lists `--fallback-path`.
    Patched,
    /// Its `--help` answers without `--fallback-path`.
    Unpatched,
    /// It could not be asked, and why (missing, or `--help` failed).
    Unknown(String),
}

impl std::fmt::Display for LoaderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoaderKind::Patched => f.write_str("patched (its --help lists --fallback-path)"),
            LoaderKind::Unpatched => f.write_str("unpatched (its --help has no --fallback-path)"),
            LoaderKind::Unknown(why) => write!(f, "unknown: {why}"),
        }
    }
}

/// The loaders a run of single tests ran under, asked after the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Loaders {
    /// The build tree's `elf/ld.so`, which every test outside a container runs under.
    pub tree: LoaderKind,
    /// The test container root's loader, which every container test runs under.
    pub root: LoaderKind,
}

impl Loaders {
    /// What is wrong with the run when each of its tests was meant to run under `wanted`.
    pub(crate) fn not(&self, wanted: &LoaderKind) -> Vec<String> {
        [
            ("the build tree's elf/ld.so", &self.tree),
            ("the test container root's loader", &self.root),
        ]
        .into_iter()
        .filter(|(_, kind)| *kind != wanted)
        .map(|(which, kind)| format!("{which} is {kind}"))
        .collect()
    }
}

/// The kind of the loader at `path`, asked with `--help` (in `sandbox` where the target's
/// programs need one).
fn loader_kind(path: &Path, sandbox: Option<&Sandbox>) -> LoaderKind {
    if !path.is_file() {
        return LoaderKind::Unknown(format!("{} is missing", path.display()));
    }
    let mut help = std::process::Command::new(path);
    help.arg("--help");
    let out = match sandbox {
        None => help.output().map_err(anyhow::Error::from),
        Some(sandbox) => {
            let mut cmd = sandbox.command(&help);
            cmd.stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd.spawn()
                .map_err(anyhow::Error::from)
                .and_then(|mut child| match sandbox.start(&mut child) {
                    Ok(()) => child.wait_with_output().map_err(anyhow::Error::from),
                    Err(err) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        Err(err)
                    }
                })
        }
    };
    match out {
        Ok(out) if out.status.success() => kind_of_help(&String::from_utf8_lossy(&out.stdout)),
        Ok(out) => LoaderKind::Unknown(format!(
            "{} --help ended {}: {}",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(err) => LoaderKind::Unknown(format!("cannot run {} --help: {err:#}", path.display())),
    }
}

/// The kind of loader whose `--help` printed `text`.
fn kind_of_help(text: &str) -> LoaderKind {
    if text.contains("--fallback-path") {
        LoaderKind::Patched
    } else if text.contains("--library-path") {
        LoaderKind::Unpatched
    } else {
        LoaderKind::Unknown("its --help does not read as a loader's".into())
    }
}

/// The tests run after their old results are removed, and their results read.
fn run_tests_in(
    tree: &BuiltTree,
    build: &Path,
    subdir: &str,
    tests: &[String],
    jobs: usize,
    sandbox: Option<&Sandbox>,
) -> Result<Results> {
    let build = build.to_path_buf();
    for test in tests {
        for suffix in [".out", ".test-result"] {
            let path = build.join(format!("{test}{suffix}"));
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(err).with_context(|| format!("cannot remove {}", path.display()))
                }
            }
        }
    }
    let mut cmd = tree
        .recipe
        .tests_command(&tree.work.src(), &build, subdir, tests, jobs);
    let what = format!("{}: the series' tests ({})", tree.label, tests.len());
    run_make(tree, &mut cmd, &what, sandbox)?;
    let mut results = Results::new();
    for test in tests {
        let path = build.join(format!("{test}.test-result"));
        let result = match fs::read_to_string(&path) {
            Ok(text) => {
                let status = text
                    .split_once(':')
                    .and_then(|(word, _)| Status::parse(word.trim()))
                    .with_context(|| format!("{} says no verdict", path.display()))?;
                let reason = (status != Status::Pass)
                    .then(|| last_words(&build.join(format!("{test}.out"))));
                TestResult { status, reason }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => TestResult {
                status: Status::Unresolved,
                reason: Some(format!(
                    "never ran: no result (the log says why: {})",
                    tree.log.display()
                )),
            },
            Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
        };
        results.insert(test.clone(), result);
    }
    Ok(results)
}

/// The results this run left in `build` and `build/<subdir>` that `results` does not list.
/// Every result file there is this run's: the old ones were removed before it.
fn unlisted_results(build: &Path, subdir: &str, results: &Results) -> Result<Vec<String>> {
    let mut unlisted = Vec::new();
    for (dir, prefix) in [
        (build.to_path_buf(), String::new()),
        (build.join(subdir), format!("{subdir}/")),
    ] {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let name = entry
                .with_context(|| format!("cannot read {}", dir.display()))?
                .file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".test-result")) else {
                continue;
            };
            let test = format!("{prefix}{stem}");
            if !results.contains_key(&test) {
                unlisted.push(test);
            }
        }
    }
    unlisted.sort();
    Ok(unlisted)
}

/// The first lines of make's errors in `log` (`make[2]: *** ...`), which say why a run stopped.
fn make_errors(log: &Path) -> Vec<String> {
    let text = fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|line| line.starts_with("make") && line.contains("*** "))
        .take(3)
        .map(|line| line.chars().take(200).collect())
        .collect()
}

/// Removes what a test run leaves in `dir` (not below it): every result, every output, and
/// the summaries.
fn remove_results(dir: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let is_result =
            name.ends_with(".test-result") || name.ends_with(".out") || name.ends_with("tests.sum");
        if is_result && path.is_file() {
            fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// The run's `tests.sum` in `build`, with the reason of every verdict but PASS from the
/// test's `.out`. A missing `tests.sum` means the run stopped before its end; a subdirectory
/// whose results are missing (`ERROR: test results for elf directory missing`) is a result
/// named after the subdirectory.
pub(crate) fn read_summary(build: &Path) -> Result<Results> {
    let path = build.join("tests.sum");
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "{} is missing: the run stopped before its summary (the first lines of its log \
             that say `Error` tell where)",
            path.display()
        )
    })?;
    let mut results = Results::new();
    for line in text.lines() {
        let Some((word, name)) = line.split_once(": ") else {
            continue;
        };
        let Some(status) = Status::parse(word.trim()) else {
            continue;
        };
        let name = name.trim();
        let (name, reason) = match name.strip_prefix("test results for ") {
            Some(rest) => (
                rest.split_whitespace().next().unwrap_or(rest).to_string(),
                Some(name.to_string()),
            ),
            None => {
                let reason = match status {
                    Status::Pass => None,
                    Status::Unresolved => Some("never ran: no result".to_string()),
                    _ => Some(last_words(&build.join(format!("{name}.out")))),
                };
                (name.to_string(), reason)
            }
        };
        results.insert(name, TestResult { status, reason });
    }
    if results.is_empty() {
        anyhow::bail!("{} lists no test", path.display());
    }
    Ok(results)
}

/// Why a test failed or was unsupported, shortened: the last line it printed that starts with
/// `error:` (what the support framework's FAIL_* print) and is not the framework's closing
/// count (`error: 1 test failures`), else its last non-empty line. The container tests print
/// `running post-clean rsync` after the error that ended them.
fn last_words(out: &Path) -> String {
    let text = fs::read_to_string(out).unwrap_or_default();
    words_of(&text).chars().take(160).collect()
}

fn words_of(text: &str) -> &str {
    let lines = || text.lines().rev().map(str::trim);
    let closing_count = |l: &str| {
        l.strip_prefix("error: ")
            .and_then(|rest| rest.split_once(' '))
            .is_some_and(|(n, rest)| n.parse::<u32>().is_ok() && rest.starts_with("test failure"))
    };
    lines()
        .find(|l| l.starts_with("error:") && !closing_count(l))
        .or_else(|| lines().find(|l| !l.is_empty()))
        .unwrap_or("(the test printed nothing)")
}

/// What glibc's tests prove of the patch: the tests each tree listed, and what the patch
/// changed in them. The same on every machine that runs the same trees (a test this machine
/// cannot run fails in both trees, which is a fact about the machine: [`SuiteFacts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Diff {
    /// The tests each tree's summary lists (which tests, not how they ended).
    pub listed: Listed,
    /// PASS (or UNSUPPORTED) without the patch, a failure with it: these fail the cell.
    pub regressions: Vec<Change>,
    /// Tests only the patched tree has that are not the series' own: they fail the cell (a
    /// test must run in both trees to be compared).
    pub only_patched: Vec<Named>,
    /// Tests only the unpatched tree has: they fail the cell (the patch stopped them running).
    pub only_unpatched: Vec<Named>,
    /// The series' own tests, which only the patched tree has (names: their verdicts are the
    /// series-tests step's).
    pub series_own: Vec<String>,
    /// Tests the summary of either tree lists as UNRESOLVED (they never ran), named with the
    /// tree: they fail the cell, since nothing was compared.
    pub never_ran: Vec<Named>,
}

/// The tests of each tree's summary: how many, and a digest of their sorted names (so that
/// two records, or a record and a run, can be told to list the same tests).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Listed {
    pub patched: TestList,
    pub unpatched: TestList,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TestList {
    pub count: usize,
    pub digest: String,
}

impl TestList {
    pub(crate) fn of(results: &Results) -> TestList {
        // BTreeMap: the names come sorted.
        let mut text = String::new();
        for name in results.keys() {
            text.push_str(name);
            text.push('\n');
        }
        TestList {
            count: results.len(),
            digest: sha1_smol::Sha1::from(text).digest().to_string(),
        }
    }
}

/// What the same runs say of the machine they ran on: how the tests ended, and the tests
/// that ended other than PASS without the patch being the cause. Never a verdict on the
/// patch: another machine (another CPU or kernel, QEMU) gives other figures for the same proof.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SuiteFacts {
    pub patched: Counts,
    pub unpatched: Counts,
    /// Failing in both trees: the environment, not the patch (named, never hidden).
    pub failing_in_both: Vec<Named>,
    /// UNSUPPORTED in the patched tree, with the reason.
    pub unsupported: Vec<Named>,
    /// XPASS or XFAIL in the patched tree: glibc marks them as expected to fail here.
    pub expected_to_fail: Vec<Named>,
    /// Every other test whose status differs but fails in neither tree (say, UNSUPPORTED one
    /// way and PASS the other).
    pub other_changes: Vec<Change>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub total: usize,
    pub pass: usize,
    pub fail: usize,
    pub unsupported: usize,
    pub other: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Change {
    pub test: String,
    pub unpatched: Status,
    pub patched: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Named {
    pub test: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

impl Counts {
    fn of(results: &Results) -> Counts {
        let count = |s: Status| results.values().filter(|r| r.status == s).count();
        let (pass, fail, unsupported) = (
            count(Status::Pass),
            count(Status::Fail) + count(Status::Error),
            count(Status::Unsupported),
        );
        Counts {
            total: results.len(),
            pass,
            fail,
            unsupported,
            other: results.len() - pass - fail - unsupported,
        }
    }

    /// Every test is counted once.
    pub(crate) fn adds_up(&self) -> bool {
        self.pass + self.fail + self.unsupported + self.other == self.total
    }
}

impl Diff {
    /// Compares the two runs; `series_tests` names the tests the series adds, the only ones
    /// that may run in the patched tree alone. Returns the proof and the machine's facts.
    pub(crate) fn between(
        unpatched: &Results,
        patched: &Results,
        series_tests: &[String],
    ) -> (Diff, SuiteFacts) {
        let named = |test: &str, r: &TestResult| Named {
            test: test.to_string(),
            status: r.status,
            reason: r.reason.clone(),
        };
        let mut diff = Diff {
            listed: Listed {
                patched: TestList::of(patched),
                unpatched: TestList::of(unpatched),
            },
            ..Diff::default()
        };
        let mut facts = SuiteFacts {
            patched: Counts::of(patched),
            unpatched: Counts::of(unpatched),
            ..SuiteFacts::default()
        };
        for (tree, results) in [("unpatched", unpatched), ("patched", patched)] {
            for (test, result) in results {
                if result.status == Status::Unresolved {
                    diff.never_ran.push(Named {
                        test: format!("{test} ({tree})"),
                        ..named(test, result)
                    });
                }
            }
        }
        for (test, after) in patched {
            if after.status == Status::Unsupported {
                facts.unsupported.push(named(test, after));
            }
            if matches!(after.status, Status::Xpass | Status::Xfail) {
                facts.expected_to_fail.push(named(test, after));
            }
            let Some(before) = unpatched.get(test) else {
                if series_tests.iter().any(|own| own == test) {
                    diff.series_own.push(test.clone());
                } else {
                    diff.only_patched.push(named(test, after));
                }
                continue;
            };
            if before.status == Status::Unresolved || after.status == Status::Unresolved {
                // Listed in `never_ran`: there is nothing to compare.
            } else if before.status.is_failure() && after.status.is_failure() {
                facts.failing_in_both.push(named(test, after));
            } else if before.status != after.status {
                let change = Change {
                    test: test.clone(),
                    unpatched: before.status,
                    patched: after.status,
                    reason: after.reason.clone().or_else(|| before.reason.clone()),
                };
                if after.status.is_failure() {
                    diff.regressions.push(change);
                } else {
                    facts.other_changes.push(change);
                }
            }
        }
        for (test, before) in unpatched {
            if !patched.contains_key(test) {
                diff.only_unpatched.push(named(test, before));
            }
        }
        (diff, facts)
    }

    /// The patch broke nothing glibc's tests see, both trees ran the same tests, and the
    /// figures are whole (every listed test is compared, or named as the series' own, or as
    /// run in one tree only).
    pub(crate) fn passes(&self) -> bool {
        self.regressions.is_empty()
            && self.only_patched.is_empty()
            && self.only_unpatched.is_empty()
            && self.never_ran.is_empty()
            && self.adds_up()
    }

    /// The patched tree lists the unpatched tree's tests and the series' own, no more.
    pub(crate) fn adds_up(&self) -> bool {
        let (patched, unpatched) = (self.listed.patched.count, self.listed.unpatched.count);
        unpatched >= self.only_unpatched.len()
            && patched
                == unpatched - self.only_unpatched.len()
                    + self.only_patched.len()
                    + self.series_own.len()
    }

    /// What fails the comparison, counted: the cell's summary.
    pub(crate) fn summary(&self) -> String {
        let mut parts = vec![format!("{} regressions", self.regressions.len())];
        for (count, what) in [
            (self.never_ran.len(), "never ran"),
            (self.only_unpatched.len(), "ran only without the patch"),
            (self.only_patched.len(), "ran only with the patch"),
        ] {
            if count > 0 {
                parts.push(format!("{count} {what}"));
            }
        }
        if !self.adds_up() {
            parts.push(format!(
                "the figures do not add up ({} tests patched, {} unpatched)",
                self.listed.patched.count, self.listed.unpatched.count
            ));
        }
        parts.push(format!(
            "{} compared (unpatched tree: {} tests, patched: {})",
            self.compared(),
            self.listed.unpatched.count,
            self.listed.patched.count
        ));
        parts.join(", ")
    }

    /// Tests both trees ran.
    pub(crate) fn compared(&self) -> usize {
        self.listed
            .patched
            .count
            .saturating_sub(self.only_patched.len() + self.series_own.len())
    }
}

impl SuiteFacts {
    /// What the machine did to the suite, in a few words.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{} failing in both, {} UNSUPPORTED, {} expected to fail (XPASS/XFAIL), {} other changes",
            self.failing_in_both.len(),
            self.unsupported.len(),
            self.expected_to_fail.len(),
            self.other_changes.len()
        )
    }
}

/// Runs a make command of `tree` to its end, logged in the tree's log: natively, or in the
/// QEMU sandbox where the target needs one.
fn run_make(
    tree: &BuiltTree,
    cmd: &mut std::process::Command,
    what: &str,
    sandbox: Option<&Sandbox>,
) -> Result<std::process::ExitStatus> {
    match sandbox {
        None => logged::run_to_end(
            cmd,
            &tree.log,
            what,
            crate::sysroot::recipe::make_status,
            None,
        ),
        Some(sandbox) => logged::run_to_end_started(
            &mut sandbox.command(cmd),
            &tree.log,
            &format!("{what} (QEMU, binfmt_misc)"),
            crate::sysroot::recipe::make_status,
            &mut |child| sandbox.start(child),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library another version of the series copied into the fixture directory is gone
    /// before the next run; a single-test run keeps the container roots.
    #[test]
    fn leftovers_of_another_series_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path();
        let stale = build.join("elf/tst-fallback-path-dir/fb/libmarkermod9.so");
        fs::create_dir_all(stale.parent().unwrap()).unwrap();
        fs::write(&stale, "").unwrap();
        fs::create_dir_all(build.join("testroot.pristine/lib")).unwrap();

        remove_leftovers(build, false).unwrap();
        assert!(!build.join("elf/tst-fallback-path-dir").exists());
        assert!(build.join("testroot.pristine/lib").is_dir());

        remove_leftovers(build, true).unwrap();
        assert!(!build.join("testroot.pristine").exists());
        // Nothing left to remove is no error.
        remove_leftovers(build, true).unwrap();
    }

    /// A loader is told by its `--help`: the patched one documents `--fallback-path`.
    #[test]
    fn a_loader_is_known_by_its_help() {
        let unpatched = "Usage: ld.so [OPTION]... EXECUTABLE-FILE [ARGS-FOR-PROGRAM...]\n  --library-path PATH    use given PATH instead of content of the environment\n";
        let patched = format!(
            "{unpatched}  --fallback-path PATH   search PATH after every other directory\n"
        );
        assert_eq!(kind_of_help(unpatched), LoaderKind::Unpatched);
        assert_eq!(kind_of_help(&patched), LoaderKind::Patched);
        assert!(matches!(kind_of_help("hello\n"), LoaderKind::Unknown(_)));
        let missing = loader_kind(Path::new("/nonexistent/ld.so"), None);
        assert!(matches!(missing, LoaderKind::Unknown(why) if why.contains("is missing")));
        let wanted = LoaderKind::Unpatched;
        let both = Loaders {
            tree: LoaderKind::Unpatched,
            root: LoaderKind::Patched,
        };
        assert_eq!(
            both.not(&wanted),
            ["the test container root's loader is patched (its --help lists --fallback-path)"]
        );
    }

    /// check-support holds every cell's list to its release's size: a supported cell without
    /// one could not be checked.
    #[test]
    fn every_supported_cell_has_a_known_list_size() {
        for release in model::supported() {
            for target in Target::ALL {
                assert!(
                    known_unpatched_count(*release, target).is_some(),
                    "no known size of glibc {release} {target}'s elf suite"
                );
            }
        }
        assert_eq!(unpatched_floor(537), 484);
    }

    fn results(rows: &[(&str, Status)]) -> Results {
        rows.iter()
            .map(|(name, status)| {
                let reason = (*status != Status::Pass).then(|| format!("why {name}"));
                (
                    name.to_string(),
                    TestResult {
                        status: *status,
                        reason,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_test_that_passes_only_without_the_patch_is_a_regression() {
        use Status::*;
        let (diff, facts) = compare(
            &[
                ("elf/a", Pass),
                ("elf/b", Fail),
                ("elf/c", Unsupported),
                ("elf/d", Pass),
                ("elf/gone", Pass),
            ],
            &[
                ("elf/a", Fail),
                ("elf/b", Fail),
                ("elf/c", Pass),
                ("elf/d", Pass),
                ("elf/tst-fallback-path", Pass),
            ],
        );
        assert!(!diff.passes());
        assert_eq!(diff.regressions.len(), 1);
        assert_eq!(diff.regressions[0].test, "elf/a");
        assert_eq!(facts.failing_in_both[0].test, "elf/b");
        assert_eq!(facts.other_changes[0].test, "elf/c");
        assert_eq!(diff.series_own, ["elf/tst-fallback-path"]);
        assert!(diff.only_patched.is_empty());
        assert_eq!(diff.only_unpatched[0].test, "elf/gone");
        assert_eq!(facts.patched.pass, 3);
        assert_eq!(facts.unpatched.unsupported, 1);
        assert_eq!(
            (diff.listed.patched.count, diff.listed.unpatched.count),
            (5, 5)
        );
        assert!(diff.adds_up());
    }

    #[test]
    fn an_expected_failure_that_passes_fails_nothing_and_is_named() {
        use Status::*;
        let unpatched = results(&[("elf/tst-ifunc-isa-1", Xpass), ("elf/x", Xfail)]);
        let patched = results(&[("elf/tst-ifunc-isa-1", Xpass), ("elf/x", Xfail)]);
        let (diff, facts) = Diff::between(&unpatched, &patched, &own());
        assert!(diff.passes());
        assert!(facts.failing_in_both.is_empty());
        let named: Vec<&str> = facts
            .expected_to_fail
            .iter()
            .map(|t| t.test.as_str())
            .collect();
        assert_eq!(named, ["elf/tst-ifunc-isa-1", "elf/x"]);
        assert_eq!(facts.patched.other, 2);
        // An XPASS that turns into a FAIL with the patch is a regression all the same.
        let broken = results(&[("elf/tst-ifunc-isa-1", Fail), ("elf/x", Xfail)]);
        assert!(!Diff::between(&unpatched, &broken, &own()).0.passes());
    }

    fn own() -> Vec<String> {
        vec!["elf/tst-fallback-path".to_string()]
    }

    /// The two trees' results compared, the series' own test being `own()`'s.
    fn compare(unpatched: &[(&str, Status)], patched: &[(&str, Status)]) -> (Diff, SuiteFacts) {
        Diff::between(&results(unpatched), &results(patched), &own())
    }

    /// A 2.44 run whose patched tree's test pass never started, so its summary
    /// lists the elf tests as UNRESOLVED; the result files on disk were the 28 of the first
    /// pass. Nothing may call that "0 regressions".
    #[test]
    fn tests_that_never_ran_fail_the_comparison() {
        use Status::*;
        let (diff, facts) = compare(
            &[
                ("elf/tst-a", Pass),
                ("elf/tst-b", Pass),
                ("lint-makefiles", Pass),
            ],
            &[
                ("elf/tst-a", Unresolved),
                ("elf/tst-b", Unresolved),
                ("elf/tst-fallback-path", Unresolved),
                ("lint-makefiles", Fail),
            ],
        );
        assert!(!diff.passes());
        assert_eq!(diff.regressions.len(), 1, "{diff:?}");
        assert_eq!(diff.regressions[0].test, "lint-makefiles");
        let never: Vec<&str> = diff.never_ran.iter().map(|t| t.test.as_str()).collect();
        assert_eq!(
            never,
            [
                "elf/tst-a (patched)",
                "elf/tst-b (patched)",
                "elf/tst-fallback-path (patched)"
            ]
        );
        assert!(facts.failing_in_both.is_empty());
        assert!(diff.summary().contains("3 never ran"), "{}", diff.summary());
    }

    #[test]
    fn a_test_run_in_one_tree_only_fails_the_comparison() {
        use Status::*;
        let (diff, _) = compare(
            &[("elf/tst-a", Pass), ("elf/tst-gone", Pass)],
            &[
                ("elf/tst-a", Pass),
                ("elf/tst-fallback-path", Pass),
                ("elf/tst-new", Pass),
            ],
        );
        assert!(!diff.passes());
        assert_eq!(diff.only_unpatched[0].test, "elf/tst-gone");
        assert_eq!(diff.only_patched[0].test, "elf/tst-new");
        assert_eq!(diff.series_own, ["elf/tst-fallback-path"]);
        // Without the strays the same runs pass.
        let (diff, _) = compare(
            &[("elf/tst-a", Pass)],
            &[("elf/tst-a", Pass), ("elf/tst-fallback-path", Pass)],
        );
        assert!(diff.passes(), "{diff:?}");
        assert_eq!(diff.compared(), 1);
    }

    /// Figures edited to agree with themselves ("552 tests, 100 pass") but
    /// not with the tests they name are not believed.
    #[test]
    fn suite_figures_that_do_not_add_up_fail() {
        use Status::*;
        let (diff, facts) = compare(
            &[("elf/tst-a", Pass), ("elf/tst-b", Pass)],
            &[
                ("elf/tst-a", Pass),
                ("elf/tst-b", Pass),
                ("elf/tst-fallback-path", Pass),
            ],
        );
        assert!(diff.passes() && facts.patched.adds_up());
        let mut edited = diff.clone();
        edited.listed.patched.count = 552;
        assert!(!edited.passes());
        assert_eq!(
            edited.summary(),
            "0 regressions, the figures do not add up (552 tests patched, 2 unpatched), 551 compared (unpatched tree: 2 tests, patched: 552)"
        );
        let mut edited = diff;
        edited.series_own.clear();
        assert!(!edited.passes());
        let mut counts = facts.patched;
        counts.pass = 100;
        assert!(!counts.adds_up());
    }

    #[test]
    fn a_reason_is_the_error_that_ended_the_test() {
        let copy = "error: support_copy_file.c:37: copying from \"/proc/self/exe\": only 4 of 12 bytes copied";
        assert_eq!(words_of(&format!("{copy}\nerror: 1 test failures\n")), copy);
        let unshare = "error: test-container.c:1123: unable to unshare user/fs: Invalid argument";
        assert_eq!(
            words_of(&format!("{unshare}\nrunning post-clean rsync\n")),
            unshare
        );
        assert_eq!(
            words_of("error: 2 test failures\n"),
            "error: 2 test failures"
        );
        assert_eq!(words_of("activity: consistent\n\n"), "activity: consistent");
        assert_eq!(words_of(""), "(the test printed nothing)");
    }

    #[test]
    fn the_summary_is_read_with_the_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path();
        let write = |name: &str, text: &str| {
            let path = build.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap()
        };
        // As scripts/merge-test-results.sh writes it for `make check subdirs=elf`.
        write(
            "tests.sum",
            "\t\t=== glibc tests ===\n\nRunning elf ...\nPASS: elf/tst-a\n\
             UNSUPPORTED: elf/tst-b\nFAIL: elf/tst-c\nUNRESOLVED: elf/tst-d\n\n\
             Running . ...\nFAIL: lint-makefiles\nPASS: check-local-headers\n",
        );
        write(
            "elf/tst-b.out",
            "starting\nwarning: no second group for root\n\n",
        );
        write("lint-makefiles.out", "+  libmarkermod10-1 \\\n");
        write("elf/tst-e.test-result", "PASS: elf/tst-e\n");
        let results = read_summary(build).unwrap();
        let listed: Vec<(&str, Status)> = results
            .iter()
            .map(|(n, r)| (n.as_str(), r.status))
            .collect();
        use Status::*;
        assert_eq!(
            listed,
            [
                ("check-local-headers", Pass),
                ("elf/tst-a", Pass),
                ("elf/tst-b", Unsupported),
                ("elf/tst-c", Fail),
                ("elf/tst-d", Unresolved),
                ("lint-makefiles", Fail),
            ],
            "a result file the summary does not list is not read"
        );
        assert_eq!(results["elf/tst-a"].reason, None);
        assert_eq!(
            results["elf/tst-b"].reason.as_deref(),
            Some("warning: no second group for root")
        );
        assert_eq!(
            results["elf/tst-c"].reason.as_deref(),
            Some("(the test printed nothing)")
        );
        assert_eq!(
            results["lint-makefiles"].reason.as_deref(),
            Some("+  libmarkermod10-1 \\")
        );
    }

    /// That 2.44 run, second form: the first make wrote tests.sum (its special tests
    /// only), the second ran 535 tests and stopped before its summary (a missing
    /// manual/dynlink.texi). The summary must not be read as the run's.
    #[test]
    fn results_the_summary_does_not_list_mean_the_run_did_not_end() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path();
        fs::create_dir(build.join("elf")).unwrap();
        fs::write(
            build.join("tests.sum"),
            "Running . ...\nPASS: lint-makefiles\n\nRunning elf ...\nPASS: elf/check-abi-ld\n",
        )
        .unwrap();
        for name in [
            "elf/check-abi-ld",
            "elf/tst-a",
            "elf/tst-b",
            "lint-makefiles",
        ] {
            fs::write(
                build.join(format!("{name}.test-result")),
                format!("PASS: {name}\n"),
            )
            .unwrap();
        }
        let results = read_summary(build).unwrap();
        assert_eq!(
            unlisted_results(build, "elf", &results).unwrap(),
            ["elf/tst-a", "elf/tst-b"]
        );
        fs::write(
            build.join("tests.sum"),
            "Running . ...\nPASS: lint-makefiles\n\nRunning elf ...\nPASS: elf/check-abi-ld\nPASS: elf/tst-a\nPASS: elf/tst-b\n",
        )
        .unwrap();
        let results = read_summary(build).unwrap();
        assert!(unlisted_results(build, "elf", &results).unwrap().is_empty());
    }

    #[test]
    fn a_run_without_a_summary_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("elf")).unwrap();
        fs::write(
            dir.path().join("elf/tst-a.test-result"),
            "PASS: elf/tst-a\n",
        )
        .unwrap();
        let err = format!("{:#}", read_summary(dir.path()).unwrap_err());
        assert!(err.contains("tests.sum is missing"), "{err}");
        fs::write(
            dir.path().join("tests.sum"),
            "Running elf ...\nERROR: test results for elf directory missing\n",
        )
        .unwrap();
        let results = read_summary(dir.path()).unwrap();
        assert_eq!(results["elf"].status, Status::Error);
    }
}
