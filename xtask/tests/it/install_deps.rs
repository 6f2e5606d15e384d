//! `scripts/install-deps` installs every Debian package the code needs: the tools and
//! directories declared in `loader_tests::host`, and any package the code names elsewhere
//! (a `Tool::new("program", "package")` or an `apt-get install package` hint; in xtask's
//! integration tests, a `Tool::new`). A CI run on a
//! new machine has only what that script installs, so a requirement added without its install
//! step fails here first.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use loader_tests::host::{tools, PACKAGED_DIRS};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The words of the script's `packages="..."` list.
fn installed_by_script() -> BTreeSet<String> {
    let path = workspace().join("scripts/install-deps");
    let text = std::fs::read_to_string(&path).expect("scripts/install-deps is readable");
    let list = text
        .split("packages=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("scripts/install-deps has a packages=\"...\" list");
    list.split_whitespace().map(str::to_string).collect()
}

/// Packages named in the code outside the declarations: `Tool::new("p", "package")` and
/// `apt-get install a b` in messages. Unit tests (after `#[cfg(test)]`) invent packages, and
/// the CI-engine workflow names what its container needs before the checkout (after which it
/// runs scripts/install-deps itself).
fn named_in_code() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let elsewhere = workspace().join("xtask/src/ci/workflow.rs");
    for krate in ["xtask/src", "loader-model/src", "loader-tests/src"] {
        for file in rust_files(&workspace().join(krate))
            .into_iter()
            .filter(|f| *f != elsewhere)
        {
            let text = std::fs::read_to_string(&file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for call in code.split("Tool::new(").skip(1) {
                let mut strings = call.split('"').skip(1).step_by(2);
                if let (Some(_program), Some(package)) = (strings.next(), strings.next()) {
                    found.insert(package.to_string());
                }
            }
            for hint in code.split("apt-get install ").skip(1) {
                let words = hint.split(['\n', '"', '(', '`', '\\']).next().unwrap_or("");
                found.extend(
                    words
                        .split_whitespace()
                        .filter(|w| {
                            w.chars()
                                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                        })
                        .map(str::to_string),
                );
            }
        }
    }
    // The integration tests' own tools (`nix_docs.rs`'s nix-instantiate), declared the same
    // way; this file's examples are not requirements.
    for file in rust_files(&workspace().join("xtask/tests/it")) {
        if file.ends_with("install_deps.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for call in text.split("Tool::new(").skip(1) {
            let mut strings = call.split('"').skip(1).step_by(2);
            if let (Some(_program), Some(package)) = (strings.next(), strings.next()) {
                found.insert(package.to_string());
            }
        }
    }
    found
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn install_deps_installs_every_package_the_code_requires() {
    let installed = installed_by_script();
    let mut required: BTreeSet<String> = tools::ALL.iter().map(|t| t.package.to_string()).collect();
    required.extend(PACKAGED_DIRS.iter().map(|d| d.package.to_string()));
    required.extend(named_in_code());
    let missing: Vec<&String> = required.difference(&installed).collect();
    assert!(
        missing.is_empty(),
        "scripts/install-deps does not install {missing:?}, which the code requires; add them to its packages list"
    );
}

#[test]
fn the_code_scan_sees_the_declared_requirements() {
    // The scan must at least find what host.rs declares, or it could not find anything.
    let named = named_in_code();
    for tool in [tools::BWRAP, tools::QEMU_AARCH64, tools::AARCH64_GCC] {
        assert!(
            named.contains(tool.package),
            "{} not found by the scan",
            tool.package
        );
    }
    // And what the integration tests declare.
    assert!(
        named.contains("nix-bin"),
        "nix_docs.rs's nix-bin not found by the scan"
    );
}
