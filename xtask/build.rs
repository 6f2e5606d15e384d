//! The digest of the sources that judge a verify cell (the harness, its scenario table and
//! fixtures, the resolution stage and verify's judging modules), computed from the sources this binary is built
//! from. Read at run time from the checkout, it would describe whatever the files hold when a
//! cell is keyed: a harness edited while a long verify runs would give its later cells a key
//! of sources the running binary was not built from.
//!
//! What counts, and why rewording a verdict leaves the digest as it was, is in
//! `src/util/source_digest.rs`, which the binary's tests hold to it.

use std::path::PathBuf;

#[allow(dead_code)]
#[path = "src/util/source_digest.rs"]
mod source_digest;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("xtask/ is in the workspace root");
    for (source, _) in source_digest::JUDGING_SOURCES {
        // A directory's own mtime changes when an entry is added or removed, not when a file
        // deep inside it changes: every file is named too.
        println!("cargo::rerun-if-changed={}", root.join(source).display());
    }
    let files = source_digest::judging_files(root)
        .unwrap_or_else(|e| panic!("cannot list the judging sources: {e}"));
    for file in &files {
        println!("cargo::rerun-if-changed={}", file.display());
        if let Some(dir) = file.parent() {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }
    let digest = source_digest::judging_digest(root)
        .unwrap_or_else(|e| panic!("cannot digest the judging sources: {e}"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("harness_digest"), digest)
        .expect("cannot write the harness digest into OUT_DIR");
}
