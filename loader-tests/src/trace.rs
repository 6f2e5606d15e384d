//! Reading `LD_DEBUG=libs` traces of the real loader. [`explain`] explains a miss like libtree:
//! every directory the loader considered, in order, with the source of that directory and what
//! it found there. [`normalize_trace`] makes a trace comparable across runs and machines.

use std::fmt::Write;
use std::path::Path;

/// One directory of one search.
#[derive(Debug)]
struct SearchedDir {
    source: String,
    dir: String,
    tried: Vec<String>,
    present: bool,
}

/// Explains every `find library=` search of the trace except for libc itself; `root` is the
/// scenario root on the host, used to tell an absent file from one the loader rejected.
pub(crate) fn explain(trace: &str, root: &Path) -> String {
    let mut searches: Vec<(String, Vec<SearchedDir>)> = Vec::new();
    let mut initialised: Vec<String> = Vec::new();
    let mut source = String::new();
    let mut searching = false;
    for line in trace.lines().map(strip_pid) {
        let text = line.trim();
        if let Some(rest) = text.strip_prefix("find library=") {
            let name = rest.split([' ', ';']).next().unwrap_or(rest).to_string();
            searching = !name.starts_with("libc.so");
            if searching {
                searches.push((name, Vec::new()));
            }
        } else if let Some(path) = text.strip_prefix("calling init: ") {
            initialised.push(path.trim().to_string());
        } else if !searching {
            continue;
        } else if let Some(rest) = text.strip_prefix("search path=") {
            let label = rest.rsplit_once('\t').map(|(_, l)| l).unwrap_or("");
            source = source_label(label.trim());
        } else if let Some(cache) = text.strip_prefix("search cache=") {
            source = "cache".into();
            searches.last_mut().expect("searching").1.push(SearchedDir {
                source: source.clone(),
                dir: cache.trim().to_string(),
                tried: Vec::new(),
                present: false,
            });
        } else if let Some(path) = text.strip_prefix("trying file=") {
            let path = path.split_whitespace().next().unwrap_or(path).to_string();
            let dir = base_dir(&path);
            let present = root.join(path.trim_start_matches('/')).exists();
            let steps = &mut searches.last_mut().expect("searching").1;
            // A cache hit: the entry's directory replaces the cache file's name.
            if let Some(last) = steps.last_mut() {
                if last.source == "cache" && last.tried.is_empty() && source == "cache" {
                    last.dir = dir.clone();
                }
            }
            match steps.last_mut() {
                Some(last) if last.dir == dir && last.source == source => {
                    last.present |= present;
                    last.tried.push(path);
                }
                _ => steps.push(SearchedDir {
                    source: source.clone(),
                    dir,
                    tried: vec![path],
                    present,
                }),
            }
        }
    }
    let mut out = String::new();
    for (name, steps) in &searches {
        render(&mut out, name, steps, &initialised);
    }
    if out.is_empty() {
        out.push_str("(the trace shows no library search)\n");
    }
    out
}

fn render(out: &mut String, name: &str, steps: &[SearchedDir], initialised: &[String]) {
    let _ = writeln!(out, "{name}:");
    let width = steps.iter().map(|s| s.source.len()).max().unwrap_or(0);
    let dir_width = steps.iter().map(|s| s.dir.len()).max().unwrap_or(0);
    let mut loaded = false;
    for (i, step) in steps.iter().enumerate() {
        let found = if step.tried.is_empty() {
            "no entry"
        } else if step.tried.iter().any(|t| initialised.contains(t)) {
            loaded = true;
            "loaded"
        } else if step.present && i + 1 == steps.len() {
            // The search stopped here: the loader took it (no init call: a listing run).
            loaded = true;
            "present, taken"
        } else if step.present {
            "present, rejected"
        } else {
            "absent"
        };
        let _ = writeln!(
            out,
            "  {:width$}  {:dir_width$}  {found}",
            step.source, step.dir
        );
    }
    if !loaded {
        let _ = writeln!(out, "  -> not found");
    }
}

/// An `LD_DEBUG=libs` trace made comparable across runs and machines: no pids, no
/// addresses, and no `glibc-hwcaps` subdirectories (which ones exist depends on the CPU).
pub(crate) fn normalize_trace(trace: &str) -> String {
    let mut out = String::new();
    let mut dropped = false;
    for line in trace.lines().map(strip_pid) {
        // 2.43+ follows each failed try with "(no such file)": it goes with its try.
        if dropped && line.trim() == "(no such file)" {
            continue;
        }
        dropped = line.contains("/glibc-hwcaps/") && line.contains("trying file=");
        if dropped {
            continue;
        }
        let line = match line.split_once("search path=") {
            Some((head, rest)) => {
                let (dirs, label) = rest.split_once('\t').unwrap_or((rest, ""));
                let kept: Vec<&str> = dirs
                    .split(':')
                    .filter(|d| !d.contains("/glibc-hwcaps/"))
                    .collect();
                format!("{head}search path={}\t{label}", kept.join(":"))
            }
            None => line.to_string(),
        };
        out.push_str(&mask_addresses(line.trim_end()));
        out.push('\n');
    }
    out
}

fn mask_addresses(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        let digits = rest[i + 2..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        out.push_str(if digits > 0 { "0xADDR" } else { "0x" });
        rest = &rest[i + 2 + digits..];
    }
    out.push_str(rest);
    out
}

/// One library the traced loader looked for: a search (`find library=`) or, for a name with
/// a slash, an open, with who asked and every file it tried, in order. Needs
/// `LD_DEBUG=libs,files` (`files` says who asked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Traced {
    pub namespace: usize,
    pub name: String,
    /// The requesting object (the program as `argv[0]`), when `files` was traced.
    pub requested_by: Option<String>,
    /// A `dlopen` (`dynamically loaded by`) rather than a DT_NEEDED entry.
    pub dlopen: bool,
    /// The requester's namespace (a `dlmopen` into a new one differs from `namespace`).
    pub requester_namespace: usize,
    /// Every `trying file=`, in order; for a name with a slash, the name.
    pub tried: Vec<String>,
    /// `generating link map` followed: a new object was mapped.
    pub mapped_new: bool,
    /// The last try was ld.so.cache's answer: printed before the loader checks it (a
    /// `-z nodefaultlib` loader then passes over an entry in a default directory).
    pub last_from_cache: bool,
}

/// Every search and open of a `LD_DEBUG=libs,files` trace of one process, in order.
pub(crate) fn searches(trace: &str) -> Vec<Traced> {
    let mut out: Vec<Traced> = Vec::new();
    // The last `file=NAME [ns];  needed by / dynamically loaded by X [ns]` line.
    let mut asked: Option<Traced> = None;
    let mut in_cache = false;
    for line in trace.lines().map(strip_pid) {
        // The loader indents with tabs and spaces; a path ends at the line's end, whatever
        // it ends with (a space, or a non-breaking one, is part of it).
        let text = line.trim_start_matches([' ', '\t']);
        if text.starts_with("search cache=") {
            in_cache = true;
        } else if text.starts_with("search path=") {
            in_cache = false;
        }
        if let Some(rest) = text.strip_prefix("find library=") {
            let (name, namespace) = name_and_namespace(rest);
            let mut search = match asked.take() {
                Some(a) if a.name == name && a.namespace == namespace => a,
                _ => Traced {
                    namespace,
                    name: name.clone(),
                    requested_by: None,
                    dlopen: false,
                    requester_namespace: namespace,
                    tried: Vec::new(),
                    mapped_new: false,
                    last_from_cache: false,
                },
            };
            search.tried.clear();
            in_cache = false;
            out.push(search);
        } else if let Some(path) = text.strip_prefix("trying file=") {
            if let Some(last) = out.last_mut() {
                last.tried.push(path.to_string());
                last.last_from_cache = in_cache;
            }
        } else if let Some(rest) = text.strip_prefix("file=") {
            let (name, namespace) = name_and_namespace(rest);
            let detail = rest.split_once("];").map_or("", |(_, d)| d.trim());
            if detail == "generating link map" {
                if let Some(a) = asked.take().filter(|a| a.name == name) {
                    // A name with a slash: opened without a search.
                    out.push(Traced {
                        tried: vec![name.clone()],
                        ..a
                    });
                }
                if let Some(last) = out.last_mut().filter(|l| l.name == name) {
                    last.mapped_new = true;
                }
                continue;
            }
            let (dlopen, by) = match (
                detail.strip_prefix("needed by "),
                detail.strip_prefix("dynamically loaded by "),
            ) {
                (Some(by), _) => (false, by),
                (_, Some(by)) => (true, by),
                _ => continue,
            };
            // A slash name that failed to open leaves this pending: record it as tried.
            if let Some(a) = asked.take().filter(|a| a.name.contains('/')) {
                out.push(Traced {
                    tried: vec![a.name.clone()],
                    ..a
                });
            }
            let (by, by_namespace) = match by.rsplit_once(" [") {
                Some((by, ns)) => (by, ns.trim_end_matches(']').parse().unwrap_or(0)),
                None => (by, 0),
            };
            asked = Some(Traced {
                namespace,
                name,
                requested_by: Some(by.to_string()),
                dlopen,
                requester_namespace: by_namespace,
                tried: Vec::new(),
                mapped_new: false,
                last_from_cache: false,
            });
        }
    }
    if let Some(a) = asked.filter(|a| a.name.contains('/')) {
        out.push(Traced {
            tried: vec![a.name.clone()],
            ..a
        });
    }
    out
}

/// `NAME [NS]; ...` as (NAME, NS).
fn name_and_namespace(rest: &str) -> (String, usize) {
    let (name, tail) = rest.split_once(" [").unwrap_or((rest, "0]"));
    let namespace = tail
        .split(']')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (name.to_string(), namespace)
}

/// `      1234:\tsearch ...` -> `search ...`
fn strip_pid(line: &str) -> &str {
    let trimmed = line.trim_start();
    match trimmed.split_once(':') {
        Some((pid, rest)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => line,
    }
}

fn source_label(label: &str) -> String {
    let inner = label.trim_start_matches('(').trim_end_matches(')');
    if let Some(file) = inner.strip_prefix("RUNPATH from file ") {
        return format!("RUNPATH of {file}");
    }
    if let Some(file) = inner.strip_prefix("RPATH from file ") {
        return format!("RPATH of {file}");
    }
    match inner {
        "system search path" => "system".into(),
        "LD_FALLBACK_PATH" | "--fallback-path" => format!("fallback ({inner})"),
        other => other.into(),
    }
}

/// The search-path entry a tried file came from: hwcaps subdirectories fold into it.
fn base_dir(path: &str) -> String {
    let dir = Path::new(path)
        .parent()
        .and_then(Path::to_str)
        .unwrap_or("")
        .to_string();
    match dir.find("/glibc-hwcaps/") {
        Some(i) => dir[..i].to_string(),
        None => dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_becomes_one_line_per_directory() {
        let trace = "\
      17:\tfind library=libcuda.so.1 [0]; searching
      17:\t search path=/t/glibc-hwcaps/x86-64-v3:/t\t\t(LD_LIBRARY_PATH)
      17:\t  trying file=/t/glibc-hwcaps/x86-64-v3/libcuda.so.1
      17:\t  trying file=/t/libcuda.so.1
      17:\t search path=/fb\t\t(LD_FALLBACK_PATH)
      17:\t  trying file=/fb/libcuda.so.1
      17:\t
      17:\tcalling init: /fb/libcuda.so.1
";
        let text = explain(trace, Path::new("/nonexistent-root"));
        assert_eq!(
            text,
            "libcuda.so.1:\n  LD_LIBRARY_PATH              /t   absent\n  fallback (LD_FALLBACK_PATH)  /fb  loaded\n"
        );
    }

    #[test]
    fn traces_lose_pids_addresses_and_hwcaps() {
        let trace = "     42:\t search path=/t/glibc-hwcaps/x86-64-v3:/t\t\t(LD_LIBRARY_PATH)\n     42:\t  trying file=/t/glibc-hwcaps/x86-64-v3/libcuda.so.1\n     42:\t  dynamic: 0x00007f12 base: 0x7f00\n";
        assert_eq!(
            normalize_trace(trace),
            "\t search path=/t\t\t(LD_LIBRARY_PATH)\n\t  dynamic: 0xADDR base: 0xADDR\n"
        );
    }

    #[test]
    fn a_failed_search_says_not_found() {
        let trace = "1:\tfind library=libcuda.so.1 [0]; searching\n1:\t search cache=/etc/ld.so.cache\n1:\t search path=/lib64\t\t(system search path)\n1:\t  trying file=/lib64/libcuda.so.1\n";
        let text = explain(trace, Path::new("/nonexistent-root"));
        assert!(
            text.contains("cache   /etc/ld.so.cache  no entry"),
            "{text}"
        );
        assert!(text.contains("system  /lib64            absent"), "{text}");
        assert!(text.ends_with("-> not found\n"), "{text}");
    }

    #[test]
    fn searches_say_who_asked_and_what_was_tried() {
        let trace = "\
      7:\t
      7:\tfile=libcuda.so.1 [0];  needed by /opt/probe/bin/needed [0]
      7:\tfind library=libcuda.so.1 [0]; searching
      7:\t search cache=/etc/ld.so.cache
      7:\t search path=/lib64:/usr/lib64\t\t(system search path)
      7:\t  trying file=/lib64/libcuda.so.1
      7:\t  trying file=/usr/lib64/libcuda.so.1
      7:\t
      7:\tfile=libcuda.so.1 [0];  generating link map
      7:\tfile=/opt/shims/libshim.so [0];  dynamically loaded by /opt/probe/bin/needed [0]
      7:\tfile=/opt/shims/libshim.so [0];  generating link map
      7:\tfile=libnvrm_mem.so [1];  dynamically loaded by /usr/lib64/libcuda.so.1 [0]
      7:\tfind library=libnvrm_mem.so [1]; searching
      7:\t search cache=/etc/ld.so.cache
";
        let found = searches(trace);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert_eq!(found[0].name, "libcuda.so.1");
        assert_eq!(
            found[0].requested_by.as_deref(),
            Some("/opt/probe/bin/needed")
        );
        assert_eq!(
            found[0].tried,
            ["/lib64/libcuda.so.1", "/usr/lib64/libcuda.so.1"]
        );
        assert!(found[0].mapped_new && !found[0].dlopen);
        assert_eq!(found[1].tried, ["/opt/shims/libshim.so"]);
        assert!(found[1].dlopen && found[1].mapped_new);
        assert_eq!((found[2].namespace, found[2].requester_namespace), (1, 0));
        assert!(found[2].tried.is_empty() && !found[2].mapped_new);
    }

    /// A directory of LD_LIBRARY_PATH may start or end with a space, a tab or a
    /// non-breaking space: the file tried is the whole rest of the line.
    #[test]
    fn a_tried_path_keeps_its_spaces() {
        let trace = "\
      7:\tfile=libx.so [0];  needed by /p [0]
      7:\tfind library=libx.so [0]; searching
      7:\t search path=\u{a0}:/a \t\t(LD_LIBRARY_PATH)
      7:\t  trying file=\u{a0}/libx.so
      7:\t  trying file=/a /libx.so\t
";
        let found = searches(trace);
        assert_eq!(found[0].tried, ["\u{a0}/libx.so", "/a /libx.so\t"]);
    }
}
