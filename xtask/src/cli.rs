//! The vocabulary every command shares: the source store (`--store`, global), and which
//! cells to act on — a cell is one (release, target) — and in which flavour.
//!
//! `--release X.Y|all`, `--target x86_64|aarch64|all` and `--flavour patched|unpatched|both`
//! mean the same in every command, and `--help` lists their values. So do the exit statuses:
//! 0 ok, 1 failure, 2 needs attention ([`exit_status`]). [`Cli`] is the whole command line,
//! here rather than in main.rs so that tests can parse commands (say, those a CI workflow
//! runs) exactly as `cargo xtask` would.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand};
use model::{Flavour, Target};

use crate::{build, ci, explain, jetson, rebase, resolution, series, store, update, verify};
use model::{Release, SUPPORTED};

/// The command line of `cargo xtask`.
#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Keep the LD_FALLBACK_PATH glibc patch series applying, building and resolving",
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Import glibc releases into the local source store and list them.
    #[command(subcommand)]
    Glibc(store::command::Command),
    /// Inspect the patch series, or take one made elsewhere.
    #[command(subcommand)]
    Patches(series::command::Command),
    /// Format a series as a patch set to mail upstream (libc-alpha).
    FormatSeries(series::format::Args),
    /// Move the patch series onto another glibc release with a 3-way merge.
    RebaseGlibc(rebase::command::Args),
    /// Bring one glibc release up to date: import, rebase, build, verify, write the series.
    UpdateRelease(update::Args),
    /// Build glibc, patched or not, into a cached sysroot.
    BuildGlibc(build::command::Args),
    /// Run the LD_FALLBACK_PATH resolution matrix against a built glibc.
    TestResolution(resolution::Args),
    /// Prove cells (release x target): series, builds, matrix, glibc's own tests; the support table.
    Verify(verify::Args),
    /// Replay every way of using cuda_compat on Jetson, on every kind of host (docs/jetson.md).
    JetsonReplay(jetson::Args),
    /// Which file a program would load for every library, with LD_FALLBACK_PATH, without
    /// running it (a model of the patched loader's search).
    Explain(explain::Args),
    /// Print timing figures for the slow paths.
    #[command(subcommand)]
    Bench(Bench),
    /// Run everything CI checks (tidy, series, builds, tests, matrix on x86_64 and aarch64).
    Ci(ci::Args),
}

#[derive(Subcommand)]
pub enum Bench {
    /// Time an import of the newest release into a fresh store.
    Store,
    /// Time a rebase of the series onto every other release.
    Rebase,
    /// Time cold, cached and incremental glibc builds.
    Build(build::bench::BenchArgs),
    /// Time the resolution matrix once builds are cached.
    Resolution(resolution::bench::Args),
}

/// Exit status: the command did what was asked and found nothing to act on.
pub const EXIT_OK: u8 = 0;
/// Exit status: the command failed (bad input, I/O error, refused change, missing tool).
pub const EXIT_FAILURE: u8 = 1;
/// Exit status: the command worked and found something the user must act on: a rebase
/// stopped at a conflict, a series that does not apply or drifted, a release to import.
pub const EXIT_NEEDS_ATTENTION: u8 = 2;

/// An error that is a finding, not a failure: [`EXIT_NEEDS_ATTENTION`]. The message says
/// what needs attention and what to do.
#[derive(Debug)]
pub struct NeedsAttention(pub String);

impl std::fmt::Display for NeedsAttention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NeedsAttention {}

/// The exit status for a command that ended with `err`.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| cause.is::<NeedsAttention>()) {
        EXIT_NEEDS_ATTENTION
    } else {
        EXIT_FAILURE
    }
}

/// Options of every command.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Global {
    /// The glibc source store [default: $LD_FALLBACK_STORE, else <cache>/glibc.git].
    #[arg(long, global = true, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

/// Which cells: releases x targets.
#[derive(clap::Args, Debug, Clone)]
pub struct Cells {
    /// glibc release: X.Y or `all` [default: the newest].
    #[arg(long, value_name = "X.Y", value_parser = releases(), default_value = "newest", hide_default_value = true)]
    pub release: Releases,
    /// Target: `x86_64` (native), `aarch64` (under QEMU user mode) or `all`.
    #[arg(long, value_parser = targets(), default_value = "x86_64")]
    pub target: Targets,
}

/// Which cells, and which flavours of glibc in each.
#[derive(clap::Args, Debug, Clone)]
pub struct Selection {
    #[command(flatten)]
    pub cells: Cells,
    /// `patched` (with the series), `unpatched` (the release as is), `both`, or a variant of
    /// the series (`fallback-first`: patches/variants/fallback-first/, for comparisons).
    #[arg(long, value_parser = flavours(), default_value = "patched")]
    pub flavour: Flavours,
}

/// The selected releases, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Releases(pub Vec<Release>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets(pub Vec<Target>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flavours(pub Vec<Flavour>);

impl Cells {
    /// Every selected (release, target), release by release.
    pub fn iter(&self) -> impl Iterator<Item = (Release, Target)> + '_ {
        self.release
            .0
            .iter()
            .flat_map(|r| self.target.0.iter().map(move |t| (*r, *t)))
    }
}

impl Selection {
    /// Every selected (release, target, flavour).
    pub fn iter(&self) -> impl Iterator<Item = (Release, Target, Flavour)> + '_ {
        self.cells
            .iter()
            .flat_map(|(r, t)| self.flavour.0.iter().map(move |f| (r, t, *f)))
    }
}

/// One release, for commands that act on exactly one (`X.Y`).
pub fn release() -> impl TypedValueParser<Value = Release> {
    PossibleValuesParser::new(SUPPORTED.iter().map(|r| r.version()))
        .map(|text| Release::parse(&text).expect("a possible value is a supported release"))
}

/// `X.Y`, `all`, or `newest` (the default, not listed).
fn releases() -> impl TypedValueParser<Value = Releases> {
    let listed = SUPPORTED.iter().map(|r| r.version()).chain(["all"]);
    let values = listed
        .map(clap::builder::PossibleValue::new)
        .chain([clap::builder::PossibleValue::new("newest").hide(true)]);
    PossibleValuesParser::new(values).map(|text| match text.as_str() {
        "all" => Releases(SUPPORTED.to_vec()),
        "newest" => Releases(vec![Release::newest()]),
        one => Releases(vec![
            Release::parse(one).expect("a possible value is a supported release")
        ]),
    })
}

/// A count that must be 1 or more (`--jobs`, `--version`): 0 would run `make -j0` or format
/// a "v0" patch set.
pub fn at_least_one<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialEq + From<u8>,
    T::Err: std::fmt::Display,
{
    match text.parse::<T>() {
        Ok(n) if n == T::from(0) => Err("give 1 or more".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a count: {e}")),
    }
}

/// One target.
pub fn target() -> impl TypedValueParser<Value = Target> {
    PossibleValuesParser::new(Target::ALL.map(Target::name))
        .map(|text| Target::parse(&text).expect("a possible value is a target"))
}

/// `x86_64`, `aarch64` or `all`.
pub fn targets() -> impl TypedValueParser<Value = Targets> {
    let values = Target::ALL.map(Target::name).into_iter().chain(["all"]);
    PossibleValuesParser::new(values).map(|text| match Target::parse(&text) {
        Some(one) => Targets(vec![one]),
        None => Targets(Target::ALL.to_vec()),
    })
}

/// Every flavour by name: the two of `both`, then the variants.
fn flavour_names() -> impl Iterator<Item = &'static str> {
    Flavour::ALL
        .into_iter()
        .chain(Flavour::VARIANTS)
        .map(Flavour::name)
}

/// One flavour.
pub fn flavour() -> impl TypedValueParser<Value = Flavour> {
    PossibleValuesParser::new(flavour_names())
        .map(|text| Flavour::parse(&text).expect("a possible value is a flavour"))
}

/// One flavour, or `both` (patched and unpatched; never a variant).
fn flavours() -> impl TypedValueParser<Value = Flavours> {
    let values = flavour_names().chain(["both"]);
    PossibleValuesParser::new(values).map(|text| match Flavour::parse(&text) {
        Some(one) => Flavours(vec![one]),
        None => Flavours(Flavour::ALL.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Probe {
        #[command(flatten)]
        selection: Selection,
    }

    fn parse(args: &[&str]) -> Result<Selection, String> {
        Probe::try_parse_from(std::iter::once("probe").chain(args.iter().copied()))
            .map(|p| p.selection)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_newest_release_native_patched() {
        let s = parse(&[]).unwrap();
        assert_eq!(s.cells.release.0, vec![Release::newest()]);
        assert_eq!(s.cells.target.0, vec![Target::X86_64]);
        assert_eq!(s.flavour.0, vec![Flavour::Patched]);
    }

    #[test]
    fn all_and_both_expand() {
        let s = parse(&["--release", "all", "--target", "all", "--flavour", "both"]).unwrap();
        assert_eq!(s.iter().count(), SUPPORTED.len() * 2 * 2);
    }

    #[test]
    fn a_variant_is_a_flavour_of_its_own_and_not_part_of_both() {
        let s = parse(&["--flavour", "fallback-first"]).unwrap();
        assert_eq!(s.flavour.0, vec![Flavour::FallbackFirst]);
        let s = parse(&["--flavour", "both"]).unwrap();
        assert_eq!(s.flavour.0, vec![Flavour::Patched, Flavour::Unpatched]);
    }

    #[test]
    fn counts_start_at_one() {
        for args in [
            &["format-series", "--version", "0"][..],
            &["build-glibc", "--jobs", "0"],
            &["bench", "build", "--jobs", "0"],
        ] {
            let err =
                Cli::try_parse_from(std::iter::once("cargo-xtask").chain(args.iter().copied()))
                    .err()
                    .unwrap_or_else(|| panic!("{args:?} was accepted"));
            assert!(
                err.to_string().contains("give 1 or more"),
                "{args:?}: {err}"
            );
        }
    }

    #[test]
    fn unknown_values_list_the_possible_ones() {
        let err = parse(&["--release", "2.39"]).unwrap_err();
        assert!(
            err.contains("2.36, 2.40, 2.41, 2.42, 2.43, 2.44, all"),
            "{err}"
        );
        assert!(!err.contains("newest"), "{err}");
        let err = parse(&["--target", "riscv64"]).unwrap_err();
        assert!(err.contains("x86_64, aarch64, all"), "{err}");
    }
}
