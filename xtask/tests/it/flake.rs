//! The repository's flake (`flake.nix`, with `default.nix` and `nix/`), as far as Debian's
//! Nix 2.8 can check it here: parsed; its `lib` evaluated without nixpkgs; its outputs and
//! checks evaluated by Nix's own flake commands, with the stand-in nixpkgs as its `nixpkgs`
//! input (flakes are experimental in 2.8, and nixpkgs needs a newer Nix). The workflow's
//! `nix-flake` job evaluates the same outputs and checks against real nixpkgs.

use std::path::{Path, PathBuf};

use crate::nix_env::{series_mismatch, workspace, Nix, StandIn};

/// What the flake is made of: a copy holding only these evaluates as the checkout does.
const FLAKE_FILES: &[&str] = &["flake.nix", "default.nix", "nix", "patches"];

/// A copy of the flake's files beside `dir` (`<dir>/../ld-fallback`): a `path:` flake of the
/// checkout itself would copy its build outputs into the store too.
pub(crate) fn checkout_copy(dir: &Path) -> PathBuf {
    let copy = dir.parent().unwrap().join("ld-fallback");
    if !copy.exists() {
        for name in FLAKE_FILES {
            copy_tree(&workspace().join(name), &copy.join(name));
        }
    }
    copy
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}

/// The repository's Nix files: the flake, `default.nix`, and `nix/`.
fn nix_files() -> Vec<String> {
    let mut files = vec!["flake.nix".to_string(), "default.nix".to_string()];
    for entry in std::fs::read_dir(workspace().join("nix"))
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".nix") {
            files.push(format!("nix/{name}"));
        }
    }
    files.sort();
    files
}

/// `nix eval --json FLAKE#ATTR` of the checkout's copy, its nixpkgs the stand-in.
fn eval(
    nix: &Nix,
    scratch: &Path,
    attr: &str,
    apply: Option<&str>,
) -> Result<serde_json::Value, String> {
    let flake = checkout_copy(&scratch.join("flake"));
    let installable = format!("path:{}#{attr}", flake.display());
    let nixpkgs = format!("path:{}", nix.nixpkgs().display());
    let mut args = vec![
        "eval",
        "--json",
        "--no-write-lock-file",
        "--override-input",
        "nixpkgs",
        &nixpkgs,
        &installable,
    ];
    if let Some(apply) = apply {
        args.extend(["--apply", apply]);
    }
    let out = nix.nix(scratch, &args)?;
    serde_json::from_str(&out).map_err(|e| format!("not JSON ({e}): {out}"))
}

fn supported() -> Vec<String> {
    model::supported()
        .iter()
        .map(|r| r.version().to_string())
        .collect()
}

#[test]
fn every_nix_file_of_the_flake_parses() {
    let scratch = tempfile::TempDir::new().unwrap();
    let Some(nix) = Nix::new(scratch.path(), &StandIn::default()) else {
        return;
    };
    for file in nix_files() {
        nix.parse(&workspace(), &file)
            .unwrap_or_else(|why| panic!("{file} does not parse:\n{why}"));
    }
}

/// `lib` reads patches/ with builtins alone: it evaluates with nixpkgs unusable.
#[test]
fn lib_lists_every_supported_series_without_nixpkgs() {
    let scratch = tempfile::TempDir::new().unwrap();
    let Some(nix) = Nix::new(scratch.path(), &StandIn::default()) else {
        return;
    };
    let lib = "((import ./flake.nix).outputs { self = { }; nixpkgs = throw \"nixpkgs is not needed\"; }).lib";
    let releases = nix.eval(&workspace(), &format!("{lib}.releases")).unwrap();
    assert_eq!(releases, serde_json::json!(supported()));
    for release in supported() {
        // nixpkgs' versions carry the stable branch's suffix: the series is the release's.
        let patches = nix
            .eval(
                &workspace(),
                &format!("[ \"nixpkgs-own.patch\" ] ++ {lib}.patchesFor \"{release}-67\""),
            )
            .unwrap();
        if let Some(why) = series_mismatch(&nix, &release, &patches) {
            panic!("lib.patchesFor {release}: {why}");
        }
    }
}

#[test]
fn a_glibc_without_a_series_stops_with_its_release() {
    let scratch = tempfile::TempDir::new().unwrap();
    let Some(nix) = Nix::new(scratch.path(), &StandIn::default()) else {
        return;
    };
    let err = nix
        .eval(
            &workspace(),
            "((import ./flake.nix).outputs { self = { }; nixpkgs = { }; }).lib.patchesFor \"2.39-1\"",
        )
        .unwrap_err();
    assert!(
        err.contains("ld-fallback has no series for glibc 2.39 (nixpkgs' glibc is 2.39-1)")
            && err.contains(&supported().join(", ")),
        "{err}"
    );
}

/// Through Nix's flake commands: the only input is nixpkgs (which a user's `follows`
/// replaces), the patched glibc of each system builds the series after nixpkgs' patches, and
/// the checks the `nix-flake` job runs against real nixpkgs pass against the stand-in.
#[test]
fn the_flake_evaluates_with_nix_flake_commands() {
    let scratch = tempfile::TempDir::new().unwrap();
    let Some(nix) = Nix::new(scratch.path(), &StandIn::default()) else {
        return;
    };
    let release = model::Release::newest().version().to_string();
    let flake = checkout_copy(&scratch.path().join("flake"));
    let metadata = nix
        .nix(
            scratch.path(),
            &[
                "flake",
                "metadata",
                "--json",
                "--no-write-lock-file",
                "--override-input",
                "nixpkgs",
                &format!("path:{}", nix.nixpkgs().display()),
                &format!("path:{}", flake.display()),
            ],
        )
        .unwrap();
    let metadata: serde_json::Value = serde_json::from_str(&metadata).unwrap();
    let root = metadata["locks"]["root"].as_str().unwrap();
    let inputs = &metadata["locks"]["nodes"][root]["inputs"];
    assert_eq!(
        inputs.as_object().map(|o| o.keys().collect::<Vec<_>>()),
        Some(vec![&"nixpkgs".to_string()]),
        "the flake's inputs: {inputs}"
    );
    for system in ["x86_64-linux", "aarch64-linux"] {
        let attr = format!("packages.{system}.glibc-fallback.patches");
        let patches = eval(&nix, scratch.path(), &attr, None).unwrap();
        if let Some(why) = series_mismatch(&nix, &release, &patches) {
            panic!("{attr}: {why}");
        }
        let attr = format!("checks.{system}.patch-lists.name");
        let name = eval(&nix, scratch.path(), &attr, None).unwrap();
        assert_eq!(name, "ld-fallback-patch-lists", "{attr}");
        let attr = format!("legacyPackages.{system}.withFallbackLoader");
        let script = eval(
            &nix,
            scratch.path(),
            &attr,
            Some("f: (f { name = \"app\"; outPath = \"/nix/store/app\"; }).script"),
        )
        .unwrap();
        let script = script.as_str().unwrap_or("");
        assert!(
            script.contains("-with-fallback-loader.sh ")
                && script.contains(" /nix/store/app/bin/*"),
            "{attr} app: {script}"
        );
    }
}

/// The checks stop the evaluation where nixpkgs' glibc has no series: what the `nix-flake`
/// job would report for a nixpkgs that moved to a release without one.
#[test]
fn the_checks_fail_on_a_nixpkgs_glibc_without_a_series() {
    let scratch = tempfile::TempDir::new().unwrap();
    let stand_in = StandIn {
        glibc_version: "2.39-1".to_string(),
        ..StandIn::default()
    };
    let Some(nix) = Nix::new(scratch.path(), &stand_in) else {
        return;
    };
    let err = eval(
        &nix,
        scratch.path(),
        "checks.x86_64-linux.patch-lists.name",
        None,
    )
    .unwrap_err();
    assert!(
        err.contains("ld-fallback has no series for glibc 2.39"),
        "{err}"
    );
}
