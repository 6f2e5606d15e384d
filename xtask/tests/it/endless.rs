//! A file that never ends, given where a command reads a file: a FIFO nobody writes (whose
//! `open` used to wait for a writer) and `/dev/zero` (which used to be read until memory ran
//! out). Every command ends within a second with exit status 1 and a message naming the file,
//! or, for a file of `patches/`, reports it as the series' defect.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::project::{Project, Ran, PATCH_1};

/// `cmd`, killed and failed when it runs past a second.
fn within_a_second(mut cmd: Command) -> Ran {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(1) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{cmd:?} ran past a second");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ran::of(child.wait_with_output().unwrap())
}

fn fifo_in(dir: &Path) -> PathBuf {
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    fifo
}

const FIFO_IS: &str = "it is a FIFO (a named pipe), not a regular file";
const ZERO_IS: &str = "it is a character device, not a regular file";

/// Both never-ending files as `arg` of `args` (`{}` stands for it): exit status 1, and
/// `said` (with `{}` the file) in the error.
fn refused(p: &Project, args: &[&str], said: &str) {
    let fifo = fifo_in(p.root());
    for (file, kind) in [(fifo.as_path(), FIFO_IS), (Path::new("/dev/zero"), ZERO_IS)] {
        let file = file.to_str().unwrap();
        let args: Vec<String> = args.iter().map(|a| a.replace("{}", file)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ran = within_a_second(p.command(&args)).expect(1);
        let said = said.replace("{}", file);
        assert!(
            ran.stderr.starts_with(&format!("error: {said}: {kind}")),
            "{args:?}:\n{}",
            ran.stderr
        );
    }
    std::fs::remove_file(fifo).unwrap();
}

#[test]
fn verify_merge_refuses_a_record_that_never_ends() {
    refused(
        &Project::new(),
        &["verify", "merge", "{}"],
        "cannot read {}",
    );
}

#[test]
fn patches_import_refuses_a_patch_that_never_ends() {
    refused(
        &Project::new(),
        &["patches", "import", "--release", "2.41", "--replace", "{}"],
        "cannot read {}",
    );
}

#[test]
fn explain_refuses_a_program_that_never_ends() {
    refused(&Project::new(), &["explain", "{}"], "cannot read {} in /");
}

/// A patch of `patches/` that is a FIFO is the series' defect, found at once: `--check` and
/// `patches status` report it and go on (exit status 2).
#[test]
fn a_series_file_that_never_ends_is_a_defect_of_the_series() {
    let p = Project::new();
    let patch = p.patches().join("2.41").join(PATCH_1);
    std::fs::remove_file(&patch).unwrap();
    let made = Command::new("mkfifo").arg(&patch).status().unwrap();
    assert!(made.success());
    let said = format!("cannot read {}: {FIFO_IS}", patch.display());
    let ran = within_a_second(p.command(&["rebase-glibc", "--check"])).expect(2);
    assert!(ran.stdout.contains(&said), "{}", ran.both());
    let ran = within_a_second(p.command(&["patches", "status"])).expect(2);
    assert!(ran.stdout.contains(&said), "{}", ran.both());
}

/// A tarball is streamed to its decompressor, not read whole, but it must be a regular file
/// all the same; it used to be called one that "does not exist".
#[test]
fn glibc_import_refuses_a_tarball_that_never_ends() {
    refused(
        &Project::new(),
        &["glibc", "import", "2.44", "--from", "tarball:{}"],
        "cannot read {}",
    );
}

/// format-series reads upstream's manual chapter from the sender's checkout and the manual
/// patch (`$LD_FALLBACK_MANUAL_PATCH`): neither may be a file that never ends.
#[test]
fn format_series_refuses_a_manual_that_never_ends() {
    let p = Project::new();
    let out = p.root().join("out");
    let out = out.to_str().unwrap();
    let args = [
        "format-series",
        "--release",
        "2.41",
        "--author",
        "Ada Lovelace <ada@gnu.org>",
        "--out",
        out,
    ];
    let chapter = p.root().join("upstream-glibc/manual/dynlink.texi");
    let text = std::fs::read(&chapter).unwrap();
    let fifo = fifo_in(p.root());
    for file in [fifo.as_path(), Path::new("/dev/zero")] {
        std::fs::remove_file(&chapter).unwrap();
        std::os::unix::fs::symlink(file, &chapter).unwrap();
        let ran = within_a_second(p.command(&args)).expect(1);
        assert!(
            ran.stderr.starts_with(&format!(
                "error: cannot read {}: it is a ",
                chapter.display()
            )),
            "{}",
            ran.stderr
        );
    }
    std::fs::remove_file(&chapter).unwrap();
    std::fs::write(&chapter, text).unwrap();
    let mut command = p.command(&args);
    command.env("LD_FALLBACK_MANUAL_PATCH", &fifo);
    let ran = within_a_second(command).expect(1);
    assert!(
        ran.stderr
            .starts_with(&format!("error: cannot read {}: {FIFO_IS}", fifo.display())),
        "{}",
        ran.stderr
    );
    assert!(!Path::new(out).exists(), "nothing is written");
}

/// An edit of a file's text.
type Edit<'a> = dyn Fn(&str) -> String + 'a;

/// A line of 10 MB in a series file (2 MB in a patch), or a name of 300 KB in a series file: a clear
/// finding, not the line printed back (the series file's was an I/O error that printed 20 MB).
#[test]
fn a_line_of_10_mb_is_refused_without_printing_it() {
    let long = "x".repeat(10 << 20);
    let appended = |text: &str| format!("{text}{long}\n");
    let in_the_message = |text: &str| {
        let line = "x".repeat(2 << 20);
        text.replacen("\n\n", &format!("\n\n{line}\n"), 1)
    };
    // Under the series file's limit (1 MiB), a name no file can have.
    let named = |text: &str| format!("{text}{}.patch\n", "x".repeat(300_000));
    let edits: [(&str, &Edit<'_>); 3] = [
        ("series", &appended),
        ("series", &named),
        (PATCH_1, &in_the_message),
    ];
    for (file, edit) in edits {
        let p = Project::new();
        let path = p.patches().join("2.41").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, edit(&text)).unwrap();
        for args in [&["rebase-glibc", "--check"][..], &["patches", "status"]] {
            let ran = p.run(args);
            assert!(
                ran.stdout.len() + ran.stderr.len() < 10_000,
                "{file}, {args:?}: {} bytes of output (exit status {})",
                ran.stdout.len() + ran.stderr.len(),
                ran.code
            );
            assert_eq!(ran.code, 2, "{file}, {args:?}: {}", ran.both());
        }
    }
}
