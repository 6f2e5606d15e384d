//! Plumbing shared by the stages: logged long-running commands, staging directories for
//! atomic publication, and where things live.

pub mod logged;
pub mod paths;
pub mod staging;
