//! A synthetic project for running the real `cargo xtask` binary: a store with two
//! glibc-like releases, a two-patch series in its own `patches/`, a cache of its own, and a
//! sender's checkout of upstream with a manual patch made against it (`format-series`), all
//! in one temp dir (`--store`, `$LD_FALLBACK_PATCHES`, `$LD_FALLBACK_CACHE`,
//! `$LD_FALLBACK_GLIBC_UPSTREAM`, `$LD_FALLBACK_MANUAL_PATCH`), so that a test can copy the
//! whole of it, kill the binary anywhere, and never touch the user's files.
//!
//! The series is on 2.41: patch 1 changes NEWS and the search in elf/dl-load.c, patch 2 adds a
//! line to elf/rtld.c. 2.42 changed both places, so moving the series there stops at a
//! conflict in each patch.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xtask::series::Series;

use super::{dl_load, synthetic_manual, TestStore};

pub(crate) const OLD_LINE: &str = "  return default_path ();\n";
pub(crate) const NEW_LINES: &str =
    "  if (default_path () == 0)\n    return 0;\n  return fallback_path ();\n";
/// The rebase of the project's series onto 2.42, which stops at a conflict in each patch.
pub(crate) const ONTO: &[&str] = &["rebase-glibc", "--onto", "2.42", "--from", "2.41"];
pub(crate) const CONTINUE: &[&str] = &["rebase-glibc", "--continue"];
pub(crate) const CHECK: &[&str] = &["rebase-glibc", "--check"];
/// The releases the project plays (2.41, 2.42), and the one it may give a series without
/// importing it (2.43): a report's lines of the other supported releases are folded
/// (`releases_folded`).
pub(crate) const INVOLVED: &[&str] = &["2.41", "2.42", "2.43"];
/// The file names of the project's two patches.
pub(crate) const PATCH_1: &str = "0001-elf-Search-LD_FALLBACK_PATH-last.patch";
pub(crate) const PATCH_2: &str = "0002-elf-Parse-LD_FALLBACK_PATH.patch";
/// Files nobody patches, so that a damaged work tree has something to lose.
pub(crate) const OTHER_FILES: usize = 30;

pub(crate) struct Project {
    pub t: TestStore,
}

/// A finished run of the binary.
#[derive(Debug)]
pub(crate) struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub(crate) fn of(out: Output) -> Ran {
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub(crate) fn both(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Asserts the exit status, showing the output otherwise.
    pub(crate) fn expect(self, code: i32) -> Ran {
        assert_eq!(
            self.code,
            code,
            "exit status {} instead of {code}:\n{}",
            self.code,
            self.both()
        );
        self
    }
}

fn release_files(version: &str, dl: &str, rtld: &str, news: &str) -> Vec<(String, String)> {
    let mut files = vec![
        ("NEWS".to_string(), news.to_string()),
        ("elf/dl-load.c".to_string(), dl.to_string()),
        ("elf/rtld.c".to_string(), rtld.to_string()),
        ("README".to_string(), format!("glibc {version}\n")),
    ];
    for i in 0..OTHER_FILES {
        files.push((format!("misc/file{i:02}.c"), format!("int misc{i};\n")));
    }
    files
}

fn borrowed(files: &[(String, String)]) -> Vec<(&str, &str)> {
    files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect()
}

/// NEWS of a pretend release: a section per version, as glibc's.
pub(crate) fn news(version: &str) -> String {
    format!("Version {version}\n\nMajor new features:\n\n* Something upstream.\n\nVersion 2.40\n\n* Older.\n")
}

/// The entry patch 1 adds to NEWS.
pub(crate) const NEWS_ENTRY: &str = "* LD_FALLBACK_PATH.\n\n";

/// `news` with the entry where patch 1 puts it.
pub(crate) fn with_entry(news: &str) -> String {
    news.replacen(
        "\n\n* Something",
        &format!("\n\n{NEWS_ENTRY}* Something"),
        1,
    )
}

impl Project {
    pub(crate) fn new() -> Project {
        Project::with_dl_load_top("")
    }

    /// The project with `top` at the top of every `elf/dl-load.c` (a large comment makes
    /// large objects of the file and of what the patches make of it).
    pub(crate) fn with_dl_load_top(top: &str) -> Project {
        let t = TestStore::new();
        let (r41, base) = t.add(
            "2.41",
            &borrowed(&release_files(
                "2.41",
                &dl_load("2.41", top),
                "int rtld;\n",
                &news("2.41"),
            )),
        );
        let clash = dl_load("2.42", top).replace(OLD_LINE, "  return default_path (flags);\n");
        t.add(
            "2.42",
            &borrowed(&release_files(
                "2.42",
                &clash,
                "int rtld_renamed;\n",
                &news("2.42"),
            )),
        );
        let c1 = t.commit(
            base,
            "elf: Search LD_FALLBACK_PATH last\n",
            &[
                (
                    "elf/dl-load.c",
                    &dl_load("2.41", top).replace(OLD_LINE, NEW_LINES),
                ),
                ("NEWS", &with_entry(&news("2.41"))),
            ],
            1_764_000_000,
        );
        let c2 = t.commit(
            c1,
            "elf: Parse LD_FALLBACK_PATH\n",
            &[("elf/rtld.c", "int rtld;\nint fallback;\n")],
            1_764_000_100,
        );
        let project = Project { t };
        Series::from_commits(project.t.repo(), r41, &[c1, c2])
            .unwrap()
            .write(&project.patches().join("2.41"))
            .unwrap();
        std::fs::write(project.patches().join("scope"), "NEWS\nelf/**\n").unwrap();
        synthetic_manual(project.root());
        project
    }

    pub(crate) fn root(&self) -> &Path {
        self.t.tmp.path()
    }

    pub(crate) fn store(&self) -> PathBuf {
        self.root().join("glibc.git")
    }

    pub(crate) fn patches(&self) -> PathBuf {
        self.root().join("patches")
    }

    pub(crate) fn cache(&self) -> PathBuf {
        self.root().join("cache")
    }

    /// The work tree of the rebase onto 2.42.
    pub(crate) fn tree(&self) -> PathBuf {
        self.cache().join("rebase/2.42/tree")
    }

    /// `cargo xtask <args>` on this project, with nothing inherited that could steer it.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        command_in(self.root(), args)
    }

    pub(crate) fn run(&self, args: &[&str]) -> Ran {
        Ran::of(self.command(args).output().unwrap())
    }

    /// Like [`Project::run`], on another store.
    pub(crate) fn run_on_store(&self, store: &Path, args: &[&str]) -> Ran {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.arg("--store").arg(store).args(args);
        isolate(&mut cmd, self.root());
        Ran::of(cmd.output().unwrap())
    }

    /// `rebase-glibc --check`, asserting that every series of the project passes (see
    /// [`check_in`]).
    pub(crate) fn check(&self) -> Ran {
        check_in(self.root())
    }

    /// [`super::normalised`] for this project's directory.
    pub(crate) fn normalised(&self, text: &str) -> String {
        super::normalised(self.root(), text)
    }

    /// Rewrites the patch file `name` of the 2.41 series as a hand edit would: `edit` of its
    /// text.
    pub(crate) fn edit_patch<T: AsRef<[u8]>>(&self, name: &str, edit: impl FnOnce(&str) -> T) {
        let path = self.patches().join("2.41").join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, edit(&text)).unwrap();
    }

    /// Adds a series for 2.43, a release the store lacks (a copy of 2.41's, its base renamed).
    pub(crate) fn add_series_of_a_release_not_imported(&self) {
        let dir = self.patches().join("2.43");
        copy_project(&self.patches().join("2.41"), &dir);
        let series = std::fs::read_to_string(dir.join("series")).unwrap();
        std::fs::write(
            dir.join("series"),
            series.replace("glibc-2.41", "glibc-2.43"),
        )
        .unwrap();
    }

    /// The resolution of the conflict of patch `at` (0-based) in the work tree.
    pub(crate) fn resolve(&self, at: usize) {
        resolve_in(&self.tree(), at);
    }
}

/// `text` with the project's directory written as `ROOT`: a whole output, for a snapshot.
pub(crate) fn scrubbed(p: &Project, text: &str) -> String {
    text.replace(&p.root().display().to_string(), "ROOT")
}

/// `--check`'s line for a supported release `version` without a series, its project's
/// directory written `ROOT`.
pub(crate) fn no_series_line(version: &str) -> String {
    format!(
        "FAILED  ROOT/patches/{version}: glibc {version} is a supported release, but it has no \
         series (the directory is gone): restore it from git, or make it with `cargo xtask \
         update-release {version}`"
    )
}

/// A scrubbed `--check` report without the lines of the supported releases that have no
/// series (the test projects have a series or two; check_names_a_supported_release_whose_
/// series_is_gone in safety.rs compares those lines whole).
pub(crate) fn without_absent_series(report: &str) -> String {
    report
        .lines()
        .filter(|line| {
            !model::supported()
                .iter()
                .any(|release| *line == no_series_line(release.version()))
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// `cargo xtask <args>` on the project rooted at `root` (a copy of a [`Project`]'s).
pub(crate) fn command_in(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("--store").arg(root.join("glibc.git")).args(args);
    isolate(&mut cmd, root);
    cmd
}

/// The project's own cache, patches and upstream checkout, and nothing inherited that could
/// steer the binary.
fn isolate(cmd: &mut Command, root: &Path) {
    cmd.env("LD_FALLBACK_CACHE", root.join("cache"))
        .env("LD_FALLBACK_PATCHES", root.join("patches"))
        .env("LD_FALLBACK_GLIBC_UPSTREAM", root.join("upstream-glibc"))
        .env(
            "LD_FALLBACK_MANUAL_PATCH",
            root.join("manual-dynlink.texi.patch"),
        )
        .env_remove("LD_FALLBACK_STORE")
        .env_remove("LD_FALLBACK_CHECKOUT")
        .env_remove("LD_FALLBACK_FAULT")
        .env_remove("LD_FALLBACK_FAULT_LOG")
        .env_remove("RUST_BACKTRACE")
        .env_remove("CI");
}

/// `rebase-glibc --check` on the project rooted at `root`, asserting that every series it has
/// passes: the supported releases it has no series for are the only findings (exit 2).
pub(crate) fn check_in(root: &Path) -> Ran {
    let ran = run_in(root, &["rebase-glibc", "--check"]);
    assert!(
        ran.code == 2 && super::output_passes_but_for_absent_series(&ran.stdout),
        "--check finds more than the releases without a series:\n{}",
        ran.both()
    );
    ran
}

pub(crate) fn run_in(root: &Path, args: &[&str]) -> Ran {
    Ran::of(command_in(root, args).output().unwrap())
}

/// Writes the resolution of patch `at`'s conflict into the work tree `tree`.
pub(crate) fn resolve_in(tree: &Path, at: usize) {
    match at {
        0 => std::fs::write(
            tree.join("elf/dl-load.c"),
            dl_load("2.42", "").replace(
                OLD_LINE,
                "  if (default_path (flags) == 0)\n    return 0;\n  return fallback_path ();\n",
            ),
        )
        .unwrap(),
        1 => std::fs::write(
            tree.join("elf/rtld.c"),
            "int rtld_renamed;\nint fallback;\n",
        )
        .unwrap(),
        _ => panic!("the series has two patches"),
    }
}

/// Where the stopped rebase onto 2.42 is (`at` of its state), if one is.
pub(crate) fn stopped_at(root: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(root.join("cache/rebase/2.42/state")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("at "))
        .map(|n| n.parse().unwrap())
}

/// Every visible file below `dir` with its content, sorted: what a user sees in `patches/`.
pub(crate) fn visible_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files);
    files.sort();
    files
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            files.push((rel, std::fs::read(&path).unwrap()));
        }
    }
}

/// Hidden entries of `dir` (leftovers of killed runs live there).
pub(crate) fn hidden_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// `cp -a` of a project for one case, without the sources its releases were made from
/// (`src-*`, tarballs): file creation is what copies cost.
pub(crate) fn copy_project(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    let mut cmd = Command::new("cp");
    cmd.arg("-a");
    for entry in std::fs::read_dir(src).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("src-") && !name.ends_with(".tar.xz") {
            cmd.arg(entry.path());
        }
    }
    let status = cmd.arg(dest).status().unwrap();
    assert!(status.success());
}

/// Packs the store's objects into one file, so that copies of it are cheap.
pub(crate) fn pack_store(root: &Path) {
    let store = root.join("glibc.git");
    super::run(&store, "git", &["repack", "-a", "-d", "-q"]);
    super::run(&store, "git", &["prune-packed"]);
}
