//! Rows 1-20 and 22 of the contract's scenario table.

use anyhow::Result;

use super::{seen, winner, Observed, Via, CUDA};
use crate::probe::{Output, Run};
use crate::root::{Ctx, Root};

pub(super) fn bug(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, true)
            .env("LD_LIBRARY_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn rpath_order(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    winner(
        root.probe("needed-rpath")
            .arg("needed")
            .env("LD_LIBRARY_PATH", &l.tegra)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn fix(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, true)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn runpath_miss(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.mkdir(&l.compat).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, true)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn nothing_set(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.mkdir(&l.compat).cuda("driver", &l.tegra);
    winner(via.probe(&root, true).output()?)
}

/// Two ways of listing a program's libraries: `ld.so --list PROG`, and what the `ldd` script
/// runs (`LD_TRACE_LOADED_OBJECTS=1 ld.so PROG`; the script itself needs bash, which a root
/// has not). They differ: `--list` stops at a missing library, `ldd` prints "not found".
#[derive(Clone, Copy)]
pub(super) enum List {
    Option,
    Ldd,
    /// The sysroot's `/usr/bin/ldd`, run by the host's bash copied into the root.
    Script,
}

const NO_BASH: &str = "the ldd script needs a bash that can exec the aarch64 loader: the host has no aarch64 bash and no binfmt_misc registration for QEMU (ldd's LD_TRACE_LOADED_OBJECTS run, 04-ldd/21-ldd, is checked instead)";

impl List {
    pub(super) fn skipped(self, cx: &Ctx) -> Option<Observed> {
        match self {
            List::Script if cx.bench.qemu.is_some() => Some(Observed::Skipped(NO_BASH.into())),
            _ => None,
        }
    }

    pub(super) fn run<'r>(self, root: &'r Root, program: &str) -> Run<'r> {
        match self {
            List::Script => root.command("/bin/bash").args(&["/usr/bin/ldd", program]),
            List::Option => root.ld_so().args(&["--list", program]),
            List::Ldd => root
                .ld_so()
                .arg(program)
                .env("LD_TRACE_LOADED_OBJECTS", "1"),
        }
    }
}

pub(super) fn list_nothing_set(cx: &Ctx, how: List) -> Result<Observed> {
    if let Some(skip) = how.skipped(cx) {
        return Ok(skip);
    }
    let l = cx.layout;
    let mut root = cx.root();
    root.mkdir(&l.compat).cuda("driver", &l.tegra);
    if let List::Script = how {
        root.host_bash();
    }
    let bin = format!("{}/needed-runpath", l.bin);
    seen(how.run(&root, &bin).output()?.listed())
}

pub(super) fn shim(cx: &Ctx, shim: &str) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    let lib = format!("{}/{shim}", l.shims);
    winner(
        root.probe("probe")
            .args(&["shim", &lib, CUDA])
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn nvrm(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat)
        .cuda("driver", &l.tegra)
        .nvrm(&l.tegra);
    let out = via
        .probe(&root, true)
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let Some(load) = out.loads().pop().filter(|_| out.code == Some(0)) else {
        return winner(out);
    };
    seen(format!(
        "{}; nvrm_mem={}; nvrm_gpu={}",
        out.name(&load),
        Output::nvrm_place(&load.nvrm_mem, &l.tegra),
        Output::nvrm_place(&load.nvrm_gpu, &l.tegra)
    ))
}

pub(super) fn default_dir(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("system", &l.libdir).cuda("driver", &l.tegra);
    winner(
        via.probe(&root, false)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn cache(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cache", &l.cached)
        .cuda("driver", &l.tegra)
        .ldconfig(&[&l.cached]);
    winner(
        via.probe(&root, false)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn llp_empty(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat)
        .cuda("driver", &l.tegra)
        .mkdir(&l.empty);
    winner(
        via.probe(&root, true)
            .env("LD_LIBRARY_PATH", &l.empty)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn already_loaded(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("compat", &l.compat).cuda("driver", &l.tegra);
    let shim = format!("{}/libshim-plain.so", l.shims);
    let out = root
        .probe("needed-runpath")
        .args(&["needed", "shim", &shim, CUDA, "same"])
        .env("LD_FALLBACK_PATH", &l.tegra)
        .output()?;
    let loads = out.loads();
    if out.code != Some(0) || loads.len() != 2 {
        return winner(out);
    }
    let same = if out.stdout.contains("same-map yes") {
        "the same map".to_string()
    } else {
        format!("a second copy: {}", out.name(&loads[1]))
    };
    seen(format!("{}, then {same}", out.name(&loads[0])))
}

const NOT_AS_ROOT: &str =
    "secure mode needs root: a setuid-root probe run as uid 65534 (run as root, as in CI)";
pub(super) fn secure(cx: &Ctx, probe: &str) -> Result<Observed> {
    if !crate::is_root() {
        return Ok(Observed::Skipped(NOT_AS_ROOT.into()));
    }
    let l = cx.layout;
    let mut root = cx.root();
    let setuid = format!("{}/{probe}-setuid", l.bin);
    root.cuda("driver", &l.tegra)
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
    if !crate::is_root() {
        return Ok(Observed::Skipped(NOT_AS_ROOT.into()));
    }
    let l = cx.layout;
    let mut root = cx.root();
    let setuid = format!("{}/needed-setuid", l.bin);
    root.cuda("driver", &l.tegra)
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

/// A static program's dlopen, with a copy in the default dir too when `system` is set (it
/// must win over the fallback, as for dynamic programs).
pub(super) fn static_dlopen(cx: &Ctx, system: bool) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    if system {
        root.cuda("system", &l.libdir);
    }
    winner(
        root.probe("probe-static")
            .args(&["dlopen", CUDA])
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn nodefaultlib(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    // In libdir (not slibdir, which the probe has in its RUNPATH to find libc.so.6) and,
    // through ldconfig's default dirs, in the cache: both skipped for DF_1_NODEFLIB.
    root.cuda("system", &l.libdir)
        .cuda("driver", &l.tegra)
        .ldconfig(&[]);
    winner(
        root.probe(probe)
            .args(args)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

pub(super) fn inhibit_cache(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cache", &l.cached)
        .cuda("driver", &l.tegra)
        .ldconfig(&[&l.cached]);
    let bin = format!("{}/{probe}", l.bin);
    winner(
        root.ld_so()
            .args(&["--inhibit-cache", &bin])
            .args(args)
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}

/// `sep_before` + T + `sep_after`, with a copy in the cwd that an empty entry would find.
pub(super) fn empty_entries(cx: &Ctx, around: &[&str; 2]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cwd", &l.cwd).cuda("driver", &l.tegra);
    let value = format!("{}{}{}", around[0], l.tegra, around[1]);
    winner(
        root.probe("probe")
            .args(&["dlopen", CUDA])
            .env("LD_FALLBACK_PATH", &value)
            .output()?,
    )
}

pub(super) fn only_empty_entries(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("cwd", &l.cwd);
    winner(
        root.probe("probe")
            .args(&["dlopen", CUDA])
            .env("LD_FALLBACK_PATH", "::")
            .output()?,
    )
}

pub(super) fn origin(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let mut root = cx.root();
    root.fixture(probe, &format!("/opt/app/bin/{probe}"))
        .cuda("origin", "/opt/app/fb");
    winner(
        root.command(&format!("/opt/app/bin/{probe}"))
            .args(args)
            .env("LD_FALLBACK_PATH", "$ORIGIN/../fb")
            .output()?,
    )
}

/// FB='/opt/<token>/fb' with a copy in each directory the token may expand to (which one
/// depends on the target and, for `$PLATFORM` on x86_64, on the CPU): that one is found only
/// if the token is expanded.
pub(super) fn dst(cx: &Ctx, token: &str, expansions: &[&str]) -> Result<Observed> {
    let mut root = cx.root();
    for value in expansions {
        root.cuda("dst", &format!("/opt/{value}/fb"));
    }
    winner(
        Via::Dlopen
            .probe(&root, false)
            .env("LD_FALLBACK_PATH", &format!("/opt/{token}/fb"))
            .output()?,
    )
}

pub(super) fn wrong_class(cx: &Ctx, via: Via) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda32(&l.tegra32).cuda("driver", &l.tegra);
    let value = format!("{}:{}", l.tegra32, l.tegra);
    winner(
        via.probe(&root, false)
            .env("LD_FALLBACK_PATH", &value)
            .output()?,
    )
}

/// Every fallback dir missing. The loader marks a search list whose dirs are all missing as
/// unusable, which must not write to the RELRO-protected fallback list: repeated searches
/// (dlopen twice before the final one) would crash there.
pub(super) fn missing_dirs(cx: &Ctx, via: Via) -> Result<Observed> {
    let root = cx.root();
    let run = match via {
        Via::Needed => via.probe(&root, false),
        Via::Dlopen => {
            root.probe("probe")
                .args(&["try", CUDA, "try", "libnvrm_mem.so", "dlopen", CUDA])
        }
    };
    winner(
        run.env("LD_FALLBACK_PATH", "/nope:/nope/too:/opt/nope")
            .output()?,
    )
}

pub(super) fn many_entries(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    let mut value: Vec<String> = (0..2000).map(|i| format!("/nope/{i}")).collect();
    value.push(l.tegra.clone());
    winner(
        Via::Dlopen
            .probe(&root, false)
            .env("LD_FALLBACK_PATH", &value.join(":"))
            .output()?,
    )
}

pub(super) fn long_value(cx: &Ctx) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    // Below the kernel's 128 KiB limit for one environment string.
    let value = format!("/{}:{}", "x".repeat(100 * 1024), l.tegra);
    winner(
        Via::Dlopen
            .probe(&root, false)
            .env("LD_FALLBACK_PATH", &value)
            .output()?,
    )
}

pub(super) fn option_overrides(cx: &Ctx, probe: &str, args: &[&str]) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra).cuda("other", &l.other);
    let bin = format!("{}/{probe}", l.bin);
    let out = root
        .ld_so()
        .args(&["--fallback-path", &l.tegra, &bin, "env"])
        .args(args)
        .env("LD_FALLBACK_PATH", &l.other)
        .output()?;
    // Like --library-path, the option applies to this run only: the environment (what child
    // processes inherit) keeps the variable as it was.
    let environ = format!("env LD_FALLBACK_PATH={}\n", l.other);
    if out.code == Some(0) && !out.stdout.contains(&environ) {
        return seen(format!(
            "{}; environ changed: {}",
            out.winner(),
            out.stdout.trim()
        ));
    }
    winner(out)
}

/// dlmopen into a new namespace, with a copy in the default dir too when `system` is set.
pub(super) fn dlmopen(cx: &Ctx, system: bool) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda("driver", &l.tegra);
    if system {
        root.cuda("system", &l.libdir);
    }
    winner(
        root.probe("probe")
            .args(&["dlmopen", CUDA])
            .env("LD_FALLBACK_PATH", &l.tegra)
            .output()?,
    )
}
