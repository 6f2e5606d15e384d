//! Reading a file someone named (a program, a patch, a record, a cache), whole but bounded,
//! for `explain` and `cargo xtask` alike. A path can lead to a FIFO, whose `open` waits for a
//! writer and whose reads may never end, or to a device such as `/dev/zero`, which never
//! ends: [`read_regular`] refuses both before reading a byte (`stat` first, so that it never
//! opens a device, whose opening alone can act; then `open` without blocking and `fstat`, so
//! that a FIFO swapped in between is refused too), and stops at the size the file's format
//! can hold, so that a regular file that keeps growing cannot take the machine's memory.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most a kind of file can hold, and what the kind is called in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// What the file is, as a message names it: "an ELF object", "a patch".
    pub what: &'static str,
}

impl Limit {
    /// `bytes` written for a person: `64 MiB`, `4 GiB`, `1000 bytes`.
    fn size(self) -> String {
        const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        UNITS
            .iter()
            .find(|(unit, _)| self.bytes >= *unit && self.bytes.is_multiple_of(*unit))
            .map_or_else(
                || format!("{} bytes", self.bytes),
                |(unit, name)| format!("{} {name}", self.bytes / unit),
            )
    }
}

/// The whole of `path`, a regular file (symlinks followed) of at most `limit.bytes`; any
/// other kind of file (a FIFO, a device, a socket, a directory), and a file larger than the
/// limit, is an error that says which and what the limit is (the caller names the file).
pub fn read_regular(path: &Path, limit: Limit) -> io::Result<Vec<u8>> {
    not_special(&std::fs::metadata(path)?, limit)?;
    let mut file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    not_special(&meta, limit)?;
    let mut bytes = Vec::with_capacity(meta.len().min(limit.bytes) as usize);
    // One byte past the limit tells a file at the limit from a larger one.
    (&mut file).take(limit.bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit.bytes {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// A regular file opened as [`read_regular`] opens it (its kind and size checked before a
/// byte is read), to be judged from its first bytes before the rest is read: a 4 GiB file
/// that is not of the kind expected costs one short read, not 4 GiB.
#[derive(Debug)]
pub struct Regular {
    file: File,
    limit: Limit,
}

impl Regular {
    /// `path` opened for reading, when it is a regular file (symlinks followed) within
    /// `limit`; else the error `read_regular` gives.
    pub fn open(path: &Path, limit: Limit) -> io::Result<Regular> {
        not_special(&std::fs::metadata(path)?, limit)?;
        let file = open_nonblocking(path)?;
        not_special(&file.metadata()?, limit)?;
        Ok(Regular { file, limit })
    }

    /// Its first `bytes` (fewer when it is shorter).
    pub fn head(&mut self, bytes: u64) -> io::Result<Vec<u8>> {
        let mut head = Vec::new();
        (&self.file).take(bytes).read_to_end(&mut head)?;
        Ok(head)
    }

    /// Everything after the `head` already read, appended to it: the whole file, within
    /// its limit.
    pub fn rest(self, mut head: Vec<u8>) -> io::Result<Vec<u8>> {
        let left = (self.limit.bytes + 1).saturating_sub(head.len() as u64);
        (&self.file).take(left).read_to_end(&mut head)?;
        if head.len() as u64 > self.limit.bytes {
            return Err(too_large(self.limit));
        }
        Ok(head)
    }
}

/// The metadata of `path` when it is a regular file (symlinks followed); else the error
/// [`read_regular`] gives, naming the kind of file it is and `what` (a file read in another
/// way, a tarball streamed to a decompressor, say).
pub fn regular(path: &Path, what: &str) -> io::Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(&meta, what));
    }
    Ok(meta)
}

/// [`read_regular`] as UTF-8 text (a byte that is not UTF-8 is an error of kind
/// `InvalidData`).
pub fn read_regular_text(path: &Path, limit: Limit) -> io::Result<String> {
    String::from_utf8(read_regular(path, limit)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// The first `limit.bytes` of `path` (what a loader reads to verify a file): a regular file
/// or a device (the loader reads whatever `open` gives it, so the first bytes are what it
/// sees), never a FIFO or a socket, whose `open` would wait or fail and whose bytes are not
/// the file's.
pub fn read_head(path: &Path, limit: Limit) -> io::Result<Vec<u8>> {
    let kind_ok = |meta: &std::fs::Metadata| {
        let kind = meta.file_type();
        if kind.is_fifo() || kind.is_socket() {
            Err(not_regular(meta, limit.what))
        } else {
            Ok(())
        }
    };
    kind_ok(&std::fs::metadata(path)?)?;
    let file = open_nonblocking(path)?;
    kind_ok(&file.metadata()?)?;
    let mut bytes = Vec::new();
    file.take(limit.bytes).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `open (path, O_RDONLY | O_NONBLOCK)`: a FIFO opens at once instead of waiting for a
/// writer (and is then refused by its `fstat`); a regular file reads as without the flag.
fn open_nonblocking(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

fn not_special(meta: &std::fs::Metadata, limit: Limit) -> io::Result<()> {
    if !meta.is_file() {
        return Err(not_regular(meta, limit.what));
    }
    if meta.len() > limit.bytes {
        return Err(too_large(limit));
    }
    Ok(())
}

fn not_regular(meta: &std::fs::Metadata, what_is_read: &str) -> io::Error {
    let kind = meta.file_type();
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (a named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "it is {what}, not a regular file ({what_is_read} is read from a regular file only)"
        ),
    )
}

fn too_large(limit: Limit) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "it is larger than {}, the most {} can hold here",
            limit.size(),
            limit.what
        ),
    )
}

/// What to say when a write outgrew this process's file size limit (`EFBIG`): the limit named,
/// with its value where it has one, and what to do. `explain` and `cargo xtask` say it alike.
pub fn size_limit_outgrown() -> String {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let now = if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } == 0
        && limit.rlim_cur != libc::RLIM_INFINITY
    {
        format!(", now {} bytes", limit.rlim_cur)
    } else {
        String::new()
    };
    format!("a file outgrew the file size limit (`ulimit -f`{now}) of this process: raise it and run the command again")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const SMALL: Limit = Limit {
        bytes: 16,
        what: "a test file",
    };

    #[test]
    fn a_regular_file_within_its_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"sixteen bytes!!!").unwrap();
        assert_eq!(read_regular(&path, SMALL).unwrap(), b"sixteen bytes!!!");
        std::fs::write(&path, b"seventeen bytes!!").unwrap();
        assert_eq!(
            read_regular(&path, SMALL).unwrap_err().to_string(),
            "it is larger than 16 bytes, the most a test file can hold here"
        );
        assert_eq!(read_head(&path, SMALL).unwrap(), b"seventeen bytes!");
    }

    /// A FIFO nobody writes and a device that never ends are refused at once: `read_regular`
    /// neither waits for a writer nor reads `/dev/zero` until memory runs out.
    /// The head first, then the rest only when asked: a file is judged before it is read.
    #[test]
    fn a_regular_file_is_read_head_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"sixteen bytes!!!").unwrap();
        let mut file = Regular::open(&path, SMALL).unwrap();
        let head = file.head(7).unwrap();
        assert_eq!(head, b"sixteen");
        assert_eq!(file.rest(head).unwrap(), b"sixteen bytes!!!");
        // A file that grew past its limit after it was opened: refused as read_regular does.
        let mut file = Regular::open(&path, SMALL).unwrap();
        std::fs::write(&path, b"seventeen bytes!!").unwrap();
        let head = file.head(4).unwrap();
        assert_eq!(
            file.rest(head).unwrap_err().to_string(),
            "it is larger than 16 bytes, the most a test file can hold here"
        );
        assert!(Regular::open(Path::new("/dev/zero"), SMALL).is_err());
    }

    #[test]
    fn a_fifo_and_a_device_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let start = Instant::now();
        assert_eq!(
            read_regular(&fifo, SMALL).unwrap_err().to_string(),
            "it is a FIFO (a named pipe), not a regular file (a test file is read from a regular file only)"
        );
        assert!(read_head(&fifo, SMALL).is_err());
        assert_eq!(
            read_regular(Path::new("/dev/zero"), SMALL)
                .unwrap_err()
                .to_string(),
            "it is a character device, not a regular file (a test file is read from a regular file only)"
        );
        assert_eq!(
            read_regular(dir.path(), SMALL).unwrap_err().to_string(),
            "it is a directory, not a regular file (a test file is read from a regular file only)"
        );
        assert!(start.elapsed() < Duration::from_secs(1));
        // The loader reads a device's first bytes, as the model must.
        assert_eq!(
            read_head(Path::new("/dev/zero"), SMALL).unwrap(),
            [0; 16].to_vec()
        );
    }
}
