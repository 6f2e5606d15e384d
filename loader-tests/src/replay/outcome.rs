//! What a run came to, in a few words: which `libcuda.so.1` the app's runtime got and whether
//! CUDA works, or the first thing that failed; where `libnvrm_*` and the driver's JIT helper
//! came from (a helper of another driver is a mismatch); and in the NSS column, whether the
//! lookup found the user and which of the host's own libraries the process loaded.

use std::path::Path;

use super::paths::Paths;
use super::rules::{Basis, Rule};
use super::{cuda_version, Column, Host, Program};
use crate::layout::Layout;
use crate::probe::Output;

/// Directories of a root by what a reader calls them.
pub(super) struct Places {
    dirs: Vec<(String, String)>,
    host_lib: String,
}

impl Places {
    pub(super) fn new(paths: &Paths, layout: &Layout, column: &Column) -> Places {
        let mut dirs = vec![
            (paths.driver_dir.clone(), paths.driver_dir.clone()),
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
            (paths.gcc_lib.clone(), "gcc's store path".into()),
            (layout.slibdir.clone(), "glibc's own".into()),
            (layout.libdir.clone(), "glibc's own".into()),
        ];
        if column.host != Host::NixOs {
            dirs.push((paths.host_lib.clone(), paths.host_lib.clone()));
        }
        Places {
            dirs,
            host_lib: paths.host_lib.clone(),
        }
    }

    /// What the directory of `path` is called, or the directory itself.
    fn of(&self, path: &str) -> String {
        let dir = parent(path);
        self.dirs
            .iter()
            .find(|(d, _)| *d == dir)
            .map(|(_, name)| name.clone())
            .unwrap_or(dir)
    }

    fn is_host(&self, path: &str) -> bool {
        parent(path) == self.host_lib
    }
}

fn parent(path: &str) -> String {
    Path::new(path)
        .parent()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A run, classified.
pub(super) struct Seen {
    pub text: String,
    /// CUDA works.
    pub works: bool,
    /// Where cuda_compat's driver got its JIT helper, when it got as far as loading a module.
    pub jit: Option<String>,
    /// Every object mapped besides the program, by path.
    pub loaded: Vec<String>,
    /// How far the outcome rests on the modelled rules.
    pub basis: Basis,
}

pub(super) fn classify(out: &Output, places: &Places, column: &Column) -> Seen {
    let loaded: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("saxpy loaded path="))
        .map(str::to_string)
        .collect();
    let find = |prefix: &str| {
        loaded
            .iter()
            .find(|p| file_name(p).starts_with(prefix))
            .cloned()
    };
    // A version is cuda_compat's only where the program's closure has one.
    let has_compat = column.program == Program::Nix;
    let who = |version: u32| {
        let role = if has_compat && version == column.compat.version {
            "compat"
        } else {
            "driver"
        };
        format!("{role} {}", cuda_version(version))
    };
    let cuda_line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("saxpy cuda rc="));
    let mut jit = None;
    let mut basis = Basis::Replayed;
    let (mut text, works) = match cuda_line {
        None => (start_failure(out), false),
        Some(line) => {
            let (rc, report) = line.split_once(' ').unwrap_or((line, ""));
            let driver = field(report, "driver=").and_then(|v| v.parse::<u32>().ok());
            let is_compat = field(report, "compat=") == Some("1");
            let ran = |version: u32| {
                let role = if is_compat { "compat" } else { "driver" };
                format!("{role} {}", cuda_version(version))
            };
            if rc == "0" {
                let version = driver.unwrap_or(0);
                let jit_version = field(report, "jit=").and_then(|v| v.parse::<u32>().ok());
                // Where the helper came from: "own", or another driver's and from where.
                let source = match jit_version {
                    Some(0) => {
                        basis = basis.max(Rule::SassNoJit.basis());
                        "none needed".to_string()
                    }
                    Some(j) if j == version => "own".to_string(),
                    Some(j) => {
                        basis = basis.max(Rule::JitOfAnotherDriver.basis());
                        format!(
                            "of {} from {} (mismatch)",
                            who(j),
                            find("libnvidia-ptxjitcompiler")
                                .map(|p| places.of(&p))
                                .unwrap_or_else(|| "nowhere".into())
                        )
                    }
                    None => "none".to_string(),
                };
                let helper = match source.as_str() {
                    "own" | "none" => format!("{source} JIT helper"),
                    "none needed" => "no JIT helper loaded".to_string(),
                    _ => format!("JIT helper {source}"),
                };
                // A runtime newer than the driver, within its major version: NVIDIA's
                // minor-version compatibility.
                if version < column.app_needs {
                    basis = basis.max(Rule::MinorVersion.basis());
                }
                let mut text = format!("runs: {}", ran(version));
                if is_compat {
                    let nvrm = find("libnvrm_gpu").map(|p| places.of(&p));
                    text.push_str(&format!(
                        " + libnvrm from {}",
                        nvrm.unwrap_or_else(|| "nowhere".into())
                    ));
                    jit = Some(source);
                }
                text.push_str(&format!(", {helper}"));
                let others = other_helpers(report, version, &loaded, places, &who);
                if let Some((others, mismatch)) = others {
                    if mismatch {
                        basis = basis.max(Rule::JitOfAnotherDriver.basis());
                    }
                    text.push_str(&format!("; {others}"));
                }
                let copies = loaded
                    .iter()
                    .filter(|p| file_name(p).starts_with("libcuda.so"))
                    .count();
                if copies > 1 {
                    basis = basis.max(Rule::TwoDrivers.basis());
                    text.push_str(&format!(" ({copies} libcuda.so.1 mapped)"));
                }
                let works = !matches!(basis, Basis::Unknown(_));
                if !works {
                    text = format!("unknown: {}", text.trim_start_matches("runs: "));
                }
                (text, works)
            } else if report.contains("ptx-unsupported") {
                // PTX of a toolkit newer than the JIT helper the driver got (222): the
                // driver's own helper (minor-version compatibility's limit), or another
                // driver's (a mismatch, which nothing says fails).
                let version = driver.unwrap_or(0);
                let helper = field(report, "jit=")
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(0);
                let toolkit = field(report, "toolkit=")
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(0);
                let mut head = ran(version);
                if is_compat {
                    let nvrm = find("libnvrm_gpu").map(|p| places.of(&p));
                    head.push_str(&format!(
                        " + libnvrm from {}",
                        nvrm.unwrap_or_else(|| "nowhere".into())
                    ));
                }
                if helper == version {
                    basis = basis.max(Rule::MinorVersion.basis());
                    if is_compat {
                        jit = Some("own".into());
                    }
                    (
                        format!(
                            "fails: PTX of CUDA {} newer than {head}'s JIT (222)",
                            cuda_version(toolkit)
                        ),
                        false,
                    )
                } else {
                    basis = basis.max(Rule::JitOfAnotherDriver.basis());
                    let source = format!(
                        "of {} from {} (mismatch)",
                        who(helper),
                        find("libnvidia-ptxjitcompiler")
                            .map(|p| places.of(&p))
                            .unwrap_or_else(|| "nowhere".into())
                    );
                    if is_compat {
                        jit = Some(source.clone());
                    }
                    (format!("unknown: {head}, JIT helper {source}"), false)
                }
            } else {
                let text = failure(report, driver.map(ran));
                if let Some(rule) = failure_rule(report, column) {
                    basis = basis.max(rule.basis());
                }
                if is_compat && report.starts_with("module ") {
                    jit = Some(if report.contains("jit-disabled") {
                        "refused: PTX JIT disabled (223)".into()
                    } else {
                        "none found (221)".into()
                    });
                }
                (text, false)
            }
        }
    };
    // A program that did not start looked nothing up.
    if column.nss && cuda_line.is_some() {
        let lookup = match out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("saxpy nss nobody="))
        {
            Some("found") => "found",
            Some(_) => "not found",
            None => "not made",
        };
        let from_host: Vec<String> = loaded
            .iter()
            .filter(|p| places.is_host(p))
            .map(|p| file_name(p))
            .collect();
        let host = if from_host.is_empty() {
            "nothing from the host".to_string()
        } else {
            format!("from the host: {}", from_host.join(", "))
        };
        text.push_str(&format!("; NSS lookup {lookup}; {host}"));
    }
    Seen {
        text,
        works,
        jit,
        loaded,
        basis,
    }
}

/// The rule a failure rests on, if any.
fn failure_rule(report: &str, column: &Column) -> Option<Rule> {
    if report.contains("jit-disabled") {
        return Some(Rule::PtxJitDisabled);
    }
    if report.contains("not-newer") {
        return Some(if column.compat.version == column.board.driver {
            Rule::CompatSame
        } else {
            Rule::CompatOlder
        });
    }
    report.contains("mismatch").then_some(Rule::CompatOtherL4t)
}

/// The other helpers a run asked for (`helper=<soname>:<version>`): whose each was and from
/// where, and whether one was another driver's.
fn other_helpers(
    report: &str,
    version: u32,
    loaded: &[String],
    places: &Places,
    who: &dyn Fn(u32) -> String,
) -> Option<(String, bool)> {
    let mut parts = Vec::new();
    let mut mismatch = false;
    for word in report.split_whitespace() {
        let Some(helper) = word.strip_prefix("helper=") else {
            continue;
        };
        let (soname, v) = helper.rsplit_once(':').unwrap_or((helper, "-1"));
        let short = soname.split(".so").next().unwrap_or(soname);
        let text = match v.parse::<i64>() {
            Ok(v) if v == i64::from(version) => "own".to_string(),
            Ok(v) if v > 0 => {
                mismatch = true;
                let from = loaded
                    .iter()
                    .find(|p| file_name(p) == soname)
                    .map(|p| places.of(p))
                    .unwrap_or_else(|| "nowhere".into());
                format!("of {} from {from} (mismatch)", who(v as u32))
            }
            _ => "not found".to_string(),
        };
        parts.push(format!("{short} {text}"));
    }
    (!parts.is_empty()).then(|| (parts.join(", "), mismatch))
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
        "stub" => "fails: a stub libcuda.so.1 (34)".to_string(),
        "init" if detail.contains("not-newer") => {
            let board = field(detail, "board=")
                .and_then(|v| v.parse::<u32>().ok())
                .map(cuda_version)
                .unwrap_or_else(|| "?".into());
            format!("fails: {who} refuses driver {board} (803)")
        }
        "init" if detail.contains("mismatch") => {
            let kernel = field(detail, "kernel=").unwrap_or("?");
            format!("fails: {who} refuses R{kernel} (803)")
        }
        "init" if detail.contains("nvrm-release") => {
            let lib = field(detail, "lib=").unwrap_or("libnvrm");
            let built = field(detail, "built=").unwrap_or("?");
            match field(detail, "kernel=") {
                Some(kernel) => format!("fails: {lib} R{built} on an R{kernel} kernel"),
                None => format!("fails: {lib} R{built} mixed with another release's"),
            }
        }
        "init" => match missing_library(detail) {
            Some(name) => format!("fails: {name} not found"),
            None => format!("fails: cuInit: {detail}"),
        },
        "module" if detail.contains("jit-disabled") => "fails: PTX JIT disabled (223)".to_string(),
        "module" => match missing_library(detail) {
            Some(name) => format!("fails: {name} not found (221)"),
            None => format!("fails: module load: {detail}"),
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
    use crate::replay::COLUMNS;
    use model::Target;

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
                compat.clone()
            ),
            "fails: libnvrm_gpu R35 on an R36 kernel"
        );
        assert_eq!(
            failure(
                "module driver=12020 code=221 jit-missing libnvidia-ptxjitcompiler.so.1: cannot open shared object file: No such file or directory",
                compat
            ),
            "fails: libnvidia-ptxjitcompiler.so.1 not found (221)"
        );
    }

    fn seen(column: &Column, stdout: &str) -> Seen {
        let paths = Paths::new(column, "aarch64-linux-gnu");
        let layout = Layout::for_target(Target::Aarch64, "/lib64", "/usr/lib64");
        let places = Places::new(&paths, &layout, column);
        let out = Output {
            code: Some(0),
            signal: None,
            stdout: stdout.replace("{compat}", &paths.compat_dir),
            stderr: String::new(),
            placed: Vec::new(),
        };
        classify(&out, &places, column)
    }

    #[test]
    fn a_helper_of_another_driver_is_a_mismatch_and_names_its_directory() {
        let jetpack5 = crate::replay::column("jetpack5");
        let seen = seen(
            jetpack5,
            "saxpy loaded path={compat}/libcuda.so.1\n\
             saxpy loaded path=/usr/lib/aarch64-linux-gnu/tegra/libnvrm_gpu.so\n\
             saxpy loaded path=/usr/lib/aarch64-linux-gnu/tegra/libnvidia-ptxjitcompiler.so.1\n\
             saxpy cuda rc=0 ok driver=12020 compat=1 jit=11040\n",
        );
        // Nothing supports that 12.2 runs a kernel with 11.4's helper: not counted as working.
        assert!(!seen.works);
        assert_eq!(seen.basis, Basis::Unknown(Rule::JitOfAnotherDriver));
        assert_eq!(
            seen.text,
            "unknown: compat 12.2 + libnvrm from /usr/lib/aarch64-linux-gnu/tegra, JIT helper of \
             driver 11.4 from /usr/lib/aarch64-linux-gnu/tegra (mismatch)"
        );
        assert_eq!(
            seen.jit.as_deref(),
            Some("of driver 11.4 from /usr/lib/aarch64-linux-gnu/tegra (mismatch)")
        );
    }

    #[test]
    fn the_nss_column_names_what_came_from_the_host() {
        let nss = COLUMNS.iter().find(|c| c.nss).unwrap();
        let seen = seen(
            nss,
            "saxpy loaded path={compat}/libcuda.so.1\n\
             saxpy loaded path=/usr/lib/aarch64-linux-gnu/tegra/libnvrm_gpu.so\n\
             saxpy loaded path={compat}/libnvidia-ptxjitcompiler.so.1\n\
             saxpy loaded path=/usr/lib/aarch64-linux-gnu/libnss_systemd.so.2\n\
             saxpy loaded path=/usr/lib/aarch64-linux-gnu/libcap.so.2\n\
             saxpy nss nobody=found\n\
             saxpy cuda rc=0 ok driver=12020 compat=1 jit=12020\n",
        );
        assert_eq!(
            seen.text,
            "runs: compat 12.2 + libnvrm from /usr/lib/aarch64-linux-gnu/tegra, own JIT helper; \
             NSS lookup found; from the host: libnss_systemd.so.2, libcap.so.2"
        );
        assert_eq!(seen.jit.as_deref(), Some("own"));
        assert_eq!(seen.basis, Basis::Replayed);
    }

    #[test]
    fn a_compat_driver_of_the_boards_version_is_told_apart_and_its_refusal_is_unknown() {
        let same = COLUMNS.iter().find(|c| c.id == "gate-same").unwrap();
        let seen = seen(
            same,
            "saxpy loaded path={compat}/libcuda.so.1\n\
             saxpy cuda rc=803 init driver=12060 compat=1 code=803 not-newer version=12060 board=12060\n",
        );
        assert_eq!(seen.text, "fails: compat 12.6 refuses driver 12.6 (803)");
        assert_eq!(seen.basis, Basis::Unknown(Rule::CompatSame));
        let older = COLUMNS.iter().find(|c| c.id == "gate-older").unwrap();
        let seen = self::seen(
            older,
            "saxpy cuda rc=803 init driver=12040 compat=1 code=803 not-newer version=12040 board=12060\n",
        );
        assert_eq!(seen.text, "fails: compat 12.4 refuses driver 12.6 (803)");
        assert_eq!(seen.basis, Basis::Expected(Rule::CompatOlder));
    }

    #[test]
    fn two_drivers_in_one_process_are_not_counted_as_working() {
        let opt_out = COLUMNS.iter().find(|c| c.opt_out).unwrap();
        let seen = seen(
            opt_out,
            "saxpy loaded path=/run/opengl-driver/lib/libcuda.so.1\n\
             saxpy loaded path={compat}/libcuda.so.1\n\
             saxpy cuda rc=0 ok driver=12060 compat=0 jit=12060\n",
        );
        assert!(!seen.works);
        assert_eq!(
            seen.text,
            "unknown: driver 12.6, own JIT helper (2 libcuda.so.1 mapped)"
        );
    }

    #[test]
    fn a_stub_and_a_disabled_jit_read_as_their_codes() {
        assert_eq!(
            failure("stub code=34", None),
            "fails: a stub libcuda.so.1 (34)"
        );
        assert_eq!(
            failure(
                "module driver=12080 compat=1 code=223 jit-disabled CUDA_DISABLE_PTX_JIT=1",
                Some("compat 12.8".into())
            ),
            "fails: PTX JIT disabled (223)"
        );
    }
}
