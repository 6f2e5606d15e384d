//! Plumbing shared by the stages: logged long-running commands, staging directories and
//! crash-safe writes for atomic publication, children that die with us, the fault-injection
//! hook, output that survives a closed pipe, and where things live.

// First: its macros are used by the modules below (and, through lib.rs, everywhere).
#[macro_use]
pub mod output;

pub mod child;
pub mod durable;
pub mod fault;
pub mod logged;
pub mod paths;
pub mod staging;
