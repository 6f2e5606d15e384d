//! The libraries of a replay root edited with patchelf (a RUNPATH or DT_NEEDED entry as Nix
//! sets it), each edit made once per bench and hard-linked into every root that places it, as
//! the sysroot's own files are. The same edits recur run after run: many runs place the same
//! app, CUDA runtime and board libraries with the same RUNPATHs, and the search model's
//! differential test builds every run's root once per loader. Made afresh, each edited file
//! cost a `cp` and a `patchelf` per option, in every root.
//!
//! An edit is keyed by its file, its options and the path it takes in the root. The path
//! counts because the loader takes a file whose device and inode it has already mapped for
//! the object it mapped (glibc's `_dl_map_object_from_fd`): two places in one root must stay
//! two files, as the copies of a real closure are.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use crate::root::Root;

pub(super) trait EditedCopy {
    /// [`Root::patched_copy`], the edited file made once per bench: the first root that
    /// places it makes it, the next ones link it.
    fn edited_copy(&mut self, from: &Path, to: &str, patchelf: &[&str]) -> &mut Self;
}

impl EditedCopy for Root {
    fn edited_copy(&mut self, from: &Path, to: &str, patchelf: &[&str]) -> &mut Root {
        let shared = self
            .path
            .parent()
            .and_then(|scratch| shared_path(scratch, from, to, patchelf));
        let Some(shared) = shared else {
            return self.patched_copy(from, to, patchelf);
        };
        if shared.exists() {
            return self.host_file(&shared, to, None);
        }
        self.patched_copy(from, to, patchelf);
        // Shared only when whole: a root whose setup failed keeps its files to itself. Best
        // effort: where the link cannot be made, the next root makes the edit again (two
        // roots racing for it both link the same content, and the second link fails).
        if self.setup_error().is_none() {
            if let Some(dir) = shared.parent() {
                let _ =
                    fs::create_dir_all(dir).and_then(|()| fs::hard_link(self.inside(to), &shared));
            }
        }
        self
    }
}

/// Where the bench keeps the edit: beside its roots, in the scratch directory that is
/// removed with them (a root is made directly in it, `Bench::next_root`).
fn shared_path(scratch: &Path, from: &Path, to: &str, patchelf: &[&str]) -> Option<PathBuf> {
    let name = Path::new(to).file_name()?.to_str()?;
    let mut hasher = DefaultHasher::new();
    (from, to, patchelf).hash(&mut hasher);
    Some(
        scratch
            .join(".edited")
            .join(format!("{:016x}-{name}", hasher.finish())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_shared_between_roots_but_two_places_stay_two_files() {
        let scratch = Path::new("/scratch");
        let lib = Path::new("/fixtures/libcuda.so.1");
        let at = |to: &str, edit: &[&str]| shared_path(scratch, lib, to, edit).unwrap();
        let runpath = ["--set-rpath", "/run/opengl-driver/lib"];
        // The next root that places the same edit at the same path links the same file.
        assert_eq!(
            at("/compat/libcuda.so.1", &runpath),
            at("/compat/libcuda.so.1", &runpath)
        );
        // The same edit at another path in a root is a file of its own.
        assert_ne!(
            at("/compat/libcuda.so.1", &runpath),
            at("/driver/libcuda.so.1", &runpath)
        );
        assert_ne!(
            at("/compat/libcuda.so.1", &runpath),
            at("/compat/libcuda.so.1", &["--remove-rpath"])
        );
        assert_eq!(
            at("/compat/libcuda.so.1", &runpath).parent(),
            Some(scratch.join(".edited").as_path())
        );
    }
}
