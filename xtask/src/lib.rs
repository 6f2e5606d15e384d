//! Library half of `cargo xtask`, so that integration tests drive the same code the CLI runs.
//!
//! Modules in layers, each importing only the layers below it (the tidy test
//! `stages_import_only_downward` holds them to it):
//!
//! 1. `util` (plumbing) and `cli` (the words every command shares, and its environment);
//! 2. the stages, in the order data flows through them: `store` (glibc releases) -> `merge`
//!    (the 3-way merge of a commit onto another release, which `series` and `rebase` share)
//!    -> `series` (patches/) -> `rebase` (moving a series between releases) -> `sysroot`
//!    (glibc built into cached sysroots) -> `resolution` (the scenario matrix against a
//!    sysroot) -> `verify` (every cell proven, the support table) -> `ci` (all of it, as CI
//!    runs it);
//! 3. the commands that take several stages at once: `update` (one release through all of
//!    them; a new one, a retired one), `rehearse` (a new release's update, rehearsed on a
//!    pretend one in copies), `format` (a series as mails for libc-alpha), `jetson` (the Jetson replay),
//!    `explain` (the loader's search for a program, modelled), `fuzz_model` (the model
//!    against a built loader on generated worlds), `bench` (timings),
//!    `regenerate` (every generated file and block, written or compared);
//! 4. `commands`: the command tree, which dispatches to all of the above.

// First, so that its output macros (`outln!`, `diagln!`, ...) are in scope in every module.
#[macro_use]
pub mod util;

pub mod cli;

pub mod ci;
mod debian_stack;
pub mod merge;
mod nixpkgs;
pub mod rebase;
mod resolution;
pub mod series;
pub mod store;
pub mod sysroot;
mod verify;

pub mod bench;
mod explain;
pub mod format;
mod fuzz_model;
mod jetson;
mod regenerate;
mod rehearse;
mod update;

pub mod commands;
