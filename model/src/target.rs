//! The CPU architectures a cell runs on.

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

    /// This machine's own architecture, when it is a target.
    pub fn native() -> Option<Target> {
        Target::parse(std::env::consts::ARCH)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}
