//! Where a release's files come from, and how they become one deterministic git tree.
//!
//! Every source ends up here: a directory of extracted files (Debian or other tarball) or an
//! upstream tag's tree (git). The stored tree of every release is the upstream tag minus
//! `manual/`, whatever the source: Debian's orig tarballs drop `manual/` for licensing, so git
//! imports (and any tarball that has it) drop it too, and all sources agree on one tree id.

pub mod debian;
pub(crate) mod git;
pub(crate) mod tarball;

use std::path::PathBuf;

use anyhow::{bail, Result};

/// The directory every stored tree leaves out (see the module docs).
pub(crate) const DROPPED_TOP_LEVEL: &str = "manual";

/// Where `cargo xtask store import` takes a release from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Debian's `glibc_X.Y.orig.tar.xz`, downloaded through apt (kept in the downloads dir).
    Debian,
    /// A release tarball on disk (any compression `tar` understands).
    Tarball(PathBuf),
    /// An upstream glibc git repository (URL or path) holding the tag `glibc-X.Y`.
    Git(String),
}

impl Source {
    /// Where the files come from, for messages: `Debian`, `tarball PATH`, `git URL`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Source::Debian => "Debian".to_string(),
            Source::Tarball(path) => format!("tarball {}", path.display()),
            Source::Git(url) => format!("git {url}"),
        }
    }

    /// Parses `debian`, `tarball:<path>` or `git:<url-or-path>`.
    pub(crate) fn parse(text: &str) -> Result<Source> {
        if text == "debian" {
            return Ok(Source::Debian);
        }
        if let Some(path) = text.strip_prefix("tarball:") {
            return Ok(Source::Tarball(PathBuf::from(path)));
        }
        if let Some(url) = text.strip_prefix("git:") {
            return Ok(Source::Git(url.to_string()));
        }
        bail!(
            "unknown import source `{text}`; use `debian`, `tarball:<path>` or `git:<url-or-path>`"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_parses_all_forms() {
        assert_eq!(Source::parse("debian").unwrap(), Source::Debian);
        assert_eq!(
            Source::parse("tarball:/x/y.tar.xz").unwrap(),
            Source::Tarball("/x/y.tar.xz".into())
        );
        assert_eq!(
            Source::parse("git:https://example.invalid/glibc.git").unwrap(),
            Source::Git("https://example.invalid/glibc.git".into())
        );
        assert!(Source::parse("ftp:x").is_err());
    }
}
