//! Synthetic glibc-like releases for the store and rebase tests: small trees, real tarballs,
//! stores in temp dirs (never the user's cache).
#![allow(dead_code)]

pub(crate) mod project;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use git2::{Oid, Repository, Signature, Time};
use model::Release;
use tempfile::TempDir;
use xtask::rebase::series_check::{CheckReport, SeriesVerdict};
use xtask::rebase::RebaseOutcome;
use xtask::store::import::Source;
use xtask::store::snapshot::Snapshot;
use xtask::store::SourceStore;

/// Puts `cmd` under a file size limit (`ulimit -f`) of `bytes`. With `ignore_sigxfsz` the
/// signal the limit sends is ignored, so that the write that meets it fails with EFBIG
/// instead of the process dying.
pub(crate) fn limit_file_size(cmd: &mut Command, bytes: u64, ignore_sigxfsz: bool) {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal and setrlimit are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if ignore_sigxfsz {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            }
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A report, summary or progress of a command, whole but for what changes from run to run:
/// the temp dir `root` (written `ROOT`), a scratch name (`.check-<pid>-<random>`,
/// `.state-<release>-<pid>-<random>`: `.check-N`), a log's time stamp (`-1796189671.log`:
/// `-N.log`), a duration (`0.3 s`: `T s`; `[0:07]`: `[T]`), and the compiler's diagnostics,
/// which the host's gcc words (one line stands for them, so the report around them is still
/// compared whole).
pub(crate) fn normalised(root: &Path, text: &str) -> String {
    let mut out = String::new();
    let mut in_compiler_output = false;
    for line in text.replace(&root.display().to_string(), "ROOT").lines() {
        if in_compiler_output && line.starts_with("    ") {
            continue;
        }
        in_compiler_output = line.starts_with("build check: ") && line.ends_with("configuration:");
        let mut line = line.to_string();
        for scratch in [".check-", ".state-"] {
            line = replace_after(
                &line,
                scratch,
                |c| c.is_ascii_alphanumeric() || "-.".contains(c),
                |_, _| true,
            );
        }
        line = replace_after(
            &line,
            "-",
            |c| c.is_ascii_digit(),
            |run, rest| run.len() >= 9 && rest.starts_with(".log"),
        );
        line = replace_after(
            &line,
            "[",
            |c| c.is_ascii_digit() || c == ':',
            |run, rest| run.contains(':') && rest.starts_with(']'),
        )
        .replace("[N]", "[T]");
        let words: Vec<&str> = line.split(' ').collect();
        line = words
            .iter()
            .enumerate()
            .map(|(i, word)| {
                let seconds = words
                    .get(i + 1)
                    .is_some_and(|unit| unit.trim_end_matches([')', ',', ';']) == "s");
                if seconds && word.contains('.') && word.parse::<f64>().is_ok() {
                    "T"
                } else {
                    word
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&line);
        out.push('\n');
        if in_compiler_output {
            out.push_str("    (the compiler's diagnostics)\n");
        }
    }
    out
}

/// `text` with what depends on the project's list of releases written so that it does not:
/// the list itself (`model::supported_list()`) as `<supported releases>`, and in each line
/// about a supported release that the test does not involve, that release as `X.Y`, adjacent
/// lines that are then alike kept once. A snapshot of a report with a line per supported
/// release reads the same when a release is added or retired.
pub(crate) fn releases_folded(text: &str, involved: &[&str]) -> String {
    let text = text.replace(&model::supported_list(), "<supported releases>");
    let others: Vec<&str> = model::supported()
        .iter()
        .map(|r| r.version())
        .filter(|v| !involved.contains(v))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let folded = others.iter().fold(line.to_string(), |line, version| {
            version_as_placeholder(&line, version)
        });
        if out.last() != Some(&folded) || folded == line {
            out.push(folded);
        }
    }
    let mut folded = out.join("\n");
    if text.ends_with('\n') {
        folded.push('\n');
    }
    folded
}

/// `line` with `version` written `X.Y` where it stands as a version of its own (not inside a
/// longer number: `2.4` is not in `2.41`).
fn version_as_placeholder(line: &str, version: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(version) {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + version.len()..];
        let joined = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit() || c == '.');
        let continues = after.chars().next().is_some_and(|c| c.is_ascii_digit())
            || (after.starts_with('.') && after[1..].starts_with(|c: char| c.is_ascii_digit()));
        out.push_str(&rest[..at]);
        out.push_str(if joined(before) || continues {
            version
        } else {
            "X.Y"
        });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `line` with each run of `part` characters after a `marker` written `N` where `variable`
/// (the run, and what follows it) says it is one.
fn replace_after(
    line: &str,
    marker: &str,
    part: impl Fn(char) -> bool,
    variable: impl Fn(&str, &str) -> bool,
) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at + marker.len()]);
        let after = &rest[at + marker.len()..];
        let len = after.find(|c: char| !part(c)).unwrap_or(after.len());
        let (run, following) = after.split_at(len);
        if !run.is_empty() && variable(run, following) {
            out.push('N');
            rest = following;
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// glibc's NEWS shape: the newest version first with its `features`, older versions after.
pub(crate) fn news_of(version: &str, features: &[&str]) -> String {
    let mut text = format!(
        "GNU C Library NEWS -- history of user-visible changes.\n\nVersion {version}\n\nMajor \
         new features:\n\n"
    );
    for feature in features {
        text.push_str(&format!("* {feature}\n\n"));
    }
    text.push_str(
        "Deprecated and removed features, and other changes affecting compatibility:\n\n* \
         None.\n\nVersion 2.40\n\nMajor new features:\n\n* Old.\n",
    );
    text
}

/// NEWS of the synthetic 2.41 and of a 2.42 that rewrote the section around where the
/// series' entry goes (which a rebase places by rule, not by merging).
pub(crate) fn news_2_41() -> String {
    news_of("2.41", &["Tunables 2.41."])
}
pub(crate) fn news_2_42() -> String {
    news_of(
        "2.42",
        &["Support for a new CPU.", "Tunables 2.42, longer."],
    )
}

/// A supported release played by a synthetic tree: the tree its import must produce instead
/// of the pinned one (tests cannot use the real pins).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Synthetic {
    pub release: Release,
    pub tree: Oid,
}

impl Synthetic {
    /// Imports it into `store` from `source`, verified against its own tree.
    pub(crate) fn import(self, store: &SourceStore, source: &Source) -> anyhow::Result<Oid> {
        store.import_expecting(self.release, self.tree, source)
    }
}

/// The release `version`, played by the tree of `dir`.
pub(crate) fn release_of(version: &str, dir: &Path) -> Synthetic {
    Synthetic {
        release: Release::parse(version).unwrap(),
        tree: Snapshot::of_dir(dir, &["manual"]).unwrap().root,
    }
}

/// The summary of a rebase that went through; a stop fails the test with its report.
pub(crate) fn written(outcome: RebaseOutcome) -> String {
    match outcome {
        RebaseOutcome::Written(written) => written.render(),
        RebaseOutcome::Stopped(stop) => panic!("unexpected stop:\n{}", stop.render()),
    }
}

/// The report of a rebase that stopped at a conflict.
pub(crate) fn conflict(outcome: RebaseOutcome) -> String {
    match outcome {
        RebaseOutcome::Stopped(stop) if stop.is_conflict() => stop.render(),
        other => panic!("expected a conflict, got:\n{}", other.render()),
    }
}

/// The report of a rebase that stopped at a failed check.
pub(crate) fn check_failed(outcome: RebaseOutcome) -> String {
    match outcome {
        RebaseOutcome::Stopped(stop) if !stop.is_conflict() => stop.render(),
        other => panic!("expected a failed check, got:\n{}", other.render()),
    }
}

/// Writes `files` below `root/glibc-<version>/` and returns that directory.
pub(crate) fn source_dir(root: &Path, version: &str, files: &[(&str, &str)]) -> PathBuf {
    let top = root.join(format!("glibc-{version}"));
    for (path, text) in files {
        let path = top.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    top
}

pub(crate) fn make_executable(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `tar -cJf` of `top` (named `glibc-X.Y`), as Debian ships it.
pub(crate) fn tarball(top: &Path, dest: &Path) -> PathBuf {
    let status = Command::new("tar")
        .arg("-cJf")
        .arg(dest)
        .arg("-C")
        .arg(top.parent().unwrap())
        .arg(top.file_name().unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    dest.to_path_buf()
}

/// `dl-load.c` of a pretend release: `n` numbered lines around a search function.
pub(crate) fn dl_load(version: &str, extra_top: &str) -> String {
    let mut text = format!("/* glibc {version} */\n{extra_top}");
    for i in 0..40 {
        text.push_str(&format!("static int line{i};\n"));
    }
    text.push_str("int\nsearch (void)\n{\n  /* Finally, try the default path.  */\n  return default_path ();\n}\n");
    for i in 40..60 {
        text.push_str(&format!("static int line{i};\n"));
    }
    text
}

/// A fresh store in a temp dir holding the given synthetic releases.
pub(crate) struct TestStore {
    pub tmp: TempDir,
    pub store: SourceStore,
}

impl TestStore {
    pub(crate) fn new() -> TestStore {
        let tmp = TempDir::new().unwrap();
        let store = SourceStore::open(&tmp.path().join("glibc.git"))
            .unwrap()
            .with_downloads(&tmp.path().join("downloads"));
        TestStore { tmp, store }
    }

    /// `text` with this store's temp dir written as `ROOT`: a whole output, for a snapshot.
    pub(crate) fn scrubbed(&self, text: &str) -> String {
        text.replace(&self.tmp.path().display().to_string(), "ROOT")
    }

    /// [`normalised`] for this store's temp dir.
    pub(crate) fn normalised(&self, text: &str) -> String {
        normalised(self.tmp.path(), text)
    }

    /// A workspace on this store whose patches/ (in the temp dir) holds `commits` on `release`
    /// as a series, and a scope file of `scope`.
    pub(crate) fn workspace_with_series(
        &self,
        release: Release,
        commits: &[Oid],
        scope: &str,
    ) -> xtask::series::Workspace {
        let ws = xtask::series::Workspace {
            store: SourceStore::open(self.store.dir()).unwrap(),
            patches_dir: self.tmp.path().join("patches"),
            rebase_dir: self.tmp.path().join("rebase"),
        };
        xtask::series::Series::from_commits(self.repo(), release, commits)
            .unwrap()
            .write(&ws.series_dir(release))
            .unwrap();
        std::fs::write(ws.patches_dir.join("scope"), scope).unwrap();
        ws
    }

    /// Imports a synthetic release from a tarball of `files`.
    pub(crate) fn add(&self, version: &'static str, files: &[(&str, &str)]) -> (Release, Oid) {
        let src = self.tmp.path().join(format!("src-{version}"));
        let top = source_dir(&src, version, files);
        let synthetic = release_of(version, &top);
        let tar = tarball(
            &top,
            &self.tmp.path().join(format!("glibc_{version}.tar.xz")),
        );
        let commit = synthetic
            .import(&self.store, &Source::Tarball(tar))
            .unwrap();
        (synthetic.release, commit)
    }

    pub(crate) fn repo(&self) -> &Repository {
        self.store.repo()
    }

    /// Commits `files` (path, new text) on `parent`, as a developer would.
    pub(crate) fn commit(
        &self,
        parent: Oid,
        subject_and_body: &str,
        files: &[(&str, &str)],
        when: i64,
    ) -> Oid {
        let repo = self.repo();
        let parent = repo.find_commit(parent).unwrap();
        let mut tree = parent.tree().unwrap();
        for (path, text) in files {
            let blob = repo.blob(text.as_bytes()).unwrap();
            tree = replace_path(repo, &tree, path, blob);
        }
        let sig =
            Signature::new("A U Thor", "author@example.invalid", &Time::new(when, 60)).unwrap();
        repo.commit(None, &sig, &sig, subject_and_body, &tree, &[&parent])
            .unwrap()
    }
}

fn replace_path<'r>(
    repo: &'r Repository,
    tree: &git2::Tree<'r>,
    path: &str,
    blob: Oid,
) -> git2::Tree<'r> {
    let mut builder = repo.treebuilder(Some(tree)).unwrap();
    match path.split_once('/') {
        None => {
            builder.insert(path, blob, 0o100644).unwrap();
        }
        Some((dir, rest)) => {
            let sub = match tree.get_name(dir) {
                Some(entry) => repo.find_tree(entry.id()).unwrap(),
                None => repo
                    .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
                    .unwrap(),
            };
            let sub = replace_path(repo, &sub, rest, blob);
            builder.insert(dir, sub.id(), 0o040000).unwrap();
        }
    }
    repo.find_tree(builder.write().unwrap()).unwrap()
}

/// What `cmd` output, asserting it ran and succeeded; if not, the panic shows `why` (what to
/// do about it) and the output.
pub(crate) fn succeeded(cmd: &mut Command, why: &str) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed{why}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What `cmd` printed on stdout, asserting it ran and succeeded.
pub(crate) fn stdout_of(cmd: &mut Command) -> Vec<u8> {
    succeeded(cmd, "").stdout
}

/// Runs a command in `dir`, panicking with its output on failure; its stdout.
pub(crate) fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = stdout_of(Command::new(program).args(args).current_dir(dir));
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a `rebase-glibc --check` report passes every series there is, and its only
/// findings are supported releases with no series: a synthetic project has series for some
/// releases only (every supported release is accounted for, so the others are findings).
pub(crate) fn passes_but_for_absent_series(report: &CheckReport) -> bool {
    report.findings.iter().all(|finding| {
        matches!(
            finding.verdict,
            SeriesVerdict::Applies { .. }
                | SeriesVerdict::Records { .. }
                | SeriesVerdict::Absent { .. }
        )
    })
}

/// [`passes_but_for_absent_series`], read from what the binary printed.
pub(crate) fn output_passes_but_for_absent_series(report: &str) -> bool {
    report
        .lines()
        .filter(|line| !line.starts_with(' '))
        .all(|line| {
            line.starts_with("ok ")
                || (line.starts_with("FAILED ")
                    && line.contains("is a supported release, but it has no series"))
        })
}

/// The second patch of the synthetic series: `elf/rtld.c` learns to parse the variable.
pub(crate) fn parse_patch(t: &TestStore, parent: Oid) -> Oid {
    t.commit(
        parent,
        "elf: Parse LD_FALLBACK_PATH\n",
        &[("elf/rtld.c", "int rtld;\nint fallback;\n")],
        1_764_000_100,
    )
}

/// A synthetic `manual/dynlink.texi`, the project's own text (it carries no copy of
/// upstream's), standing for upstream's file in a sender's checkout.
pub(crate) const MANUAL: &str = "@node Dynamic Linker
@chapter Dynamic Linker

A chapter written for the tests of format-series.

@table @env
@item LD_LIBRARY_PATH
Searched before the default directories.
@end table
";

/// What the synthetic manual patch adds, before `@end table`.
pub(crate) const MANUAL_ADDED: &str = "@item LD_FALLBACK_PATH\nSearched after every other place.\n";

/// [`MANUAL`] with the patch applied.
pub(crate) fn patched_manual() -> String {
    MANUAL.replace("@end table\n", &format!("{MANUAL_ADDED}@end table\n"))
}

/// The first 12 hex digits of the git blob id of `text`, as `git diff` with
/// `core.abbrev=12` writes it in `index` lines.
pub(crate) fn short_blob(text: &str) -> String {
    Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
        .unwrap()
        .to_string()[..12]
        .to_string()
}

/// The manual patch of [`MANUAL`], as `git -c core.abbrev=12 diff` writes it.
pub(crate) fn manual_patch() -> String {
    let added: String = MANUAL_ADDED.lines().map(|l| format!("+{l}\n")).collect();
    format!(
        "diff --git a/manual/dynlink.texi b/manual/dynlink.texi
index {}..{} 100644
--- a/manual/dynlink.texi
+++ b/manual/dynlink.texi
@@ -6,4 +6,6 @@ A chapter written for the tests of format-series.
 @table @env
 @item LD_LIBRARY_PATH
 Searched before the default directories.
{added} @end table
",
        short_blob(MANUAL),
        short_blob(&patched_manual())
    )
}

/// A sender's checkout under `dir` (`upstream-glibc/`, a plain tree with [`MANUAL`]) and the
/// manual patch made against it (`manual-dynlink.texi.patch`): (checkout, patch).
pub(crate) fn synthetic_manual(dir: &Path) -> (PathBuf, PathBuf) {
    let checkout = dir.join("upstream-glibc");
    std::fs::create_dir_all(checkout.join("manual")).unwrap();
    std::fs::write(checkout.join("manual/dynlink.texi"), MANUAL).unwrap();
    let patch = dir.join("manual-dynlink.texi.patch");
    std::fs::write(&patch, manual_patch()).unwrap();
    (checkout, patch)
}
