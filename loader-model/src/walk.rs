//! The walk: the program and the loader as the first objects, the DT_NEEDED graph breadth
//! first as `_dl_map_object_deps` walks it, then each `dlopen` from its caller; every name is
//! first looked up among the loaded objects of its namespace (`_dl_lookup_map`), then
//! searched ([`super::tiers`]), and a file already loaded under another name is reused.

use std::collections::HashSet;

use anyhow::Result;

use super::cache::Cache;
use super::elf::{self, Dynamic};
use super::fs::{Opened, Tree, ELF_OBJECT};
use super::paths::{self, lexical_dir, Dir, DirMemory, Origin};
use super::start::Rtld;
use super::{
    Bytes, Candidate, Config, Dlopen, How, Load, LoaderFacts, Match, RequestOutcome, Rule, Tier,
    TierNote,
};

/// A directory list of an object (`l_rpath_dirs`, `l_runpath_dirs`): not decomposed yet,
/// decomposed, or given up (none, empty, or none of its directories exists).
#[derive(Debug, Clone)]
pub(super) enum List {
    Unread,
    Dirs(Vec<Dir>),
    Off,
}

/// A loaded object (`struct link_map`), as far as the search needs it.
#[derive(Debug, Clone)]
pub(super) struct Object {
    pub ns: usize,
    /// `l_name`: the path it was found at ("" for the program).
    pub realname: Bytes,
    /// How reports name it: its path, or the program as it was started.
    pub display: Bytes,
    /// `l_libname`: the names it was asked for under.
    pub names: Vec<Bytes>,
    pub file_id: Option<(u64, u64)>,
    pub dynamic: Dynamic,
    /// `l_origin`.
    pub origin: Option<Bytes>,
    /// `l_loader`: the object whose DT_NEEDED loaded it (none for the program and `dlopen`s).
    pub loader: Option<usize>,
    pub rpath: List,
    pub runpath: List,
    /// A stand-in for a library `ldd` did not find (`l_faked`): never matched by name.
    pub faked: bool,
    /// Unloaded again after a failed `dlopen`.
    pub removed: bool,
    pub is_program: bool,
}

/// Where a search got to after one tier.
pub(super) enum TierResult {
    Found {
        path: Bytes,
        opened: Opened,
        rule: Rule,
    },
    Failed(String),
    /// At a FIFO or a device, where the loader waits (or fails the load).
    Stops(Bytes, String),
    Continue,
}

/// The state of the modelled loader.
pub(super) struct Model<'c> {
    pub config: &'c Config,
    pub tree: Tree,
    pub facts: LoaderFacts,
    pub objects: Vec<Object>,
    /// The objects of each namespace, in load order.
    pub namespaces: Vec<Vec<usize>>,
    /// The loader itself, for a dynamic program.
    pub rtld: Option<usize>,
    pub dirs: DirMemory,
    /// The LD_LIBRARY_PATH list and its source, when active.
    pub library_path: Option<(Vec<Dir>, String)>,
    /// The fallback list and its source, when active.
    pub fallback: Option<(Vec<Dir>, String)>,
    /// The fallback list given, when the loader ignores it.
    pub fallback_ignored: Option<super::Ignored>,
    /// ld.so.cache, read on first use.
    pub cache: Option<Result<Cache, String>>,
    pub loads: Vec<Load>,
    pub notes: Vec<String>,
    /// Requests asked for that the walk could not follow (see `Explanation::not_followed`).
    pub not_followed: Vec<String>,
    /// Loading an LD_AUDIT module and its dependencies (`__RTLD_AUDIT`): the program's
    /// RUNPATH is tried too.
    pub auditing: bool,
    /// Loading an LD_PRELOAD object (`__RTLD_SECURE`): in secure mode, no ld.so.cache, and
    /// only a set-user-ID file is taken.
    pub preloading: bool,
    /// The loader waits at a FIFO (or a device): nothing after that happens.
    pub hung: bool,
}

/// Why a walk stopped: the load that failed is the last one recorded.
pub(super) struct Stopped;

/// Walks the program's loads; says whether the program starts (every DT_NEEDED found).
pub(super) fn run<'c>(
    config: &'c Config,
    tree: Tree,
    facts: LoaderFacts,
    dynamic: Dynamic,
    opened: Opened,
    rtld: Option<Rtld>,
) -> (Model<'c>, bool) {
    let mut m = Model {
        config,
        tree,
        dirs: DirMemory::new(facts.subdirs.len()),
        facts,
        objects: Vec::new(),
        namespaces: vec![Vec::new()],
        rtld: None,
        library_path: None,
        fallback: None,
        fallback_ignored: None,
        cache: None,
        loads: Vec::new(),
        notes: Vec::new(),
        not_followed: Vec::new(),
        auditing: false,
        preloading: false,
        hung: false,
    };
    m.add_program(dynamic, &opened);
    m.add_loader(rtld);
    let refused = m.init_lists();
    let mut starts = refused.is_none();
    if let Some(why) = refused {
        m.notes.push(why);
    } else if m.rtld.is_some() {
        m.load_audit_modules();
        let preloaded = m.load_preloads();
        // A preload that waits at a FIFO leaves the loader waiting: nothing more is loaded.
        starts = !m.hung && m.map_deps(&[&[0][..], &preloaded].concat(), 0).is_ok();
    }
    if starts && !config.trace {
        for dlopen in &config.dlopens {
            if m.hung {
                m.notes.push(
                    "the dlopens after the one that waits at a FIFO or a device were not followed"
                        .into(),
                );
                break;
            }
            m.dlopen(dlopen);
        }
    } else if !config.dlopens.is_empty() {
        m.notes.push(if config.trace {
            "the dlopens were not followed: a listing does not run the program".into()
        } else {
            "the dlopens were not followed: the program does not start".into()
        });
    }
    (m, starts)
}

impl Model<'_> {
    /// The program: kernel-loaded (its `$ORIGIN` from `/proc/self/exe`, symlinks resolved)
    /// or, under `ld.so PROGRAM`, opened by the loader (`$ORIGIN` as given).
    fn add_program(&mut self, dynamic: Dynamic, opened: &Opened) {
        let c = self.config;
        let origin = if c.via_loader {
            lexical_dir(&absolute(&c.program, &c.cwd))
        } else {
            self.tree
                .canonical(&c.program, &c.cwd)
                .and_then(|real| lexical_dir(&real))
        };
        let runpath_set = dynamic.runpath.is_some();
        self.map(Object {
            ns: 0,
            realname: Bytes::new(),
            display: c.program.clone(),
            names: vec![if c.via_loader {
                c.program.clone()
            } else {
                Bytes::new()
            }],
            file_id: c.via_loader.then_some(opened.id),
            dynamic,
            origin,
            loader: None,
            rpath: if runpath_set { List::Off } else { List::Unread },
            runpath: List::Unread,
            faked: false,
            removed: false,
            is_program: true,
        });
    }

    /// The loader's own map: named by the program's PT_INTERP and its soname (`rtld` says
    /// which file it is, and under which names).
    fn add_loader(&mut self, rtld: Option<Rtld>) {
        let Some(Rtld {
            realname,
            mut names,
            file,
        }) = rtld
        else {
            return;
        };
        let dynamic = elf::dynamic(&file.bytes).unwrap_or_default();
        names.extend(dynamic.soname.clone());
        let id = self.map(Object {
            ns: 0,
            realname: realname.clone(),
            display: realname.clone(),
            names,
            file_id: Some(file.opened.id),
            dynamic,
            origin: lexical_dir(&realname),
            loader: None,
            rpath: List::Off,
            runpath: List::Off,
            faked: false,
            removed: false,
            is_program: false,
        });
        self.rtld = Some(id);
    }

    /// `_dl_init_paths` and `_dl_init_fallback_paths`; `Some(why)` when the loader refuses
    /// to start at all.
    fn init_lists(&mut self) -> Option<String> {
        let c = self.config;
        let origin = self.origin_of(0);
        if let Some(list) = &c.library_path {
            if c.secure {
                self.notes.push(format!(
                    "{} is ignored: the program runs in secure mode",
                    list.source
                ));
            } else if !list.value.is_empty() {
                let dirs = paths::decompose(&list.value, b":;", &origin, &self.facts, false);
                if !dirs.is_empty() {
                    self.library_path = Some((dirs, list.source.clone()));
                }
            }
        }
        let Some(list) = &c.fallback_path else {
            return None;
        };
        if !self.facts.flavour.is_patched() {
            if list.source.starts_with("--") {
                return Some(format!(
                    "ld.so: unrecognized option '{}': the unpatched loader does not know it",
                    list.source
                ));
            }
            self.fallback_ignored = Some(super::Ignored {
                value: list.value.clone(),
                source: list.source.clone(),
                why: "the loader is not patched, it does not know the variable".into(),
            });
            return None;
        }
        if c.secure {
            self.fallback_ignored = Some(super::Ignored {
                value: list.value.clone(),
                source: list.source.clone(),
                why: "the program runs in secure mode (it is removed from the environment too)"
                    .into(),
            });
            return None;
        }
        // Unlike LD_LIBRARY_PATH, only absolute directories: an empty or relative entry is
        // dropped, never the current directory or one below it.
        let (dirs, relative) = paths::decompose_fallback(&list.value, &origin, &self.facts);
        for dir in relative {
            let end = dir.iter().rposition(|&b| b != b'/').map_or(0, |at| at + 1);
            self.notes.push(format!(
                "{}: the relative directory \"{}\" is ignored: only absolute directories are searched",
                list.source,
                Bytes::from(&dir[..end])
            ));
        }
        if dirs.is_empty() {
            self.notes.push(format!(
                "{} has no usable entry: no fallback search",
                list.source
            ));
        } else {
            self.fallback = Some((dirs, list.source.clone()));
        }
        None
    }

    pub(super) fn origin_of(&self, id: usize) -> Origin {
        Origin {
            dir: self.objects[id].origin.clone(),
            is_program: self.objects[id].is_program,
        }
    }

    /// `_dl_map_object_deps`: the DT_NEEDED entries of `roots` (an object, or the program
    /// and its preloaded objects, in that order) and, breadth first, of every object that
    /// brings in. Objects loaded before (by an earlier walk) are not walked again: all their
    /// names are loaded, so the loader only looks them up.
    fn map_deps(&mut self, roots: &[usize], ns: usize) -> Result<(), Stopped> {
        let root = roots[0];
        let mut queue = roots.to_vec();
        let mut queued: HashSet<usize> = roots.iter().copied().collect();
        let mut next = 0;
        while next < queue.len() {
            let object = queue[next];
            next += 1;
            if self.objects[object].faked || object < root {
                continue;
            }
            for needed in self.objects[object].dynamic.needed.clone() {
                let Some(name) = self.expand_needed(object, &needed) else {
                    self.notes.push(format!(
                        "{}: DT_NEEDED {needed} expands to nothing and is skipped",
                        self.objects[object].display
                    ));
                    continue;
                };
                let dep = self.map_object(Some(object), &name, How::Needed, ns, false)?;
                if queued.insert(dep) {
                    queue.push(dep);
                }
            }
        }
        Ok(())
    }

    /// A DT_NEEDED entry with its dynamic string tokens expanded against its object.
    fn expand_needed(&self, object: usize, needed: &[u8]) -> Option<Bytes> {
        if !needed.contains(&b'$') {
            return Some(Bytes::from(needed));
        }
        let name = paths::expand(
            needed,
            &self.origin_of(object),
            &self.facts,
            self.config.secure,
        )?;
        (!name.is_empty()).then_some(name)
    }

    /// LD_AUDIT: each module `dlmopen`ed by the loader into a namespace of its own, before
    /// the program's libraries; a module that fails to load is left out, as the loader
    /// does (with a message).
    fn load_audit_modules(&mut self) {
        let Some(rtld) = self.rtld else {
            return;
        };
        if self.config.secure && !self.config.audit.is_empty() {
            self.notes
                .push("LD_AUDIT modules are not followed in secure mode".into());
            return;
        }
        for module in self.config.audit.clone() {
            self.namespaces.push(Vec::new());
            let ns = self.namespaces.len() - 1;
            self.auditing = true;
            let objects_before = self.objects.len();
            let result = self
                .map_object(Some(rtld), &module, How::Audit, ns, true)
                .and_then(|object| self.map_deps(&[object], ns));
            self.auditing = false;
            if result.is_err() {
                self.namespaces[ns].clear();
                for object in &mut self.objects[objects_before..] {
                    object.removed = true;
                }
            }
        }
    }

    /// LD_PRELOAD (`handle_preload_list`): each name, split at spaces and colons, mapped for
    /// the program before its DT_NEEDED entries; one that fails is left out (the loader
    /// says so and goes on). In secure mode a name with a slash is not even tried. The
    /// objects mapped, in order.
    fn load_preloads(&mut self) -> Vec<usize> {
        let Some(list) = self.config.preload.clone() else {
            return Vec::new();
        };
        let mut preloaded = Vec::new();
        for name in list.value.split(|b| b" :".contains(b)) {
            if name.is_empty() {
                continue;
            }
            if self.config.secure && name.contains(&b'/') {
                self.notes.push(format!(
                    "{}: {} is not preloaded: in secure mode a name with a slash is ignored",
                    list.source,
                    Bytes::from(name)
                ));
                continue;
            }
            let before = self.objects.len();
            self.preloading = true;
            let mapped = self.map_object(Some(0), name, How::Preload, 0, false);
            self.preloading = false;
            if let Ok(object) = mapped {
                if object >= before {
                    preloaded.push(object);
                }
            }
        }
        preloaded
    }

    /// One `dlopen`: the name from its caller, then the new object's dependencies; on a
    /// failure everything it loaded is unloaded again.
    fn dlopen(&mut self, request: &Dlopen) {
        let Some(caller) = self.find_caller(request.from.as_ref()) else {
            let from = request.from.clone().unwrap_or_default();
            self.not_followed.push(format!(
                "dlopen {} from {from}: {from} is not loaded (name a loaded library by path, soname or file name)",
                request.name
            ));
            return;
        };
        let (ns, how) = if request.new_namespace {
            self.namespaces.push(Vec::new());
            (self.namespaces.len() - 1, How::Dlmopen)
        } else {
            (self.objects[caller].ns, How::Dlopen)
        };
        let objects_before = self.objects.len();
        let lengths: Vec<usize> = self.namespaces.iter().map(Vec::len).collect();
        let name = if request.name.contains(&b'$') && request.name.contains(&b'/') {
            paths::expand(
                &request.name,
                &self.origin_of(caller),
                &self.facts,
                self.config.secure,
            )
            .unwrap_or_default()
        } else {
            request.name.clone()
        };
        let result = self
            .map_object(Some(caller), &name, how, ns, true)
            .and_then(|object| {
                if object >= objects_before {
                    self.map_deps(&[object], ns)
                } else {
                    Ok(())
                }
            });
        if result.is_err() {
            for (list, length) in self.namespaces.iter_mut().zip(lengths) {
                list.truncate(length);
            }
            for object in &mut self.objects[objects_before..] {
                object.removed = true;
            }
        }
    }

    /// The loaded object a `dlopen` comes from: the program, or one named by path, soname or
    /// file name.
    fn find_caller(&self, from: Option<&Bytes>) -> Option<usize> {
        let Some(from) = from else {
            return Some(0);
        };
        let live = || {
            self.namespaces
                .iter()
                .flatten()
                .copied()
                .filter(|&o| !self.objects[o].faked && !self.objects[o].removed)
        };
        let by = |test: &dyn Fn(&Object) -> bool| live().find(|&o| test(&self.objects[o]));
        by(&|o| o.realname == *from || o.display == *from)
            .or_else(|| by(&|o| o.dynamic.soname.as_ref() == Some(from)))
            .or_else(|| by(&|o| o.names.iter().any(|n| n == from)))
            .or_else(|| by(&|o| o.realname.rsplit(|&b| b == b'/').next() == Some(&from[..])))
    }

    /// `_dl_map_object`: a loaded object of that name, or a search (or, for a name with a
    /// slash, an open) and a new object. `callmap`: a `dlopen`, whose object has no
    /// `l_loader` (its caller only lends its RUNPATH and RPATH to the search).
    fn map_object(
        &mut self,
        loader: Option<usize>,
        name: &[u8],
        how: How,
        ns: usize,
        callmap: bool,
    ) -> Result<usize, Stopped> {
        let requested_by = loader.map_or_else(
            || self.config.program.clone(),
            |l| self.objects[l].display.clone(),
        );
        let mut load = Load {
            namespace: ns,
            name: Bytes::from(name),
            how,
            requested_by,
            outcome: RequestOutcome::NotFound,
            candidates: Vec::new(),
            notes: Vec::new(),
        };
        if let Some(object) = self.lookup(ns, name) {
            load.outcome = RequestOutcome::AlreadyLoaded {
                path: self.objects[object].display.clone(),
                by: Match::Name,
            };
            self.loads.push(load);
            return Ok(object);
        }
        let step = if name.contains(&b'/') {
            self.open_named(name, &mut load)
        } else {
            self.search(loader, name, ns, &mut load)
        };
        let result = match step {
            TierResult::Found { path, opened, rule } => match self.same_file(ns, opened.id) {
                Some(object) => {
                    self.objects[object].names.push(Bytes::from(name));
                    load.outcome = RequestOutcome::AlreadyLoaded {
                        path: self.objects[object].display.clone(),
                        by: Match::SameFile,
                    };
                    Ok(object)
                }
                None => {
                    let l_loader = if callmap { None } else { loader };
                    match self.new_object(&path, name, &opened, l_loader, ns) {
                        Ok(object) => {
                            load.outcome = RequestOutcome::Mapped { path, rule };
                            Ok(object)
                        }
                        Err(error) => {
                            load.outcome = RequestOutcome::Failed { error };
                            Err(Stopped)
                        }
                    }
                }
            },
            TierResult::Failed(error) => {
                load.outcome = RequestOutcome::Failed { error };
                Err(Stopped)
            }
            TierResult::Stops(path, why) => {
                load.outcome = RequestOutcome::StopsAt { path, why };
                self.hung = true;
                Err(Stopped)
            }
            TierResult::Continue if self.config.trace => {
                // ldd goes on with a stand-in that no later lookup matches.
                Ok(self.map(Object {
                    ns,
                    realname: Bytes::from(name),
                    display: Bytes::from(name),
                    names: vec![Bytes::from(name)],
                    file_id: None,
                    dynamic: Dynamic::default(),
                    origin: None,
                    loader,
                    rpath: List::Off,
                    runpath: List::Off,
                    faked: true,
                    removed: false,
                    is_program: false,
                }))
            }
            TierResult::Continue => Err(Stopped),
        };
        self.loads.push(load);
        result
    }

    /// `_dl_lookup_map`: an object of namespace `ns` known by `name` (its path, a name it
    /// was loaded under, or its soname).
    fn lookup(&self, ns: usize, name: &[u8]) -> Option<usize> {
        self.namespaces[ns].iter().copied().find(|&o| {
            let object = &self.objects[o];
            !object.faked
                && !object.removed
                && (object.realname.as_bytes() == name
                    || object.names.iter().any(|n| n.as_bytes() == name)
                    || object.dynamic.soname.as_deref() == Some(name))
        })
    }

    /// An object of `ns` mapped from the same file (same device and inode).
    fn same_file(&self, ns: usize, id: (u64, u64)) -> Option<usize> {
        self.namespaces[ns].iter().copied().find(|&o| {
            !self.objects[o].faked
                && !self.objects[o].removed
                && self.objects[o].file_id == Some(id)
        })
    }

    /// A name with a slash: opened as it is (`open_verify`), no search.
    fn open_named(&mut self, name: &[u8], load: &mut Load) -> TierResult {
        let (verdict, opened) = self.try_file(name);
        let step = match (&verdict, opened) {
            (super::CandidateVerdict::Taken, Some(opened)) => TierResult::Found {
                path: Bytes::from(name),
                opened,
                rule: Rule::Path,
            },
            (super::CandidateVerdict::Fatal(why), _) => {
                TierResult::Failed(format!("{}: {why}", Bytes::from(name)))
            }
            (super::CandidateVerdict::Stops(why), _) => {
                TierResult::Stops(Bytes::from(name), why.clone())
            }
            _ => TierResult::Continue,
        };
        load.candidates.push(Candidate {
            rule: Rule::Path,
            path: Bytes::from(name),
            verdict,
        });
        step
    }

    /// A new object for the file found at `path`.
    fn new_object(
        &mut self,
        path: &Bytes,
        name: &[u8],
        opened: &Opened,
        loader: Option<usize>,
        ns: usize,
    ) -> Result<usize, String> {
        let bytes = self
            .tree
            .read(opened, ELF_OBJECT)
            .map_err(|e| format!("{path}: cannot read: {e}"))?;
        let dynamic = elf::dynamic(&bytes).map_err(|e| format!("{path}: {e}"))?;
        let runpath_set = dynamic.runpath.is_some();
        Ok(self.map(Object {
            ns,
            realname: path.clone(),
            display: path.clone(),
            names: vec![Bytes::from(name)],
            file_id: Some(opened.id),
            dynamic,
            origin: lexical_dir(&absolute(path, &self.config.cwd)),
            loader,
            // With a RUNPATH, the RPATH of the same object is ignored.
            rpath: if runpath_set { List::Off } else { List::Unread },
            runpath: List::Unread,
            faked: false,
            removed: false,
            is_program: false,
        }))
    }

    /// Maps `object` into its namespace, after the objects there: its index.
    fn map(&mut self, object: Object) -> usize {
        let index = self.objects.len();
        self.namespaces[object.ns].push(index);
        self.objects.push(object);
        index
    }

    /// A note on a tier the search passed without trying a file.
    pub(super) fn note(
        load: &mut Load,
        tier: Tier,
        label: impl Into<String>,
        note: impl Into<String>,
    ) {
        load.notes.push(TierNote {
            tier,
            label: label.into(),
            note: note.into(),
        });
    }

    /// The program of the base namespace (`GL(dl_ns)[LM_ID_BASE]._ns_loaded`).
    pub(super) fn base_program(&self) -> usize {
        0
    }
}

/// `path` made absolute against `cwd`.
fn absolute(path: &[u8], cwd: &[u8]) -> Bytes {
    if path.starts_with(b"/") {
        return Bytes::from(path);
    }
    let end = cwd.iter().rposition(|&b| b != b'/').map_or(0, |at| at + 1);
    Bytes::from([&cwd[..end], b"/", path].concat())
}
