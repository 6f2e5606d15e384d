//! `cargo xtask jetson-replay --real-driver`: the setups of this project's x86_64 GPU-host measurements against
//! this machine's real NVIDIA driver (a GPU host, or a Jetson board), under this project's
//! patched and unpatched glibc for the machine's own architecture, and a table of what each
//! gave next to what was measured (`loader_tests::replay::real`).
//!
//! On a machine without an NVIDIA driver or GPU it says so and stops: not run, exit status 2,
//! never a pass.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use loader_tests::host::{self, tools};
use loader_tests::layout::Layout;
use loader_tests::replay::real::{self, Dirs, Row, Setup};
use model::{Flavour, Target};
use xshell::{cmd, Shell};

use crate::cli::Env;
use crate::util::exit::NeedsAttention;
use crate::util::shell;
use model::Release;

/// The machine's driver, as far as the check needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Driver {
    /// The directory of the `libcuda.so.1` the host's own loader uses.
    pub dir: PathBuf,
    /// `580.159.04`, or the L4T release on a Jetson.
    pub version: String,
}

/// Directories a driver's `libcuda.so.1` is installed in, besides what `ldconfig -p` lists.
fn candidate_dirs(triplet: &str) -> Vec<String> {
    vec![
        format!("/usr/lib/{triplet}"),
        format!("/usr/lib/{triplet}/nvidia/current"),
        format!("/usr/lib/{triplet}/nvidia"),
        format!("/usr/lib/{triplet}/tegra"),
        "/usr/lib64".into(),
        "/run/opengl-driver/lib".into(),
    ]
}

/// Device nodes of an NVIDIA GPU (discrete, or a Jetson's integrated one).
const DEVICES: [&str; 4] = [
    "/dev/nvidiactl",
    "/dev/nvidia0",
    "/dev/nvhost-ctrl-gpu",
    "/dev/nvgpu/igpu0/ctrl",
];

/// `libcuda.so.1`'s path from `ldconfig -p` output.
fn libcuda_from_ldconfig(listing: &str) -> Option<PathBuf> {
    listing.lines().find_map(|line| {
        let line = line.trim();
        line.starts_with("libcuda.so.1 ")
            .then(|| line.rsplit("=> ").next())
            .flatten()
            .map(|p| PathBuf::from(p.trim()))
    })
}

/// The driver version from `/proc/driver/nvidia/version` (`NVRM version: NVIDIA UNIX x86_64
/// Kernel Module  580.159.04  ...`) or a Jetson's `/etc/nv_tegra_release`.
fn driver_version(proc_version: Option<&str>, tegra_release: Option<&str>) -> Option<String> {
    if let Some(text) = proc_version {
        let version = text
            .lines()
            .next()?
            .split_whitespace()
            .find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'));
        if let Some(version) = version {
            return Some(version.to_string());
        }
    }
    let release = tegra_release?.lines().next()?;
    let major = release.strip_prefix("# R")?.split_whitespace().next()?;
    let revision = release
        .split("REVISION: ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or("?");
    Some(format!("L4T R{major}.{revision}"))
}

/// The driver, or why the check cannot run here.
fn decide(
    libcuda: Option<PathBuf>,
    device: Option<&str>,
    version: Option<String>,
) -> Result<Driver, String> {
    let Some(libcuda) = libcuda else {
        return Err(
            "no NVIDIA driver: no libcuda.so.1 in ldconfig's cache or the usual directories".into(),
        );
    };
    let Some(_device) = device else {
        return Err(format!(
            "no NVIDIA GPU: none of {} exists (a driver library without a device runs nothing)",
            DEVICES.join(", ")
        ));
    };
    let dir = libcuda
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    Ok(Driver {
        dir,
        version: version.unwrap_or_else(|| "unknown".into()),
    })
}

/// Looks at this machine.
fn detect(target: Target) -> Result<Driver, String> {
    let listing = Shell::new()
        .and_then(|sh| cmd!(sh, "ldconfig -p").ignore_status().output())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let libcuda = libcuda_from_ldconfig(&listing).or_else(|| {
        candidate_dirs(target.triplet())
            .into_iter()
            .map(|dir| PathBuf::from(dir).join("libcuda.so.1"))
            .find(|p| p.exists())
    });
    let device = DEVICES.iter().copied().find(|d| Path::new(d).exists());
    let version = driver_version(
        std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .as_deref(),
        std::fs::read_to_string("/etc/nv_tegra_release")
            .ok()
            .as_deref(),
    );
    decide(libcuda, device, version)
}

/// Both versions, when both are dotted numbers (`580.95.05`), else `None`.
fn comparable<'v>(a: &'v str, b: &'v str) -> Option<(&'v str, &'v str)> {
    let dotted = |v: &str| v.contains('.') && v.split('.').all(|p| p.parse::<u64>().is_ok());
    (dotted(a) && dotted(b)).then_some((a, b))
}

/// `580.95.05` < `580.159.04`, numerically part by part.
fn older(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').filter_map(|p| p.parse().ok()).collect() };
    parts(a) < parts(b)
}

/// The host's cuda-compat package: `/usr/local/cuda*/compat` with a `libcuda.so.1`, and the
/// driver version its file name carries.
fn host_compat() -> Option<(PathBuf, String)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/local")
        .ok()?
        .flatten()
        .map(|e| e.path().join("compat"))
        .filter(|p| {
            p.join("libcuda.so.1").exists()
                && p.parent()
                    .and_then(|d| d.file_name())
                    .is_some_and(|n| n.to_string_lossy().starts_with("cuda"))
        })
        .collect();
    dirs.sort();
    let dir = dirs.pop()?;
    let file = std::fs::canonicalize(dir.join("libcuda.so.1")).ok()?;
    let version = file
        .file_name()?
        .to_string_lossy()
        .strip_prefix("libcuda.so.")?
        .to_string();
    Some((dir, version))
}

pub(crate) fn run(env: &Env, release: Release) -> Result<()> {
    let Some(target) = Target::native() else {
        bail!(
            "the real-driver check runs on x86_64 or aarch64 machines, not {}",
            std::env::consts::ARCH
        );
    };
    let driver = match detect(target) {
        Ok(driver) => driver,
        Err(why) => {
            outln!("real-driver check: not run on this machine: {why}");
            return Err(NeedsAttention(format!(
                "the real-driver check did not run ({why}); run it on a machine with an NVIDIA \
                 GPU and driver: it counts as not run, not as passed"
            ))
            .into());
        }
    };
    host::require(&[tools::PATCHELF])?;
    let cache = host::cache_dir()?;
    let mut loaders = Vec::new();
    for flavour in [Flavour::Patched, Flavour::Unpatched] {
        let sysroot = crate::resolution::obtain_sysroot(env, release, target, flavour)?;
        let layout = Layout::new(&sysroot)?;
        loaders.push((flavour, sysroot, layout));
    }
    let (_, patched, patched_layout) = &loaders[0];
    let probe = real::probe(patched, patched_layout, &cache)
        .context("cannot compile the real-driver probe")?;
    let libcuda = std::fs::canonicalize(driver.dir.join("libcuda.so.1")).with_context(|| {
        format!(
            "cannot resolve {}",
            driver.dir.join("libcuda.so.1").display()
        )
    })?;
    let helper = driver.dir.join("libnvidia-ptxjitcompiler.so.1");
    let compat = host_compat();
    let scratch = tempfile::Builder::new()
        .prefix("real-driver-")
        .tempdir_in(&cache)
        .context("cannot create a scratch directory for the real-driver check")?;
    let copy_dir = scratch.path().join("compat");
    let dirs = Dirs {
        driver: driver.dir.clone(),
        copy: copy_dir.clone(),
        host_compat: compat.as_ref().map(|(dir, _)| dir.clone()),
    };
    let jetson = Path::new("/etc/nv_tegra_release").exists();
    let machine = real::Machine {
        jetson,
        // NVIDIA's GPU packages name the driver version (libcuda.so.580.95.05); a Jetson's
        // libcuda.so.1.1 does not, and its 803 depends on the L4T release instead.
        compat_is_older: compat
            .as_ref()
            .filter(|_| !jetson)
            .and_then(|(_, version)| comparable(version, &driver.version))
            .map(|(compat, running)| older(compat, running)),
    };
    let mut rows = Vec::new();
    let mut device = None;
    for setup in Setup::ALL {
        let runpath = match setup {
            Setup::HostCompat => match &compat {
                Some((dir, _)) => Some(dir.clone()),
                None => {
                    diagln!(
                        "real-driver check: no /usr/local/cuda*/compat here: {} left out",
                        setup.describe()
                    );
                    continue;
                }
            },
            _ if setup.copy().is_some() => Some(copy_dir.clone()),
            _ => None,
        };
        if let Some(copy) = setup.copy() {
            place_copy(&libcuda, &helper, &copy_dir, copy)?;
        }
        let program = scratch.path().join("probe");
        std::fs::copy(&probe, &program).context("cannot copy the probe")?;
        if let Some(dir) = &runpath {
            patchelf(&program, &["--set-rpath", &dir.display().to_string()])?;
        }
        for (flavour, sysroot, layout) in &loaders {
            let lib = |dir: &str| sysroot.path.join(dir.trim_start_matches('/'));
            let mut library_path = format!(
                "{}:{}",
                lib(&layout.slibdir).display(),
                lib(&layout.libdir).display()
            );
            if setup == Setup::LibraryPath {
                library_path.push_str(&format!(":{}", driver.dir.display()));
            }
            let loader = sysroot
                .path
                .join(target.loader_path().trim_start_matches('/'));
            let sh = shell::here()?;
            let mut run = cmd!(
                sh,
                "timeout 300 {loader} --inhibit-cache --library-path {library_path} {program}"
            )
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("CUDA_CACHE_DISABLE", "1");
            if !matches!(setup, Setup::NoVariable | Setup::LibraryPath) {
                run = run.env("LD_FALLBACK_PATH", &driver.dir);
            }
            let out = run
                .ignore_status()
                .output()
                .with_context(|| format!("cannot run {}", loader.display()))?;
            let seen = real::read(&String::from_utf8_lossy(&out.stdout), &dirs);
            device = device.or_else(|| seen.device.clone());
            rows.push(Row {
                setup,
                loader: flavour.name(),
                expected: real::expected(setup, *flavour == Flavour::Patched, machine),
                seen,
            });
        }
        if setup.copy().is_some() {
            std::fs::remove_dir_all(&copy_dir)
                .with_context(|| format!("cannot clear {}", copy_dir.display()))?;
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let header = format!(
        "Real-driver check on {}: driver {} ({}), {}, glibc {release} {target} patched and unpatched{}.",
        crate::series::mail_date::utc_minutes(now),
        driver.version,
        driver.dir.display(),
        device.as_deref().unwrap_or("no device reported"),
        compat
            .as_ref()
            .map(|(dir, v)| format!("; host cuda-compat {v} in {}", dir.display()))
            .unwrap_or_default()
    );
    out!("{}", real::render(&header, &rows));
    let differ = rows.iter().filter(|r| !r.expected.matches(&r.seen)).count();
    if differ > 0 {
        bail!(
            "{differ} of {} runs differ from the x86_64 GPU-host measurements (see the table)",
            rows.len()
        );
    }
    Ok(())
}

/// The copy of the driver's `libcuda.so.1` a setup makes (and its helper beside it).
fn place_copy(libcuda: &Path, helper: &Path, dir: &Path, copy: real::Copy) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let to = dir.join("libcuda.so.1");
    std::fs::copy(libcuda, &to).with_context(|| format!("cannot copy {}", libcuda.display()))?;
    if copy.origin {
        patchelf(&to, &["--set-rpath", "$ORIGIN"])?;
    } else {
        patchelf(&to, &["--remove-rpath"])?;
    }
    if copy.helper {
        let file = std::fs::canonicalize(helper)
            .with_context(|| format!("the driver has no {}", helper.display()))?;
        std::fs::copy(&file, dir.join("libnvidia-ptxjitcompiler.so.1"))
            .with_context(|| format!("cannot copy {}", file.display()))?;
    }
    Ok(())
}

fn patchelf(file: &Path, args: &[&str]) -> Result<()> {
    let sh = shell::here()?;
    let out = cmd!(sh, "patchelf {args...} {file}")
        .ignore_status()
        .output()
        .context("cannot run patchelf")?;
    if !out.status.success() {
        bail!(
            "patchelf {} {} failed: {}",
            args.join(" "),
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_driver_or_gpu_is_not_run() {
        let none = decide(None, Some("/dev/nvidia0"), None).unwrap_err();
        assert!(none.contains("no NVIDIA driver"), "{none}");
        let no_gpu = decide(Some("/usr/lib/x/libcuda.so.1".into()), None, None).unwrap_err();
        assert!(no_gpu.contains("no NVIDIA GPU"), "{no_gpu}");
        let driver = decide(
            Some("/usr/lib/x86_64-linux-gnu/libcuda.so.1".into()),
            Some("/dev/nvidia0"),
            Some("580.159.04".into()),
        )
        .unwrap();
        assert_eq!(driver.dir, PathBuf::from("/usr/lib/x86_64-linux-gnu"));
    }

    #[test]
    fn driver_versions_are_read_from_the_kernel_module_or_l4t() {
        assert_eq!(
            driver_version(
                Some("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct  7 2025\nGCC version: gcc 13\n"),
                None
            )
            .as_deref(),
            Some("580.159.04")
        );
        assert_eq!(
            driver_version(
                None,
                Some("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64\n")
            )
            .as_deref(),
            Some("L4T R36.4.3")
        );
        assert_eq!(driver_version(None, None), None);
    }

    #[test]
    fn libcuda_is_found_in_ldconfigs_listing() {
        let listing = "1234 libs found in cache `/etc/ld.so.cache'\n\
            \tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n\
            \tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1\n";
        assert_eq!(
            libcuda_from_ldconfig(listing),
            Some(PathBuf::from("/lib/x86_64-linux-gnu/libcuda.so.1"))
        );
        assert_eq!(libcuda_from_ldconfig("libcudart.so.12 => /x\n"), None);
    }

    #[test]
    fn only_dotted_versions_are_compared() {
        assert!(comparable("580.95.05", "580.159.04").is_some());
        assert!(comparable("1.1", "L4T R36.4.3").is_none());
        assert!(comparable("580", "580.1").is_none());
    }

    #[test]
    fn versions_compare_part_by_part() {
        assert!(older("580.95.05", "580.159.04"));
        assert!(!older("580.159.04", "580.95.05"));
        assert!(!older("580.159.04", "580.159.04"));
    }
}
