//! One run's root: the host's driver files where that host keeps them, the host's own
//! libraries (Debian's real ones) in its multiarch directory, the app's Nix store paths with
//! the RUNPATH and DT_NEEDED entries the approach gives them (patchelf, as Nix), the board's
//! `/etc/nv_tegra_release`; then the app's run, with the approach's variables.

use std::path::Path;

use anyhow::{bail, Result};

use super::fixtures::{board_libs, nvrm_dependencies};
use super::outcome::{self, Places};
use super::paths::Paths;
use super::{
    App, Approach, Column, CompatRunpath, CudartRunpath, Host, HostLibs, JetsonFixtures, OptOut,
    Origin, RunKey, RunReport,
};
use crate::root::{Bench, Ctx, Root};

const JIT: &str = "libnvidia-ptxjitcompiler.so.1";

/// The name of a run's root, unique within the bench.
pub fn run_name(approach: &Approach, column: &Column, key: RunKey) -> String {
    let way = match key.way {
        None => String::new(),
        Some(way) => format!("-{}", way_name(way)),
    };
    format!(
        "jetson-{}-{}{way}-{}-{}-{}-{}",
        approach.number,
        column.id,
        key.linkage.name(),
        key.app.name(),
        key.origin.name(),
        key.flavour
    )
}

fn way_name(way: OptOut) -> &'static str {
    match way {
        OptOut::LibraryPathAtDriver => "llp-driver",
        OptOut::LibraryPathAtL4tCuda => "llp-l4t-cuda",
        OptOut::PreloadDriver => "preload",
        OptOut::Nothing => "nothing",
    }
}

/// Builds the run's root, runs the app, and says what happened.
pub(super) fn run(
    bench: &Bench,
    fixtures: &JetsonFixtures,
    host: &HostLibs,
    approach: &Approach,
    column: &Column,
    key: RunKey,
) -> RunReport {
    let cx = Ctx::new(bench, &run_name(approach, column, key));
    let paths = Paths::new(column, bench.sysroot.target.triplet());
    let mut root = cx.root();
    let uses_compat_system_wide = approach.impure_binding
        && column.host == Host::NixOs
        && (column.board.driver < column.app_needs || column.opt_out);
    let slibdir = &bench.layout.slibdir;
    // nixpkgs' glibc ships a copy of libgcc_s.so.1 in its own lib directory (its default
    // directory), for libc's own dlopen of it.
    root.host_file(
        &host.file("libgcc_s.so.1"),
        &format!("{slibdir}/libgcc_s.so.1"),
        None,
    );
    gcc_lib(&mut root, host, &paths);
    board(
        &mut root,
        fixtures,
        host,
        column,
        &paths,
        uses_compat_system_wide,
    );
    app(&mut root, fixtures, approach, column, &paths, key, slibdir);

    let (env, action) = environment(approach, column, &paths, key.way);
    let mut run = root.command(&paths.app);
    for (name, value) in &env {
        run = run.env(name, value);
    }
    let places = Places::new(&paths, &bench.layout, column);
    let result = nix_like_loader_holds(&root.path).and_then(|()| run.output());
    let invocation = cx.last_invocation();
    let command = invocation.as_ref().map(|i| i.display()).unwrap_or_default();
    match result {
        Ok(out) => {
            let seen = outcome::classify(&out, &places, column);
            RunReport {
                key,
                action,
                outcome: seen.text,
                works: seen.works,
                jit: seen.jit,
                command,
                loaded: seen.loaded,
                invocation,
            }
        }
        Err(err) => {
            let mut report = RunReport::not_run(key, &format!("{err:#}"));
            report.action = action;
            report.command = command;
            report
        }
    }
}

/// The variables of the run, and in the opt-out column what the user sets (for the cell).
fn environment(
    approach: &Approach,
    column: &Column,
    paths: &Paths,
    way: Option<OptOut>,
) -> (Vec<(String, String)>, Option<String>) {
    let mut env: Vec<(String, String)> = Vec::new();
    if let Some(variable) = approach.variable {
        let mut value = paths.driver_dir.clone();
        if column.nss {
            value = format!("{value}:{}", paths.host_lib);
        }
        env.push((variable.name().to_string(), value));
    }
    let mut action = None;
    if let Some(way) = way {
        let set = match way {
            OptOut::LibraryPathAtDriver => Some(("LD_LIBRARY_PATH", paths.driver_dir.clone())),
            OptOut::LibraryPathAtL4tCuda => {
                Some(("LD_LIBRARY_PATH", paths.system_l4t_cuda.clone()))
            }
            OptOut::PreloadDriver => {
                Some(("LD_PRELOAD", format!("{}/libcuda.so.1", paths.driver_dir)))
            }
            OptOut::Nothing => None,
        };
        action = Some(match &set {
            Some((name, value)) => format!("{name}={value}"),
            None => "nothing to set".to_string(),
        });
        if let Some((name, value)) = set {
            match env.iter_mut().find(|(n, _)| n == name) {
                Some((_, old)) => *old = value,
                None => env.push((name.to_string(), value)),
            }
        }
    }
    if column.nss {
        env.push(("SAXPY_NSS".into(), "1".into()));
    }
    (env, action)
}

/// The loader under test reads `/etc/ld.so.cache` and `/etc/ld.so.preload`; a Nix glibc reads
/// `<its prefix>/etc/ld.so.cache` (which nixpkgs deletes) and `/etc/ld-nix.so.preload`. With
/// none of these files in the root the two search the same places: the replay's stand-in
/// for a Nix glibc holds only then.
pub(super) fn nix_like_loader_holds(root: &Path) -> Result<()> {
    for file in [
        "etc/ld.so.cache",
        "etc/ld.so.preload",
        "etc/ld-nix.so.preload",
    ] {
        if root.join(file).exists() {
            bail!(
                "the root has /{file}: the loader under test would read what a Nix glibc does not \
                 (docs/jetson.md, \"The loader\")"
            );
        }
    }
    Ok(())
}

/// gcc's `lib` output of the Nix closures: what a C++ app and the l4t store paths link.
/// `libstdc++.so.6` finds its `libgcc_s.so.1` through its RUNPATH, as Nix links it.
fn gcc_lib(root: &mut Root, host: &HostLibs, paths: &Paths) {
    let dir = &paths.gcc_lib;
    root.patched_copy(
        &host.file("libstdc++.so.6"),
        &format!("{dir}/libstdc++.so.6"),
        &["--set-rpath", dir],
    )
    .host_file(
        &host.file("libgcc_s.so.1"),
        &format!("{dir}/libgcc_s.so.1"),
        None,
    );
}

/// The board's driver where the host keeps it, its libraries, the host's own libraries, and
/// `/etc/nv_tegra_release`.
fn board(
    root: &mut Root,
    fixtures: &JetsonFixtures,
    host: &HostLibs,
    column: &Column,
    paths: &Paths,
    compat_in_driver_dir: bool,
) {
    let l4t = column.board.l4t;
    root.write(
        "/etc/nv_tegra_release",
        &format!("# R{l4t} (release), REVISION: 0.0, GCID: 0, BOARD: generic, EABI: aarch64\n"),
    )
    // Ubuntu's (and JetPack's) configuration; `nobody` is left out of /etc/passwd, so that a
    // lookup of it reaches the systemd module, as any user /etc/passwd does not list does.
    .write(
        "/etc/nsswitch.conf",
        "passwd: files systemd\ngroup: files systemd\n",
    )
    .write("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
    .write("/etc/group", "root:x:0:\n");
    let board_jit = fixtures.jit(column.board.driver);
    match column.host {
        Host::NixOs => {
            // l4t-core and l4t-cuda as autoPatchelf leaves them (each library's RUNPATH names
            // the store paths of its dependencies), joined into /run/opengl-driver/lib by
            // jetpack-nixos' symlinkJoin.
            let core = &paths.system_l4t_core;
            let core_runpath = format!("{core}:{}", paths.gcc_lib);
            for lib in board_libs(l4t) {
                root.patched_copy(
                    &fixtures.board_lib(l4t, lib.name),
                    &format!("{core}/{}", lib.name),
                    &["--set-rpath", &core_runpath],
                );
            }
            let cuda = &paths.system_l4t_cuda;
            root.patched_copy(
                &fixtures.board_cuda(column.board),
                &format!("{cuda}/libcuda.so.1.1"),
                &["--set-rpath", &format!("{cuda}:{core}")],
            )
            .symlink("libcuda.so.1.1", &format!("{cuda}/libcuda.so.1"))
            .host_file(&board_jit, &format!("{cuda}/{JIT}"), None);
            let driver = &paths.driver_dir;
            for lib in board_libs(l4t) {
                root.symlink(
                    &format!("{core}/{}", lib.name),
                    &format!("{driver}/{}", lib.name),
                );
            }
            root.symlink(
                &format!("{cuda}/libcuda.so.1.1"),
                &format!("{driver}/libcuda.so.1.1"),
            )
            .symlink(&format!("{cuda}/{JIT}"), &format!("{driver}/{JIT}"));
            let libcuda = if compat_in_driver_dir {
                // Approach 3: the system's choice, for every program.
                format!("{}/libcuda.so.1", paths.compat_dir)
            } else {
                format!("{cuda}/libcuda.so.1")
            };
            root.symlink(&libcuda, &format!("{driver}/libcuda.so.1"));
        }
        Host::JetPack5 | Host::JetPack6 => {
            // As L4T installs them: no RUNPATH (the host's ld.so.cache finds them for the
            // host's glibc; a Nix glibc does not read it).
            let driver = &paths.driver_dir;
            for lib in board_libs(l4t) {
                root.host_file(
                    &fixtures.board_lib(l4t, lib.name),
                    &format!("{driver}/{}", lib.name),
                    None,
                );
            }
            root.host_file(
                &fixtures.board_cuda(column.board),
                &format!("{driver}/libcuda.so.1.1"),
                None,
            )
            .symlink("libcuda.so.1.1", &format!("{driver}/libcuda.so.1"))
            .host_file(&board_jit, &format!("{driver}/{JIT}"), None);
            // The host's own libraries, built against the host's glibc.
            for name in super::host::FILES {
                root.host_file(
                    &host.file(name),
                    &format!("{}/{name}", paths.host_lib),
                    None,
                );
            }
        }
    }
}

/// The app's closure: saxpy, its CUDA runtime, cuda_compat (and l4t-core for approach 6).
fn app(
    root: &mut Root,
    fixtures: &JetsonFixtures,
    approach: &Approach,
    column: &Column,
    paths: &Paths,
    key: RunKey,
    glibc_lib: &str,
) {
    // Nix links every program with the directories of its libraries in RUNPATH, its glibc's
    // last.
    let app_runpath = match key.app {
        App::Cxx => format!("{}:{}:{glibc_lib}", paths.cudart_dir, paths.gcc_lib),
        App::C => format!("{}:{glibc_lib}", paths.cudart_dir),
    };
    root.patched_copy(
        &fixtures.saxpy(key.app),
        &paths.app,
        &["--set-rpath", &app_runpath],
    );
    let compat_libcuda = format!("{}/libcuda.so.1", paths.compat_dir);
    let cudart_runpath = match approach.cudart_runpath {
        CudartRunpath::CompatFirst => {
            format!("{}:/run/opengl-driver/lib:$ORIGIN", paths.compat_dir)
        }
        CudartRunpath::DriverOnly => "/run/opengl-driver/lib:$ORIGIN".to_string(),
    };
    let mut cudart_edit = vec!["--set-rpath", cudart_runpath.as_str()];
    if approach.cudart_needs_compat {
        cudart_edit.extend(["--add-needed", compat_libcuda.as_str()]);
    }
    root.patched_copy(
        &fixtures.cudart(column.app_needs),
        &format!("{}/libcudart.so.12", paths.cudart_dir),
        &cudart_edit,
    );
    let compat_runpath = compat_runpath(approach.compat_runpath, key.origin, paths);
    let mut compat_edit = vec!["--set-rpath".to_string(), compat_runpath];
    if approach.compat_runpath == CompatRunpath::AppendTegra {
        // #273389 targets JetPack 5: what R35's libnvrm_* need from the directory.
        for name in nvrm_dependencies(35) {
            compat_edit.extend(["--add-needed".to_string(), name.to_string()]);
        }
    }
    let compat_edit: Vec<&str> = compat_edit.iter().map(String::as_str).collect();
    root.patched_copy(
        &fixtures.compat_cuda(column.compat, key.linkage),
        &compat_libcuda,
        &compat_edit,
    )
    // cuda_compat ships its JIT helper beside its libcuda.so.1.
    .host_file(
        &fixtures.jit(column.compat.version),
        &format!("{}/{JIT}", paths.compat_dir),
        None,
    );
    if approach.compat_runpath == CompatRunpath::L4tCoreFirst {
        let core = &paths.app_l4t_core;
        let core_runpath = format!("{core}:{}", paths.gcc_lib);
        for lib in board_libs(column.compat.l4t) {
            root.patched_copy(
                &fixtures.board_lib(column.compat.l4t, lib.name),
                &format!("{core}/{}", lib.name),
                &["--set-rpath", &core_runpath],
            );
        }
    }
}

/// cuda_compat's RUNPATH under an approach, with `$ORIGIN` where `origin` puts it.
fn compat_runpath(runpath: CompatRunpath, origin: Origin, paths: &Paths) -> String {
    let driver = "/run/opengl-driver/lib".to_string();
    let (entries, nixpkgs_at) = match runpath {
        CompatRunpath::Driver => (vec![driver], 1),
        // #273389 appends JetPack 5's directory, whatever the host, after what nixpkgs gave.
        CompatRunpath::AppendTegra => (vec![driver, format!("{}/tegra", paths.host_lib)], 1),
        CompatRunpath::L4tCoreFirst => (vec![paths.app_l4t_core.clone(), driver], 2),
    };
    origin.runpath(&entries, nixpkgs_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::COLUMNS;

    #[test]
    fn a_root_with_a_cache_or_a_preload_file_is_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        assert!(nix_like_loader_holds(root.path()).is_ok());
        for file in [
            "etc/ld.so.cache",
            "etc/ld.so.preload",
            "etc/ld-nix.so.preload",
        ] {
            std::fs::write(root.path().join(file), "").unwrap();
            let err = nix_like_loader_holds(root.path()).unwrap_err();
            assert!(format!("{err:#}").contains(file), "{err:#}");
            std::fs::remove_file(root.path().join(file)).unwrap();
        }
    }

    #[test]
    fn compat_runpaths_are_nixpkgs_with_origin_moved() {
        let paths = Paths::new(&COLUMNS[2], "aarch64-linux-gnu");
        assert_eq!(
            compat_runpath(CompatRunpath::Driver, Origin::Last, &paths),
            "/run/opengl-driver/lib:$ORIGIN"
        );
        assert_eq!(
            compat_runpath(CompatRunpath::AppendTegra, Origin::Last, &paths),
            "/run/opengl-driver/lib:$ORIGIN:/usr/lib/aarch64-linux-gnu/tegra"
        );
        assert_eq!(
            compat_runpath(CompatRunpath::L4tCoreFirst, Origin::Absent, &paths),
            format!("{}:/run/opengl-driver/lib", paths.app_l4t_core)
        );
    }
}
