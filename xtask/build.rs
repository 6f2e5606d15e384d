//! The digest of the sources that judge a verify cell (the harness, the fixtures, verify and
//! the resolution stage), computed from the sources this binary is built from. Read at run
//! time from the checkout instead, it described whatever the files held when a cell was
//! keyed: a harness edited while a long verify ran gave its later cells a key of sources
//! the running binary was not built from.
//!
//! The digest is git's blob id of `<path>\0<len>\0<bytes>` for every file in path order,
//! as `verify::cell_key` has always hashed it, so that the keys of cached cells stay the same.

use std::path::{Path, PathBuf};

/// Relative to the workspace root.
const HARNESS_DIRS: [&str; 4] = [
    "loader-harness/src",
    "c-fixtures",
    "xtask/src/verify",
    "xtask/src/resolution",
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("xtask/ is in the workspace root");
    let mut files = Vec::new();
    for dir in HARNESS_DIRS {
        let dir = root.join(dir);
        println!("cargo::rerun-if-changed={}", dir.display());
        collect_files(&dir, &mut files);
    }
    files.sort();
    let mut text = Vec::new();
    for file in files {
        let bytes =
            std::fs::read(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let rel = file.strip_prefix(root).unwrap_or(&file);
        text.extend_from_slice(format!("{}\0{}\0", rel.display(), bytes.len()).as_bytes());
        text.extend_from_slice(&bytes);
    }
    let mut sha = sha1_smol::Sha1::new();
    sha.update(format!("blob {}\0", text.len()).as_bytes());
    sha.update(&text);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("harness_digest"), sha.digest().to_string())
        .expect("cannot write the harness digest into OUT_DIR");
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            // A directory's own mtime does not change when a file deep inside it does.
            println!("cargo::rerun-if-changed={}", path.display());
            collect_files(&path, files);
        } else {
            println!("cargo::rerun-if-changed={}", path.display());
            files.push(path);
        }
    }
}
