//! Standard output and error that outlive their reader: `cargo xtask glibc list | head -1`.
//!
//! Rust ignores SIGPIPE, so a write to a pipe whose reader is gone fails with EPIPE, and
//! `println!` panics on that failure: exit 101, a panic message, a backtrace under
//! `RUST_BACKTRACE`, and whatever the command was in the middle of (an import, a rebase) left
//! unfinished. Every line the commands print goes through [`outln!`] / [`out!`] (stdout) and
//! [`diagln!`] / [`diag!`] (stderr, for progress, notes and errors) instead: a write nobody
//! reads is dropped, the command finishes what it was doing, and `main` ends it with the
//! status a shell gives a writer whose reader left (128 + SIGPIPE, [`EXIT_READER_GONE`]) when
//! nothing else went wrong. The tidy test refuses the std macros elsewhere.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status of a command whose output lost its reader: 128 + SIGPIPE, as a shell
/// reports a writer the signal ended.
pub(crate) const EXIT_READER_GONE: u8 = 128 + libc::SIGPIPE as u8;

static READER_GONE: AtomicBool = AtomicBool::new(false);
static DIRECT: AtomicBool = AtomicBool::new(false);

/// Called first by `main`: from now on output is written to the file descriptors directly,
/// and a closed pipe is survived. Until then (the library in tests) the std macros print,
/// so that the test harness captures what a test's library calls say.
pub(crate) fn survive_closed_pipes() {
    DIRECT.store(true, Ordering::Relaxed);
}

/// Whether stdout or stderr lost its reader during this run.
pub(crate) fn reader_gone() -> bool {
    READER_GONE.load(Ordering::Relaxed)
}

/// Writes to stdout; a broken pipe is remembered, any other failure (a full disk behind a
/// redirection) dropped: output is a report, never a reason to abandon the work.
#[doc(hidden)]
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    if !DIRECT.load(Ordering::Relaxed) {
        print!("{args}");
        return;
    }
    let mut out = std::io::stdout().lock();
    note(out.write_fmt(args).and_then(|()| out.flush()));
}

/// Writes to stderr, as [`write_stdout`].
#[doc(hidden)]
pub(crate) fn write_stderr(args: std::fmt::Arguments<'_>) {
    if !DIRECT.load(Ordering::Relaxed) {
        eprint!("{args}");
        return;
    }
    note(std::io::stderr().lock().write_fmt(args));
}

fn note(result: std::io::Result<()>) {
    if let Err(e) = result {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            READER_GONE.store(true, Ordering::Relaxed);
        }
    }
}

/// `println!` to stdout that survives a closed pipe (see the module docs).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::util::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::util::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to stdout that survives a closed pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::util::output::write_stdout(format_args!($($arg)*))
    };
}

/// `eprintln!` to stderr that survives a closed pipe.
#[macro_export]
macro_rules! diagln {
    () => {
        $crate::util::output::write_stderr(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::util::output::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` to stderr that survives a closed pipe.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::util::output::write_stderr(format_args!($($arg)*))
    };
}
