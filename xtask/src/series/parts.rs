//! Parts of a series. `tests-only` is the series without its loader change: the patches that
//! add tests, and the support code those need, applied to the release alone. `verify` runs
//! the series' tests against the unpatched loader in that build: a test of the patch must
//! fail there (or be one the series directory declares observed to pass there, with why).

use anyhow::{bail, Result};

use super::{Patch, Series};

/// What a patch of the tests may change: glibc's test support code, the tests of `elf/`, and
/// the makefile that declares them.
fn is_test_path(path: &str) -> bool {
    path.starts_with("support/") || path.starts_with("elf/tst-") || path == "elf/Makefile"
}

/// The paths a patch changes, from its `diff --git a/<path> b/<path>` lines.
fn changed_paths(patch: &Patch) -> Vec<&str> {
    patch
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("diff --git a/"))
        .filter_map(|paths| paths.split_once(" b/").map(|(_, new)| new))
        .collect()
}

/// Whether every file `patch` changes belongs to the tests.
pub(crate) fn is_tests_only(patch: &Patch) -> bool {
    let paths = changed_paths(patch);
    !paths.is_empty() && paths.iter().all(|path| is_test_path(path))
}

/// Keeps the patches of `series` that change only tests and their support code, and says in
/// its series text which it left out, so that the part's content id is its own.
pub(crate) fn keep_tests_only(series: &mut Series) -> Result<()> {
    let (kept, left_out): (Vec<Patch>, Vec<Patch>) =
        series.patches.drain(..).partition(is_tests_only);
    if kept.is_empty() {
        bail!(
            "the glibc {} series has no patch that changes only tests: nothing to run against the unpatched loader",
            series.base
        );
    }
    if left_out.is_empty() {
        bail!(
            "every patch of the glibc {} series changes only tests: it has no loader change to leave out",
            series.base
        );
    }
    series.series_text.push_str("# part: tests-only, without");
    for patch in &left_out {
        series.series_text.push(' ');
        series.series_text.push_str(&patch.name);
    }
    series.series_text.push('\n');
    series.patches = kept;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(name: &str, paths: &[&str]) -> Patch {
        let text = paths
            .iter()
            .map(|p| format!("diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n"))
            .collect();
        Patch {
            name: name.into(),
            text,
        }
    }

    #[test]
    fn the_tests_part_leaves_out_every_patch_that_touches_the_loader() {
        let mut series = Series {
            base: model::Release::newest(),
            base_tree: git2::Oid::zero(),
            patches: vec![
                patch("0001-support.patch", &["support/support_copy_file.c"]),
                patch("0002-nfc.patch", &["elf/dl-load.c"]),
                patch(
                    "0003-feature.patch",
                    &["NEWS", "elf/dl-load.c", "elf/rtld.c"],
                ),
                patch(
                    "0004-tests.patch",
                    &[
                        "elf/Makefile",
                        "elf/tst-env-setuid.c",
                        "elf/tst-fallback-path.c",
                    ],
                ),
                patch("0005-mixed.patch", &["elf/Makefile", "elf/dl-usage.c"]),
            ],
            series_text: "# base: glibc-2.44 0\n".into(),
        };
        let before = series.content_id();
        keep_tests_only(&mut series).unwrap();
        let kept: Vec<&str> = series.patches.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(kept, ["0001-support.patch", "0004-tests.patch"]);
        assert!(series.series_text.ends_with(
            "# part: tests-only, without 0002-nfc.patch 0003-feature.patch 0005-mixed.patch\n"
        ));
        assert_ne!(series.content_id(), before);
    }

    #[test]
    fn a_series_without_a_loader_change_or_without_tests_has_no_tests_part() {
        let series = |paths: &[&str]| Series {
            base: model::Release::newest(),
            base_tree: git2::Oid::zero(),
            patches: vec![patch("0001-a.patch", paths)],
            series_text: String::new(),
        };
        assert!(keep_tests_only(&mut series(&["elf/tst-a.c"])).is_err());
        assert!(keep_tests_only(&mut series(&["elf/dl-load.c"])).is_err());
    }
}
