//! The user story replayed in a Jetpack-like root.

use anyhow::Result;

use super::{seen, Observed};
use crate::fixtures::Role;
use crate::probe::Output;
use crate::root::Ctx;

/// The user story in a Jetpack-like root: the tegra driver dir with an old `libcuda.so.1`
/// and `libnvrm_*`, a Nix-store cuda_compat with the new one, and an app whose CUDA runtime
/// has cuda_compat in its RUNPATH. `variable`, if any, is set to the tegra dir.
pub(super) fn jetson(cx: &Ctx, variable: Option<&str>) -> Result<Observed> {
    let l = cx.layout;
    let mut root = cx.root();
    root.cuda(Role::Driver, &l.tegra)
        .nvrm(&l.tegra)
        .cuda(Role::Compat, &l.nix_compat)
        .fixture(
            "libcudart.so.12",
            &format!("{}/libcudart.so.12", l.nix_cudart),
        )
        .fixture(
            "saxpy",
            "/nix/store/3m1l7cq7a1q2xs4y8cfl9vf3a0bd7wgd-saxpy/bin/saxpy",
        );
    let mut run = root.command("/nix/store/3m1l7cq7a1q2xs4y8cfl9vf3a0bd7wgd-saxpy/bin/saxpy");
    if let Some(variable) = variable {
        run = run.env(variable, &l.tegra);
    }
    let out = run.output()?;
    let Some(report) = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("saxpy driver="))
    else {
        return seen(out.winner());
    };
    let field = |key: &str| {
        report
            .split_whitespace()
            .find_map(|f| f.strip_prefix(key))
            .unwrap_or("?")
            .to_string()
    };
    let version = report.split_whitespace().next().unwrap_or("?");
    let (role, mem, gpu) = (field("role="), field("nvrm_mem="), field("nvrm_gpu="));
    let nvrm = match (
        Output::nvrm_place(&mem, &l.tegra).as_str(),
        Output::nvrm_place(&gpu, &l.tegra).as_str(),
    ) {
        ("tegra", "tegra") => "with libnvrm_* from tegra".to_string(),
        ("missing", "missing") => "without libnvrm_*".to_string(),
        (m, g) => format!("with libnvrm_mem {m}, libnvrm_gpu {g}"),
    };
    seen(if out.code == Some(0) && out.stdout.contains("saxpy ok") {
        format!("ok: {role} {version} {nvrm}")
    } else if out.stdout.contains("insufficient") {
        format!("fails: {role} {version} too old")
    } else {
        format!("fails: {role} {version} {nvrm}")
    })
}
