//! Plumbing shared by the stages: logged long-running commands, staging directories and
//! crash-safe writes for atomic publication, children that die with us, the fault-injection
//! hook, and where things live.

pub mod child;
pub mod durable;
pub mod fault;
pub mod logged;
pub mod paths;
pub mod staging;
