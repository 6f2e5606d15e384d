//! `cargo xtask explain PROGRAM`: which file a program would map for every library, with
//! `LD_FALLBACK_PATH` (or without the patch), without running it or the patched loader. The
//! command is the `ld-fallback-explain` crate's (explain/), which users install on its own;
//! here it prints through the tooling's output (a closed pipe, exit statuses) and its time.
//! It runs under `cargo run`, which puts its own directories in front of `LD_LIBRARY_PATH`:
//! those are not the user's, and are left out (said in the explanation).

use std::time::Instant;

use anyhow::{bail, Result};

use crate::util::exit::NeedsAttention;

use ld_fallback_explain::environment::Environment;
pub(crate) use ld_fallback_explain::Args;

pub(crate) fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let explained = args.explain_with(environment())?;
    // A reader that stops early (`| head`) is no error (see `util::output`).
    out!("{}", explained.text);
    if !args.json {
        diagln!(
            "explain: {:.0} ms",
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    // A request that names a caller nothing loaded is a failure of the request (1).
    if let Some(why) = explained.request_error() {
        bail!("{why}");
    }
    if !explained.complete {
        return Err(NeedsAttention(explained.finding(&args.program)).into());
    }
    Ok(())
}

/// This process's environment without the directories cargo put in front of
/// `LD_LIBRARY_PATH` to run it: this binary's own (the target directory's profile: the
/// binary and `deps/`), and the toolchain's (`$CARGO` is `<toolchain>/bin/cargo`).
fn environment() -> Environment {
    let env = Environment::of_process();
    let Some(cargo) = std::env::var_os("CARGO") else {
        return env;
    };
    let ours = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.as_os_str().to_owned()))
        .unwrap_or_default();
    let toolchain = std::path::Path::new(&cargo)
        .parent()
        .and_then(|bin| bin.parent())
        .map(|dir| dir.as_os_str().to_owned());
    env.without_cargo_directories(&ours, toolchain.as_deref())
}
