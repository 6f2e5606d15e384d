//! The digest of the sources that judge a verify cell: the harness that runs the scenario
//! table against a build and says what each scenario found, the table and its fixtures, the
//! vocabulary they are written in, the stage that runs the matrix, and verify's judging
//! modules (how a cell is run step by step, each step's figures and verdict, glibc's own
//! tests and their regression diff). Each file counts byte for byte, with its path: any edit
//! of them judges every cell again. What only says or shows a verdict (verify's `render.rs`,
//! the support record and page in `support.rs`, `provenance.rs`, the command itself in
//! `mod.rs`) is left out, so that rewording a cell's line or the page keeps every cell's key.
//!
//! `xtask/build.rs` includes this file (`#[path]`) to digest the sources the binary is built
//! from; it uses std and `sha1_smol` only.

use std::path::{Path, PathBuf};

/// What a cell's verdict depends on besides the series and the builds, relative to the
/// workspace root: a directory (with the names inside it that never judge a cell) or a file.
/// loader-tests' Jetson replay and the model's differential test are not run by verify.
pub(crate) const JUDGING_SOURCES: &[(&str, &[&str])] = &[
    ("model/src", &[]),
    ("loader-tests/src", &["replay", "differential.rs"]),
    ("c-fixtures", &[]),
    ("xtask/src/resolution", &[]),
    ("xtask/src/verify/cell.rs", &[]),
    ("xtask/src/verify/emulated.rs", &[]),
    ("xtask/src/verify/outcome.rs", &[]),
    ("xtask/src/verify/testsuite.rs", &[]),
];

/// The files of `xtask/src/verify/` that say or show a verdict and never make one: a file
/// there must be in this list or in [`JUDGING_SOURCES`] (a test holds it), so that a new
/// module is judged unless it is named here.
pub(crate) const VERIFY_WORDING: &[&str] = &["mod.rs", "provenance.rs", "render.rs", "support.rs"];

/// Every file of [`JUDGING_SOURCES`] under `root`, in path order.
pub(crate) fn judging_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for (source, left_out) in JUDGING_SOURCES {
        collect(&root.join(source), left_out, &mut files)?;
    }
    files.sort();
    Ok(files)
}

fn collect(path: &Path, left_out: &[&str], files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !path.is_dir() {
        // A listed file that is not there is an error, not an empty digest.
        std::fs::metadata(path).map_err(path_context(path))?;
        files.push(path.to_path_buf());
        return Ok(());
    }
    for entry in std::fs::read_dir(path).map_err(path_context(path))? {
        let path = entry.map_err(path_context(path))?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if left_out.contains(&name.as_ref()) {
            continue;
        }
        collect(&path, &[], files)?;
    }
    Ok(())
}

/// The digest of the judging sources under `root`: each file's path relative to `root` and
/// its bytes, in path order.
pub(crate) fn judging_digest(root: &Path) -> std::io::Result<String> {
    let mut hash = sha1_smol::Sha1::new();
    hash.update(b"judging sources v3\n");
    for file in judging_files(root)? {
        let name = file.strip_prefix(root).unwrap_or(&file);
        let bytes = std::fs::read(&file).map_err(path_context(&file))?;
        hash.update(format!("file {} {}\0", name.display(), bytes.len()).as_bytes());
        hash.update(&bytes);
    }
    Ok(hash.digest().to_string())
}

/// The error of a filesystem call on `path`, naming it (std's names no file; this file has
/// no anyhow, being part of build.rs too).
fn path_context(path: &Path) -> impl FnOnce(std::io::Error) -> std::io::Error + '_ {
    move |err| std::io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf()
    }

    /// A copy of the judging sources of this checkout, and of verify's other files.
    fn copy() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mut files = judging_files(&workspace()).unwrap();
        files.extend(
            VERIFY_WORDING
                .iter()
                .map(|name| workspace().join("xtask/src/verify").join(name)),
        );
        for file in files {
            let rel = file.strip_prefix(workspace()).unwrap();
            let to = dir.path().join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&file, &to).unwrap();
        }
        dir
    }

    fn edit(root: &Path, rel: &str, from: &str, to: &str) {
        let path = root.join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{rel} has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    }

    /// The binary's key of every cell takes the digest build.rs wrote: the same function on
    /// the same files.
    #[test]
    fn the_built_digest_is_this_checkouts() {
        assert_eq!(
            include_str!(concat!(env!("OUT_DIR"), "/harness_digest")),
            judging_digest(&workspace()).unwrap()
        );
    }

    /// Rewording what a cell's line, the table or the page say keeps every cell's key:
    /// the key is the recipe, the series, the builds and this digest.
    #[test]
    fn wording_keeps_the_digest() {
        let tree = copy();
        let root = tree.path();
        let before = judging_digest(root).unwrap();
        for (file, from, to) in [
            ("xtask/src/verify/render.rs", "verified", "proven"),
            ("xtask/src/verify/support.rs", "differs from", "is not"),
            ("xtask/src/verify/mod.rs", "not verified", "unproven"),
        ] {
            edit(root, file, from, to);
            assert_eq!(judging_digest(root).unwrap(), before, "{file}");
        }
    }

    #[test]
    fn the_scenario_table_a_fixture_and_judging_code_change_the_digest() {
        let tree = copy();
        let root = tree.path();
        let mut last = judging_digest(root).unwrap();
        // Each edit on top of the ones before it: (what, file, from, to).
        for (what, file, from, to) in [
            (
                "a fixture edit",
                "c-fixtures/libcuda.c",
                "#include",
                "#define EXTRA 1\n#include",
            ),
            (
                "a scenario table edit",
                "loader-tests/src/matrix/table.rs",
                "NEEDED_RUNPATH, FB_T), expected: Wins(Role::Compat)",
                "NEEDED_RUNPATH, FB_T), expected: Wins(Role::Driver)",
            ),
            ("a verdict edit", "xtask/src/verify/outcome.rs", "==", "!="),
            ("a step edit", "xtask/src/verify/cell.rs", "==", "!="),
            ("a suite edit", "xtask/src/verify/testsuite.rs", "==", "!="),
            ("a vocabulary edit", "model/src/target.rs", "==", "!="),
        ] {
            edit(root, file, from, to);
            let digest = judging_digest(root).unwrap();
            assert_ne!(digest, last, "{what}");
            last = digest;
        }
    }

    /// A file of verify/ is judged or named as wording: a new module is not left out of the
    /// key by default.
    #[test]
    fn every_verify_file_is_judged_or_wording() {
        let verify = workspace().join("xtask/src/verify");
        let judged = judging_files(&workspace()).unwrap();
        for entry in std::fs::read_dir(&verify).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() || VERIFY_WORDING.contains(&name.as_str()) {
                continue;
            }
            assert!(
                judged.contains(&path),
                "xtask/src/verify/{name} is neither judged (JUDGING_SOURCES) nor wording (VERIFY_WORDING)"
            );
        }
        for name in VERIFY_WORDING {
            assert!(
                verify.join(name).is_file(),
                "VERIFY_WORDING names {name}, not there"
            );
        }
    }
}
