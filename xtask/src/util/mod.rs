//! Plumbing shared by the stages: logged long-running commands, staging directories and
//! crash-safe writes for atomic publication (of one directory, or of several together), children that die with us, the fault-injection
//! hook, output that survives a closed pipe, resource limits that end a command with a
//! message, and where things live.

// First: its macros are used by the modules below (and, through lib.rs, everywhere).
#[macro_use]
pub mod output;

pub mod child;
pub mod clock;
pub mod durable;
pub mod exit;
pub mod fault;
pub mod limits;
pub mod lock;
pub mod logged;
pub mod paths;
pub mod staging;
pub mod text;
pub mod together;
