//! Every integration test of xtask, in one binary: a module per part (`cargo test -p xtask
//! --test it -- <module>::` runs one), sharing the helpers of `tests/common/`. One binary
//! links the library and git2 once, where thirteen linked them thirteen times.

#[path = "../common/mod.rs"]
mod common;

mod build_glibc;
mod endless;
mod faults;
mod flake;
mod format_series;
mod install_deps;
mod messages;
mod nix_docs;
mod nix_env;
mod page_shell;
mod real_release;
mod rebase;
mod rehearsal;
mod safety;
mod series;
mod store;
mod tidy;
mod unattended;
mod update_release;
mod workflow;
