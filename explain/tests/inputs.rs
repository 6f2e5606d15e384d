//! Files that never end, where explain reads a file: the program, a library candidate and
//! `ld.so.cache` under `--root`. A FIFO nobody writes used to hang every one of them, and
//! `/dev/zero` to be read until memory ran out; each must end within a second, with a
//! message naming the file.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary's exit status and stderr, or a failure when it runs past `limit` (it is
/// killed then).
fn run_within(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("ld-fallback-explain {args:?} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn a_program_that_never_ends_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("program");
    mkfifo(&fifo);
    let (code, _, stderr) = run_within(&[fifo.to_str().unwrap()], SECOND);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: cannot read {} in /: it is a FIFO (a named pipe), not a regular file (an ELF object is read from a regular file only)\n",
            fifo.display()
        )
    );
    let (code, _, stderr) = run_within(&["/dev/zero"], SECOND);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        "error: cannot read /dev/zero in /: it is a character device, not a regular file (an ELF object is read from a regular file only)\n"
    );
}

/// A root holding this test's own program and its loader, with `ld.so.cache` and the
/// libraries it needs (in an `LD_LIBRARY_PATH` directory) FIFOs: the model reads neither
/// as a file, and says so.
#[test]
fn a_cache_and_a_library_that_never_end_are_passed_over_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let me = std::env::current_exe().unwrap();
    let bytes = std::fs::read(&me).unwrap();
    let dynamic = loader_model::elf::dynamic(&bytes).unwrap();
    let interpreter = dynamic.interpreter.expect("the test program is dynamic");
    let inside = |path: &str| root.join(path.trim_start_matches('/'));
    for (path, from) in [
        ("/bin/prog", me.clone()),
        (&*interpreter, interpreter.clone().into()),
    ] {
        std::fs::create_dir_all(inside(path).parent().unwrap()).unwrap();
        std::fs::copy(&from, inside(path)).unwrap();
    }
    std::fs::create_dir_all(inside("/etc")).unwrap();
    mkfifo(&inside("/etc/ld.so.cache"));
    std::fs::create_dir_all(inside("/fifos")).unwrap();
    for name in &dynamic.needed {
        mkfifo(&inside(&format!("/fifos/{name}")));
    }
    let (code, stdout, stderr) = run_within(
        &[
            "/bin/prog",
            "--root",
            root.to_str().unwrap(),
            "--library-path",
            "/fifos",
        ],
        SECOND,
    );
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stdout.contains("cannot read /etc/ld.so.cache: it is a FIFO (a named pipe), not a regular file (an ld.so.cache is read from a regular file only)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("/fifos/{}  cannot be opened", dynamic.needed[0])),
        "{stdout}"
    );
}

/// Causes named right: a root that is a symlink loop is said to be one
/// (it was "permission denied"), and a loader missing from the root is "no such file" (it
/// ended "(Absent)", the model's own name).
#[test]
fn a_root_that_loops_and_a_missing_loader_are_named_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let looped = dir.path().join("loop");
    std::os::unix::fs::symlink("loop", &looped).unwrap();
    let (code, _, stderr) = run_within(&["/bin/prog", "--root", looped.to_str().unwrap()], SECOND);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: cannot use {} as the root: Too many levels of symbolic links (os error 40)\n",
            looped.display()
        )
    );
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    let me = std::env::current_exe().unwrap();
    std::fs::copy(&me, root.join("bin/prog")).unwrap();
    let interpreter = loader_model::elf::dynamic(&std::fs::read(&me).unwrap())
        .unwrap()
        .interpreter
        .unwrap();
    let (code, _, stderr) = run_within(&["/bin/prog", "--root", root.to_str().unwrap()], SECOND);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: cannot explain /bin/prog: the program's loader {interpreter} is not in {} (no such file)\n",
            root.display()
        )
    );
}
