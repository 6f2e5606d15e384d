//! Fault injection: `rebase-glibc --onto`, both `--continue`s and `store import` are killed
//! (SIGKILL, no cleanup) at every named point they pass (`LD_FALLBACK_FAULT`, see
//! `xtask::util::fault`), and at a few random moments, and after each kill:
//!
//! - `patches/` holds the old series or the new one, never a mix or nothing, and checks;
//! - the next run repairs what the kill left and says so;
//! - the rebase, resumed, writes byte for byte the series an uninterrupted one writes; the
//!   import, resumed, makes the same commit; no `tar` outlives its `cargo xtask`.
//!
//! The points are listed by running each command once with `LD_FALLBACK_FAULT_LOG`, so a
//! new point in the code is covered without touching this test.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::project::*;
use model::Release;
use tempfile::TempDir;
use xtask::store::import::Source;
use xtask::store::SourceStore;

/// A project at each stage of the rebase, and the series before and after it.
struct Stages {
    _tmp: TempDir,
    /// `before[s]`: the project just before stage `s` runs (0: --onto, 1 and 2: --continue).
    before: Vec<PathBuf>,
    old: Vec<(String, Vec<u8>)>,
    new: Vec<(String, Vec<u8>)>,
    /// `patches/resolutions/2.42/` with the old series and with the new one.
    old_records: Vec<(String, Vec<u8>)>,
    new_records: Vec<(String, Vec<u8>)>,
}

/// The rebase onto 2.42 over an older 2.42 series, so that the write replaces a directory.
fn stages() -> Stages {
    let p = Project::new();
    let r42 = Release::parse("2.42").unwrap();
    let base = p.t.store.release_commit(r42).unwrap().unwrap();
    let older = p.t.commit(
        base,
        "elf: An older fallback\n",
        &[("elf/rtld.c", "int rtld_renamed;\nint older;\n")],
        1_763_000_000,
    );
    xtask::series::Series::from_commits(p.t.repo(), r42, &[older])
        .unwrap()
        .write(&p.patches().join("2.42"))
        .unwrap();
    let old = visible_files(&p.patches().join("2.42"));
    let old_records = visible_files(&p.patches().join("resolutions/2.42"));
    pack_store(p.root());

    let tmp = TempDir::new().unwrap();
    let mut before = Vec::new();
    let stage0 = tmp.path().join("stage0");
    copy_project(p.root(), &stage0);
    before.push(stage0.clone());
    let stage1 = tmp.path().join("stage1");
    copy_project(&stage0, &stage1);
    run_in(&stage1, ONTO).expect(2);
    resolve_in(&stage1.join("cache/rebase/2.42/tree"), 0);
    before.push(stage1.clone());
    let stage2 = tmp.path().join("stage2");
    copy_project(&stage1, &stage2);
    run_in(&stage2, CONTINUE).expect(2);
    resolve_in(&stage2.join("cache/rebase/2.42/tree"), 1);
    before.push(stage2.clone());
    let done = tmp.path().join("done");
    copy_project(&stage2, &done);
    run_in(&done, CONTINUE).expect(0);
    let new = visible_files(&done.join("patches/2.42"));
    let new_records = visible_files(&done.join("patches/resolutions/2.42"));
    assert_ne!(old, new);
    assert_ne!(old_records, new_records);
    Stages {
        _tmp: tmp,
        before,
        old,
        new,
        old_records,
        new_records,
    }
}

fn stage_args(stage: usize) -> &'static [&'static str] {
    if stage == 0 {
        ONTO
    } else {
        CONTINUE
    }
}

/// The points a command passes, with how often: `LD_FALLBACK_FAULT_LOG` of one clean run.
fn points_of(project: &Path, args: &[&str], scratch: &Path) -> BTreeMap<String, usize> {
    let copy = scratch.join("listing");
    copy_project(project, &copy);
    let log = scratch.join("points.log");
    let _ = std::fs::remove_file(&log);
    let status = command_in(&copy, args)
        .env("LD_FALLBACK_FAULT_LOG", &log)
        .output()
        .unwrap()
        .status;
    assert!(status.code().is_some(), "the listing run must not die");
    let mut points = BTreeMap::new();
    for name in std::fs::read_to_string(&log).unwrap_or_default().lines() {
        *points.entry(name.to_string()).or_insert(0) += 1;
    }
    std::fs::remove_dir_all(&copy).unwrap();
    points
}

/// Which passes of a point to kill at: all of few, the first, middle and last of many.
fn passes(count: usize) -> Vec<usize> {
    if count <= 3 {
        (1..=count).collect()
    } else {
        vec![1, count / 2, count]
    }
}

/// What a killed run may leave behind for the next one to clean: hidden entries in
/// `patches/`, and in the rebase dir anything but the live state's generation.
fn leftovers(root: &Path) -> Vec<String> {
    let mut left: Vec<String> = hidden_entries(&root.join("patches"))
        .into_iter()
        .map(|n| format!("patches/{n}"))
        .collect();
    let rebase = root.join("cache/rebase");
    let live = std::fs::read_link(rebase.join("2.42"))
        .ok()
        .map(|t| t.to_string_lossy().into_owned());
    for name in hidden_entries(&rebase) {
        if Some(&name) != live.as_ref() {
            left.push(format!("cache/rebase/{name}"));
        }
    }
    left
}

/// After a kill: `patches/` is whole; the next run recovers and says so; the rebase, driven
/// on, writes the same series as an uninterrupted one. `what` names the case for messages.
fn assert_recovers(root: &Path, s: &Stages, what: &str) {
    let series = visible_files(&root.join("patches/2.42"));
    assert!(
        series == s.old || series == s.new,
        "{what}: patches/2.42 is neither the old nor the new series: {:?}",
        series.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    if let Ok(target) = std::fs::read_link(root.join("cache/rebase/2.42")) {
        let generation = root.join("cache/rebase").join(target);
        assert!(
            generation.join("state").is_file() && generation.join("tree").is_dir(),
            "{what}: the rebase state points at an incomplete generation"
        );
    }
    let left = leftovers(root);
    let check = run_in(root, &["rebase-glibc", "--check"]);
    assert!(
        check.code == 2 && crate::common::output_passes_but_for_absent_series(&check.stdout),
        "{what}: --check after the kill:\n{}",
        check.both()
    );
    // The series and its recorded resolutions are written as one, once the next run has
    // recovered what the kill left.
    let series = visible_files(&root.join("patches/2.42"));
    let records = visible_files(&root.join("patches/resolutions/2.42"));
    assert!(
        (series == s.old && records == s.old_records)
            || (series == s.new && records == s.new_records),
        "{what}: patches/2.42 is the {} series, but patches/resolutions/2.42 holds {:?}",
        if series == s.old { "old" } else { "new" },
        records.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    if !left.is_empty() {
        assert!(
            check.stderr.contains("removed ") || check.stderr.contains("restored "),
            "{what}: {left:?} were left, and the next run said nothing:\n{}",
            check.both()
        );
    }
    assert_eq!(
        leftovers(root),
        Vec::<String>::new(),
        "{what}: the next run did not clean up"
    );
    for _ in 0..6 {
        match stopped_at(root) {
            Some(at) => {
                resolve_in(&root.join("cache/rebase/2.42/tree"), at);
                let ran = run_in(root, CONTINUE);
                assert!(ran.code == 0 || ran.code == 2, "{what}: {}", ran.both());
            }
            None if visible_files(&root.join("patches/2.42")) == s.new => break,
            None => {
                let ran = run_in(root, ONTO);
                assert!(ran.code == 0 || ran.code == 2, "{what}: {}", ran.both());
            }
        }
    }
    assert_eq!(stopped_at(root), None, "{what}: the rebase did not finish");
    assert!(
        visible_files(&root.join("patches/2.42")) == s.new,
        "{what}: the resumed rebase wrote another series"
    );
    assert_eq!(leftovers(root), Vec::<String>::new(), "{what}");
}

#[test]
fn a_rebase_killed_anywhere_recovers_and_ends_with_the_same_series() {
    let started = Instant::now();
    let s = stages();
    let scratch = TempDir::new().unwrap();
    let mut cases = Vec::new();
    for stage in 0..3 {
        let points = points_of(&s.before[stage], stage_args(stage), scratch.path());
        assert!(
            !points.is_empty(),
            "stage {stage} passes no kill point: is LD_FALLBACK_FAULT_LOG honoured?"
        );
        for (name, count) in points {
            for n in passes(count) {
                cases.push((stage, format!("{name}:{n}")));
            }
        }
    }
    // Every part of the state's life is covered.
    for needed in [
        "rebase-save:tree-written",
        "rebase-save:published",
        "rebase-remove:unlinked",
        "together:swapped",
        "continue:taken",
    ] {
        assert!(
            cases.iter().any(|(_, c)| c.starts_with(needed)),
            "no kill at {needed}: {cases:?}"
        );
    }
    let total = cases.len();
    let cases = std::sync::Mutex::new(cases);
    std::thread::scope(|scope| {
        // The cases wait on the filesystem more than on the CPU.
        for worker in 0..4 {
            let (s, cases, scratch) = (&s, &cases, scratch.path());
            scope.spawn(move || loop {
                let Some((stage, fault)) = cases.lock().unwrap().pop() else {
                    break;
                };
                let root = scratch.join(format!("case-{worker}"));
                let _ = std::fs::remove_dir_all(&root);
                copy_project(&s.before[stage], &root);
                let out = command_in(&root, stage_args(stage))
                    .env("LD_FALLBACK_FAULT", &fault)
                    .output()
                    .unwrap();
                let what = format!("stage {stage} killed at {fault}");
                assert_eq!(
                    out.status.signal(),
                    Some(SIGKILL),
                    "{what}: the run was not killed:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_recovers(&root, s, &what);
            });
        }
    });
    eprintln!(
        "{total} kill points, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_rebase_killed_at_random_moments_recovers() {
    let s = stages();
    let scratch = TempDir::new().unwrap();
    for stage in 1..3 {
        for delay_ms in [0, 1, 3, 6, 12, 25] {
            let root = scratch.path().join(format!("timed-{stage}-{delay_ms}"));
            copy_project(&s.before[stage], &root);
            let mut child = command_in(&root, stage_args(stage))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(delay_ms));
            let _ = child.kill();
            let _ = child.wait();
            assert_recovers(
                &root,
                &s,
                &format!("stage {stage} killed after {delay_ms} ms"),
            );
        }
    }
}

/// SIGKILL, as the fault hook and `Child::kill` send it.
const SIGKILL: i32 = 9;

// --- store import ------------------------------------------------------------------------

/// Set in the environment of this test binary when it runs as the child of
/// `an_import_killed_anywhere_recovers`: `<store>\n<tarball>\n<pinned tree>`.
const CHILD: &str = "XTASK_FAULTS_IMPORT_CHILD";

/// The import the parent kills: the library's, since the binary refuses synthetic trees (it
/// checks the real pins). Ignored in a normal test run (it is no test of its own: the parent
/// runs it with `--ignored` and judges what it did); run without the parent, it fails.
#[test]
#[ignore = "the child of an_import_killed_anywhere_recovers, which runs it"]
fn import_child() {
    let spec = std::env::var(CHILD).unwrap_or_else(|_| {
        panic!("{CHILD} is not set: an_import_killed_anywhere_recovers runs this")
    });
    let mut lines = spec.lines();
    let (store, tar, tree) = (
        lines.next().unwrap(),
        lines.next().unwrap(),
        lines.next().unwrap(),
    );
    let release = Release::parse("2.42").unwrap();
    let tree = git2::Oid::from_str(tree).unwrap();
    let store = SourceStore::open(Path::new(store)).unwrap();
    let commit = store
        .import_expecting(release, tree, &Source::Tarball(tar.into()))
        .unwrap();
    // After the harness's "test faults::import_child ... ", on a line of its own.
    println!("\ncommit {commit}");
}

/// Runs [`import_child`] in a child process, with `env` (the fault hook's variables).
fn import_in_child(
    store: &Path,
    tar: &Path,
    tree: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    import_child_command(store, tar, tree, env)
        .output()
        .unwrap()
}

/// The command [`import_in_child`] runs.
fn import_child_command(
    store: &Path,
    tar: &Path,
    tree: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "faults::import_child",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(
        CHILD,
        format!("{}\n{}\n{tree}", store.display(), tar.display()),
    )
    .env_remove("LD_FALLBACK_FAULT")
    .env_remove("LD_FALLBACK_FAULT_LOG")
    .env("LD_FALLBACK_CACHE", store.parent().unwrap().join("cache"))
    .envs(env.iter().copied());
    cmd
}

fn commit_line(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("commit "))
        .unwrap_or_else(|| {
            panic!(
                "no commit in the child's output:\n{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .to_string()
}

/// A tarball of a pretend 2.42 holding `files`, in `dir`, and its tree.
fn release_tarball(dir: &Path, files: &[(String, String)]) -> (String, PathBuf) {
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let top = crate::common::source_dir(&dir.join("src"), "2.42", &borrowed);
    let tree = crate::common::release_of("2.42", &top).tree.to_string();
    (
        tree,
        crate::common::tarball(&top, &dir.join("glibc_2.42.tar.xz")),
    )
}

#[test]
fn an_import_killed_anywhere_recovers() {
    let tmp = TempDir::new().unwrap();
    let files: Vec<(String, String)> = (0..40)
        .map(|i| (format!("elf/f{i:02}.c"), format!("int f{i};\n")))
        .collect();
    let (tree, tar) = release_tarball(tmp.path(), &files);

    let clean = tmp.path().join("clean/glibc.git");
    let log = tmp.path().join("points.log");
    let expected = commit_line(&import_in_child(
        &clean,
        &tar,
        &tree,
        &[("LD_FALLBACK_FAULT_LOG", log.as_os_str())],
    ));
    let mut points: BTreeMap<String, usize> = BTreeMap::new();
    for name in std::fs::read_to_string(&log).unwrap().lines() {
        *points.entry(name.to_string()).or_insert(0) += 1;
    }
    for needed in [
        "store-create:initialized",
        "import:read",
        "pack:written",
        "pack:renamed",
        "import:committed",
    ] {
        assert!(points.contains_key(needed), "{points:?}");
    }
    for (name, count) in points {
        for n in passes(count) {
            let what = format!("import killed at {name}:{n}");
            let root = tmp
                .path()
                .join(format!("case-{name}-{n}").replace(':', "-"));
            let store = root.join("glibc.git");
            std::fs::create_dir_all(&root).unwrap();
            let fault = format!("{name}:{n}");
            let out = import_in_child(
                &store,
                &tar,
                &tree,
                &[("LD_FALLBACK_FAULT", std::ffi::OsStr::new(&fault))],
            );
            assert_eq!(out.status.signal(), Some(SIGKILL), "{what}: not killed");
            // The store is absent, or opens, with the release absent or whole.
            if store.exists() {
                let opened = SourceStore::open(&store).unwrap();
                if let Some(commit) = opened
                    .release_commit(Release::parse("2.42").unwrap())
                    .unwrap()
                {
                    assert_eq!(commit.to_string(), expected, "{what}");
                }
            }
            let left = hidden_entries(&root);
            let again = import_in_child(&store, &tar, &tree, &[]);
            assert_eq!(commit_line(&again), expected, "{what}");
            if !left.is_empty() {
                let said = String::from_utf8_lossy(&again.stderr);
                assert!(
                    said.contains("removed "),
                    "{what}: {left:?} left, nothing said:\n{said}"
                );
            }
            assert_eq!(hidden_entries(&root), Vec::<String>::new(), "{what}");
            assert_eq!(unfinished_packs(&store), Vec::<String>::new(), "{what}");
        }
    }
}

/// An import whose pack outgrows the file size limit (`ulimit -f`, SIGXFSZ ignored as `main`
/// ignores it) fails, and leaves neither the release nor a temporary pack behind.
#[test]
fn an_import_over_the_file_size_limit_leaves_no_temporary_pack() {
    let tmp = TempDir::new().unwrap();
    // Text that does not compress: the pack is about as large as the files.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let files: Vec<(String, String)> = (0..8)
        .map(|i| {
            let text: String = (0..40_000)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    char::from(b'a' + (state % 26) as u8)
                })
                .collect();
            (format!("elf/f{i}.c"), text)
        })
        .collect();
    let (tree, tar) = release_tarball(tmp.path(), &files);
    let store = tmp.path().join("glibc.git");
    let mut cmd = import_child_command(&store, &tar, &tree, &[]);
    crate::common::limit_file_size(&mut cmd, 100_000, true);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the import fit in the limit: {stderr}"
    );
    assert!(stderr.contains("File too large"), "{stderr}");
    let opened = SourceStore::open(&store).unwrap();
    assert_eq!(
        opened
            .release_commit(Release::parse("2.42").unwrap())
            .unwrap(),
        None
    );
    assert_eq!(unfinished_packs(&store), Vec::<String>::new());
}

/// An import whose index cannot be put in place after its pack was (here a directory stands
/// where the index goes; in the wild, a disk that filled while the index was written) fails,
/// and leaves no pack behind: the pack was renamed into place first, and stayed there
/// without its index, invisible to git and as large as the release (55 MiB for glibc).
#[test]
fn an_import_whose_index_cannot_be_written_leaves_no_pack() {
    let tmp = TempDir::new().unwrap();
    let files: Vec<(String, String)> = (0..40)
        .map(|i| (format!("elf/f{i:02}.c"), format!("int f{i};\n")))
        .collect();
    let (tree, tar) = release_tarball(tmp.path(), &files);
    // The same objects make the same pack, by name too: where this one's index goes.
    let probe = tmp.path().join("probe/glibc.git");
    commit_line(&import_in_child(&probe, &tar, &tree, &[]));
    let index = std::fs::read_dir(probe.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .find(|n| n.to_string_lossy().ends_with(".idx"))
        .unwrap();
    let store = tmp.path().join("glibc.git");
    SourceStore::open(&store).unwrap();
    std::fs::create_dir_all(store.join("objects/pack").join(&index).join("in-the-way")).unwrap();
    let out = import_in_child(&store, &tar, &tree, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot move") && stderr.contains("into place"),
        "{stderr}"
    );
    let left: Vec<String> = std::fs::read_dir(store.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [index.to_string_lossy().into_owned()], "{stderr}");
}

/// What a killed pack install can leave in `objects/pack/`: a temporary file, or a pack
/// whose index never arrived. The next install must leave neither.
fn unfinished_packs(store: &Path) -> Vec<String> {
    let dir = store.join("objects/pack");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names
        .iter()
        .filter(|n| {
            n.starts_with("tmp_")
                || n.strip_suffix(".pack")
                    .is_some_and(|stem| !names.contains(&format!("{stem}.idx")))
        })
        .cloned()
        .collect()
}

/// A killed `store import` takes its decompressor with it (a `tar` left writing into a
/// staging directory filled 281 MB of /tmp in the report); and an import extracts nothing, so
/// it leaves no staging directory behind either.
#[test]
fn a_killed_import_leaves_no_decompressor_running() {
    let tmp = TempDir::new().unwrap();
    let top = tmp.path().join("src/glibc-2.42");
    std::fs::create_dir_all(&top).unwrap();
    // Big enough that the import runs for a while, cheap to make: zeros compress to nothing.
    let zeros = std::fs::File::create(top.join("zeros")).unwrap();
    zeros.set_len(100 << 20).unwrap();
    let tar = tmp.path().join("glibc_2.42.tar.gz");
    let status = Command::new("tar")
        .args(["--use-compress-program", "gzip -1", "-cf"])
        .arg(&tar)
        .arg("-C")
        .arg(top.parent().unwrap())
        .arg("glibc-2.42")
        .status()
        .unwrap();
    assert!(status.success());
    let root = tmp.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    let import = [
        "glibc",
        "import",
        "2.42",
        "--from",
        &format!("tarball:{}", tar.display()),
    ];
    let mut xtask = command_in(&root, &import)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let gzip_pid = loop {
        if let Some(pid) = descendant_named(xtask.id(), "gzip") {
            break pid;
        }
        assert!(Instant::now() < deadline, "gzip never started");
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(Duration::from_millis(50));
    xtask.kill().unwrap();
    xtask.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while is_running(gzip_pid) {
        assert!(
            Instant::now() < deadline,
            "gzip (pid {gzip_pid}) still runs after its cargo xtask was killed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(hidden_entries(&root), Vec::<String>::new());
    run_in(&root, &["store", "list"]).expect(0);
    assert_eq!(hidden_entries(&root), Vec::<String>::new());
}

/// A killed `store import` takes all it started with it, the children of its children too:
/// `apt-get update`, whose download methods wrote on into the cache after the import was
/// killed. Played by an `apt-get` of the test's own (first in `$PATH`) that starts a child of
/// its own and waits, as apt-get waits on its methods.
#[test]
fn a_killed_import_takes_the_children_of_its_children_with_it() {
    let tmp = TempDir::new().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pids = tmp.path().join("pids");
    let apt_get = bin.join("apt-get");
    std::fs::write(
        &apt_get,
        format!(
            "#!/bin/sh\nsleep 300 &\necho \"$$ $!\" > {}.new\nmv {}.new {}\nwait\n",
            pids.display(),
            pids.display(),
            pids.display()
        ),
    )
    .unwrap();
    crate::common::make_executable(&apt_get);
    // One mirror for the private apt's source entry (nothing is fetched from it).
    let sources = tmp.path().join("sources");
    std::fs::create_dir_all(&sources).unwrap();
    std::fs::write(
        sources.join("debian.list"),
        "deb http://deb.debian.org/debian bookworm main\n",
    )
    .unwrap();
    let root = tmp.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut xtask = command_in(&root, &["store", "import", "2.44"])
        .env("PATH", path)
        .env("LD_FALLBACK_APT_SOURCES", &sources)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let started: Vec<u32> = loop {
        if let Ok(text) = std::fs::read_to_string(&pids) {
            break text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
        }
        assert!(
            Instant::now() < deadline,
            "the import never ran apt-get update"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    xtask.kill().unwrap();
    xtask.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while started.iter().any(|pid| is_running(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let running: Vec<u32> = started.into_iter().filter(|pid| is_running(*pid)).collect();
    for pid in &running {
        // SAFETY: kill(2) of a process this test started (through the import).
        unsafe {
            libc::kill(*pid as libc::pid_t, libc::SIGKILL);
        }
    }
    assert_eq!(
        running,
        Vec::<u32>::new(),
        "processes the import started still ran 5 s after it was killed"
    );
}

/// A process below `ancestor` (its child, or a child's child: a command runs under a guard
/// of its own, `util::child`) whose command name is `name`.
fn descendant_named(ancestor: u32, name: &str) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if comm_and_parent(pid).is_some_and(|(comm, _)| comm == name) {
            let mut up = pid;
            for _ in 0..4 {
                match comm_and_parent(up) {
                    Some((_, parent)) if parent == ancestor => return Some(pid),
                    Some((_, parent)) => up = parent,
                    None => break,
                }
            }
        }
    }
    None
}

/// The command name and the parent of `pid`.
fn comm_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces, so split at the last `)`.
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(').map(|(_, c)| c).unwrap_or("");
    let ppid = rest.split_whitespace().nth(1)?.parse::<u32>().ok()?;
    Some((comm.to_string(), ppid))
}

/// Whether `pid` exists and is not a zombie waiting for a reaper.
fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Killed after the series was written and before the state was dropped: `--continue`
/// finishes, and `--abort` says that patches/ changed (it said "patches/ is unchanged").
#[test]
fn a_rebase_killed_after_writing_is_not_called_unchanged() {
    let s = stages();
    let scratch = TempDir::new().unwrap();
    for (case, args) in [
        ("continue", CONTINUE),
        ("abort", &["rebase-glibc", "--abort"][..]),
    ] {
        let root = scratch.path().join(case);
        copy_project(&s.before[2], &root);
        let out = command_in(&root, CONTINUE)
            .env("LD_FALLBACK_FAULT", "rebase:written:1")
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(SIGKILL));
        assert_eq!(visible_files(&root.join("patches/2.42")), s.new);
        let ran = run_in(&root, args).expect(0);
        assert!(!ran.stdout.contains("patches/ is unchanged"), "{ran:?}");
        if case == "abort" {
            assert!(
                ran.stdout.contains("had already written") && ran.stdout.contains("patches/2.42"),
                "{ran:?}"
            );
        }
        assert_eq!(stopped_at(&root), None);
        assert_eq!(visible_files(&root.join("patches/2.42")), s.new);
    }
}
