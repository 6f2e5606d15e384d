//! What the Nix tests share: the pages' fenced blocks, and Nix itself (Debian's Nix 2.8,
//! `nix-bin`) with a private store in a scratch directory and, as `<nixpkgs>` and as the
//! `nixpkgs` flake input, the stand-in of `stand-in-nixpkgs/` (nixpkgs' minimum Nix is newer
//! than 2.8, and this machine reaches no nixpkgs). Without Nix a test is SKIPPED, and under
//! CI it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use loader_tests::host::{find_program, in_ci, Tool};

/// Nix's evaluator and its command-line tool, as Debian packages them (scripts/install-deps
/// installs them).
pub(crate) const NIX_INSTANTIATE: Tool = Tool::new("nix-instantiate", "nix-bin");
pub(crate) const NIX: Tool = Tool::new("nix", "nix-bin");

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A program the test needs, or `None` (SKIPPED, with why) outside CI.
pub(crate) fn tool(tool: Tool) -> Option<PathBuf> {
    let found = find_program(tool.program);
    if found.is_none() {
        let why = format!(
            "no {} (install with: scripts/install-deps, which installs {})",
            tool.program, tool.package
        );
        assert!(!in_ci(), "{why}");
        eprintln!("SKIPPED: {why}");
    }
    found
}

/// The pages users read: README.md and docs/*.md.
pub(crate) fn pages() -> Vec<PathBuf> {
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

/// A fenced block of a page.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// The page, from the workspace (`docs/nix.md`).
    pub(crate) page: String,
    /// The line of its first line of text.
    pub(crate) line: usize,
    pub(crate) text: String,
}

impl Block {
    /// `page:line`, for messages.
    pub(crate) fn at(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }

    /// The file the block stands for, as its first line names it (`# glibc-fallback.nix:
    /// ...`, `# configuration.nix (NixOS): ...`).
    pub(crate) fn file_name(&self) -> Option<&str> {
        self.text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# "))
            .and_then(|l| l.split([':', ' ']).next())
            .filter(|n| n.ends_with(".nix"))
    }

    /// The first line that is not a comment: what a block of commands starts with.
    pub(crate) fn first_command(&self) -> &str {
        self.text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or("")
    }
}

/// The ```` ```LANG ```` blocks of a page's text (indented ones too): (first line, text).
pub(crate) fn fenced(page: &str, lang: &str) -> Vec<(usize, String)> {
    let fence = format!("```{lang}");
    let mut blocks = Vec::new();
    let mut open: Option<(usize, usize, String)> = None;
    for (n, line) in page.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed == fence => {
                open = Some((n + 2, line.len() - trimmed.len(), String::new()));
            }
            Some((start, _, text)) if trimmed == "```" => {
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

/// Every ```` ```LANG ```` block of the pages.
pub(crate) fn blocks(lang: &str) -> Vec<Block> {
    let root = workspace();
    pages()
        .iter()
        .flat_map(|path| {
            let page = path.strip_prefix(&root).unwrap().display().to_string();
            fenced(&std::fs::read_to_string(path).unwrap(), lang)
                .into_iter()
                .map(move |(line, text)| Block {
                    page: page.clone(),
                    line,
                    text,
                })
        })
        .collect()
}

/// The placeholder the pages write for a checkout of this repository.
pub(crate) const CHECKOUT: &str = "/path/to/ld-fallback";

/// A page's text with its checkout placeholder made this checkout.
pub(crate) fn with_checkout(text: &str) -> String {
    text.replace(CHECKOUT, &workspace().display().to_string())
}

/// What the stand-in nixpkgs is made of, besides its fixed parts: the version of its glibc and
/// the paths of what its packages are (stub files the shell tests lay out, or names that are
/// never opened).
#[derive(Debug, Clone)]
pub(crate) struct StandIn {
    /// `glibc.version`: the newest release's, with a stable-branch suffix as nixpkgs has.
    pub(crate) glibc_version: String,
    pub(crate) glibc: PathBuf,
    /// What `glibc.overrideAttrs` builds: the patched glibc.
    pub(crate) glibc_fallback: PathBuf,
    /// `hello`: the package a page's expression re-points.
    pub(crate) hello: PathBuf,
    /// A directory with `bin/patchelf`.
    pub(crate) patchelf: PathBuf,
    /// The file name of the loader (`stdenv.cc.bintools.dynamicLinker`'s).
    pub(crate) loader: String,
}

impl Default for StandIn {
    fn default() -> StandIn {
        StandIn {
            glibc_version: format!("{}-9", model::Release::newest().version()),
            glibc: "/nix/store/00000000000000000000000000000000-glibc".into(),
            glibc_fallback: "/nix/store/11111111111111111111111111111111-glibc-fallback".into(),
            hello: "/nix/store/22222222222222222222222222222222-hello-2.12.2".into(),
            patchelf: "/nix/store/33333333333333333333333333333333-patchelf".into(),
            loader: "ld-linux-aarch64.so.1".into(),
        }
    }
}

/// Nix 2.8 with a private store (a chroot store under the scratch directory: nothing is
/// written to the machine's /nix) and the stand-in nixpkgs.
pub(crate) struct Nix {
    instantiate: PathBuf,
    nix: PathBuf,
    /// The private store's root: its `/nix/store/X` is `<root>/nix/store/X` on this machine.
    store: PathBuf,
    /// The stand-in nixpkgs, with its params.nix.
    nixpkgs: PathBuf,
}

impl Nix {
    /// Nix with the stand-in made of `stand_in`, in `scratch`; `None` where Nix is not
    /// installed (SKIPPED outside CI).
    pub(crate) fn new(scratch: &Path, stand_in: &StandIn) -> Option<Nix> {
        let instantiate = tool(NIX_INSTANTIATE)?;
        let nix = tool(NIX)?;
        let nixpkgs = scratch.join("stand-in-nixpkgs");
        std::fs::create_dir_all(&nixpkgs).unwrap();
        let source = workspace().join("xtask/tests/it/stand-in-nixpkgs");
        for file in ["default.nix", "flake.nix"] {
            std::fs::copy(source.join(file), nixpkgs.join(file)).unwrap();
        }
        let s = |p: &Path| format!("{:?}", p.display().to_string());
        let params = format!(
            "{{\n  glibcVersion = {:?};\n  glibc = {};\n  glibcFallback = {};\n  hello = {};\n  patchelf = {};\n  loader = {:?};\n}}\n",
            stand_in.glibc_version,
            s(&stand_in.glibc),
            s(&stand_in.glibc_fallback),
            s(&stand_in.hello),
            s(&stand_in.patchelf),
            stand_in.loader,
        );
        std::fs::write(nixpkgs.join("params.nix"), params).unwrap();
        Some(Nix {
            instantiate,
            nix,
            store: scratch.join("store"),
            nixpkgs,
        })
    }

    pub(crate) fn nixpkgs(&self) -> &Path {
        &self.nixpkgs
    }

    /// The environment Nix runs in: the stand-in as `<nixpkgs>`, the private store, no
    /// build group (Debian's nix.conf names one, which a machine without the daemon lacks),
    /// flakes (experimental in 2.8).
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("NIX_PATH", format!("nixpkgs={}", self.nixpkgs.display())),
            (
                "NIX_CONFIG",
                format!(
                    "store = {}\nbuild-users-group =\nexperimental-features = nix-command flakes",
                    self.store.display()
                ),
            ),
        ]
    }

    fn command(&self, program: &Path, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir).envs(self.env());
        cmd
    }

    /// `nix-instantiate --parse FILE` in `dir`.
    pub(crate) fn parse(&self, dir: &Path, file: &str) -> Result<(), String> {
        let mut cmd = self.command(&self.instantiate, dir);
        cmd.args(["--parse", file]);
        run(cmd).map(drop)
    }

    /// The value of `expr`, evaluated in `dir`, as JSON. Paths a value names are copied into
    /// the private store, as a build would have them.
    pub(crate) fn eval(&self, dir: &Path, expr: &str) -> Result<serde_json::Value, String> {
        let mut cmd = self.command(&self.instantiate, dir);
        cmd.args([
            "--read-write-mode",
            "--eval",
            "--strict",
            "--json",
            "-E",
            expr,
        ]);
        let out = run(cmd)?;
        serde_json::from_str(&out).map_err(|e| format!("not JSON ({e}): {out}"))
    }

    /// `nix ARGS` (flakes enabled) in `dir`: its stdout.
    pub(crate) fn nix(&self, dir: &Path, args: &[&str]) -> Result<String, String> {
        let mut cmd = self.command(&self.nix, dir);
        cmd.args(args);
        run(cmd)
    }

    /// A path of the private store as this machine reaches it: `/nix/store/X` is under the
    /// store's root (in a build, the store is at /nix/store itself).
    pub(crate) fn real(&self, text: &str) -> String {
        text.replace(
            "/nix/store/",
            &format!("{}/nix/store/", self.store.display()),
        )
    }
}

/// Runs `cmd`: its stdout, or its status and stderr.
fn run(mut cmd: Command) -> Result<String, String> {
    let out: Output = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} ({}):\n{}",
            cmd.get_program().to_string_lossy(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Checks `patches` (a patch list, as JSON: nixpkgs' own patch, then the store's copies of
/// the series' files) against `patches/<release>/`: nixpkgs' patch first, then each file of
/// the series file, in its order, byte for byte. Why not, or `None`.
pub(crate) fn series_mismatch(
    nix: &Nix,
    release: &str,
    patches: &serde_json::Value,
) -> Option<String> {
    let dir = workspace().join("patches").join(release);
    let series = std::fs::read_to_string(dir.join("series")).unwrap();
    let names: Vec<&str> = series
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let Some(items) = patches.as_array() else {
        return Some(format!("not a list: {patches}"));
    };
    let got: Vec<String> = items
        .iter()
        .map(|i| i.as_str().unwrap_or("?").to_string())
        .collect();
    if got.first().map(String::as_str) != Some("nixpkgs-own.patch") {
        return Some(format!("nixpkgs' own patches are not first: {got:?}"));
    }
    if got.len() != names.len() + 1 {
        return Some(format!(
            "{} patches after nixpkgs' own, not the {} of patches/{release}/series: {got:?}",
            got.len() - 1,
            names.len()
        ));
    }
    for (path, name) in got[1..].iter().zip(&names) {
        let want = std::fs::read(dir.join(name)).unwrap();
        match std::fs::read(nix.real(path)) {
            Ok(have) if have == want => {}
            Ok(_) => return Some(format!("{path} is not patches/{release}/{name}")),
            Err(e) => return Some(format!("{path} (in series order: {name}): {e}")),
        }
    }
    None
}

#[test]
fn blocks_are_found_indented_too() {
    let page = "a\n```nix\n{ a = 1; }\n```\n- item\n  ```nix\n  # x.nix\n  { b = 2; }\n  ```\n```sh\nls\n```\n";
    assert_eq!(
        fenced(page, "nix"),
        [
            (3, "{ a = 1; }\n".to_string()),
            (7, "# x.nix\n{ b = 2; }\n".to_string())
        ]
    );
    assert_eq!(fenced(page, "sh"), [(11, "ls\n".to_string())]);
}
