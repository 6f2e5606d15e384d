//! A model of the (patched or stock) glibc loader's library search: which file a program
//! would map for every DT_NEEDED entry and named `dlopen`, with `LD_FALLBACK_PATH` or
//! without, in a given tree, without running anything. `cargo xtask explain` prints it; the
//! `explain` tests hold it against the real loaders in every scenario root of the matrix and
//! the Jetson replay.
//!
//! It follows glibc's `elf/dl-load.c` (`_dl_map_new_object`, `open_path`, `fillin_rpath`,
//! `_dl_dst_substitute`), `elf/dl-deps.c` (the breadth-first walk), `elf/rtld.c` (LD_PRELOAD),
//! `elf/dl-cache.c` (ld.so.cache) and `elf/dl-hwcaps.c` (the subdirectories), per release
//! where they differ ([`platform::GlibcVersion`]); before any search, whether the kernel can
//! start the program with its interpreter at all (`start.rs`). One function per tier
//! ([`tiers`]); every candidate carries the reason it was taken or passed over. Names and
//! paths are bytes ([`Bytes`]), as the loader has them. Not modelled: what LD_AUDIT modules
//! do, `/etc/ld.so.preload`, filters (DT_AUXILIARY, DT_FILTER), `--glibc-hwcaps-prepend`/
//! `-mask`, GLIBC_TUNABLES, and what happens after a file is chosen (symbol versions,
//! relocation, constructors' own effects).

use std::path::PathBuf;

use anyhow::{bail, Result};
use serde::Serialize;

use model::{Flavour, Target};

mod bytes;
pub(crate) mod cache;
pub mod elf;
pub mod fs;
pub(crate) mod hazards;
pub use hazards::SPLIT_DRIVER_CAVEAT;
pub(crate) mod paths;
pub mod platform;
pub mod render;
mod start;
mod tiers;
mod walk;

pub use bytes::Bytes;
pub(crate) use hazards::Hazard;
pub use platform::{Cpu, GlibcVersion, LoaderFacts, SeriesInFile};
pub use start::{loader_kind, loader_soname, LoaderKind};

/// What to explain: a program in a tree, and what the user sets.
#[derive(Debug, Clone)]
pub struct Config {
    /// The tree taken as `/` (`/` for this machine).
    pub root: PathBuf,
    /// The program, as it would be started (absolute, or relative to `cwd`).
    pub program: Bytes,
    /// The working directory inside the tree.
    pub cwd: Bytes,
    /// The release whose loader is modelled.
    pub release: GlibcVersion,
    pub target: Target,
    /// With the LD_FALLBACK_PATH series, the release as is, or the fallback-first variant.
    pub flavour: Flavour,
    /// `LD_LIBRARY_PATH`, or `ld.so --library-path`.
    pub library_path: Option<PathList>,
    /// `LD_FALLBACK_PATH`, or `ld.so --fallback-path`.
    pub fallback_path: Option<PathList>,
    /// `LD_PRELOAD`, or `ld.so --preload`: objects loaded before the program's DT_NEEDED
    /// entries (names separated by spaces or colons).
    pub preload: Option<PathList>,
    /// The `dlopen`s to follow, in the order the program makes them.
    pub dlopens: Vec<Dlopen>,
    /// LD_AUDIT: modules loaded before the program's libraries, each in its own namespace.
    pub audit: Vec<Bytes>,
    /// `ld.so --inhibit-cache`.
    pub inhibit_cache: bool,
    /// AT_SECURE (setuid, setgid, capabilities).
    pub secure: bool,
    /// `LD_TRACE_LOADED_OBJECTS=1` (ldd): a missing library does not stop the walk.
    pub trace: bool,
    /// Started as `ld.so PROGRAM` (then `$ORIGIN` is the directory as given, not resolved).
    pub via_loader: bool,
    /// The loader that runs the program when it is not the file its PT_INTERP names: one
    /// started as `LOADER PROGRAM` (`via_loader`, a wrapper), or the one nix-ld's shim, the
    /// program's interpreter, hands the program to (`NIX_LD`).
    pub loader: Option<RunningLoader>,
    /// Whether the loader that runs carries the series, when that was found out by running
    /// it (`ld.so --help`); `None`: read from its file's strings.
    pub loader_series: Option<SeriesInFile>,
    /// The CPU the program runs on.
    pub cpu: Cpu,
}

/// A loader that runs the program in place of the file its PT_INTERP names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunningLoader {
    /// Its path in the tree.
    pub path: Bytes,
    /// Who names it, as the explanation says it (`--loader`, `NIX_LD`).
    pub source: String,
}

/// A directory list and where it comes from (`LD_LIBRARY_PATH`, `--fallback-path`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathList {
    pub value: Bytes,
    pub source: String,
}

/// A variable the loader reads, as the program gets it, and where its value came from (the
/// environment, an option, a wrapper script): said in the explanation's header. The model
/// reads the lists from [`Config`]; a front end that knows where they came from fills
/// [`Explanation::settings`] in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub name: String,
    pub value: Bytes,
    pub from: String,
}

/// A `dlopen` (or `dlmopen` into a new namespace) the program makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dlopen {
    pub name: Bytes,
    /// The object that calls it (a path, a soname or a file name of a loaded object); `None`
    /// for the program itself.
    pub from: Option<Bytes>,
    /// `dlmopen (LM_ID_NEWLM, ...)`: a namespace of its own.
    pub new_namespace: bool,
}

impl Dlopen {
    /// `NAME` (from the program) or `CALLER:NAME` (from a loaded object).
    pub fn parse(text: &[u8]) -> Dlopen {
        let (from, name) = match text.iter().rposition(|&b| b == b':') {
            Some(at) if at > 0 => (Some(Bytes::from(&text[..at])), &text[at + 1..]),
            _ => (None, text),
        };
        Dlopen {
            name: Bytes::from(name),
            from,
            new_namespace: false,
        }
    }
}

/// Why a library was wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    Needed,
    Dlopen,
    Dlmopen,
    /// An LD_AUDIT module, loaded by the loader itself.
    Audit,
    /// An `LD_PRELOAD` (or `--preload`) object, loaded for the program before its
    /// DT_NEEDED entries; one that cannot be loaded is left out, and the program starts.
    Preload,
}

/// The rule (search tier) a candidate belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "tier", rename_all = "kebab-case")]
pub enum Rule {
    /// DT_RPATH of an object in the loading chain.
    Rpath {
        of: Bytes,
    },
    /// LD_LIBRARY_PATH or `--library-path`.
    LibraryPath {
        source: String,
    },
    /// DT_RUNPATH of the loading object.
    Runpath {
        of: Bytes,
    },
    Cache,
    DefaultDir,
    /// LD_FALLBACK_PATH or `--fallback-path`.
    Fallback {
        source: String,
    },
    /// The name has a slash: opened as it is.
    Path,
}

/// A tier of the search, in the order the loader searches them: what orders a load's
/// candidates and the notes on the tiers it passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Rpath,
    LibraryPath,
    Runpath,
    Cache,
    DefaultDirs,
    Fallback,
    Path,
}

impl Rule {
    /// The tier the rule searches in.
    pub fn tier(&self) -> Tier {
        match self {
            Rule::Rpath { .. } => Tier::Rpath,
            Rule::LibraryPath { .. } => Tier::LibraryPath,
            Rule::Runpath { .. } => Tier::Runpath,
            Rule::Cache => Tier::Cache,
            Rule::DefaultDir => Tier::DefaultDirs,
            Rule::Fallback { .. } => Tier::Fallback,
            Rule::Path => Tier::Path,
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::Rpath { of } => write!(f, "RPATH of {of}"),
            Rule::LibraryPath { source } => f.write_str(source),
            Rule::Runpath { of } => write!(f, "RUNPATH of {of}"),
            Rule::Cache => f.write_str("ld.so.cache"),
            Rule::DefaultDir => f.write_str("default dir"),
            Rule::Fallback { source } => write!(f, "fallback ({source})"),
            Rule::Path => f.write_str("path"),
        }
    }
}

/// What became of one candidate file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "detail", rename_all = "kebab-case")]
pub enum CandidateVerdict {
    /// The loader takes this file.
    Taken,
    Absent,
    /// A component of the path is not a directory.
    NotADirectory,
    /// It cannot be opened (permissions, a symlink loop).
    Unreadable,
    /// ELFCLASS32: passed over.
    WrongClass,
    /// Another architecture: passed over.
    WrongMachine,
    /// Not a loadable ELF file: the load fails here.
    Fatal(String),
    /// Not tried: the loader already knows the directory is missing.
    DirMissing,
    /// An ld.so.cache entry in a default directory, and the loading object is
    /// `-z nodefaultlib`.
    NodeflibCacheEntry,
    /// An ld.so.cache entry of the name that the lookup did not return.
    CachePassed(String),
    /// A secure-mode preload that is not set-user-ID: passed over as if absent.
    NotSetuid,
    /// A FIFO or a device: the loader opens it and waits there (or, for a device, fails
    /// the load); the search goes no further.
    Stops(String),
}

impl CandidateVerdict {
    /// Whether `LD_DEBUG=libs` shows a `trying file=` line for it.
    pub fn is_traced(&self) -> bool {
        !matches!(
            self,
            CandidateVerdict::DirMissing | CandidateVerdict::CachePassed(_)
        )
    }

    pub(crate) fn text(&self) -> String {
        match self {
            CandidateVerdict::Taken => "taken".into(),
            CandidateVerdict::Absent => "absent".into(),
            CandidateVerdict::NotADirectory => "a path component is not a directory".into(),
            CandidateVerdict::Unreadable => "cannot be opened".into(),
            CandidateVerdict::WrongClass => "wrong ELF class, passed over".into(),
            CandidateVerdict::WrongMachine => "wrong machine, passed over".into(),
            CandidateVerdict::Fatal(why) => format!("{why}: the load fails"),
            CandidateVerdict::DirMissing => "directory missing, not tried".into(),
            CandidateVerdict::NodeflibCacheEntry => {
                "in a default dir, and the loader is -z nodefaultlib: passed over".into()
            }
            CandidateVerdict::CachePassed(why) => format!("cache entry passed over: {why}"),
            CandidateVerdict::NotSetuid => {
                "not set-user-ID: passed over (secure mode preloads only such files)".into()
            }
            CandidateVerdict::Stops(why) => format!("{why}: the search stops here"),
        }
    }
}

/// One file the search considered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub rule: Rule,
    pub path: Bytes,
    pub verdict: CandidateVerdict,
}

/// A tier the search passed without a candidate, and why (no cache entry, skipped for
/// `-z nodefaultlib`, unset, unpatched loader...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TierNote {
    /// Where the note goes among the load's candidates.
    #[serde(skip)]
    pub tier: Tier,
    /// The tier as the note names it (`RPATH`, `ld.so.cache`, a list's rule).
    #[serde(rename = "tier")]
    pub label: String,
    pub note: String,
}

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum RequestOutcome {
    /// A file is mapped, found by `rule`.
    Mapped { path: Bytes, rule: Rule },
    /// An object already loaded answers the name: by name (its soname or a name it was
    /// loaded under, without a search), or because the search found its file again.
    AlreadyLoaded { path: Bytes, by: Match },
    /// Nowhere: the program does not start (DT_NEEDED) or `dlopen` fails.
    NotFound,
    /// The search stopped at a file the loader refuses.
    Failed { error: String },
    /// The search stopped at a FIFO or a device: the loader waits there (the program
    /// hangs), or, for a device, fails the load.
    StopsAt { path: Bytes, why: String },
}

/// How a loaded object answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Match {
    Name,
    SameFile,
}

/// One library request: a DT_NEEDED entry or a `dlopen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Load {
    pub namespace: usize,
    pub name: Bytes,
    pub how: How,
    /// The requesting object (the program's path for the program).
    pub requested_by: Bytes,
    pub outcome: RequestOutcome,
    pub candidates: Vec<Candidate>,
    pub notes: Vec<TierNote>,
}

impl Load {
    /// Whether the loader searched (or opened) anything for it: an already-loaded name is
    /// answered without a search and leaves no trace.
    pub fn searched(&self) -> bool {
        !matches!(
            self.outcome,
            RequestOutcome::AlreadyLoaded {
                by: Match::Name,
                ..
            }
        )
    }

    /// The file mapped, if any.
    pub fn mapped(&self) -> Option<&Bytes> {
        match &self.outcome {
            RequestOutcome::Mapped { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// The model's answer for one program.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub program: Bytes,
    pub loader: LoaderFacts,
    /// How the loader modelled comes to run the program, when it is not simply the file its
    /// PT_INTERP names (a loader named by `--loader`, nix-ld's `NIX_LD`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_by: Option<String>,
    /// Why the program cannot start at all, before any library is searched: the kernel
    /// refuses its interpreter, or that interpreter is no glibc loader.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_start: Option<String>,
    /// The loader's variables as the program gets them, and where each came from (empty
    /// unless a front end says).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<Setting>,
    /// The LD_LIBRARY_PATH directories, as the loader decomposed them.
    pub library_path: Vec<Bytes>,
    /// The fallback directories, as the loader decomposed them (empty when unset, ignored
    /// in secure mode, or without the patch).
    pub fallback_path: Vec<Bytes>,
    /// A fallback list that was given and that the loader ignores, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_ignored: Option<Ignored>,
    /// What the model was told or assumed that a reader should know.
    pub notes: Vec<String>,
    /// Requests it was asked to follow and could not (a dlopen from a caller that is not
    /// loaded): what they would load is unknown, so the answer is not whole.
    pub not_followed: Vec<String>,
    /// Every request, in the loader's order.
    pub loads: Vec<Load>,
    /// Whether the program would start: every DT_NEEDED entry found.
    pub starts: bool,
    pub hazards: Vec<Hazard>,
    /// What to change when the loader modelled ignores the fallback and a patched one would
    /// find there what this one does not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub to_change: Vec<String>,
}

/// A directory list the loader ignores as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ignored {
    pub value: Bytes,
    pub source: String,
    pub why: String,
}

impl Explanation {
    /// The requests the loader searched for, in order (what an `LD_DEBUG=libs` trace shows).
    pub fn searches(&self) -> impl Iterator<Item = &Load> {
        self.loads.iter().filter(|l| l.searched())
    }
}

/// A program as read from its tree, once: its file, its bytes, its dynamic section, the
/// interpreter its PT_INTERP names and, when another loader runs it, that loader's file.
/// [`Program::release`], [`Program::target`] and [`explain_program`] all look at this one
/// reading.
#[derive(Clone)]
pub struct Program {
    tree: fs::Tree,
    opened: fs::Opened,
    /// The whole file for an ELF file or a script; its first bytes for anything else.
    bytes: Vec<u8>,
    /// Its dynamic section, or why it is no ELF program.
    dynamic: Result<elf::Dynamic, String>,
    /// A dynamic program's interpreter (PT_INTERP): its path, and its file or why it cannot
    /// be opened.
    interpreter: Option<(Bytes, LoaderFile)>,
    /// The loader that runs it in the interpreter's place ([`Program::run_by`]).
    runs: Option<(Bytes, LoaderFile)>,
}

use start::{LoaderFile, LoaderRead};

/// Why a program could not be read at all.
#[derive(Debug)]
pub enum ReadError {
    /// Its path does not lead to a file in the tree.
    Open(fs::OpenError),
    /// It is there, but the system refused to read it (a directory, no permission).
    Read(std::io::Error),
}

/// What is read of a file before it is judged: an ELF header, the `#!` of a script.
const HEAD: u64 = 64;

/// A script is read whole to follow it (a makeWrapper wrapper is a few hundred bytes).
pub const SCRIPT: model::file::Limit = model::file::Limit {
    bytes: 1 << 20,
    what: "a script",
};

/// The file at `path` (from `cwd`) in `tree` as a loader: opened as the kernel opens an
/// interpreter, its head judged before the rest is read.
fn read_loader(tree: &fs::Tree, path: &[u8], cwd: &[u8]) -> LoaderFile {
    use std::os::unix::fs::PermissionsExt;
    let opened = tree.open(path, cwd).map_err(|err| err.to_string())?;
    if opened.is_dir {
        return Ok(LoaderRead {
            opened,
            bytes: Vec::new(),
            executable: false,
        });
    }
    let executable =
        std::fs::metadata(&opened.host).is_ok_and(|meta| meta.permissions().mode() & 0o111 != 0);
    // The caller names the loader's path with the reason.
    let bytes = read_judged(&opened.host, fs::ELF_OBJECT, |head| {
        head.starts_with(&object::elf::ELFMAG)
    })
    .map_err(|err| format!("cannot read it: {err}"))?;
    Ok(LoaderRead {
        opened,
        bytes,
        executable,
    })
}

/// The file at `host`, a regular file of at most `limit`: its first bytes, and, when
/// `whole` says those are of a format worth reading whole, the rest. The error is std's;
/// the caller names the file.
fn read_judged(
    host: &std::path::Path,
    limit: model::file::Limit,
    whole: impl Fn(&[u8]) -> bool,
) -> std::io::Result<Vec<u8>> {
    let mut file = model::file::Regular::open(host, limit)?;
    let head = file.head(HEAD)?;
    if whole(&head) {
        file.rest(head)
    } else {
        Ok(head)
    }
}

impl Program {
    /// Opens `program` in `root` (from `cwd`) as the kernel would, and reads it and its
    /// interpreter (a relative PT_INTERP, as the kernel opens it, from `cwd`). Each file is
    /// judged from its first bytes before the rest is read: only an ELF file or a script is
    /// read whole.
    pub fn read(root: &std::path::Path, program: &[u8], cwd: &[u8]) -> Result<Program, ReadError> {
        let tree = fs::Tree::new(root);
        let opened = tree.open(program, cwd).map_err(ReadError::Open)?;
        // The error goes back typed; each caller names the program and the tree with it.
        // A script is read whole within its own, smaller limit.
        let is_script = |head: &[u8]| head.starts_with(b"#!");
        let read = read_judged(&opened.host, fs::ELF_OBJECT, |head| {
            head.starts_with(&object::elf::ELFMAG)
        })
        .and_then(|bytes| match is_script(&bytes) {
            true => read_judged(&opened.host, SCRIPT, is_script),
            false => Ok(bytes),
        });
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(err) => return Err(ReadError::Read(err)),
        };
        let dynamic = if bytes.starts_with(&object::elf::ELFMAG) {
            elf::dynamic(&bytes)
        } else if is_script(&bytes) {
            Err("a script (`#!`), not an ELF file".to_string())
        } else {
            Err("not an ELF file".to_string())
        };
        let interpreter = dynamic
            .as_ref()
            .ok()
            .and_then(|d| d.interpreter.clone())
            .map(|interp| {
                let file = read_loader(&tree, &interp, cwd);
                (interp, file)
            });
        Ok(Program {
            tree,
            opened,
            bytes,
            dynamic,
            interpreter,
            runs: None,
        })
    }

    /// The program run by the loader at `path` in its tree (from `cwd`) instead of the file
    /// its PT_INTERP names.
    pub fn run_by(mut self, path: &[u8], cwd: &[u8]) -> Program {
        let file = read_loader(&self.tree, path, cwd);
        self.runs = Some((Bytes::from(path), file));
        self
    }

    /// Whether the program file is set-user-ID or set-group-ID: started by another user (or
    /// group) than its own, it runs in secure mode (AT_SECURE).
    pub fn set_id(&self) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&self.opened.host)
            .is_ok_and(|meta| meta.permissions().mode() & 0o6000 != 0)
    }

    /// The text of a `#!` script, when the program is one.
    pub fn script(&self) -> Option<&[u8]> {
        self.bytes.starts_with(b"#!").then_some(&self.bytes[..])
    }

    /// Its interpreter as PT_INTERP names it.
    pub fn interpreter(&self) -> Option<&Bytes> {
        self.interpreter.as_ref().map(|(path, _)| path)
    }

    /// The loader that would run it: the one [`Program::run_by`] named, else its
    /// interpreter; its path as named and its whole file, when that is an ELF file.
    fn loader(&self) -> Option<(&Bytes, &LoaderRead)> {
        let (path, file) = self.runs.as_ref().or(self.interpreter.as_ref())?;
        let read = file.as_ref().ok()?;
        read.bytes
            .starts_with(&object::elf::ELFMAG)
            .then_some((path, read))
    }

    /// What the loader that would run it is: glibc's, nix-ld's shim, or another file.
    pub fn loader_kind(&self) -> Option<LoaderKind> {
        let target = self.target()?;
        let (_, read) = self.runs.as_ref().or(self.interpreter.as_ref())?;
        Some(match read {
            Ok(read) => loader_kind(&read.bytes, target),
            Err(why) => LoaderKind::Other(why.clone()),
        })
    }

    /// What the program's own file is as a loader (a wrapper may start glibc's loader as
    /// its program).
    pub fn kind_as_loader(&self) -> Option<LoaderKind> {
        Some(loader_kind(&self.bytes, self.target()?))
    }

    /// Where the file of the loader that would run it is on this machine, when it is an ELF
    /// file (to ask it what it is: `ld.so --help`).
    pub fn loader_on_host(&self) -> Option<&std::path::Path> {
        self.loader().map(|(_, read)| read.opened.host.as_path())
    }

    /// The release of the glibc it would run with: its loader's (or, for a static program,
    /// its own libc's) version string; `None` when there is none to read.
    pub fn release(&self) -> Option<GlibcVersion> {
        match (&self.dynamic, self.interpreter.is_some()) {
            (Err(_), _) => None,
            (Ok(_), true) => platform::release_of(&self.loader()?.1.bytes),
            (Ok(_), false) => platform::release_of(&self.bytes),
        }
    }

    /// Whether the glibc it would run with carries the series, read from its loader's file
    /// (or, for a static program, its own); `None` when there is none to read.
    pub fn series(&self) -> Option<SeriesInFile> {
        match (&self.dynamic, self.interpreter.is_some()) {
            (Err(_), _) => None,
            (Ok(_), true) => Some(platform::series_in(&self.loader()?.1.bytes, true)),
            (Ok(_), false) => Some(platform::series_in(&self.bytes, false)),
        }
    }

    /// The target it is built for, from its ELF header.
    pub fn target(&self) -> Option<Target> {
        let head = &self.bytes[..self.bytes.len().min(64)];
        Target::ALL
            .into_iter()
            .find(|t| elf::verify(head, *t) == elf::Verified::Usable)
    }
}

/// The release of the glibc a program would run with in `root`: its loader's (or, for a
/// static program, its own libc's) version string; `None` when there is none to read.
pub fn release_in(root: &std::path::Path, program: &[u8], cwd: &[u8]) -> Option<GlibcVersion> {
    Program::read(root, program, cwd).ok()?.release()
}

/// Explains `config`: reads the program, its loader and the tree, and walks the search.
pub fn explain(config: &Config) -> Result<Explanation> {
    if !config.root.is_dir() {
        bail!("{} is not a directory", config.root.display());
    }
    let mut program =
        Program::read(&config.root, &config.program, &config.cwd).map_err(|err| match err {
            ReadError::Open(err) => anyhow::anyhow!(
                "cannot open the program {} in {}: {err}",
                config.program,
                config.root.display()
            ),
            ReadError::Read(err) => {
                anyhow::anyhow!("cannot read {}: {err}", config.program)
            }
        })?;
    if let Some(loader) = &config.loader {
        program = program.run_by(&loader.path, &config.cwd);
    }
    explain_program(config, program)
}

/// Explains `config` for `program`, read from `config.root` already: walks the search.
pub fn explain_program(config: &Config, program: Program) -> Result<Explanation> {
    // What a patched loader would take, kept for when this one ignores the fallback and
    // misses a library: the answer then says what to change.
    let what_if =
        (!config.flavour.is_patched() && config.fallback_path.is_some() && !config.secure)
            .then(|| program.clone());
    let mut explanation = walked(config, program)?;
    let missing: Vec<&Load> = explanation
        .loads
        .iter()
        .filter(|l| l.outcome == RequestOutcome::NotFound)
        .collect();
    if let (Some(program), false) = (what_if, missing.is_empty()) {
        let patched = Config {
            flavour: Flavour::Patched,
            ..config.clone()
        };
        let other = walked(&patched, program)?;
        let in_fallback: Vec<(Bytes, Bytes)> = missing
            .iter()
            .filter_map(|miss| {
                other.loads.iter().find_map(|l| match &l.outcome {
                    RequestOutcome::Mapped {
                        path,
                        rule: Rule::Fallback { .. },
                    } if l.name == miss.name
                        && l.how == miss.how
                        && l.requested_by == miss.requested_by =>
                    {
                        Some((l.name.clone(), path.clone()))
                    }
                    _ => None,
                })
            })
            .collect();
        if !in_fallback.is_empty() {
            let names: Vec<String> = in_fallback
                .iter()
                .map(|(name, _)| name.to_string())
                .collect();
            let paths: Vec<String> = in_fallback
                .iter()
                .map(|(_, path)| path.to_string())
                .collect();
            let loader = explanation
                .loader
                .path
                .as_ref()
                .map_or_else(|| "its libc".to_string(), Bytes::to_string);
            let list = config
                .fallback_path
                .as_ref()
                .map_or(String::new(), |l| l.value.to_string());
            explanation.to_change.push(format!(
                "{} {} only in the fallback ({}), which {loader} does not search: it is not \
                 patched. Start the program with a patched loader: as `PATCHED/ld.so \
                 --fallback-path {list} {}`, or from a copy whose interpreter is a patched \
                 ld.so (`patchelf --set-interpreter`); README.md, \"How to get it\"",
                names.join(", "),
                if names.len() == 1 { "is" } else { "are" },
                paths.join(", "),
                config.program
            ));
        }
    }
    Ok(explanation)
}

/// One walk of the search for `program`, as `config` says.
fn walked(config: &Config, program: Program) -> Result<Explanation> {
    let Program {
        tree,
        opened,
        bytes,
        dynamic,
        interpreter,
        runs,
    } = program;
    let dynamic =
        dynamic.map_err(|why| anyhow::anyhow!("{} is not a program: {why}", config.program))?;
    match elf::verify(&bytes, config.target) {
        elf::Verified::Usable => {}
        other => bail!(
            "{} is not a {} program ({other:?}): pass --target",
            config.program,
            config.target
        ),
    }
    let head = &bytes[..bytes.len().min(64)];
    let chosen = match start::choose(config, head, &dynamic, interpreter, runs) {
        Ok(chosen) => chosen,
        Err(refused) => return Ok(not_started(config, refused)),
    };
    // A static program carries its own copy of the tables.
    let mut facts = LoaderFacts::new(
        chosen.path.clone(),
        chosen.rtld.as_ref().map_or(&bytes, |rtld| &rtld.file.bytes),
        config.release,
        config.target,
        config.flavour,
        config.cpu.clone(),
    );
    if let Some(judged) = &config.loader_series {
        facts.series = judged.clone();
    }
    let (m, starts) = walk::run(config, tree, facts, dynamic, opened, chosen.rtld);
    // Found in the walk's end state, after the walk: hazards read the model, the walk never
    // reads them.
    let hazards = hazards::find(&m);
    Ok(Explanation {
        program: config.program.clone(),
        started_by: chosen.started_by,
        cannot_start: None,
        settings: Vec::new(),
        library_path: m
            .library_path
            .as_ref()
            .map(|l| l.0.clone())
            .unwrap_or_default(),
        fallback_path: m.fallback.as_ref().map(|l| l.0.clone()).unwrap_or_default(),
        fallback_ignored: m.fallback_ignored,
        to_change: Vec::new(),
        notes: m.notes,
        not_followed: m.not_followed,
        loads: m.loads,
        starts,
        hazards,
        loader: m.facts,
    })
}

/// The explanation of a program that cannot start at all: no search, and why.
fn not_started(config: &Config, refused: start::Refused) -> Explanation {
    let mut loader = LoaderFacts::new(
        refused.path,
        &refused.bytes,
        config.release,
        config.target,
        config.flavour,
        config.cpu.clone(),
    );
    if let Some(judged) = &config.loader_series {
        loader.series = judged.clone();
    }
    Explanation {
        program: config.program.clone(),
        loader,
        started_by: None,
        cannot_start: Some(refused.why),
        settings: Vec::new(),
        library_path: Vec::new(),
        fallback_path: Vec::new(),
        fallback_ignored: None,
        notes: Vec::new(),
        not_followed: Vec::new(),
        loads: Vec::new(),
        starts: false,
        hazards: Vec::new(),
        to_change: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dlopen_names_its_caller_before_a_colon() {
        let from_program = Dlopen::parse(b"libcuda.so.1");
        assert_eq!(from_program.from, None);
        assert_eq!(from_program.name, "libcuda.so.1");
        let from_runtime = Dlopen::parse(b"libcudart.so.12:libcuda.so.1");
        assert_eq!(from_runtime.from.unwrap(), "libcudart.so.12");
        assert_eq!(from_runtime.name, "libcuda.so.1");
        let by_path = Dlopen::parse(b"/nix/store/x-cudart/lib/libcudart.so.12:libcuda.so.1");
        assert_eq!(
            by_path.from.unwrap(),
            "/nix/store/x-cudart/lib/libcudart.so.12"
        );
    }

    /// The program and its loader are read once, by `Program::read`: the walk takes them
    /// from that reading (here both files are gone before it runs), and still maps the
    /// loader and searches the program's DT_NEEDED entry.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_program_is_read_once() {
        let root = tempfile::TempDir::new().unwrap();
        let interp = "/lib64/ld-linux-x86-64.so.2";
        let copy = |from: &str, to: &str| {
            let to = root.path().join(to.trim_start_matches('/'));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(from, &to).unwrap();
            to
        };
        let files = [copy("/bin/true", "/bin/true"), copy(interp, interp)];
        let program = Program::read(root.path(), b"/bin/true", b"/").unwrap();
        assert_eq!(program.target(), Some(Target::X86_64));
        let release = program.release().expect("the loader says its release");
        for file in files {
            std::fs::remove_file(file).unwrap();
        }
        let config = Config {
            root: root.path().to_path_buf(),
            program: "/bin/true".into(),
            cwd: "/".into(),
            release,
            target: Target::X86_64,
            flavour: Flavour::Patched,
            library_path: None,
            fallback_path: None,
            preload: None,
            dlopens: Vec::new(),
            audit: Vec::new(),
            inhibit_cache: false,
            secure: false,
            trace: false,
            via_loader: false,
            loader: None,
            loader_series: None,
            cpu: Cpu::detect(Target::X86_64),
        };
        let x = explain_program(&config, program).unwrap();
        assert_eq!(x.loader.path.as_ref().unwrap(), interp);
        let searched: Vec<(&Bytes, Option<&Bytes>)> =
            x.searches().map(|l| (&l.name, l.mapped())).collect();
        assert_eq!(searched, [(&Bytes::from("libc.so.6"), None)]);
    }

    /// LD_PRELOAD in secure mode, as `rtld.c` (`handle_preload_list`,
    /// `dso_name_valid_for_suid`) and `dl-load.c` (`open_path` under `__RTLD_SECURE`) do it:
    /// a name with a slash is not tried, ld.so.cache is not read, and a file found that is not
    /// set-user-ID is passed over. Outside secure mode the same name is simply loaded first.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_preload_in_secure_mode_takes_only_set_user_id_files() {
        let root = tempfile::TempDir::new().unwrap();
        let interp = "/lib64/ld-linux-x86-64.so.2";
        let copy = |from: &str, to: &str| {
            let to = root.path().join(to.trim_start_matches('/'));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(from, &to).unwrap();
        };
        copy("/bin/true", "/bin/true");
        copy(interp, interp);
        let program = Program::read(root.path(), b"/bin/true", b"/").unwrap();
        let release = program.release().unwrap();
        let facts = LoaderFacts::new(
            Some(interp.into()),
            &std::fs::read(interp).unwrap(),
            release,
            Target::X86_64,
            Flavour::Unpatched,
            Cpu::detect(Target::X86_64),
        );
        let libdir = facts.system_dirs[0].clone();
        copy(&format!("{libdir}libc.so.6"), &format!("{libdir}libpre.so"));
        let config = |secure: bool| Config {
            root: root.path().to_path_buf(),
            program: "/bin/true".into(),
            cwd: "/".into(),
            release,
            target: Target::X86_64,
            flavour: Flavour::Unpatched,
            library_path: None,
            fallback_path: None,
            preload: Some(PathList {
                value: "libpre.so /x/libslash.so".into(),
                source: "LD_PRELOAD".into(),
            }),
            dlopens: Vec::new(),
            audit: Vec::new(),
            inhibit_cache: false,
            secure,
            trace: false,
            via_loader: false,
            loader: None,
            loader_series: None,
            cpu: Cpu::detect(Target::X86_64),
        };
        let preloads = |x: &Explanation| -> Vec<(String, Option<String>)> {
            x.loads
                .iter()
                .filter(|l| l.how == How::Preload)
                .map(|l| (l.name.to_string(), l.mapped().map(Bytes::to_string)))
                .collect()
        };
        let taken = format!("{libdir}libpre.so");
        let x = explain(&config(false)).unwrap();
        assert_eq!(
            preloads(&x),
            [
                ("libpre.so".to_string(), Some(taken.clone())),
                ("/x/libslash.so".to_string(), None)
            ]
        );
        assert_eq!(x.loads[0].how, How::Preload, "preloads come first");
        assert!(x.starts, "a preload not found does not stop the program");
        let x = explain(&config(true)).unwrap();
        assert_eq!(preloads(&x), [("libpre.so".to_string(), None)]);
        let load = x.loads.iter().find(|l| l.how == How::Preload).unwrap();
        let candidate = load.candidates.iter().find(|c| c.path == taken.as_str());
        assert_eq!(candidate.unwrap().verdict, CandidateVerdict::NotSetuid);
        assert!(load.notes.iter().any(|n| n.note.contains("secure mode")));
        assert!(x
            .notes
            .iter()
            .any(|n| n.contains("/x/libslash.so is not preloaded")));
        // Set-user-ID: taken.
        use std::os::unix::fs::PermissionsExt;
        let host = root.path().join(taken.trim_start_matches('/'));
        std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let x = explain(&config(true)).unwrap();
        assert_eq!(preloads(&x), [("libpre.so".to_string(), Some(taken))]);
    }
}
