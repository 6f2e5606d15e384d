//! `ld-fallback-explain PROGRAM`: the stand-alone command (see the library's documentation).
//! Exit status (docs/explain.md, "Exit status"): 0 when every library is found, 2 when one is
//! not (or the program would not start), 1 when the command failed (a usage error, a program
//! that cannot be read, a `--dlopen` from a caller nothing loaded); 141 when the reader of the
//! output left early.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// The exit-status rule (docs/explain.md, "Exit status"), as `cargo xtask`'s help says its own.
const EXIT_STATUS_HELP: &str = "\
Exit status:
  0    every library is found and the program starts
  2    a library is not found, or the program would not start
  1    the command failed: bad input or usage, a program it cannot read, an I/O error
  141  done, but the reader of the output left early (`... | head`)";

/// The command failed: bad input (usage included), an I/O error.
const EXIT_FAILED: u8 = 1;
/// Something needs attention: a library not found, a program that does not start.
const EXIT_FINDING: u8 = 2;
/// The reader of the output left early: the status a shell gives a writer SIGPIPE ended.
const EXIT_READER_GONE: u8 = 141;

/// Which file a program would load for every library, with LD_FALLBACK_PATH, without running
/// it (a model of the patched glibc loader's search).
#[derive(Parser)]
#[command(name = "ld-fallback-explain", version, after_help = EXIT_STATUS_HELP)]
struct Cli {
    #[command(flatten)]
    args: ld_fallback_explain::Args,
}

fn main() -> ExitCode {
    // The file size limit (`ulimit -f`) ends a write past it with SIGXFSZ, which kills
    // without a word and leaves a cut file; ignored, the write fails with EFBIG, said below.
    // SAFETY: signal(2) with SIG_IGN, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // clap's message quotes what the user typed: parsed again from the arguments
        // escaped, it quotes them escaped (as `cargo xtask` does); plain text, no styles.
        Err(usage) if usage.use_stderr() => {
            let again = model::printable_args(std::env::args_os())
                .and_then(|escaped| Cli::try_parse_from(escaped).err())
                .filter(|again| again.kind() == usage.kind());
            let text = again.as_ref().unwrap_or(&usage).render().to_string();
            say(model::printable_lines(&text).trim_end());
            return ExitCode::from(EXIT_FAILED);
        }
        // `--help` and `--version`: written to stdout, whose failure is said as for the
        // explanation (`--help > /dev/full` is no success).
        Err(help) => {
            return match help.print() {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                    ExitCode::from(EXIT_READER_GONE)
                }
                Err(err) => {
                    let what = match help.kind() {
                        clap::error::ErrorKind::DisplayVersion => "the version",
                        _ => "the help",
                    };
                    say(&format!("error: cannot write {what}: {err}"));
                    ExitCode::from(EXIT_FAILED)
                }
            };
        }
    };
    let explained = match cli.args.explain() {
        Ok(explained) => explained,
        Err(err) => {
            // Values in the message are escaped already; the causes' too.
            say(&format!(
                "error: {}",
                model::printable_lines(&format!("{err:#}"))
            ));
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = stdout
        .write_all(explained.text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // A reader that stops early (`| head`) is no error: the status a shell gives a
        // writer SIGPIPE ended (128 + 13).
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            return ExitCode::from(EXIT_READER_GONE);
        }
        say(&format!("error: {}", write_error(&err)));
        return ExitCode::from(EXIT_FAILED);
    }
    if let Some(why) = explained.request_error() {
        say(&format!("error: {why}"));
        return ExitCode::from(EXIT_FAILED);
    }
    if !explained.complete {
        say(&explained.finding(&cli.args.program));
        return ExitCode::from(EXIT_FINDING);
    }
    ExitCode::SUCCESS
}

/// `text` and a newline on stderr. Nothing there is the report (that is stdout): a failure
/// to write it (`2>/dev/full`) could be said nowhere else, so it is dropped, and the exit
/// status says what was found (`eprintln!` panicked instead: exit status 101).
fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Why the explanation could not be written whole: the file size limit named as such (with
/// its value), as `cargo xtask` says it.
fn write_error(err: &std::io::Error) -> String {
    let cut = format!("cannot write the explanation to standard output, so what it printed there is cut short: {err}");
    if err.raw_os_error() != Some(libc::EFBIG) {
        return cut;
    }
    format!("{}: {cut}", model::file::size_limit_outgrown())
}
