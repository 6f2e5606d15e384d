//! Explains a miss like libtree: every directory the loader considered, in order, with the
//! source of that directory and what it found there, read from an `LD_DEBUG=libs` trace.

use std::fmt::Write;
use std::path::Path;

/// One directory of one search.
#[derive(Debug, PartialEq, Eq)]
struct Step {
    source: String,
    dir: String,
    found: &'static str,
}

/// Explains every `find library=` search of the trace except for libc itself; `root` is the
/// scenario root on the host, used to tell an absent file from one the loader rejected.
pub fn explain(trace: &str, root: &Path) -> String {
    let mut out = String::new();
    let mut current: Option<(String, Vec<Step>)> = None;
    let mut source = String::new();
    for line in trace.lines().map(strip_pid) {
        let text = line.trim();
        if let Some(rest) = text.strip_prefix("find library=") {
            finish(&mut out, current.take());
            let name = rest.split([' ', ';']).next().unwrap_or(rest).to_string();
            current = (!name.starts_with("libc.so")).then(|| (name, Vec::new()));
            continue;
        }
        let Some((name, steps)) = current.as_mut() else {
            continue;
        };
        if let Some(rest) = text.strip_prefix("search path=") {
            let label = rest.rsplit_once('\t').map(|(_, l)| l).unwrap_or("");
            source = source_label(label.trim());
        } else if text.starts_with("search cache=") {
            source = "cache".into();
        } else if let Some(path) = text.strip_prefix("trying file=") {
            let path = path.split_whitespace().next().unwrap_or(path);
            let dir = base_dir(path);
            let present = root.join(path.trim_start_matches('/')).exists();
            let found = if present {
                "present, rejected"
            } else {
                "absent"
            };
            match steps.last_mut() {
                Some(last) if last.dir == dir && last.source == source => {
                    if present {
                        last.found = found;
                    }
                }
                _ => steps.push(Step {
                    source: source.clone(),
                    dir,
                    found,
                }),
            }
        } else if text.starts_with(&format!("file={name} ")) {
            // "generating link map" / "dynamically loaded by": the last file tried won.
            if let Some(last) = steps.last_mut() {
                last.found = "loaded";
            }
            finish(&mut out, current.take());
        }
    }
    finish(&mut out, current.take());
    if out.is_empty() {
        out.push_str("(the trace shows no library search)\n");
    }
    out
}

fn finish(out: &mut String, search: Option<(String, Vec<Step>)>) {
    let Some((name, steps)) = search else {
        return;
    };
    let _ = writeln!(out, "{name}:");
    let width = steps.iter().map(|s| s.source.len()).max().unwrap_or(0);
    let dir_width = steps.iter().map(|s| s.dir.len()).max().unwrap_or(0);
    for step in &steps {
        let _ = writeln!(
            out,
            "  {:width$}  {:dir_width$}  {}",
            step.source, step.dir, step.found
        );
    }
    if !steps.iter().any(|s| s.found == "loaded") {
        let _ = writeln!(out, "  -> not found");
    }
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
      17:\tfile=libcuda.so.1 [0];  generating link map
";
        let text = explain(trace, Path::new("/nonexistent-root"));
        assert_eq!(
            text,
            "libcuda.so.1:\n  LD_LIBRARY_PATH                /t   absent\n  fallback (LD_FALLBACK_PATH)    /fb  loaded\n"
        );
    }

    #[test]
    fn a_failed_search_says_not_found() {
        let trace = "1:\tfind library=libcuda.so.1 [0]; searching\n1:\t search cache=/etc/ld.so.cache\n1:\t search path=/lib64\t\t(system search path)\n1:\t  trying file=/lib64/libcuda.so.1\n";
        let text = explain(trace, Path::new("/nonexistent-root"));
        assert!(text.contains("system  /lib64  absent"), "{text}");
        assert!(text.ends_with("-> not found\n"), "{text}");
    }
}
