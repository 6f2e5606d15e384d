//! The builds of glibc a cell is made of: with the series, without it, or a variant of it.

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
    /// default directories (where nixpkgs' earlier ld-fallback.patch placed it), for the
    /// Jetson replay.
    FallbackFirst,
    /// The series' tests (and the support code they need) without its loader change: the
    /// unpatched loader under the series' own tests, which must fail there (`verify`).
    TestsOnly,
}

impl Flavour {
    /// The flavours every release and target is built and checked in (`--flavour both`).
    pub const ALL: [Flavour; 2] = [Flavour::Patched, Flavour::Unpatched];
    /// Variants of the series, built only when asked for by name.
    pub const VARIANTS: [Flavour; 1] = [Flavour::FallbackFirst];
    /// Parts of the series, built only when asked for by name.
    pub const PARTS: [Flavour; 1] = [Flavour::TestsOnly];

    pub fn name(self) -> &'static str {
        match self {
            Flavour::Patched => "patched",
            Flavour::Unpatched => "unpatched",
            Flavour::FallbackFirst => "fallback-first",
            Flavour::TestsOnly => "tests-only",
        }
    }

    pub fn parse(text: &str) -> Option<Flavour> {
        Flavour::ALL
            .into_iter()
            .chain(Flavour::VARIANTS)
            .chain(Flavour::PARTS)
            .find(|f| f.name() == text)
    }

    /// Whether the loader has LD_FALLBACK_PATH at all (the series or a variant of it).
    pub fn is_patched(self) -> bool {
        !matches!(self, Flavour::Unpatched | Flavour::TestsOnly)
    }

    /// For a variant, the directory under `patches/variants/` whose patches go on top of the
    /// series.
    pub fn variant(self) -> Option<&'static str> {
        match self {
            Flavour::Patched | Flavour::Unpatched | Flavour::TestsOnly => None,
            Flavour::FallbackFirst => Some(self.name()),
        }
    }
}

impl std::fmt::Display for Flavour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}
