//! A private apt: its own sources entry, index, cache and (empty) dpkg status under one
//! directory, so that fetching Debian packages (glibc's sources for the store, NVIDIA's
//! libraries for the real-binary scenarios) neither reads nor changes the system's apt state.
//!
//! The mirror is the machine's own, read at run time from apt's own source lists: the deb822
//! files `/etc/apt/sources.list.d/*.sources` (Debian 12's default) and the one-line-style
//! `/etc/apt/sources.list` and `sources.list.d/*.list` (what debootstrap, mmdebstrap and older
//! installs write), or from `$LD_FALLBACK_APT_SOURCES`, a directory of such files, for tests.
//! No mirror host is written into the project.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};

/// Where the machine's source parts live (deb822 `.sources` and one-line `.list` files).
pub(crate) const SYSTEM_SOURCES: &str = "/etc/apt/sources.list.d";
/// The machine's main one-line source list, read before the parts (as apt does).
const SYSTEM_LIST: &str = "/etc/apt/sources.list";

/// One stanza of the machine's sources: its first URI and keyring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    pub uri: String,
    pub signed_by: Option<String>,
}

impl Mirror {
    /// The security archive has suites of its own (`bookworm-security`).
    pub(crate) fn is_security(&self) -> bool {
        self.uri.contains("security")
    }

    /// A deb822 stanza for this mirror.
    pub fn stanza(&self, types: &str, suites: &str, components: &str) -> String {
        let mut entry = format!(
            "Types: {types}\nURIs: {}\nSuites: {suites}\nComponents: {components}\n",
            self.uri
        );
        if let Some(keyring) = &self.signed_by {
            entry.push_str(&format!("Signed-By: {keyring}\n"));
        }
        entry
    }
}

/// The directory of source files the mirrors are read from: `$LD_FALLBACK_APT_SOURCES` when
/// set (a test's own mirror, say one that refuses connections), else the machine's parts.
pub(crate) fn sources_dir() -> PathBuf {
    crate::host::non_empty_env("LD_FALLBACK_APT_SOURCES")
        .unwrap_or_else(|| PathBuf::from(SYSTEM_SOURCES))
}

/// What the mirrors are read from, for messages: the files [`system_mirrors`] looks at.
pub(crate) fn sources_described() -> String {
    let dir = sources_dir();
    match crate::host::non_empty_env("LD_FALLBACK_APT_SOURCES") {
        Some(_) => format!("{}/*.sources or *.list", dir.display()),
        None => format!("{SYSTEM_LIST} or {}/*.sources or *.list", dir.display()),
    }
}

/// Every mirror of the machine's sources (see [`sources_dir`]; without
/// `$LD_FALLBACK_APT_SOURCES`, `/etc/apt/sources.list` first), in file order, without repeats.
pub(crate) fn system_mirrors() -> Result<Vec<Mirror>> {
    let dir = sources_dir();
    let dir = dir.as_path();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sources" || e == "list"))
        .collect();
    files.sort();
    if crate::host::non_empty_env("LD_FALLBACK_APT_SOURCES").is_none() {
        files.insert(0, PathBuf::from(SYSTEM_LIST));
    }
    let mut mirrors: Vec<Mirror> = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            // sources.list is optional: Debian 12's own installs have only the parts.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && file.ends_with(SYSTEM_LIST) => {
                continue
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        let found = match file.extension().is_some_and(|e| e == "sources") {
            true => mirrors_in(&text),
            false => mirrors_in_one_line_style(&text),
        };
        for mirror in found {
            if !mirrors.contains(&mirror) {
                mirrors.push(mirror);
            }
        }
    }
    Ok(mirrors)
}

/// The first Debian mirror of the machine that is not the security archive.
pub fn system_mirror() -> Result<Mirror> {
    match system_mirrors()?.into_iter().find(|m| !m.is_security()) {
        Some(mirror) => Ok(mirror),
        None => bail!("no Debian mirror found in {}", sources_described()),
    }
}

/// The mirrors of a one-line-style list (`deb [signed-by=/k.gpg arch=amd64] URI suite
/// components...`): each `deb` or `deb-src` line's URI and its `signed-by` option.
pub(crate) fn mirrors_in_one_line_style(text: &str) -> Vec<Mirror> {
    let mut mirrors = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        let Some(rest) = line
            .strip_prefix("deb-src ")
            .or_else(|| line.strip_prefix("deb "))
        else {
            continue;
        };
        let rest = rest.trim_start();
        let (options, rest) = match rest.strip_prefix('[') {
            Some(inside) => match inside.split_once(']') {
                Some((options, rest)) => (options, rest),
                None => continue,
            },
            None => ("", rest),
        };
        let Some(uri) = rest.split_whitespace().next() else {
            continue;
        };
        let signed_by = options
            .split_whitespace()
            .find_map(|o| o.strip_prefix("signed-by="))
            .map(str::to_string);
        let mirror = Mirror {
            uri: uri.to_string(),
            signed_by,
        };
        if !mirrors.contains(&mirror) {
            mirrors.push(mirror);
        }
    }
    mirrors
}

/// The mirrors of one deb822 file: each stanza's first URI and its `Signed-By`.
pub(crate) fn mirrors_in(text: &str) -> Vec<Mirror> {
    let mut mirrors = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        let Some(uri) = field("URIs:").and_then(|u| u.split_whitespace().next().map(String::from))
        else {
            continue;
        };
        mirrors.push(Mirror {
            uri,
            signed_by: field("Signed-By:"),
        });
    }
    mirrors
}

/// apt-get with every state directory under `root`.
#[derive(Debug, Clone)]
pub struct PrivateApt {
    root: PathBuf,
    /// `APT::Architecture` for binary packages of another architecture (`arm64`).
    architecture: Option<String>,
}

impl PrivateApt {
    /// Sets up `root` with `sources` (deb822 stanzas) as the only source entry.
    pub fn new(root: &Path, sources: &str, architecture: Option<&str>) -> Result<PrivateApt> {
        for dir in ["parts", "lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(root.join(dir))
                .with_context(|| format!("cannot create {}", root.join(dir).display()))?;
        }
        std::fs::write(root.join("parts/private.sources"), sources)
            .context("cannot write the private apt source entry")?;
        // An empty dpkg status: nothing installed, so the system's packages play no part.
        let status = root.join("status");
        if !status.exists() {
            std::fs::write(&status, "")
                .with_context(|| format!("cannot create {}", status.display()))?;
        }
        Ok(PrivateApt {
            root: root.to_path_buf(),
            architecture: architecture.map(str::to_string),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `apt-get -o ...` pointing every state and configuration path into the private root.
    pub fn command(&self) -> Command {
        self.command_of("apt-get")
    }

    /// `apt-cache` with the same options: what the private index lists.
    pub fn cache_command(&self) -> Command {
        self.command_of("apt-cache")
    }

    fn command_of(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        let root = &self.root;
        let mut options = vec![
            "Dir::Etc::SourceList=/dev/null".to_string(),
            format!("Dir::Etc::SourceParts={}", root.join("parts").display()),
            "Dir::Etc::Preferences=/dev/null".to_string(),
            format!(
                "Dir::Etc::PreferencesParts={}",
                root.join("parts").display()
            ),
            format!("Dir::State::Lists={}", root.join("lists").display()),
            format!("Dir::State::status={}", root.join("status").display()),
            format!("Dir::Cache={}", root.join("cache").display()),
        ];
        if let Some(arch) = &self.architecture {
            options.push(format!("APT::Architecture={arch}"));
            options.push(format!("APT::Architectures::={arch}"));
        }
        for option in options {
            cmd.arg("-o").arg(option);
        }
        cmd
    }

    /// Whether the index is missing or older than `max_age`.
    pub fn index_is_stale(&self, max_age: Duration) -> bool {
        let newest = std::fs::read_dir(self.root.join("lists"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("_dists_"))
            .filter_map(|e| e.metadata().ok()?.modified().ok())
            .max();
        match newest {
            Some(time) => SystemTime::now().duration_since(time).unwrap_or_default() > max_age,
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_keep_file_order_and_the_security_archive_is_told_apart() {
        let text = "Types: deb\nURIs: http://sec.example.invalid/debian-security\nSuites: bookworm-security\n\n\
                    Types: deb\nURIs: http://mirror.example.invalid/debian\nSuites: bookworm\nSigned-By: /k.gpg\n";
        let mirrors = mirrors_in(text);
        assert_eq!(mirrors.len(), 2);
        assert!(mirrors[0].is_security());
        assert_eq!(
            mirrors[1],
            Mirror {
                uri: "http://mirror.example.invalid/debian".into(),
                signed_by: Some("/k.gpg".into())
            }
        );
        assert_eq!(
            mirrors[1].stanza("deb-src", "bookworm", "main"),
            "Types: deb-src\nURIs: http://mirror.example.invalid/debian\nSuites: bookworm\nComponents: main\nSigned-By: /k.gpg\n"
        );
    }

    /// What debootstrap and mmdebstrap write (a fresh Debian 12 root made by them has no
    /// deb822 file at all), and the options a hand-made list may carry.
    #[test]
    fn a_one_line_style_list_gives_the_same_mirrors() {
        let text = "# comment\ndeb http://mirror.example.invalid/debian bookworm main\n\
                    deb http://mirror.example.invalid/debian bookworm-updates main\n\
                    deb-src [arch=amd64 signed-by=/k.gpg] http://other.example.invalid/debian bookworm main # note\n\
                    deb http://sec.example.invalid/debian-security bookworm-security main\n\
                    deb [broken http://x.example.invalid bookworm main\n";
        let mirrors = mirrors_in_one_line_style(text);
        assert_eq!(
            mirrors,
            vec![
                Mirror {
                    uri: "http://mirror.example.invalid/debian".into(),
                    signed_by: None
                },
                Mirror {
                    uri: "http://other.example.invalid/debian".into(),
                    signed_by: Some("/k.gpg".into())
                },
                Mirror {
                    uri: "http://sec.example.invalid/debian-security".into(),
                    signed_by: None
                },
            ]
        );
        assert!(mirrors[2].is_security());
    }
}
