//! Resource limits that would end a command without a word.
//!
//! The kernel enforces `ulimit -f` (RLIMIT_FSIZE) with SIGXFSZ and `ulimit -t` (RLIMIT_CPU)
//! with SIGXCPU, and both signals kill by default: an import dies in the middle of writing its
//! pack with nothing said but the shell's "File size limit exceeded". [`survive`] (called by
//! `main` first) ignores SIGXFSZ, so that the write fails with EFBIG and the command cleans up
//! and reports it ([`explain`]), and turns SIGXCPU (the soft CPU limit, a warning before the
//! hard one's SIGKILL) into a message and exit status 1. What a killed command leaves is
//! recovered by the next run, as after any crash.
//!
//! Not every writer keeps the EFBIG: libgit2 fails an object it could not write with no
//! message at all (git2's "no error"). So SIGXFSZ is blocked as well as ignored: a blocked
//! signal is kept pending, never discarded, and a pending SIGXFSZ is the kernel's own word
//! that a write of this process met the limit ([`limit_met`]). Children start with no signal
//! blocked (the standard library clears the mask) and the signal still ignored.

use crate::util::exit::EXIT_FAILURE;

/// Ignores SIGXFSZ and reports SIGXCPU (see the module docs). Children inherit the ignored
/// SIGXFSZ: a tool that meets the limit fails with its own "File too large" instead of dying.
pub(crate) fn survive() {
    // SAFETY: signal(2) with SIG_IGN, and a handler that only calls async-signal-safe
    // functions (write, _exit).
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        // Before any thread starts: threads inherit the mask.
        let mut xfsz: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut xfsz);
        libc::sigaddset(&mut xfsz, libc::SIGXFSZ);
        libc::pthread_sigmask(libc::SIG_BLOCK, &xfsz, std::ptr::null_mut());
        libc::signal(
            libc::SIGXCPU,
            on_cpu_limit as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

extern "C" fn on_cpu_limit(_: libc::c_int) {
    const SAID: &[u8] = b"\nerror: this command used up the CPU time limit of its process (`ulimit -t`): raise it and run the command again (what it was writing is left as it was, or whole; the next run removes what it left)\n";
    // SAFETY: write(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::write(2, SAID.as_ptr().cast(), SAID.len());
        libc::_exit(i32::from(EXIT_FAILURE));
    }
}

/// How the C library words EFBIG, as libgit2 and tools print it.
const FILE_TOO_LARGE: &str = "File too large";

/// Whether a write of this process met the file size limit: SIGXFSZ is pending (see the
/// module docs; never, where [`survive`] did not block it).
fn limit_met() -> bool {
    // SAFETY: sigpending(2) writes the set it is given; sigismember reads it.
    unsafe {
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pending);
        libc::sigpending(&mut pending) == 0 && libc::sigismember(&pending, libc::SIGXFSZ) == 1
    }
}

/// `err` with what to do when a cause is the file size limit (EFBIG, from us, libgit2 or a
/// tool's output, or a write that met it and whose error said nothing, [`limit_met`]); else
/// `err` as it is.
pub(crate) fn explain(err: anyhow::Error) -> anyhow::Error {
    let too_large = limit_met()
        || err.chain().any(|cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.raw_os_error() == Some(libc::EFBIG))
                || cause.to_string().contains(FILE_TOO_LARGE)
        });
    if !too_large {
        return err;
    }
    err.context(model::file::size_limit_outgrown())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_size_limit_is_named_through_context() {
        let err = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EFBIG))
            .context("cannot write the pack");
        let said = format!("{:#}", explain(err));
        assert!(
            said.starts_with("a file outgrew the file size limit"),
            "{said}"
        );
        let other = anyhow::anyhow!("permission denied");
        assert_eq!(format!("{:#}", explain(other)), "permission denied");
    }
}
