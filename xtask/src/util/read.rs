//! A file of a known format read judged by its first bytes: a file as large as its format's
//! limit (64 MiB for a patch) that is not of the format at all is refused from its head,
//! before the rest is read. Kinds of file that never end (a FIFO, a device) are refused before
//! anything is opened, as `model::file` refuses them.

use std::io;
use std::path::Path;

use model::file::Limit;

/// The whole of `path` (a regular file of at most `limit`), once `judge` passed its first
/// `head` bytes (fewer where the file is shorter); `judge` says what is wrong with them
/// otherwise, which is the error (of kind `InvalidData`, as a file too large is).
pub(crate) fn judged(
    path: &Path,
    limit: Limit,
    head: u64,
    judge: impl FnOnce(&[u8]) -> Result<(), String>,
) -> io::Result<Vec<u8>> {
    let meta = model::file::regular(path, limit.what)?;
    // Larger than the limit: read_regular says so without reading.
    if meta.len() <= limit.bytes {
        let first = model::file::read_head(
            path,
            Limit {
                bytes: head,
                what: limit.what,
            },
        )?;
        judge(&first).map_err(|why| io::Error::new(io::ErrorKind::InvalidData, why))?;
    }
    model::file::read_regular(path, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: Limit = Limit {
        bytes: 1 << 20,
        what: "a test file",
    };

    fn starts_with_hello(head: &[u8]) -> Result<(), String> {
        match head.starts_with(b"hello") {
            true => Ok(()),
            false => Err("it does not start with hello".to_string()),
        }
    }

    /// A file of the limit's size that is not of the format is refused from its head: here
    /// the rest of it could not be read at all.
    #[test]
    fn the_head_decides_before_the_rest_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "hello, world").unwrap();
        assert_eq!(
            judged(&path, TEXT, 5, starts_with_hello).unwrap(),
            b"hello, world"
        );
        std::fs::write(&path, "goodbye").unwrap();
        let err = judged(&path, TEXT, 5, starts_with_hello).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(err.to_string(), "it does not start with hello");
        let err = judged(Path::new("/dev/zero"), TEXT, 5, starts_with_hello).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is a character device, not a regular file (a test file is read from a regular file only)"
        );
    }
}
