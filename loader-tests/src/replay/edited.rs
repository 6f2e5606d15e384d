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
use std::io;
use std::path::{Path, PathBuf};

use crate::root::Root;

pub(super) trait EditedCopy {
    /// [`Root::patched_copy`], the edited file made once per bench: the first root that
    /// places it makes it, the next ones link it.
    fn edited_copy(&mut self, from: &Path, to: &str, patchelf: &[&str]) -> &mut Self;
}

impl EditedCopy for Root {
    fn edited_copy(&mut self, from: &Path, to: &str, patchelf: &[&str]) -> &mut Root {
        // Linked or made here, the same file: one step of a recipe.
        if self.written_down(|| format!("edit of {} at {to}: {patchelf:?}", from.display())) {
            return self;
        }
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
        // Shared only when whole: a root whose setup failed keeps its files to itself.
        if self.setup_error().is_none() {
            share(&self.inside(to), &shared);
        }
        self
    }
}

/// Makes `own`, a root's fresh edit, the bench's `shared` one; where another root made it
/// first (two roots racing for one edit), `own` becomes a link to that one instead. The
/// file's identity is part of a root's world (`crate::world`): a root left with a copy of
/// its own would be another world than the roots that link the shared edit, and which roots
/// lose the race changes from run to run. Best effort: where neither link can be made, the
/// root keeps its copy and the next root makes the edit again.
fn share(own: &Path, shared: &Path) {
    let Some(dir) = shared.parent() else {
        return;
    };
    match fs::create_dir_all(dir).and_then(|()| fs::hard_link(own, shared)) {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            // Linked beside the copy, then renamed over it: the root never lacks the file.
            let beside = own.with_extension("shared-edit");
            let linked = fs::hard_link(shared, &beside).and_then(|()| fs::rename(&beside, own));
            if linked.is_err() {
                let _ = fs::remove_file(&beside);
            }
        }
        _ => {}
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
    use std::os::unix::fs::MetadataExt;

    /// Two roots made the same edit at once: the one that shares it second ends with the
    /// shared file, not a copy of its own (which made another world of it).
    #[test]
    fn the_root_that_loses_the_race_for_an_edit_links_the_shared_one() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join(".edited/0123-libcuda.so.1");
        let first = dir.path().join("root-0/libcuda.so.1");
        let second = dir.path().join("root-1/libcuda.so.1");
        for own in [&first, &second] {
            fs::create_dir_all(own.parent().unwrap()).unwrap();
            fs::write(own, "edited").unwrap();
        }
        share(&first, &shared);
        share(&second, &shared);
        let inode = |path: &Path| fs::metadata(path).unwrap().ino();
        assert_eq!(inode(&first), inode(&shared));
        assert_eq!(inode(&second), inode(&shared));
        assert_eq!(fs::read(&second).unwrap(), b"edited");
        let left: Vec<_> = fs::read_dir(second.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "nothing left beside the file");
    }

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
