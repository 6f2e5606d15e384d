//! What the pages users read first say about Jetson, made from the replay's own definitions
//! (the hosts' driver directories and releases, the rules and their marks), so that they
//! cannot disagree with docs/jetson.md: README's "What to set" table and docs/
//! troubleshooting.md's sentence on CUDA error 222 are generated from them (`cargo xtask
//! regenerate`), and `ld-fallback-explain`'s split-driver hazard is held against them by a test
//! (loader-model, which explain is built on, cannot depend on this crate).

use std::fmt::Write;

use super::rules::{Basis, Rule};
use super::{Host, COLUMNS};

/// The triplet of the page's boards.
const TRIPLET: &str = "aarch64-linux-gnu";

/// The L4T release of the boards the replay gives `host` (its columns agree on one).
fn l4t_of(host: Host) -> u32 {
    COLUMNS
        .iter()
        .find(|c| c.host == host)
        .map(|c| c.board.l4t)
        .expect("every Ubuntu host has a column")
}

/// How a page words a rule's mark: what the reader may rely on.
fn how_sure(rule: Rule) -> &'static str {
    match rule.basis() {
        Basis::Unknown(_) => "not known",
        Basis::Expected(_) => "expected from a cited source, not confirmed on a board",
        Basis::Replayed => "replayed",
    }
}

/// README's "What to set" table: per host, the variable and the directory of the board's
/// driver as the replay's roots have it, or why none is known to help; each entry agrees with
/// docs/jetson.md's first table, which reads the replay's cells.
pub fn what_to_set() -> String {
    let mut out = String::from("| host | set |\n|---|---|\n");
    let fallback = |host: Host| format!("`LD_FALLBACK_PATH={}`", host.driver_dir(TRIPLET));
    let _ = writeln!(
        out,
        "| NixOS on a Jetson (jetpack-nixos), a program nixpkgs built | nothing: its RUNPATH has `{}` ([what the board's CUDA version changes](docs/jetson.md#what-to-do-per-host)) |",
        Host::NixOs.driver_dir(TRIPLET)
    );
    let _ = writeln!(
        out,
        "| NixOS on a Jetson, a program nixpkgs did not build (wheel, conda, nix-ld) | {} |",
        fallback(Host::NixOs)
    );
    for (host, jetpack) in [(Host::JetPack5, 5), (Host::JetPack6, 6)] {
        let _ = writeln!(
            out,
            "| Nix on a JetPack {jetpack} host (L4T R{}, Ubuntu) | {} |",
            l4t_of(host),
            fallback(host)
        );
    }
    let thor = Rule::ThorClosure;
    let _ = writeln!(
        out,
        "| Nix on a JetPack 7 host (L4T R{}, Thor, Ubuntu) | nothing known to work yet: {} finds the driver where R{0} keeps it, and what a Thor's driver needs besides is {} ([`{}`](docs/jetson.md#the-modelled-rules)) |",
        l4t_of(Host::JetPack7),
        fallback(Host::JetPack7),
        how_sure(thor),
        thor.id()
    );
    let _ = writeln!(
        out,
        "| Nix on a JetPack 7 host (L4T R39, Ubuntu) | not known: R39 links `libcuda.so.1` at boot, and no source read here says where ([docs/jetson.md](docs/jetson.md#the-approaches-rows)) |"
    );
    let _ = writeln!(
        out,
        "| one program only, any host | `ld.so --fallback-path DIR PROGRAM` (the patched `ld.so`) |"
    );
    out
}

/// docs/troubleshooting.md's sentences on how the replay meets CUDA error 222: a runtime newer
/// than the board's driver (minor-version compatibility), and a driver with another driver's
/// JIT helper.
pub fn jit_mismatch_note() -> String {
    let mvc = Rule::MinorVersion;
    let rule = Rule::JitOfAnotherDriver;
    let counted = match rule.basis() {
        Basis::Unknown(_) => "and does not count the run as working",
        _ => "and counts the run as working",
    };
    format!(
        "The replay meets 222 in two ways. A CUDA runtime newer than the board's driver within \
         its major version runs there (NVIDIA's minor-version compatibility), but a PTX kernel its \
         toolkit made does not: `[{}]` ({}: [the rule](jetson.md#the-modelled-rules)). That is \
         jetpack-nixos' default on JetPack 6 and 7: `cudaPackages_12` (12.9) on JetPack 6's 12.6 \
         driver, `cudaPackages_13` (13.4) on R39.2's 13.2 ([jetson.md](jetson.md#what-to-do-per-host)); \
         SASS for the board (nixpkgs builds it for `config.cudaCapabilities`) runs. And a \
         cuda_compat driver that got the board's older helper: the replay flags such a pair \
         \"JIT helper of driver 12.6 ... (mismatch)\", marks the run `[{}]` ({}) {counted}; on an \
         x86_64 GPU host a kernel ran with the helper of a close driver release (580.95's helper \
         under the 580.159 driver), and that a Jetson driver fails with 222 instead is **not \
         confirmed**. What would settle it: {}.\n",
        mvc.basis().mark(),
        how_sure(mvc),
        rule.basis().mark(),
        how_sure(rule),
        rule.settled_by().unwrap_or("a run on a board")
    )
}

/// The second sentence of `ld-fallback-explain`'s split-driver hazard: how sure it is that a
/// driver works with another release's helpers, as the page's rule says.
pub fn split_driver_caveat() -> String {
    let rule = Rule::JitOfAnotherDriver;
    format!(
        "Whether a driver works with the JIT helper (or another helper) of another driver release is {} (docs/jetson.md, rule `{}`); the board's `libnvrm_*` are what cuda_compat is built to use",
        how_sure(rule),
        rule.id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// explain once printed as a fact ("A compat driver works only with the helpers of the
    /// driver release it was made for") what docs/jetson.md marks unknown.
    #[test]
    fn explains_hazard_says_what_the_page_says() {
        assert_eq!(loader_model::SPLIT_DRIVER_CAVEAT, split_driver_caveat());
    }

    #[test]
    fn the_222_note_follows_the_rules_marks() {
        let note = jit_mismatch_note();
        assert!(
            note.contains("`[E mvc]` (expected from a cited source"),
            "{note}"
        );
        assert!(note.contains("`[? jit-mismatch]` (not known)"), "{note}");
        assert!(note.contains("does not count the run as working"), "{note}");
    }

    #[test]
    fn what_to_set_names_each_driver_directory_of_the_replay() {
        let table = what_to_set();
        for host in [Host::NixOs, Host::JetPack5, Host::JetPack6, Host::JetPack7] {
            let dir = host.driver_dir(TRIPLET);
            assert!(
                table.contains(&format!("`LD_FALLBACK_PATH={dir}`")),
                "{dir}"
            );
        }
        assert!(table.contains("(L4T R38, Thor, Ubuntu)"), "{table}");
        assert!(table.contains("not known ([`thor-closure`]"), "{table}");
        // A JetPack 6 host is told `nvidia/`, a JetPack 5 host `tegra/`, each on its own row.
        for (row, dir) in [("JetPack 5 host", "tegra"), ("JetPack 6 host", "nvidia")] {
            let line = table.lines().find(|l| l.contains(row)).unwrap();
            assert!(
                line.ends_with(&format!("/usr/lib/aarch64-linux-gnu/{dir}` |")),
                "{line}"
            );
        }
        // A program nixpkgs built is told to set nothing, as the page's first table says.
        let built = table
            .lines()
            .find(|l| l.contains("a program nixpkgs built"))
            .unwrap();
        assert!(built.contains("| nothing:"), "{built}");
    }
}
