//! Directory lists as the loader builds them: `$ORIGIN`, `$LIB` and `$PLATFORM` expanded
//! (`_dl_dst_substitute`, with its secure-mode rules), entries split and normalised as
//! `fillin_rpath` does (trailing slashes, no repeats within a list), and the per-directory
//! memory of `open_path`: a directory found missing is never tried again, in any list.

use std::collections::HashMap;

use super::fs::Tree;
use super::platform::LoaderFacts;
use super::Bytes;

/// What `$ORIGIN` means for the object whose entry is expanded.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// `l_origin`: the object's directory, or `None` where the loader cannot tell.
    pub dir: Option<Bytes>,
    /// The main program (secure mode checks its `$ORIGIN` paths for trust).
    pub is_program: bool,
}

/// Expands the dynamic string tokens of one path element (`_dl_dst_substitute`); `None`
/// when the element must be dropped (a token without a value, or refused in secure mode).
pub(crate) fn expand(
    input: &[u8],
    origin: &Origin,
    facts: &LoaderFacts,
    secure: bool,
) -> Option<Bytes> {
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut check_trusted = false;
    while i < input.len() {
        if input[i] != b'$' {
            let next = input[i..]
                .iter()
                .position(|&b| b == b'$')
                .map_or(input.len(), |n| i + n);
            out.extend_from_slice(&input[i..next]);
            i = next;
            continue;
        }
        let rest = &input[i + 1..];
        if let Some(len) = token(rest, b"ORIGIN") {
            // In secure mode $ORIGIN counts only at the very start of the element, alone
            // or followed by `/`.
            let at_start = i == 0 && matches!(rest.get(len), None | Some(b'/'));
            if secure && !at_start {
                return None;
            }
            out.extend_from_slice(origin.dir.as_deref()?);
            check_trusted = secure && origin.is_program;
            i += 1 + len;
        } else if let Some(len) = token(rest, b"PLATFORM") {
            out.extend_from_slice(facts.cpu.platform.as_bytes());
            i += 1 + len;
        } else if let Some(len) = token(rest, b"LIB") {
            out.extend_from_slice(facts.dst_lib.as_bytes());
            i += 1 + len;
        } else {
            out.push(b'$');
            i += 1;
        }
    }
    if check_trusted && !is_trusted(&out, facts) {
        return None;
    }
    Some(Bytes::from(out))
}

/// `is_dst`: the length of `$NAME` or `${NAME}` at the start of `rest` (after the `$`).
fn token(rest: &[u8], name: &[u8]) -> Option<usize> {
    let (curly, body) = match rest.strip_prefix(b"{") {
        Some(body) => (true, body),
        None => (false, rest),
    };
    let after = body.strip_prefix(name)?;
    let next = after.first().copied();
    if curly {
        (next == Some(b'}')).then_some(name.len() + 2)
    } else {
        let ident = next.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
        (!ident).then_some(name.len())
    }
}

/// `is_trusted_path_normalize`: `path`, with `.`, `..` and `//` resolved lexically, lies in
/// a default directory.
fn is_trusted(path: &[u8], facts: &LoaderFacts) -> bool {
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    let mut normal = b"/".to_vec();
    for part in parts {
        normal.extend_from_slice(part);
        normal.push(b'/');
    }
    facts.is_system_dir(&normal)
}

/// One directory of a list, as `fillin_rpath` stores it: the name ends in `/`, except for
/// the empty name of an empty `LD_LIBRARY_PATH` entry (the current directory).
pub(crate) type Dir = Bytes;

/// Splits `list` at any of `separators` and expands each element, as `fillin_rpath` does:
/// elements that expand to nothing are dropped, trailing slashes become one, and a directory
/// already in the list is not added again.
pub(crate) fn decompose(
    list: &[u8],
    separators: &[u8],
    origin: &Origin,
    facts: &LoaderFacts,
    secure: bool,
) -> Vec<Dir> {
    let mut dirs: Vec<Dir> = Vec::new();
    for element in list.split(|b| separators.contains(b)) {
        let dir = if element.is_empty() {
            // An empty element of LD_LIBRARY_PATH: the current directory, named "".
            Bytes::new()
        } else {
            let Some(expanded) = expand(element, origin, facts, secure) else {
                continue;
            };
            if expanded.is_empty() {
                continue;
            }
            let end = expanded
                .iter()
                .rposition(|&b| b != b'/')
                .map_or(0, |at| at + 1);
            let mut dir = expanded[..end].to_vec();
            dir.push(b'/');
            Bytes::from(dir)
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The fallback list as `_dl_init_fallback_paths` keeps it: decomposed exactly as
/// LD_LIBRARY_PATH is (the same `fillin_rpath` call, so an empty entry becomes the current
/// directory "" there too), then every directory whose name does not start with `/` dropped:
/// an empty entry, and an entry that is relative after `$ORIGIN`, `$LIB` and `$PLATFORM` are
/// expanded. Returns the directories kept and the relative ones dropped (empty entries
/// aside), in list order. The fallback-first variant only moves the search, so it keeps the
/// same list.
pub(crate) fn decompose_fallback(
    list: &[u8],
    origin: &Origin,
    facts: &LoaderFacts,
) -> (Vec<Dir>, Vec<Dir>) {
    let (kept, dropped): (Vec<Dir>, Vec<Dir>) = decompose(list, b":;", origin, facts, false)
        .into_iter()
        .partition(|dir| dir.starts_with(b"/"));
    let relative = dropped.into_iter().filter(|dir| !dir.is_empty()).collect();
    (kept, relative)
}

/// What the loader remembers about a directory and subdirectory (`r_dir_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Unknown,
    Existing,
    Missing,
}

/// The loader's directory memory (`GL(dl_all_dirs)`): one record per directory name, shared
/// by every list, with a status per subdirectory (glibc-hwcaps ..., then the directory).
#[derive(Debug, Default)]
pub(crate) struct DirMemory {
    records: HashMap<Dir, Vec<Status>>,
    /// How many subdirectories each directory has (the last is the directory itself).
    ncaps: usize,
}

impl DirMemory {
    pub(crate) fn new(ncaps: usize) -> DirMemory {
        DirMemory {
            records: HashMap::new(),
            ncaps,
        }
    }

    /// The status of `dir` + `subdirs[cap]`.
    pub(crate) fn status(&mut self, dir: &[u8], cap: usize) -> Status {
        self.record(dir)[cap]
    }

    fn record(&mut self, dir: &[u8]) -> &mut Vec<Status> {
        let ncaps = self.ncaps;
        self.records.entry(Bytes::from(dir)).or_insert_with(|| {
            // A relative directory is never given up on: the working directory may change.
            let initial = if dir.starts_with(b"/") {
                Status::Unknown
            } else {
                Status::Existing
            };
            vec![initial; ncaps]
        })
    }

    /// After a failed try in `dir` + `subdir`: it is remembered as existing or missing.
    pub(crate) fn learn(
        &mut self,
        tree: &Tree,
        cwd: &[u8],
        (dir, cap, subdir): (&[u8], usize, &str),
        opened: bool,
    ) {
        let record = self.record(dir);
        if record[cap] != Status::Unknown {
            return;
        }
        let exists = opened || tree.is_dir(&[dir, subdir.as_bytes()].concat(), cwd);
        record[cap] = if exists {
            Status::Existing
        } else {
            Status::Missing
        };
    }
}

/// The directory part of an absolute path, as `_dl_new_object` computes `l_origin`: the
/// bytes before the last `/` (`/` itself for a file in `/`), `.` and `..` kept as written.
pub(super) fn lexical_dir(path: &[u8]) -> Option<Bytes> {
    let cut = path.iter().rposition(|&b| b == b'/')?;
    Some(if cut == 0 {
        Bytes::from("/")
    } else {
        Bytes::from(&path[..cut])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Cpu, GlibcVersion};
    use model::Target;

    fn facts() -> LoaderFacts {
        LoaderFacts::new(
            Some("/lib64/ld-linux-x86-64.so.2".into()),
            b"\0/lib64/\0/usr/lib64/\0",
            GlibcVersion::parse("2.44").unwrap(),
            Target::X86_64,
            model::Flavour::Patched,
            Cpu {
                platform: "haswell".into(),
                isa_levels: 1,
                legacy_hwcaps: Vec::new(),
                legacy_platform_bit: None,
                source: String::new(),
            },
        )
    }

    fn program(dir: &str) -> Origin {
        Origin {
            dir: Some(dir.into()),
            is_program: true,
        }
    }

    #[test]
    fn tokens_expand_like_glibc() {
        let f = facts();
        let o = program("/opt/app/bin");
        assert_eq!(
            expand(b"$ORIGIN/../fb", &o, &f, false).unwrap(),
            "/opt/app/bin/../fb"
        );
        assert_eq!(
            expand(b"${ORIGIN}/x:$LIB/$PLATFORM", &o, &f, false).unwrap(),
            "/opt/app/bin/x:lib64/haswell"
        );
        // Not a token: kept as written.
        assert_eq!(
            expand(b"$ORIGINAL/$HOME", &o, &f, false).unwrap(),
            "$ORIGINAL/$HOME"
        );
        // No origin known: the element is dropped.
        let unknown = Origin {
            dir: None,
            is_program: false,
        };
        assert_eq!(expand(b"$ORIGIN/lib", &unknown, &f, false), None);
    }

    #[test]
    fn secure_mode_takes_origin_only_at_the_start_and_trusted() {
        let f = facts();
        let trusted = program("/usr/lib64/app");
        assert_eq!(
            expand(b"$ORIGIN/../x", &trusted, &f, true).unwrap(),
            "/usr/lib64/app/../x"
        );
        assert_eq!(expand(b"/a/$ORIGIN", &trusted, &f, true), None);
        assert_eq!(
            expand(b"$ORIGIN/../x", &program("/opt/app"), &f, true),
            None
        );
        assert_eq!(expand(b"$ORIGIN/../../../x", &trusted, &f, true), None);
    }

    #[test]
    fn lists_lose_repeats_and_trailing_slashes() {
        let f = facts();
        let o = program("/bin");
        assert_eq!(
            decompose(b"/a//:/b:/a:;/c;", b":;", &o, &f, false),
            ["/a/", "/b/", "", "/c/"]
        );
        assert_eq!(decompose(b"/", b":", &o, &f, false), ["/"]);
    }

    #[test]
    fn the_fallback_list_keeps_only_absolute_directories() {
        let f = facts();
        let o = program("/opt/app/bin");
        let fallback = |list: &str| {
            let (kept, relative) = decompose_fallback(list.as_bytes(), &o, &f);
            let text = |dirs: Vec<Bytes>| -> Vec<String> {
                dirs.iter()
                    .map(|d| d.to_str().unwrap().to_string())
                    .collect()
            };
            (text(kept), text(relative))
        };
        // Empty entries: dropped, and not reported (they have no name).
        assert_eq!(fallback(":/x::"), (vec!["/x/".to_string()], vec![]));
        assert_eq!(fallback(""), (vec![], vec![]));
        // Relative entries, as written or after the expansion of $LIB and $PLATFORM.
        assert_eq!(
            fallback(".:lib:/x;$LIB;$PLATFORM/fb;./"),
            (
                vec!["/x/".to_string()],
                vec![
                    "./".to_string(),
                    "lib/".to_string(),
                    "lib64/".to_string(),
                    "haswell/fb/".to_string()
                ]
            )
        );
        // Absolute once expanded: kept; an $ORIGIN without a value: dropped as it is for
        // LD_LIBRARY_PATH, not reported as relative.
        assert_eq!(
            fallback("$ORIGIN/../lib:/$LIB"),
            (
                vec!["/opt/app/bin/../lib/".to_string(), "/lib64/".to_string()],
                vec![]
            )
        );
        let unknown = Origin {
            dir: None,
            is_program: true,
        };
        assert_eq!(
            decompose_fallback(b"$ORIGIN/lib:/x", &unknown, &f),
            (vec![Bytes::from("/x/")], vec![])
        );
        // LD_LIBRARY_PATH, decomposed by the same code, keeps them all.
        assert_eq!(
            decompose(b".::lib:/x", b":;", &o, &f, false),
            ["./", "", "lib/", "/x/"]
        );
    }
}
