//! Child processes that do not outlive us: a `tar` still writing into a staging directory
//! after its `cargo xtask` was killed would fill the disk behind the next run's back.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the kernel send SIGKILL to the child when this process dies, however it dies.
pub(crate) fn dies_with_us(cmd: &mut Command) -> &mut Command {
    // SAFETY: getpid before the fork; in the child, only async-signal-safe calls (prctl,
    // getppid, _exit), as pre_exec requires.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between fork and prctl: the signal will never come.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        })
    }
}
