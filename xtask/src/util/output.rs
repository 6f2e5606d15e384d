//! Standard output and error that outlive their reader: `cargo xtask store list | head -1`.
//!
//! Rust ignores SIGPIPE, so a write to a pipe whose reader is gone fails with EPIPE, and
//! `println!` panics on that failure: exit 101, a panic message, a backtrace under
//! `RUST_BACKTRACE`, and whatever the command was in the middle of (an import, a rebase) left
//! unfinished. Every line the commands print goes through [`outln!`] / [`out!`] (stdout) and
//! [`diagln!`] / [`diag!`] (stderr, for progress, notes and errors) instead: a write nobody
//! reads is dropped, the command finishes what it was doing, and `main` ends it with the
//! status a shell gives a writer whose reader left (128 + SIGPIPE, [`EXIT_READER_GONE`]) when
//! nothing else went wrong. The tidy test refuses the std macros elsewhere.
//!
//! Only a closed reader ends quietly. Any other write error on standard output (a full disk
//! or the file size limit behind `> out.json`) leaves the output cut short, so it is
//! remembered ([`write_failure`]) and `main` ends the command with it as an error (exit
//! status 1): the work still finishes (a rebase whose report cannot be written still writes
//! its series), but nobody takes a cut report for a whole one. Standard error carries no
//! report, only progress and messages about the run, and a failure to write there could be
//! said nowhere but there: it is dropped, and the exit status says what the command found
//! (`explain ... 2>/dev/full` ends 0 when every library is found, its report on stdout whole).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The exit status of a command whose output lost its reader: 128 + SIGPIPE, as a shell
/// reports a writer the signal ended.
pub(crate) const EXIT_READER_GONE: u8 = 128 + libc::SIGPIPE as u8;

static READER_GONE: AtomicBool = AtomicBool::new(false);
static DIRECT: AtomicBool = AtomicBool::new(false);
/// The first write error other than a closed reader: which stream, and the error.
static WRITE_FAILURE: Mutex<Option<(&'static str, std::io::Error)>> = Mutex::new(None);

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

/// Whether the reader of stdout or stderr is gone, asked of the descriptors themselves: a
/// child that writes to them (a step of `cargo xtask ci`) meets a closed pipe this process
/// never wrote to. Remembered as [`reader_gone`] when it is.
pub(crate) fn reader_left() -> bool {
    if reader_left_on(&[libc::STDOUT_FILENO, libc::STDERR_FILENO]) {
        READER_GONE.store(true, Ordering::Relaxed);
    }
    reader_gone()
}

/// Whether any of `fds` is a pipe whose reading end is closed: `poll` says POLLERR for it
/// (and nothing of the kind for a terminal, a file or a pipe still read).
pub(crate) fn reader_left_on(fds: &[std::os::fd::RawFd]) -> bool {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        })
        .collect();
    // SAFETY: poll(2) on an array of pollfd it may write, with its length; timeout 0.
    let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) };
    ready > 0 && polled.iter().any(|p| p.revents & libc::POLLERR != 0)
}

/// The first write error of this run that was not a closed reader, as an error naming the
/// stream (its cause kept, so that `limits::explain` can name the file size limit).
pub(crate) fn write_failure() -> Option<anyhow::Error> {
    let failure = WRITE_FAILURE.lock().unwrap_or_else(|e| e.into_inner());
    failure.as_ref().map(|(stream, err)| {
        let cause = match err.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(err.kind(), err.to_string()),
        };
        anyhow::Error::from(cause).context(format!(
            "cannot write to {stream}, so what the command printed there is cut short"
        ))
    })
}

/// Writes to stdout; a broken pipe is remembered, any other failure (a full disk behind a
/// redirection) too, for `main` to end the command with (see the module docs). Control
/// characters other than the newline and the tab are escaped ([`model::printable_lines`]):
/// the commands print paths, names and values they did not write, and an escape sequence in
/// one must not reach the terminal as one.
#[doc(hidden)]
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let text = model::printable_lines(&text);
    if !DIRECT.load(Ordering::Relaxed) {
        print!("{text}");
        return;
    }
    let mut out = std::io::stdout().lock();
    note(
        "standard output",
        out.write_all(text.as_bytes()).and_then(|()| out.flush()),
    );
}

/// Writes to stderr, as [`write_stdout`].
#[doc(hidden)]
pub(crate) fn write_stderr(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    write_stderr_verbatim(&model::printable_lines(&text));
}

/// Writes `text` to stderr as it is, control characters included: for the progress line
/// alone, which redraws itself on a terminal (`\r`, erase line).
pub(crate) fn write_stderr_verbatim(text: &str) {
    if !DIRECT.load(Ordering::Relaxed) {
        eprint!("{text}");
        return;
    }
    note(
        "standard error",
        std::io::stderr().lock().write_all(text.as_bytes()),
    );
}

fn note(stream: &'static str, result: std::io::Result<()>) {
    let Err(e) = result else {
        return;
    };
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        READER_GONE.store(true, Ordering::Relaxed);
        return;
    }
    // See the module docs: nothing on stderr is the report, and nowhere else could say it.
    if stream == "standard error" {
        return;
    }
    let mut failure = WRITE_FAILURE.lock().unwrap_or_else(|e| e.into_inner());
    if failure.is_none() {
        *failure = Some((stream, e));
    }
}

/// `print!` to stdout that survives a closed pipe (see the module docs).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::util::output::write_stdout(format_args!($($arg)*)) };
}

/// `eprint!` to stderr that survives a closed pipe.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => { $crate::util::output::write_stderr(format_args!($($arg)*)) };
}

/// `println!` to stdout that survives a closed pipe.
#[macro_export]
macro_rules! outln {
    () => { $crate::out!("\n") };
    ($($arg:tt)*) => { $crate::out!("{}\n", format_args!($($arg)*)) };
}

/// `eprintln!` to stderr that survives a closed pipe.
#[macro_export]
macro_rules! diagln {
    () => { $crate::diag!("\n") };
    ($($arg:tt)*) => { $crate::diag!("{}\n", format_args!($($arg)*)) };
}
