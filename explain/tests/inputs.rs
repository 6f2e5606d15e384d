//! Files that never end, where explain reads a file: the program, a library candidate and
//! `ld.so.cache` under `--root`. A FIFO nobody writes would hang a plain `open`, and
//! `/dev/zero` be read until memory ran out; each must end within a second, with a message
//! naming the file.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary's exit status and stderr, or a failure when it runs past `limit` (it is
/// killed then).
fn run_within(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"))
        .args(args)
        // As a user's shell would run it: without the directories `cargo test` adds.
        .env_remove("LD_LIBRARY_PATH")
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

/// A root holding this test's own program and its loader; `ld.so.cache` there when
/// `cache` is given.
fn root_with_this_program(root: &Path) -> loader_model::elf::Dynamic {
    let me = std::env::current_exe().unwrap();
    let bytes = std::fs::read(&me).unwrap();
    let dynamic = loader_model::elf::dynamic(&bytes).unwrap();
    let interpreter = dynamic
        .interpreter
        .clone()
        .expect("the test program is dynamic");
    let interpreter = interpreter.to_str().unwrap();
    let inside = |path: &str| root.join(path.trim_start_matches('/'));
    for (path, from) in [("/bin/prog", me.clone()), (interpreter, interpreter.into())] {
        std::fs::create_dir_all(inside(path).parent().unwrap()).unwrap();
        std::fs::copy(&from, inside(path)).unwrap();
    }
    dynamic
}

/// The libraries the program needs are FIFOs in an `LD_LIBRARY_PATH` directory: the real
/// loader's open() waits there for a writer (the program hangs), so the search stops at
/// the first one, where explain says it waits (it said "cannot be opened" and took the
/// next copy), within a second, without opening it.
#[test]
fn a_fifo_in_the_search_is_where_the_loader_waits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let dynamic = root_with_this_program(root);
    std::fs::create_dir_all(root.join("fifos")).unwrap();
    for name in &dynamic.needed {
        mkfifo(&root.join("fifos").join(name.to_str().unwrap()));
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
    let first = &dynamic.needed[0];
    assert!(
        stdout.contains(&format!(
            "{first} (needed by /bin/prog)\n  -> STOPS at /fifos/{first}: a FIFO: the loader's open() waits here for a writer, and the program hangs\n"
        )),
        "{stdout}"
    );
    assert!(stdout.ends_with("the program does not start\n"), "{stdout}");
}

/// `ld.so.cache` a FIFO: the loader opens it at its first cache lookup, and waits there.
#[test]
fn a_fifo_as_the_cache_is_where_the_loader_waits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let dynamic = root_with_this_program(root);
    std::fs::create_dir_all(root.join("etc")).unwrap();
    mkfifo(&root.join("etc/ld.so.cache"));
    let (code, stdout, stderr) =
        run_within(&["/bin/prog", "--root", root.to_str().unwrap()], SECOND);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "{} (needed by /bin/prog)\n  -> STOPS at /etc/ld.so.cache: a FIFO: the loader's open() of its cache waits here for a writer, and the program hangs\n",
            dynamic.needed[0]
        )),
        "{stdout}"
    );
}

/// A library that is a device (here a link to `/dev/null`): the real loader opens and
/// reads it, and the load fails ("file too short"); explain stops the search there too,
/// without opening the device.
#[test]
fn a_device_in_the_search_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let me = std::env::current_exe().unwrap();
    let dynamic = loader_model::elf::dynamic(&std::fs::read(&me).unwrap()).unwrap();
    let first = dynamic.needed[0].to_str().unwrap();
    std::os::unix::fs::symlink("/dev/null", dir.path().join(first)).unwrap();
    let real = Command::new(&me)
        .arg("--list")
        .env("LD_LIBRARY_PATH", dir.path())
        .output()
        .unwrap();
    let real_err = String::from_utf8_lossy(&real.stderr);
    assert_eq!(real.status.code(), Some(127), "{real_err}");
    assert!(real_err.contains("file too short"), "{real_err}");
    let (code, stdout, stderr) = run_within(
        &[
            me.to_str().unwrap(),
            "--library-path",
            dir.path().to_str().unwrap(),
        ],
        SECOND,
    );
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "  -> STOPS at {}/{first}: a character device: the loader opens it and reads from it, and waits there (a terminal) or fails the load (no ELF header)\n",
            dir.path().display()
        )),
        "{stdout}"
    );
}

/// Causes named right: a root that is a symlink loop is said to be one (it was "permission
/// denied"); a loader missing from the root is "no such file", and a program the kernel
/// cannot start (exit status 2, a finding, not an error).
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
        .unwrap()
        .to_string();
    let (code, stdout, stderr) =
        run_within(&["/bin/prog", "--root", root.to_str().unwrap()], SECOND);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stdout,
        format!(
            "/bin/prog: no library is searched\n\nthe program does not start: its interpreter {interpreter} cannot be opened (no such file): the kernel cannot start the program\n"
        )
    );
}

/// A 4 GiB file (sparse, no ELF header) as the program, and as `ld.so.cache`: each is judged
/// from its first bytes, within a second; neither is read whole (it took 18 to 32 s and
/// 4 GiB of memory), and the limits stay as they were (a file of the limit's size is not
/// refused for its size).
#[test]
fn a_large_file_is_judged_from_its_header_first() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let (code, _, stderr) = run_within(&[big.to_str().unwrap()], SECOND);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: {} is not an x86_64 or aarch64 ELF program in /\n",
            big.display()
        )
    );
    let root = dir.path().join("root");
    root_with_this_program(&root);
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::rename(&big, root.join("etc/ld.so.cache")).unwrap();
    let (code, stdout, stderr) =
        run_within(&["/bin/prog", "--root", root.to_str().unwrap()], SECOND);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "ld.so.cache  /etc/ld.so.cache is not a cache this loader reads (no cache magic)"
        ),
        "{stdout}"
    );
}
