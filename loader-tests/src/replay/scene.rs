//! One cell's root: the host's driver files where that host keeps them, the app's Nix store
//! paths with the RUNPATH and DT_NEEDED entries the approach gives them (patchelf, as Nix),
//! the board's `/etc/nv_tegra_release`; then the app's run, with the approach's variables.

use super::outcome::{self, Places};
use super::{
    Approach, Column, CompatRunpath, CudartRunpath, Host, JetsonFixtures, Linkage, OptOut,
    RunReport, Variable,
};
use crate::root::{Bench, Ctx, Root};
use crate::Flavour;

/// A Nix store path of `name` with a made-up but stable hash, like `/nix/store/<32>-name`.
pub fn store(name: &str) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdfghijklmnpqrsvwxyz";
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    let mut hash = String::new();
    for i in 0..32u8 {
        for b in name.bytes().chain([i]) {
            state ^= u64::from(b);
            state = state.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash.push(ALPHABET[(state >> 59) as usize] as char);
    }
    format!("/nix/store/{hash}-{name}")
}

/// The paths of one cell's root.
pub struct Paths {
    /// `/run/opengl-driver/lib` (NixOS) or the JetPack driver directory.
    pub driver_dir: String,
    /// The host's multiarch directory (`/usr/lib/aarch64-linux-gnu`).
    pub host_lib: String,
    pub app: String,
    pub cudart_dir: String,
    pub compat_dir: String,
    /// The l4t-core store path of the app's closure (approach 6) and, on NixOS, of the system.
    pub app_l4t_core: String,
    pub system_l4t_core: String,
    pub system_l4t_cuda: String,
}

impl Paths {
    pub fn new(column: &Column, triplet: &str) -> Paths {
        let host_lib = format!("/usr/lib/{triplet}");
        let driver_dir = match column.host {
            Host::NixOs => "/run/opengl-driver/lib".to_string(),
            Host::JetPack5 => format!("{host_lib}/tegra"),
            Host::JetPack6 => format!("{host_lib}/nvidia"),
        };
        let l4t = |l4t: u32| match l4t {
            35 => "35.6.0",
            _ => "36.4.3",
        };
        Paths {
            driver_dir,
            host_lib,
            app: format!("{}/bin/saxpy", store("saxpy-1.0")),
            cudart_dir: format!(
                "{}/lib",
                store(&format!(
                    "cuda_cudart-{}",
                    super::cuda_version(column.app_needs)
                ))
            ),
            compat_dir: format!(
                "{}/compat",
                store(&format!(
                    "cuda_compat-{}",
                    super::cuda_version(column.compat.version)
                ))
            ),
            app_l4t_core: format!(
                "{}/lib",
                store(&format!("nvidia-l4t-core-{}", l4t(column.compat.l4t)))
            ),
            system_l4t_core: format!(
                "{}/lib",
                store(&format!("nvidia-l4t-core-{}", l4t(column.board.l4t)))
            ),
            system_l4t_cuda: format!(
                "{}/lib",
                store(&format!("nvidia-l4t-cuda-{}", l4t(column.board.l4t)))
            ),
        }
    }
}

const BOARD_LIBS: [&str; 3] = ["libnvos.so", "libnvrm_gpu.so", "libnvrm_mem.so"];

/// Builds the cell's root, runs the app, and says what happened.
pub fn run(
    bench: &Bench,
    fixtures: &JetsonFixtures,
    approach: &Approach,
    column: &Column,
    linkage: Linkage,
    flavour: Flavour,
) -> RunReport {
    let name = format!(
        "jetson-{}-{}-{}-{}",
        approach.number,
        column.id,
        linkage.name(),
        flavour
    );
    let cx = Ctx::new(bench, &name);
    let paths = Paths::new(column, bench.sysroot.target.triplet());
    let mut root = cx.root();
    let uses_compat_system_wide = approach.impure_binding
        && column.host == Host::NixOs
        && (column.board.driver < column.app_needs || column.opt_out);
    board(
        &mut root,
        fixtures,
        column,
        &paths,
        uses_compat_system_wide,
        linkage,
    );
    app(
        &mut root,
        fixtures,
        approach,
        column,
        &paths,
        linkage,
        &bench.layout.slibdir,
    );

    let mut env: Vec<(String, String)> = Vec::new();
    if let Some(variable) = approach.variable {
        let mut value = paths.driver_dir.clone();
        if column.nss {
            value = format!("{value}:{}", paths.host_lib);
        }
        env.push((variable.name().to_string(), value));
    }
    let mut action = None;
    if column.opt_out {
        let llp = match approach.opt_out {
            OptOut::LibraryPathAtDriver | OptOut::NoPerRunWay => Some(paths.driver_dir.clone()),
            OptOut::LibraryPathAtL4tCuda => Some(paths.system_l4t_cuda.clone()),
            OptOut::Nothing => None,
        };
        action = Some(match &llp {
            Some(dir) => format!("LD_LIBRARY_PATH={dir}"),
            None => "nothing to set".to_string(),
        });
        if let Some(dir) = llp {
            match env
                .iter_mut()
                .find(|(n, _)| n == Variable::LibraryPath.name())
            {
                Some((_, value)) => *value = dir,
                None => env.push((Variable::LibraryPath.name().to_string(), dir)),
            }
        }
    }
    if column.nss {
        env.push(("SAXPY_NSS".into(), "1".into()));
    }
    let mut run = root.command(&paths.app);
    for (name, value) in &env {
        run = run.env(name, value);
    }
    let places = Places::new(&paths, &bench.layout, column);
    let result = run.output();
    let invocation = cx.last_invocation();
    let command = invocation.as_ref().map(|i| i.display()).unwrap_or_default();
    match result {
        Ok(out) => {
            let seen = outcome::classify(&out, &places, column);
            RunReport {
                flavour,
                linkage,
                action,
                outcome: seen.text,
                works: seen.works,
                command,
                loaded: seen.loaded,
                invocation,
            }
        }
        Err(err) => RunReport {
            flavour,
            linkage,
            action,
            outcome: format!("not run: {err:#}"),
            works: false,
            command,
            loaded: Vec::new(),
            invocation,
        },
    }
}

/// The board's driver where the host keeps it, and `/etc/nv_tegra_release`.
fn board(
    root: &mut Root,
    fixtures: &JetsonFixtures,
    column: &Column,
    paths: &Paths,
    compat_in_driver_dir: bool,
    linkage: Linkage,
) {
    let l4t = column.board.l4t;
    root.write(
        "/etc/nv_tegra_release",
        &format!("# R{l4t} (release), REVISION: 0.0, GCID: 0, BOARD: generic, EABI: aarch64\n"),
    )
    .write("/etc/nsswitch.conf", "passwd: compat\ngroup: compat\n")
    .write("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    match column.host {
        Host::NixOs => {
            // l4t-core and l4t-cuda as autoPatchelf leaves them (each library's RUNPATH
            // names the store paths of its dependencies), joined into /run/opengl-driver/lib.
            let core = &paths.system_l4t_core;
            for lib in BOARD_LIBS {
                root.patched_copy(
                    &fixtures.board_lib(l4t, lib),
                    &format!("{core}/{lib}"),
                    &["--set-rpath", core],
                );
            }
            let cuda = &paths.system_l4t_cuda;
            root.patched_copy(
                &fixtures.board_cuda(column.board),
                &format!("{cuda}/libcuda.so.1.1"),
                &["--set-rpath", core],
            )
            .symlink("libcuda.so.1.1", &format!("{cuda}/libcuda.so.1"));
            let driver = &paths.driver_dir;
            for lib in BOARD_LIBS {
                root.symlink(&format!("{core}/{lib}"), &format!("{driver}/{lib}"));
            }
            root.symlink(
                &format!("{cuda}/libcuda.so.1.1"),
                &format!("{driver}/libcuda.so.1.1"),
            );
            let libcuda = if compat_in_driver_dir {
                // Approach 3: the system's choice, for every program.
                format!("{}/libcuda.so.1", paths.compat_dir)
            } else {
                format!("{cuda}/libcuda.so.1")
            };
            root.symlink(&libcuda, &format!("{driver}/libcuda.so.1"));
            // Its RUNPATH as the system's copy of cuda_compat has it (buildRedist).
            if compat_in_driver_dir {
                root.patched_copy(
                    &fixtures.compat_cuda(column.compat, linkage),
                    &format!("{}/libcuda.so.1", paths.compat_dir),
                    &["--set-rpath", "/run/opengl-driver/lib:$ORIGIN"],
                );
            }
        }
        Host::JetPack5 | Host::JetPack6 => {
            // As L4T installs them: no RUNPATH (the host's ld.so.cache finds them for the
            // host's glibc; a Nix glibc does not read it).
            let driver = &paths.driver_dir;
            for lib in BOARD_LIBS {
                root.host_file(
                    &fixtures.board_lib(l4t, lib),
                    &format!("{driver}/{lib}"),
                    None,
                );
            }
            root.host_file(
                &fixtures.board_cuda(column.board),
                &format!("{driver}/libcuda.so.1.1"),
                None,
            )
            .symlink("libcuda.so.1.1", &format!("{driver}/libcuda.so.1"))
            .host_file(
                &fixtures.host_nss_compat(),
                &format!("{}/libnss_compat.so.2", paths.host_lib),
                None,
            );
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
    linkage: Linkage,
    glibc_lib: &str,
) {
    // Nix links every program with its glibc's lib dir in RUNPATH.
    root.patched_copy(
        &fixtures.saxpy(),
        &paths.app,
        &["--set-rpath", &format!("{}:{glibc_lib}", paths.cudart_dir)],
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
    let compat_runpath = match approach.compat_runpath {
        CompatRunpath::Driver => "/run/opengl-driver/lib:$ORIGIN".to_string(),
        // #273389 appends JetPack 5's directory, whatever the host.
        CompatRunpath::AppendTegra => {
            format!("/run/opengl-driver/lib:$ORIGIN:{}/tegra", paths.host_lib)
        }
        CompatRunpath::L4tCoreFirst => {
            format!("{}:/run/opengl-driver/lib:$ORIGIN", paths.app_l4t_core)
        }
    };
    let mut compat_edit = vec!["--set-rpath", compat_runpath.as_str()];
    if approach.compat_runpath == CompatRunpath::AppendTegra {
        compat_edit.extend(["--add-needed", "libnvos.so"]);
    }
    root.patched_copy(
        &fixtures.compat_cuda(column.compat, linkage),
        &compat_libcuda,
        &compat_edit,
    );
    if approach.compat_runpath == CompatRunpath::L4tCoreFirst {
        let core = &paths.app_l4t_core;
        for lib in BOARD_LIBS {
            root.patched_copy(
                &fixtures.board_lib(column.compat.l4t, lib),
                &format!("{core}/{lib}"),
                &["--set-rpath", core],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_paths_look_like_nix_and_are_stable() {
        let path = store("saxpy-1.0");
        assert_eq!(path, store("saxpy-1.0"));
        let hash = path
            .strip_prefix("/nix/store/")
            .unwrap()
            .strip_suffix("-saxpy-1.0")
            .unwrap();
        assert_eq!(hash.len(), 32);
        assert_ne!(store("a"), store("b"));
    }
}
