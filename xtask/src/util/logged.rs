//! Long-running commands (imports, glibc builds, QEMU runs): full output goes to a log file on
//! disk, the terminal gets one progress line, and a failure prints the log's tail and its path.
//! A command run with a timeline ([`run_timed`]) also shows how far it is and the time left,
//! from the last successful run of the same step ([`crate::util::estimate`]).

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::util::estimate::{Timeline, Tracker};

/// How many log lines a failure prints.
pub(crate) const TAIL_LINES: usize = 40;

/// Runs `cmd`, appending its stdout and stderr to `log`.
///
/// `status` sees every output line and may return a short description of where the command
/// is (say, the glibc subdirectory being built); it is shown next to `label` and the elapsed
/// time. On a terminal the line is redrawn in place; elsewhere (CI) a line is printed when the
/// status changes, at most every 15 s, so logs stay readable. A failure prints the last
/// [`TAIL_LINES`] lines and returns a [`Failure`].
pub(crate) fn run(
    cmd: &mut Command,
    log: &Path,
    label: &str,
    status: impl FnMut(&str) -> Option<String>,
) -> Result<()> {
    run_timed(cmd, log, label, status, None)
}

/// [`run`], estimating from the timeline in `timeline` (the last successful run's), and
/// recording this run's there when it succeeds.
pub(crate) fn run_timed(
    cmd: &mut Command,
    log: &Path,
    label: &str,
    status: impl FnMut(&str) -> Option<String>,
    timeline: Option<&Path>,
) -> Result<()> {
    let ran = run_inner(cmd, log, label, status, timeline, None)?;
    if !ran.exit.success() {
        diagln!(
            "---- last {} lines of {} ----",
            ran.tail.len(),
            log.display()
        );
        for line in &ran.tail {
            diagln!("{line}");
        }
        diagln!("---- end of log tail ----");
        return Err(Failure {
            label: label.to_string(),
            status: ran.exit,
            log: log.to_path_buf(),
            log_error: ran.log_error,
        }
        .into());
    }
    Ok(())
}

/// A command that ran and failed: what [`run`] returns (its tail is printed already).
#[derive(Debug)]
pub(crate) struct Failure {
    pub label: String,
    pub status: ExitStatus,
    pub log: PathBuf,
    /// Why the log on disk is incomplete, if it is.
    pub log_error: Option<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed ({})", self.label, self.status)?;
        match &self.log_error {
            None => write!(f, "; full log: {}", self.log.display()),
            Some(why) => write!(f, "; the log {} is incomplete: {why}", self.log.display()),
        }
    }
}

impl std::error::Error for Failure {}

/// Like [`run`], but a failure of the command is the caller's to judge (say, `make -k check`,
/// whose failing tests are results, not errors).
pub(crate) fn run_to_end(
    cmd: &mut Command,
    log: &Path,
    label: &str,
    status: impl FnMut(&str) -> Option<String>,
    timeline: Option<&Path>,
) -> Result<ExitStatus> {
    Ok(run_inner(cmd, log, label, status, timeline, None)?.exit)
}

/// Like [`run_to_end`], for a command that waits on its stdin (a pipe) until `start` has
/// done what it needs done from outside first (say, a user namespace's id maps written by
/// its parent). When `start` fails, the command is killed and its error returned.
pub(crate) fn run_to_end_started(
    cmd: &mut Command,
    log: &Path,
    label: &str,
    status: impl FnMut(&str) -> Option<String>,
    start: Start,
) -> Result<ExitStatus> {
    Ok(run_inner(cmd, log, label, status, None, Some(start))?.exit)
}

/// What a started command's caller does between its spawn and its run (see
/// [`run_to_end_started`]).
pub(crate) type Start<'a> = &'a mut dyn FnMut(&mut Child) -> Result<()>;

struct Ran {
    exit: ExitStatus,
    tail: VecDeque<String>,
    log_error: Option<String>,
}

/// A log that cannot be written (full disk) does not stop the command: its output is still
/// drained, and the last lines are kept in memory.
fn run_inner(
    cmd: &mut Command,
    log: &Path,
    label: &str,
    mut status: impl FnMut(&str) -> Option<String>,
    timeline: Option<&Path>,
    start: Option<Start>,
) -> Result<Ran> {
    let mut log_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot open log {}", log.display()))?;
    writeln!(log_file, "$ {cmd:?}").with_context(|| format!("cannot write {}", log.display()))?;

    // A command started from outside (`start`) is handed its own pid to act on; any other
    // goes, with all it starts, when this process goes (`util::child`).
    let grouped = start.is_none();
    if grouped {
        crate::util::child::dies_with_us(cmd);
    }
    let kill = |child: &mut Child| match grouped {
        true => crate::util::child::kill_group(child),
        false => {
            let _ = child.kill();
        }
    };
    let stdin = if start.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    // One pipe for stdout and stderr, as a shell's `2>&1` gives: the log and the tail keep the
    // order in which the command wrote its lines. Two pipes read by two threads interleave
    // the streams by the threads' timing (a check's stdout line could land after the error it
    // led to).
    let (output, output_writer) =
        std::io::pipe().context("cannot make a pipe for a command's output")?;
    let output_writer_too = output_writer
        .try_clone()
        .context("cannot make a pipe for a command's output")?;
    let spawned = cmd
        .stdin(stdin)
        .stdout(output_writer)
        .stderr(output_writer_too)
        .spawn();
    // `cmd` keeps the write ends it was given: drop them, or the reader never sees the end.
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = spawned.with_context(|| format!("cannot start {:?}", cmd.get_program()))?;

    let (tx, rx) = mpsc::channel::<String>();
    let reader = match forward_lines(output, tx) {
        Ok(reader) => reader,
        Err(e) => {
            // The child's output would go unread: it must not run on without us.
            kill(&mut child);
            let _ = child.wait();
            return Err(e).context("cannot start a thread to read a command's output");
        }
    };
    if let Some(start) = start {
        if let Err(err) = start(&mut child) {
            kill(&mut child);
            let _ = child.wait();
            let _ = reader.join();
            return Err(err);
        }
    }

    let mut tail = VecDeque::with_capacity(TAIL_LINES);
    let mut log_error = None;
    let mut progress = Progress::new(label, timeline.map(Timeline::read).map(Tracker::new));
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                if log_error.is_none() {
                    if let Err(e) = writeln!(log_file, "{line}") {
                        log_error = Some(format!("cannot write it: {e}"));
                    }
                }
                if let Some(now) = status(&line) {
                    progress.set_status(now);
                }
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
                progress.show(false);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => progress.show(false),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = reader.join();
    let exit = child.wait().context("cannot wait for child")?;
    if let Err(e) = log_file.flush() {
        log_error.get_or_insert(format!("cannot write it: {e}"));
    }
    progress.finish(exit.success());
    if let Some(log_error) = log_error.as_ref().filter(|_| exit.success()) {
        // A failure says it with its error; a success must not leave a cut log unsaid.
        diagln!("note: the log {} is incomplete: {log_error}", log.display());
    }
    if let (Some(path), Some(tracker)) = (timeline, progress.tracker.take()) {
        if exit.success() {
            let elapsed = progress.started.elapsed().as_secs_f64();
            if let Err(err) = tracker.finished(elapsed).write(path) {
                diagln!("note: the next run will show no estimate: {err:#}");
            }
        }
    }
    Ok(Ran {
        exit,
        tail,
        log_error,
    })
}

/// Prints the last [`TAIL_LINES`] lines of `log` to stderr, with its path.
pub(crate) fn print_tail(log: &Path) {
    let mut text = String::new();
    if File::open(log)
        .and_then(|mut f| f.read_to_string(&mut text))
        .is_err()
    {
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    diagln!(
        "---- last {} lines of {} ----",
        lines.len() - start,
        log.display()
    );
    for line in &lines[start..] {
        diagln!("{line}");
    }
    diagln!("---- end of log tail ----");
}

fn forward_lines<R: Read + Send + 'static>(
    stream: R,
    tx: mpsc::Sender<String>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut buf = Vec::new();
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let line = String::from_utf8_lossy(&buf)
                .trim_end_matches(['\n', '\r'])
                .to_string();
            if tx.send(line).is_err() {
                break;
            }
            buf.clear();
        }
    })
}

struct Progress<'a> {
    label: &'a str,
    status: String,
    started: Instant,
    tty: bool,
    last_shown: Option<(Instant, String)>,
    /// Where this run is on the last one's timeline, for a timed run.
    tracker: Option<Tracker>,
    /// The command ended: the line says done or FAILED, and no estimate.
    ended: bool,
}

impl<'a> Progress<'a> {
    fn new(label: &'a str, tracker: Option<Tracker>) -> Self {
        let tty = std::io::stderr().is_terminal();
        let progress = Progress {
            label,
            status: String::new(),
            started: Instant::now(),
            tty,
            last_shown: None,
            tracker,
            ended: false,
        };
        if !tty {
            diagln!("{label}: started");
        }
        progress
    }

    fn set_status(&mut self, status: String) {
        if let Some(tracker) = &mut self.tracker {
            tracker.status(&status, self.started.elapsed().as_secs_f64());
        }
        self.status = status;
    }

    fn line(&self) -> String {
        let elapsed = self.started.elapsed();
        let secs = elapsed.as_secs();
        let estimate = self
            .tracker
            .as_ref()
            .and_then(|t| t.estimate(elapsed.as_secs_f64()))
            .filter(|_| !self.ended)
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        format!(
            "{} [{}:{:02}] {}{estimate}",
            self.label,
            secs / 60,
            secs % 60,
            self.status
        )
    }

    fn show(&mut self, force: bool) {
        let now = Instant::now();
        let due = match &self.last_shown {
            None => true,
            Some((at, shown)) if self.tty => now.duration_since(*at) >= Duration::from_millis(250),
            Some((at, shown)) => {
                *shown != self.status && now.duration_since(*at) >= Duration::from_secs(15)
            }
        };
        if !(force || due) {
            return;
        }
        if self.tty {
            // By characters: a byte count could cut one in two (a panic in `truncate`).
            let line: String = self.line().chars().take(100).collect();
            // The line itself is escaped; only the redraw codes reach the terminal.
            let line = model::printable(&line);
            crate::util::output::write_stderr_verbatim(&format!("\r\x1b[2K{line}"));
        } else if self.last_shown.is_some() || force {
            diagln!("{}", self.line());
        }
        self.last_shown = Some((now, self.status.clone()));
    }

    fn finish(&mut self, ok: bool) {
        self.status = if ok { "done".into() } else { "FAILED".into() };
        self.ended = true;
        if self.tty {
            self.show(true);
            diagln!();
        } else {
            diagln!("{}", self.line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command that writes to stdout and stderr in turn: the log has its lines in the order
    /// it wrote them (read from two pipes by two threads, they came out interleaved by the
    /// threads' timing, and a snapshot of a failed rebase check flaked in CI).
    #[test]
    fn the_log_keeps_the_order_of_stdout_and_stderr_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let sh = crate::util::shell::here().unwrap();
        let script = "i=0; while [ $i -lt 300 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done";
        let mut cmd = Command::from(xshell::cmd!(sh, "sh -c {script}"));
        let exit = run_to_end(&mut cmd, &log, "interleaved", |_| None, None).unwrap();
        assert!(exit.success());
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        let want: Vec<String> = (0..300)
            .flat_map(|i| [format!("out{i}"), format!("err{i}")])
            .collect();
        assert_eq!(lines, want);
    }
}
