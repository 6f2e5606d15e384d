//! The resolution-matrix harness: runs probe programs under a built glibc's `ld.so` inside a
//! hermetic root and reports which file the loader picked.

use std::path::PathBuf;

pub mod apt;
pub mod debs;
pub mod differential;
pub mod fixtures;
pub mod host;
pub mod layout;
pub mod matrix;
pub mod nvidia;
pub mod probe;
pub mod replay;
pub mod report;
pub mod root;
pub mod search;
pub mod trace;

/// A CPU architecture the matrix runs on.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    X86_64,
    Aarch64,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::X86_64, Target::Aarch64];

    pub fn name(self) -> &'static str {
        match self {
            Target::X86_64 => "x86_64",
            Target::Aarch64 => "aarch64",
        }
    }

    pub fn parse(text: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == text)
    }

    /// The GNU triplet of the Debian toolchain that targets it.
    pub fn triplet(self) -> &'static str {
        match self {
            Target::X86_64 => "x86_64-linux-gnu",
            Target::Aarch64 => "aarch64-linux-gnu",
        }
    }

    /// The dynamic loader's standard path, inside a sysroot or a running system.
    pub fn loader_path(self) -> &'static str {
        match self {
            Target::X86_64 => "/lib64/ld-linux-x86-64.so.2",
            Target::Aarch64 => "/lib/ld-linux-aarch64.so.1",
        }
    }

    /// Whether this machine runs the target's code natively (else: QEMU user mode).
    pub fn is_native(self) -> bool {
        std::env::consts::ARCH == self.name()
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A build of glibc: with or without the LD_FALLBACK_PATH series, or a variant of the series
/// kept apart from it (`patches/variants/<name>/<X.Y>/`), built only to compare against.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Flavour {
    Patched,
    Unpatched,
    /// The series plus a patch that searches LD_FALLBACK_PATH before ld.so.cache and the
    /// default directories (the placement of NixOS/nixpkgs#248547), for the Jetson replay.
    FallbackFirst,
}

impl Flavour {
    /// The flavours every release and target is built and checked in (`--flavour both`).
    pub const ALL: [Flavour; 2] = [Flavour::Patched, Flavour::Unpatched];
    /// Variants of the series, built only when asked for by name.
    pub const VARIANTS: [Flavour; 1] = [Flavour::FallbackFirst];

    pub fn name(self) -> &'static str {
        match self {
            Flavour::Patched => "patched",
            Flavour::Unpatched => "unpatched",
            Flavour::FallbackFirst => "fallback-first",
        }
    }

    pub fn parse(text: &str) -> Option<Flavour> {
        Flavour::ALL
            .into_iter()
            .chain(Flavour::VARIANTS)
            .find(|f| f.name() == text)
    }

    /// Whether the loader has LD_FALLBACK_PATH at all (the series or a variant of it).
    pub fn is_patched(self) -> bool {
        self != Flavour::Unpatched
    }

    /// For a variant, the directory under `patches/variants/` whose patches go on top of the
    /// series.
    pub fn variant(self) -> Option<&'static str> {
        match self {
            Flavour::Patched | Flavour::Unpatched => None,
            Flavour::FallbackFirst => Some(self.name()),
        }
    }
}

impl std::fmt::Display for Flavour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An installed glibc (`make install DESTDIR=...` with `--prefix=/usr`), laid out like a system.
#[derive(Debug, Clone)]
pub struct Sysroot {
    pub path: PathBuf,
    pub target: Target,
    /// `X.Y`.
    pub release: String,
    pub flavour: Flavour,
}

/// Environment variables naming a ready sysroot, per target and flavour; they take
/// precedence over building one.
pub fn sysroot_env_var(target: Target, flavour: Flavour) -> String {
    let mut name = "LD_FALLBACK_SYSROOT".to_string();
    if target == Target::Aarch64 {
        name.push_str("_AARCH64");
    }
    match flavour {
        Flavour::Patched => {}
        Flavour::Unpatched => name.push_str("_UNPATCHED"),
        Flavour::FallbackFirst => name.push_str("_FALLBACK_FIRST"),
    }
    name
}

impl Sysroot {
    /// A sysroot installed at `path`; its release is read from its `<features.h>`.
    pub fn at(path: &std::path::Path, target: Target, flavour: Flavour) -> anyhow::Result<Sysroot> {
        use anyhow::Context;
        let features = path.join("usr/include/features.h");
        let text = std::fs::read_to_string(&features).with_context(|| {
            format!(
                "{} is not an installed glibc (no usr/include/features.h)",
                path.display()
            )
        })?;
        let define = |name: &str| {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix(&format!("#define\t{name}\t"))
                        .or_else(|| l.strip_prefix(&format!("#define {name} ")))
                })
                .map(|v| v.trim().to_string())
        };
        let (Some(major), Some(minor)) = (define("__GLIBC__"), define("__GLIBC_MINOR__")) else {
            anyhow::bail!("cannot read the glibc version from {}", features.display());
        };
        if !path
            .join(target.loader_path().trim_start_matches('/'))
            .exists()
        {
            anyhow::bail!(
                "{} has no {}: not a {} glibc install",
                path.display(),
                target.loader_path(),
                target.name()
            );
        }
        Ok(Sysroot {
            path: path.to_path_buf(),
            target,
            release: format!("{major}.{minor}"),
            flavour,
        })
    }
}
