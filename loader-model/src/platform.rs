//! What a loader brings to the search besides the program's own entries: its default
//! directories and `$LIB` (compiled into `ld.so`, read from the file), `$PLATFORM`, and the
//! subdirectories it tries in every directory (glibc-hwcaps; before 2.37 also the legacy
//! hwcap power set), which depend on the release and the CPU (`_dl_important_hwcaps`).

use serde::Serialize;

use super::cache::LegacyHwcaps;
use super::Bytes;
use model::{Flavour, Release, Target};

/// The version of a glibc, as far as the search differs between versions: any `X.Y`, as a
/// loader says it is (the host's may be one this project does not support, and the model
/// still reads it). The project's releases are [`model::Release`]; each converts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlibcVersion {
    pub major: u32,
    pub minor: u32,
}

impl GlibcVersion {
    /// `X.Y`.
    pub fn parse(text: &str) -> Option<GlibcVersion> {
        let (major, minor) = text.trim().split_once('.')?;
        Some(GlibcVersion {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// The supported release of this version, if it is one.
    pub fn supported(self) -> Option<Release> {
        Release::parse(&self.to_string()).ok()
    }

    /// 2.36 and older search the legacy hwcap subdirectories (`tls/`, `x86_64/`, ...) and
    /// take legacy hwcap entries from ld.so.cache; 2.37 removed both.
    pub(crate) fn has_legacy_hwcaps(self) -> bool {
        (self.major, self.minor) < (2, 37)
    }

    /// 2.36's `open_path` gives up on a directory list when a path component is not a
    /// directory (ENOTDIR); later releases go on to the next directory, as for ENOENT.
    pub(crate) fn enotdir_ends_a_list(self) -> bool {
        (self.major, self.minor) < (2, 37)
    }
}

impl From<Release> for GlibcVersion {
    fn from(release: Release) -> GlibcVersion {
        GlibcVersion::parse(release.version()).expect("a supported release is X.Y")
    }
}

impl std::fmt::Display for GlibcVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Written as `"2.44"`, as the project's releases are.
impl Serialize for GlibcVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The CPU as the loader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cpu {
    /// `GLRO(dl_platform)`: `AT_PLATFORM`, or on Intel x86-64 `haswell`/`xeon_phi`.
    pub platform: String,
    /// x86-64 ISA levels supported (`GNU_PROPERTY_X86_ISA_1_*` bits); 0 elsewhere.
    pub isa_levels: u32,
    /// `GLRO(dl_hwcap) & HWCAP_IMPORTANT`, by name, in bit order (2.36's legacy subdirs).
    pub legacy_hwcaps: Vec<(u32, String)>,
    /// Whether the platform has a bit in the legacy table (x86: haswell, xeon_phi).
    pub legacy_platform_bit: Option<u32>,
    /// How this was found out.
    pub source: String,
}

/// `GNU_PROPERTY_X86_ISA_1_{BASELINE,V2,V3,V4}`.
const ISA_BASELINE: u32 = 1;
const ISA_V2: u32 = 2;
const ISA_V3: u32 = 4;
const ISA_V4: u32 = 8;

impl Cpu {
    /// The CPU a program of `target` would run on here: this machine's when it runs the
    /// target natively, else what QEMU user mode reports (a `max` CPU).
    pub fn detect(target: Target) -> Cpu {
        match target {
            #[cfg(target_arch = "x86_64")]
            Target::X86_64 => x86::detect(),
            #[cfg(not(target_arch = "x86_64"))]
            Target::X86_64 => Cpu {
                platform: "x86_64".into(),
                isa_levels: ISA_BASELINE,
                legacy_hwcaps: vec![(1, "x86_64".into())],
                legacy_platform_bit: None,
                source: "assumed: a baseline x86-64 CPU (not this machine's architecture)".into(),
            },
            Target::Aarch64 => Cpu {
                platform: "aarch64".into(),
                isa_levels: 0,
                // HWCAP_IMPORTANT on aarch64 is HWCAP_ATOMICS (bit 8), which every ARMv8.1
                // CPU (every Jetson since Xavier) and QEMU's `max` CPU have.
                legacy_hwcaps: vec![(8, "atomics".into())],
                legacy_platform_bit: None,
                source: if target.is_native() {
                    "this machine (AT_PLATFORM aarch64; atomics assumed)".into()
                } else {
                    "assumed: QEMU user mode's max CPU (AT_PLATFORM aarch64, atomics)".into()
                },
            },
        }
    }

    /// The glibc-hwcaps subdirectories the loader of `target` searches, most preferred
    /// first (`_dl_hwcaps_subdirs` masked by `_dl_hwcaps_subdirs_active`).
    pub(crate) fn glibc_hwcaps(&self, target: Target) -> Vec<String> {
        match target {
            Target::X86_64 => [
                ("x86-64-v4", ISA_V4),
                ("x86-64-v3", ISA_V3),
                ("x86-64-v2", ISA_V2),
            ]
            .iter()
            .filter(|(_, bit)| self.isa_levels & bit != 0)
            .map(|(name, _)| name.to_string())
            .collect(),
            Target::Aarch64 => Vec::new(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! `init_cpu_features` and `get_isa_level` as far as the search needs them.
    use super::*;
    use std::arch::x86_64::{__cpuid, __cpuid_count, CpuidResult};

    /// CPUID exists on every x86-64 CPU; callers check a leaf against the maximum first.
    fn cpuid(leaf: u32, sub: u32) -> CpuidResult {
        if sub == 0 {
            __cpuid(leaf)
        } else {
            __cpuid_count(leaf, sub)
        }
    }

    pub(super) fn detect() -> Cpu {
        let max = cpuid(0, 0);
        let vendor: Vec<u8> = [max.ebx, max.edx, max.ecx]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect();
        let intel = vendor == b"GenuineIntel";
        let one = cpuid(1, 0);
        let seven = if max.eax >= 7 {
            cpuid(7, 0)
        } else {
            CpuidResult {
                eax: 0,
                ebx: 0,
                ecx: 0,
                edx: 0,
            }
        };
        let ext_max = cpuid(0x8000_0000, 0).eax;
        let ext = if ext_max >= 0x8000_0001 {
            cpuid(0x8000_0001, 0)
        } else {
            CpuidResult {
                eax: 0,
                ebx: 0,
                ecx: 0,
                edx: 0,
            }
        };
        let bit = |reg: u32, n: u32| reg & (1 << n) != 0;
        // "Usable" in glibc's sense: the CPU has it and the kernel saves its state (the
        // std macros check XCR0 for the AVX and AVX-512 families).
        let avx = std::arch::is_x86_feature_detected!("avx");
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        let avx512f = std::arch::is_x86_feature_detected!("avx512f");
        let avx512 = |n: u32| avx512f && bit(seven.ebx, n);
        let baseline = bit(one.edx, 15) // CMOV
            && bit(one.edx, 8) // CX8
            && bit(one.edx, 0) // FPU
            && bit(one.edx, 24) // FXSR
            && bit(one.edx, 23) // MMX
            && bit(one.edx, 25) // SSE
            && bit(one.edx, 26); // SSE2
        let v2 = bit(one.ecx, 13) // CMPXCHG16B
            && bit(ext.ecx, 0) // LAHF64_SAHF64
            && bit(one.ecx, 23) // POPCNT
            && bit(one.ecx, 0) // SSE3
            && bit(one.ecx, 9) // SSSE3
            && bit(one.ecx, 19) // SSE4_1
            && bit(one.ecx, 20); // SSE4_2
        let bmi1 = bit(seven.ebx, 3);
        let bmi2 = bit(seven.ebx, 8);
        let fma = avx && bit(one.ecx, 12);
        let lzcnt = bit(ext.ecx, 5);
        let movbe = bit(one.ecx, 22);
        let f16c = avx && bit(one.ecx, 29);
        let v3 = avx && avx2 && bmi1 && bmi2 && f16c && fma && lzcnt && movbe;
        let v4 = avx512f && avx512(30) && avx512(28) && avx512(17) && avx512(31);
        let mut isa_levels = 0;
        if baseline {
            isa_levels |= ISA_BASELINE;
            if v2 {
                isa_levels |= ISA_V2;
                if v3 {
                    isa_levels |= ISA_V3;
                    if v4 {
                        isa_levels |= ISA_V4;
                    }
                }
            }
        }
        // The platform and the legacy hwcaps of init_cpu_features (x86-64, every release).
        let mut platform = "x86_64";
        let mut legacy_hwcaps = vec![(1, "x86_64".to_string())];
        let mut legacy_platform_bit = None;
        if intel {
            if avx512(28) {
                if avx512(27) {
                    if avx512(26) {
                        platform = "xeon_phi";
                        legacy_platform_bit = Some(48 + 3);
                    }
                } else if avx512(30) && avx512(17) && avx512(31) {
                    legacy_hwcaps.push((2, "avx512_1".into()));
                }
            }
            if platform == "x86_64" && avx2 && fma && bmi1 && bmi2 && lzcnt && movbe && v2 {
                platform = "haswell";
                legacy_platform_bit = Some(48 + 2);
            }
        }
        Cpu {
            platform: platform.into(),
            isa_levels,
            legacy_hwcaps,
            legacy_platform_bit,
            source: "this machine (CPUID)".into(),
        }
    }
}

/// Everything about the loader the search depends on.
#[derive(Debug, Clone, Serialize)]
pub struct LoaderFacts {
    /// The loader inside the tree (PT_INTERP), or `None` for a static program.
    pub path: Option<Bytes>,
    pub release: GlibcVersion,
    pub target: Target,
    /// The loader modelled: with the series, without it, or the fallback-first variant
    /// (which searches the fallback list right after DT_RUNPATH).
    pub flavour: Flavour,
    /// What the loader file itself says: whether it carries the series, and why.
    pub series: SeriesInFile,
    /// The default directories, each ending in `/`, in search order.
    pub system_dirs: Vec<String>,
    /// Where they were read from.
    pub system_dirs_source: String,
    /// What `$LIB` expands to.
    pub dst_lib: String,
    pub cpu: Cpu,
    /// The subdirectories tried in every directory, most preferred first, ending with ""
    /// (the directory itself); each non-empty one ends in `/`.
    pub subdirs: Vec<String>,
    /// Active glibc-hwcaps names (for ld.so.cache entries), most preferred first.
    pub glibc_hwcaps: Vec<String>,
    /// `_DL_CACHE_DEFAULT_ID`.
    pub cache_flags: i32,
}

impl LoaderFacts {
    /// The facts of a loader of `release` for `target`: `binary` is the loader file (or, for
    /// a static program, the program: its libc carries the same tables), `dynamic` whether
    /// the program is dynamically linked (static programs try no subdirectories at all).
    pub(crate) fn new(
        path: Option<Bytes>,
        binary: &[u8],
        release: GlibcVersion,
        target: Target,
        flavour: Flavour,
        cpu: Cpu,
    ) -> LoaderFacts {
        let (system_dirs, source) = match system_dirs(binary) {
            Some(dirs) => (dirs, "read from the loader".to_string()),
            None => (
                vec!["/lib64/".to_string(), "/usr/lib64/".to_string()],
                "not found in the loader: glibc's default for --prefix=/usr".to_string(),
            ),
        };
        let dst_lib = dst_lib(binary, &system_dirs[0]);
        let dynamic = path.is_some();
        let series = series_in(binary, dynamic);
        let glibc_hwcaps = if dynamic {
            cpu.glibc_hwcaps(target)
        } else {
            Vec::new()
        };
        let mut subdirs: Vec<String> = glibc_hwcaps
            .iter()
            .map(|name| format!("glibc-hwcaps/{name}/"))
            .collect();
        if dynamic && release.has_legacy_hwcaps() {
            subdirs.extend(legacy_subdirs(&cpu));
        } else {
            subdirs.push(String::new());
        }
        let cache_flags = match target {
            Target::X86_64 => 0x0303,
            Target::Aarch64 => 0x0a03,
        };
        LoaderFacts {
            path,
            release,
            target,
            flavour,
            series,
            system_dirs,
            system_dirs_source: source,
            dst_lib,
            cpu,
            subdirs,
            glibc_hwcaps,
            cache_flags,
        }
    }

    /// The 2.36 test for legacy hwcap entries of ld.so.cache; `None` from 2.37 on.
    pub(crate) fn legacy_cache_hwcaps(&self) -> Option<LegacyHwcaps> {
        if !self.release.has_legacy_hwcaps() {
            return None;
        }
        let hwcap = self
            .cpu
            .legacy_hwcaps
            .iter()
            .fold(0u64, |bits, (bit, _)| bits | 1 << bit);
        let (platform_mask, platform) = match self.target {
            // i586, i686, haswell, xeon_phi from bit 48; a platform outside the table (x86_64)
            // counts as all bits, which no entry's platform equals.
            Target::X86_64 => (
                0xf << 48,
                self.cpu.legacy_platform_bit.map_or(u64::MAX, |b| 1 << b),
            ),
            Target::Aarch64 => (0, u64::MAX),
        };
        Some(LegacyHwcaps {
            hwcap,
            platform_mask,
            platform,
        })
    }

    /// Whether `path` lies in one of the default directories (each ends in `/`).
    pub(crate) fn is_system_dir(&self, path: &[u8]) -> bool {
        self.system_dirs
            .iter()
            .any(|d| path.starts_with(d.as_bytes()))
    }
}

/// Whether a loader file carries the `LD_FALLBACK_PATH` series, read from the file itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeriesInFile {
    pub patched: bool,
    /// What decided it: the loader's `--help`, or what in the file.
    pub why: String,
    /// How far to trust it, when it was judged from the file's strings rather than by
    /// running the loader.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
}

impl SeriesInFile {
    /// The flavour the file is: `patched` or `unpatched` (a variant of the series carries
    /// the same strings; only asking for it models one).
    pub fn flavour(&self) -> Flavour {
        if self.patched {
            Flavour::Patched
        } else {
            Flavour::Unpatched
        }
    }
}

/// Whether `binary` (a loader, or a static program: its libc) carries the series. The series
/// puts two strings into `ld.so` that no glibc has without it: the variable `rtld.c` reads
/// and `unsecvars.h` lists (`LD_FALLBACK_PATH`), and the option `rtld.c` compares its
/// arguments with (`--fallback-path`); a loader is patched when it carries both. A static
/// program has no options, and its libc reads only the variable (`_dl_non_dynamic_init`).
/// Each string counts only whole: NUL after it, and no name character before it.
pub fn series_in(binary: &[u8], loader: bool) -> SeriesInFile {
    let has = |text: &str| {
        let whole = [text.as_bytes(), b"\0"].concat();
        binary.windows(whole.len()).enumerate().any(|(at, w)| {
            w == whole.as_slice()
                && (at == 0
                    || !(binary[at - 1].is_ascii_alphanumeric() || b"_-".contains(&binary[at - 1])))
        })
    };
    let variable = has("LD_FALLBACK_PATH");
    let option = has("--fallback-path");
    let (patched, why) = match (loader, variable, option) {
        (true, true, true) => (true, "the file carries LD_FALLBACK_PATH and --fallback-path, as a loader with the series does"),
        (true, false, false) => (false, "the file carries neither LD_FALLBACK_PATH nor --fallback-path (a loader with the series carries both)"),
        (true, true, false) => (false, "the file carries LD_FALLBACK_PATH but not --fallback-path (a loader with the series carries both)"),
        (true, false, true) => (false, "the file carries --fallback-path but not LD_FALLBACK_PATH (a loader with the series carries both)"),
        (false, true, _) => (true, "its libc carries LD_FALLBACK_PATH, as one with the series does"),
        (false, false, _) => (false, "its libc carries no LD_FALLBACK_PATH (one with the series does)"),
    };
    SeriesInFile {
        patched,
        why: why.to_string(),
        caveat: None,
    }
}

/// The release a glibc binary says it is (`... stable release version 2.36.`).
pub fn release_of(binary: &[u8]) -> Option<GlibcVersion> {
    const MARK: &[u8] = b"release version ";
    let at = binary.windows(MARK.len()).position(|w| w == MARK)? + MARK.len();
    let text: String = binary[at..]
        .iter()
        .take(16)
        .map(|&b| b as char)
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    GlibcVersion::parse(text.trim_end_matches('.'))
}

/// 2.36's legacy subdirectories: every subset of (hwcap names in bit order, the platform,
/// `tls`), the biggest first, each written with its last element first, as
/// `_dl_important_hwcaps` builds them; ends with "".
fn legacy_subdirs(cpu: &Cpu) -> Vec<String> {
    let mut parts: Vec<&str> = cpu.legacy_hwcaps.iter().map(|(_, n)| n.as_str()).collect();
    parts.push(&cpu.platform);
    parts.push("tls");
    let count = parts.len();
    (0..1u32 << count)
        .rev()
        .map(|mask| {
            (0..count)
                .rev()
                .filter(|n| mask & (1 << n) != 0)
                .map(|n| format!("{}/", parts[n]))
                .collect()
        })
        .collect()
}

/// `system_dirs` as `gen-trusted-dirs.awk` writes it into `elf/dl-load.c`: absolute paths,
/// each ending in `/`, separated by NUL bytes. The first such run of two or more is taken.
pub(crate) fn system_dirs(binary: &[u8]) -> Option<Vec<String>> {
    let mut start = 0;
    while start < binary.len() {
        let mut dirs = Vec::new();
        let mut at = start;
        while let Some(dir) = dir_at(binary, at) {
            at += dir.len() + 1;
            dirs.push(dir);
        }
        if dirs.len() >= 2 && (start == 0 || binary[start - 1] == 0) {
            return Some(dirs);
        }
        start = binary[start + 1..]
            .iter()
            .position(|&b| b == b'/')
            .map(|p| start + 1 + p)?;
    }
    None
}

/// A NUL-terminated absolute path ending in `/` at `at`.
fn dir_at(binary: &[u8], at: usize) -> Option<String> {
    let rest = binary.get(at..)?;
    let end = rest.iter().take(4096).position(|&b| b == 0)?;
    let text = std::str::from_utf8(&rest[..end]).ok()?;
    let printable = text.bytes().all(|b| b.is_ascii_graphic());
    (text.len() > 1 && text.starts_with('/') && text.ends_with('/') && printable)
        .then(|| text.to_string())
}

/// `DL_DST_LIB`: upstream's `notdir (slibdir)`; Debian makes it `slibdir` without its
/// leading `/` (`lib/x86_64-linux-gnu`), which is then a string of its own in the loader.
fn dst_lib(binary: &[u8], slibdir: &str) -> String {
    let dir = slibdir.trim_matches('/');
    let whole = [&[0u8][..], dir.as_bytes(), &[0u8][..]].concat();
    if dir.contains('/') && binary.windows(whole.len()).any(|w| w == whole.as_slice()) {
        return dir.to_string();
    }
    dir.rsplit('/').next().unwrap_or(dir).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_subdirs_are_the_power_set_in_glibc_order() {
        let cpu = Cpu {
            platform: "x86_64".into(),
            isa_levels: 0,
            legacy_hwcaps: vec![(1, "x86_64".into())],
            legacy_platform_bit: None,
            source: String::new(),
        };
        // As Debian's 2.36 loader searches /tmp/x on an AMD CPU (LD_DEBUG=libs).
        assert_eq!(
            legacy_subdirs(&cpu),
            [
                "tls/x86_64/x86_64/",
                "tls/x86_64/",
                "tls/x86_64/",
                "tls/",
                "x86_64/x86_64/",
                "x86_64/",
                "x86_64/",
                ""
            ]
        );
    }

    #[test]
    fn default_dirs_and_lib_come_from_the_loader() {
        let upstream = b"\x7fELF..\0/lib64/\0/usr/lib64/\0lib64\0other\0".to_vec();
        let dirs = system_dirs(&upstream).unwrap();
        assert_eq!(dirs, ["/lib64/", "/usr/lib64/"]);
        assert_eq!(dst_lib(&upstream, &dirs[0]), "lib64");
        let debian =
            b"x\0/lib/x86_64-linux-gnu/\0/usr/lib/x86_64-linux-gnu/\0/lib/\0/usr/lib/\0lib/x86_64-linux-gnu\0"
                .to_vec();
        let dirs = system_dirs(&debian).unwrap();
        assert_eq!(dirs.len(), 4);
        assert_eq!(dst_lib(&debian, &dirs[0]), "lib/x86_64-linux-gnu");
        assert_eq!(system_dirs(b"\0/only/one/\0"), None);
    }

    #[test]
    fn releases_differ_where_glibc_changed() {
        let r = |t| GlibcVersion::parse(t).unwrap();
        assert!(r("2.36").has_legacy_hwcaps());
        assert!(!r("2.40").has_legacy_hwcaps());
        assert!(r("2.36").enotdir_ends_a_list());
        assert!(!r("2.44").enotdir_ends_a_list());
        assert_eq!(GlibcVersion::parse("2.x"), None);
        let ld_so = b"\0ld.so (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36.\0";
        assert_eq!(release_of(ld_so), GlibcVersion::parse("2.36"));
        assert_eq!(release_of(b"no version here"), None);
    }

    /// A loader is patched when it carries both strings of the series, whole; a static
    /// program's libc when it carries the variable.
    #[test]
    fn the_series_is_read_from_the_file() {
        let patched = b"\0LD_FALLBACK_PATH\0x\0--fallback-path\0";
        assert!(series_in(patched, true).patched);
        assert!(!series_in(b"\0LD_LIBRARY_PATH\0--library-path\0", true).patched);
        let one = series_in(b"\0LD_FALLBACK_PATH\0", true);
        assert!(!one.patched);
        assert!(one.why.contains("not --fallback-path"), "{}", one.why);
        // Part of another name, or not ended by NUL: not the string.
        assert!(!series_in(b"\0XLD_FALLBACK_PATH\0---fallback-path\0", true).patched);
        assert!(!series_in(b"\0LD_FALLBACK_PATHS\0--fallback-path\0", true).patched);
        assert!(series_in(b"\0LD_FALLBACK_PATH\0", false).patched);
        assert_eq!(series_in(b"nothing", false).flavour(), Flavour::Unpatched);
    }

    /// A supported release converts and comes back; a version outside the table is still a
    /// version, but no release; either is written as `X.Y`.
    #[test]
    fn a_version_is_a_release_only_when_supported() {
        let newest = Release::newest();
        assert_eq!(GlibcVersion::from(newest).supported(), Some(newest));
        assert_eq!(GlibcVersion::parse("2.39").unwrap().supported(), None);
        assert_eq!(
            serde_json::to_string(&GlibcVersion::parse("2.36").unwrap()).unwrap(),
            "\"2.36\""
        );
    }
}
