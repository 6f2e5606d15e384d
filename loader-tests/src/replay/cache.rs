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

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::edited::EditedCopy;
use super::fixtures::HELPERS;
use super::paths::Paths;
use super::rules::Rule;
use super::{
    cudart_soname, Board, Column, Compat, DeclaredCache, Device, Host, JetsonFixtures, Program,
    RunKey,
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
    /// As the `enable-cuda-compat` hook decides ([`hook`]): every run of the replay.
    AsTheHookDecides,
    /// Written (`true`, naming the image's compat directory) or not, whatever the hook would
    /// do: a test that shows the cache it leads to is what decides.
    Forced(bool),
}

/// The compat root the toolkit passes to the hook (`--cuda-compat-container-root`): on an
/// Orin `/usr/local/cuda/compat_orin` (`pkg/nvcdi/lib-csv.go`: `hasOrinDevices`, an NVML
/// device name containing "Orin (nvgpu)"; the default set in `pkg/nvcdi/options.go` for CSV
/// mode; `lib-csv_test.go`'s Orin case), on any other device (Thor: "NVIDIA Thor") no flag,
/// so the hook's own default `/usr/local/cuda/compat` (`cmd/nvidia-cdi-hook/cudacompat/
/// cudacompat.go`, `defaultCudaCompatPath`; `lib-csv_test.go`'s Thor case passes none).
pub(crate) fn hook_compat_root(device: Device) -> &'static str {
    match device {
        Device::Orin => "/usr/local/cuda/compat_orin",
        Device::Thor => "/usr/local/cuda/compat",
    }
}

/// What the `enable-cuda-compat` hook did in one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hook {
    /// Not created: the host has no NVML (an R35 board).
    NotCreated,
    /// Created, but the compat root it was given holds no single `libcuda.so.*.*`.
    NothingAtRoot { root: &'static str },
    /// It found one, whose CUDA version is not newer than the host's: no entry.
    NotNewer { root: &'static str },
    /// It wrote `00-compat-*.conf` naming `dir`.
    Entry { dir: String },
    /// A test chose (`CompatEntry::Forced`): no rule of the hook applies.
    Forced,
}

/// The hook's decision, by its own steps (`cudacompat.go`, `getContainerForwardCompatDir`):
/// created only where the host has NVML (`getEnableCUDACompatHookOptions`); the compat root of
/// the device kind ([`hook_compat_root`]) must exist in the container and hold exactly one
/// `libcuda.so.*.*`; then `useCompatLibraries`, which with only the host's CUDA version
/// known (CSV mode passes `--host-cuda-version` alone) reads the library's
/// `.note.cuda.fwd_compatibility` and wants its CUDA version strictly greater
/// (`cuda-elf-header.go`, `cudaVersion.UseCompat`). The stand-in carries no note: its CUDA
/// version is the package's (the `toolkit-note` rule).
pub(crate) fn hook(board: Board, compat: Compat, container: &Path) -> Hook {
    if !host_has_nvml(board.l4t) {
        return Hook::NotCreated;
    }
    let root = hook_compat_root(board.device);
    let dir = container.join(root.trim_start_matches('/'));
    let libraries = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| is_versioned_libcuda(&e.file_name().to_string_lossy()))
                .count()
        })
        .unwrap_or(0);
    if libraries != 1 {
        Hook::NothingAtRoot { root }
    } else if compat.version > board.driver {
        Hook::Entry {
            dir: root.to_string(),
        }
    } else {
        Hook::NotNewer { root }
    }
}

/// `libcuda.so.*.*`, the hook's glob: `libcuda.so.1.1` matches, `libcuda.so.1` does not.
fn is_versioned_libcuda(name: &str) -> bool {
    name.strip_prefix("libcuda.so.")
        .and_then(|rest| rest.split_once('.'))
        .is_some()
}

/// The rule a run of the container row rests on besides the loader: no hook on an R35 host;
/// where the hook exists, the compat root of the device kind (which decides whether it
/// looks at the image's compat at all), and where it writes its entry, the compat CUDA
/// version read from the ELF note.
pub(super) fn toolkit_rule(hook: &Hook) -> Option<Rule> {
    match hook {
        Hook::NotCreated => Some(Rule::ToolkitNoNvml),
        Hook::NothingAtRoot { .. } | Hook::NotNewer { .. } => Some(Rule::ToolkitRoot),
        Hook::Entry { .. } => Some(Rule::ToolkitNote),
        Hook::Forced => None,
    }
}

/// Why the container row has no runs in `column`, if it has none. On R39 the toolkit's list
/// of driver files names `libcuda.so.1.1` only as NVIDIA's `nv-load-gpu-libs.sh` writes it at
/// boot (jetpack-nixos `pkgs/containers/l4t-csv.nix`, a stored version), and that script was
/// not found: what the container is given is not known.
pub(super) fn container_not_applicable(column: &Column) -> Option<&'static str> {
    if column.program != Program::Nix || column.opt_out || column.nss {
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
/// `00-compat-*.conf` is the hook's decision; what the hook did comes back (the container
/// row only).
pub(super) fn make(
    root: &mut Root,
    declared: Option<DeclaredCache>,
    column: &Column,
    paths: &Paths,
    compat_entry: CompatEntry,
) -> Result<Option<Hook>> {
    let Some(declared) = declared else {
        return Ok(None);
    };
    // What the hook reads and the ldconfig runs depend on is the root's earlier steps and
    // these.
    if root.written_down(|| format!("{declared:?} cache, {column:?}, {compat_entry:?}")) {
        return Ok(None);
    }
    let mut hook_did = None;
    let configured = match declared {
        DeclaredCache::ContainerToolkit => {
            let did = match compat_entry {
                CompatEntry::AsTheHookDecides => hook(column.board, column.compat, &root.path),
                CompatEntry::Forced(true) => Hook::Entry {
                    dir: paths.compat_dir.clone(),
                },
                CompatEntry::Forced(false) => Hook::Forced,
            };
            let entry = match &did {
                Hook::Entry { dir } => Some(dir.clone()),
                _ => None,
            };
            let forced = matches!(compat_entry, CompatEntry::Forced(_));
            hook_did = Some(if forced { Hook::Forced } else { did });
            container_configuration(root, column, paths, entry)
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
    lists_as_configured(&listing.stdout, &configured, declared)?;
    Ok(hook_did)
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
    compat_entry: Option<String>,
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
    let image_compat = vec![paths.compat_dir.clone()];
    let (listed, unlisted) = match compat_entry {
        Some(dir) => {
            let named = vec![dir];
            root.write("/etc/ld.so.conf.d/00-compat-replay.conf", &lines(&named));
            ([mounted, named].concat(), Vec::new())
        }
        None => (mounted, image_compat),
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
    use crate::replay::paths::container_compat_dir;
    use crate::replay::{BOARDS, COLUMNS, COMPATS};

    /// A container root with `files` under `/usr/local/cuda`.
    fn container(files: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for file in files {
            let path = root.path().join("usr/local/cuda").join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        root
    }

    /// On an Orin the toolkit looks in `compat_orin/` only, so a JetPack 6 image
    /// with `cuda-compat-12-8` in `compat/` gets no entry, however new its compat; Thor's hook
    /// looks in `compat/`.
    #[test]
    fn the_hook_looks_at_the_root_of_the_device_kind_only() {
        let (jp5, jp6, thor) = (BOARDS[0], BOARDS[1], BOARDS[2]);
        let (newer, same) = (COMPATS[3], COMPATS[2]);
        let in_compat = container(&["compat/libcuda.so.1.1", "compat/libcuda.so.1"]);
        let in_compat_orin = container(&["compat_orin/libcuda.so.1.1"]);
        assert_eq!(hook(jp5, COMPATS[0], in_compat.path()), Hook::NotCreated);
        assert_eq!(
            hook(jp6, newer, in_compat.path()),
            Hook::NothingAtRoot {
                root: "/usr/local/cuda/compat_orin"
            }
        );
        assert_eq!(
            hook(jp6, newer, in_compat_orin.path()),
            Hook::Entry {
                dir: "/usr/local/cuda/compat_orin".into()
            }
        );
        assert_eq!(
            hook(jp6, same, in_compat_orin.path()),
            Hook::NotNewer {
                root: "/usr/local/cuda/compat_orin"
            }
        );
        // Thor: the hook's own default; R38's compat is of the driver's version.
        assert_eq!(
            hook(thor, COMPATS[4], in_compat.path()),
            Hook::NotNewer {
                root: "/usr/local/cuda/compat"
            }
        );
        let thirteen_four = Compat {
            version: 13040,
            ..COMPATS[4]
        };
        assert_eq!(
            hook(thor, thirteen_four, in_compat.path()),
            Hook::Entry {
                dir: "/usr/local/cuda/compat".into()
            }
        );
        // Two versioned libraries: the hook warns and writes nothing.
        let two = container(&["compat/libcuda.so.1.1", "compat/libcuda.so.580.65.06"]);
        assert_eq!(
            hook(thor, thirteen_four, two.path()),
            Hook::NothingAtRoot {
                root: "/usr/local/cuda/compat"
            }
        );
    }

    #[test]
    fn the_images_compat_is_where_its_package_puts_it() {
        let dirs: Vec<&str> = COMPATS.iter().map(|c| container_compat_dir(*c)).collect();
        assert_eq!(
            dirs,
            [
                "/usr/local/cuda/compat",
                "/usr/local/cuda/compat",
                "/usr/local/cuda/compat",
                "/usr/local/cuda/compat",
                "/usr/local/cuda/compat",
                "/usr/local/cuda/compat_orin",
                "/usr/local/cuda/compat_orin"
            ]
        );
        assert!(is_versioned_libcuda("libcuda.so.1.1"));
        assert!(is_versioned_libcuda("libcuda.so.580.65.06"));
        assert!(!is_versioned_libcuda("libcuda.so.1"));
        assert!(!is_versioned_libcuda("libcudart.so.13.0"));
    }

    #[test]
    fn the_hooks_decision_rests_on_nvml_the_root_and_the_note() {
        let rules: Vec<Option<Rule>> = [
            Hook::NotCreated,
            Hook::NothingAtRoot { root: "/r" },
            Hook::NotNewer { root: "/r" },
            Hook::Entry { dir: "/r".into() },
            Hook::Forced,
        ]
        .iter()
        .map(toolkit_rule)
        .collect();
        assert_eq!(
            rules,
            [
                Some(Rule::ToolkitNoNvml),
                Some(Rule::ToolkitRoot),
                Some(Rule::ToolkitRoot),
                Some(Rule::ToolkitNote),
                None
            ]
        );
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
                "nixos-jp6-compat-orin",
                "jetpack7"
            ]
        );
        let without = COLUMNS.iter().find(|c| c.id == "jetpack7-default").unwrap();
        assert!(container_not_applicable(without).is_some());
        // R39 with a program of the container's own: still none.
        let r39 = Column {
            program: Program::Nix,
            ..*crate::replay::column("nixos-jp7-default")
        };
        assert_eq!(
            container_not_applicable(&r39),
            Some("n/a: R39's container list gets `libcuda` at boot from `nv-load-gpu-libs.sh`, which no source read here shows")
        );
        let seen = container_column(COLUMNS.iter().find(|c| c.id == "gate-newer").unwrap());
        assert_eq!(seen.host, Host::JetPack6);
    }
}
