//! The project's vocabulary, shared by `cargo xtask` and the scenario harness: the supported
//! glibc releases ([`Release`], a handle into data/releases.json's table), the targets ([`Target`]),
//! the flavours of a build ([`Flavour`]), a cell (one release on one target, [`Cell`]) and an
//! installed glibc ([`Sysroot`]); how text from outside is printed ([`printable`]) and how a
//! file someone named is read ([`file`]: bounded, regular files only); and the one way the
//! tools work on many items at once ([`parallel_map`]).
//!
//! A release or a target is a value of these types everywhere past the command line: text
//! is parsed once, where it comes in (an option, a report read back, a sysroot's
//! `features.h`), and an unsupported release is an error there, not a string further on.

mod cell;
pub mod file;
mod flavour;
mod parallel;
mod release;
mod sysroot;
mod target;
mod text;

pub use cell::Cell;
pub use flavour::Flavour;
pub use parallel::parallel_map;
pub use release::{
    install, listed, supported, supported_list, version_numbers, Facts, NixpkgsPin, Release, Table,
    TableError, UnsupportedRelease, TABLE_PATH,
};
pub use sysroot::{sysroot_env_var, Sysroot};
pub use target::Target;
pub use text::{printable, printable_args, printable_bytes, printable_lines};
