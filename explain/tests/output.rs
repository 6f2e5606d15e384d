//! Where the explanation goes: a file under the file size limit (`ulimit -f`). SIGXFSZ's
//! default action would end the command with status 153, a cut file and nothing said; the
//! command says it instead, as `cargo xtask explain` does.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// `ld-fallback-explain args` with its stdout into a file under a file size limit of `bytes`,
/// the limit's signal left as the shell leaves it (it kills).
fn under_file_size_limit(args: &[&str], bytes: u64) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::fs::File::create(dir.path().join("out.txt")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"));
    cmd.args(args).stdout(out).stderr(Stdio::piped());
    // SAFETY: signal and setrlimit are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
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
    let ran = cmd.output().unwrap();
    (
        ran.status.code(),
        String::from_utf8_lossy(&ran.stderr).into_owned(),
    )
}

#[test]
fn the_file_size_limit_is_said_not_died_of() {
    let me = std::env::current_exe().unwrap();
    let (code, stderr) = under_file_size_limit(&[me.to_str().unwrap()], 100);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: a file outgrew the file size limit (`ulimit -f`, now 100 bytes) of this process: raise it and run the command again: cannot write the explanation to standard output, so what it printed there is cut short: File too large (os error 27)\n"
    );
}

/// Help and the version that cannot be written (`--help > /dev/full`) fail the command, as
/// an explanation cut short does (they ended 0, nothing said).
#[test]
fn help_that_cannot_be_written_is_a_failure() {
    for (arg, what) in [("--help", "the help"), ("--version", "the version")] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let ran = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"))
            .arg(arg)
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&ran.stderr);
        assert_eq!(ran.status.code(), Some(1), "{arg}: {stderr}");
        assert_eq!(
            stderr,
            format!("error: cannot write {what}: No space left on device (os error 28)\n"),
        );
    }
}

/// Standard error is not the report: a failure to write it (`2>/dev/full`) changes nothing
/// the exit status says (0 when every library is found; `eprintln!` panicked, 101, where
/// something was said there).
#[test]
fn a_full_stderr_leaves_the_exit_status_to_say_what_was_found() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let me = std::env::current_exe().unwrap();
    let run = |args: &[&str]| {
        let ran = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(full())
            .output()
            .unwrap();
        (
            ran.status.code(),
            String::from_utf8_lossy(&ran.stdout).into_owned(),
        )
    };
    let (code, stdout) = run(&[me.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("every library is found"), "{stdout}");
    // A library not found: said on stderr (lost), and by the status.
    let (code, _) = run(&[me.to_str().unwrap(), "--dlopen", "libnowhere-44.so"]);
    assert_eq!(code, Some(2));
    // A request that names a caller nothing loads: a failure, said by the status.
    let (code, _) = run(&[me.to_str().unwrap(), "--dlopen", "libnothing.so:libx.so"]);
    assert_eq!(code, Some(1));
}

/// A value clap refuses is quoted escaped, as `cargo xtask` quotes it; a usage error is a
/// failure (1), never the status of a finding (2: a library not found).
#[test]
fn a_refused_option_value_is_quoted_escaped() {
    let ran = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"))
        .args(["/bin/true", "--release", "2.4\x1b[31m\nX"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: invalid value '2.4\\u{1b}[31m\\nX' for '--release <X.Y>'\n"),
        "{stderr}"
    );
}

/// Every usage error exits 1, the status of a command that failed on bad input; 2 is kept
/// for what the explanation finds (a library not found, a program that does not start).
#[test]
fn usage_errors_exit_1_not_the_status_of_a_finding() {
    let usage = |args: &[&str]| {
        let ran = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"))
            .args(args)
            .output()
            .unwrap();
        (
            ran.status.code(),
            String::from_utf8_lossy(&ran.stderr).into_owned(),
        )
    };
    for args in [
        &[][..],
        &["/bin/true", "--no-such-option"],
        &["/bin/true", "--flavour"],
        &["/bin/true", "--target", "riscv64"],
        &["/bin/true", "/bin/false"],
        &["/bin/true", "--unpatched", "--flavour", "patched"],
    ] {
        let (code, stderr) = usage(args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    }
}
