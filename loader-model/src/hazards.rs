//! What a user of LD_FALLBACK_PATH should be warned about, found in the model's answer and
//! the tree: a fallback directory holding glibc's own libraries (a host glibc's NSS module in
//! another glibc's process), a `libcuda` whose helpers come from another directory (a compat
//! driver on the board's helpers), and a library found only through the fallback that a
//! host's ld.so.cache would find first.

use serde::Serialize;

use super::walk::Model;
use super::{Bytes, How, RequestOutcome, Rule};

/// One warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hazard {
    pub kind: HazardKind,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HazardKind {
    /// A fallback directory holds glibc's own libraries or NSS modules.
    GlibcInFallback,
    /// A `libcuda` whose helper libraries come from another directory.
    SplitDriver,
    /// Found only through the fallback, and a cache made from `/etc/ld.so.conf` would
    /// find it first.
    CacheWouldShadow,
}

/// What the split-driver hazard says of a driver on another directory's helpers: how sure that
/// is, as docs/jetson.md's rule `jit-mismatch` says (loader-tests' `replay::facts` holds the
/// two together).
pub const SPLIT_DRIVER_CAVEAT: &str = "Whether a driver works with the JIT helper (or another helper) of another driver release is not known (docs/jetson.md, rule `jit-mismatch`); the board's `libnvrm_*` are what cuda_compat is built to use";

/// glibc's own sonames (besides `ld-linux*` and `libnss_*`).
const GLIBC_LIBRARIES: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libmvec.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libresolv.so.2",
    "libutil.so.1",
    "libanl.so.1",
    "libnsl.so.1",
    "libBrokenLocale.so.1",
    "libthread_db.so.1",
    "libc_malloc_debug.so.0",
    "libmemusage.so",
    "libpcprofile.so",
];

/// Whether `name` is one of glibc's own libraries.
pub(crate) fn is_glibc_library(name: &[u8]) -> bool {
    GLIBC_LIBRARIES.iter().any(|l| l.as_bytes() == name)
        || name.starts_with(b"ld-linux")
        || (name.starts_with(b"libnss_") && name.ends_with(b".so.2"))
}

pub(super) fn find(m: &Model) -> Vec<Hazard> {
    let mut hazards = glibc_in_fallback(m);
    hazards.extend(split_driver(m));
    hazards.extend(cache_would_shadow(m));
    hazards
}

/// `items`, each as printed, joined by `, `.
fn listed(items: &[&Bytes]) -> String {
    items
        .iter()
        .map(|item| item.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn glibc_in_fallback(m: &Model) -> Vec<Hazard> {
    let Some((dirs, source)) = &m.fallback else {
        return Vec::new();
    };
    // Where the program's own glibc lives: the directory of the libc.so.6 it maps.
    let libc_dir = m
        .loads
        .iter()
        .filter(|l| l.name == "libc.so.6")
        .find_map(|l| l.mapped().and_then(|path| dir_of(path)));
    let mut hazards = Vec::new();
    for dir in dirs {
        let names: Vec<Bytes> = m
            .tree
            .list(dir)
            .into_iter()
            .filter(|n| is_glibc_library(n))
            .collect();
        if names.is_empty() {
            continue;
        }
        let mut text = format!(
            "{source} directory {dir} holds glibc's own libraries ({}). The fallback is searched last, so they are used only where nothing else provides the name",
            listed(&names.iter().collect::<Vec<_>>())
        );
        // NSS modules are dlopened by libc by name: one the program's glibc lacks comes from
        // here, built against another glibc.
        if let Some(libc_dir) = &libc_dir {
            let own = m.tree.list(libc_dir);
            let missing: Vec<&Bytes> = names
                .iter()
                .filter(|n| n.starts_with(b"libnss_") && !own.contains(n))
                .collect();
            if !missing.is_empty() {
                text.push_str(&format!(
                    "; the program's glibc ({libc_dir}) has no {}: an NSS lookup that needs one (per /etc/nsswitch.conf) would load this directory's copy into a process of another glibc",
                    listed(&missing)
                ));
            }
        }
        let taken: Vec<&Bytes> = m
            .loads
            .iter()
            .filter(|l| {
                matches!(
                    &l.outcome,
                    RequestOutcome::Mapped {
                        rule: Rule::Fallback { .. },
                        ..
                    }
                )
            })
            .filter(|l| is_glibc_library(&l.name))
            .map(|l| &l.name)
            .collect();
        if !taken.is_empty() {
            text.push_str(&format!(
                "; this run takes {} from the fallback",
                listed(&taken)
            ));
        }
        hazards.push(Hazard {
            kind: HazardKind::GlibcInFallback,
            text,
        });
    }
    hazards
}

fn split_driver(m: &Model) -> Vec<Hazard> {
    let mut hazards = Vec::new();
    for driver in m
        .loads
        .iter()
        .filter(|l| l.name.starts_with(b"libcuda.so") || l.name.contains_bytes(b"/libcuda.so"))
    {
        let Some(path) = driver.mapped() else {
            continue;
        };
        let Some(driver_dir) = dir_of(path) else {
            continue;
        };
        let helpers: Vec<String> = m
            .loads
            .iter()
            .filter(|l| l.requested_by == *path && matches!(l.how, How::Needed | How::Dlopen))
            .filter(|l| !is_glibc_library(&l.name))
            .filter_map(|l| {
                let (helper, rule) = match &l.outcome {
                    RequestOutcome::Mapped { path, rule } => (path, rule.to_string()),
                    RequestOutcome::AlreadyLoaded { path, .. } => (path, "already loaded".into()),
                    _ => return None,
                };
                (dir_of(helper).as_ref() != Some(&driver_dir)).then(|| format!("{helper} ({rule})"))
            })
            .collect();
        if !helpers.is_empty() {
            hazards.push(Hazard {
                kind: HazardKind::SplitDriver,
                text: format!(
                    "{path} takes its helpers from other directories: {}. {SPLIT_DRIVER_CAVEAT}",
                    helpers.join(", ")
                ),
            });
        }
    }
    hazards
}

/// `path` without the slashes it ends in.
fn trimmed(path: &[u8]) -> &[u8] {
    let end = path.iter().rposition(|&b| b != b'/').map_or(0, |at| at + 1);
    &path[..end]
}

fn cache_would_shadow(m: &Model) -> Vec<Hazard> {
    let conf = ld_so_conf(m, b"/etc/ld.so.conf", 0);
    let mut hazards = Vec::new();
    for load in &m.loads {
        let RequestOutcome::Mapped {
            path,
            rule: Rule::Fallback { .. },
        } = &load.outcome
        else {
            continue;
        };
        let here = dir_of(path).unwrap_or_default();
        let elsewhere: Vec<Bytes> = conf
            .iter()
            .filter(|dir| trimmed(dir) != trimmed(&here))
            .map(|dir| Bytes::from(trimmed(dir)).join(&[b"/", &load.name]))
            .filter(|candidate| m.tree.open(candidate, b"/").is_ok())
            .collect();
        if !elsewhere.is_empty() {
            hazards.push(Hazard {
                kind: HazardKind::CacheWouldShadow,
                text: format!(
                    "{} is found only through the fallback ({path}), but /etc/ld.so.conf lists {}: on a host whose ld.so.cache is made from it, the cache (searched first) takes that copy instead",
                    load.name,
                    listed(&elsewhere.iter().collect::<Vec<_>>())
                ),
            });
        }
    }
    hazards
}

/// The directories `ldconfig` would read from `file` and the files it includes.
fn ld_so_conf(m: &Model, file: &[u8], depth: usize) -> Vec<Bytes> {
    let Ok(opened) = m.tree.open(file, b"/") else {
        return Vec::new();
    };
    let Ok(bytes) = m.tree.read(&opened, super::fs::LD_SO_CONF) else {
        return Vec::new();
    };
    let base = dir_of(file).unwrap_or_else(|| Bytes::from("/"));
    let words = |line: &[u8]| -> Vec<Vec<u8>> {
        line.split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    };
    let mut dirs = Vec::new();
    for line in bytes.split(|&b| b == b'\n') {
        let line = line
            .split(|&b| b == b'#')
            .next()
            .unwrap_or(b"")
            .trim_ascii();
        if let Some(patterns) = line.strip_prefix(b"include") {
            if depth > 8 {
                continue;
            }
            for pattern in words(patterns) {
                let pattern = if pattern.starts_with(b"/") {
                    Bytes::from(pattern)
                } else {
                    base.join(&[b"/", &pattern])
                };
                for included in glob(m, &pattern) {
                    dirs.extend(ld_so_conf(m, &included, depth + 1));
                }
            }
        } else if line.starts_with(b"/") {
            // Old syntax: `dir=TYPE`.
            for dir in words(line) {
                let name = dir.split(|&b| b == b'=').next().unwrap_or(&dir);
                dirs.push(Bytes::from(name));
            }
        }
    }
    dirs
}

/// Files matching `pattern`, whose last component may hold `*`.
fn glob(m: &Model, pattern: &Bytes) -> Vec<Bytes> {
    let (dir, last) = match pattern.iter().rposition(|&b| b == b'/') {
        Some(at) => (&pattern[..at], &pattern[at + 1..]),
        None => (&b""[..], &pattern[..]),
    };
    if !last.contains(&b'*') {
        return vec![pattern.clone()];
    }
    let parts: Vec<&[u8]> = last.split(|&b| b == b'*').collect();
    m.tree
        .list(if dir.is_empty() { b"/" } else { dir })
        .into_iter()
        .filter(|name| {
            let mut rest: &[u8] = name;
            for (i, part) in parts.iter().enumerate() {
                if i == 0 {
                    let Some(r) = rest.strip_prefix(*part) else {
                        return false;
                    };
                    rest = r;
                } else if i == parts.len() - 1 {
                    return rest.ends_with(part);
                } else {
                    let Some(at) = super::bytes::find(rest, part) else {
                        return false;
                    };
                    rest = &rest[at + part.len()..];
                }
            }
            true
        })
        .map(|name| Bytes::from(dir).join(&[b"/", &name]))
        .collect()
}

/// The directory part of a path.
fn dir_of(path: &[u8]) -> Option<Bytes> {
    super::paths::lexical_dir(path)
}
