//! A world: a program, a DAG of libraries with sonames, DT_NEEDED, DT_RUNPATH or DT_RPATH,
//! copies of each library in several directories, the loader's variables and an optional
//! ld.so.cache. [`world`] is its proptest strategy: generated from a seed, shrunk by proptest.

use std::fmt;

use proptest::collection::vec;
use proptest::prelude::*;

/// The most libraries a world has.
const MAX_LIBS: usize = 6;
/// The most DT_NEEDED entries of one object (the templates hold this many placeholders).
pub(crate) const MAX_NEEDED: usize = 4;

/// A directory a copy can be placed in or a list can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    A,
    B,
    C,
    /// `/work`, the working directory of the run.
    Cwd,
    /// `/work/r`, named relative to the working directory.
    WorkR,
    /// `/fz/<what $LIB expands to>`.
    DstLib,
    /// `/fz/<target name>` (what `$PLATFORM` is on a plain machine).
    DstPlatform,
    /// The loader's slibdir (`/lib64` or `/lib`): a default directory.
    Slib,
    /// The loader's libdir (`/usr/lib64` or `/usr/lib`): a default directory.
    Libdir,
    /// `/fz/a/glibc-hwcaps/x86-64-v2`: searched before `/fz/a` on x86_64 CPUs with that level.
    Hwcaps,
}

const DIRS: [Dir; 10] = [
    Dir::A,
    Dir::B,
    Dir::C,
    Dir::Cwd,
    Dir::WorkR,
    Dir::DstLib,
    Dir::DstPlatform,
    Dir::Slib,
    Dir::Libdir,
    Dir::Hwcaps,
];

/// Where the directories of a world are inside its root.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    pub slibdir: String,
    pub libdir: String,
    /// What `$LIB` expands to (the last component of slibdir).
    pub dst_lib: String,
    pub platform: String,
}

impl Places {
    pub(crate) fn dir(&self, dir: Dir) -> String {
        match dir {
            Dir::A => "/fz/a".into(),
            Dir::B => "/fz/b".into(),
            Dir::C => "/fz/c".into(),
            Dir::Cwd => CWD.into(),
            Dir::WorkR => "/work/r".into(),
            Dir::DstLib => format!("/fz/{}", self.dst_lib),
            Dir::DstPlatform => format!("/fz/{}", self.platform),
            Dir::Slib => self.slibdir.clone(),
            Dir::Libdir => self.libdir.clone(),
            Dir::Hwcaps => "/fz/a/glibc-hwcaps/x86-64-v2".into(),
        }
    }
}

/// The working directory of every run.
pub(crate) const CWD: &str = "/work";
/// The program, inside the root.
pub(crate) const PROGRAM: &str = "/fz/bin/prog";

/// One entry of a search list, as written in DT_RUNPATH, DT_RPATH or a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The directory's absolute path.
    Absolute(Dir),
    /// The same path with a doubled slash and a trailing one.
    Untidy(Dir),
    /// `$ORIGIN`.
    Origin,
    /// `$ORIGIN/../a` (or b, c): a sibling of the asker's directory.
    OriginSibling(Dir),
    /// `${ORIGIN}`, braced.
    OriginBraced,
    /// `r`: relative to the working directory.
    Relative,
    /// `../fz/b`: relative, climbing out of the working directory.
    RelativeUp,
    /// `/fz/$LIB`.
    Lib,
    /// `/fz/$PLATFORM`.
    Platform,
    /// An empty entry (the working directory, for the loader).
    Empty,
    /// `/fz/none`: a directory that does not exist.
    Missing,
}

impl Entry {
    pub(crate) fn text(self, places: &Places) -> String {
        match self {
            Entry::Absolute(dir) => places.dir(dir),
            Entry::Untidy(dir) => {
                let path = places.dir(dir);
                format!("/{}/", path.trim_start_matches('/').replacen('/', "//", 1))
            }
            Entry::Origin => "$ORIGIN".into(),
            Entry::OriginSibling(dir) => {
                let path = places.dir(dir);
                let last = path.rsplit('/').next().unwrap_or_default().to_string();
                format!("$ORIGIN/../{last}")
            }
            Entry::OriginBraced => "${ORIGIN}".into(),
            Entry::Relative => "r".into(),
            Entry::RelativeUp => "../fz/b".into(),
            Entry::Lib => "/fz/$LIB".into(),
            Entry::Platform => "/fz/$PLATFORM".into(),
            Entry::Empty => String::new(),
            Entry::Missing => "/fz/none".into(),
        }
    }
}

/// DT_RUNPATH or DT_RPATH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    Runpath,
    Rpath,
}

/// A search list in an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Search {
    pub tag: Tag,
    pub entries: Vec<Entry>,
}

/// The dynamic section of an object, as the world sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Object {
    /// Indices of the libraries it needs (a library needs only later ones: a DAG).
    pub needed: Vec<usize>,
    pub search: Option<Search>,
    /// `-z nodefaultlib`.
    pub nodefaultlib: bool,
}

/// A library: its object, and every directory a copy of it is in (none: not found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Library {
    pub object: Object,
    pub copies: Vec<Dir>,
}

/// A variable's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct List {
    pub entries: Vec<Entry>,
    /// Separated by `;` instead of `:` (the loader takes both in its variables).
    pub semicolons: bool,
    /// Entries no one would write, after the others.
    pub noise: Vec<Noise>,
}

/// An odd entry of a variable's list: what a list can hold rather than what it should.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Noise {
    /// Characters and DST fragments strung together (`$`, `${`, `$ORIGIN/..`, `$FOO`,
    /// control characters, spaces, non-ASCII): every byte but NUL, newline, `:` and `;`, in
    /// UTF-8 (the harness passes variables as text).
    Junk(String),
    /// A path of this many bytes (past PATH_MAX from 4096), in components of 200 bytes.
    Long(usize),
    /// This many distinct directories that do not exist.
    Many(usize),
}

impl Noise {
    fn words(&self) -> Vec<String> {
        match self {
            Noise::Junk(text) => vec![text.clone()],
            Noise::Long(len) => {
                let mut path = String::from("/fz");
                while path.len() < *len {
                    path.push('/');
                    path.push_str(&"n".repeat(200.min(len - path.len()).max(1)));
                }
                vec![path]
            }
            Noise::Many(count) => (0..*count).map(|i| format!("/fz/none/{i}")).collect(),
        }
    }

    fn describe(&self) -> String {
        match self {
            Noise::Junk(text) => format!("{text:?}"),
            Noise::Long(len) => format!("<a {len}-byte path /fz/nnn.../nnn>"),
            Noise::Many(count) => {
                format!("<{count} directories /fz/none/0 .. /fz/none/{}>", count - 1)
            }
        }
    }
}

impl List {
    pub(crate) fn text(&self, places: &Places) -> String {
        let mut words: Vec<String> = self.entries.iter().map(|e| e.text(places)).collect();
        words.extend(self.noise.iter().flat_map(Noise::words));
        words.join(self.separator())
    }

    fn separator(&self) -> &'static str {
        if self.semicolons {
            ";"
        } else {
            ":"
        }
    }

    /// The list as a reproducer prints it (a long or many-entry noise summarised).
    fn describe(&self, places: &Places) -> String {
        let mut words: Vec<String> = self.entries.iter().map(|e| e.text(places)).collect();
        words.extend(self.noise.iter().map(Noise::describe));
        words.join(self.separator())
    }
}

/// A `dlopen` the program makes, as the probe's command line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    /// `try NAME`: `dlopen` of a library from the program; a failure does not stop the probe.
    Dlopen(usize),
    /// `dlmopen NAME`: into a new namespace, from the program; a failure ends the probe.
    Dlmopen(usize),
    /// `shim CALLER NAME`: `dlopen` of the caller by its soname from the program (the loaded
    /// one, found already, or a search), then of the library from inside the caller (with
    /// its RUNPATH, RPATH and `$ORIGIN`); a failure of either ends the probe.
    FromLibrary { caller: usize, library: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct World {
    pub program: Object,
    pub libraries: Vec<Library>,
    pub library_path: Option<List>,
    pub fallback_path: Option<List>,
    /// Libraries named in LD_PRELOAD, by soname.
    pub preload: Vec<usize>,
    /// Directories listed in /etc/ld.so.conf (none: no ld.so.cache).
    pub cached: Vec<Dir>,
    /// `LD_TRACE_LOADED_OBJECTS=1` (what ldd sets): the loader lists the objects instead of
    /// running the program, and a library it does not find does not stop it.
    pub listing: bool,
    /// The program's `dlopen` calls, in order (none: the program exits at once, without
    /// libc; some: the program is the probe, the libraries the shim, both with libc).
    pub calls: Vec<Call>,
    /// Run set-user-ID root as nobody (AT_SECURE): only in worlds with calls, whose probe
    /// says what its calls got (secure mode drops LD_DEBUG).
    pub secure: bool,
}

/// The soname (and file name) of library `i`.
pub(crate) fn soname(i: usize) -> String {
    format!("libfz{i}.so")
}

impl World {
    /// The DT_NEEDED entries of `object` (of library `from`, or of the program): later
    /// libraries only, each once, at most [`MAX_NEEDED`].
    pub(crate) fn needed(&self, object: &Object, from: Option<usize>) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for &n in &object.needed {
            let later = from.is_none_or(|f| n > f);
            if later && n < self.libraries.len() && !out.contains(&n) {
                out.push(n);
            }
        }
        out.truncate(MAX_NEEDED);
        out
    }

    /// The calls whose libraries the world has, as the probe's command words.
    pub(crate) fn probe_words(&self) -> Vec<String> {
        let n = self.libraries.len();
        let mut words = Vec::new();
        for call in &self.calls {
            match *call {
                Call::Dlopen(i) if i < n => words.extend(["try".into(), soname(i)]),
                Call::Dlmopen(i) if i < n => words.extend(["dlmopen".into(), soname(i)]),
                Call::FromLibrary { caller, library } if caller < n && library < n => {
                    words.extend(["shim".into(), soname(caller), soname(library)]);
                }
                _ => {}
            }
        }
        words
    }

    /// Whether a list holds odd entries ([`Noise`]).
    pub(crate) fn noisy(&self) -> bool {
        [&self.library_path, &self.fallback_path]
            .into_iter()
            .flatten()
            .any(|list| !list.noise.is_empty())
    }

    /// Whether the program is the probe: the world makes calls (or runs in secure mode,
    /// where the probe's records are what is compared).
    pub(crate) fn calls(&self) -> bool {
        self.secure || !self.probe_words().is_empty()
    }

    /// The world as a reproducer prints it.
    pub(crate) fn describe(&self, places: &Places) -> String {
        Described(self, places).to_string()
    }
}

struct Described<'a>(&'a World, &'a Places);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Described(world, places) = self;
        let object = |f: &mut fmt::Formatter<'_>, o: &Object, from: Option<usize>| {
            let needed: Vec<String> = world.needed(o, from).into_iter().map(soname).collect();
            write!(f, "NEEDED [{}]", needed.join(" "))?;
            if let Some(search) = &o.search {
                let entries: Vec<String> = search.entries.iter().map(|e| e.text(places)).collect();
                let tag = match search.tag {
                    Tag::Runpath => "RUNPATH",
                    Tag::Rpath => "RPATH",
                };
                write!(f, " {tag} '{}'", entries.join(":"))?;
            }
            if o.nodefaultlib {
                write!(f, " -z nodefaultlib")?;
            }
            Ok(())
        };
        write!(f, "  {PROGRAM}: ")?;
        object(f, &world.program, None)?;
        writeln!(f)?;
        for (i, library) in world.libraries.iter().enumerate() {
            let copies: Vec<String> = library.copies.iter().map(|d| places.dir(*d)).collect();
            write!(f, "  {} in [{}]: ", soname(i), copies.join(" "))?;
            object(f, &library.object, Some(i))?;
            writeln!(f)?;
        }
        if let Some(list) = &world.library_path {
            writeln!(f, "  LD_LIBRARY_PATH='{}'", list.describe(places))?;
        }
        if let Some(list) = &world.fallback_path {
            writeln!(f, "  LD_FALLBACK_PATH='{}'", list.describe(places))?;
        }
        if !world.preload.is_empty() {
            let names: Vec<String> = world.preload.iter().map(|&i| soname(i)).collect();
            writeln!(f, "  LD_PRELOAD='{}'", names.join(":"))?;
        }
        if !world.cached.is_empty() {
            let dirs: Vec<String> = world.cached.iter().map(|d| places.dir(*d)).collect();
            writeln!(
                f,
                "  /etc/ld.so.conf: {} (ld.so.cache by ldconfig)",
                dirs.join(" ")
            )?;
        }
        if world.listing {
            writeln!(f, "  LD_TRACE_LOADED_OBJECTS=1")?;
        }
        if world.secure {
            writeln!(
                f,
                "  secure mode: {PROGRAM} set-user-ID root, run as nobody"
            )?;
        }
        if world.calls() {
            writeln!(
                f,
                "  {PROGRAM} is the probe (c-fixtures/probe.c), the libraries the shim \
                 (c-fixtures/libshim.c): {PROGRAM} {}",
                world.probe_words().join(" ")
            )?;
        }
        Ok(())
    }
}

fn dir() -> impl Strategy<Value = Dir> {
    proptest::sample::select(DIRS.to_vec())
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        4 => dir().prop_map(Entry::Absolute),
        1 => dir().prop_map(Entry::Untidy),
        2 => Just(Entry::Origin),
        2 => proptest::sample::select(vec![Dir::A, Dir::B, Dir::C]).prop_map(Entry::OriginSibling),
        1 => Just(Entry::OriginBraced),
        1 => Just(Entry::Relative),
        1 => Just(Entry::RelativeUp),
        1 => Just(Entry::Lib),
        1 => Just(Entry::Platform),
        1 => Just(Entry::Empty),
        1 => Just(Entry::Missing),
    ]
}

fn search() -> impl Strategy<Value = Option<Search>> {
    proptest::option::weighted(
        0.6,
        (
            prop_oneof![3 => Just(Tag::Runpath), 1 => Just(Tag::Rpath)],
            vec(entry(), 1..4),
        )
            .prop_map(|(tag, entries)| Search { tag, entries }),
    )
}

/// An object needing at least `min_needed` libraries (of `libraries`).
fn object(libraries: usize, min_needed: usize) -> impl Strategy<Value = Object> {
    (
        vec(0..libraries, min_needed..=MAX_NEEDED),
        search(),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(needed, search, nodefaultlib)| Object {
            needed,
            search,
            nodefaultlib,
        })
}

fn junk() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::sample::select(vec![
            "$ORIGIN", "${ORIGIN}", "$LIB", "${LIB}", "$PLATFORM", "${PLATFORM}", "$ORIGIN/..",
            "$", "${", "${}", "}", "$FOO", "${ORIGIN", "//", "..", ".", "/", "/fz/a", "fz",
        ])
        .prop_map(str::to_string),
        3 => proptest::char::range('\u{1}', '\u{7f}')
            // A newline would split the trace's line (which names the path) in two.
            .prop_filter("a list separator or a newline", |c| !matches!(c, ':' | ';' | '\n'))
            .prop_map(String::from),
        1 => proptest::sample::select(vec!['é', '\u{a0}', '\u{fffd}', '\u{1f600}'])
            .prop_map(String::from),
    ];
    vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

fn noise() -> impl Strategy<Value = Noise> {
    prop_oneof![
        4 => junk().prop_map(Noise::Junk),
        1 => (1..6000usize).prop_map(Noise::Long),
        1 => (1..3000usize).prop_map(Noise::Many),
    ]
}

fn list() -> impl Strategy<Value = Option<List>> {
    proptest::option::weighted(
        0.7,
        (
            vec(entry(), 0..6),
            proptest::bool::weighted(0.1),
            proptest::option::weighted(0.15, vec(noise(), 1..=3)),
        )
            .prop_map(|(entries, semicolons, noise)| List {
                entries,
                semicolons,
                noise: noise.unwrap_or_default(),
            }),
    )
}

fn call(libraries: usize) -> impl Strategy<Value = Call> {
    prop_oneof![
        3 => (0..libraries).prop_map(Call::Dlopen),
        1 => (0..libraries).prop_map(Call::Dlmopen),
        3 => (0..libraries, 0..libraries)
            .prop_map(|(caller, library)| Call::FromLibrary { caller, library }),
    ]
}

/// Every world, from one library upwards.
pub(crate) fn world() -> impl Strategy<Value = World> {
    (1..=MAX_LIBS).prop_flat_map(|n| {
        (
            object(n, 1),
            vec(
                (
                    object(n, 0),
                    // Mostly found somewhere; sometimes nowhere.
                    prop_oneof![1 => Just(Vec::new()), 6 => vec(dir(), 1..=4)],
                )
                    .prop_map(|(object, copies)| Library { object, copies }),
                n,
            ),
            list(),
            list(),
            vec(0..n, 0..=1),
            proptest::option::weighted(0.2, vec(dir(), 1..=2)),
            proptest::bool::ANY,
            // A listing runs no program: fewer of those where there are calls.
            proptest::option::weighted(
                0.4,
                (
                    vec(call(n), 1..=3),
                    proptest::bool::weighted(0.2),
                    proptest::bool::weighted(0.3),
                ),
            ),
        )
            .prop_map(
                |(
                    program,
                    libraries,
                    library_path,
                    fallback_path,
                    preload,
                    cached,
                    listing,
                    calls,
                )| {
                    let (calls, listing, secure) = match calls {
                        // A listing prints no records: none in secure mode.
                        Some((calls, listing, secure)) => (calls, listing && !secure, secure),
                        None => (Vec::new(), listing, false),
                    };
                    let mut program = program;
                    if !calls.is_empty() {
                        // The calls are made only by a program that starts: one DT_NEEDED
                        // entry of the world's at most (and libc.so.6).
                        program.needed.truncate(1);
                    }
                    World {
                        program,
                        libraries,
                        library_path,
                        fallback_path,
                        preload,
                        cached: cached.unwrap_or_default(),
                        listing,
                        calls,
                        secure,
                    }
                },
            )
    })
}
