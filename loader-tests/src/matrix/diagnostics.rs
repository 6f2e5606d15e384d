//! Row 21: what the loader tells about the fallback (LD_DEBUG, --help, dlinfo, LD_AUDIT).

use anyhow::Result;

use super::rows::List;
use super::{seen, winner, Observed, Via, CUDA};
use crate::probe::Output;
use crate::root::Ctx;

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
    root.cuda("driver", &l.tegra);
    let out = Via::Dlopen
        .probe(&root, false)
        .env("LD_FALLBACK_PATH", &l.tegra)
        .env("LD_DEBUG", "libs")
        .output()?;
    seen(debug_label(&out, &l.tegra))
}

pub(super) fn debug_label_option(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    let bin = format!("{}/probe", l.bin);
    let out = root
        .ld_so()
        .args(&["--fallback-path", &l.tegra, &bin, "dlopen", CUDA])
        .env("LD_DEBUG", "libs")
        .output()?;
    if out.code != Some(0) && !out.stderr.contains("search path=") {
        return winner(out);
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
        return winner(out);
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
    root.cuda("driver", &l.tegra).loader_in_slibdir();
    let out = Via::Dlopen
        .probe(&root, false)
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

pub(super) fn list(cx: &Ctx, how: List) -> Result<Observed> {
    if let Some(skip) = how.skipped(cx) {
        return Ok(skip);
    }
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    if let List::Script = how {
        root.host_bash();
    }
    let bin = format!("{}/needed", l.bin);
    seen(
        how.run(&root, &bin)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?
            .listed(),
    )
}
