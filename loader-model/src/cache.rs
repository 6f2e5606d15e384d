//! `/etc/ld.so.cache`, read as `elf/dl-cache.c` reads it: the old `ld.so-1.7.0` format, the
//! new `glibc-ld.so.cache1.1` format (alone, or after an old table), its extension directory
//! (the generator string and the glibc-hwcaps subdirectory names), and `search_cache`: a
//! binary search with glibc's numeric-aware name order, glibc-hwcaps entries by priority, and
//! the legacy hwcap entries that 2.36 still used and 2.37 dropped.

use super::Bytes;

/// The old format's magic.
const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
/// The new format's magic and version.
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// `struct cache_file`: magic, padding, `nlibs`.
const OLD_HEADER: usize = 16;
/// `struct file_entry`: flags, key, value.
const OLD_ENTRY: usize = 12;
/// `struct cache_file_new`.
const NEW_HEADER: usize = 48;
/// `struct file_entry_new`: flags, key, value, osversion, hwcap.
const NEW_ENTRY: usize = 24;
/// `cache_extension_magic`.
const EXTENSION_MAGIC: u32 = (-358342284i32) as u32;
const TAG_GENERATOR: u32 = 0;
const TAG_GLIBC_HWCAPS: u32 = 1;
/// `DL_CACHE_HWCAP_EXTENSION`: an entry in a glibc-hwcaps subdirectory.
const HWCAP_EXTENSION: u64 = 1 << 62;
/// `DL_CACHE_HWCAP_ISA_LEVEL_MASK`, in the upper half of `hwcap`.
const ISA_LEVEL_MASK: u64 = (1 << 10) - 1;

/// One entry of the table a lookup searches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub flags: i32,
    pub name: Bytes,
    pub path: Bytes,
    /// 0 in the old format.
    pub hwcap: u64,
}

/// A parsed cache: the table the loader would search (the new one when there is one).
#[derive(Debug, Clone, Default)]
pub(crate) struct Cache {
    pub entries: Vec<Entry>,
    /// Whether entries carry hwcap data (`file_entry_new`).
    pub new_format: bool,
    /// The glibc-hwcaps subdirectory names of the extension section, by index.
    pub hwcaps: Vec<Bytes>,
    /// The extension's generator string ("ldconfig (GNU libc) ...").
    pub generator: Option<String>,
}

/// What the loader needs to know to pick among entries of one name.
#[derive(Debug, Clone)]
pub(crate) struct Selector<'a> {
    /// `_DL_CACHE_DEFAULT_ID`: the only flags an entry may have.
    pub flags: i32,
    /// Active glibc-hwcaps subdirectories, most preferred first (priority = position + 1).
    pub hwcaps: &'a [String],
    /// x86 ISA levels this CPU supports (`GNU_PROPERTY_X86_ISA_1_*` bits); `None` elsewhere.
    pub isa_levels: Option<u32>,
    /// Before 2.37: legacy hwcap entries are used when they need no more than these bits.
    pub legacy: Option<LegacyHwcaps>,
}

/// The legacy hwcap test of 2.36's `search_cache`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LegacyHwcaps {
    /// `dl_hwcap & hwcap_mask`.
    pub hwcap: u64,
    /// `_DL_HWCAP_PLATFORM`: the bits that name a platform.
    pub platform_mask: u64,
    /// The bit of this loader's platform, or all bits when it has none in the table.
    pub platform: u64,
}

/// What a lookup found, and what it passed over on the way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lookup {
    pub path: Option<Bytes>,
    /// Entries of the name that were not taken, with the reason.
    pub passed: Vec<(Bytes, String)>,
}

impl Cache {
    /// How many bytes [`Cache::has_magic`] looks at.
    pub(crate) const MAGIC_LEN: u64 = NEW_MAGIC.len() as u64;

    /// Whether a file starting with `head` is of a format the loader reads (either magic).
    pub(crate) fn has_magic(head: &[u8]) -> bool {
        head.starts_with(NEW_MAGIC) || head.starts_with(OLD_MAGIC)
    }

    /// Parses a cache file; `None` when the loader would ignore it (not a cache, corrupt,
    /// other endianness), as glibc then behaves as if there were none.
    pub(crate) fn parse(file: &[u8]) -> Option<Cache> {
        if file.len() > NEW_HEADER && file.starts_with(NEW_MAGIC) {
            let nlibs = u32_at(file, 20)? as usize;
            if (file.len() - NEW_HEADER) / NEW_ENTRY < nlibs || !endian_ok(file[28]) {
                return None;
            }
            return parse_new(file, 0);
        }
        if file.len() > OLD_HEADER && file.starts_with(OLD_MAGIC) {
            let nlibs = u32_at(file, 12)? as usize;
            if (file.len() - OLD_HEADER) / OLD_ENTRY < nlibs {
                return None;
            }
            // A new table may follow the old one, 8-aligned; the old one is used only alone.
            let new_at = (OLD_HEADER + nlibs * OLD_ENTRY + 7) & !7;
            if file.len() >= new_at + NEW_HEADER && file[new_at..].starts_with(NEW_MAGIC) {
                if !endian_ok(file[new_at + 28]) {
                    return None;
                }
                return parse_new(file, new_at);
            }
            let strings = OLD_HEADER + nlibs * OLD_ENTRY;
            let mut entries = Vec::with_capacity(nlibs);
            for i in 0..nlibs {
                let at = OLD_HEADER + i * OLD_ENTRY;
                entries.push(Entry {
                    flags: u32_at(file, at)? as i32,
                    name: string_at(file, strings + u32_at(file, at + 4)? as usize)?,
                    path: string_at(file, strings + u32_at(file, at + 8)? as usize)?,
                    hwcap: 0,
                });
            }
            return Some(Cache {
                entries,
                ..Cache::default()
            });
        }
        None
    }

    /// `search_cache`: the path the loader takes for `name`, if any.
    pub(crate) fn lookup(&self, name: &[u8], select: &Selector) -> Lookup {
        let mut found = Lookup::default();
        // Binary search as glibc does it, then back to the first entry of the name: ldconfig
        // sorts the table by `libcmp`, descending, glibc-hwcaps entries first within a name.
        let (mut left, mut right) = (0i64, self.entries.len() as i64 - 1);
        let mut first = None;
        while left <= right {
            let middle = (left + right) / 2;
            let ordering = libcmp(name, &self.entries[middle as usize].name);
            if ordering == std::cmp::Ordering::Equal {
                let mut start = middle as usize;
                while start > 0 && libcmp(name, &self.entries[start - 1].name).is_eq() {
                    start -= 1;
                }
                first = Some(start);
                break;
            }
            if ordering.is_lt() {
                left = middle + 1;
            } else {
                right = middle - 1;
            }
        }
        let Some(first) = first else {
            return found;
        };
        let mut best_priority = 0u32;
        let mut passed = Vec::new();
        for entry in self.entries[first..]
            .iter()
            .take_while(|e| libcmp(name, &e.name).is_eq())
        {
            let mut pass = |why: String| passed.push((entry.path.clone(), why));
            if entry.flags != select.flags {
                pass(format!(
                    "flags {:#x}, not this loader's {:#x}",
                    entry.flags, select.flags
                ));
                continue;
            }
            let mut named = false;
            if self.new_format {
                named = (entry.hwcap >> 32) & !ISA_LEVEL_MASK == HWCAP_EXTENSION >> 32;
                if named {
                    if let Some(levels) = select.isa_levels {
                        let needs = 1u32 << ((entry.hwcap >> 32) & ISA_LEVEL_MASK);
                        if needs & levels != needs {
                            pass("needs an x86 ISA level this CPU lacks".into());
                            continue;
                        }
                    }
                }
                if !named && found.path.is_some() {
                    break;
                }
                if !named && entry.hwcap != 0 {
                    match select.legacy {
                        None => {
                            pass("a legacy hwcap entry (ignored since glibc 2.37)".into());
                            continue;
                        }
                        Some(legacy) => {
                            let allowed = legacy.hwcap | legacy.platform_mask | 1 << 63;
                            let platform = entry.hwcap & legacy.platform_mask;
                            if entry.hwcap & !allowed != 0
                                || (platform != 0 && platform != legacy.platform)
                            {
                                pass("a legacy hwcap entry this CPU does not match".into());
                                continue;
                            }
                        }
                    }
                }
                if named {
                    let index = entry.hwcap as u32 as usize;
                    let subdir = self.hwcaps.get(index).cloned().unwrap_or_default();
                    let priority = select
                        .hwcaps
                        .iter()
                        .position(|h| h.as_bytes() == subdir.as_bytes())
                        .map_or(0, |i| i as u32 + 1);
                    if priority == 0 {
                        pass(format!("glibc-hwcaps/{subdir}: not active on this CPU"));
                        continue;
                    }
                    if found.path.is_some() && priority >= best_priority {
                        pass(format!(
                            "glibc-hwcaps/{subdir}: a preferred subdirectory won"
                        ));
                        continue;
                    }
                    best_priority = priority;
                }
            }
            if let Some(previous) = found.path.replace(entry.path.clone()) {
                passed.push((previous, "a preferred glibc-hwcaps entry won".into()));
            }
            if !named && entry.flags == select.flags {
                break;
            }
        }
        found.passed = passed;
        found
    }
}

fn parse_new(file: &[u8], at: usize) -> Option<Cache> {
    let nlibs = u32_at(file, at + 20)? as usize;
    if (file.len() - at - NEW_HEADER) / NEW_ENTRY < nlibs {
        return None;
    }
    let mut cache = Cache {
        new_format: true,
        ..Cache::default()
    };
    // String offsets are from the start of the new header.
    for i in 0..nlibs {
        let e = at + NEW_HEADER + i * NEW_ENTRY;
        cache.entries.push(Entry {
            flags: u32_at(file, e)? as i32,
            name: string_at(file, at + u32_at(file, e + 4)? as usize)?,
            path: string_at(file, at + u32_at(file, e + 8)? as usize)?,
            hwcap: u64_at(file, e + 16)?,
        });
    }
    // Extensions: offsets are from the start of the file. A corrupt directory makes the
    // loader ignore the whole cache.
    let extension = u32_at(file, at + 32)? as usize;
    if extension != 0 {
        if !extension.is_multiple_of(4) || extension + 8 > file.len() {
            return None;
        }
        if u32_at(file, extension)? != EXTENSION_MAGIC {
            return None;
        }
        let count = u32_at(file, extension + 4)? as usize;
        if extension + 8 + count * 16 > file.len() {
            return None;
        }
        for i in 0..count {
            let s = extension + 8 + i * 16;
            let (tag, offset, size) = (
                u32_at(file, s)?,
                u32_at(file, s + 8)? as usize,
                u32_at(file, s + 12)? as usize,
            );
            if offset + size > file.len() {
                return None;
            }
            let data = &file[offset..offset + size];
            match tag {
                TAG_GENERATOR => {
                    cache.generator = Some(String::from_utf8_lossy(data).into_owned());
                }
                TAG_GLIBC_HWCAPS
                    if size > 0 && offset.is_multiple_of(4) && size.is_multiple_of(4) =>
                {
                    for index in data.chunks_exact(4) {
                        let index =
                            u32::from_le_bytes([index[0], index[1], index[2], index[3]]) as usize;
                        cache
                            .hwcaps
                            .push(string_at(file, at + index).unwrap_or_default());
                    }
                }
                _ => {}
            }
        }
    }
    Some(cache)
}

/// `cache_file_new_matches_endian` for a little-endian loader.
fn endian_ok(flags: u8) -> bool {
    flags == 0 || flags & 3 == 2
}

/// `_dl_cache_libcmp`: runs of digits compare as numbers, so `libfoo.so.10` sorts after
/// `libfoo.so.9`.
pub(crate) fn libcmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut i, mut j) = (0, 0);
    while i < a.len() {
        let (ca, cb) = (a[i], b.get(j).copied().unwrap_or(0));
        if ca.is_ascii_digit() {
            if !cb.is_ascii_digit() {
                return Ordering::Greater;
            }
            let (mut va, mut vb) = (0u64, 0u64);
            while i < a.len() && a[i].is_ascii_digit() {
                va = va.wrapping_mul(10).wrapping_add(u64::from(a[i] - b'0'));
                i += 1;
            }
            while j < b.len() && b[j].is_ascii_digit() {
                vb = vb.wrapping_mul(10).wrapping_add(u64::from(b[j] - b'0'));
                j += 1;
            }
            if va != vb {
                return va.cmp(&vb);
            }
        } else if cb.is_ascii_digit() {
            return Ordering::Less;
        } else if ca != cb {
            return ca.cmp(&cb);
        } else {
            i += 1;
            j += 1;
        }
    }
    if j < b.len() {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

fn u32_at(file: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(file.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(file: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(file.get(at..at + 8)?.try_into().ok()?))
}

fn string_at(file: &[u8], at: usize) -> Option<Bytes> {
    let rest = file.get(at..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    Some(Bytes::from(&rest[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn names_compare_with_numbers_as_numbers() {
        assert_eq!(libcmp(b"libfoo.so.10", b"libfoo.so.9"), Ordering::Greater);
        assert_eq!(libcmp(b"libfoo.so.1", b"libfoo.so.1"), Ordering::Equal);
        assert_eq!(libcmp(b"libfoo.so", b"libfoo.so.1"), Ordering::Less);
        assert_eq!(libcmp(b"libc.so.6", b"libcuda.so.1"), Ordering::Less);
    }

    /// A new-format cache as ldconfig writes it: sorted entries, strings after them.
    fn new_cache(entries: &[(&str, &str, u64)], hwcaps: &[&str]) -> Vec<u8> {
        let mut strings: Vec<u8> = Vec::new();
        let base = NEW_HEADER + entries.len() * NEW_ENTRY;
        let add = |s: &str, strings: &mut Vec<u8>| {
            let at = base + strings.len();
            strings.extend_from_slice(s.as_bytes());
            strings.push(0);
            at as u32
        };
        let mut table = Vec::new();
        for (name, path, hwcap) in entries {
            table.extend_from_slice(&0x303u32.to_le_bytes());
            table.extend_from_slice(&add(name, &mut strings).to_le_bytes());
            table.extend_from_slice(&add(path, &mut strings).to_le_bytes());
            table.extend_from_slice(&0u32.to_le_bytes());
            table.extend_from_slice(&hwcap.to_le_bytes());
        }
        let names: Vec<u32> = hwcaps.iter().map(|h| add(h, &mut strings)).collect();
        let mut file = NEW_MAGIC.to_vec();
        file.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        file.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        file.extend_from_slice(&[2, 0, 0, 0]);
        let extension_at = (base + strings.len() + 3) & !3;
        file.extend_from_slice(&(extension_at as u32).to_le_bytes());
        file.extend_from_slice(&[0; 12]);
        file.extend_from_slice(&table);
        file.extend_from_slice(&strings);
        file.resize(extension_at, 0);
        let data_at = extension_at + 8 + 16;
        file.extend_from_slice(&EXTENSION_MAGIC.to_le_bytes());
        file.extend_from_slice(&1u32.to_le_bytes());
        for v in [TAG_GLIBC_HWCAPS, 0, data_at as u32, names.len() as u32 * 4] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        for n in names {
            file.extend_from_slice(&n.to_le_bytes());
        }
        file
    }

    fn select(hwcaps: &[String]) -> Selector<'_> {
        Selector {
            flags: 0x303,
            hwcaps,
            isa_levels: Some(0b1111),
            legacy: None,
        }
    }

    #[test]
    fn glibc_hwcaps_entries_win_by_priority() {
        let file = new_cache(
            &[
                (
                    "libz.so.1",
                    "/lib64/glibc-hwcaps/x86-64-v2/libz.so.1",
                    HWCAP_EXTENSION | 1,
                ),
                (
                    "libz.so.1",
                    "/lib64/glibc-hwcaps/x86-64-v3/libz.so.1",
                    HWCAP_EXTENSION,
                ),
                ("libz.so.1", "/lib64/libz.so.1", 0),
                ("libcuda.so", "/lib64/libcuda.so", 0),
                ("libc.so.6", "/lib64/libc.so.6", 0),
            ],
            &["x86-64-v3", "x86-64-v2"],
        );
        let cache = Cache::parse(&file).unwrap();
        assert_eq!(cache.hwcaps, ["x86-64-v3", "x86-64-v2"]);
        let v4_v3_v2: Vec<String> = ["x86-64-v4", "x86-64-v3", "x86-64-v2"]
            .map(String::from)
            .to_vec();
        let found = cache.lookup(b"libz.so.1", &select(&v4_v3_v2));
        assert_eq!(
            found.path.as_ref().and_then(Bytes::to_str),
            Some("/lib64/glibc-hwcaps/x86-64-v3/libz.so.1")
        );
        // A CPU without v3: the v2 entry.
        let v2 = vec!["x86-64-v2".to_string()];
        let found = cache.lookup(b"libz.so.1", &select(&v2));
        assert_eq!(
            found.path.as_ref().and_then(Bytes::to_str),
            Some("/lib64/glibc-hwcaps/x86-64-v2/libz.so.1")
        );
        // No glibc-hwcaps at all: the plain entry.
        let found = cache.lookup(b"libz.so.1", &select(&[]));
        assert_eq!(
            found.path.as_ref().and_then(Bytes::to_str),
            Some("/lib64/libz.so.1")
        );
        assert_eq!(found.passed.len(), 2);
        assert_eq!(
            cache
                .lookup(b"libc.so.6", &select(&[]))
                .path
                .as_ref()
                .and_then(Bytes::to_str),
            Some("/lib64/libc.so.6")
        );
        assert_eq!(cache.lookup(b"libcuda.so.1", &select(&[])).path, None);
        assert_eq!(
            cache
                .lookup(b"libcuda.so", &select(&[]))
                .path
                .as_ref()
                .and_then(Bytes::to_str),
            Some("/lib64/libcuda.so")
        );
    }

    #[test]
    fn a_cache_of_another_machine_is_passed_over() {
        let mut file = new_cache(&[("libz.so.1", "/lib64/libz.so.1", 0)], &[]);
        let cache = Cache::parse(&file).unwrap();
        let aarch64 = Selector {
            flags: 0x0a03,
            ..select(&[])
        };
        let found = cache.lookup(b"libz.so.1", &aarch64);
        assert_eq!(found.path, None);
        assert!(found.passed[0].1.contains("flags 0x303"), "{found:?}");
        // Big-endian flags: the loader ignores the file.
        file[28] = 3;
        assert!(Cache::parse(&file).is_none());
        assert!(Cache::parse(b"not a cache at all, not at all").is_none());
    }
}
