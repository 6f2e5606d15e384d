//! Published glibc builds: one directory per cache key, `<name>/sysroot` plus `<name>/MANIFEST`.
//!
//! A build is staged in a hidden sibling directory and renamed into place only after its
//! MANIFEST is written, so a directory without a MANIFEST is never a finished build: it is
//! ignored by lookups and removed by the next build of the same key.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use model::{Flavour, Release, Target};

use super::recipe;
use crate::util::clock::now_secs;
use crate::util::lock::{self, FileLock};

const MANIFEST: &str = "MANIFEST";
const SYSROOT: &str = "sysroot";

/// Everything that changes an installed glibc. Two builds with equal inputs are interchangeable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyInputs {
    pub release: Release,
    /// The git tree id of the release's pristine sources.
    pub tree_id: String,
    /// The patch series' content id; `None` for an unpatched build.
    pub series_id: Option<String>,
    /// Patched, unpatched, or a variant (whose patches are in `series_id` too).
    pub flavour: Flavour,
    pub target: Target,
    pub configure_flags: Vec<String>,
    pub environment: Vec<(String, String)>,
    /// `$CC --version`'s first line.
    pub compiler: String,
    pub recipe: u32,
}

impl KeyInputs {
    /// The canonical text the key hashes; also kept in the MANIFEST for `--list` and debugging.
    pub(crate) fn text(&self) -> String {
        let mut text = format!(
            "recipe {}\nrelease {}\ntree {}\nseries {}\ntarget {}\ncompiler {}\n",
            self.recipe,
            self.release,
            self.tree_id,
            self.series_id.as_deref().unwrap_or("unpatched"),
            self.target.name(),
            self.compiler,
        );
        // Only variants add a line: the keys of patched and unpatched builds stay as they were.
        if let Some(variant) = self.flavour.variant() {
            text.push_str(&format!("variant {variant}\n"));
        }
        for flag in &self.configure_flags {
            text.push_str(&format!("configure {flag}\n"));
        }
        for (var, value) in &self.environment {
            text.push_str(&format!("env {var}={value}\n"));
        }
        text
    }

    pub(crate) fn key(&self) -> String {
        git2::Oid::hash_object(git2::ObjectType::Blob, self.text().as_bytes())
            .expect("hashing a buffer cannot fail")
            .to_string()
    }

    /// `glibc 2.44 x86_64 patched`: how progress lines name the build (with a configure
    /// flag that only changes the tests, `--enable-hardcoded-path-in-tests`, after it).
    pub(crate) fn label(&self) -> String {
        let mut label = format!(
            "glibc {} {} {}",
            self.release,
            self.target.name(),
            self.flavour
        );
        for flag in &self.configure_flags {
            if recipe::Configuration::HardcodedPathInTests.flag() == Some(flag.as_str()) {
                label.push_str(&format!(" ({flag})"));
            }
        }
        label
    }

    /// The entry's directory name: readable, and unique per key.
    pub(crate) fn entry_name(&self) -> String {
        format!(
            "{}-{}-{}-{}",
            self.release,
            self.target.name(),
            self.flavour,
            &self.key()[..16]
        )
    }
}

/// What a published build records about itself; written last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub release: Release,
    pub target: Target,
    pub flavour: Flavour,
    pub key: String,
    /// Seconds since the epoch.
    pub created: u64,
    pub build_seconds: u64,
    pub log: PathBuf,
    pub inputs: String,
}

impl Manifest {
    pub(crate) fn new(inputs: &KeyInputs, build_seconds: u64, log: &Path) -> Manifest {
        Manifest {
            release: inputs.release,
            target: inputs.target,
            flavour: inputs.flavour,
            key: inputs.key(),
            created: now_secs(),
            build_seconds,
            log: log.to_path_buf(),
            inputs: inputs.text(),
        }
    }

    fn render(&self) -> String {
        format!(
            "release: {}\ntarget: {}\nflavour: {}\nkey: {}\ncreated: {}\nbuild-seconds: {}\nlog: {}\n\n{}",
            self.release,
            self.target,
            self.flavour,
            self.key,
            self.created,
            self.build_seconds,
            self.log.display(),
            self.inputs
        )
    }

    fn parse(text: &str) -> Result<Manifest> {
        let (head, inputs) = text.split_once("\n\n").context("manifest has no inputs")?;
        let fields: BTreeMap<&str, &str> = head
            .lines()
            .filter_map(|line| line.split_once(": "))
            .collect();
        let field = |name: &str| {
            fields
                .get(name)
                .map(|v| v.to_string())
                .with_context(|| format!("manifest lacks `{name}`"))
        };
        let target = field("target")?;
        let flavour = field("flavour")?;
        Ok(Manifest {
            release: Release::parse(&field("release")?)?,
            target: Target::parse(&target).with_context(|| format!("unknown target `{target}`"))?,
            flavour: Flavour::parse(&flavour)
                .with_context(|| format!("unknown flavour `{flavour}`"))?,
            key: field("key")?,
            created: field("created")?.parse().context("bad `created`")?,
            build_seconds: field("build-seconds")?
                .parse()
                .context("bad `build-seconds`")?,
            log: field("log")?.into(),
            inputs: inputs.to_string(),
        })
    }
}

/// A published build.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl Entry {
    pub(crate) fn sysroot(&self) -> PathBuf {
        self.dir.join(SYSROOT)
    }

    fn read(dir: &Path) -> Option<Entry> {
        let text = fs::read_to_string(dir.join(MANIFEST)).ok()?;
        let manifest = Manifest::parse(&text).ok()?;
        Some(Entry {
            dir: dir.to_path_buf(),
            manifest,
        })
    }
}

/// The directory of published builds (`paths::builds_dir()` unless a bench or test says).
#[derive(Debug, Clone)]
pub(crate) struct BuildCache {
    root: PathBuf,
}

impl BuildCache {
    pub(crate) fn new(root: impl Into<PathBuf>) -> BuildCache {
        BuildCache { root: root.into() }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The finished build called `name`, if any; needs no lock because publishing is a rename.
    pub(crate) fn lookup(&self, name: &str) -> Option<Entry> {
        Entry::read(&self.root.join(name))
    }

    /// The per-key lock: one build (or prune) of a key at a time.
    pub(crate) fn lock(&self, name: &str) -> Result<FileLock> {
        lock::acquire(&self.lock_path(name), &format!("the build lock of {name}"))
    }

    fn lock_path(&self, name: &str) -> PathBuf {
        self.root.join(".locks").join(format!("{name}.lock"))
    }

    /// A fresh staging directory for `name`, clearing what killed builds of it left behind.
    /// The caller holds `lock(name)`.
    pub(crate) fn stage(&self, name: &str) -> Result<Staging> {
        fs::create_dir_all(&self.root)
            .with_context(|| format!("cannot create {}", self.root.display()))?;
        self.remove_leftovers(name)?;
        let final_dir = self.root.join(name);
        if final_dir.exists() && Entry::read(&final_dir).is_none() {
            remove_dir(&final_dir)?;
        }
        let dir = self
            .root
            .join(format!(".tmp-{name}-{}", std::process::id()));
        fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Staging {
            dir,
            final_dir,
            published: false,
        })
    }

    fn remove_leftovers(&self, name: &str) -> Result<()> {
        let tmp = format!(".tmp-{name}-");
        let trash = format!(".trash-{name}-");
        for item in read_dir(&self.root)? {
            let file_name = item.file_name().to_string_lossy().into_owned();
            if file_name.starts_with(&tmp) || file_name.starts_with(&trash) {
                remove_dir(&item.path())?;
            }
        }
        Ok(())
    }

    /// Finished builds, newest first (a build of a release no longer supported is not one).
    pub(crate) fn list(&self) -> Result<Vec<Entry>> {
        if !self.root.exists() {
            return Ok(Vec::new());
        }
        let mut entries: Vec<Entry> = read_dir(&self.root)?
            .into_iter()
            .filter(|item| !item.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|item| Entry::read(&item.path()))
            .collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.manifest.created));
        Ok(entries)
    }

    /// Removes every build but the newest per release, target and flavour, and what killed
    /// builds left behind (unless their key is being built right now); returns the removed
    /// builds.
    pub(crate) fn prune(&self) -> Result<Vec<Entry>> {
        if self.root.exists() {
            self.remove_abandoned_staging()?;
        }
        let mut seen = std::collections::HashSet::new();
        let mut removed = Vec::new();
        for entry in self.list()? {
            let m = &entry.manifest;
            if seen.insert((m.release, m.target, m.flavour)) {
                continue;
            }
            let name = entry_name(&entry.dir);
            let _lock = self.lock(&name)?;
            self.discard(&name)?;
            removed.push(entry);
        }
        Ok(removed)
    }

    fn remove_abandoned_staging(&self) -> Result<()> {
        for item in read_dir(&self.root)? {
            let file_name = item.file_name().to_string_lossy().into_owned();
            let Some(rest) = file_name
                .strip_prefix(".tmp-")
                .or_else(|| file_name.strip_prefix(".trash-"))
            else {
                continue;
            };
            let Some((name, _pid)) = rest.rsplit_once('-') else {
                continue;
            };
            if let Some(_lock) = lock::try_acquire(&self.lock_path(name))? {
                remove_dir(&item.path())?;
            }
        }
        Ok(())
    }

    /// Takes a published directory out of sight with one rename, then deletes it.
    fn discard(&self, name: &str) -> Result<()> {
        let dir = self.root.join(name);
        if !dir.exists() {
            return Ok(());
        }
        let trash = self
            .root
            .join(format!(".trash-{name}-{}", std::process::id()));
        fs::rename(&dir, &trash).with_context(|| format!("cannot move {} aside", dir.display()))?;
        remove_dir(&trash)
    }
}

/// A build in progress; removed on drop unless published.
#[derive(Debug)]
pub(crate) struct Staging {
    dir: PathBuf,
    final_dir: PathBuf,
    published: bool,
}

impl Staging {
    /// Where `make install DESTDIR=` puts the system.
    pub(crate) fn sysroot(&self) -> PathBuf {
        self.dir.join(SYSROOT)
    }

    /// Writes the MANIFEST last, then renames the whole build into place (replacing an older
    /// build of the same key, as after `--rebuild`).
    pub(crate) fn publish(mut self, manifest: &Manifest) -> Result<Entry> {
        if !self.sysroot().is_dir() {
            bail!("nothing was installed into {}", self.sysroot().display());
        }
        let tmp = self.dir.join(format!("{MANIFEST}.tmp"));
        fs::write(&tmp, manifest.render())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, self.dir.join(MANIFEST)).context("cannot finish the manifest")?;
        let name = entry_name(&self.final_dir);
        let root = self
            .final_dir
            .parent()
            .expect("entries live in the cache root");
        BuildCache::new(root).discard(&name)?;
        fs::rename(&self.dir, &self.final_dir).with_context(|| {
            format!(
                "cannot publish {} as {}",
                self.dir.display(),
                self.final_dir.display()
            )
        })?;
        self.published = true;
        Ok(Entry {
            dir: self.final_dir.clone(),
            manifest: manifest.clone(),
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Bytes under `dir`, not following symlinks.
pub(crate) fn disk_usage(dir: &Path) -> u64 {
    let Ok(items) = fs::read_dir(dir) else {
        return 0;
    };
    items
        .flatten()
        .map(|item| match item.file_type() {
            Ok(t) if t.is_dir() => disk_usage(&item.path()),
            _ => item.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

fn entry_name(dir: &Path) -> String {
    dir.file_name()
        .expect("entry directories have names")
        .to_string_lossy()
        .into_owned()
}

fn read_dir(dir: &Path) -> Result<Vec<fs::DirEntry>> {
    fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .collect::<std::io::Result<Vec<_>>>()
        .with_context(|| format!("cannot read {}", dir.display()))
}

fn remove_dir(dir: &Path) -> Result<()> {
    fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))
}

#[cfg(test)]
mod tests;
