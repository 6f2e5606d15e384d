//! What a cell's run came to, in a few words: which `libcuda.so.1` the app's runtime got and
//! whether CUDA works, or the first thing that failed; where `libnvrm_*` came from; and in the
//! NSS column, whose `libnss_compat.so.2` libc loaded.

use std::path::Path;

use super::scene::Paths;
use super::{cuda_version, Column};
use crate::layout::Layout;
use crate::probe::Output;

/// Directories of a root by what a reader calls them.
pub struct Places {
    dirs: Vec<(String, String)>,
}

impl Places {
    pub fn new(paths: &Paths, layout: &Layout, column: &Column) -> Places {
        let driver = match column.host {
            super::Host::NixOs => paths.driver_dir.clone(),
            _ => Path::new(&paths.driver_dir)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        Places {
            dirs: vec![
                (paths.driver_dir.clone(), driver),
                (paths.compat_dir.clone(), "cuda_compat".into()),
                (paths.app_l4t_core.clone(), "the l4t-core store path".into()),
                (
                    paths.system_l4t_core.clone(),
                    "the l4t-core store path".into(),
                ),
                (
                    paths.system_l4t_cuda.clone(),
                    "the l4t-cuda store path".into(),
                ),
                (paths.host_lib.clone(), "the host's".into()),
                (layout.slibdir.clone(), "glibc's own".into()),
                (layout.libdir.clone(), "glibc's own".into()),
            ],
        }
    }

    /// What the directory of `path` is called, or the directory itself.
    fn of(&self, path: &str) -> String {
        let dir = Path::new(path)
            .parent()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.dirs
            .iter()
            .find(|(d, _)| *d == dir)
            .map(|(_, name)| name.clone())
            .unwrap_or(dir)
    }
}

/// A run, classified.
pub struct Seen {
    pub text: String,
    /// CUDA works.
    pub works: bool,
    /// Every libcuda/libnvrm/libnvos/libnss_compat mapped, by path.
    pub loaded: Vec<String>,
}

pub fn classify(out: &Output, places: &Places, column: &Column) -> Seen {
    let loaded: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("saxpy loaded path="))
        .map(str::to_string)
        .collect();
    let find = |prefix: &str| {
        loaded.iter().find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
    };
    let cuda_line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("saxpy cuda rc="));
    let (mut text, works) = match cuda_line {
        None => (start_failure(out), false),
        Some(line) => {
            let (rc, report) = line.split_once(' ').unwrap_or((line, ""));
            let driver = field(report, "driver=").and_then(|v| v.parse::<u32>().ok());
            let who = |version: u32| {
                let role = if version == column.compat.version {
                    "compat"
                } else {
                    "driver"
                };
                format!("{role} {}", cuda_version(version))
            };
            if rc == "0" {
                let version = driver.unwrap_or(0);
                let mut text = format!("runs: {}", who(version));
                if version == column.compat.version {
                    let nvrm = find("libnvrm_gpu").map(|p| places.of(p));
                    text.push_str(&format!(
                        " + libnvrm from {}",
                        nvrm.unwrap_or_else(|| "nowhere".into())
                    ));
                }
                (text, true)
            } else {
                (failure(report, driver.map(who)), false)
            }
        }
    };
    // A program that did not start looked nothing up.
    if column.nss && cuda_line.is_some() {
        let nss = match find("libnss_compat") {
            Some(path) => format!("{} libnss_compat.so.2", places.of(path)),
            None => "no libnss_compat.so.2".into(),
        };
        text.push_str(&format!("; NSS: {nss}"));
    }
    Seen {
        text,
        works,
        loaded,
    }
}

/// The program did not get as far as CUDA: the loader's own error, or a crash.
fn start_failure(out: &Output) -> String {
    if let Some(sig) = out.signal {
        return format!("crashes (signal {sig})");
    }
    match missing_library(&out.stderr) {
        Some(name) => format!("fails at start: {name} not found"),
        None => format!(
            "fails at start: {}",
            out.stderr.lines().next().unwrap_or("no output").trim()
        ),
    }
}

/// The runtime's report `kind ...` (see c-fixtures/jetson-cudart.c) in words.
fn failure(report: &str, who: Option<String>) -> String {
    let who = who.unwrap_or_else(|| "libcuda".into());
    let (kind, detail) = report.split_once(' ').unwrap_or((report, ""));
    match kind {
        "no-driver" => match missing_library(detail) {
            Some(name) => format!("fails: {name} not found"),
            None => format!("fails: no driver ({detail})"),
        },
        "too-old" => format!("fails: {who} too old"),
        "init" if detail.contains("mismatch") => {
            let kernel = field(detail, "kernel=").unwrap_or("?");
            format!("fails: {who} refuses R{kernel} (803)")
        }
        "init" if detail.contains("nvrm-release") => {
            let built = field(detail, "built=").unwrap_or("?");
            let kernel = field(detail, "kernel=").unwrap_or("?");
            format!("fails: libnvrm R{built} on an R{kernel} kernel")
        }
        "init" => match missing_library(detail) {
            Some(name) => format!("fails: {name} not found"),
            None => format!("fails: cuInit: {detail}"),
        },
        _ => format!("fails: {report}"),
    }
}

/// `name` from the loader's `name: cannot open shared object file`.
fn missing_library(text: &str) -> Option<String> {
    let (before, _) = text.split_once(": cannot open shared object file")?;
    let name = before.rsplit([' ', ':']).next()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_whitespace().find_map(|w| w.strip_prefix(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_library_is_named() {
        assert_eq!(
            missing_library("/nix/store/x/bin/saxpy: error while loading shared libraries: libnvrm_gpu.so: cannot open shared object file: No such file or directory").as_deref(),
            Some("libnvrm_gpu.so")
        );
        assert_eq!(
            missing_library("driver=12020 nvrm-missing libnvos.so: cannot open shared object file: No such file or directory").as_deref(),
            Some("libnvos.so")
        );
    }

    #[test]
    fn runtime_reports_read_as_outcomes() {
        let compat = Some("compat 12.2".to_string());
        assert_eq!(
            failure(
                "init driver=12020 code=803 mismatch version=12020 accepts=35 kernel=36",
                compat.clone()
            ),
            "fails: compat 12.2 refuses R36 (803)"
        );
        assert_eq!(
            failure(
                "too-old driver=11040 runtime=12020",
                Some("driver 11.4".into())
            ),
            "fails: driver 11.4 too old"
        );
        assert_eq!(
            failure(
                "init driver=12020 code=999 nvrm-release lib=libnvrm_gpu built=35 kernel=36",
                compat
            ),
            "fails: libnvrm R35 on an R36 kernel"
        );
    }
}
