//! What decides the loader's answer to a command run in a root: the root's files (each
//! path's kind, mode and content, and which paths are one file: the loader takes a file
//! whose device and inode it has mapped already for the object it mapped), the command, its
//! working directory and its environment. Two commands of one bench with equal worlds get the
//! same answer from its loader, whatever their roots are called: the search model's
//! differential test traces each world once and gives the result to every run that made it.

use std::collections::HashMap;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::probe::Invocation;

/// A command in a root, as the loader sees it: two are equal when the loader cannot tell
/// them apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct World {
    files: Vec<(PathBuf, Entry)>,
    argv: Vec<String>,
    env: Vec<(String, String)>,
    cwd: String,
    secure: bool,
    qemu: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Entry {
    Dir {
        mode: u32,
    },
    Symlink {
        target: PathBuf,
    },
    File {
        mode: u32,
        content: Content,
    },
    /// A socket, a fifo, a device: never made in a root, so never the same as another.
    Other {
        dev: u64,
        ino: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Content {
    /// A file with links outside this root too (the sysroot's, a fixture, an edit the bench
    /// shares): its device and inode name it, and say which paths of the root are one file.
    Linked { dev: u64, ino: u64 },
    /// A file of this root alone (written for it): its length and a hash of its bytes. A
    /// root's own files are all distinct inodes, as in every root with an equal world.
    Own { len: u64, hash: u64 },
}

impl World {
    /// The world of `invocation`: its root read (not its name: runs name roots apart).
    pub fn of(invocation: &Invocation) -> Result<World> {
        let mut files = Vec::new();
        walk(&invocation.root, Path::new(""), &mut files)
            .with_context(|| format!("cannot read the root {}", invocation.root.display()))?;
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(World {
            files,
            argv: invocation.argv.clone(),
            env: invocation.env.clone(),
            cwd: invocation.cwd.clone(),
            secure: invocation.secure,
            qemu: invocation.qemu.clone(),
        })
    }
}

/// Equal worlds numbered in the order they first come.
#[derive(Debug, Default)]
pub struct Worlds {
    index: HashMap<World, usize>,
}

impl Worlds {
    /// The number of `world`, and whether it is new.
    pub fn number(&mut self, world: World) -> (usize, bool) {
        let next = self.index.len();
        let number = *self.index.entry(world).or_insert(next);
        (number, number == next)
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

fn walk(root: &Path, rel: &Path, files: &mut Vec<(PathBuf, Entry)>) -> Result<()> {
    let dir = root.join(rel);
    for entry in fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        let rel = rel.join(entry.file_name());
        let path = entry.path();
        let meta = fs::symlink_metadata(&path)
            .with_context(|| format!("cannot stat {}", path.display()))?;
        let kind = meta.file_type();
        let entry = if kind.is_dir() {
            walk(root, &rel, files)?;
            Entry::Dir { mode: meta.mode() }
        } else if kind.is_symlink() {
            let target = fs::read_link(&path)
                .with_context(|| format!("cannot read the link {}", path.display()))?;
            Entry::Symlink { target }
        } else if kind.is_file() {
            let content = if meta.nlink() > 1 {
                Content::Linked {
                    dev: meta.dev(),
                    ino: meta.ino(),
                }
            } else {
                let bytes =
                    fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
                let mut hasher = DefaultHasher::new();
                bytes.hash(&mut hasher);
                Content::Own {
                    len: meta.len(),
                    hash: hasher.finish(),
                }
            };
            Entry::File {
                mode: meta.mode(),
                content,
            }
        } else {
            Entry::Other {
                dev: meta.dev(),
                ino: meta.ino(),
            }
        };
        files.push((rel, entry));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(root: &Path) -> Invocation {
        Invocation {
            root: root.to_path_buf(),
            cwd: "/work".into(),
            qemu: None,
            argv: vec!["/opt/probe/bin/needed".into()],
            env: vec![("LD_FALLBACK_PATH".into(), "/opt/fb".into())],
            secure: false,
            placed: Vec::new(),
        }
    }

    /// Two roots: `shared` hard-linked into both at lib/a.so, plus what `build` adds.
    fn two_roots(build: impl Fn(&Path, usize)) -> (World, World) {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared.so");
        fs::write(&shared, "shared").unwrap();
        let worlds: Vec<World> = (0..2)
            .map(|i| {
                let root = dir.path().join(format!("root-{i}"));
                fs::create_dir_all(root.join("lib")).unwrap();
                fs::hard_link(&shared, root.join("lib/a.so")).unwrap();
                build(&root, i);
                World::of(&invocation(&root)).unwrap()
            })
            .collect();
        (worlds[0].clone(), worlds[1].clone())
    }

    #[test]
    fn roots_built_alike_are_one_world_whatever_their_names() {
        let (a, b) = two_roots(|root, _| {
            fs::write(root.join("lib/own.conf"), "same text").unwrap();
            std::os::unix::fs::symlink("a.so", root.join("lib/b.so")).unwrap();
        });
        assert_eq!(a, b);
        let mut worlds = Worlds::default();
        assert_eq!(worlds.number(a), (0, true));
        assert_eq!(worlds.number(b), (0, false));
        assert_eq!(worlds.len(), 1);
    }

    #[test]
    fn a_file_of_other_bytes_is_another_world() {
        let (a, b) =
            two_roots(|root, i| fs::write(root.join("lib/own.conf"), [b'0' + i as u8]).unwrap());
        assert_ne!(a, b);
    }

    #[test]
    fn a_link_to_another_target_is_another_world() {
        let (a, b) = two_roots(|root, i| {
            std::os::unix::fs::symlink(format!("{i}.so"), root.join("lib/b.so")).unwrap()
        });
        assert_ne!(a, b);
    }

    /// The loader takes a file it has mapped already (same device and inode) for the object
    /// it mapped: one file at two paths is not two files with the same bytes.
    #[test]
    fn one_file_at_two_paths_is_not_two_equal_files() {
        let (a, b) = two_roots(|root, i| match i {
            0 => fs::hard_link(root.join("lib/a.so"), root.join("lib/c.so")).unwrap(),
            _ => {
                fs::copy(root.join("lib/a.so"), root.join("lib/c.so")).unwrap();
            }
        });
        assert_ne!(a, b);
    }

    #[test]
    fn another_mode_or_variable_is_another_world() {
        let (a, b) = two_roots(|root, i| {
            let file = root.join("lib/own.conf");
            fs::write(&file, "x").unwrap();
            let mode = if i == 0 { 0o644 } else { 0o4755 };
            fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
        });
        assert_ne!(a, b);
        let dir = tempfile::tempdir().unwrap();
        let plain = World::of(&invocation(dir.path())).unwrap();
        let other =
            World::of(&invocation(dir.path()).with_env("LD_FALLBACK_PATH", "/opt/x")).unwrap();
        assert_ne!(plain, other);
    }
}
