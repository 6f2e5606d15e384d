//! Long-running commands (imports, glibc builds, QEMU runs): full output goes to a log file on
//! disk, the terminal gets one progress line, and a failure prints the log's tail and its path.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How many log lines a failure prints.
pub const TAIL_LINES: usize = 40;

/// Runs `cmd`, appending its stdout and stderr to `log`.
///
/// `status` sees every output line and may return a short description of where the command
/// is (say, the glibc subdirectory being built); it is shown next to `label` and the elapsed
/// time. On a terminal the line is redrawn in place; elsewhere (CI) a line is printed when the
/// status changes, at most every 15 s, so logs stay readable.
pub fn run(
    cmd: &mut Command,
    log: &Path,
    label: &str,
    status: impl FnMut(&str) -> Option<String>,
) -> Result<()> {
    let exit = run_to_end(cmd, log, label, status)?;
    if !exit.success() {
        print_tail(log);
        bail!("{label} failed ({exit}); full log: {}", log.display());
    }
    Ok(())
}

/// Like [`run`], but a failure of the command is the caller's to judge (say, `make -k check`,
/// whose failing tests are results, not errors).
pub fn run_to_end(
    cmd: &mut Command,
    log: &Path,
    label: &str,
    mut status: impl FnMut(&str) -> Option<String>,
) -> Result<std::process::ExitStatus> {
    let mut log_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot open log {}", log.display()))?;
    writeln!(log_file, "$ {cmd:?}").context("cannot write log")?;

    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;

    let (tx, rx) = mpsc::channel::<String>();
    let readers = [
        forward_lines(child.stdout.take().expect("piped stdout"), tx.clone()),
        forward_lines(child.stderr.take().expect("piped stderr"), tx),
    ];

    let mut progress = Progress::new(label);
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                writeln!(log_file, "{line}").context("cannot write log")?;
                if let Some(now) = status(&line) {
                    progress.status = now;
                }
                progress.show(false);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => progress.show(false),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for reader in readers {
        let _ = reader.join();
    }
    let exit = child.wait().context("cannot wait for child")?;
    log_file.flush().ok();
    progress.finish(exit.success());
    Ok(exit)
}

/// Prints the last [`TAIL_LINES`] lines of `log` to stderr, with its path.
pub fn print_tail(log: &Path) {
    let mut text = String::new();
    if File::open(log)
        .and_then(|mut f| f.read_to_string(&mut text))
        .is_err()
    {
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    eprintln!(
        "---- last {} lines of {} ----",
        lines.len() - start,
        log.display()
    );
    for line in &lines[start..] {
        eprintln!("{line}");
    }
    eprintln!("---- end of log tail ----");
}

fn forward_lines<R: Read + Send + 'static>(
    stream: R,
    tx: mpsc::Sender<String>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
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
}

impl<'a> Progress<'a> {
    fn new(label: &'a str) -> Self {
        let tty = std::io::stderr().is_terminal();
        let progress = Progress {
            label,
            status: String::new(),
            started: Instant::now(),
            tty,
            last_shown: None,
        };
        if !tty {
            eprintln!("{label}: started");
        }
        progress
    }

    fn line(&self) -> String {
        let secs = self.started.elapsed().as_secs();
        format!(
            "{} [{}:{:02}] {}",
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
            let mut line = self.line();
            line.truncate(100);
            eprint!("\r\x1b[2K{line}");
        } else if self.last_shown.is_some() || force {
            eprintln!("{}", self.line());
        }
        self.last_shown = Some((now, self.status.clone()));
    }

    fn finish(&mut self, ok: bool) {
        self.status = if ok { "done".into() } else { "FAILED".into() };
        if self.tty {
            self.show(true);
            eprintln!();
        } else {
            eprintln!("{}", self.line());
        }
    }
}
