//! A directory's files as one git tree, hashed exactly as `git add -A -f && git write-tree`
//! would, so that its id can be checked before anything is written to the store.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{ObjectType, Odb, Oid};

/// A tree built from a directory, serialized exactly as git would, so that its id can be
/// checked against the pinned one before a single object is written to the store.
pub struct Snapshot {
    pub root: Oid,
    blobs: Vec<(Oid, BlobSource)>,
    trees: Vec<(Oid, Vec<u8>)>,
    pub files: usize,
    /// Entries met that git cannot store: the walk goes on, to name them all.
    not_storable: Vec<(PathBuf, &'static str)>,
}

/// Entries of a directory git cannot store (a FIFO, a socket, a device): [`Snapshot::of_dir`]
/// names every one of them, with its kind, so that a caller can tell a tree that holds them
/// (something its user has to clear away) from one it could not read.
#[derive(Debug)]
pub struct NotStorable {
    /// Each entry's path and what it is ("a FIFO").
    pub entries: Vec<(PathBuf, &'static str)>,
}

impl std::fmt::Display for NotStorable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let named: Vec<String> = self
            .entries
            .iter()
            .map(|(path, kind)| format!("{} ({kind})", path.display()))
            .collect();
        write!(
            f,
            "neither a file, a directory nor a symlink, so git cannot hold {}: {}",
            if named.len() == 1 { "it" } else { "them" },
            crate::util::text::listed(&named)
        )
    }
}

impl std::error::Error for NotStorable {}

/// What a directory entry that is neither a file, a directory nor a symlink is, in words.
fn kind_of_special(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_char_device() {
        "a character device"
    } else {
        "a special file"
    }
}

enum BlobSource {
    File(PathBuf),
    Symlink(Vec<u8>),
}

impl Snapshot {
    /// Hashes every file below `dir`, as `git add -A -f && git write-tree` would: ignore files
    /// are not honoured, the executable bit gives 100755, symlinks give 120000, empty
    /// directories vanish. `drop_top_level` names top-level entries to leave out. Entries git
    /// cannot store fail it with [`NotStorable`], which names them all.
    pub fn of_dir(dir: &Path, drop_top_level: &[&str]) -> Result<Snapshot> {
        let mut snapshot = Snapshot {
            root: Oid::zero(),
            blobs: Vec::new(),
            trees: Vec::new(),
            files: 0,
            not_storable: Vec::new(),
        };
        let root = snapshot.add_dir(dir, drop_top_level)?;
        if !snapshot.not_storable.is_empty() {
            return Err(NotStorable {
                entries: std::mem::take(&mut snapshot.not_storable),
            }
            .into());
        }
        match root {
            Some(root) => snapshot.root = root,
            None => bail!("{} holds no files", dir.display()),
        }
        Ok(snapshot)
    }

    fn add_dir(&mut self, dir: &Path, drop: &[&str]) -> Result<Option<Oid>> {
        let mut entries = Vec::new();
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
            let name = entry.file_name();
            // git never stores a `.git` entry; dropped directories are dropped at the top only.
            if name == ".git" || drop.iter().any(|d| OsStr::new(d) == name) {
                continue;
            }
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)
                .with_context(|| format!("cannot stat {}", path.display()))?;
            let kind = meta.file_type();
            let (mode, oid) = if kind.is_dir() {
                match self.add_dir(&path, &[])? {
                    Some(oid) => (TreeMode::Tree, oid),
                    None => continue,
                }
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path)
                    .with_context(|| format!("cannot read link {}", path.display()))?;
                let bytes = target.as_os_str().as_bytes().to_vec();
                let oid = Oid::hash_object(ObjectType::Blob, &bytes)?;
                self.blobs.push((oid, BlobSource::Symlink(bytes)));
                self.files += 1;
                (TreeMode::Symlink, oid)
            } else if kind.is_file() {
                let oid = Oid::hash_file(ObjectType::Blob, &path)
                    .with_context(|| format!("cannot hash {}", path.display()))?;
                self.blobs.push((oid, BlobSource::File(path.clone())));
                self.files += 1;
                let exec = meta.permissions().mode() & 0o100 != 0;
                (
                    if exec {
                        TreeMode::Executable
                    } else {
                        TreeMode::File
                    },
                    oid,
                )
            } else {
                self.not_storable.push((path, kind_of_special(kind)));
                continue;
            };
            entries.push(TreeEntry {
                name: name.as_bytes().to_vec(),
                mode,
                oid,
            });
        }
        if entries.is_empty() {
            return Ok(None);
        }
        let bytes = serialize_tree(entries);
        let oid = Oid::hash_object(ObjectType::Tree, &bytes)?;
        self.trees.push((oid, bytes));
        Ok(Some(oid))
    }

    /// Writes every object into `odb` (those already there are skipped).
    pub(crate) fn write(&self, odb: &Odb) -> Result<()> {
        for (oid, source) in &self.blobs {
            if odb.exists(*oid) {
                continue;
            }
            let data = match source {
                BlobSource::File(path) => std::fs::read(path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
                BlobSource::Symlink(bytes) => bytes.clone(),
            };
            let written = odb
                .write(ObjectType::Blob, &data)
                .context("cannot write blob")?;
            if written != *oid {
                bail!("a file changed while it was imported (blob {oid} became {written})");
            }
            crate::util::fault::point("store-write:object");
        }
        for (oid, bytes) in &self.trees {
            let written = odb
                .write(ObjectType::Tree, bytes)
                .context("cannot write tree")?;
            debug_assert_eq!(written, *oid);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TreeMode {
    File,
    Executable,
    Symlink,
    Tree,
}

impl TreeMode {
    fn octal(self) -> &'static [u8] {
        match self {
            TreeMode::File => b"100644",
            TreeMode::Executable => b"100755",
            TreeMode::Symlink => b"120000",
            TreeMode::Tree => b"40000",
        }
    }
}

pub(crate) struct TreeEntry {
    pub name: Vec<u8>,
    pub mode: TreeMode,
    pub oid: Oid,
}

/// git's tree format: entries sorted by name, a directory sorting as if its name ended in `/`.
pub(crate) fn serialize_tree(mut entries: Vec<TreeEntry>) -> Vec<u8> {
    let key = |e: &TreeEntry| {
        let mut k = e.name.clone();
        if e.mode == TreeMode::Tree {
            k.push(b'/');
        }
        k
    };
    entries.sort_by_cached_key(key);
    let mut bytes = Vec::new();
    for e in entries {
        bytes.extend_from_slice(e.mode.octal());
        bytes.push(b' ');
        bytes.extend_from_slice(&e.name);
        bytes.push(0);
        bytes.extend_from_slice(e.oid.as_bytes());
    }
    bytes
}
