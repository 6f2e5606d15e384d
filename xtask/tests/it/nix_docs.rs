//! Every Nix expression the docs give a user (each ```` ```nix ```` block of README.md and
//! docs/) is parsed by Nix itself (`nix-instantiate --parse`) and evaluated against the
//! stand-in nixpkgs ([`crate::nix_env`]): the ones that build the patched glibc must give
//! nixpkgs' patches followed by the series of the release, in the order of its `series` file,
//! the files of this checkout byte for byte; a page's flake is evaluated by Nix's flake
//! commands, its lock read for the `follows` that gives the patched glibc the user's nixpkgs;
//! a NixOS module that configures nix-ld must replace `NIX_LD` where nixpkgs' module sets it.
//! A block whose Nix strings are shell is evaluated and run by [`crate::page_shell`]. Nothing
//! is built and nixpkgs is not needed.

use std::path::Path;

use crate::nix_env::{blocks, series_mismatch, with_checkout, workspace, Block, Nix, StandIn};

/// How a block is checked, by the file its first line names.
enum Check {
    /// The patch list `expr` gives (`{F}` the block's file) must be nixpkgs' then the series.
    Patches(&'static str),
    /// A flake: evaluated with Nix's flake commands (`flake_follows_and_builds_the_series`).
    Flake,
    /// A NixOS module configuring nix-ld (`nix_ld_module_replaces_nix_ld`).
    NixLd,
    /// Shell in its strings: [`crate::page_shell`] evaluates and runs it.
    Shell,
}

const CHECKS: &[(&str, Check)] = &[
    (
        "overlay.nix",
        Check::Patches("(import <nixpkgs> { overlays = [ (import {F}) ]; }).glibc.patches"),
    ),
    (
        "glibc-fallback.nix",
        Check::Patches("(import {F} { }).patches"),
    ),
    ("flake.nix", Check::Flake),
    ("configuration.nix", Check::NixLd),
    ("nix-ld-jetson.nix", Check::NixLd),
    ("app-fallback.nix", Check::Shell),
    ("compat-origin-first.nix", Check::Shell),
];

/// The name a block's file has: the one its first line gives, or, for a NixOS module that
/// configures nix-ld, `configuration.nix`.
pub(crate) fn file_name(block: &Block) -> Option<String> {
    match block.file_name() {
        Some(name) => Some(name.to_string()),
        None if block.text.contains("programs.nix-ld") => Some("configuration.nix".to_string()),
        None => None,
    }
}

/// Writes each block into a directory of its page (`docs_nix.md/`) under the name its first
/// line gives, beside nix.md's `glibc-fallback.nix`, which modules of other pages import as
/// `./glibc-fallback.nix`. The block's directory.
pub(crate) fn write_block(scratch: &Path, block: &Block) -> std::path::PathBuf {
    let dir = scratch.join(block.page.replace('/', "_"));
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(glibc) = blocks("nix")
        .into_iter()
        .find(|b| b.page == "docs/nix.md" && b.file_name() == Some("glibc-fallback.nix"))
    {
        std::fs::write(dir.join("glibc-fallback.nix"), with_checkout(&glibc.text)).unwrap();
    }
    if let Some(name) = file_name(block) {
        std::fs::write(dir.join(name), with_checkout(&block.text)).unwrap();
    }
    dir
}

#[test]
fn every_nix_expression_in_the_docs_parses_and_builds_the_series() {
    let scratch = tempfile::TempDir::new().unwrap();
    let stand_in = StandIn::default();
    let Some(nix) = Nix::new(scratch.path(), &stand_in) else {
        return;
    };
    let release = model::Release::newest().version().to_string();
    let mut failures = Vec::new();
    let mut checked = 0;
    let all = blocks("nix");
    for block in &all {
        let at = block.at();
        let Some(name) = file_name(block) else {
            failures.push(format!(
                "{at}: a Nix block without a name: name it in its first line (`# NAME.nix: ...`) and give it a check here"
            ));
            continue;
        };
        let dir = write_block(scratch.path(), block);
        if let Err(why) = nix.parse(&dir, &name) {
            failures.push(format!("{at} ({name}) does not parse:\n{why}"));
            continue;
        }
        let Some((_, check)) = CHECKS.iter().find(|(n, _)| *n == name) else {
            failures.push(format!(
                "{at}: a Nix block ({name}) that this test neither evaluates nor knows: give it a check here"
            ));
            continue;
        };
        checked += 1;
        match check {
            Check::Patches(template) => {
                let expr = template.replace("{F}", &format!("./{name}"));
                match nix.eval(&dir, &expr) {
                    Err(why) => failures.push(format!("{at} ({name}) does not evaluate:\n{why}")),
                    Ok(patches) => {
                        if let Some(why) = series_mismatch(&nix, &release, &patches) {
                            failures.push(format!("{at} ({name}): {why}"));
                        }
                    }
                }
            }
            Check::Flake => {
                if let Err(why) = flake_follows_and_builds_the_series(&nix, &dir, &release) {
                    failures.push(format!("{at} ({name}): {why}"));
                }
            }
            Check::NixLd => {
                if let Err(why) = nix_ld_module_replaces_nix_ld(&nix, &dir, &name, &stand_in) {
                    failures.push(format!("{at} ({name}): {why}"));
                }
            }
            Check::Shell => {
                if !crate::page_shell::runs_nix_shell(&name) {
                    failures.push(format!(
                        "{at} ({name}): its shell is run by no scenario of page_shell"
                    ));
                }
            }
        }
    }
    assert!(checked > 0, "no Nix block found in the docs");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A page's flake, in `dir`, with this repository as its `ld-fallback` input and the stand-in
/// as its `nixpkgs`: the lock must show ld-fallback's nixpkgs following the user's, and its
/// packages must build the series.
fn flake_follows_and_builds_the_series(nix: &Nix, dir: &Path, release: &str) -> Result<(), String> {
    let repository = crate::flake::checkout_copy(dir);
    let inputs = [
        "--no-write-lock-file".to_string(),
        "--override-input".to_string(),
        "nixpkgs".to_string(),
        format!("path:{}", nix.nixpkgs().display()),
        "--override-input".to_string(),
        "ld-fallback".to_string(),
        format!("path:{}", repository.display()),
    ];
    let with = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| a.to_string())
            .chain(inputs.iter().cloned())
            .collect()
    };
    let call = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        nix.nix(dir, &args)
    };
    let flake = format!("path:{}", dir.display());
    let metadata = call(with(&["flake", "metadata", "--json", &flake]))?;
    let metadata: serde_json::Value =
        serde_json::from_str(&metadata).map_err(|e| format!("metadata: {e}"))?;
    let follows = &metadata["locks"]["nodes"]["ld-fallback"]["inputs"]["nixpkgs"];
    if *follows != serde_json::json!(["nixpkgs"]) {
        return Err(format!(
            "ld-fallback's nixpkgs is not the user's (its lock entry: {follows}): add `inputs.ld-fallback.inputs.nixpkgs.follows = \"nixpkgs\"`, or its glibc comes from another revision"
        ));
    }
    let packages = format!("{flake}#packages.aarch64-linux.glibc-fallback.patches");
    let patches = call(with(&["eval", "--json", &packages]))?;
    let patches: serde_json::Value =
        serde_json::from_str(&patches).map_err(|e| format!("patches: {e}"))?;
    match series_mismatch(nix, release, &patches) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// A NixOS module (`module`, a file in `dir`) that enables nix-ld must set the patched
/// glibc's loader as `NIX_LD` where nixpkgs' module sets it, `environment.sessionVariables`,
/// with `mkForce` (the module's own definition is a plain one), and the fallback list there
/// too: PAM sets those for every session, and NixOS copies them into
/// `environment.variables` for the shells. A definition in `environment.variables` alone
/// leaves every session that no NixOS shell starts on the module's loader.
fn nix_ld_module_replaces_nix_ld(
    nix: &Nix,
    dir: &Path,
    module: &str,
    stand_in: &StandIn,
) -> Result<(), String> {
    let environment = nix.eval(
        dir,
        &format!("let pkgs = import <nixpkgs> {{ }}; in (import ./{module} {{ inherit pkgs; inherit (pkgs) lib; }}).environment"),
    )?;
    if environment["variables"]["NIX_LD"] != serde_json::Value::Null {
        return Err(format!(
            "sets NIX_LD in environment.variables ({}): nixpkgs' nix-ld module sets it in environment.sessionVariables, which PAM sets for every session; set it there",
            environment["variables"]["NIX_LD"]
        ));
    }
    let nix_ld = &environment["sessionVariables"]["NIX_LD"];
    let loader = format!(
        "{}/lib/ld-linux-aarch64.so.1",
        stand_in.glibc_fallback.display()
    );
    let wanted = serde_json::json!({ "_type": "override", "priority": 50, "content": loader });
    if *nix_ld != wanted {
        return Err(format!(
            "environment.sessionVariables.NIX_LD is {nix_ld}, not lib.mkForce of the patched glibc's loader ({loader})"
        ));
    }
    let fallback = environment["sessionVariables"]["LD_FALLBACK_PATH"]
        .as_str()
        .unwrap_or("");
    if fallback.is_empty() || fallback.split(':').any(|d| !d.starts_with('/')) {
        return Err(format!(
            "environment.sessionVariables.LD_FALLBACK_PATH is {:?}: a list of absolute directories, set for every session",
            environment["sessionVariables"]["LD_FALLBACK_PATH"]
        ));
    }
    Ok(())
}

/// The check above fails on the module the docs gave before: `NIX_LD` forced in
/// `environment.variables`, which nixpkgs' module no longer sets.
#[test]
fn a_nix_ld_module_forcing_environment_variables_is_refused() {
    let scratch = tempfile::TempDir::new().unwrap();
    let stand_in = StandIn::default();
    let Some(nix) = Nix::new(scratch.path(), &stand_in) else {
        return;
    };
    let dir = scratch.path().join("module");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("configuration.nix"),
        r#"{ pkgs, lib, ... }:
let glibcFallback = (import WORKSPACE { inherit pkgs; }).glibc-fallback;
in {
  programs.nix-ld.enable = true;
  environment.variables.NIX_LD = lib.mkForce "${glibcFallback}/lib/ld-linux-aarch64.so.1";
  environment.variables.LD_FALLBACK_PATH = "/run/opengl-driver/lib";
}
"#
        .replace("WORKSPACE", &workspace().display().to_string()),
    )
    .unwrap();
    let err =
        nix_ld_module_replaces_nix_ld(&nix, &dir, "configuration.nix", &stand_in).unwrap_err();
    assert!(
        err.contains("sets NIX_LD in environment.variables"),
        "{err}"
    );
}
