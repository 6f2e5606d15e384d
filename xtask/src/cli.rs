//! The vocabulary every command shares, at the bottom of the crate (it imports no stage): the
//! global options and the environment they resolve to ([`Global::resolve`] gives a command
//! its [`Env`]), and the words that pick what to act on, each with one meaning and one
//! default wherever a command takes it:
//!
//! - `--release X.Y` ([`OneRelease`]): one glibc release; default: the newest supported one;
//! - `--release X.Y|all` ([`Cells`]): several, for commands that act on cells; same default;
//! - `--target x86_64|aarch64` ([`OneTarget`]) or `...|all` (in [`Cells`]): default x86_64;
//! - `--flavour patched|unpatched|fallback-first` ([`OneFlavour`]) or `...|both` (in
//!   [`Selection`]): default patched.
//!
//! A command flattens the one it needs, so that `--help` lists the same values everywhere.
//! The command tree that puts the commands together is `commands.rs`, at the top; exit
//! statuses are `util::exit`'s.

use std::path::PathBuf;

use anyhow::Result;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use model::{supported, Cell, Flavour, Release, Target};

use crate::util::paths;

/// Options of every command.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Global {
    /// The glibc source store [default: $LD_FALLBACK_STORE, else <cache>/glibc.git].
    #[arg(long, global = true, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

/// What a command runs against, resolved once from the global options and the process's
/// environment: where the store, the series and the cache are.
#[derive(Debug, Clone)]
pub struct Env {
    /// The glibc source store: `--store`, else `$LD_FALLBACK_STORE`, else `<cache>/glibc.git`.
    pub store: PathBuf,
    /// `patches/` of the checkout, or `$LD_FALLBACK_PATCHES`.
    pub patches: PathBuf,
    /// The cache root (`$LD_FALLBACK_CACHE`, ...): builds, work directories, logs, rebases.
    pub cache: PathBuf,
    /// Whether glibc is compiled through ccache (`$LD_FALLBACK_CCACHE=1`).
    pub compiler_cache: bool,
}

impl Global {
    /// The environment of a command. Fails when the cache cannot be placed (no
    /// `$LD_FALLBACK_CACHE`, `$XDG_CACHE_HOME` or `$HOME`), or a path a variable names holds
    /// a control character (`paths::named_paths_printable`).
    pub fn resolve(&self) -> Result<Env> {
        paths::named_paths_printable()?;
        Ok(Env {
            store: paths::store_dir(self.store.as_deref())?,
            patches: paths::patches_dir(),
            cache: paths::cache_dir()?,
            compiler_cache: paths::compiler_cache_asked()?,
        })
    }
}

/// One release.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct OneRelease {
    /// glibc release: X.Y [default: the newest].
    #[arg(long = "release", value_name = "X.Y", value_parser = release_or_newest(), default_value = NEWEST, hide_default_value = true)]
    pub release: Release,
}

/// One target.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct OneTarget {
    /// Target: `x86_64` (native) or `aarch64` (under QEMU user mode).
    #[arg(long = "target", value_parser = target(), default_value = DEFAULT_TARGET)]
    pub target: Target,
}

/// One flavour.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct OneFlavour {
    /// `patched` (with the series), `unpatched` (the release as is), or a variant of the
    /// series (`fallback-first`: patches/variants/fallback-first/, for comparisons).
    #[arg(long = "flavour", value_parser = flavour(), default_value = DEFAULT_FLAVOUR)]
    pub flavour: Flavour,
}

/// Which targets.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SomeTargets {
    /// Target: `x86_64` (native), `aarch64` (under QEMU user mode) or `all`.
    #[arg(long = "target", value_parser = targets(), default_value = DEFAULT_TARGET)]
    pub targets: Targets,
}

/// Which releases, for commands that act on releases, not cells.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SomeReleases {
    /// glibc release: X.Y or `all` [default: the newest].
    #[arg(long = "release", value_name = "X.Y", value_parser = releases(), default_value = NEWEST, hide_default_value = true)]
    pub releases: Releases,
}

/// Which cells: releases x targets.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Cells {
    /// glibc release: X.Y or `all` [default: the newest].
    #[arg(long = "release", value_name = "X.Y", value_parser = releases(), default_value = NEWEST, hide_default_value = true)]
    pub releases: Releases,
    #[command(flatten)]
    pub targets: SomeTargets,
}

/// Which cells, and which flavours of glibc in each.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Selection {
    #[command(flatten)]
    pub cells: Cells,
    /// `patched` (with the series), `unpatched` (the release as is), `both`, or a variant of
    /// the series (`fallback-first`: patches/variants/fallback-first/, for comparisons).
    #[arg(long = "flavour", value_parser = flavours(), default_value = DEFAULT_FLAVOUR)]
    pub flavours: Flavours,
}

/// The selected releases, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Releases(pub Vec<Release>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Targets(pub Vec<Target>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Flavours(pub Vec<Flavour>);

impl Cells {
    /// Every selected cell, release by release.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Cell> + '_ {
        self.releases.0.iter().flat_map(|r| {
            self.targets
                .targets
                .0
                .iter()
                .map(move |t| Cell::new(*r, *t))
        })
    }
}

impl Selection {
    /// Every selected (cell, flavour).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Cell, Flavour)> + '_ {
        self.cells
            .iter()
            .flat_map(|cell| self.flavours.0.iter().map(move |f| (cell, *f)))
    }
}

/// The hidden value that stands for the newest release (the default, not listed).
const NEWEST: &str = "newest";
/// The target every command defaults to: the build machine's, where nothing is emulated.
const DEFAULT_TARGET: &str = "x86_64";
/// [`DEFAULT_TARGET`] as a value, for a command whose default depends on other options.
pub(crate) const DEFAULT_TARGET_VALUE: Target = Target::X86_64;
const DEFAULT_FLAVOUR: &str = "patched";

/// One release, for commands that name exactly one (`X.Y`) and have no default.
pub(crate) fn release() -> impl TypedValueParser<Value = Release> {
    PossibleValuesParser::new(supported().iter().map(|r| r.version()))
        .map(|text| Release::parse(&text).expect("a possible value is a supported release"))
}

/// `X.Y`, or `newest` (the default, not listed).
pub(crate) fn release_or_newest() -> impl TypedValueParser<Value = Release> {
    let values = supported()
        .iter()
        .map(|r| clap::builder::PossibleValue::new(r.version()))
        .chain([clap::builder::PossibleValue::new(NEWEST).hide(true)]);
    PossibleValuesParser::new(values).map(|text| match text.as_str() {
        NEWEST => Release::newest(),
        one => Release::parse(one).expect("a possible value is a supported release"),
    })
}

/// `X.Y`, `all`, or `newest` (the default, not listed).
fn releases() -> impl TypedValueParser<Value = Releases> {
    let listed = supported().iter().map(|r| r.version()).chain(["all"]);
    let values = listed
        .map(clap::builder::PossibleValue::new)
        .chain([clap::builder::PossibleValue::new(NEWEST).hide(true)]);
    PossibleValuesParser::new(values).map(|text| match text.as_str() {
        "all" => Releases(supported().to_vec()),
        NEWEST => Releases(vec![Release::newest()]),
        one => Releases(vec![
            Release::parse(one).expect("a possible value is a supported release")
        ]),
    })
}

/// A count that must be 1 or more (`--jobs`, `--version`): 0 would run `make -j0` or format
/// a "v0" patch set.
pub(crate) fn at_least_one<T>(text: &str) -> Result<T, String>
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

/// One target, for a command whose default is not [`OneTarget`]'s (`explain`: the program's).
pub(crate) fn target() -> impl TypedValueParser<Value = Target> {
    PossibleValuesParser::new(Target::ALL.map(Target::name))
        .map(|text| Target::parse(&text).expect("a possible value is a target"))
}

/// `x86_64`, `aarch64` or `all`.
fn targets() -> impl TypedValueParser<Value = Targets> {
    let values = Target::ALL.map(Target::name).into_iter().chain(["all"]);
    PossibleValuesParser::new(values).map(|text| match Target::parse(&text) {
        Some(one) => Targets(vec![one]),
        None => Targets(Target::ALL.to_vec()),
    })
}

/// Every flavour by name: the two of `both`, then the variants and the parts.
fn flavour_names() -> impl Iterator<Item = &'static str> {
    Flavour::ALL
        .into_iter()
        .chain(Flavour::VARIANTS)
        .chain(Flavour::PARTS)
        .map(Flavour::name)
}

pub(crate) fn flavour() -> impl TypedValueParser<Value = Flavour> {
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
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Probe {
        #[command(flatten)]
        selection: Selection,
    }

    #[derive(clap::Parser)]
    struct Single {
        #[command(flatten)]
        release: OneRelease,
        #[command(flatten)]
        target: OneTarget,
        #[command(flatten)]
        flavour: OneFlavour,
    }

    fn parse(args: &[&str]) -> Result<Selection, String> {
        Probe::try_parse_from(std::iter::once("probe").chain(args.iter().copied()))
            .map(|p| p.selection)
            .map_err(|e| e.to_string())
    }

    fn single(args: &[&str]) -> Result<Single, String> {
        Single::try_parse_from(std::iter::once("single").chain(args.iter().copied()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_newest_release_native_patched() {
        let s = parse(&[]).unwrap();
        assert_eq!(s.cells.releases.0, vec![Release::newest()]);
        assert_eq!(s.cells.targets.targets.0, vec![Target::X86_64]);
        assert_eq!(s.flavours.0, vec![Flavour::Patched]);
    }

    /// The one-value words default as their several-value forms do.
    #[test]
    fn one_of_each_defaults_like_the_selection() {
        let one = single(&[]).unwrap();
        let many = parse(&[]).unwrap();
        assert_eq!(vec![one.release.release], many.cells.releases.0);
        assert_eq!(vec![one.target.target], many.cells.targets.targets.0);
        assert_eq!(vec![one.flavour.flavour], many.flavours.0);
        let one = single(&["--release", "2.41", "--target", "aarch64"]).unwrap();
        assert_eq!(one.release.release, Release::parse("2.41").unwrap());
        assert_eq!(one.target.target, Target::Aarch64);
        let err = single(&["--release", "all"]).err().unwrap();
        assert!(
            err.contains(&format!("[possible values: {}]", model::supported_list())),
            "{err}"
        );
    }

    #[test]
    fn all_and_both_expand() {
        let s = parse(&["--release", "all", "--target", "all", "--flavour", "both"]).unwrap();
        assert_eq!(s.iter().count(), supported().len() * 2 * 2);
    }

    #[test]
    fn a_variant_is_a_flavour_of_its_own_and_not_part_of_both() {
        let s = parse(&["--flavour", "fallback-first"]).unwrap();
        assert_eq!(s.flavours.0, vec![Flavour::FallbackFirst]);
        let s = parse(&["--flavour", "both"]).unwrap();
        assert_eq!(s.flavours.0, vec![Flavour::Patched, Flavour::Unpatched]);
    }

    #[test]
    fn unknown_values_list_the_possible_ones() {
        let err = parse(&["--release", "2.39"]).unwrap_err();
        assert!(
            err.contains(&format!("{}, all]", model::supported_list())),
            "{err}"
        );
        assert!(!err.contains("newest"), "{err}");
        let err = parse(&["--target", "riscv64"]).unwrap_err();
        assert!(err.contains("x86_64, aarch64, all"), "{err}");
    }
}
