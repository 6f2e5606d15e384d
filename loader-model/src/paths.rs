//! Directory lists as the loader builds them: `$ORIGIN`, `$LIB` and `$PLATFORM` expanded
//! (`_dl_dst_substitute`, with its secure-mode rules), entries split and normalised as
//! `fillin_rpath` does (trailing slashes, no repeats within a list), and the per-directory
//! memory of `open_path`: a directory found missing is never tried again, in any list.

use std::collections::HashMap;

use super::fs::Tree;
use super::platform::LoaderFacts;

/// What `$ORIGIN` means for the object whose entry is expanded.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// `l_origin`: the object's directory, or `None` where the loader cannot tell.
    pub dir: Option<String>,
    /// The main program (secure mode checks its `$ORIGIN` paths for trust).
    pub is_program: bool,
}

/// Expands the dynamic string tokens of one path element (`_dl_dst_substitute`); `None`
/// when the element must be dropped (a token without a value, or refused in secure mode).
pub(crate) fn expand(
    input: &str,
    origin: &Origin,
    facts: &LoaderFacts,
    secure: bool,
) -> Option<String> {
    let bytes = input.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut check_trusted = false;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            let next = input[i..].find('$').map_or(input.len(), |n| i + n);
            out.push_str(&input[i..next]);
            i = next;
            continue;
        }
        let rest = &input[i + 1..];
        if let Some(len) = token(rest, "ORIGIN") {
            // In secure mode $ORIGIN counts only at the very start of the element, alone
            // or followed by `/`.
            let at_start = i == 0 && matches!(rest.as_bytes().get(len), None | Some(b'/'));
            if secure && !at_start {
                return None;
            }
            out.push_str(origin.dir.as_deref()?);
            check_trusted = secure && origin.is_program;
            i += 1 + len;
        } else if let Some(len) = token(rest, "PLATFORM") {
            out.push_str(&facts.cpu.platform);
            i += 1 + len;
        } else if let Some(len) = token(rest, "LIB") {
            out.push_str(&facts.dst_lib);
            i += 1 + len;
        } else {
            out.push('$');
            i += 1;
        }
    }
    if check_trusted && !is_trusted(&out, facts) {
        return None;
    }
    Some(out)
}

/// `is_dst`: the length of `$NAME` or `${NAME}` at the start of `rest` (after the `$`).
fn token(rest: &str, name: &str) -> Option<usize> {
    let (curly, body) = match rest.strip_prefix('{') {
        Some(body) => (true, body),
        None => (false, rest),
    };
    let after = body.strip_prefix(name)?;
    let next = after.bytes().next();
    if curly {
        (next == Some(b'}')).then_some(name.len() + 2)
    } else {
        let ident = next.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
        (!ident).then_some(name.len())
    }
}

/// `is_trusted_path_normalize`: `path`, with `.`, `..` and `//` resolved lexically, lies in
/// a default directory.
fn is_trusted(path: &str, facts: &LoaderFacts) -> bool {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    let normal = format!("/{}/", parts.join("/")).replace("//", "/");
    facts.is_system_dir(&normal)
}

/// One directory of a list, as `fillin_rpath` stores it: the name ends in `/`, except for
/// the empty name of an empty `LD_LIBRARY_PATH` entry (the current directory).
pub(crate) type Dir = String;

/// Splits `list` at any of `separators` and expands each element, as `fillin_rpath` does:
/// elements that expand to nothing are dropped, trailing slashes become one, and a directory
/// already in the list is not added again.
pub(crate) fn decompose(
    list: &str,
    separators: &[char],
    origin: &Origin,
    facts: &LoaderFacts,
    secure: bool,
) -> Vec<Dir> {
    let mut dirs: Vec<Dir> = Vec::new();
    for element in list.split(separators) {
        let dir = if element.is_empty() {
            // An empty element of LD_LIBRARY_PATH: the current directory, named "".
            String::new()
        } else {
            let Some(expanded) = expand(element, origin, facts, secure) else {
                continue;
            };
            if expanded.is_empty() {
                continue;
            }
            let trimmed = expanded.trim_end_matches('/');
            if trimmed.is_empty() {
                "/".to_string()
            } else {
                format!("{trimmed}/")
            }
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
    list: &str,
    origin: &Origin,
    facts: &LoaderFacts,
) -> (Vec<Dir>, Vec<Dir>) {
    let (kept, dropped): (Vec<Dir>, Vec<Dir>) = decompose(list, &[':', ';'], origin, facts, false)
        .into_iter()
        .partition(|dir| dir.starts_with('/'));
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
    pub(crate) fn status(&mut self, dir: &str, cap: usize) -> Status {
        self.record(dir)[cap]
    }

    fn record(&mut self, dir: &str) -> &mut Vec<Status> {
        let ncaps = self.ncaps;
        self.records.entry(dir.to_string()).or_insert_with(|| {
            // A relative directory is never given up on: the working directory may change.
            let initial = if dir.starts_with('/') {
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
        cwd: &str,
        (dir, cap, subdir): (&str, usize, &str),
        opened: bool,
    ) {
        let record = self.record(dir);
        if record[cap] != Status::Unknown {
            return;
        }
        let exists = opened || tree.is_dir(&format!("{dir}{subdir}"), cwd);
        record[cap] = if exists {
            Status::Existing
        } else {
            Status::Missing
        };
    }
}

/// The directory part of an absolute path, as `_dl_new_object` computes `l_origin`: the
/// text before the last `/` (`/` itself for a file in `/`), `.` and `..` kept as written.
pub(super) fn lexical_dir(path: &str) -> Option<String> {
    let cut = path.rfind('/')?;
    Some(if cut == 0 {
        "/".to_string()
    } else {
        path[..cut].to_string()
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
            expand("$ORIGIN/../fb", &o, &f, false).unwrap(),
            "/opt/app/bin/../fb"
        );
        assert_eq!(
            expand("${ORIGIN}/x:$LIB/$PLATFORM", &o, &f, false).unwrap(),
            "/opt/app/bin/x:lib64/haswell"
        );
        // Not a token: kept as written.
        assert_eq!(
            expand("$ORIGINAL/$HOME", &o, &f, false).unwrap(),
            "$ORIGINAL/$HOME"
        );
        // No origin known: the element is dropped.
        let unknown = Origin {
            dir: None,
            is_program: false,
        };
        assert_eq!(expand("$ORIGIN/lib", &unknown, &f, false), None);
    }

    #[test]
    fn secure_mode_takes_origin_only_at_the_start_and_trusted() {
        let f = facts();
        let trusted = program("/usr/lib64/app");
        assert_eq!(
            expand("$ORIGIN/../x", &trusted, &f, true).unwrap(),
            "/usr/lib64/app/../x"
        );
        assert_eq!(expand("/a/$ORIGIN", &trusted, &f, true), None);
        assert_eq!(expand("$ORIGIN/../x", &program("/opt/app"), &f, true), None);
        assert_eq!(expand("$ORIGIN/../../../x", &trusted, &f, true), None);
    }

    #[test]
    fn lists_lose_repeats_and_trailing_slashes() {
        let f = facts();
        let o = program("/bin");
        assert_eq!(
            decompose("/a//:/b:/a:;/c;", &[':', ';'], &o, &f, false),
            ["/a/", "/b/", "", "/c/"]
        );
        assert_eq!(decompose("/", &[':'], &o, &f, false), ["/"]);
    }

    #[test]
    fn the_fallback_list_keeps_only_absolute_directories() {
        let f = facts();
        let o = program("/opt/app/bin");
        let fallback = |list: &str| decompose_fallback(list, &o, &f);
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
            decompose_fallback("$ORIGIN/lib:/x", &unknown, &f),
            (vec!["/x/".to_string()], vec![])
        );
        // LD_LIBRARY_PATH, decomposed by the same code, keeps them all.
        assert_eq!(
            decompose(".::lib:/x", &[':', ';'], &o, &f, false),
            ["./", "", "lib/", "/x/"]
        );
    }
}
