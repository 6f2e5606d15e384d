//! Every Nix expression the docs give a user (each ```` ```nix ```` block of README.md and
//! docs/) is parsed by Nix itself (`nix-instantiate --parse`), and the ones that build the
//! patched glibc are evaluated, with a stand-in for nixpkgs (its glibc's version, patches,
//! `overrideAttrs` and `outPath`, and the few `lib` functions they use): each must give
//! nixpkgs' patches followed by the series of the release, in the order of its `series`
//! file, read from this checkout. Nothing is built and nixpkgs is not needed. Debian's
//! `nix-bin` provides `nix-instantiate` (scripts/install-deps); without it the test is
//! SKIPPED, and under CI it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use loader_tests::host::{find_program, in_ci, Tool};

/// Nix's evaluator, as Debian packages it (scripts/install-deps installs it).
const NIX_INSTANTIATE: Tool = Tool::new("nix-instantiate", "nix-bin");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `nix-instantiate`, or `None` (SKIPPED) where it is not installed outside CI.
fn nix_instantiate() -> Option<PathBuf> {
    let found = find_program(NIX_INSTANTIATE.program);
    if found.is_none() {
        let why = format!(
            "no {} (install with: scripts/install-deps, which installs {})",
            NIX_INSTANTIATE.program, NIX_INSTANTIATE.package
        );
        assert!(!in_ci(), "{why}");
        eprintln!("SKIPPED: {why}");
    }
    found
}

/// The ```` ```nix ```` blocks of a page (indented ones too): (first line number, text).
fn nix_blocks(page: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, usize, String)> = None;
    for (n, line) in page.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed == "```nix" => {
                open = Some((n + 2, line.len() - trimmed.len(), String::new()));
            }
            Some((start, indent, text)) if trimmed == "```" => {
                let _ = indent;
                blocks.push((*start, std::mem::take(text)));
                open = None;
            }
            Some((_, indent, text)) => {
                let line = line.get(*indent..).unwrap_or(line.trim_start());
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// The file a block stands for: the name its first line gives (`# glibc-fallback.nix: ...`),
/// else, for a NixOS module that configures nix-ld, `configuration.nix`.
fn block_name(block: &str) -> String {
    let named = block
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .and_then(|l| l.split([':', ' ']).next())
        .filter(|n| n.ends_with(".nix"));
    match named {
        Some(name) => name.to_string(),
        None if block.contains("programs.nix-ld") => "configuration.nix".to_string(),
        None => "block.nix".to_string(),
    }
}

/// The pages users read.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![workspace().join("README.md")];
    for entry in std::fs::read_dir(workspace().join("docs"))
        .unwrap()
        .flatten()
    {
        if entry.path().extension().is_some_and(|e| e == "md") {
            pages.push(entry.path());
        }
    }
    pages.sort();
    pages
}

/// Runs `nix-instantiate ARGS` in `dir`: its stdout, or why it failed.
fn run(nix: &Path, dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(nix)
        .args(args)
        .current_dir(dir)
        // No store, daemon or channel is needed for parsing and for these evaluations.
        .env("NIX_PATH", "")
        .output()
        .map_err(|e| format!("cannot run nix-instantiate: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// nixpkgs as far as the docs' expressions use it. The glibc is the newest release's, with one
/// patch of nixpkgs' own; `overrideAttrs` applies the function as nixpkgs does.
const STUB: &str = r#"
let
  lib = {
    versions.majorMinor = v:
      builtins.concatStringsSep "." (builtins.genList (builtins.elemAt (builtins.splitVersion v)) 2);
    hasPrefix = p: s: builtins.substring 0 (builtins.stringLength p) s == p;
    splitString = sep: s: builtins.filter builtins.isString (builtins.split sep s);
    mkForce = content: { _type = "override"; priority = 50; inherit content; };
  };
  glibc = {
    version = "RELEASE-9";
    patches = [ "nixpkgs-own.patch" ];
    outPath = "/nix/store/00000000000000000000000000000000-glibc-RELEASE-9";
    overrideAttrs = f: glibc // f glibc // { outPath = "/nix/store/00000000000000000000000000000000-glibc-fallback"; };
  };
  pkgs = {
    inherit lib glibc;
    patchelf = "patchelf";
    stdenv.cc.bintools.dynamicLinker = "${glibc}/lib/ld-linux-aarch64.so.1";
    runCommand = name: env: script: { inherit name script; };
  };
in pkgs
"#;

/// What each evaluated block must give, by the file its first line names; `{F}` is the
/// block's file, `{R}` this checkout, `{S}` the stand-in nixpkgs. A block not named here is
/// only parsed (and its name must be one of these or say it is a NixOS module).
const EVALUATED: &[(&str, &str)] = &[
    (
        "overlay.nix",
        "let pkgs = {S}; in ((import {F}) pkgs pkgs).glibc.patches",
    ),
    (
        "glibc-fallback.nix",
        "(import {F} { pkgs = {S}; ldFallback = {R}; }).patches",
    ),
    (
        "flake.nix",
        "let pkgs = {S}; in ((import {F}).outputs { self = { }; nixpkgs.legacyPackages = { aarch64-linux = pkgs; x86_64-linux = pkgs; }; ld-fallback = { outPath = \"{R}\"; }; }).packages.aarch64-linux.glibc-fallback.patches",
    ),
];

/// Blocks evaluated for what they print rather than for a patch list: (file, expression,
/// text the result must contain).
const CHECKED: &[(&str, &str, &str)] = &[
    (
        "app-fallback.nix",
        "(import {F} { pkgs = {S}; app = { name = \"app\"; outPath = \"/nix/store/11111111111111111111111111111111-app\"; }; glibcFallback = \"/nix/store/22222222222222222222222222222222-glibc-fallback\"; }).script",
        "/nix/store/22222222222222222222222222222222-glibc-fallback/lib/ld-linux-aarch64.so.1",
    ),
    (
        "compat-origin-first.nix",
        "let prev = { cudaPackages.overrideScope = f: f { } { cuda_compat.overrideAttrs = g: g { postFixup = \"\"; }; }; }; in ((import {F}) prev prev).cudaPackages.cuda_compat.postFixup",
        "patchelf --set-rpath \"$ORIGIN:$(patchelf --print-rpath \"$lib\")\" \"$lib\"",
    ),
    (
        "configuration.nix",
        "(import {F} { pkgs = {S}; lib = ({S}).lib; }).environment.variables.NIX_LD.content",
        "-glibc-fallback/lib/ld-linux-aarch64.so.1",
    ),
    // docs/jetson.md's module: nixpkgs' nix-ld module sets NIX_LD as a session variable, so
    // the override goes there.
    (
        "nix-ld-jetson.nix",
        "(import {F} { pkgs = {S}; lib = ({S}).lib; }).environment.sessionVariables.NIX_LD.content",
        "-glibc-fallback/lib/ld-linux-aarch64.so.1",
    ),
];

/// The series of `release` as the expressions must list it: nixpkgs' patch, then each file of
/// `patches/<release>/series`, as paths in this checkout.
fn expected_patches(release: &str, as_string: bool) -> String {
    let dir = workspace().join("patches").join(release);
    let series = std::fs::read_to_string(dir.join("series")).unwrap();
    let mut items = vec!["\"nixpkgs-own.patch\"".to_string()];
    for name in series
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let path = dir.join(name).display().to_string();
        items.push(if as_string {
            format!("\"{path}\"")
        } else {
            path
        });
    }
    format!("[ {} ]", items.join(" "))
}

#[test]
fn every_nix_expression_in_the_docs_parses_and_builds_the_series() {
    let Some(nix) = nix_instantiate() else {
        return;
    };
    let scratch = tempfile::TempDir::new().unwrap();
    let release = model::Release::newest().version().to_string();
    let stub = STUB.replace("RELEASE", &release);
    let repo = workspace().display().to_string();
    let glibc_fallback = pages()
        .iter()
        .flat_map(|page| nix_blocks(&std::fs::read_to_string(page).unwrap()))
        .map(|(_, block)| block)
        .find(|block| block_name(block) == "glibc-fallback.nix");
    let mut failures = Vec::new();
    let mut evaluated = 0;
    let mut blocks = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let rel = page
            .strip_prefix(workspace())
            .unwrap()
            .display()
            .to_string();
        for (line, block) in nix_blocks(&text) {
            blocks += 1;
            let at = format!("{rel}:{line}");
            // Each block in a directory of its own, named as its first line says, beside the
            // blocks of the same page it imports (`./glibc-fallback.nix`).
            let name = block_name(&block);
            let dir = scratch.path().join(rel.replace('/', "_"));
            std::fs::create_dir_all(&dir).unwrap();
            // A module of another page imports nix.md's glibc as `./glibc-fallback.nix`.
            if let Some(glibc) = &glibc_fallback {
                std::fs::write(
                    dir.join("glibc-fallback.nix"),
                    glibc.replace("/path/to/ld-fallback", &repo),
                )
                .unwrap();
            }
            let file = dir.join(&name);
            // The docs' placeholder for the checkout, in the overlay's path literal.
            std::fs::write(&file, block.replace("/path/to/ld-fallback", &repo)).unwrap();
            if let Err(why) = run(&nix, &dir, &["--parse", &name]) {
                failures.push(format!("{at} ({name}) does not parse:\n{why}"));
                continue;
            }
            let expr = |template: &str| {
                template
                    .replace("{S}", &format!("({stub})"))
                    .replace("{F}", &format!("./{name}"))
                    .replace("{R}", &repo)
            };
            if let Some((_, template)) = EVALUATED.iter().find(|(n, _)| *n == name) {
                evaluated += 1;
                match run(&nix, &dir, &["--eval", "--strict", "-E", &expr(template)]) {
                    Err(why) => failures.push(format!("{at} ({name}) does not evaluate:\n{why}")),
                    Ok(got) => {
                        let got = got.trim();
                        let want = [
                            expected_patches(&release, false),
                            expected_patches(&release, true),
                        ];
                        if !want.iter().any(|w| w == got) {
                            failures.push(format!(
                                "{at} ({name}) gives the patches {got}\n  not {}",
                                want[0]
                            ));
                        }
                    }
                }
            } else if let Some((_, template, must)) = CHECKED.iter().find(|(n, ..)| *n == name) {
                evaluated += 1;
                match run(
                    &nix,
                    &dir,
                    &["--eval", "--strict", "--json", "-E", &expr(template)],
                ) {
                    Err(why) => failures.push(format!("{at} ({name}) does not evaluate:\n{why}")),
                    Ok(got) => {
                        let got: String = serde_json::from_str(got.trim()).unwrap_or(got);
                        if !got.contains(must) {
                            failures.push(format!("{at} ({name}) gives {got:?}, without {must:?}"));
                        }
                    }
                }
            } else {
                failures.push(format!(
                    "{at}: a Nix block ({name}) that this test neither evaluates nor knows: name it in its first line (`# NAME.nix: ...`) and add it here"
                ));
            }
        }
    }
    assert!(
        blocks > 0 && evaluated > 0,
        "no Nix block found in the docs"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn blocks_are_found_indented_too() {
    let page = "a\n```nix\n{ a = 1; }\n```\n- item\n  ```nix\n  # x.nix\n  { b = 2; }\n  ```\n```sh\nls\n```\n";
    assert_eq!(
        nix_blocks(page),
        [
            (3, "{ a = 1; }\n".to_string()),
            (7, "# x.nix\n{ b = 2; }\n".to_string())
        ]
    );
}
