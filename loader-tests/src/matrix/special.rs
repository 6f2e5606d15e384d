//! The scenarios that need more than a row: what the loader tells about the fallback (row 21:
//! LD_DEBUG, --help, dlinfo, LD_AUDIT) and secure mode (rows 12 and 13: a setuid-root probe
//! run as uid 65534, outside bwrap).

use anyhow::Result;

use super::{seen, Observed, CUDA};
use crate::fixtures::Role;
use crate::probe::Output;
use crate::root::Ctx;

/// The probe that dlopens `libcuda.so.1` without a RUNPATH of its own.
const DLOPEN: &[&str] = &["dlopen", CUDA];

/// The `search path=...` line of an `LD_DEBUG=libs` trace that searched `dir`, by its label.
pub(super) fn search_label(trace: &str, dir: &str) -> Option<String> {
    trace.lines().find_map(|line| {
        let rest = line.split_once("search path=")?.1;
        let (dirs, label) = rest.split_once('\t')?;
        let listed = dirs.split(':').any(|d| d == dir);
        listed.then(|| label.trim().to_string())
    })
}

pub(super) fn debug_label(out: &Output, dir: &str) -> String {
    match search_label(&out.stderr, dir) {
        Some(label) => format!("{}; search path=T {label}", out.winner()),
        None => format!("{}; no fallback search", out.winner()),
    }
}

pub(super) fn debug_label_env(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda(Role::Driver, &l.tegra);
    let out = root
        .probe("probe")
        .args(DLOPEN)
        .env("LD_FALLBACK_PATH", &l.tegra)
        .env("LD_DEBUG", "libs")
        .output()?;
    seen(debug_label(&out, &l.tegra))
}

pub(super) fn debug_label_option(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda(Role::Driver, &l.tegra);
    let bin = format!("{}/probe", l.bin);
    let out = root
        .ld_so()
        .args(&["--fallback-path", &l.tegra, &bin, "dlopen", CUDA])
        .env("LD_DEBUG", "libs")
        .output()?;
    if out.code != Some(0) && !out.stderr.contains("search path=") {
        return seen(out.winner());
    }
    seen(debug_label(&out, &l.tegra))
}

pub(super) fn help(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let root = cx.root();
    let out = root
        .ld_so()
        .arg("--help")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let documented = if out.stdout.contains("--fallback-path") {
        "--fallback-path documented"
    } else {
        "--fallback-path not documented"
    };
    let lines: Vec<&str> = out.stdout.lines().collect();
    let position = |pred: &dyn Fn(&str) -> bool| lines.iter().rposition(|line| pred(line));
    let system = position(&|line| line.contains("(system search path)"));
    let fallback = position(&|line| line.trim_start().starts_with(l.tegra.as_str()));
    let listed = match (system, fallback) {
        (_, None) => "T not listed",
        (None, Some(_)) => "T listed, system dirs not listed",
        (Some(s), Some(f)) if f > s => "T listed after the system dirs",
        (Some(_), Some(_)) => "T listed before the system dirs",
    };
    seen(format!("{documented}; {listed}"))
}

pub(super) fn serinfo(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let root = cx.root();
    let out = root
        .probe("probe")
        .arg("serinfo")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    if out.code != Some(0) {
        return seen(out.winner());
    }
    let dirs: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("serinfo dir=")?.split(' ').next())
        .collect();
    let tegra = l.tegra.as_str();
    seen(match dirs.iter().position(|d| *d == tegra) {
        None => "T not listed".to_string(),
        Some(i) if i + 1 == dirs.len() => "T listed last".to_string(),
        Some(_) => format!("T listed, but not last: {}", dirs.join(":")),
    })
}

pub(super) fn audit(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda(Role::Driver, &l.tegra).loader_in_slibdir();
    let out = root
        .probe("probe")
        .args(DLOPEN)
        .env("LD_FALLBACK_PATH", &l.tegra)
        .env("LD_AUDIT", &format!("{}/libaudit.so", l.shims))
        .output()?;
    if !out.stdout.contains("audit la_version") {
        let why = out.stderr.lines().next().unwrap_or("no message");
        return seen(format!("audit module not loaded: {why}"));
    }
    let candidate = format!("name={}/{CUDA}", l.tegra);
    let flag = out.stdout.lines().find_map(|line| {
        let rest = line.strip_prefix("audit objsearch flag=")?;
        let (flag, name) = rest.split_once(' ')?;
        (name == candidate).then(|| flag.to_string())
    });
    seen(match flag {
        Some(flag) => format!("{}; la_objsearch T/{CUDA} flag={flag}", out.winner()),
        None => format!("{}; la_objsearch never saw T/{CUDA}", out.winner()),
    })
}

/// A setuid-root copy of `probe` run as uid 65534 with FB=T: AT_SECURE must be on, and the
/// fallback ignored and removed from the environment.
pub(super) fn secure(cx: &Ctx, probe: &str) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    let setuid = format!("{}/{probe}-setuid", l.bin);
    root.cuda(Role::Driver, &l.tegra)
        .setuid_copy(probe, &setuid)
        .setuid_qemu();
    let out = root
        .command(&setuid)
        .args(&["secure", "env", "dlopen", CUDA])
        .env("LD_FALLBACK_PATH", &l.tegra)
        .secure()
        .output()?;
    if !out.stdout.contains("secure AT_SECURE=1") {
        return seen(format!("not in secure mode: {}", out.stdout.trim()));
    }
    seen(format!(
        "{}; LD_FALLBACK_PATH {}",
        out.winner(),
        out.fallback_env()
    ))
}

/// The same setuid `needed` binary, with FB=T, run as uid 65534 (AT_SECURE: the fallback is
/// ignored) and through bwrap (no_new_privs: not secure, the fallback is used).
pub(super) fn secure_needed(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    let setuid = format!("{}/needed-setuid", l.bin);
    root.cuda(Role::Driver, &l.tegra)
        .setuid_copy("needed", &setuid)
        .setuid_qemu();
    let plain = root
        .command(&setuid)
        .arg("needed")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let secure = root
        .command(&setuid)
        .arg("needed")
        .env("LD_FALLBACK_PATH", &l.tegra)
        .secure()
        .output()?;
    seen(format!(
        "secure: {}; not secure: {}",
        secure.winner(),
        plain.winner()
    ))
}
