//! The files the modelled loader sees: a directory tree taken as `/` (a scenario root, or the
//! machine itself), with symlinks resolved inside it as the kernel would resolve them for a
//! process chrooted there. Paths are the loader's: bytes, as it builds them.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use model::file::{read_head, read_regular, Limit};

use super::Bytes;

/// An ELF object (a program, its loader, a library) is read whole. ELF's offsets are 64-bit,
/// so the format sets no bound of use: this one is far above any program or library, and
/// keeps a file that never ends from taking the machine's memory.
pub const ELF_OBJECT: Limit = Limit {
    bytes: 4 << 30,
    what: "an ELF object",
};

/// `ld.so.cache`: its strings are found by 32-bit offsets from the start of the file, so the
/// loader can use no more of it than this.
pub const LD_SO_CACHE: Limit = Limit {
    bytes: 4 << 30,
    what: "an ld.so.cache",
};

/// `ld.so.conf` and the files it includes: a list of directories.
pub const LD_SO_CONF: Limit = Limit {
    bytes: 16 << 20,
    what: "an ld.so.conf file",
};

/// What the loader reads of a file before it checks anything (an ELF header).
const HEAD: Limit = Limit {
    bytes: 64,
    what: "a file the loader verifies",
};

/// Why a path cannot be opened, in the loader's terms (the `errno` it would get).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// ENOENT: the file, or a directory on its way, does not exist.
    Absent,
    /// ENOTDIR: a component on the way is not a directory.
    NotDirectory,
    /// ELOOP: too many symlinks.
    Loop,
    /// EACCES or another error from `open` itself.
    Denied,
}

/// The loader's errno in words, as a message says it.
impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OpenError::Absent => "no such file",
            OpenError::NotDirectory => "a path component is not a directory",
            OpenError::Loop => "too many symlinks",
            OpenError::Denied => "permission denied",
        })
    }
}

/// What `err` from looking a path up is for the loader: the same errno open(2) would give.
fn open_error(err: &io::Error) -> OpenError {
    match err.raw_os_error() {
        Some(20) => OpenError::NotDirectory,
        Some(40) => OpenError::Loop,
        _ if err.kind() == io::ErrorKind::NotFound => OpenError::Absent,
        _ => OpenError::Denied,
    }
}

/// A file the loader could open: what it reads to verify it, and its identity.
#[derive(Debug, Clone)]
pub struct Opened {
    /// Where it is on this machine.
    pub host: PathBuf,
    /// (st_dev, st_ino): the loader reuses a loaded object with the same identity.
    pub id: (u64, u64),
    pub is_dir: bool,
    /// A FIFO, a device or a socket: a file whose `open` or `read` does not simply give
    /// its bytes (explain never opens one).
    pub special: Option<Special>,
    /// The set-user-ID bit (secure mode preloads only such files).
    pub setuid: bool,
}

/// A file that is no regular file or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    Fifo,
    CharDevice,
    BlockDevice,
    Socket,
}

/// The tree the loader runs in.
#[derive(Debug, Clone)]
pub struct Tree {
    root: PathBuf,
}

/// Symlinks followed before the kernel gives up (ELOOP).
const MAX_SYMLINKS: usize = 40;

impl Tree {
    /// The tree under `root` (`/` for this machine).
    pub fn new(root: &Path) -> Tree {
        Tree {
            root: root.to_path_buf(),
        }
    }

    fn is_host(&self) -> bool {
        self.root == Path::new("/")
    }

    /// `path` (absolute, or relative to `cwd`) resolved to a host path, every symlink on the
    /// way followed inside the tree; the last component need not exist.
    pub(crate) fn resolve(&self, path: &[u8], cwd: &[u8]) -> Result<PathBuf, OpenError> {
        let start = if path.starts_with(b"/") {
            path.to_vec()
        } else {
            [cwd, b"/", path].concat()
        };
        if self.is_host() {
            return Ok(PathBuf::from(OsStr::from_bytes(&start)));
        }
        let mut pending: Vec<Vec<u8>> = components(&start)
            .into_iter()
            .rev()
            .map(<[u8]>::to_vec)
            .collect();
        let mut done: Vec<Vec<u8>> = Vec::new();
        let mut links = 0;
        while let Some(part) = pending.pop() {
            match part.as_slice() {
                b"." => continue,
                b".." => {
                    done.pop();
                    continue;
                }
                _ => {}
            }
            let here = self.host_of(&done).join(OsStr::from_bytes(&part));
            match fs::symlink_metadata(&here) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_SYMLINKS {
                        return Err(OpenError::Loop);
                    }
                    let Ok(target) = fs::read_link(&here) else {
                        return Err(OpenError::Denied);
                    };
                    let target = target.into_os_string().into_encoded_bytes();
                    if target.starts_with(b"/") {
                        done.clear();
                    }
                    for part in components(&target).into_iter().rev() {
                        pending.push(part.to_vec());
                    }
                }
                Ok(meta) => {
                    if !pending.is_empty() && !meta.is_dir() {
                        return Err(OpenError::NotDirectory);
                    }
                    done.push(part);
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    if !pending.is_empty() {
                        return Err(OpenError::Absent);
                    }
                    done.push(part);
                }
                // The tree's own root a symlink loop, say: not "permission denied".
                Err(err) => return Err(open_error(&err)),
            }
        }
        Ok(self.host_of(&done))
    }

    fn host_of(&self, parts: &[Vec<u8>]) -> PathBuf {
        let mut path = self.root.clone();
        for part in parts {
            path.push(OsStr::from_bytes(part));
        }
        path
    }

    /// What `open (path, O_RDONLY)` would give the loader.
    pub fn open(&self, path: &[u8], cwd: &[u8]) -> Result<Opened, OpenError> {
        let host = self.resolve(path, cwd)?;
        match fs::metadata(&host) {
            Ok(meta) => {
                use std::os::unix::fs::FileTypeExt;
                let kind = meta.file_type();
                let special = if kind.is_fifo() {
                    Some(Special::Fifo)
                } else if kind.is_char_device() {
                    Some(Special::CharDevice)
                } else if kind.is_block_device() {
                    Some(Special::BlockDevice)
                } else if kind.is_socket() {
                    Some(Special::Socket)
                } else {
                    None
                };
                Ok(Opened {
                    host,
                    id: (meta.dev(), meta.ino()),
                    is_dir: meta.is_dir(),
                    special,
                    setuid: meta.mode() & 0o4000 != 0,
                })
            }
            Err(err) => Err(open_error(&err)),
        }
    }

    /// Whether `path` is a directory (`stat` and `S_ISDIR`, as `open_path` asks).
    pub(crate) fn is_dir(&self, path: &[u8], cwd: &[u8]) -> bool {
        self.resolve(path, cwd)
            .ok()
            .and_then(|host| fs::metadata(host).ok())
            .is_some_and(|meta| meta.is_dir())
    }

    /// The first `limit` bytes of an opened file (what the loader reads to verify it): a
    /// FIFO or a socket is refused, never waited on.
    pub fn head(&self, opened: &Opened, limit: u64) -> anyhow::Result<Vec<u8>> {
        read_head(
            &opened.host,
            Limit {
                bytes: limit,
                ..HEAD
            },
        )
        .with_context(|| format!("cannot read {}", opened.host.display()))
    }

    /// The whole of an opened file, a regular one of at most `limit`.
    pub fn read(&self, opened: &Opened, limit: Limit) -> anyhow::Result<Vec<u8>> {
        read_regular(&opened.host, limit)
            .with_context(|| format!("cannot read {}", opened.host.display()))
    }

    /// `realpath (path)` inside the tree, as the kernel gives `/proc/self/exe`.
    pub(crate) fn canonical(&self, path: &[u8], cwd: &[u8]) -> Option<Bytes> {
        let host = if self.is_host() {
            fs::canonicalize(self.resolve(path, cwd).ok()?).ok()?
        } else {
            self.resolve(path, cwd).ok()?
        };
        fs::metadata(&host).ok()?;
        let inside = host.strip_prefix(&self.root).ok()?;
        Some(Bytes::from("/").join(&[inside.as_os_str().as_bytes()]))
    }

    /// The names in directory `path` of the tree (empty when it is not one).
    pub(crate) fn list(&self, path: &[u8]) -> Vec<Bytes> {
        let Ok(host) = self.resolve(path, b"/") else {
            return Vec::new();
        };
        let Ok(entries) = fs::read_dir(host) else {
            return Vec::new();
        };
        let mut names: Vec<Bytes> = entries
            .flatten()
            .map(|e| Bytes::from(e.file_name()))
            .collect();
        names.sort();
        names
    }
}

/// `/a//b/./c` as `["a", "b", ".", "c"]`: empty components dropped, `.` and `..` kept.
fn components(path: &[u8]) -> Vec<&[u8]> {
    path.split(|&b| b == b'/')
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_resolve_inside_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("store/pkg/lib")).unwrap();
        fs::write(root.join("store/pkg/lib/libx.so"), b"x").unwrap();
        fs::create_dir_all(root.join("run/driver")).unwrap();
        // An absolute link means the tree's /, not the machine's.
        symlink("/store/pkg/lib/libx.so", root.join("run/driver/libx.so")).unwrap();
        symlink("../store/pkg", root.join("run/pkg")).unwrap();
        let tree = Tree::new(root);
        let opened = tree.open(b"/run/driver/libx.so", b"/").unwrap();
        assert_eq!(opened.host, root.join("store/pkg/lib/libx.so"));
        assert!(tree.open(b"/run/pkg/lib/libx.so", b"/").is_ok());
        assert_eq!(
            tree.canonical(b"/run/driver/libx.so", b"/").unwrap(),
            "/store/pkg/lib/libx.so"
        );
        assert_eq!(
            tree.open(b"/run/nothing/libx.so", b"/").unwrap_err(),
            OpenError::Absent
        );
        assert_eq!(
            tree.open(b"/store/pkg/lib/libx.so/libx.so", b"/")
                .unwrap_err(),
            OpenError::NotDirectory
        );
        symlink("loop", root.join("loop")).unwrap();
        assert_eq!(tree.open(b"/loop", b"/").unwrap_err(), OpenError::Loop);
        assert!(tree.is_dir(b"/run/pkg", b"/"));
        assert!(!tree.is_dir(b"/run/driver/libx.so", b"/"));
    }
}
