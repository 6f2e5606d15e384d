//! The resolution-matrix harness: runs probe programs under a built glibc's `ld.so` inside a
//! hermetic root and reports which file the loader picked.

use std::path::PathBuf;

/// A CPU architecture the matrix runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// An installed glibc (`make install DESTDIR=...` with `--prefix=/usr`), laid out like a system.
#[derive(Debug, Clone)]
pub struct Sysroot {
    pub path: PathBuf,
    pub target: Target,
    /// `X.Y`.
    pub release: String,
    /// Whether the LD_FALLBACK_PATH series was applied.
    pub patched: bool,
}
