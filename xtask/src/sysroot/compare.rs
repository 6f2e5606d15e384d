//! Whether two installed glibcs are the same program: the proof that a build derived from
//! another flavour's tree (see `declarations`) installs what a cold build of the same sources
//! installs.
//!
//! Every file is compared byte for byte. An ELF file (or an archive of them, `libc.a`) that
//! differs is compared section by section: when only its debug information differs (and the
//! build id, a hash of the whole file), the two are the same program built in two places
//! (the build directory is in the debug information, and so are the line numbers of the
//! declarations below a header's insertion in the objects that kept the header). Anything
//! else is a real difference.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection};

/// How one file of the first tree compares with the same path in the second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileVerdict {
    Identical,
    /// Only debug information (and the build id) differs; the sections that do.
    DebugInfoOnly(Vec<String>),
    /// A real difference, said in a few words.
    Different(String),
    OnlyInFirst,
    OnlyInSecond,
}

/// Every path of either tree, with its verdict.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub files: BTreeMap<PathBuf, FileVerdict>,
}

impl Comparison {
    /// The trees hold the same programs.
    pub(crate) fn same_programs(&self) -> bool {
        self.files
            .values()
            .all(|v| matches!(v, FileVerdict::Identical | FileVerdict::DebugInfoOnly(_)))
    }

    pub(crate) fn count(&self, pick: impl Fn(&FileVerdict) -> bool) -> usize {
        self.files.values().filter(|v| pick(v)).count()
    }

    /// Counts, then every real difference by name, then the files that differ in debug
    /// information only, with their sections (at most `limit` of them).
    pub(crate) fn render(&self, limit: usize) -> String {
        let mut out = format!(
            "{} files: {} identical, {} differ only in debug information, {} differ",
            self.files.len(),
            self.count(|v| *v == FileVerdict::Identical),
            self.count(|v| matches!(v, FileVerdict::DebugInfoOnly(_))),
            self.count(|v| !matches!(v, FileVerdict::Identical | FileVerdict::DebugInfoOnly(_)))
        );
        for (path, verdict) in &self.files {
            let why = match verdict {
                FileVerdict::Different(why) => why.clone(),
                FileVerdict::OnlyInFirst => "only in the first tree".into(),
                FileVerdict::OnlyInSecond => "only in the second tree".into(),
                _ => continue,
            };
            let _ = write!(out, "\n  DIFFERENT {}: {why}", path.display());
        }
        let debug_only: Vec<_> = self
            .files
            .iter()
            .filter_map(|(path, v)| match v {
                FileVerdict::DebugInfoOnly(sections) => Some((path, sections)),
                _ => None,
            })
            .collect();
        for (path, sections) in debug_only.iter().take(limit) {
            let _ = write!(
                out,
                "\n  debug information only {}: {}",
                path.display(),
                sections.join(" ")
            );
        }
        if debug_only.len() > limit {
            let _ = write!(out, "\n  ... and {} more", debug_only.len() - limit);
        }
        out
    }
}

/// Compares the trees `first` and `second` (symlinks by target, files by content).
pub(crate) fn compare_trees(first: &Path, second: &Path) -> Result<Comparison> {
    compare_trees_built_in(first, second, None)
}

/// Two builds' directories, spelled alike: each path as the other build spelled it.
/// The two must be as long, so that writing one for the other moves no byte of a file.
#[derive(Debug, Clone)]
pub(crate) struct BuiltIn {
    first: Vec<u8>,
    second: Vec<u8>,
}

impl BuiltIn {
    /// `first` and `second`, the directories the two builds ran in; an error when their
    /// paths are not as long.
    pub(crate) fn new(first: &Path, second: &Path) -> Result<BuiltIn> {
        use std::os::unix::ffi::OsStrExt;
        let (first, second) = (first.as_os_str().as_bytes(), second.as_os_str().as_bytes());
        if first.len() != second.len() || first.is_empty() {
            anyhow::bail!(
                "builds compared across directories need paths of one length: {} and {}",
                String::from_utf8_lossy(first),
                String::from_utf8_lossy(second)
            );
        }
        Ok(BuiltIn {
            first: first.to_vec(),
            second: second.to_vec(),
        })
    }

    /// `data` of the first build, with its directory spelled as the second's.
    fn as_second(&self, data: &[u8]) -> Vec<u8> {
        let mut out = data.to_vec();
        let n = self.first.len();
        let mut i = 0;
        while i + n <= out.len() {
            if out[i..i + n] == self.first[..] {
                out[i..i + n].copy_from_slice(&self.second);
                i += n;
            } else {
                i += 1;
            }
        }
        out
    }
}

/// [`compare_trees`] for two builds whose directories are written into what they install
/// (`--enable-hardcoded-path-in-tests` gives the modules glibc installs, the gconv modules
/// and `sotruss-lib.so`, a DT_RPATH into the build tree): with `built_in`, each file of
/// `first` that differs is compared again with its build's directory spelled as `second`'s.
pub(crate) fn compare_trees_built_in(
    first: &Path,
    second: &Path,
    built_in: Option<&BuiltIn>,
) -> Result<Comparison> {
    let (a, b) = (list(first)?, list(second)?);
    let mut comparison = Comparison::default();
    for (path, kind) in &a {
        let verdict = match (kind, b.get(path)) {
            (_, None) => FileVerdict::OnlyInFirst,
            (Kind::Link(x), Some(Kind::Link(y))) if x == y => FileVerdict::Identical,
            (Kind::File, Some(Kind::File)) => {
                compare_files(&first.join(path), &second.join(path), built_in)?
            }
            (x, Some(y)) => FileVerdict::Different(format!("{x:?} against {y:?}")),
        };
        comparison.files.insert(path.clone(), verdict);
    }
    for path in b.keys().filter(|p| !a.contains_key(*p)) {
        comparison
            .files
            .insert(path.clone(), FileVerdict::OnlyInSecond);
    }
    Ok(comparison)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    File,
    Link(PathBuf),
}

/// Every file and symlink below `root`, by relative path.
fn list(root: &Path) -> Result<BTreeMap<PathBuf, Kind>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        let full = root.join(&dir);
        for entry in
            fs::read_dir(&full).with_context(|| format!("cannot read {}", full.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", full.display()))?;
            let path = dir.join(entry.file_name());
            let kind = entry.file_type().context("cannot stat")?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_symlink() {
                let target = fs::read_link(entry.path())
                    .with_context(|| format!("cannot read link {}", entry.path().display()))?;
                found.insert(path, Kind::Link(target));
            } else {
                found.insert(path, Kind::File);
            }
        }
    }
    Ok(found)
}

fn compare_files(a: &Path, b: &Path, built_in: Option<&BuiltIn>) -> Result<FileVerdict> {
    let read = |p: &Path| fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    let (mut x, y) = (read(a)?, read(b)?);
    if x == y {
        return Ok(FileVerdict::Identical);
    }
    if let Some(built_in) = built_in {
        x = built_in.as_second(&x);
    }
    Ok(compare_binaries(&x, &y))
}

/// Two files that differ: archives member by member, ELF files section by section.
pub(crate) fn compare_binaries(x: &[u8], y: &[u8]) -> FileVerdict {
    if let (Ok(ax), Ok(ay)) = (ArchiveFile::parse(x), ArchiveFile::parse(y)) {
        return compare_archives(&ax, x, &ay, y);
    }
    match (object::File::parse(x), object::File::parse(y)) {
        (Ok(ex), Ok(ey)) => compare_elf(&ex, &ey),
        _ => FileVerdict::Different("the contents differ (not ELF)".into()),
    }
}

fn compare_archives(ax: &ArchiveFile, x: &[u8], ay: &ArchiveFile, y: &[u8]) -> FileVerdict {
    let members = |archive: &ArchiveFile, data: &[u8]| -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        archive
            .members()
            .map(|m| {
                let m = m.ok()?;
                Some((m.name().to_vec(), m.data(data).ok()?.to_vec()))
            })
            .collect()
    };
    let (Some(mx), Some(my)) = (members(ax, x), members(ay, y)) else {
        return FileVerdict::Different("an archive member cannot be read".into());
    };
    if mx.len() != my.len() || mx.iter().zip(&my).any(|(a, b)| a.0 != b.0) {
        return FileVerdict::Different("the archives hold other members".into());
    }
    let mut debug = std::collections::BTreeSet::new();
    for ((name, a), (_, b)) in mx.iter().zip(&my) {
        if a == b {
            continue;
        }
        match compare_binaries(a, b) {
            FileVerdict::Identical => {}
            FileVerdict::DebugInfoOnly(sections) => debug.extend(sections),
            FileVerdict::Different(why) => {
                return FileVerdict::Different(format!(
                    "member {}: {why}",
                    String::from_utf8_lossy(name)
                ))
            }
            other => return other,
        }
    }
    FileVerdict::DebugInfoOnly(debug.into_iter().collect())
}

/// Sections that describe the program rather than make it: debug information (with its
/// relocations, in an object file), and the build id, which `ld --build-id` computes over the
/// whole file, debug information included.
fn is_description(name: &str) -> bool {
    let name = name
        .strip_prefix(".rela")
        .or_else(|| name.strip_prefix(".rel"))
        .unwrap_or(name);
    name.starts_with(".debug") || name.starts_with(".zdebug") || name == ".note.gnu.build-id"
}

fn compare_elf(x: &object::File, y: &object::File) -> FileVerdict {
    let sections = |file: &object::File| -> Vec<(String, Vec<u8>)> {
        file.sections()
            .map(|s| {
                let name = s.name().unwrap_or("?").to_string();
                let data = s.data().map(<[u8]>::to_vec).unwrap_or_default();
                (name, data)
            })
            .collect()
    };
    let (sx, sy) = (sections(x), sections(y));
    let names = |s: &[(String, Vec<u8>)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    if names(&sx) != names(&sy) {
        return FileVerdict::Different("other sections".into());
    }
    let mut described = Vec::new();
    for ((name, a), (_, b)) in sx.iter().zip(&sy) {
        if a == b {
            continue;
        }
        if !is_description(name) {
            return FileVerdict::Different(format!("section {name} differs"));
        }
        described.push(name.clone());
    }
    // Same sections, same bytes outside the descriptions: what differs is in the headers
    // (offsets after a debug section grew, say), which the loader does not read.
    FileVerdict::DebugInfoOnly(described)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_are_compared_file_by_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for root in [&a, &b] {
            fs::create_dir_all(root.join("lib")).unwrap();
            fs::write(root.join("lib/same"), "x").unwrap();
            std::os::unix::fs::symlink("same", root.join("lib/link")).unwrap();
        }
        fs::write(a.join("lib/text"), "one").unwrap();
        fs::write(b.join("lib/text"), "two").unwrap();
        fs::write(a.join("lib/only-a"), "").unwrap();
        let c = compare_trees(&a, &b).unwrap();
        assert!(!c.same_programs());
        assert_eq!(c.files[Path::new("lib/same")], FileVerdict::Identical);
        assert_eq!(c.files[Path::new("lib/link")], FileVerdict::Identical);
        assert!(matches!(
            c.files[Path::new("lib/text")],
            FileVerdict::Different(_)
        ));
        assert_eq!(c.files[Path::new("lib/only-a")], FileVerdict::OnlyInFirst);
        let text = c.render(5);
        assert!(
            text.starts_with("4 files: 2 identical, 0 differ only in debug information, 2 differ"),
            "{text}"
        );
    }

    /// A module linked with a DT_RPATH into its build directory, built in two directories of
    /// one length: different as they are, the same program with one spelled as the other.
    #[test]
    fn a_build_directory_in_what_is_installed_is_spelled_as_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let build = |root: &str| -> PathBuf {
            let d = dir.path().join(root);
            fs::create_dir_all(d.join("build")).unwrap();
            fs::write(d.join("build/m.c"), "int value (void) { return 1; }\n").unwrap();
            let sh = crate::util::shell::in_dir(&d.join("build")).unwrap();
            let rpath = format!("-Wl,-rpath,{}", d.join("build").display());
            xshell::cmd!(
                sh,
                "gcc -shared -fPIC -g -O2 -Wl,--disable-new-dtags {rpath} m.c -o m.so"
            )
            .run()
            .expect("gcc links");
            let tree = d.join("installed");
            fs::create_dir_all(&tree).unwrap();
            fs::copy(d.join("build/m.so"), tree.join("m.so")).unwrap();
            tree
        };
        let (one, two) = (build("root-one"), build("root-two"));
        let plain = compare_trees(&one, &two).unwrap();
        assert!(
            matches!(&plain.files[Path::new("m.so")], FileVerdict::Different(why) if why.contains(".dynstr")),
            "{plain:?}"
        );
        let built_in =
            BuiltIn::new(&dir.path().join("root-one"), &dir.path().join("root-two")).unwrap();
        let spelled = compare_trees_built_in(&one, &two, Some(&built_in)).unwrap();
        assert!(spelled.same_programs(), "{}", spelled.render(5));
        assert!(BuiltIn::new(Path::new("/a"), Path::new("/bb")).is_err());
    }

    /// Two builds of one C file in two directories: the same program, other debug info; and
    /// a changed constant: a real difference.
    #[test]
    fn objects_built_in_two_places_differ_in_debug_information_only() {
        let dir = tempfile::tempdir().unwrap();
        let compile = |subdir: &str, value: u32| -> Vec<u8> {
            let d = dir.path().join(subdir);
            fs::create_dir_all(&d).unwrap();
            fs::write(
                d.join("m.c"),
                format!("int value (void) {{ return {value}; }}\n"),
            )
            .unwrap();
            let sh = crate::util::shell::in_dir(&d).unwrap();
            xshell::cmd!(sh, "gcc -g -O2 -c m.c -o m.o")
                .run()
                .expect("gcc compiles");
            fs::read(d.join("m.o")).unwrap()
        };
        let (one, two, other) = (compile("one", 1), compile("two", 1), compile("three", 2));
        assert_ne!(one, two, "the build directory is in the debug information");
        match compare_binaries(&one, &two) {
            FileVerdict::DebugInfoOnly(sections) => {
                assert!(sections.iter().all(|s| is_description(s)), "{sections:?}")
            }
            verdict => panic!("{verdict:?}"),
        }
        assert!(
            matches!(compare_binaries(&one, &other), FileVerdict::Different(why) if why.contains(".text"))
        );
    }
}
