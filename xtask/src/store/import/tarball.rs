//! Release tarballs, read in one pass: the decompressor (`xz`, on its own core) streams the
//! archive to a tar reader that hashes every file as git does, builds the tree in memory and
//! deflates the objects into a pack, all without writing the files out or reading them twice.
//!
//! The tree is the one `tar -x && git add -A -f && git write-tree` would give (the rules of
//! [`crate::store::snapshot`]): owner-executable files are 100755, symlinks 120000, empty
//! directories vanish, `.git` entries and the top-level directories to drop are left out.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};
use git2::{ObjectType, Oid};
use xshell::cmd;

use crate::store::pack::{Pack, PackBuilder};
use crate::store::snapshot::{serialize_tree, TreeEntry, TreeMode};
use crate::util::{child, shell};
use loader_tests::host::{self, tools};

/// A tarball's tree, hashed and packed, not yet in any store.
pub(crate) struct Imported {
    pub root: Oid,
    pub files: usize,
    /// Every object of the tree, once.
    pub pack: Pack,
}

/// Reads `tarball` (xz, gzip, bzip2, zstd or plain), whose files must all lie below one
/// top-level directory (`glibc-X.Y/`), into a tree of that directory's contents minus the
/// top-level entries named in `drop_top_level`. No store is opened: the caller checks the tree
/// before anything is written.
pub(crate) fn import(tarball: &Path, drop_top_level: &[&str]) -> Result<Imported> {
    match model::file::regular(tarball, "a release tarball") {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("tarball {} does not exist", tarball.display())
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", tarball.display())),
    }
    let mut stream = Decompressed::open(tarball)?;
    let read = read_archive(&mut stream.reader, drop_top_level);
    let finished = stream.finish(read.is_ok());
    let (root, files, pack) = match (read, finished) {
        (Ok(read), Ok(())) => read,
        // The decompressor's complaint (truncated input, bad data) says more than the tar
        // reader's, which just ran out of data.
        (_, Err(e)) => {
            return Err(e.context(format!(
                "cannot extract {}: is it a complete, uncorrupted tarball?",
                tarball.display()
            )))
        }
        (Err(e), Ok(())) => return Err(e.context(format!("cannot import {}", tarball.display()))),
    };
    Ok(Imported {
        root,
        files,
        pack: pack.finish(),
    })
}

/// A directory being filled from the archive.
#[derive(Default)]
struct Dir {
    entries: BTreeMap<Vec<u8>, Node>,
}

enum Node {
    File { mode: TreeMode, oid: Oid },
    Dir(Dir),
}

/// Hashes objects on the reading thread (their ids make the tree) and hands each new one to
/// the deflating threads.
struct Packer {
    packed: HashSet<Oid>,
    to_deflate: SyncSender<(ObjectType, Oid, Vec<u8>)>,
}

impl Packer {
    fn add(&mut self, kind: ObjectType, data: Vec<u8>) -> Result<Oid> {
        let oid = Oid::hash_object(kind, &data).context("cannot hash an object")?;
        if !self.packed.contains(&oid) {
            self.packed.insert(oid);
            self.to_deflate
                .send((kind, oid, data))
                .map_err(|_| anyhow!("a deflating thread stopped"))?;
        }
        Ok(oid)
    }
}

/// Deflating is the costliest step (zlib level 1 runs at about a third of the speed of
/// hashing): it gets every core, next to the decompressor and the reading thread.
fn deflate_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Reads the archive, packing with [`deflate_threads`] threads.
fn read_archive(
    reader: &mut dyn Read,
    drop_top_level: &[&str],
) -> Result<(Oid, usize, PackBuilder)> {
    let (tx, rx) = sync_channel::<(ObjectType, Oid, Vec<u8>)>(64);
    let rx = Mutex::new(rx);
    std::thread::scope(|scope| {
        let deflate = || -> Result<PackBuilder> {
            let mut pack = PackBuilder::new();
            loop {
                let next = rx.lock().expect("no deflating thread panics").recv();
                let Ok((kind, oid, data)) = next else {
                    return Ok(pack);
                };
                pack.add(kind, oid, &data)?;
            }
        };
        // As many as the system lets us start (a container's pids limit may refuse some):
        // fewer only take longer; none would leave the reader waiting forever.
        let mut workers = Vec::new();
        let mut refused = None;
        for _ in 0..deflate_threads() {
            match std::thread::Builder::new().spawn_scoped(scope, deflate) {
                Ok(worker) => workers.push(worker),
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        if let (true, Some(e)) = (workers.is_empty(), refused) {
            return Err(e).context("cannot start a thread to compress the release's objects");
        }
        let mut packer = Packer {
            packed: HashSet::new(),
            to_deflate: tx,
        };
        let read = read_entries(reader, drop_top_level, &mut packer);
        // Closing the channel ends the workers.
        drop(packer);
        let mut pack = PackBuilder::new();
        for worker in workers {
            pack.append(worker.join().expect("a deflating thread panicked")?);
        }
        let (root, files) = read?;
        Ok((root, files, pack))
    })
}

fn read_entries(
    reader: &mut dyn Read,
    drop_top_level: &[&str],
    packer: &mut Packer,
) -> Result<(Oid, usize)> {
    let mut top: Option<Vec<u8>> = None;
    let mut root = Dir::default();
    let mut files = 0;
    let mut archive = tar::Archive::new(reader);
    // The tar reader's error quotes the bytes it could not read, which may be anything: said
    // escaped.
    let unreadable = |e: std::io::Error| {
        anyhow!(
            "cannot read the archive: is it a complete, uncorrupted tarball?: {}",
            model::printable(&e.to_string())
        )
    };
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let kind = entry.header().entry_type();
        if matches!(
            kind,
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader
        ) {
            continue;
        }
        let path = entry.path_bytes().into_owned();
        let Some((first, rest)) = split_path(&path)? else {
            continue;
        };
        match &top {
            None => top = Some(first.clone()),
            Some(name) if *name == first => {}
            Some(_) => {
                bail!("the tarball does not hold a single top-level directory like glibc-X.Y/")
            }
        }
        if rest.is_empty() {
            if !kind.is_dir() {
                bail!("the tarball does not hold a single top-level directory like glibc-X.Y/");
            }
            continue;
        }
        let dropped = drop_top_level.iter().any(|d| d.as_bytes() == rest[0]);
        if dropped || rest.iter().any(|c| c == b".git") {
            continue;
        }
        let node = match kind {
            tar::EntryType::Directory => {
                ensure_dir(&mut root, &rest)?;
                continue;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mut data = Vec::with_capacity(entry.size() as usize);
                entry
                    .read_to_end(&mut data)
                    .with_context(|| format!("cannot read {}", show(&path)))?;
                let exec = entry.header().mode().context("bad mode")? & 0o100 != 0;
                let mode = if exec {
                    TreeMode::Executable
                } else {
                    TreeMode::File
                };
                let oid = packer.add(ObjectType::Blob, data)?;
                Node::File { mode, oid }
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .with_context(|| format!("symlink {} has no target", show(&path)))?;
                let oid = packer.add(ObjectType::Blob, target.into_owned())?;
                Node::File {
                    mode: TreeMode::Symlink,
                    oid,
                }
            }
            // A hard link is another name for a file earlier in the archive.
            tar::EntryType::Link => {
                let target = entry
                    .link_name_bytes()
                    .with_context(|| format!("hard link {} has no target", show(&path)))?
                    .into_owned();
                let linked = split_path(&target)?
                    .filter(|(first, _)| Some(first) == top.as_ref())
                    .and_then(|(_, rest)| find_file(&root, &rest));
                match linked {
                    Some((mode, oid)) => Node::File { mode, oid },
                    None => bail!(
                        "hard link {} points to {}, which is not a file before it",
                        show(&path),
                        show(&target)
                    ),
                }
            }
            other => bail!(
                "{} is neither a file, a directory nor a symlink ({other:?})",
                show(&path)
            ),
        };
        let (name, parents) = rest.split_last().expect("rest is not empty");
        let dir = ensure_dir(&mut root, parents)?;
        if matches!(dir.entries.get(name), Some(Node::Dir(_))) {
            bail!("{} is both a directory and a file", show(&path));
        }
        dir.entries.insert(name.clone(), node);
        files += 1;
    }
    if top.is_none() {
        bail!("the tarball is empty");
    }
    let root = write_dir(root, packer)?.ok_or_else(|| anyhow!("the tarball holds no files"))?;
    Ok((root, files))
}

/// `glibc-2.44/elf/./dl-load.c` -> (`glibc-2.44`, [`elf`, `dl-load.c`]); `None` for `./`.
#[allow(clippy::type_complexity)]
fn split_path(path: &[u8]) -> Result<Option<(Vec<u8>, Vec<Vec<u8>>)>> {
    let mut parts = Vec::new();
    for part in path.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => bail!("{} leaves the archive (`..`)", show(path)),
            part => parts.push(part.to_vec()),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let first = parts.remove(0);
    Ok(Some((first, parts)))
}

fn ensure_dir<'d>(root: &'d mut Dir, path: &[Vec<u8>]) -> Result<&'d mut Dir> {
    let mut dir = root;
    for part in path {
        let node = dir
            .entries
            .entry(part.clone())
            .or_insert_with(|| Node::Dir(Dir::default()));
        dir = match node {
            Node::Dir(sub) => sub,
            Node::File { .. } => bail!("{} is both a file and a directory", show(part)),
        };
    }
    Ok(dir)
}

fn find_file(root: &Dir, path: &[Vec<u8>]) -> Option<(TreeMode, Oid)> {
    let (name, parents) = path.split_last()?;
    let mut dir = root;
    for part in parents {
        dir = match dir.entries.get(part)? {
            Node::Dir(sub) => sub,
            Node::File { .. } => return None,
        };
    }
    match dir.entries.get(name)? {
        Node::File { mode, oid } => Some((*mode, *oid)),
        Node::Dir(_) => None,
    }
}

/// Packs the trees below `dir` and `dir`'s own; `None` if it holds no file at any depth.
fn write_dir(dir: Dir, packer: &mut Packer) -> Result<Option<Oid>> {
    let mut entries = Vec::new();
    for (name, node) in dir.entries {
        let (mode, oid) = match node {
            Node::File { mode, oid } => (mode, oid),
            Node::Dir(sub) => match write_dir(sub, packer)? {
                Some(oid) => (TreeMode::Tree, oid),
                None => continue,
            },
        };
        entries.push(TreeEntry { name, mode, oid });
    }
    if entries.is_empty() {
        return Ok(None);
    }
    packer
        .add(ObjectType::Tree, serialize_tree(entries))
        .map(Some)
}

fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// Reads into `buf` until it is full or the file ends; how much was read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            read => n += read,
        }
    }
    Ok(n)
}

/// The tarball's bytes, decompressed by the matching tool in a child process (so that
/// decompression runs on another core than the hashing), or read as is.
struct Decompressed {
    reader: Box<dyn Read>,
    child: Option<(Child, ChildStderr, String)>,
}

impl Decompressed {
    fn open(tarball: &Path) -> Result<Decompressed> {
        let mut magic = [0u8; 6];
        let mut file =
            File::open(tarball).with_context(|| format!("cannot open {}", tarball.display()))?;
        let n = file
            .read(&mut magic)
            .with_context(|| format!("cannot read {}", tarball.display()))?;
        let sh = shell::here()?;
        let decompress = match &magic[..n] {
            [0xfd, b'7', b'z', b'X', b'Z', 0] => {
                host::require(&[tools::XZ])?;
                // Multi-threaded when the file has several blocks, as Debian's do.
                cmd!(sh, "xz -dc -T2")
            }
            [0x1f, 0x8b, ..] => cmd!(sh, "gzip -dc"),
            [b'B', b'Z', b'h', ..] => cmd!(sh, "bzip2 -dc"),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => cmd!(sh, "zstd -dc"),
            _ => {
                // Read as a tar archive: judged from its first header before anything else.
                let mut header = [0u8; 512];
                let mut file = File::open(tarball)
                    .with_context(|| format!("cannot open {}", tarball.display()))?;
                let n = read_up_to(&mut file, &mut header)
                    .with_context(|| format!("cannot read {}", tarball.display()))?;
                if n == header.len()
                    && !header.starts_with(&[0; 512])
                    && &header[257..262] != b"ustar"
                {
                    bail!(
                        "{} is not a tarball: it starts with neither a compressed stream (xz, gzip, bzip2, zstd) nor a tar header (`ustar` at byte 257)",
                        tarball.display()
                    );
                }
                let file = File::open(tarball)
                    .with_context(|| format!("cannot open {}", tarball.display()))?;
                return Ok(Decompressed {
                    reader: Box::new(BufReader::with_capacity(1 << 20, file)),
                    child: None,
                });
            }
        };
        let mut cmd = Command::from(decompress);
        let program = cmd.get_program().to_string_lossy().into_owned();
        // A killed import must not leave the decompressor running.
        child::dies_with_us(&mut cmd);
        let mut child = cmd
            .stdin(
                File::open(tarball)
                    .with_context(|| format!("cannot open {}", tarball.display()))?,
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run {program} (is it installed?)"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        Ok(Decompressed {
            reader: Box::new(BufReader::with_capacity(1 << 20, stdout)),
            child: Some((child, stderr, program)),
        })
    }

    /// Waits for the decompressor after the archive was read (`read_ok`) or abandoned; the
    /// decompressor's own failure, with what it said, is the error.
    fn finish(mut self, read_ok: bool) -> Result<()> {
        let Some((mut child, mut stderr, program)) = self.child.take() else {
            return Ok(());
        };
        if read_ok {
            // The archive's end padding: the child must be able to write it all and exit.
            std::io::copy(&mut self.reader, &mut std::io::sink())
                .with_context(|| format!("cannot read the output of {program}"))?;
        } else {
            child::kill_group(&child);
        }
        drop(self.reader);
        let mut said = String::new();
        let _ = stderr.read_to_string(&mut said);
        let status = child
            .wait()
            .with_context(|| format!("cannot wait for {program}"))?;
        // Killed above (no exit code): the read error stands on its own.
        if status.success() || status.code().is_none() {
            return Ok(());
        }
        Err(anyhow!("{program} failed ({status}): {}", said.trim_end()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_below_the_top_directory() {
        let (top, rest) = split_path(b"glibc-2.44/./elf//dl-load.c").unwrap().unwrap();
        assert_eq!(top, b"glibc-2.44");
        assert_eq!(rest, vec![b"elf".to_vec(), b"dl-load.c".to_vec()]);
        assert!(split_path(b"./").unwrap().is_none());
        assert!(split_path(b"glibc-2.44/../etc/passwd").is_err());
    }
}
