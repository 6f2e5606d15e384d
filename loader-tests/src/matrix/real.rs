//! The real-binary scenarios: NVIDIA's own `libcudart.so.11.0` dlopens NVIDIA's own
//! `libcuda.so.1` (Debian 12 non-free, see [`crate::nvidia`]) and reports the driver version,
//! so that rows 1-3 of the contract hold for the real runtime, not only for the markers.
//!
//! The same `libcuda.so.1` sits in C and in T; the directory it was loaded from tells which
//! copy won (the LD_AUDIT module's `la_objopen` record: the runtime dlcloses the driver again
//! before anyone could look). Without the archive the scenarios are skipped with the reason,
//! outside CI; under CI, and for any other reason, they fail (see [`nvidia::Unavailable`]).

use anyhow::Result;

use super::{seen, Observed};
use crate::fixtures::Role;
use crate::nvidia;
use crate::root::Ctx;

/// What the runtime's directory and the two driver directories hold, and what is set.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RealCase {
    /// A copy of the real `libcuda.so.1` in C (the runtime's RUNPATH), besides the one in T.
    pub copy_in_compat: bool,
    /// The variable set to T.
    pub variable: &'static str,
}

pub(super) fn real(cx: &Ctx, case: RealCase) -> Result<Observed> {
    let libs = match nvidia::ensure_once(cx.bench.sysroot.target) {
        Ok(libs) => libs,
        Err(unavailable) if unavailable.is_skip() => {
            return Ok(Observed::Skipped(unavailable.reason()))
        }
        Err(unavailable) => anyhow::bail!("{}", unavailable.reason()),
    };
    let l = cx.layout;
    let cudart = format!("{}/libcudart.so.11.0", l.real_cudart);
    let mut root = cx.root();
    root.loader_in_slibdir()
        .mkdir(&l.compat)
        .patched_copy(&libs.cudart, &cudart, &["--set-rpath", &l.compat])
        .host_file(
            &libs.libcuda,
            &format!("{}/libcuda.so.1", l.tegra),
            Some(Role::Driver),
        );
    if case.copy_in_compat {
        root.host_file(
            &libs.libcuda,
            &format!("{}/libcuda.so.1", l.compat),
            Some(Role::Compat),
        );
    }
    let out = root
        .probe("cudart-probe")
        .arg(&cudart)
        .env(case.variable, &l.tegra)
        .env("LD_AUDIT", &format!("{}/libaudit.so", l.shims))
        .output()?;
    let Some(version) = out
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("cudart rc="))
        .and_then(|rest| {
            rest.split_once(" version=")
                .map(|(_, v)| v.trim().to_string())
        })
    else {
        return seen(out.winner());
    };
    let loaded = out
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("audit objopen path="));
    seen(match loaded {
        Some(path) => {
            let role = out
                .role_at(path)
                .unwrap_or_else(|| format!("libcuda from {path}"));
            format!("{role}, version {version}")
        }
        None => format!("no driver, version {version}"),
    })
}
