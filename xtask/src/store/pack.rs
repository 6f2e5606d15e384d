//! A git pack written in one pass: objects are deflated as they arrive (zlib level 1, as
//! `git add` does for loose objects) into memory, and [`Pack::install`] writes those the
//! repository lacks, with their version-2 index, straight into it: no second read of the
//! objects, no re-compression (entries are copied as deflated).
//!
//! One pack instead of tens of thousands of loose objects: one file to write instead of one
//! per object, and the index is built from what was recorded while packing instead of
//! libgit2 inflating and hashing everything again. Objects are never deltified.

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};
use flate2::{Compress, Compression, FlushCompress, Status};
use git2::{ObjectType, Oid, Repository};

use crate::util::{durable, fault};

/// Objects being packed, in memory until [`PackBuilder::finish`].
pub(crate) struct PackBuilder {
    /// Everything after the 12-byte pack header.
    body: Vec<u8>,
    entries: Vec<IndexEntry>,
    deflate: Compress,
}

#[derive(Clone, Copy)]
struct IndexEntry {
    oid: Oid,
    /// From the start of the pack file, header included.
    offset: u64,
    /// CRC-32 of the object's bytes in the pack (type/size header and deflated data).
    crc: u32,
}

/// Deflated objects, not yet in any repository.
pub(crate) struct Pack {
    body: Vec<u8>,
    /// Sorted by offset: an entry ends where the next begins.
    entries: Vec<IndexEntry>,
}

const HEADER_LEN: u64 = 12;

impl Default for PackBuilder {
    fn default() -> PackBuilder {
        PackBuilder::new()
    }
}

impl PackBuilder {
    pub(crate) fn new() -> PackBuilder {
        PackBuilder {
            body: Vec::new(),
            entries: Vec::new(),
            deflate: Compress::new(Compression::fast(), true),
        }
    }

    /// Appends one whole object; `oid` must be its id (the caller has hashed it already).
    pub(crate) fn add(&mut self, kind: ObjectType, oid: Oid, data: &[u8]) -> Result<()> {
        let start = self.body.len();
        let type_bits: u8 = match kind {
            ObjectType::Commit => 1,
            ObjectType::Tree => 2,
            ObjectType::Blob => 3,
            ObjectType::Tag => 4,
            _ => bail!("cannot pack an object of kind {kind}"),
        };
        // Type and size: 4 bits of size in the first byte, then 7 bits per byte.
        let mut size = data.len() as u64;
        let mut byte = (type_bits << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size != 0 {
            self.body.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        self.body.push(byte);
        self.deflate_into_body(data)?;
        let crc = crc32(&self.body[start..]);
        self.entries.push(IndexEntry {
            oid,
            offset: HEADER_LEN + start as u64,
            crc,
        });
        Ok(())
    }

    fn deflate_into_body(&mut self, data: &[u8]) -> Result<()> {
        self.deflate.reset();
        // zlib's worst case for incompressible input, so that one call finishes the stream.
        self.body.reserve(data.len() + data.len() / 1000 + 64);
        let mut input = data;
        loop {
            let before_in = self.deflate.total_in();
            let status = self
                .deflate
                .compress_vec(input, &mut self.body, FlushCompress::Finish)
                .context("zlib failed to deflate an object")?;
            input = &input[(self.deflate.total_in() - before_in) as usize..];
            match status {
                Status::StreamEnd => return Ok(()),
                Status::Ok | Status::BufError => self.body.reserve(64 * 1024),
            }
        }
    }

    /// Moves `other`'s objects after this builder's, as if they had been added here: several
    /// builders can deflate in parallel and be joined at the end.
    pub(crate) fn append(&mut self, other: PackBuilder) {
        let shift = self.body.len() as u64;
        self.body.extend_from_slice(&other.body);
        self.entries
            .extend(other.entries.into_iter().map(|e| IndexEntry {
                offset: e.offset + shift,
                ..e
            }));
    }

    pub(crate) fn finish(self) -> Pack {
        let mut entries = self.entries;
        entries.sort_by_key(|e| e.offset);
        Pack {
            body: self.body,
            entries,
        }
    }
}

impl Pack {
    /// Writes the objects `repo` lacks as one pack and its index into `objects/pack/`, each
    /// under a temporary name, flushed, then both renamed (the index last: git and libgit2
    /// only look at packs that have one, so a reader never sees half a pack); makes `repo`
    /// see them. Returns how many objects were written.
    pub(crate) fn install(&self, repo: &Repository) -> Result<usize> {
        let odb = repo.odb().context("cannot open the object database")?;
        let mut bytes = Vec::with_capacity(self.body.len() + 32);
        bytes.extend_from_slice(b"PACK");
        bytes.extend_from_slice(&2u32.to_be_bytes());
        bytes.extend_from_slice(&[0; 4]);
        // In id order, not in the order the deflating threads happened to finish: the same
        // objects make the same pack, byte for byte, whatever the scheduling, so an install
        // killed between the pack's rename and the index's is completed by the next one (same
        // name) instead of leaving an unindexed pack behind.
        let mut missing: Vec<usize> = (0..self.entries.len())
            .filter(|&i| !odb.exists(self.entries[i].oid))
            .collect();
        missing.sort_by(|&a, &b| {
            let id = |i: usize| self.entries[i].oid;
            id(a).as_bytes().cmp(id(b).as_bytes())
        });
        let mut kept = Vec::with_capacity(missing.len());
        for i in missing {
            let entry = &self.entries[i];
            let start = (entry.offset - HEADER_LEN) as usize;
            let end = self
                .entries
                .get(i + 1)
                .map_or(self.body.len(), |next| (next.offset - HEADER_LEN) as usize);
            kept.push(IndexEntry {
                offset: bytes.len() as u64,
                ..*entry
            });
            bytes.extend_from_slice(&self.body[start..end]);
        }
        if kept.is_empty() {
            return Ok(0);
        }
        bytes[8..12].copy_from_slice(&(kept.len() as u32).to_be_bytes());
        let checksum = sha1(&bytes);
        bytes.extend_from_slice(&checksum);
        let count = kept.len();
        let index = index_v2(kept, &checksum);

        let dir = repo.path().join("objects/pack");
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        remove_orphans(&dir);
        let hex: String = checksum.iter().map(|b| format!("{b:02x}")).collect();
        let pid = std::process::id();
        // git's own prefix for packs in progress: `git gc` removes stale ones.
        let tmp = |ext: &str| dir.join(format!("tmp_{ext}_{hex}_{pid}"));
        let dest = |ext: &str| dir.join(format!("pack-{hex}.{ext}"));
        let files = [(&bytes, "pack"), (&index, "idx")];
        // Both written in full before either is renamed: a write that fails (a full disk, the
        // file size limit) leaves nothing in place, where a pack renamed before its index was
        // written stayed without one, invisible to git and as large as the release. What was
        // written helps nobody, and this process is alive to remove it.
        let remove_temporaries = || {
            for (_, ext) in files {
                let _ = fs::remove_file(tmp(ext));
            }
        };
        for (data, ext) in files {
            if let Err(e) = durable::write_synced(&tmp(ext), data) {
                remove_temporaries();
                return Err(e);
            }
            fault::point("pack:written");
        }
        for (_, ext) in files {
            if let Err(e) = fs::rename(tmp(ext), dest(ext)) {
                remove_temporaries();
                // The pack is in place without its index, unless an install of the same
                // objects put one there: then it is whole, and someone else's.
                if ext == "idx" && !dest("idx").is_file() {
                    let _ = fs::remove_file(dest("pack"));
                }
                return Err(e)
                    .with_context(|| format!("cannot move {} into place", dest(ext).display()));
            }
            fault::point("pack:renamed");
        }
        durable::sync_dir(&dir)?;
        odb.refresh()
            .context("cannot make the store see the new pack")?;
        Ok(count)
    }
}

/// Removes the `tmp_*_<pid>` files of installs killed before their rename.
fn remove_orphans(dir: &Path) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("tmp_")
            .and_then(|rest| rest.rsplit('_').next())
        else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The version-2 `.idx`: fan-out table, sorted ids, CRCs, offsets, pack and index checksums.
fn index_v2(mut entries: Vec<IndexEntry>, pack_checksum: &[u8; 20]) -> Vec<u8> {
    entries.sort_by(|a, b| a.oid.as_bytes().cmp(b.oid.as_bytes()));
    entries.dedup_by(|a, b| a.oid == b.oid);
    let mut out = Vec::with_capacity(8 + 1024 + entries.len() * 28 + 40);
    out.extend_from_slice(b"\xfftOc");
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for e in &entries {
        fanout[e.oid.as_bytes()[0] as usize] += 1;
    }
    let mut total = 0;
    for count in fanout {
        total += count;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for e in &entries {
        out.extend_from_slice(e.oid.as_bytes());
    }
    for e in &entries {
        out.extend_from_slice(&e.crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for e in &entries {
        match u32::try_from(e.offset) {
            Ok(small) if small < 0x8000_0000 => out.extend_from_slice(&small.to_be_bytes()),
            _ => {
                out.extend_from_slice(&(0x8000_0000 | large.len() as u32).to_be_bytes());
                large.push(e.offset);
            }
        }
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(pack_checksum);
    let checksum = sha1(&out);
    out.extend_from_slice(&checksum);
    out
}

fn sha1(data: &[u8]) -> [u8; 20] {
    sha1_smol::Sha1::from(data).digest().bytes()
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_reads_the_pack_and_index() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path().join("r.git")).unwrap();
        let mut builder = PackBuilder::new();
        let big: Vec<u8> = (0..300_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut ids = Vec::new();
        for data in [&b""[..], b"small\n", &big] {
            let oid = Oid::hash_object(ObjectType::Blob, data).unwrap();
            builder.add(ObjectType::Blob, oid, data).unwrap();
            ids.push((oid, data.to_vec()));
        }
        let mut tree = b"100644 a\0".to_vec();
        tree.extend_from_slice(ids[1].0.as_bytes());
        let tree_id = Oid::hash_object(ObjectType::Tree, &tree).unwrap();
        builder.add(ObjectType::Tree, tree_id, &tree).unwrap();
        let pack = builder.finish();
        assert_eq!(pack.entries.len(), 4);
        assert_eq!(pack.install(&repo).unwrap(), 4);
        // Everything is there now: a second install writes nothing.
        assert_eq!(pack.install(&repo).unwrap(), 0);

        let odb = repo.odb().unwrap();
        for (oid, data) in &ids {
            assert_eq!(odb.read(*oid).unwrap().data(), &data[..]);
        }
        let tree = repo.find_tree(tree_id).unwrap();
        assert_eq!(tree.get_name("a").unwrap().id(), ids[1].0);
        // git's own reader checks the pack's and the index's checksums and every CRC.
        let packs = repo.path().join("objects/pack");
        let idx = fs::read_dir(&packs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "idx"))
            .unwrap();
        let sh = crate::util::shell::here().unwrap();
        let out = xshell::cmd!(sh, "git verify-pack -v {idx}")
            .ignore_status()
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let leftovers: Vec<_> = fs::read_dir(&packs)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("tmp_"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
