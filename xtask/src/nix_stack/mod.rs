//! `cargo xtask nix-stack`: the series applied on top of nixpkgs' own glibc patches, the way
//! a Nix user applies it (docs/nix.md). nixpkgs builds glibc from the release tarball plus a
//! stack of patches, the first of them the release's stable branch (`<X.Y>-master.patch`, the
//! commits of `release/X.Y/master` since the tag), applied by stdenv's patch phase with
//! `patch -p1`, in the order of `glibc/common.nix`. This applies the same files in the same
//! order to the release from the project's store, then the series in the order of its
//! `series` file, and says per patch whether it applied, moved (offset) or needed fuzz.
//!
//! nixpkgs' files are not copied into this repository: they are read from checkouts of
//! nixpkgs at the commits pinned in data/releases.json ([`pins`]; `--nixpkgs DIR`: `DIR/<commit>/`, as the CI
//! workflow checks them out). Without them the check is SKIPPED outside CI and fails under CI.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use model::{NixpkgsPin, Release, Target};
use xshell::cmd;

use crate::cli::{Cells, Env};
use crate::series::Workspace;
use crate::store::SourceStore;
use crate::util::exit::NeedsAttention;
use crate::util::shell;

/// The nixpkgs commits checked, with their releases: each release's `nixpkgs` fact in
/// data/releases.json, the commit at which the files were read for docs/nix.md
/// (NixOS/nixpkgs, `pkgs/development/libraries/glibc/`). The check itself reads `common.nix`
/// at the commit and fails when its glibc is not the pin's release.
pub(crate) fn pins() -> Vec<(Release, &'static NixpkgsPin)> {
    model::supported()
        .iter()
        .filter_map(|r| Some((*r, r.facts().nixpkgs.as_ref()?)))
        .collect()
}

/// Where nixpkgs keeps glibc, inside a checkout.
pub(crate) const GLIBC_DIR: &str = "pkgs/development/libraries/glibc";

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub cells: Cells,
    /// A directory holding one nixpkgs checkout per pinned commit, `DIR/<commit>/` (only
    /// `pkgs/development/libraries/glibc/` is read) [default: $LD_FALLBACK_NIXPKGS].
    #[arg(long, value_name = "DIR")]
    pub nixpkgs: Option<PathBuf>,
}

/// How one patch went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub name: String,
    /// Hunks applied at another line than the patch says.
    pub offset: usize,
    /// Hunks applied with fuzz (context lines ignored).
    pub fuzz: usize,
    /// `patch`'s report of the hunks that failed; empty when it applied.
    pub failed: Vec<String>,
}

/// The series on one nixpkgs stack.
#[derive(Debug)]
pub(crate) struct StackReport {
    /// nixpkgs' glibc version string (`2.42-67`).
    pub nix_version: String,
    pub stack: Vec<Applied>,
    /// File sections of nixpkgs' patches left out because they change `manual/`, which the
    /// store's trees lack (as Debian's tarballs do).
    pub manual_sections: usize,
    pub series: Vec<Applied>,
}

impl StackReport {
    pub(crate) fn applies(&self) -> bool {
        self.stack
            .iter()
            .chain(&self.series)
            .all(|a| a.failed.is_empty())
    }

    /// A series hunk applied with fuzz: its context changed under it. nixpkgs' `patch -p1`
    /// takes it (fuzz up to 2 lines), but what it made has to be looked at.
    pub(crate) fn fuzzed(&self) -> bool {
        self.series.iter().any(|a| a.fuzz > 0)
    }
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0");
        let from_env = std::env::var_os("LD_FALLBACK_NIXPKGS").filter(|v| !v.is_empty());
        let named_by = if self.nixpkgs.is_some() {
            "--nixpkgs"
        } else {
            "$LD_FALLBACK_NIXPKGS"
        };
        let Some(root) = self.nixpkgs.or(from_env.map(PathBuf::from)) else {
            let why = "no nixpkgs checkouts (--nixpkgs DIR or $LD_FALLBACK_NIXPKGS, DIR/<commit>/ per nixpkgs commit in data/releases.json)";
            if in_ci {
                bail!("{why}: under CI this is a failure, not a skip");
            }
            outln!("nix-stack: SKIPPED: {why}");
            return Ok(());
        };
        // A directory the user named that is not there is a mistake to say, not a skip of
        // every cell (a checkout of one pin missing from it is such a skip).
        match std::fs::metadata(&root) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => bail!("{named_by} {} is not a directory: name the directory holding one nixpkgs checkout per pin", root.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{named_by} {} does not exist: name the directory holding one nixpkgs checkout per pin",
                root.display()
            ),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot look at {named_by} {}", root.display()))
            }
        }
        // Checkouts of some pins missing are cells SKIPPED; of every pin the cells need, the
        // directory named is the mistake.
        let pinned: Vec<&NixpkgsPin> = self
            .cells
            .iter()
            .filter_map(|c| c.release.facts().nixpkgs.as_ref())
            .collect();
        if !pinned.is_empty()
            && !pinned
                .iter()
                .any(|pin| root.join(&pin.commit).join(GLIBC_DIR).is_dir())
        {
            bail!(
                "{named_by} {} holds no nixpkgs checkout of the pins of the releases asked for (DIR/<commit>/, a checkout at each release's nixpkgs commit in data/releases.json): name the directory holding them",
                root.display()
            );
        }
        let ws = Workspace::open_read_only(env)?;
        let store = SourceStore::open(&env.store)?;
        let mut problems = Vec::new();
        for cell in self.cells.iter() {
            let Some(pin) = cell.release.facts().nixpkgs.as_ref() else {
                outln!(
                    "{} {}: no nixpkgs pin (nixpkgs ships no glibc {} here)",
                    cell.release,
                    cell.target,
                    cell.release
                );
                continue;
            };
            let checkout = root.join(&pin.commit);
            if !checkout.join(GLIBC_DIR).is_dir() {
                let why = format!(
                    "{} {}: SKIPPED: no checkout of nixpkgs {} at {}",
                    cell.release,
                    cell.target,
                    &pin.commit[..12],
                    checkout.display()
                );
                if in_ci {
                    problems.push(why);
                } else {
                    outln!("{why}");
                }
                continue;
            }
            check_commit(&checkout, &pin.commit)?;
            let series = ws.load_series(cell.release)?;
            let report = check_stack(
                &store,
                cell.release,
                cell.target,
                &checkout.join(GLIBC_DIR),
                &series.patches,
                &env.cache,
            )
            .with_context(|| {
                format!(
                    "cannot check the {} series on nixpkgs {}",
                    cell.release,
                    &pin.commit[..12]
                )
            })?;
            out!("{}", render(cell.release, cell.target, pin, &report));
            if !report.applies() {
                problems.push(format!(
                    "{} {}: does not apply on nixpkgs {}",
                    cell.release,
                    cell.target,
                    &pin.commit[..12]
                ));
            } else if report.fuzzed() {
                problems.push(format!(
                    "{} {}: applies on nixpkgs {} only with fuzz (the context changed: review what it makes, or rebase the series onto the stable branch)",
                    cell.release,
                    cell.target,
                    &pin.commit[..12]
                ));
            }
        }
        if !problems.is_empty() {
            return Err(NeedsAttention(problems.join("\n")).into());
        }
        Ok(())
    }
}

/// The checkout must be the pinned commit: the report names it.
fn check_commit(checkout: &Path, commit: &str) -> Result<()> {
    crate::util::git::check_configuration(&[checkout.join(".git")])?;
    let sh = shell::here()?;
    let out = Command::from(cmd!(sh, "git -C {checkout} rev-parse HEAD"))
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run git rev-parse in {}", checkout.display()))?;
    let head = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || head != commit {
        bail!(
            "{} is not a checkout of nixpkgs {commit} (HEAD: {})",
            checkout.display(),
            if head.is_empty() { "none" } else { &head }
        );
    }
    Ok(())
}

/// nixpkgs' `common.nix` of glibc: a Nix expression a person writes, a few pages long.
const COMMON_NIX_LIMIT: model::file::Limit = model::file::Limit {
    bytes: 16 << 20,
    what: "a Nix expression",
};

/// Applies nixpkgs' stack from `nix_glibc` (its `common.nix` and patch files) for `target`
/// to `release` from the store, then `series`, in a scratch tree under `cache`.
pub(crate) fn check_stack(
    store: &SourceStore,
    release: Release,
    target: Target,
    nix_glibc: &Path,
    series: &[crate::series::Patch],
    cache: &Path,
) -> Result<StackReport> {
    let common = nix_glibc.join("common.nix");
    let text = model::file::read_regular_text(&common, COMMON_NIX_LIMIT)
        .with_context(|| format!("cannot read {}", common.display()))?;
    let stack = NixStack::parse(&text, target)
        .with_context(|| format!("cannot read the patch list of {}", common.display()))?;
    if stack.version != release.version() {
        bail!(
            "{} builds glibc {}, not {release}",
            common.display(),
            stack.version
        );
    }
    let scratch = crate::util::staging::tempdir_in(&cache.join("nix-stack"), "tree")?;
    let tree = scratch.path().join("glibc");
    store.export_tree(release, &tree)?;
    apply_stack(&tree, &stack, nix_glibc, series)
}

/// Applies `stack` (files in `nix_glibc`), then `series`, to the release's files in `tree`.
fn apply_stack(
    tree: &Path,
    stack: &NixStack,
    nix_glibc: &Path,
    series: &[crate::series::Patch],
) -> Result<StackReport> {
    let mut report = StackReport {
        nix_version: format!("{}{}", stack.version, stack.suffix),
        stack: Vec::new(),
        manual_sections: 0,
        series: Vec::new(),
    };
    for name in &stack.patches {
        let path = nix_glibc.join(name);
        let text = model::file::read_regular_text(&path, crate::series::PATCH_LIMIT)
            .with_context(|| format!("cannot read {} (listed in common.nix)", path.display()))?;
        let (kept, dropped) = without_manual(&text);
        report.manual_sections += dropped;
        report
            .stack
            .push(apply(tree, name, &kept, &Patching::STDENV)?);
    }
    for patch in series {
        report
            .series
            .push(apply(tree, &patch.name, &patch.text, &Patching::STDENV)?);
    }
    Ok(report)
}

/// nixpkgs' glibc as `common.nix` declares it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NixStack {
    pub version: String,
    pub suffix: String,
    /// The patch files applied for the target, in order (`./` dropped).
    pub patches: Vec<String>,
}

impl NixStack {
    /// Reads `version`, `patchSuffix` and the `patches` expression: a list of `./NAME` files,
    /// then `++ lib.optional(s) COND ./NAME` terms. A condition is decided for a Linux host
    /// building natively with nixpkgs' default glibc (no musl, no Darwin build, no CET
    /// default); one this does not know is an error, so that a new one is looked at.
    pub(crate) fn parse(text: &str, target: Target) -> Result<NixStack> {
        let code = strip_comments(text);
        let string_of = |key: &str| -> Result<String> {
            let at = code
                .find(&format!("{key} = \""))
                .with_context(|| format!("no `{key} = \"...\"`"))?;
            let rest = &code[at + key.len() + 4..];
            Ok(rest[..rest.find('"').unwrap_or(0)].to_string())
        };
        let version = string_of("version")?;
        let suffix = string_of("patchSuffix").unwrap_or_default();
        let start = code.find("patches =").context("no `patches =`")?;
        let rest = &code[start + "patches =".len()..];
        let end = rest
            .find("postPatch =")
            .context("no `postPatch =` after the patches")?;
        let expr = &rest[..end];
        let mut patches = Vec::new();
        for (i, term) in split_top_level(expr, "++").into_iter().enumerate() {
            let files = patch_files(term);
            if i == 0 {
                patches.extend(files);
                continue;
            }
            if files.is_empty() {
                continue;
            }
            let applies = if term.contains("isAarch64") {
                target == Target::Aarch64
            } else if term.contains("isMusl")
                || term.contains("isDarwin")
                || term.contains("enableCETRuntimeDefault")
            {
                false
            } else {
                bail!(
                    "a condition this check does not know, for {}: {}",
                    files.join(", "),
                    term.split_whitespace().collect::<Vec<_>>().join(" ")
                );
            };
            if applies {
                patches.extend(files);
            }
        }
        if patches.is_empty() {
            bail!("no patch files in `patches`");
        }
        Ok(NixStack {
            version,
            suffix,
            patches,
        })
    }
}

/// Nix without its comments (`# ...` to the end of the line, `/* ... */`).
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let block = rest.find("/*");
        let line = rest.find('#');
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                rest = rest[b..].find("*/").map_or("", |e| &rest[b + e + 2..]);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

/// `expr` split at `sep` outside brackets and parentheses.
fn split_top_level<'a>(expr: &'a str, sep: &str) -> Vec<&'a str> {
    let (mut terms, mut depth, mut start) = (Vec::new(), 0i32, 0);
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'(' | b'{' => depth += 1,
            b']' | b')' | b'}' => depth -= 1,
            _ if depth == 0 && expr[i..].starts_with(sep) => {
                terms.push(&expr[start..i]);
                i += sep.len();
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    terms.push(&expr[start..]);
    terms
}

/// The `./NAME` paths of a term, in order.
fn patch_files(term: &str) -> Vec<String> {
    term.split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | '(' | ')'))
        .filter_map(|word| word.strip_prefix("./"))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

/// `text` without the file sections that change `manual/`, and how many there were. A
/// section starts at `diff --git a/X b/X` (nixpkgs' stable-branch patches are `git show`
/// output) and ends at the next section or commit header.
pub(crate) fn without_manual(text: &str) -> (String, usize) {
    let mut kept = String::new();
    let mut dropping = false;
    let mut dropped = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            dropping = line.starts_with("diff --git a/manual/");
            dropped += usize::from(dropping);
        } else if line.starts_with("commit ") {
            dropping = false;
        }
        if !dropping {
            kept.push_str(line);
        }
    }
    (kept, dropped)
}

/// How a distribution's build runs `patch`: the components stripped from the paths, and
/// whether to change nothing (`--dry-run`: only say whether it would apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Patching {
    pub strip: u8,
    pub dry_run: bool,
}

impl Patching {
    /// `patch -p1`, as stdenv's patch phase and quilt (by default) run it.
    pub(crate) const STDENV: Patching = Patching {
        strip: 1,
        dry_run: false,
    };
}

/// `patch -pN` of `text` in `tree`, as stdenv's patch phase and quilt run it (`--batch`: no
/// questions; no backup files).
pub(crate) fn apply(tree: &Path, name: &str, text: &str, how: &Patching) -> Result<Applied> {
    use std::io::Write;
    let sh = shell::here()?;
    let strip = format!("-p{}", how.strip);
    let dry_run = how.dry_run.then_some("--dry-run");
    // Fed by hand rather than with xshell's `stdin`: xshell makes a patch that stops
    // reading early (a failure, reported below) an error of its own.
    let patch = cmd!(
        sh,
        "patch {strip} {dry_run...} --batch --no-backup-if-mismatch -d {tree}"
    );
    let mut child = Command::from(patch)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run patch (Debian package patch)")?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = text.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .with_context(|| format!("cannot run patch for {name}"))?;
    // A patch that stops reading early (a failure) closes its input: not our error.
    let _ = writer.join();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut applied = parse_patch_output(name, &said);
    if !out.status.success() && applied.failed.is_empty() {
        applied
            .failed
            .push(format!("patch failed: {}", said.trim_end()));
    }
    Ok(applied)
}

/// Counts what GNU patch says of each hunk.
pub(crate) fn parse_patch_output(name: &str, said: &str) -> Applied {
    let mut applied = Applied {
        name: name.to_string(),
        offset: 0,
        fuzz: 0,
        failed: Vec::new(),
    };
    let mut file = String::new();
    for line in said.lines() {
        // `checking file` where `--dry-run` changes nothing.
        if let Some(path) = line
            .strip_prefix("patching file ")
            .or_else(|| line.strip_prefix("checking file "))
        {
            file = path.trim_matches(|c| c == '\'' || c == '`').to_string();
        } else if line.starts_with("Hunk #") {
            if line.contains("FAILED") {
                applied.failed.push(format!("{file}: {line}"));
            } else {
                applied.fuzz += usize::from(line.contains("with fuzz"));
                applied.offset += usize::from(line.contains("(offset"));
            }
        } else if line.contains("can't find file to patch") || line.contains("No file to patch") {
            applied.failed.push(line.to_string());
        }
    }
    applied
}

/// The report of one cell.
pub(crate) fn render(
    release: Release,
    target: Target,
    pin: &NixpkgsPin,
    report: &StackReport,
) -> String {
    let mut out = String::new();
    let verdict = if !report.applies() {
        "DOES NOT APPLY"
    } else if report.fuzzed() {
        "applies WITH FUZZ"
    } else {
        "applies"
    };
    let _ = writeln!(
        out,
        "{release} {target} on nixpkgs {} ({}; glibc {}, {} patches{}): the series {verdict}",
        &pin.commit[..12],
        pin.what,
        report.nix_version,
        report.stack.len(),
        match report.manual_sections {
            0 => String::new(),
            n => format!(", {n} manual/ sections left out"),
        }
    );
    for (kind, list) in [("nixpkgs", &report.stack), ("series", &report.series)] {
        for a in list {
            let how = if !a.failed.is_empty() {
                format!("FAILED: {}", a.failed.join("; "))
            } else {
                match (a.offset, a.fuzz) {
                    (0, 0) => "clean".to_string(),
                    (o, 0) => format!("{o} hunks moved (offset)"),
                    (o, f) => format!("{o} hunks moved (offset), {f} with fuzz (context changed)"),
                }
            };
            let _ = writeln!(out, "  {kind:<7} {}: {how}", a.name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMON: &str = r#"
let
  version = "2.42";
  patchSuffix = "-67";
in
stdenv.mkDerivation ({
    patches = [
      /*
        $ diff -u 2.42-master.patch ../nixpkgs/pkgs/development/libraries/glibc/2.42-master.patch
      */
      ./2.42-master.patch

      # Don't use /etc/ld.so.cache, for non-NixOS systems.
      ./dont-use-system-ld-so-cache.patch
      ./reenable_DT_HASH.patch
    ]
    ++ (
      let
        isAarch64 = stdenv.buildPlatform.isAarch64 || stdenv.hostPlatform.isAarch64;
      in
      lib.optional (isAarch64 && isLinux) ./0001-aarch64-math-vector.h-add-NVCC-include-guard.patch
    )
    ++ lib.optional stdenv.hostPlatform.isMusl ./fix-rpc-types-musl-conflicts.patch
    ++ lib.optional stdenv.buildPlatform.isDarwin ./darwin-cross-build.patch
    ++ lib.optional enableCETRuntimeDefault ./2.39-revert-cet-default-disable.patch;

    postPatch = ''
      patch -p 1 <<EOF
      EOF
    '';
"#;

    #[test]
    fn the_patch_list_is_nixpkgs_order_for_the_target() {
        let x86 = NixStack::parse(COMMON, Target::X86_64).unwrap();
        assert_eq!(
            x86,
            NixStack {
                version: "2.42".into(),
                suffix: "-67".into(),
                patches: vec![
                    "2.42-master.patch".into(),
                    "dont-use-system-ld-so-cache.patch".into(),
                    "reenable_DT_HASH.patch".into(),
                ],
            }
        );
        let arm = NixStack::parse(COMMON, Target::Aarch64).unwrap();
        assert_eq!(
            arm.patches.last().unwrap(),
            "0001-aarch64-math-vector.h-add-NVCC-include-guard.patch"
        );
        assert_eq!(arm.patches.len(), 4);
    }

    #[test]
    fn an_unknown_condition_is_an_error() {
        let text = COMMON.replace("stdenv.hostPlatform.isMusl", "stdenv.hostPlatform.isRiscV");
        let err = NixStack::parse(&text, Target::X86_64).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "a condition this check does not know, for fix-rpc-types-musl-conflicts.patch: lib.optional stdenv.hostPlatform.isRiscV ./fix-rpc-types-musl-conflicts.patch"
        );
    }

    #[test]
    fn manual_sections_are_left_out() {
        let text = "commit 1\n\n    msg\n\ndiff --git a/manual/x.texi b/manual/x.texi\n--- a/manual/x.texi\n+++ b/manual/x.texi\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/elf/a.c b/elf/a.c\n@@ -1 +1 @@\n-c\n+d\ncommit 2\n";
        let (kept, dropped) = without_manual(text);
        assert_eq!(dropped, 1);
        assert_eq!(
            kept,
            "commit 1\n\n    msg\n\ndiff --git a/elf/a.c b/elf/a.c\n@@ -1 +1 @@\n-c\n+d\ncommit 2\n"
        );
    }

    /// The stack and the series applied for real with `patch`: nixpkgs' stable-branch patch
    /// moves the series' context (offset), a `manual/` section is left out, and a series hunk
    /// whose context the stack changed fails, named.
    #[test]
    fn the_series_is_applied_on_the_stack_and_judged() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("glibc");
        let nix = dir.path().join("nix");
        std::fs::create_dir_all(tree.join("elf")).unwrap();
        std::fs::create_dir_all(&nix).unwrap();
        let lines: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(tree.join("elf/rtld.c"), &lines).unwrap();
        std::fs::write(
            nix.join("common.nix"),
            "version = \"2.42\";\npatchSuffix = \"-1\";\npatches = [ ./2.42-master.patch ./preload.patch ];\npostPatch = '';\n",
        )
        .unwrap();
        // Two lines added at the top: every later hunk moves by two.
        std::fs::write(
            nix.join("2.42-master.patch"),
            "commit 1\n\n    fix\n\ndiff --git a/manual/a.texi b/manual/a.texi\n--- a/manual/a.texi\n+++ b/manual/a.texi\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/elf/rtld.c b/elf/rtld.c\n--- a/elf/rtld.c\n+++ b/elf/rtld.c\n@@ -1,3 +1,5 @@\n+new a\n+new b\n line 1\n line 2\n line 3\n",
        )
        .unwrap();
        // Rewrites lines 14 to 18, which a series hunk below needs as context.
        std::fs::write(
            nix.join("preload.patch"),
            "--- a/elf/rtld.c\n+++ b/elf/rtld.c\n@@ -13,7 +13,7 @@\n line 13\n-line 14\n-line 15\n-line 16\n-line 17\n-line 18\n+for nix 14\n+for nix 15\n+for nix 16\n+for nix 17\n+for nix 18\n line 19\n",
        )
        .unwrap();
        let series = [
            crate::series::Patch {
                name: "0001-moved.patch".into(),
                text: "--- a/elf/rtld.c\n+++ b/elf/rtld.c\n@@ -7,6 +7,7 @@\n line 7\n line 8\n line 9\n+fallback\n line 10\n line 11\n line 12\n".into(),
            },
            crate::series::Patch {
                name: "0002-broken.patch".into(),
                text: "--- a/elf/rtld.c\n+++ b/elf/rtld.c\n@@ -13,6 +13,7 @@\n line 13\n line 14\n line 15\n+more\n line 16\n line 17\n line 18\n".into(),
            },
            // Two of its trailing context lines were rewritten: it applies with fuzz.
            crate::series::Patch {
                name: "0003-fuzzed.patch".into(),
                text: "--- a/elf/rtld.c\n+++ b/elf/rtld.c\n@@ -10,6 +10,7 @@\n line 10\n line 11\n line 12\n+extra\n line 13\n line 14\n line 15\n".into(),
            },
        ];
        let stack = NixStack::parse(
            &std::fs::read_to_string(nix.join("common.nix")).unwrap(),
            Target::X86_64,
        )
        .unwrap();
        let report = apply_stack(&tree, &stack, &nix, &series).unwrap();
        assert_eq!(report.manual_sections, 1);
        assert_eq!(
            report.stack,
            [
                Applied {
                    name: "2.42-master.patch".into(),
                    offset: 0,
                    fuzz: 0,
                    failed: vec![],
                },
                Applied {
                    name: "preload.patch".into(),
                    offset: 1,
                    fuzz: 0,
                    failed: vec![],
                },
            ]
        );
        assert_eq!(
            report.series,
            [
                Applied {
                    name: "0001-moved.patch".into(),
                    offset: 1,
                    fuzz: 0,
                    failed: vec![],
                },
                Applied {
                    name: "0002-broken.patch".into(),
                    offset: 0,
                    fuzz: 0,
                    failed: vec!["elf/rtld.c: Hunk #1 FAILED at 13.".into()],
                },
                Applied {
                    name: "0003-fuzzed.patch".into(),
                    offset: 1,
                    fuzz: 1,
                    failed: vec![],
                },
            ]
        );
        assert!(!report.applies());
        assert!(report.fuzzed());
    }

    #[test]
    fn patch_output_is_counted_per_hunk() {
        let said = "patching file elf/rtld.c\nHunk #1 succeeded at 1703 (offset 6 lines).\nHunk #2 succeeded at 1800 with fuzz 1 (offset 2 lines).\nHunk #3 FAILED at 2000.\n1 out of 3 hunks FAILED -- saving rejects to file elf/rtld.c.rej\n";
        assert_eq!(
            parse_patch_output("0001.patch", said),
            Applied {
                name: "0001.patch".into(),
                offset: 2,
                fuzz: 1,
                failed: vec!["elf/rtld.c: Hunk #3 FAILED at 2000.".into()],
            }
        );
    }
}
