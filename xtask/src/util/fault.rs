//! Named kill points, the test hook of the fault-injection tests (`xtask/tests/it/faults.rs`).
//!
//! `LD_FALLBACK_FAULT=<name>:<n>` makes the n-th pass (1-based) through the point `<name>` kill
//! the process with SIGKILL, as a crash, the OOM killer or `kill -9` would: no destructor
//! runs, no temporary directory is cleaned. `<name>:<n>:stop` stops it there with SIGSTOP
//! instead, alive and holding what it holds, until a test sends SIGCONT: another command run
//! meanwhile meets a live one in the middle of its work. `LD_FALLBACK_FAULT_LOG=<file>` appends the name of
//! every point passed to `<file>`, so that a test can list the points of a command and then
//! kill it at each one. Compiled in always: a point costs one environment lookup, and a hook
//! that exists only in test builds would test another program. Never set these outside tests.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The environment variable naming the point to die at.
pub(crate) const FAULT_VAR: &str = "LD_FALLBACK_FAULT";
/// The environment variable naming the file that records every point passed.
pub(crate) const LOG_VAR: &str = "LD_FALLBACK_FAULT_LOG";

struct Plan {
    name: String,
    nth: usize,
    /// SIGSTOP rather than SIGKILL.
    stop: bool,
}

fn plan() -> Option<&'static Plan> {
    static PLAN: OnceLock<Option<Plan>> = OnceLock::new();
    PLAN.get_or_init(|| {
        let text = std::env::var(FAULT_VAR).ok()?;
        let (text, stop) = match text.strip_suffix(":stop") {
            Some(text) => (text, true),
            None => (text.as_str(), false),
        };
        let (name, nth) = text.rsplit_once(':').unwrap_or((text, "1"));
        Some(Plan {
            name: name.to_string(),
            nth: nth.parse().ok()?,
            stop,
        })
    })
    .as_ref()
}

/// A place where a crash must leave everything recoverable. Dies here if the hook says so.
pub(crate) fn point(name: &str) {
    if let Some(log) = std::env::var_os(LOG_VAR) {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(file, "{name}");
        }
    }
    static PASSED: AtomicUsize = AtomicUsize::new(0);
    if let Some(plan) = plan() {
        if plan.name == name && PASSED.fetch_add(1, Ordering::SeqCst) + 1 == plan.nth {
            let _ = std::io::stderr().flush();
            let signal = if plan.stop {
                libc::SIGSTOP
            } else {
                libc::SIGKILL
            };
            // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
            unsafe {
                libc::kill(libc::getpid(), signal);
            }
        }
    }
}
