//! The quick path of a build whose sources differ from the tree's last published build only in
//! the loader's C files: an edited patch, a fix-up being tried. Instead of glibc's whole make
//! (which visits every subdirectory, ~30 s even when nothing is to be done) and `make
//! install` (~40 s), `make subdirs=elf` rebuilds elf's objects, `ld.so`, and the libraries
//! made from them (`libc.so`, `libc.a`: glibc's archive rule adds the objects of the listed
//! subdirectories to the existing archive), and the new sysroot is the last published one
//! with every installed file whose build output changed replaced by it.
//!
//! Both halves are checked, not assumed: the path is taken only when every changed file is a C
//! file or an uninstalled header under `elf/` and no object outside `build/elf/` depends on one
//! (make's own dependency files say); and which build output each installed file comes from is
//! recorded by content after every full install (all of a sysroot's ELF files and archives are
//! build outputs installed as they are). `cargo xtask bench build` compares a quick sysroot
//! with the full path's.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};
use xshell::cmd;

use super::cache::BuildCache;
use super::workdir::WorkDir;
use crate::util::{durable, shell};

/// In the work dir: what the tree's last publish was (tree and cache entry) and where each of
/// its installed ELF files came from in `build/`.
const RECORD: &str = "published.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// The source tree the published sysroot was built from.
    tree: String,
    /// Its cache entry's name.
    entry: String,
    /// (build output, installed path), both relative.
    map: Vec<(PathBuf, PathBuf)>,
}

/// A published build to start from.
pub(crate) struct Base {
    record: Record,
    pub sysroot: PathBuf,
    /// The files that differ from it, for the log.
    pub changed: Vec<String>,
}

/// Records the publish of `tree` as `entry`, mapping every ELF file and archive of `sysroot`
/// to the build output with the same content. Called after a full install.
pub(crate) fn record_full(work: &WorkDir, tree: Oid, entry: &str, sysroot: &Path) -> Result<()> {
    let map = map_outputs(&work.build(), sysroot)?;
    write_record(
        work,
        &Record {
            tree: tree.to_string(),
            entry: entry.to_string(),
            map,
        },
    )
}

/// Records a quick publish: the same map as its base's.
pub(crate) fn record_quick(work: &WorkDir, base: &Base, tree: Oid, entry: &str) -> Result<()> {
    write_record(
        work,
        &Record {
            tree: tree.to_string(),
            entry: entry.to_string(),
            map: base.record.map.clone(),
        },
    )
}

fn write_record(work: &WorkDir, record: &Record) -> Result<()> {
    let text = serde_json::to_string(record).context("cannot serialize the publish record")?;
    durable::replace_file(&work.root().join(RECORD), text.as_bytes())
}

/// Forgets the last publish (a build that did not end in one leaves the tree in a state the
/// record does not describe).
pub(crate) fn forget(work: &WorkDir) -> Result<()> {
    let path = work.root().join(RECORD);
    match fs::remove_file(&path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// The last published build of the work dir, when a build of `new` may start from it: see the
/// module docs. `current` is the tree `src/` holds now (the build tree is compiled from it).
pub(crate) fn base_for(
    work: &WorkDir,
    cache: &BuildCache,
    repo: &Repository,
    current: Option<Oid>,
    new: Oid,
) -> Result<Option<Base>> {
    let Some(record) = fs::read_to_string(work.root().join(RECORD))
        .ok()
        .and_then(|text| serde_json::from_str::<Record>(&text).ok())
    else {
        return Ok(None);
    };
    let (Some(current), Ok(published)) = (current, Oid::from_str(&record.tree)) else {
        return Ok(None);
    };
    let Some(entry) = cache.lookup(&record.entry) else {
        return Ok(None);
    };
    let sysroot = entry.sysroot();
    let mut changed = BTreeSet::new();
    for old in [published, current] {
        if old == new {
            continue;
        }
        for path in changed_paths(repo, old, new)? {
            if !is_loader_source(&path, &sysroot) {
                return Ok(None);
            }
            changed.insert(path);
        }
    }
    if changed.is_empty() || depended_on_outside_elf(&work.build(), &changed)? {
        return Ok(None);
    }
    Ok(Some(Base {
        record,
        sysroot,
        changed: changed.into_iter().collect(),
    }))
}

fn changed_paths(repo: &Repository, old: Oid, new: Oid) -> Result<Vec<String>> {
    let (old, new) = (repo.find_tree(old)?, repo.find_tree(new)?);
    let diff = repo
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .context("cannot diff the source trees")?;
    Ok(diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect())
}

/// A C file under `elf/`, or a header there that is not installed (its name is not among the
/// sysroot's headers).
fn is_loader_source(path: &str, sysroot: &Path) -> bool {
    let Some(rest) = path.strip_prefix("elf/") else {
        return false;
    };
    if rest.ends_with(".c") {
        return true;
    }
    rest.ends_with(".h")
        && !sysroot
            .join("usr/include")
            .join(Path::new(rest).file_name().unwrap_or_default())
            .exists()
}

/// Whether make's dependency files of any object outside `build/elf/` name one of `paths`.
fn depended_on_outside_elf(build: &Path, paths: &BTreeSet<String>) -> Result<bool> {
    let patterns = paths.iter().flat_map(|path| ["-e", path]);
    let sh = shell::in_dir(build)?;
    let status = Command::from(cmd!(
        sh,
        "grep -r -l -q -F --include=*.d --exclude-dir=elf {patterns...} ."
    ))
    .status()
    .context("cannot run grep over make's dependency files")?;
    // grep -q: 0 found, 1 not found, 2 an error (then the quick path is not taken).
    Ok(status.code() != Some(1))
}

/// Fills `staging` (an empty sysroot directory) with the base sysroot, hard-linked, and every
/// mapped file whose build output differs from it copied from `build`. Returns the installed
/// paths it replaced.
pub(crate) fn stage(base: &Base, build: &Path, staging: &Path) -> Result<Vec<PathBuf>> {
    let base_sysroot = &base.sysroot;
    let sh = shell::here()?;
    cmd!(sh, "cp -al {base_sysroot}/. {staging}")
        .quiet()
        .run()
        .with_context(|| {
            format!(
                "cannot link {} into {}",
                base_sysroot.display(),
                staging.display()
            )
        })?;
    let mut replaced = Vec::new();
    for (output, installed) in &base.record.map {
        let (from, to) = (build.join(output), staging.join(installed));
        if same_content(&from, &to)? {
            continue;
        }
        // A new file, never the hard link: the base sysroot stays as it was.
        fs::remove_file(&to).with_context(|| format!("cannot remove {}", to.display()))?;
        fs::copy(&from, &to)
            .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
        replaced.push(installed.clone());
    }
    Ok(replaced)
}

fn same_content(a: &Path, b: &Path) -> Result<bool> {
    let (ma, mb) = (
        fs::metadata(a).with_context(|| format!("cannot stat {}", a.display()))?,
        fs::metadata(b).with_context(|| format!("cannot stat {}", b.display()))?,
    );
    if ma.len() != mb.len() {
        return Ok(false);
    }
    Ok(read(a)? == read(b)?)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Every ELF file and archive of `sysroot` (not symlinks), with the file of `build` that has
/// its content. Fails when one has none: the quick path could not update it.
fn map_outputs(build: &Path, sysroot: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let mut by_size: std::collections::HashMap<u64, Vec<PathBuf>> = Default::default();
    walk(build, &mut |path, meta| {
        by_size
            .entry(meta.len())
            .or_default()
            .push(path.to_path_buf());
    })?;
    let mut map = Vec::new();
    let mut unmapped = Vec::new();
    let mut installed = Vec::new();
    walk(sysroot, &mut |path, meta| {
        installed.push((path.to_path_buf(), meta.len()));
    })?;
    for (path, len) in installed {
        if !is_binary(&path)? {
            continue;
        }
        let content = read(&path)?;
        let found = by_size
            .get(&len)
            .into_iter()
            .flatten()
            .find(|candidate| read(candidate).is_ok_and(|c| c == content));
        let relative = path.strip_prefix(sysroot).unwrap_or(&path).to_path_buf();
        match found {
            Some(output) => map.push((
                output.strip_prefix(build).unwrap_or(output).to_path_buf(),
                relative,
            )),
            None => unmapped.push(relative.display().to_string()),
        }
    }
    if !unmapped.is_empty() {
        anyhow::bail!(
            "installed files that are no build output as they are: {}",
            unmapped.join(", ")
        );
    }
    Ok(map)
}

fn is_binary(path: &Path) -> Result<bool> {
    let mut head = [0u8; 8];
    let mut file =
        fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let n = file.read(&mut head).unwrap_or(0);
    Ok(head[..n].starts_with(b"\x7fELF") || head[..n].starts_with(b"!<arch>\n"))
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&Path, &fs::Metadata)) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let kind = entry.file_type().context("cannot stat")?;
        let path = entry.path();
        if kind.is_dir() {
            walk(&path, visit)?;
        } else if kind.is_file() {
            let meta = entry
                .metadata()
                .with_context(|| format!("cannot stat {}", path.display()))?;
            if meta.len() > 0 {
                visit(&path, &meta);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_sources_are_elf_c_files_and_uninstalled_headers() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("usr/include")).unwrap();
        fs::write(dir.path().join("usr/include/link.h"), "").unwrap();
        for (path, quick) in [
            ("elf/dl-load.c", true),
            ("elf/dl-main.h", true),
            ("elf/link.h", false),
            ("elf/Makefile", false),
            ("include/link.h", false),
            ("sysdeps/generic/ldsodefs.h", false),
            ("NEWS", false),
        ] {
            assert_eq!(is_loader_source(path, dir.path()), quick, "{path}");
        }
    }

    #[test]
    fn installed_binaries_map_to_build_outputs_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let (build, sysroot) = (dir.path().join("build"), dir.path().join("sysroot"));
        for (path, text) in [
            ("build/libc.so", "\x7fELF libc"),
            ("build/elf/ld.so", "\x7fELF ld"),
            ("build/elf/dl-load.os", "\x7fELF object"),
            ("sysroot/lib64/libc.so.6", "\x7fELF libc"),
            ("sysroot/lib64/ld-linux-x86-64.so.2", "\x7fELF ld"),
            ("sysroot/usr/bin/ldd", "#!/bin/bash"),
        ] {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let mut map = map_outputs(&build, &sysroot).unwrap();
        map.sort();
        assert_eq!(
            map,
            [
                ("elf/ld.so".into(), "lib64/ld-linux-x86-64.so.2".into()),
                ("libc.so".into(), "lib64/libc.so.6".into()),
            ]
        );
        fs::write(sysroot.join("lib64/libm.so.6"), "\x7fELF libm").unwrap();
        let err = map_outputs(&build, &sysroot).unwrap_err().to_string();
        assert!(err.contains("lib64/libm.so.6"), "{err}");
    }
}
