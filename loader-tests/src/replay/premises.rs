//! The premises of a run: what its root assumes besides the loader and the rules its outcome
//! names ([`super::rules`]), found from what the run mapped or missed. The generator folds them
//! into every run's mark when it makes a cell ([`super::report::CellReport`]), so a cell is
//! `[R]` only where every premise it rests on is replayed or cited: a premise nobody supports
//! makes it `[? premise]`, naming the premise, whatever the loader did.

use std::path::Path;

use super::fixtures::BOARD_LIBS;
use super::paths::Paths;
use super::rules::Rule;
use super::{cuda_version, Approach, Column, CompatPackage, CompatRunpath, Device, Host, Program};

/// The premises a run of `approach` in `column` rests on, from its `outcome` and the paths it
/// had `loaded`.
pub fn of_run(approach: &Approach, column: &Column, outcome: &str, loaded: &[String]) -> Vec<Rule> {
    // The store paths a cell names do not depend on the target.
    let paths = Paths::new(column, "");
    let file_name = |path: &str| {
        Path::new(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut premises = Vec::new();
    // Thor: what its drivers link is the Orin closure only by the model.
    let closure_named = BOARD_LIBS
        .iter()
        .map(|lib| lib.name)
        .chain(["libstdc++.so.6"])
        .any(|name| outcome.contains(name));
    let closure_loaded = loaded
        .iter()
        .any(|p| BOARD_LIBS.iter().any(|lib| file_name(p) == lib.name));
    if column.board.device == Device::Thor && (closure_named || closure_loaded) {
        premises.push(Rule::ThorClosure);
    }
    // jetpack-nixos' cuda_compat on an Ubuntu host: the app's l4t-core is the host's release only by the model.
    let from_l4t_core = loaded
        .iter()
        .any(|p| p.starts_with(&format!("{}/", paths.app_l4t_core)));
    if column.host != Host::NixOs
        && approach.compat_runpath == CompatRunpath::L4tCoreAfterDriver
        && from_l4t_core
    {
        premises.push(Rule::L4tCorePinned);
    }
    // `cuda_compat_orin` in a Nix closure: made for JetPack 6 by a packager's word, not
    // NVIDIA's. Its `libcuda.so.1` ran (the outcome names it) or was mapped, from its store
    // path or (impure binding) through `/run/opengl-driver/lib`.
    let compat_libcuda = format!("{}/libcuda.so.1", paths.compat_dir);
    let compat_named = format!("compat {}", cuda_version(column.compat.version));
    if column.compat.package == CompatPackage::Orin
        && column.program == Program::Nix
        && (loaded.contains(&compat_libcuda) || outcome.contains(&compat_named))
    {
        premises.push(Rule::CompatOrinRelease);
    }
    premises
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{approach, column};

    #[test]
    fn thor_runs_that_touch_the_modelled_closure_are_unknown_and_others_are_not() {
        let thor = column("jetpack7-default");
        let two = approach(2);
        let run = |outcome: &str, loaded: &[&str]| {
            let loaded: Vec<String> = loaded.iter().map(|s| s.to_string()).collect();
            of_run(two, thor, outcome, &loaded)
        };
        assert_eq!(
            run(
                "runs: driver 13.0",
                &["/usr/lib/aarch64-linux-gnu/nvidia/libnvrm_gpu.so"]
            ),
            [Rule::ThorClosure]
        );
        assert_eq!(
            run("fails: libstdc++.so.6 not found", &[]),
            [Rule::ThorClosure]
        );
        assert!(run("fails: libcuda.so.1 not found", &[]).is_empty());
        // The same run on an Orin rests on the cited closure.
        let orin = column("jetpack6");
        assert!(of_run(two, orin, "fails: libstdc++.so.6 not found", &[]).is_empty());
    }

    #[test]
    fn only_a_program_with_cuda_compat_orin_rests_on_its_release() {
        let orin = column("nixos-jp6-compat-orin");
        let one = approach(1);
        let loaded = |column: &Column| {
            let compat = format!("{}/libcuda.so.1", Paths::new(column, "").compat_dir);
            of_run(one, column, "", &[compat])
        };
        assert_eq!(loaded(orin), [Rule::CompatOrinRelease]);
        // R39's program without cuda_compat maps no compat driver of its own.
        assert!(loaded(column("nixos-jp7-default")).is_empty());
        // Impure binding: mapped as /run/opengl-driver/lib/libcuda.so.1, named by the outcome.
        let outcome = "runs: compat 13.2 + libnvrm from /run/opengl-driver/lib";
        assert_eq!(of_run(one, orin, outcome, &[]), [Rule::CompatOrinRelease]);
    }
}
