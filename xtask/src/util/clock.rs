//! The wall clock, in the one unit the stages stamp files and records with.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the epoch (0 if the clock is before it).
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
