//! Library half of `cargo xtask`, so that integration tests can drive the same code the CLI runs.

pub mod bench;
pub mod build;
pub mod glibc;
pub mod import;
pub mod logged;
pub mod patches;
pub mod paths;
pub mod rebase;
pub mod release;
pub mod resolution;
pub mod series;
pub mod store;
pub mod tools;
pub mod worktree;
