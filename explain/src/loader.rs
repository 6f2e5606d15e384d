//! Whether the loader that runs the program carries the series, asked of the loader itself:
//! `ld.so --help` lists `--fallback-path` among its options when it has the series and never
//! otherwise (the option is the series' own). It runs where it can: natively on its own
//! architecture, under QEMU user mode (`qemu-aarch64`, `qemu-x86_64`, or their `-static`
//! builds on `PATH`) on another. Only the loader runs, with an empty environment and its
//! `--help` alone, never the program. Where it cannot run, the strings in its file are the
//! stated fallback, with a caveat: two strings appended to an unpatched loader would pass.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loader_model::SeriesInFile;
use model::Target;

/// How long a loader's `--help` may take (it prints and exits at once; QEMU's start is
/// tens of milliseconds).
const HELP_TIME: Duration = Duration::from_secs(10);

/// The most of its `--help` that is read (it is about 2 KiB).
const HELP_BYTES: u64 = 1 << 20;

/// What the loader at `host` (a glibc loader of `target`) says it is, or why it could not be
/// asked.
pub(crate) fn ask(host: &Path, target: Target) -> Result<SeriesInFile, String> {
    let mut command = if target.is_native() {
        Command::new(host)
    } else {
        let qemu = qemu(target).ok_or_else(|| {
            format!(
                "it is an {target} loader, and this machine runs no {target} code (no qemu-{target} or qemu-{target}-static on PATH)"
            )
        })?;
        let mut command = Command::new(qemu);
        command.arg(host);
        command
    };
    command
        .arg("--help")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let help = run_bounded(&mut command)?;
    let help = String::from_utf8_lossy(&help);
    let option = |name: &str| {
        help.lines()
            .any(|line| line.split_whitespace().next() == Some(name))
    };
    if !option("--library-path") {
        return Err(
            "its --help lists no --library-path: it does not answer as glibc's loader".into(),
        );
    }
    Ok(if option("--fallback-path") {
        SeriesInFile {
            patched: true,
            why: "its --help lists --fallback-path, the series' option".into(),
            caveat: None,
        }
    } else {
        SeriesInFile {
            patched: false,
            why: "its --help lists no --fallback-path (a loader with the series does)".into(),
            caveat: None,
        }
    })
}

/// The strings-only judgment, said as one: why the loader was not asked.
pub(crate) fn from_strings(mut series: SeriesInFile, why_not_run: &str) -> SeriesInFile {
    series.caveat = Some(format!(
        "judged from the strings in the file, not by running it ({why_not_run}): an unpatched loader with those two strings added to it would be taken for patched"
    ));
    series
}

/// `qemu-<target>` or `qemu-<target>-static`, the first on `PATH`.
fn qemu(target: Target) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let names = [format!("qemu-{target}"), format!("qemu-{target}-static")];
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `command`: its standard output (at most `HELP_BYTES`) when it exits 0 within
/// `HELP_TIME`; killed past that.
fn run_bounded(command: &mut Command) -> Result<Vec<u8>, String> {
    let mut child = command
        .spawn()
        .map_err(|err| format!("it cannot be started here: {err}"))?;
    let mut stdout = child.stdout.take().ok_or("no standard output")?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(HELP_BYTES).read_to_end(&mut out);
        out
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > HELP_TIME => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "its --help did not end within {} s",
                    HELP_TIME.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(err) => return Err(format!("cannot wait for it: {err}")),
        }
    };
    let out = reader.join().map_err(|_| "cannot read its output")?;
    if !status.success() {
        return Err(format!("its --help ended with {status}"));
    }
    Ok(out)
}
