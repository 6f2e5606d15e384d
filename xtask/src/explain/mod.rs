//! `cargo xtask explain PROGRAM`: which file a program would map for every library, with
//! `LD_FALLBACK_PATH` (or without the patch), without running it or the patched loader. The
//! command is the `ld-fallback-explain` crate's (explain/), which users install on its own;
//! here it prints through the tooling's output (a closed pipe, exit statuses) and its time.

use std::time::Instant;

use anyhow::{bail, Result};

use crate::util::exit::NeedsAttention;

pub(crate) use ld_fallback_explain::Args;

pub(crate) fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let explained = args.explain()?;
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
        return Err(NeedsAttention(format!(
            "{} would not find every library (see `not found` above)",
            model::printable_bytes(args.program.as_encoded_bytes())
        ))
        .into());
    }
    Ok(())
}
