//! glibc's own tests, run through glibc's test machinery in a build tree, and the regression
//! diff between the patched and the unpatched tree.
//!
//! `make check` leaves one `<test>.test-result` per test (`PASS: elf/tst-foo`, written by
//! `scripts/evaluate-test.sh`) beside its `<test>.out`, which holds what the test printed:
//! the reason of an UNSUPPORTED verdict is its last line there.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::build::BuiltTree;

/// A test's verdict, in glibc's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Fail,
    Unsupported,
    Xpass,
    Xfail,
    Error,
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
            _ => return None,
        })
    }

    /// What fails glibc's own `make check`: FAIL and ERROR. An XPASS (a test the
    /// configuration marks as expected to fail, passing) is listed but fails nothing.
    pub fn is_failure(self) -> bool {
        matches!(self, Status::Fail | Status::Error)
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
        };
        f.write_str(word)
    }
}

/// One test's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    pub status: Status,
    /// For anything but PASS: the last line the test printed, which says why.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

/// Bumped when the recorded results of a build change meaning (v1 kept glibc's second line,
/// `original exit status N`, in each test's name), so that old records are not read.
const RESULTS_FORMAT: &str = "v2";

/// Results by test name (`elf/tst-foo`).
pub type Results = BTreeMap<String, TestResult>;

/// The results of `subdir`'s tests for the build with cache key `build_key`: from
/// `<cache>/verify/suites/` when that build's were recorded, else from `run`, recorded then.
/// The same build gives the same results (the build key covers every input), so the
/// unpatched half of a cell's comparison is not run again when only the series changed.
pub fn results_for(
    build_key: &str,
    subdir: &str,
    run: impl FnOnce() -> Result<Results>,
) -> Result<Results> {
    let path = crate::util::paths::cache_dir()?
        .join("verify/suites")
        .join(format!("{build_key}-{subdir}-{RESULTS_FORMAT}.json"));
    if let Some(results) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
    {
        return Ok(results);
    }
    let results = run()?;
    let text = serde_json::to_string_pretty(&results).context("cannot serialize test results")?;
    crate::util::durable::replace_file(&path, text.as_bytes())
        .with_context(|| format!("cannot record test results in {}", path.display()))?;
    Ok(results)
}

/// Runs `make -k check subdirs=SUBDIR` in the tree, after removing the results of earlier
/// runs (make would not rerun a test whose output is up to date, and a stale result must
/// never be read as this run's), and reads the results.
pub fn run_subdir(tree: &BuiltTree, subdir: &str, jobs: usize) -> Result<Results> {
    let dir = tree.work.build().join(subdir);
    remove_results(&dir)?;
    tree.recipe
        .check(&tree.work.build(), subdir, jobs, &tree.log, &tree.label)?;
    read_results(&dir, subdir)
}

fn remove_results(dir: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.ends_with(".test-result") || name.ends_with(".out") {
            fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// Every `*.test-result` below `dir` (a subdirectory of the build tree, `subdir` by name).
pub fn read_results(dir: &Path, subdir: &str) -> Result<Results> {
    let mut results = Results::new();
    let entries = fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".test-result"))
        else {
            continue;
        };
        let text =
            fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        // glibc writes `PASS: elf/tst-foo`, then `original exit status N` on a line of its own.
        let first = text.lines().next().unwrap_or("").trim();
        let (word, name) = first.split_once(": ").unwrap_or((first, ""));
        let status = Status::parse(word).unwrap_or(Status::Error);
        let name = if name.is_empty() {
            format!("{subdir}/{stem}")
        } else {
            name.to_string()
        };
        let reason = (status != Status::Pass).then(|| last_words(&dir.join(format!("{stem}.out"))));
        results.insert(name, TestResult { status, reason });
    }
    Ok(results)
}

/// The last non-empty line a test printed, shortened: why it failed or was unsupported.
fn last_words(out: &Path) -> String {
    let text = fs::read_to_string(out).unwrap_or_default();
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(the test printed nothing)");
    line.chars().take(160).collect()
}

/// What differs between the unpatched and the patched tree's results.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    pub patched: Counts,
    pub unpatched: Counts,
    /// PASS (or UNSUPPORTED) without the patch, a failure with it: these fail the cell.
    pub regressions: Vec<Change>,
    /// Every other test whose status differs (say, UNSUPPORTED one way and PASS the other).
    pub other_changes: Vec<Change>,
    /// Tests only the patched tree has: the series' own.
    pub only_patched: Vec<Named>,
    /// Tests only the unpatched tree has (none are expected).
    pub only_unpatched: Vec<Named>,
    /// Failing in both trees: the environment, not the patch (named, never hidden).
    pub failing_in_both: Vec<Named>,
    /// UNSUPPORTED in the patched tree, with the reason.
    pub unsupported: Vec<Named>,
    /// XPASS or XFAIL in the patched tree: glibc marks them as expected to fail here.
    #[serde(default)]
    pub expected_to_fail: Vec<Named>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub total: usize,
    pub pass: usize,
    pub fail: usize,
    pub unsupported: usize,
    pub other: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub test: String,
    pub unpatched: Status,
    pub patched: Status,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Named {
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
}

impl Diff {
    pub fn between(unpatched: &Results, patched: &Results) -> Diff {
        let named = |test: &str, r: &TestResult| Named {
            test: test.to_string(),
            status: r.status,
            reason: r.reason.clone(),
        };
        let mut diff = Diff {
            patched: Counts::of(patched),
            unpatched: Counts::of(unpatched),
            ..Diff::default()
        };
        for (test, after) in patched {
            if after.status == Status::Unsupported {
                diff.unsupported.push(named(test, after));
            }
            if matches!(after.status, Status::Xpass | Status::Xfail) {
                diff.expected_to_fail.push(named(test, after));
            }
            let Some(before) = unpatched.get(test) else {
                diff.only_patched.push(named(test, after));
                continue;
            };
            if before.status.is_failure() && after.status.is_failure() {
                diff.failing_in_both.push(named(test, after));
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
                    diff.other_changes.push(change);
                }
            }
        }
        for (test, before) in unpatched {
            if !patched.contains_key(test) {
                diff.only_unpatched.push(named(test, before));
            }
        }
        diff
    }

    /// The patch broke nothing glibc's tests see.
    pub fn passes(&self) -> bool {
        self.regressions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let unpatched = results(&[
            ("elf/a", Pass),
            ("elf/b", Fail),
            ("elf/c", Unsupported),
            ("elf/d", Pass),
            ("elf/gone", Pass),
        ]);
        let patched = results(&[
            ("elf/a", Fail),
            ("elf/b", Fail),
            ("elf/c", Pass),
            ("elf/d", Pass),
            ("elf/tst-fallback-path", Pass),
        ]);
        let diff = Diff::between(&unpatched, &patched);
        assert!(!diff.passes());
        assert_eq!(diff.regressions.len(), 1);
        assert_eq!(diff.regressions[0].test, "elf/a");
        assert_eq!(diff.failing_in_both[0].test, "elf/b");
        assert_eq!(diff.other_changes[0].test, "elf/c");
        assert_eq!(diff.only_patched[0].test, "elf/tst-fallback-path");
        assert_eq!(diff.only_unpatched[0].test, "elf/gone");
        assert_eq!(diff.patched.pass, 3);
        assert_eq!(diff.unpatched.unsupported, 1);
    }

    #[test]
    fn an_expected_failure_that_passes_fails_nothing_and_is_named() {
        use Status::*;
        let unpatched = results(&[("elf/tst-ifunc-isa-1", Xpass), ("elf/x", Xfail)]);
        let patched = results(&[("elf/tst-ifunc-isa-1", Xpass), ("elf/x", Xfail)]);
        let diff = Diff::between(&unpatched, &patched);
        assert!(diff.passes());
        assert!(diff.failing_in_both.is_empty());
        let named: Vec<&str> = diff
            .expected_to_fail
            .iter()
            .map(|t| t.test.as_str())
            .collect();
        assert_eq!(named, ["elf/tst-ifunc-isa-1", "elf/x"]);
        assert_eq!(diff.patched.other, 2);
        // An XPASS that turns into a FAIL with the patch is a regression all the same.
        let broken = results(&[("elf/tst-ifunc-isa-1", Fail), ("elf/x", Xfail)]);
        assert!(!Diff::between(&unpatched, &broken).passes());
    }

    #[test]
    fn results_are_read_with_their_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| fs::write(dir.path().join(name), text).unwrap();
        write(
            "tst-a.test-result",
            "PASS: elf/tst-a\noriginal exit status 0\n",
        );
        write("tst-b.test-result", "UNSUPPORTED: elf/tst-b\n");
        write(
            "tst-b.out",
            "starting\nwarning: no second group for root\n\n",
        );
        write(
            "tst-c.test-result",
            "FAIL: elf/tst-c\noriginal exit status 1\n",
        );
        write("tst-d.out", "a test whose result is missing is not read\n");
        let results = read_results(dir.path(), "elf").unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results["elf/tst-a"].reason, None);
        assert_eq!(
            results["elf/tst-b"].reason.as_deref(),
            Some("warning: no second group for root")
        );
        assert_eq!(
            results["elf/tst-c"].reason.as_deref(),
            Some("(the test printed nothing)")
        );
    }
}
