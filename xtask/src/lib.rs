//! Library half of `cargo xtask`, so that integration tests drive the same code the CLI runs.
//!
//! One module per stage, in the order data flows through them:
//! `store` (glibc releases) -> `series` (patches/) -> `rebase` (moving a series between
//! releases) -> `build` (cached sysroots) -> `resolution` (the scenario matrix against a
//! sysroot) -> `verify` (every cell proven, the support table) -> `ci` (all of it, as CI
//! runs it); `update` takes one release through all of them (`update-release`); `explain` models the
//! patched loader's search for a program without running it. `cli` holds
//! the vocabulary every command shares; `util` the plumbing.

// First, so that its output macros (`outln!`, `diagln!`, ...) are in scope in every module.
#[macro_use]
pub mod util;

pub mod build;
pub mod ci;
pub mod cli;
pub mod commands;
pub mod explain;
pub mod jetson;
pub mod rebase;
pub mod resolution;
pub mod series;
pub mod store;
pub mod update;
pub mod verify;
