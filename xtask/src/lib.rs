//! Library half of `cargo xtask`, so that integration tests can drive the same code the CLI runs.

pub mod bench;
pub mod build;
pub mod ci;
pub mod diffstat;
pub mod glibc;
pub mod import;
pub mod logged;
pub mod mail_date;
pub mod patch_import;
pub mod patches;
pub mod paths;
pub mod range_diff;
pub mod rebase;
pub mod rebase_state;
pub mod release;
pub mod resolution;
pub mod series;
pub mod series_rebase;
pub mod staging;
pub mod store;
pub mod store_bench;
pub mod target;
pub mod tools;
pub mod worktree;
