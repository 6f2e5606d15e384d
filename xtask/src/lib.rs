//! Library half of `cargo xtask`, so that integration tests drive the same code the CLI runs.
//!
//! Modules in layers, bottom first, each importing only the layers below it, declared here in
//! that order (the tidy test's `LAYERS` holds them to it; ARCHITECTURE.md says what each owns):
//!
//! 1. `util` (plumbing), then `cli` (the words every command shares, and its environment);
//! 2. the stages, in the order data flows through them: `store` (glibc releases) -> `merge`
//!    (the 3-way merge of a commit onto another release, which `series` and `rebase` share)
//!    -> `series` (patches/) -> `nix_stack` (the series on nixpkgs' glibc patches) ->
//!    `debian_stack` (the series on Debian's stable branch) -> `rebase` (moving a series
//!    between releases) -> `sysroot` (glibc built into cached sysroots) -> `resolution` (the
//!    scenario matrix against a sysroot) -> `verify` (every cell proven, the support table)
//!    -> `ci` (all of it, as CI runs it);
//! 3. the commands that take several stages at once, none importing another: `update` (one
//!    release through all of them; a new one, a retired one), `rehearse_release` (a new release's
//!    update, rehearsed on a pretend one in copies), `format_series` (a series as mails for
//!    libc-alpha), `jetson_replay` (the Jetson replay), `explain` (the loader's search for a program,
//!    modelled), `fuzz_model` (the model against a built loader on generated worlds),
//!    `bench` (timings);
//! 4. `regenerate`: every generated file and block, written or compared, whichever command
//!    above makes it;
//! 5. `commands`: the command tree, which dispatches to all of the above.

// First, so that its output macros (`outln!`, `diagln!`, ...) are in scope in every module.
#[macro_use]
pub mod util;

pub mod cli;

pub mod store;

pub mod merge;

pub mod series;

mod nix_stack;

mod debian_stack;

pub mod rebase;

pub mod sysroot;

mod resolution;

mod verify;

pub mod ci;

mod explain;
pub mod format_series;
mod fuzz_model;
mod jetson_replay;
mod rehearse_release;
mod update;

// Times the stages and the commands above.
pub mod bench;

mod regenerate;

pub mod commands;
