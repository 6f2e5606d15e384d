//! Where one run's root keeps each thing: the host's driver and library directories, and the
//! app's Nix store paths (a made-up but stable hash per name, like Nix's).

use super::{cuda_version, l4t_release, Column, Compat, CompatPackage, Program};

/// A Nix store path of `name` with a made-up but stable hash, like `/nix/store/<32>-name`.
pub(super) fn store(name: &str) -> String {
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
pub(super) struct Paths {
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
    /// gcc's `lib` output: `libstdc++.so.6` and `libgcc_s.so.1` of every Nix closure here.
    pub gcc_lib: String,
    /// cuda_cudart's `lib/stubs` (approach 11).
    pub stubs_dir: String,
    /// nix-gl-host's cache directories: the CUDA files and their dependencies (approach 9).
    pub gl_host_cuda: String,
    pub gl_host_lib: String,
    /// A program nixpkgs did not build, with its own runtime beside it.
    pub wheel_dir: String,
}

impl Paths {
    pub(super) fn new(column: &Column, triplet: &str) -> Paths {
        let l4t = l4t_release;
        let cudart = store(&format!("cuda_cudart-{}", cuda_version(column.app_needs)));
        let gl_host = "/home/user/.cache/nix-gl-host/0123456789abcdef";
        let wheel_dir = "/home/user/venv/lib/python3.12/site-packages/app".to_string();
        let app = match column.program {
            Program::Nix | Program::NixWithoutCompat => {
                format!("{}/bin/saxpy", store("saxpy-1.0"))
            }
            Program::Wheel => format!("{wheel_dir}/saxpy"),
        };
        Paths {
            driver_dir: column.host.driver_dir(triplet),
            host_lib: format!("/usr/lib/{triplet}"),
            app,
            cudart_dir: format!("{cudart}/lib"),
            stubs_dir: format!("{cudart}/lib/stubs"),
            gl_host_cuda: format!("{gl_host}/cuda"),
            gl_host_lib: format!("{gl_host}/lib"),
            wheel_dir,
            compat_dir: format!(
                "{}/compat",
                store(&format!(
                    "cuda_compat-{}",
                    cuda_version(column.compat.version)
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
            gcc_lib: format!("{}/lib", store("gcc-13.3.0-lib")),
        }
    }
}

impl Paths {
    /// The paths of the container row's root ([`super::cache`]): the app, its runtime and
    /// cuda_compat where a CUDA image has them, the host's directories of `column` (the
    /// container's view of its host, [`super::cache::container_column`]).
    pub(super) fn container(column: &Column, triplet: &str) -> Paths {
        Paths {
            app: CONTAINER_APP.to_string(),
            cudart_dir: container_cudart_dir(triplet),
            compat_dir: container_compat_dir(column.compat).to_string(),
            ..Paths::new(column, triplet)
        }
    }
}

/// Where a CUDA image keeps NVIDIA's compat package: `compat/` for `cuda-compat-<x>-<y>`,
/// `compat_orin/` for `cuda-compat-orin-<x>-<y>` (the redistributable's own directory, as
/// conda-forge's `cuda-compat-orin` recipe reads it, and where the toolkit looks on an Orin:
/// NVIDIA/nvidia-container-toolkit's review of its Orin support: "The orin compat path in the
/// container should be
/// `/usr/local/cuda/compat_orin`").
pub(super) fn container_compat_dir(compat: Compat) -> &'static str {
    match compat.package {
        CompatPackage::CudaCompat | CompatPackage::Driver580 => "/usr/local/cuda/compat",
        CompatPackage::Orin => "/usr/local/cuda/compat_orin",
    }
}

/// The app of the container image.
const CONTAINER_APP: &str = "/usr/local/bin/saxpy";

/// The CUDA runtime's directory in a CUDA image, which `cuda-toolkit-config-common`'s
/// `/etc/ld.so.conf.d/000_cuda.conf` names.
fn container_cudart_dir(triplet: &str) -> String {
    let arch = triplet.split('-').next().unwrap_or(triplet);
    format!("/usr/local/cuda/targets/{arch}-linux/lib")
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
