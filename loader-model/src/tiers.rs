//! The search for a name without a slash, one function per tier, in the loader's order
//! (`_dl_map_new_object`): DT_RPATH of the loading chain, LD_LIBRARY_PATH, DT_RUNPATH of the
//! loading object, ld.so.cache, the default directories, and — with the patch — the fallback
//! list last (the fallback-first variant: right after DT_RUNPATH). [`Model::open_path`] is glibc's `open_path`: every directory with every
//! subdirectory, the directory memory, and the rule for giving up on a list.

use anyhow::Context;
use model::Flavour;

use super::cache::{Cache, Selector};
use super::elf::{self, Verified};
use super::fs::{OpenError, Opened, Special};
use super::paths::{Dir, Status};
use super::walk::{List, Model, TierResult};
use super::{Bytes, Candidate, CandidateVerdict, Load, Rule, Tier};

/// What `open_path` made of one list.
enum Listed {
    Found(Bytes, Opened),
    Failed(String),
    Stops(Bytes, String),
    /// Nothing; `any`: whether any of its directories exists.
    Nothing {
        any: bool,
    },
}

/// An object's own list: its RPATH or its RUNPATH.
#[derive(Clone, Copy)]
enum Own {
    Rpath,
    Runpath,
}

impl<'c> Model<'c> {
    /// Every tier in order, until one finds the file or fails the load.
    pub(super) fn search(
        &mut self,
        loader: Option<usize>,
        name: &[u8],
        ns: usize,
        load: &mut Load,
    ) -> TierResult {
        type Tier<'c> = fn(&mut Model<'c>, Option<usize>, &[u8], usize, &mut Load) -> TierResult;
        let tiers: [Tier<'c>; 6] = match self.facts.flavour {
            Flavour::Patched | Flavour::Unpatched | Flavour::TestsOnly => [
                Model::rpath,
                Model::library_path,
                Model::runpath,
                Model::cache,
                Model::default_dirs,
                Model::fallback,
            ],
            // The variant's patch moves the fallback list right after DT_RUNPATH (its
            // `_dl_map_new_object`), where it can shadow the cache and the default dirs.
            Flavour::FallbackFirst => [
                Model::rpath,
                Model::library_path,
                Model::runpath,
                Model::fallback,
                Model::cache,
                Model::default_dirs,
            ],
        };
        for tier in tiers {
            match tier(self, loader, name, ns, load) {
                TierResult::Continue => {}
                done => return done,
            }
        }
        TierResult::Continue
    }

    /// 1. DT_RPATH of the loading object, of the object that loaded it, and on up; then of
    ///    the program. Not at all when the loading object has a DT_RUNPATH.
    fn rpath(
        &mut self,
        loader: Option<usize>,
        name: &[u8],
        _: usize,
        load: &mut Load,
    ) -> TierResult {
        if let Some(l) = loader {
            if self.objects[l].dynamic.runpath.is_some() {
                if self.objects[l].dynamic.rpath.is_some() {
                    Model::note(
                        load,
                        Tier::Rpath,
                        "RPATH",
                        format!("{} has a RUNPATH: RPATHs are not used", self.display(l)),
                    );
                }
                return TierResult::Continue;
            }
        }
        let program = self.base_program();
        let mut did_program = false;
        let mut chain = loader;
        while let Some(object) = chain {
            if let Some(dirs) = self.own_list(object, Own::Rpath) {
                let rule = Rule::Rpath {
                    of: self.display(object),
                };
                match self.open_own(object, Own::Rpath, &dirs, rule, name, load) {
                    TierResult::Continue => did_program |= object == program,
                    done => return done,
                }
            }
            chain = self.objects[object].loader;
        }
        if !did_program {
            if let Some(dirs) = self.own_list(program, Own::Rpath) {
                let rule = Rule::Rpath {
                    of: self.display(program),
                };
                match self.open_own(program, Own::Rpath, &dirs, rule, name, load) {
                    TierResult::Continue => {}
                    done => return done,
                }
            }
            // For an LD_AUDIT module and its dependencies, the program's RUNPATH too (a
            // fresh copy each time: a list found empty is not given up).
            if self.auditing {
                if let Some(runpath) = self.objects[program].dynamic.runpath.clone() {
                    let dirs = super::paths::decompose(
                        &runpath,
                        b":",
                        &self.origin_of(program),
                        &self.facts,
                        self.config.secure,
                    );
                    let rule = Rule::Runpath {
                        of: self.display(program),
                    };
                    return self.open_path(&dirs, &rule, name, load).into_step(rule);
                }
            }
        }
        TierResult::Continue
    }

    /// 2. LD_LIBRARY_PATH (or `--library-path`).
    fn library_path(
        &mut self,
        _: Option<usize>,
        name: &[u8],
        _: usize,
        load: &mut Load,
    ) -> TierResult {
        let Some((dirs, source)) = self.library_path.clone() else {
            return TierResult::Continue;
        };
        let rule = Rule::LibraryPath { source };
        self.open_path(&dirs, &rule, name, load).into_step(rule)
    }

    /// 3. DT_RUNPATH of the loading object (only its own: not of the objects that loaded it).
    fn runpath(
        &mut self,
        loader: Option<usize>,
        name: &[u8],
        _: usize,
        load: &mut Load,
    ) -> TierResult {
        let Some(l) = loader else {
            return TierResult::Continue;
        };
        let Some(dirs) = self.own_list(l, Own::Runpath) else {
            return TierResult::Continue;
        };
        let rule = Rule::Runpath {
            of: self.display(l),
        };
        self.open_own(l, Own::Runpath, &dirs, rule, name, load)
    }

    /// 4. ld.so.cache: one entry, unless `--inhibit-cache`; an entry in a default directory
    ///    is passed over when the loading object is `-z nodefaultlib`.
    fn cache(
        &mut self,
        loader: Option<usize>,
        name: &[u8],
        _: usize,
        load: &mut Load,
    ) -> TierResult {
        if self.config.inhibit_cache {
            Model::note(
                load,
                Tier::Cache,
                "ld.so.cache",
                "not read: --inhibit-cache",
            );
            return TierResult::Continue;
        }
        if self.preloading && self.config.secure {
            Model::note(
                load,
                Tier::Cache,
                "ld.so.cache",
                "not read for a preloaded object in secure mode",
            );
            return TierResult::Continue;
        }
        let selector_hwcaps = self.facts.glibc_hwcaps.clone();
        let select = Selector {
            flags: self.facts.cache_flags,
            hwcaps: &selector_hwcaps,
            isa_levels: (self.facts.target == model::Target::X86_64)
                .then_some(self.facts.cpu.isa_levels),
            legacy: self.facts.legacy_cache_hwcaps(),
        };
        // The loader opens the cache with O_RDONLY: a FIFO there is where it waits.
        let cache = b"/etc/ld.so.cache";
        if self
            .tree
            .open(cache, b"/")
            .is_ok_and(|o| o.special == Some(Special::Fifo))
        {
            return TierResult::Stops(
                Bytes::from(cache),
                "a FIFO: the loader's open() of its cache waits here for a writer, and the program hangs".into(),
            );
        }
        let lookup = match self.read_cache() {
            Ok(cache) => cache.lookup(name, &select),
            Err(why) => {
                Model::note(load, Tier::Cache, "ld.so.cache", why);
                return TierResult::Continue;
            }
        };
        for (path, why) in lookup.passed {
            load.candidates.push(Candidate {
                rule: Rule::Cache,
                path,
                verdict: CandidateVerdict::CachePassed(why),
            });
        }
        let Some(path) = lookup.path else {
            Model::note(
                load,
                Tier::Cache,
                "ld.so.cache",
                format!("no entry for {}", Bytes::from(name)),
            );
            return TierResult::Continue;
        };
        let asking = loader.or(Some(self.base_program())).or(self.rtld);
        if asking.is_some_and(|l| self.objects[l].dynamic.nodeflib)
            && self.facts.is_system_dir(&path)
        {
            load.candidates.push(Candidate {
                rule: Rule::Cache,
                path,
                verdict: CandidateVerdict::NodeflibCacheEntry,
            });
            return TierResult::Continue;
        }
        let (verdict, opened) = self.try_file(&path);
        let step = match (&verdict, opened) {
            (CandidateVerdict::Taken, Some(opened)) => TierResult::Found {
                path: path.clone(),
                opened,
                rule: Rule::Cache,
            },
            (CandidateVerdict::Fatal(why), _) => TierResult::Failed(format!("{path}: {why}")),
            (CandidateVerdict::Stops(why), _) => TierResult::Stops(path.clone(), why.clone()),
            _ => TierResult::Continue,
        };
        load.candidates.push(Candidate {
            rule: Rule::Cache,
            path,
            verdict,
        });
        step
    }

    /// 5. The default directories, unless the loading object is `-z nodefaultlib`.
    fn default_dirs(
        &mut self,
        loader: Option<usize>,
        name: &[u8],
        ns: usize,
        load: &mut Load,
    ) -> TierResult {
        let asking = loader.or_else(|| self.namespaces[ns].first().copied());
        if let Some(l) = asking.filter(|&l| self.objects[l].dynamic.nodeflib) {
            Model::note(
                load,
                Tier::DefaultDirs,
                "default dirs",
                format!("not searched: {} is -z nodefaultlib", self.display(l)),
            );
            return TierResult::Continue;
        }
        let dirs: Vec<Bytes> = self.facts.system_dirs.iter().map(Bytes::from).collect();
        let rule = Rule::DefaultDir;
        self.open_path(&dirs, &rule, name, load).into_step(rule)
    }

    /// 6. The fallback list (patched loaders only), after everything else, whatever the
    ///    loading object's flags and `--inhibit-cache`.
    fn fallback(&mut self, _: Option<usize>, name: &[u8], _: usize, load: &mut Load) -> TierResult {
        let Some((dirs, source)) = self.fallback.clone() else {
            return TierResult::Continue;
        };
        let rule = Rule::Fallback { source };
        self.open_path(&dirs, &rule, name, load).into_step(rule)
    }

    /// An object's RPATH or RUNPATH list: decomposed on first use (`cache_rpath`).
    fn own_list(&mut self, object: usize, which: Own) -> Option<Vec<Dir>> {
        let state = match which {
            Own::Rpath => &self.objects[object].rpath,
            Own::Runpath => &self.objects[object].runpath,
        };
        match state {
            List::Off => return None,
            List::Dirs(dirs) => return Some(dirs.clone()),
            List::Unread => {}
        }
        let dynamic = &self.objects[object].dynamic;
        let text = match which {
            Own::Rpath => dynamic.rpath.clone(),
            Own::Runpath => dynamic.runpath.clone(),
        };
        let dirs = text
            .filter(|t| !t.is_empty())
            .map(|t| {
                super::paths::decompose(
                    &t,
                    b":",
                    &self.origin_of(object),
                    &self.facts,
                    self.config.secure,
                )
            })
            .filter(|dirs| !dirs.is_empty());
        self.set_list(object, which, dirs.clone().map_or(List::Off, List::Dirs));
        dirs
    }

    fn set_list(&mut self, object: usize, which: Own, list: List) {
        match which {
            Own::Rpath => self.objects[object].rpath = list,
            Own::Runpath => self.objects[object].runpath = list,
        }
    }

    /// `open_path` on an object's own list; a list none of whose directories exists is
    /// given up for good.
    fn open_own(
        &mut self,
        object: usize,
        which: Own,
        dirs: &[Dir],
        rule: Rule,
        name: &[u8],
        load: &mut Load,
    ) -> TierResult {
        let listed = self.open_path(dirs, &rule, name, load);
        if let Listed::Nothing { any: false } = listed {
            self.set_list(object, which, List::Off);
        }
        listed.into_step(rule)
    }

    /// `open_path`: each directory of the list with each subdirectory, skipping those known
    /// to be missing; the first usable file wins, an unusable one that is not merely of
    /// the wrong class or machine fails the load.
    fn open_path(&mut self, dirs: &[Dir], rule: &Rule, name: &[u8], load: &mut Load) -> Listed {
        let subdirs = self.facts.subdirs.clone();
        let cwd = self.config.cwd.clone();
        let mut any = false;
        for dir in dirs {
            let mut here_any = false;
            let mut errno = OpenError::Absent;
            for (cap, subdir) in subdirs.iter().enumerate() {
                let path = dir.join(&[subdir.as_bytes(), name]);
                if self.dirs.status(dir, cap) == Status::Missing {
                    load.candidates.push(Candidate {
                        rule: rule.clone(),
                        path,
                        verdict: CandidateVerdict::DirMissing,
                    });
                    continue;
                }
                let (mut verdict, opened) = self.try_file(&path);
                let usable = matches!(verdict, CandidateVerdict::Taken);
                self.dirs
                    .learn(&self.tree, &cwd, (dir, cap, subdir), usable);
                // A preloaded object in secure mode must be set-user-ID, or it is passed
                // over as if absent (`open_path`).
                if usable && self.preloading && self.config.secure {
                    let setuid = opened.as_ref().is_some_and(|o| o.setuid);
                    if !setuid {
                        verdict = CandidateVerdict::NotSetuid;
                    }
                }
                here_any |= self.dirs.status(dir, cap) != Status::Missing;
                errno = match &verdict {
                    CandidateVerdict::NotADirectory => OpenError::NotDirectory,
                    CandidateVerdict::Unreadable => OpenError::Denied,
                    _ => OpenError::Absent,
                };
                load.candidates.push(Candidate {
                    rule: rule.clone(),
                    path: path.clone(),
                    verdict: verdict.clone(),
                });
                match (verdict, opened) {
                    (CandidateVerdict::Taken, Some(opened)) => return Listed::Found(path, opened),
                    (CandidateVerdict::Fatal(why), _) => {
                        return Listed::Failed(format!("{path}: {why}"))
                    }
                    (CandidateVerdict::Stops(why), _) => return Listed::Stops(path, why),
                    _ => {}
                }
            }
            // Only a missing file (or one of the wrong kind) lets the search go on in this
            // list; 2.36 also stopped at a path component that is not a directory.
            let goes_on = match errno {
                OpenError::Absent | OpenError::Denied => true,
                OpenError::NotDirectory => !self.facts.release.enotdir_ends_a_list(),
                OpenError::Loop => false,
            };
            if here_any && !goes_on {
                Model::note(
                    load,
                    rule.tier(),
                    rule.to_string(),
                    format!("the rest of this list is not searched after {dir}"),
                );
                return Listed::Nothing { any: true };
            }
            any |= here_any;
        }
        Listed::Nothing { any }
    }

    /// `open_verify` on one path: the verdict, and the file when it is usable.
    pub(super) fn try_file(&mut self, path: &[u8]) -> (CandidateVerdict, Option<Opened>) {
        let opened = match self.tree.open(path, &self.config.cwd) {
            Ok(opened) => opened,
            Err(OpenError::Absent) => return (CandidateVerdict::Absent, None),
            Err(OpenError::NotDirectory) => return (CandidateVerdict::NotADirectory, None),
            Err(OpenError::Loop | OpenError::Denied) => {
                return (CandidateVerdict::Unreadable, None)
            }
        };
        if opened.is_dir {
            return (
                CandidateVerdict::Fatal("cannot read file data".into()),
                None,
            );
        }
        match opened.special {
            // `open_verify` opens with O_RDONLY: a FIFO's open waits for a writer.
            Some(Special::Fifo) => return (
                CandidateVerdict::Stops(
                    "a FIFO: the loader's open() waits here for a writer, and the program hangs"
                        .into(),
                ),
                None,
            ),
            // The loader reads a device's first bytes: a terminal waits for input, any
            // other gives bytes that are no ELF header (the load fails). Explain does not
            // open a device: opening one can act.
            Some(kind @ (Special::CharDevice | Special::BlockDevice)) => {
                let what = if kind == Special::CharDevice {
                    "a character device"
                } else {
                    "a block device"
                };
                return (
                    CandidateVerdict::Stops(format!(
                        "{what}: the loader opens it and reads from it, and waits there (a terminal) or fails the load (no ELF header)"
                    )),
                    None,
                );
            }
            Some(Special::Socket) | None => {}
        }
        let head = match self.tree.head(&opened, 64) {
            Ok(head) => head,
            Err(_) => return (CandidateVerdict::Unreadable, None),
        };
        match elf::verify(&head, self.facts.target) {
            Verified::Usable => (CandidateVerdict::Taken, Some(opened)),
            Verified::WrongClass => (CandidateVerdict::WrongClass, None),
            Verified::WrongMachine => (CandidateVerdict::WrongMachine, None),
            Verified::Fatal(why) => (CandidateVerdict::Fatal(why.into()), None),
        }
    }

    /// ld.so.cache of the tree, read once.
    fn read_cache(&mut self) -> Result<&Cache, String> {
        if self.cache.is_none() {
            let parsed = match self.tree.open(b"/etc/ld.so.cache", b"/") {
                Err(_) => Err("no /etc/ld.so.cache".to_string()),
                Ok(opened) => read_cache_file(&opened),
            };
            self.cache = Some(parsed);
        }
        self.cache
            .as_ref()
            .expect("read above")
            .as_ref()
            .map_err(Clone::clone)
    }

    pub(super) fn display(&self, object: usize) -> Bytes {
        self.objects[object].display.clone()
    }
}

/// The cache file, judged by its magic before the rest is read: a file of no cache format
/// costs one short read, whatever its size.
fn read_cache_file(opened: &Opened) -> Result<Cache, String> {
    let read = || -> anyhow::Result<Option<Vec<u8>>> {
        let mut file = model::file::Regular::open(&opened.host, super::fs::LD_SO_CACHE)
            .context("cannot read /etc/ld.so.cache")?;
        let head = file
            .head(Cache::MAGIC_LEN)
            .context("cannot read /etc/ld.so.cache")?;
        if !Cache::has_magic(&head) {
            return Ok(None);
        }
        Ok(Some(
            file.rest(head).context("cannot read /etc/ld.so.cache")?,
        ))
    };
    match read() {
        Err(err) => Err(format!("{err:#}")),
        Ok(None) => {
            Err("/etc/ld.so.cache is not a cache this loader reads (no cache magic)".into())
        }
        Ok(Some(bytes)) => Cache::parse(&bytes)
            .ok_or_else(|| "/etc/ld.so.cache is not a cache this loader reads".into()),
    }
}

impl Listed {
    fn into_step(self, rule: Rule) -> TierResult {
        match self {
            Listed::Found(path, opened) => TierResult::Found { path, opened, rule },
            Listed::Failed(why) => TierResult::Failed(why),
            Listed::Stops(path, why) => TierResult::Stops(path, why),
            Listed::Nothing { .. } => TierResult::Continue,
        }
    }
}
