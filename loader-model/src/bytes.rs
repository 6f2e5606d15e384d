//! A string as the loader has it: bytes. A DT_NEEDED entry, a RUNPATH, a file name in a
//! directory and an environment list are whatever bytes they hold, UTF-8 or not, and the
//! loader compares and concatenates them as bytes; so does the model, from the ELF file to
//! the output. Only printing escapes them ([`model::printable_bytes`]: a control character as
//! `\n`, a byte outside UTF-8 as `\xff`), the JSON form included; nothing is decoded lossily,
//! so `lib\xe9foo.so` never becomes the different name `lib\u{fffd}foo.so`.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use serde::Serialize;

/// Bytes the loader treats as a string (a name, a path, a directory list).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(Vec<u8>);

impl Bytes {
    pub fn new() -> Bytes {
        Bytes(Vec::new())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_vec(self) -> Vec<u8> {
        self.0
    }

    /// The bytes as a path of this machine.
    pub fn as_os_str(&self) -> &OsStr {
        OsStr::from_bytes(&self.0)
    }

    /// The text, when the bytes are UTF-8.
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// As printed: control characters and bytes outside UTF-8 escaped.
    pub fn printable(&self) -> Cow<'_, str> {
        model::printable_bytes(&self.0)
    }

    /// `self` followed by each of `more`.
    pub fn join(&self, more: &[&[u8]]) -> Bytes {
        let mut out = self.0.clone();
        for part in more {
            out.extend_from_slice(part);
        }
        Bytes(out)
    }

    pub fn push(&mut self, more: &[u8]) {
        self.0.extend_from_slice(more);
    }

    /// Where `needle` first occurs.
    pub fn find(&self, needle: &[u8]) -> Option<usize> {
        find(&self.0, needle)
    }

    /// Whether `needle` occurs anywhere.
    pub fn contains_bytes(&self, needle: &[u8]) -> bool {
        self.find(needle).is_some()
    }
}

/// Where `needle` first occurs in `haystack`.
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Looked up by its bytes (a map keyed by names takes `&[u8]`).
impl std::borrow::Borrow<[u8]> for Bytes {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<OsStr> for Bytes {
    fn as_ref(&self) -> &OsStr {
        self.as_os_str()
    }
}

/// Printed escaped, as every value from outside is.
impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.printable())
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{}\"", self.printable())
    }
}

/// A JSON string, escaped as the text is (`\xff` for a byte outside UTF-8): JSON strings are
/// Unicode, and the escape keeps two different names apart.
impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.printable())
    }
}

impl From<&str> for Bytes {
    fn from(text: &str) -> Bytes {
        Bytes(text.as_bytes().to_vec())
    }
}

impl From<String> for Bytes {
    fn from(text: String) -> Bytes {
        Bytes(text.into_bytes())
    }
}

impl From<&String> for Bytes {
    fn from(text: &String) -> Bytes {
        Bytes(text.as_bytes().to_vec())
    }
}

impl From<&[u8]> for Bytes {
    fn from(bytes: &[u8]) -> Bytes {
        Bytes(bytes.to_vec())
    }
}

impl<const N: usize> From<&[u8; N]> for Bytes {
    fn from(bytes: &[u8; N]) -> Bytes {
        Bytes(bytes.to_vec())
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(bytes: Vec<u8>) -> Bytes {
        Bytes(bytes)
    }
}

impl From<OsString> for Bytes {
    fn from(text: OsString) -> Bytes {
        Bytes(text.into_vec())
    }
}

impl From<&OsStr> for Bytes {
    fn from(text: &OsStr) -> Bytes {
        Bytes(text.as_bytes().to_vec())
    }
}

impl From<Bytes> for OsString {
    fn from(bytes: Bytes) -> OsString {
        OsString::from_vec(bytes.0)
    }
}

impl PartialEq<str> for Bytes {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for Bytes {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<[u8]> for Bytes {
    fn eq(&self, other: &[u8]) -> bool {
        self.0 == other
    }
}

impl PartialEq<Bytes> for &str {
    fn eq(&self, other: &Bytes) -> bool {
        self.as_bytes() == other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A byte outside UTF-8 stays itself inside, and is escaped only where it is shown.
    #[test]
    fn bytes_stay_bytes_until_printed() {
        let name = Bytes::from(&b"lib\xe9foo.so"[..]);
        assert_eq!(name.as_bytes(), b"lib\xe9foo.so");
        assert_ne!(name, Bytes::from("lib\u{fffd}foo.so"));
        assert_eq!(name.to_string(), "lib\\xe9foo.so");
        assert_eq!(
            serde_json::to_string(&name).unwrap(),
            "\"lib\\\\xe9foo.so\""
        );
        assert_eq!(format!("{:?}", Bytes::from("a\nb")), "\"a\\nb\"");
        assert_eq!(name.find(b"foo"), Some(4));
        assert_eq!(Bytes::from("/x").join(&[b"/", b"y"]), "/x/y");
    }
}
