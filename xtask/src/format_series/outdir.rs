//! Where the mails go. `--out` may name any directory, and a later run replaces an earlier
//! output of the same version; the manifest that says what that output was (`.format-series`)
//! is a file anyone can write, so it is never trusted to say what may be deleted. Every entry
//! it names must be proven to be the command's own before the directory is replaced: a name
//! the command gives its mails, a plain file (not a directory, not a link), whose content is
//! byte for byte what the command wrote there (the manifest records each mail's git blob id,
//! and the content must also read as a mail: its `From <commit>` line and trailer).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::series::TRAILER;
use crate::util::{durable, staging};
use model::Release;

/// The file format-series leaves in each directory it writes: the version and the mails it
/// wrote there, with their blob ids.
const OUTPUT_MARKER: &str = ".format-series";

/// The marker: a line per mail.
const MARKER_LIMIT: model::file::Limit = model::file::Limit {
    bytes: 1 << 20,
    what: "the list of mails format-series wrote",
};

/// Where the mails go, as found before writing.
pub(super) struct OutDir {
    path: PathBuf,
    state: OutState,
}

enum OutState {
    /// Nothing there: the mails are staged beside it and renamed into place.
    Absent,
    /// An empty directory (the user's, perhaps their shell's working directory): written in
    /// place, the marker first, so that an interrupted run leaves a directory the next run
    /// recognises as its own.
    Empty,
    /// A previous output of the same version, proven to be nothing else: replaced whole, in
    /// one swap.
    Previous,
}

impl OutDir {
    /// Refuses a directory that holds anything but a previous output of this `version` that
    /// the command can prove it wrote, and the directory of the `previous` version (the range
    /// diff's input).
    pub(super) fn examine(dir: &Path, version: u32, previous: Option<&Path>) -> Result<OutDir> {
        let path = match dir.canonicalize() {
            Ok(path) => path,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::path::absolute(dir)
                .with_context(|| format!("cannot resolve {}", dir.display()))?,
            Err(e) => return Err(e).with_context(|| format!("cannot resolve {}", dir.display())),
        };
        if let Some(previous) = previous {
            if previous.canonicalize().is_ok_and(|p| p == path) {
                bail!(
                    "--out {} is the --previous directory: the v{version} mails would replace the ones they are compared with; write them elsewhere (the default is target/format-series/v{version})",
                    dir.display()
                );
            }
        }
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(OutDir {
                    path,
                    state: OutState::Absent,
                })
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                bail!("--out {} is not a directory", dir.display())
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        if names.is_empty() {
            return Ok(OutDir {
                path,
                state: OutState::Empty,
            });
        }
        let refuse = |why: String| {
            anyhow::anyhow!(
                "--out {}: {why}; nothing was written or deleted. Name a new or empty directory, or move those files away",
                dir.display()
            )
        };
        let marker_path = path.join(OUTPUT_MARKER);
        let marker = match std::fs::symlink_metadata(&marker_path) {
            Ok(meta) if meta.is_file() => {
                model::file::read_regular_text(&marker_path, MARKER_LIMIT)
                    .with_context(|| format!("cannot read {}", marker_path.display()))?
            }
            Ok(_) => {
                return Err(refuse(format!(
                    "its {OUTPUT_MARKER} is not a plain file, so not one format-series wrote"
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(refuse(format!(
                    "the directory is not empty and is not an output of format-series (it has no {OUTPUT_MARKER}): it holds {}",
                    crate::util::text::listed(&names)
                )))
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", marker_path.display()))
            }
        };
        let (written_version, written) = parse_marker(&marker);
        if written_version != Some(version) {
            let held = written_version.map_or("another version".to_string(), |v| format!("v{v}"));
            return Err(refuse(format!(
                "it holds {held} of the patch set, which a v{version} does not replace"
            )));
        }
        let foreign: Vec<String> = names
            .iter()
            .filter(|n| *n != OUTPUT_MARKER && !written.iter().any(|(w, _)| w == *n))
            .cloned()
            .collect();
        if !foreign.is_empty() {
            return Err(refuse(format!(
                "besides the mails format-series wrote there, it holds {}",
                crate::util::text::listed(&foreign)
            )));
        }
        for (name, blob) in &written {
            if let Some(why) = unproven(&path, name, blob.as_deref())? {
                return Err(refuse(format!(
                    "format-series cannot prove it wrote {name} ({why})"
                )));
            }
        }
        Ok(OutDir {
            path,
            state: OutState::Previous,
        })
    }

    /// Writes the mails and the marker (see [`OutState`]).
    pub(super) fn write(
        &self,
        version: u32,
        release: Release,
        mails: &[(String, String)],
    ) -> Result<()> {
        let mut marker = format!(
            "# Written by `cargo xtask format-series`: a later run of the same version replaces these mails, while each is as written here.\nversion {version}\nrelease {release}\n"
        );
        for (name, text) in mails {
            let _ = writeln!(marker, "mail {name} {}", blob_id(text.as_bytes())?);
        }
        let write_into = |dir: &Path| -> Result<()> {
            durable::write_synced(&dir.join(OUTPUT_MARKER), marker.as_bytes())?;
            for (name, text) in mails {
                durable::write_synced(&dir.join(name), text.as_bytes())?;
            }
            Ok(())
        };
        match self.state {
            OutState::Empty => write_into(&self.path),
            OutState::Absent | OutState::Previous => {
                let parent = self
                    .path
                    .parent()
                    .with_context(|| format!("{} has no parent", self.path.display()))?;
                let staged = staging::tempdir_in(parent, "format-series")?;
                write_into(staged.path())?;
                durable::replace_dir(&staged.keep(), &self.path)
            }
        }
    }
}

/// Why `name` in `dir` is not proven to be the mail the manifest says format-series wrote
/// (`blob`, its recorded id), or `None` when it is.
fn unproven(dir: &Path, name: &str, blob: Option<&str>) -> Result<Option<&'static str>> {
    if !is_mail_name(name) {
        return Ok(Some("not a name it gives its mails"));
    }
    let path = dir.join(name);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        // Listed but gone (an interrupted run writes the marker first): nothing to delete.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if !meta.is_file() {
        return Ok(Some("not a plain file"));
    }
    let Some(blob) = blob else {
        return Ok(Some("the manifest records no content id for it"));
    };
    let edited = "its content is not what format-series wrote there: edited since?";
    // Judged from its first bytes, then read within a patch's size: a file of another kind,
    // or a larger one, is no mail of the command's.
    let content = match crate::series::Head::Mail.read(&path, crate::series::PATCH_LIMIT) {
        Ok(content) => content,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput
            ) =>
        {
            return Ok(Some(edited))
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if blob_id(&content)? != blob || !reads_as_mail(&content) {
        return Ok(Some(edited));
    }
    Ok(None)
}

/// The names format-series gives its mails: `[vN-]NNNN-<slug>.patch`, the slug of letters,
/// digits, `.`, `_` and `-` (so never a path, never `..`).
fn is_mail_name(name: &str) -> bool {
    let rest = match name.strip_prefix('v') {
        Some(rest) => match rest.split_once('-') {
            Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => return false,
        },
        None => name,
    };
    let Some((number, slug)) = rest.split_at_checked(4) else {
        return false;
    };
    let Some(slug) = slug
        .strip_prefix('-')
        .and_then(|s| s.strip_suffix(".patch"))
    else {
        return false;
    };
    number.bytes().all(|b| b.is_ascii_digit())
        && !slug.is_empty()
        && !slug.starts_with('.')
        && slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// A mail as format-series writes one: `From <40 hex digits> Mon Sep 17 00:00:00 2001` first,
/// the trailer last.
fn reads_as_mail(content: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(content) else {
        return false;
    };
    let first = text.lines().next().unwrap_or("");
    let id = first
        .strip_prefix("From ")
        .and_then(|rest| rest.strip_suffix(" Mon Sep 17 00:00:00 2001"));
    id.is_some_and(|id| id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        && text.ends_with(TRAILER)
}

fn blob_id(content: &[u8]) -> Result<String> {
    Ok(git2::Oid::hash_object(git2::ObjectType::Blob, content)
        .context("cannot hash a mail")?
        .to_string())
}

/// The version and the mails (name, recorded blob id) a marker names.
fn parse_marker(text: &str) -> (Option<u32>, Vec<(String, Option<String>)>) {
    let mut version = None;
    let mut mails = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("version ") {
            version = v.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("mail ") {
            let (name, blob) = match rest.split_once(' ') {
                Some((name, blob)) => (name, Some(blob.trim().to_string())),
                None => (rest, None),
            };
            mails.push((name.to_string(), blob));
        }
    }
    (version, mails)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_of_its_mails_are_its_own() {
        for name in [
            "0001-elf-Add-LD_FALLBACK_PATH.patch",
            "v2-0000-cover-letter.patch",
            "v12-0003-manual-Document-LD_FALLBACK_PATH-and-ld.so-fallback.patch",
        ] {
            assert!(is_mail_name(name), "{name}");
        }
        for name in [
            "sub",
            "..",
            "0001-../../x.patch",
            "0001-.patch",
            "0001-x.patch/",
            "001-x.patch",
            "v-0001-x.patch",
            "0001-x.diff",
            "0001-.hidden.patch",
            "keep.c",
        ] {
            assert!(!is_mail_name(name), "{name}");
        }
    }
}
