//! Child processes that do not outlive us, nor do theirs: a `tar` still writing into a
//! staging directory after its `cargo xtask` was killed would fill the disk behind the next
//! run's back, and so would the download methods `apt-get update` starts, which a signal to
//! apt-get alone leaves running.
//!
//! [`dies_with_us`] puts the command in a process group of its own, led by a guard: the
//! child `std::process` starts forks once more before the command is executed, and stays
//! behind as the guard, waiting for the command and ending as it ended. The kernel tells the
//! guard when this process dies, however it dies (`PR_SET_PDEATHSIG`, here SIGTERM), and the
//! guard then kills its whole group, the command and everything it started. The guard is
//! what `Child` holds: [`kill_group`] ends the group from here.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Makes `cmd`, and everything it starts, die when this process dies (see the module docs).
/// What `Child::wait` gives is the command's own end: its exit code, or the signal it died of.
pub(crate) fn dies_with_us(cmd: &mut Command) -> &mut Command {
    // SAFETY: getpid before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: in the forked child, only async-signal-safe calls (setpgid, sigaction, prctl,
    // getppid, kill, clone, waitpid, close, _exit), as pre_exec requires; the guard never
    // returns into the standard library, which executes the command in the other process.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = end_group as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut()) != 0
                || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between fork and prctl: the signal will never come.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            // A plain clone, not glibc's fork: fork runs the C library's fork handlers, which
            // take locks another thread of the parent may have held at the first fork.
            match libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) {
                -1 => Err(std::io::Error::last_os_error()),
                // The command: the standard library goes on to execute it (which resets the
                // SIGTERM handler; the death signal was not inherited).
                0 => Ok(()),
                command => guard(command as libc::pid_t),
            }
        })
    }
}

/// Kills the group of `child` (a command started through [`dies_with_us`]): the command and
/// everything it started, and the guard.
pub(crate) fn kill_group(child: &Child) {
    // SAFETY: kill(2) of a process group this process made.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
}

/// The guard's SIGTERM (this process died): the whole group goes, the guard with it.
extern "C" fn end_group(_: libc::c_int) {
    // SAFETY: kill(2) is async-signal-safe.
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
}

/// The guard: waits for `command` and ends as it ended. Closes every descriptor but the
/// standard three first, among them the one through which the standard library learns that
/// the command was executed (it waits for that to close).
fn guard(command: libc::pid_t) -> ! {
    // SAFETY: close_range(2), close(2), waitpid(2), signal(2), kill(2), getpid(2) and
    // _exit(2) are async-signal-safe.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3, libc::c_uint::MAX, 0) != 0 {
            for fd in 3..4096 {
                libc::close(fd);
            }
        }
        let mut status = 0;
        while libc::waitpid(command, &mut status, 0) == -1 {
            if *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// The guard ends as the command ends: its exit code, or the signal it died of; and what
    /// the command writes reaches the pipe the caller reads.
    #[test]
    fn the_command_s_end_is_the_child_s() {
        let out = dies_with_us(Command::new("sh").args(["-c", "echo said; exit 3"]))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"said\n");
        let out = dies_with_us(Command::new("sh").args(["-c", "kill -USR1 $$"]))
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGUSR1));
        let err = dies_with_us(&mut Command::new("/no/such/program"))
            .output()
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
