//! Plumbing shared by the stages: logged long-running commands, staging directories and
//! crash-safe writes for atomic publication (of one directory, or of several together), children that die with us, the fault-injection
//! hook, git repositories opened without waiting on their configuration, output that survives a closed pipe, resource limits that end a command with a
//! message, and where things live.

// First: its macros are used by the modules below (and, through lib.rs, everywhere).
#[macro_use]
pub(crate) mod output;

pub(crate) mod child;
pub(crate) mod clock;
pub(crate) mod durable;
pub(crate) mod estimate;
pub(crate) mod exit;
pub(crate) mod fault;
pub(crate) mod git;
pub(crate) mod limits;
pub mod lock;
pub(crate) mod logged;
pub mod paths;
pub(crate) mod read;
pub(crate) mod release_table;
pub(crate) mod shell;
// build.rs runs it (the digest is the binary's own); here for its tests.
#[cfg(test)]
mod source_digest;
pub(crate) mod staging;
pub(crate) mod text;
pub(crate) mod together;
