//! The resolution-matrix harness: runs probe programs under a built glibc's `ld.so` inside a
//! hermetic root and reports which file the loader picked.

pub mod apt;
mod debs;
pub mod differential;
pub mod fixtures;
pub mod host;
pub mod layout;
pub mod matrix;
pub mod nvidia;
pub mod probe;
pub mod replay;
pub mod report;
pub mod root;
mod trace;
pub mod world;
