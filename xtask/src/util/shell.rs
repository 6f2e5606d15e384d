//! The shells the xtask's command lines are written in: xshell's `cmd!(sh, "git -C {dir} ...")`
//! reads as the line a developer would type, and splits its words at compile time (an
//! interpolated path is one argument, whatever it holds). One [`Shell`] per command, made
//! here: xshell's own runners serve the short commands (`.read()`, `.output()`, and
//! `.quiet().run()`: unquiet, `run` echoes the line with std's `eprintln!`, which a closed
//! pipe turns into a panic, see [`crate::util::output`]); a command that needs more (a
//! `pre_exec` hook, [`crate::util::logged`]'s runner, a pipe of its own) is converted into
//! a `std::process::Command` with `Command::from`.

use std::path::Path;

use anyhow::{Context, Result};
use xshell::Shell;

/// A shell in this process's current directory.
pub(crate) fn here() -> Result<Shell> {
    Shell::new().context("a command runs in the current directory, which cannot be read")
}

/// A shell whose commands run in `dir`.
pub(crate) fn in_dir(dir: &Path) -> Result<Shell> {
    let sh = here()?;
    sh.change_dir(dir);
    Ok(sh)
}
