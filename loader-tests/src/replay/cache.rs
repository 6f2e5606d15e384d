//! The rows whose loader reads an `ld.so.cache` ([`DeclaredCache`]): the root's
//! configuration as the row's sources write it, and the cache made from it by the sysroot's
//! own `ldconfig` (run in the root, so the cache is in the format of the glibc under test),
//! checked with `ldconfig -p` before the app runs.
//!
//! - NVIDIA's container toolkit (nvidia-container-toolkit, `cmd/nvidia-cdi-hook/cudacompat/
//!   cudacompat.go` and `cuda-elf-header.go`, `internal/ldconfig/ldconfig.go`,
//!   `pkg/nvcdi/lib-csv.go`): in CSV mode (Jetson) the `update-ldcache` hook writes
//!   `/etc/ld.so.conf.d/00-nvcr-<uuid>.conf` with the mounted driver libraries' directories
//!   and `zz-nvcr-<uuid>.conf` with the system directories, and runs
//!   `ldconfig -f /etc/ld.so.conf -C /etc/ld.so.cache` in the container; the
//!   `enable-cuda-compat` hook, created only where the host has NVML, writes
//!   `00-compat-<uuid>.conf` naming `/usr/local/cuda/compat` when the CUDA version in the
//!   compat `libcuda`'s `.note.cuda.fwd_compatibility` is strictly greater than the host's.
//! - nixpkgs #248777 (`NIX_LD_SO_CACHE`): "a fallback library path built from `ldconfig`"; a
//!   cache of the driver directory made with `ldconfig -X -f <conf> -C <cache>` (`-X`: the
//!   directories are the system's, `/run/opengl-driver/lib` a read-only store path, and a
//!   user making a cache of them does not rewrite their links).

use anyhow::{bail, Context, Result};

use super::edited::EditedCopy;
use super::fixtures::HELPERS;
use super::paths::Paths;
use super::rules::Rule;
use super::{
    cudart_soname, Board, Column, Compat, DeclaredCache, Host, JetsonFixtures, Program, RunKey,
};
use crate::root::Root;

impl DeclaredCache {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DeclaredCache::ContainerToolkit => "the container toolkit's ld.so.cache",
            DeclaredCache::NixLdSoCache => "a NIX_LD_SO_CACHE cache",
        }
    }
}

/// L4T R36 and later ship NVML (`nvidia-l4t-nvml`: `libnvidia-ml.so.1` in R36's, R38's and
/// R39's container lists), R35 does not (jetpack-nixos `pkgs/containers/r35-l4t.json`,
/// `r36-l4t.json`, `r38-l4t.json` before 02d22af, `r39-l4t.json`); the toolkit
/// creates the `enable-cuda-compat` hook in CSV mode only when it finds NVML
/// (`getEnableCUDACompatHookOptions`: `HasNvml`).
fn host_has_nvml(l4t: u32) -> bool {
    l4t >= 36
}

/// Whether the container toolkit row's `00-compat-*.conf` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompatEntry {
    /// As the `enable-cuda-compat` hook decides ([`toolkit_enables_compat`]): every run of the
    /// replay.
    AsTheHookDecides,
    /// Written (`true`) or not, whatever the versions: a test that shows the cache it leads to
    /// is what decides.
    Forced(bool),
}

impl CompatEntry {
    /// Whether the entry is written for a container with `compat` on `board`.
    fn written(self, board: Board, compat: Compat) -> bool {
        match self {
            CompatEntry::AsTheHookDecides => toolkit_enables_compat(board, compat),
            CompatEntry::Forced(written) => written,
        }
    }
}

/// Whether the toolkit writes its `00-compat-*.conf` for a container with `compat` on
/// `board`: the hook exists (NVML) and compat's CUDA version is strictly greater than the host
/// driver's (`cudaVersion.UseCompat`, the only comparison when just the host's CUDA version is
/// known, as in CSV mode). That a Jetson 12.x cuda-compat carries the ELF note the comparison
/// reads is not confirmed (the toolkit's Jetson test file is Orin's 13.2.1); without it the
/// hook writes nothing.
pub(crate) fn toolkit_enables_compat(board: Board, compat: Compat) -> bool {
    host_has_nvml(board.l4t) && compat.version > board.driver
}

/// The rule a run of the container row rests on besides the loader, where the hook decides:
/// no hook on an R35 host, or the compat CUDA version read from the ELF note where the entry
/// is written. Where the hook exists and compat is not newer, the comparison alone decides.
pub(super) fn toolkit_rule(board: Board, compat: Compat) -> Option<Rule> {
    if !host_has_nvml(board.l4t) {
        Some(Rule::ToolkitNoNvml)
    } else if toolkit_enables_compat(board, compat) {
        Some(Rule::ToolkitNote)
    } else {
        None
    }
}

/// Why the container row has no runs in `column`, if it has none. On R39 the toolkit's list
/// of driver files names `libcuda.so.1.1` only as NVIDIA's `nv-load-gpu-libs.sh` writes it at
/// boot (jetpack-nixos `pkgs/containers/l4t-csv.nix`, a stored version), and that script was
/// not found: what the container is given is not known.
pub(super) fn container_not_applicable(column: &Column) -> Option<&'static str> {
    if column.program == Program::Wheel || column.opt_out || column.nss {
        Some("n/a: the container brings its own program and sets nothing")
    } else if column.board.l4t >= 39 {
        Some("n/a: R39's container list gets `libcuda` at boot from `nv-load-gpu-libs.sh`, which no source read here shows")
    } else {
        None
    }
}

/// The column as the container sees its host: the driver where the CSV mounts it, the JetPack
/// path of the board's L4T release (jetpack-nixos mounts it there on NixOS too:
/// `modules/nvidia-container-toolkit.nix`, `discovery-mode = "csv"` with NVIDIA's CSV files),
/// and the image's own libraries in the multiarch directory. R38 (Thor) has R36's paths
/// (`pkgs/containers/r38-l4t.json` before 02d22af), and the toolkit takes CSV mode there too
/// (go-nvlib `IsIntegratedGPUName`: "NVIDIA Thor" is an integrated GPU, so `ResolvePlatform`
/// says Tegra).
pub(super) fn container_column(column: &Column) -> Column {
    Column {
        host: if column.board.l4t >= 36 {
            Host::JetPack6
        } else {
            Host::JetPack5
        },
        ..*column
    }
}

/// The container image: the app, the CUDA runtime and NVIDIA's cuda-compat package (its
/// `libcuda.so.1.1`, as the toolkit's Jetson test file is named, and its helpers), none with a
/// RUNPATH. The C++ app's `libstdc++.so.6` is the image's own, in the multiarch directory
/// (placed with the host's libraries, [`container_column`]).
pub(super) fn container_image(
    root: &mut Root,
    fixtures: &JetsonFixtures,
    column: &Column,
    paths: &Paths,
    key: RunKey,
) {
    let compat = &paths.compat_dir;
    root.edited_copy(
        &fixtures.saxpy(key.app, column.app_needs),
        &paths.app,
        &["--remove-rpath"],
    )
    .edited_copy(
        &fixtures.cudart(column.app_needs),
        &format!("{}/{}", paths.cudart_dir, cudart_soname(column.app_needs)),
        &["--remove-rpath"],
    )
    .edited_copy(
        &fixtures.compat_cuda(column.compat, key.linkage),
        &format!("{compat}/libcuda.so.1.1"),
        &["--remove-rpath"],
    )
    .symlink("libcuda.so.1.1", &format!("{compat}/libcuda.so.1"));
    for helper in HELPERS {
        root.host_file(
            &fixtures.helper(column.compat.version, helper),
            &format!("{compat}/{helper}"),
            None,
        );
    }
}

/// What a row's configuration names, for the check of the cache.
struct Configured {
    /// Directories the cache must list a library of.
    listed: Vec<String>,
    /// Directories it must list nothing of.
    unlisted: Vec<String>,
    ldconfig: Vec<&'static str>,
}

/// Writes the row's ld.so.conf files, makes `/etc/ld.so.cache` with the sysroot's ldconfig and
/// checks it. Nothing for a row without a cache. `compat_entry` says whether the toolkit's
/// `00-compat-*.conf` is written.
pub(super) fn make(
    root: &mut Root,
    declared: Option<DeclaredCache>,
    column: &Column,
    paths: &Paths,
    compat_entry: CompatEntry,
) -> Result<()> {
    let Some(declared) = declared else {
        return Ok(());
    };
    let configured = match declared {
        DeclaredCache::ContainerToolkit => {
            let enabled = compat_entry.written(column.board, column.compat);
            container_configuration(root, column, paths, enabled)
        }
        DeclaredCache::NixLdSoCache => nix_configuration(root, column, paths),
    };
    let out = root
        .command("/sbin/ldconfig")
        .args(&configured.ldconfig)
        .output_quiet()
        .with_context(|| format!("cannot make {}", declared.name()))?;
    if out.code != Some(0) {
        bail!(
            "ldconfig failed making {} ({}):\n{}{}",
            declared.name(),
            out.status_text(),
            out.stdout,
            out.stderr
        );
    }
    let listing = root
        .command("/sbin/ldconfig")
        .args(&["-p", "-C", "/etc/ld.so.cache"])
        .output_quiet()
        .with_context(|| format!("cannot list {}", declared.name()))?;
    lists_as_configured(&listing.stdout, &configured, declared)
}

/// Checks `ldconfig -p`'s `listing` of the cache against what the configuration names: a
/// library of every directory it names, none of one it leaves out.
fn lists_as_configured(
    listing: &str,
    configured: &Configured,
    declared: DeclaredCache,
) -> Result<()> {
    let listed_from = |dir: &str| {
        listing
            .lines()
            .filter_map(|line| line.split_once(" => ").map(|(_, path)| path.trim()))
            .any(|path| path.rsplit_once('/').is_some_and(|(d, _)| d == dir))
    };
    for (dirs, named) in [(&configured.listed, true), (&configured.unlisted, false)] {
        if let Some(dir) = dirs.iter().find(|dir| listed_from(dir) != named) {
            let what = if named {
                format!("lists no library of {dir}, which its configuration names")
            } else {
                format!("lists {dir}, which its configuration leaves out")
            };
            bail!("{} {what}:\n{listing}", declared.name());
        }
    }
    Ok(())
}

/// An Ubuntu image's configuration, the CUDA image's `000_cuda.conf`, and what the toolkit's
/// hooks add (their `<uuid>` here `replay`, which sorts the same).
fn container_configuration(
    root: &mut Root,
    column: &Column,
    paths: &Paths,
    enabled: bool,
) -> Configured {
    let triplet = paths
        .host_lib
        .strip_prefix("/usr/lib/")
        .unwrap_or(&paths.host_lib);
    let lines = |dirs: &[String]| dirs.iter().map(|d| format!("{d}\n")).collect::<String>();
    // The driver libraries' directories, in the CSV's order: R36 keeps libcudadebugger.so.1
    // in tegra/.
    let mut mounted = vec![paths.driver_dir.clone()];
    if column.host == Host::JetPack6 {
        mounted.push(format!("{}/tegra", paths.host_lib));
    }
    let system = [
        format!("/lib/{triplet}"),
        format!("/usr/lib/{triplet}"),
        "/lib".to_string(),
        "/usr/lib".to_string(),
    ];
    root.write("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
        .write("/etc/ld.so.conf.d/libc.conf", "/usr/local/lib\n")
        .write(
            &format!("/etc/ld.so.conf.d/{triplet}.conf"),
            &format!("/usr/local/lib/{triplet}\n/lib/{triplet}\n/usr/lib/{triplet}\n"),
        )
        .write(
            "/etc/ld.so.conf.d/000_cuda.conf",
            &format!("{}\n", paths.cudart_dir),
        )
        .write("/etc/ld.so.conf.d/00-nvcr-replay.conf", &lines(&mounted))
        .write("/etc/ld.so.conf.d/zz-nvcr-replay.conf", &lines(&system));
    let compat = vec![paths.compat_dir.clone()];
    if enabled {
        root.write("/etc/ld.so.conf.d/00-compat-replay.conf", &lines(&compat));
    }
    let (listed, unlisted) = if enabled {
        ([mounted, compat].concat(), Vec::new())
    } else {
        (mounted, compat)
    };
    Configured {
        listed,
        unlisted,
        ldconfig: vec!["-f", "/etc/ld.so.conf", "-C", "/etc/ld.so.cache"],
    }
}

/// The driver directory (and, in the NSS column, the host's multiarch directory, as the other
/// rows' variables list it there), in a configuration the loader never reads.
fn nix_configuration(root: &mut Root, column: &Column, paths: &Paths) -> Configured {
    let mut dirs = vec![paths.driver_dir.clone()];
    if column.nss {
        dirs.push(paths.host_lib.clone());
    }
    let conf: String = dirs.iter().map(|d| format!("{d}\n")).collect();
    root.write("/etc/ld-nix-cache.conf", &conf);
    Configured {
        listed: dirs,
        unlisted: Vec::new(),
        ldconfig: vec![
            "-X",
            "-f",
            "/etc/ld-nix-cache.conf",
            "-C",
            "/etc/ld.so.cache",
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{BOARDS, COLUMNS, COMPATS};

    #[test]
    fn the_toolkit_enables_compat_only_where_it_is_newer_and_the_host_has_nvml() {
        let jp5 = BOARDS[0];
        let jp6 = BOARDS[1];
        let enabled: Vec<(u32, u32, bool)> = COMPATS[..4]
            .iter()
            .flat_map(|c| [jp5, jp6].map(|b| (b.driver, c.version, toolkit_enables_compat(b, *c))))
            .collect();
        assert_eq!(
            enabled,
            [
                // JetPack 5 (no NVML): never, though 12.x is newer than 11.4.
                (11040, 12020, false),
                (12060, 12020, false),
                (11040, 12040, false),
                (12060, 12040, false),
                (11040, 12060, false),
                // The same version: not strictly greater.
                (12060, 12060, false),
                (11040, 12080, false),
                (12060, 12080, true),
            ]
        );
        // JetPack 7 (R38, NVML): its release's cuda-compat is of the driver's own version.
        assert!(!toolkit_enables_compat(BOARDS[2], COMPATS[4]));
    }

    #[test]
    fn the_hooks_decision_rests_on_nvml_and_the_note_where_they_decide() {
        let (jp5, jp6) = (BOARDS[0], BOARDS[1]);
        let rules: Vec<Option<Rule>> = [(jp5, COMPATS[0]), (jp6, COMPATS[2]), (jp6, COMPATS[3])]
            .iter()
            .map(|(board, compat)| toolkit_rule(*board, *compat))
            .collect();
        assert_eq!(
            rules,
            [Some(Rule::ToolkitNoNvml), None, Some(Rule::ToolkitNote)]
        );
    }

    #[test]
    fn a_forced_compat_entry_overrides_the_hook_and_only_then() {
        let (jp6, newer, same) = (BOARDS[1], COMPATS[3], COMPATS[2]);
        let written: Vec<bool> = [
            CompatEntry::AsTheHookDecides.written(jp6, newer),
            CompatEntry::AsTheHookDecides.written(jp6, same),
            CompatEntry::Forced(false).written(jp6, newer),
            CompatEntry::Forced(true).written(jp6, same),
        ]
        .to_vec();
        assert_eq!(written, [true, false, false, true]);
    }

    #[test]
    fn the_cache_must_list_what_is_named_and_nothing_left_out() {
        let configured = Configured {
            listed: vec!["/drv".into()],
            unlisted: vec!["/compat".into()],
            ldconfig: Vec::new(),
        };
        let check = |listing: &str| {
            lists_as_configured(listing, &configured, DeclaredCache::ContainerToolkit)
                .map_err(|e| format!("{e:#}"))
        };
        let driver = "\tlibcuda.so.1 (libc6,AArch64) => /drv/libcuda.so.1\n";
        let compat = "\tlibcuda.so.1 (libc6,AArch64) => /compat/libcuda.so.1\n";
        assert_eq!(check(driver), Ok(()));
        assert_eq!(
            check(""),
            Err(
                "the container toolkit's ld.so.cache lists no library of /drv, which its \
                 configuration names:\n"
                    .to_string()
            )
        );
        assert_eq!(
            check(&format!("{driver}{compat}")),
            Err(format!(
                "the container toolkit's ld.so.cache lists /compat, which its configuration \
                 leaves out:\n{driver}{compat}"
            ))
        );
    }

    #[test]
    fn the_container_row_runs_where_the_container_brings_the_program() {
        let applies: Vec<&str> = COLUMNS
            .iter()
            .filter(|c| container_not_applicable(c).is_none())
            .map(|c| c.id)
            .collect();
        assert_eq!(
            applies,
            [
                "nixos-jp5",
                "nixos-jp6-newer",
                "gate-older",
                "gate-same",
                "gate-newer",
                "jetpack5",
                "jetpack6",
                "jetpack7"
            ]
        );
        let r39 = COLUMNS.iter().find(|c| c.id == "nixos-jp7").unwrap();
        assert_eq!(
            container_not_applicable(r39),
            Some("n/a: R39's container list gets `libcuda` at boot from `nv-load-gpu-libs.sh`, which no source read here shows")
        );
        let seen = container_column(COLUMNS.iter().find(|c| c.id == "gate-newer").unwrap());
        assert_eq!(seen.host, Host::JetPack6);
    }
}
