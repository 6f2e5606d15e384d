//! The persistent work directory of a release and target, `<cache>/work/<release>-<target>/`
//! with `src/` and `build/`, shared by every flavour: kept between builds so that a patch
//! edit, or a switch from one flavour to another, recompiles only what differs. A switch
//! rewrites the files that differ between the two flavours' trees; the headers whose change
//! only declares names that nothing else the switch leaves alone mentions keep their mtime
//! (see `declarations`), so that make does not recompile all of glibc for them.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};
use git2::{Oid, Repository};

use super::declarations;
use crate::store::worktree;
use crate::util::lock::{self, FileLock};

/// Debian's orig tarballs (and the store) drop `manual/`, but glibc's top-level Makefile
/// still descends into it; this stub is build support, not part of the patch series.
const MANUAL_STUB: &str = "subdir := manual\n\ninclude ../Rules\n";

/// The one manual page glibc's `elf` tests read: `tst-rtld-list-diagnostics` (2.40+) compares
/// `ld.so --list-diagnostics` with it, and without the file make cannot run that test and
/// stops the whole test run (in 2.44 its second pass, the one that runs the tests). An empty
/// page lets the run go on; the test then fails for want of the real text, so `make check`
/// is told to expect that (`recipe::EXPECTED_TO_FAIL`).
const MANUAL_DYNLINK_STUB: &str =
    "@c Debian's glibc tarballs lack manual/; ld-fallback's build adds this empty page.\n";

/// Written into `build/` after configure succeeded, holding what configure saw; a build dir
/// without it (configure interrupted, or other flags) is configured again from scratch.
const CONFIGURED_MARKER: &str = ".ld-fallback-configured";

/// In the work dir: the git tree `src/` holds, written after an update completed.
const SOURCE_TREE_MARKER: &str = "src.tree";

/// In the work dir: the headers the last switch that kept any kept (one per line), whose
/// includers may still be compiled against the other version (`sysroot
/// --check-kept-headers` compiles a sample of them again).
const KEPT_HEADERS: &str = "kept-headers";

#[derive(Debug, Clone)]
pub(crate) struct WorkDir {
    root: PathBuf,
}

/// What bringing `src/` up to date did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SyncStats {
    pub written: usize,
    pub removed: usize,
    pub unchanged: usize,
    /// Headers rewritten with their old mtime, each with the names its change declares.
    pub kept_headers: Vec<(String, Vec<String>)>,
    /// Headers whose change needs what includes them rebuilt, each with the reason (only
    /// those that looked like declarations; other changes are simply changes).
    pub rebuilt_headers: Vec<(String, String)>,
}

impl WorkDir {
    pub(crate) fn new(root: impl Into<PathBuf>) -> WorkDir {
        WorkDir { root: root.into() }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn src(&self) -> PathBuf {
        self.root.join("src")
    }

    pub(crate) fn build(&self) -> PathBuf {
        self.root.join("build")
    }

    /// Every flavour of the release and target, and every key of each (two edits of a
    /// patch), shares this directory.
    pub(crate) fn lock(&self) -> Result<FileLock> {
        lock::acquire(
            &self.lock_path(),
            &format!("the work directory {}", self.root.display()),
        )
    }

    /// `<root>.lock`: next to the directory, so that removing the directory keeps the lock.
    fn lock_path(&self) -> PathBuf {
        let mut path = self.root.clone().into_os_string();
        path.push(".lock");
        PathBuf::from(path)
    }

    /// Makes `src/` hold `tree` (plus the manual stub), rewriting only files whose content
    /// differs so that make sees unchanged files as up to date. When `src/` is known to hold
    /// an earlier tree, only the git diff between the two is written (milliseconds);
    /// otherwise `export` writes the whole tree aside and it is compared file by file.
    /// The caller holds `lock()`.
    pub(crate) fn update_source(
        &self,
        repo: &Repository,
        tree: Oid,
        export: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<SyncStats> {
        let marker = self.root.join(SOURCE_TREE_MARKER);
        let previous = fs::read_to_string(&marker)
            .ok()
            .and_then(|text| Oid::from_str(text.trim()).ok())
            .filter(|old| self.src().is_dir() && repo.find_tree(*old).is_ok());
        if previous.is_some() {
            // Work dirs made before a stub file was added get it here.
            add_manual_stub(&self.src())?;
        }
        if previous == Some(tree) {
            return Ok(SyncStats::default());
        }
        // Until the marker is rewritten, `src/` is in an unknown state: an interrupted update
        // is finished by a full comparison next time.
        if marker.exists() {
            fs::remove_file(&marker)
                .with_context(|| format!("cannot remove {}", marker.display()))?;
        }
        let kept = self.root.join(KEPT_HEADERS);
        let stats = match previous {
            Some(old) => apply_tree_diff(repo, old, tree, &self.src())?,
            None => {
                // Every file rewritten is newer than every object: nothing stays kept.
                if kept.exists() {
                    fs::remove_file(&kept)
                        .with_context(|| format!("cannot remove {}", kept.display()))?;
                }
                self.full_sync(export)?
            }
        };
        if !stats.kept_headers.is_empty() {
            let list: String = stats
                .kept_headers
                .iter()
                .map(|(header, _)| format!("{header}\n"))
                .collect();
            crate::util::durable::replace_file(&kept, list.as_bytes())?;
        }
        fs::write(&marker, format!("{tree}\n"))
            .with_context(|| format!("cannot write {}", marker.display()))?;
        Ok(stats)
    }

    fn full_sync(&self, export: impl FnOnce(&Path) -> Result<()>) -> Result<SyncStats> {
        let incoming = self.root.join("incoming");
        if incoming.exists() {
            fs::remove_dir_all(&incoming)
                .with_context(|| format!("cannot remove {}", incoming.display()))?;
        }
        fs::create_dir_all(&incoming)
            .with_context(|| format!("cannot create {}", incoming.display()))?;
        export(&incoming)?;
        add_manual_stub(&incoming)?;
        let stats = sync_tree(&incoming, &self.src())?;
        fs::remove_dir_all(&incoming)
            .with_context(|| format!("cannot remove {}", incoming.display()))?;
        Ok(stats)
    }

    /// The headers the last switch that kept any kept (see `KEPT_HEADERS`).
    pub(crate) fn kept_headers(&self) -> Vec<String> {
        fs::read_to_string(self.root.join(KEPT_HEADERS))
            .map(|text| text.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// The tree `src/` holds, when an update completed (none while one is interrupted).
    pub(crate) fn source_tree(&self) -> Option<Oid> {
        let text = fs::read_to_string(self.root.join(SOURCE_TREE_MARKER)).ok()?;
        Oid::from_str(text.trim()).ok()
    }

    /// Whether `build/` was configured, completely, with exactly `fingerprint`.
    pub(crate) fn is_configured(&self, fingerprint: &str) -> bool {
        fs::read_to_string(self.build().join(CONFIGURED_MARKER))
            .is_ok_and(|text| text == fingerprint)
    }

    /// Empties `build/` for a fresh configure.
    pub(crate) fn reset_build(&self) -> Result<()> {
        let build = self.build();
        if build.exists() {
            fs::remove_dir_all(&build)
                .with_context(|| format!("cannot remove {}", build.display()))?;
        }
        fs::create_dir_all(&build).with_context(|| format!("cannot create {}", build.display()))
    }

    pub(crate) fn mark_configured(&self, fingerprint: &str) -> Result<()> {
        let marker = self.build().join(CONFIGURED_MARKER);
        fs::write(&marker, fingerprint)
            .with_context(|| format!("cannot write {}", marker.display()))
    }
}

/// Adds the files of `manual/` that glibc's build and tests need and the release tarballs
/// lack (each only where it is missing: an upstream tree keeps its own).
pub(crate) fn add_manual_stub(tree: &Path) -> Result<()> {
    let manual = tree.join("manual");
    fs::create_dir_all(&manual).with_context(|| format!("cannot create {}", manual.display()))?;
    for (name, text) in [
        ("Makefile", MANUAL_STUB),
        ("dynlink.texi", MANUAL_DYNLINK_STUB),
    ] {
        let path = manual.join(name);
        if !path.exists() {
            fs::write(&path, text)
                .with_context(|| format!("cannot write the stub {}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes into `dest` (holding tree `old`) what differs in tree `new`.
fn apply_tree_diff(repo: &Repository, old: Oid, new: Oid, dest: &Path) -> Result<SyncStats> {
    let stamp = SystemTime::now();
    let (old_id, new_id) = (old, new);
    let (old, new) = (repo.find_tree(old)?, repo.find_tree(new)?);
    let diff = repo
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .context("cannot diff the source trees")?;
    let mut stats = SyncStats::default();
    let kept = kept_headers(repo, &diff, old_id, new_id, dest, &mut stats)?;
    for delta in diff.deltas() {
        let (before, after) = (delta.old_file(), delta.new_file());
        if let Some(path) = before.path().filter(|_| before.exists()) {
            let path = dest.join(path);
            if path.symlink_metadata().is_ok() {
                remove_any(&path)?;
            }
            if !after.exists() {
                stats.removed += 1;
            }
        }
        if let Some(path) = after.path().filter(|_| after.exists()) {
            let path = dest.join(path);
            // A directory that became a file: its files were deleted above, the directory not.
            if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                remove_any(&path)?;
            }
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            let blob = repo
                .find_blob(after.id())
                .with_context(|| format!("blob of {} is missing", path.display()))?;
            worktree::write_file(&path, blob.content(), i32::from(after.mode()))?;
            if after.mode() != git2::FileMode::Link {
                let relative = after.path().map(Path::to_path_buf).unwrap_or_default();
                set_mtime(&path, kept.get(&relative).copied().unwrap_or(stamp))?;
            }
            stats.written += 1;
        }
    }
    Ok(stats)
}

/// The headers of `diff` that keep their mtime in `dest` (see `declarations`), with it: each a
/// modified `.h` file, regular before and after, whose change the rule accepts.
fn kept_headers(
    repo: &Repository,
    diff: &git2::Diff,
    old: Oid,
    new: Oid,
    dest: &Path,
    stats: &mut SyncStats,
) -> Result<std::collections::HashMap<PathBuf, SystemTime>> {
    let text = |id: Oid| -> Option<String> {
        let blob = repo.find_blob(id).ok()?;
        String::from_utf8(blob.content().to_vec()).ok()
    };
    let mut rewritten = std::collections::BTreeSet::new();
    let mut candidates = Vec::new();
    for delta in diff.deltas() {
        let (before, after) = (delta.old_file(), delta.new_file());
        for file in [&before, &after] {
            if let Some(path) = file.path().filter(|_| file.exists()) {
                rewritten.insert(path.to_string_lossy().into_owned());
            }
        }
        let regular = |f: &git2::DiffFile| f.exists() && f.mode() == git2::FileMode::Blob;
        let Some(path) = after
            .path()
            .filter(|p| p.extension().is_some_and(|e| e == "h"))
        else {
            continue;
        };
        if !(regular(&before) && regular(&after) && before.path() == after.path()) {
            continue;
        }
        let (Some(old_text), Some(new_text)) = (text(before.id()), text(after.id())) else {
            continue;
        };
        if declarations::parse(&old_text, &new_text).is_some() {
            candidates.push((path.to_path_buf(), old_text, new_text));
        }
    }
    // Candidates count as not rewritten while they are judged: a name that only another kept
    // header mentions does not make that header's includers rebuild.
    for (path, _, _) in &candidates {
        rewritten.remove(&*path.to_string_lossy());
    }
    let trees = declarations::Trees {
        store: repo.path(),
        old,
        new,
    };
    let mut kept = std::collections::HashMap::new();
    for (path, old_text, new_text) in candidates {
        let header = path.to_string_lossy().into_owned();
        match declarations::keeps_mtime(&trees, &header, &old_text, &new_text, &rewritten)? {
            declarations::HeaderVerdict::Keep(names) => {
                // The mtime make knows the header by; a header missing from `src/` has none.
                let Ok(mtime) = dest.join(&path).metadata().and_then(|m| m.modified()) else {
                    continue;
                };
                kept.insert(path, mtime);
                stats.kept_headers.push((header, names));
            }
            declarations::HeaderVerdict::Rebuild(why) => stats.rebuilt_headers.push((header, why)),
        }
    }
    Ok(kept)
}

/// Makes `to` a copy of `from` by moving over only what differs (content, executable bit,
/// symlink target, kind) and deleting what `from` lacks; unchanged files keep their mtimes.
/// `from` is consumed: its changed files are renamed into `to`.
pub(crate) fn sync_tree(from: &Path, to: &Path) -> Result<SyncStats> {
    let mut stats = SyncStats::default();
    if !to.is_dir() {
        if to.symlink_metadata().is_ok() {
            remove_any(to)?;
        }
        fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    }
    sync_dir(from, to, SystemTime::now(), &mut stats)?;
    Ok(stats)
}

fn sync_dir(from: &Path, to: &Path, stamp: SystemTime, stats: &mut SyncStats) -> Result<()> {
    let mut wanted = std::collections::HashSet::new();
    for item in fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))? {
        let item = item.with_context(|| format!("cannot read {}", from.display()))?;
        let name = item.file_name();
        let (src, dst) = (item.path(), to.join(&name));
        wanted.insert(name);
        let kind = item.file_type().context("cannot stat")?;
        let existing = dst.symlink_metadata().ok();
        if kind.is_dir() {
            if existing.as_ref().is_some_and(|m| !m.is_dir()) {
                remove_any(&dst)?;
            }
            if !dst.is_dir() {
                fs::create_dir(&dst).with_context(|| format!("cannot create {}", dst.display()))?;
            }
            sync_dir(&src, &dst, stamp, stats)?;
        } else if same_entry(&src, &dst, kind.is_symlink())? {
            stats.unchanged += 1;
        } else {
            if existing.is_some() {
                remove_any(&dst)?;
            }
            fs::rename(&src, &dst).with_context(|| format!("cannot write {}", dst.display()))?;
            if !kind.is_symlink() {
                set_mtime(&dst, stamp)?;
            }
            stats.written += 1;
        }
    }
    for item in fs::read_dir(to).with_context(|| format!("cannot read {}", to.display()))? {
        let item = item.with_context(|| format!("cannot read {}", to.display()))?;
        if !wanted.contains(&item.file_name()) {
            remove_any(&item.path())?;
            stats.removed += 1;
        }
    }
    Ok(())
}

/// Every file one update writes gets the same mtime: newer than anything built before, so
/// make rebuilds what depends on it, yet never newer than a generated file shipped next to its
/// source (`charmap-kw.h` and `charmap-kw.gperf`), which write order alone would decide and
/// which would make make run generators (gperf, autoconf) the machine may lack. It also keeps
/// a change visible when the exporter preserves old mtimes (`cp -a`, tar).
fn set_mtime(path: &Path, stamp: SystemTime) -> Result<()> {
    fs::File::open(path)
        .and_then(|f| f.set_modified(stamp))
        .with_context(|| format!("cannot set the mtime of {}", path.display()))
}

fn same_entry(src: &Path, dst: &Path, symlink: bool) -> Result<bool> {
    let Ok(meta) = dst.symlink_metadata() else {
        return Ok(false);
    };
    if symlink {
        let target = |path: &Path| {
            fs::read_link(path).with_context(|| format!("cannot read link {}", path.display()))
        };
        return Ok(meta.file_type().is_symlink() && target(src)? == target(dst)?);
    }
    if !meta.is_file() {
        return Ok(false);
    }
    let src_meta = src
        .metadata()
        .with_context(|| format!("cannot stat {}", src.display()))?;
    if src_meta.len() != meta.len()
        || src_meta.permissions().mode() & 0o111 != meta.permissions().mode() & 0o111
    {
        return Ok(false);
    }
    let read = |p: &Path| fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    Ok(read(src)? == read(dst)?)
}

fn remove_any(path: &Path) -> Result<()> {
    let is_dir = path.symlink_metadata().is_ok_and(|m| m.is_dir());
    let result = if is_dir {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    result.with_context(|| format!("cannot remove {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn mtime(path: &Path) -> SystemTime {
        path.metadata().unwrap().modified().unwrap()
    }

    fn age(path: &Path) {
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    fn tree_of(repo: &Repository, files: &[(&str, &str, git2::FileMode)]) -> Oid {
        let empty = repo.treebuilder(None).unwrap().write().unwrap();
        let empty = repo.find_tree(empty).unwrap();
        let mut update = git2::build::TreeUpdateBuilder::new();
        for (path, text, mode) in files {
            update.upsert(*path, repo.blob(text.as_bytes()).unwrap(), *mode);
        }
        update.create_updated(repo, &empty).unwrap()
    }

    const FILE: git2::FileMode = git2::FileMode::Blob;
    const EXEC: git2::FileMode = git2::FileMode::BlobExecutable;

    /// A bare store and a work directory, in a fresh temp dir (the first, kept alive).
    fn store_and_work_dir() -> (tempfile::TempDir, Repository, WorkDir) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path().join("store.git")).unwrap();
        let work = WorkDir::new(dir.path().join("w"));
        (dir, repo, work)
    }

    /// `work`'s source made `tree` by a full export (a first sync).
    fn export_whole(work: &WorkDir, repo: &Repository, tree: Oid) -> SyncStats {
        work.update_source(repo, tree, |dest| worktree::write_tree(repo, tree, dest))
            .unwrap()
    }

    fn no_export(_: &Path) -> Result<()> {
        panic!("a known previous tree must be updated from the diff, not a full export")
    }

    #[test]
    fn patch_edit_rewrites_only_the_changed_files() {
        let (_dir, repo, work) = store_and_work_dir();
        let first = tree_of(
            &repo,
            &[
                ("COPYING", "gpl", FILE),
                ("configure", "#!/bin/sh", FILE),
                ("elf/dl-load.c", "v1", FILE),
                ("elf/rtld.c", "same", FILE),
                ("gone/gone.c", "x", FILE),
            ],
        );
        let stats = export_whole(&work, &repo, first);
        assert_eq!(stats.written, 7, "{stats:?}"); // 5 files and the manual stub's 2
        let src = work.src();
        for name in [
            "elf/dl-load.c",
            "elf/rtld.c",
            "configure",
            "manual/Makefile",
        ] {
            age(&src.join(name));
        }
        let before = mtime(&src.join("elf/rtld.c"));

        let second = tree_of(
            &repo,
            &[
                ("COPYING", "gpl", FILE),
                ("configure", "#!/bin/sh", EXEC),
                ("elf/dl-load.c", "v2", FILE),
                ("elf/rtld.c", "same", FILE),
                ("elf/new.c", "n", FILE),
            ],
        );
        let stats = work.update_source(&repo, second, no_export).unwrap();
        assert_eq!((stats.written, stats.removed), (3, 1), "{stats:?}");
        assert_eq!(mtime(&src.join("elf/rtld.c")), before);
        assert_eq!(mtime(&src.join("manual/Makefile")), before);
        assert!(mtime(&src.join("elf/dl-load.c")) > before);
        assert_eq!(fs::read_to_string(src.join("elf/dl-load.c")).unwrap(), "v2");
        assert_eq!(fs::read_to_string(src.join("elf/new.c")).unwrap(), "n");
        assert!(
            src.join("configure")
                .metadata()
                .unwrap()
                .permissions()
                .mode()
                & 0o100
                != 0
        );
        assert!(!src.join("gone/gone.c").exists());

        // Nothing changed: nothing is touched.
        let stats = work.update_source(&repo, second, no_export).unwrap();
        assert_eq!(stats, SyncStats::default());
        assert!(!work.root().join("incoming").exists());
    }

    /// Switching flavours: the series' declaration-only header change keeps the header's
    /// mtime (make leaves its includers alone), the files that use the new name are newer,
    /// and a macro change (unsecvars.h's) is a change like any other.
    #[test]
    fn a_declaration_only_header_keeps_its_mtime_across_a_switch() {
        let (_dir, repo, work) = store_and_work_dir();
        let header = "include/link.h";
        let decl = "extern struct r_search_path_struct __rtld_env_path_list attribute_hidden;\n";
        let added =
            "extern struct r_search_path_struct __rtld_fallback_path_list attribute_hidden;\n";
        let unpatched = tree_of(
            &repo,
            &[
                (header, decl, FILE),
                (
                    "sysdeps/generic/unsecvars.h",
                    "#define UNSECURE_ENVVARS \"LD_AUDIT\\0\"\n",
                    FILE,
                ),
                (
                    "elf/dl-load.c",
                    "struct r_search_path_struct __rtld_env_path_list;\n",
                    FILE,
                ),
                ("elf/dl-misc.c", "int attribute_hidden;\n", FILE),
            ],
        );
        let patched = tree_of(
            &repo,
            &[
                (header, &format!("{decl}{added}"), FILE),
                (
                    "sysdeps/generic/unsecvars.h",
                    "#define UNSECURE_ENVVARS \"LD_AUDIT\\0\" \"LD_FALLBACK_PATH\\0\"\n",
                    FILE,
                ),
                (
                    "elf/dl-load.c",
                    "struct r_search_path_struct __rtld_env_path_list, __rtld_fallback_path_list;\n",
                    FILE,
                ),
                ("elf/dl-misc.c", "int attribute_hidden;\n", FILE),
            ],
        );
        export_whole(&work, &repo, unpatched);
        let src = work.src();
        for name in [header, "sysdeps/generic/unsecvars.h", "elf/dl-load.c"] {
            age(&src.join(name));
        }
        let before = mtime(&src.join(header));

        let stats = work.update_source(&repo, patched, no_export).unwrap();
        assert_eq!(
            stats.kept_headers,
            [(
                header.to_string(),
                vec!["__rtld_fallback_path_list".to_string()]
            )]
        );
        assert_eq!(
            fs::read_to_string(src.join(header)).unwrap(),
            format!("{decl}{added}")
        );
        assert_eq!(mtime(&src.join(header)), before, "kept");
        assert!(mtime(&src.join("elf/dl-load.c")) > before);
        assert!(mtime(&src.join("sysdeps/generic/unsecvars.h")) > before);

        // And back: the deletion is kept too.
        let stats = work.update_source(&repo, unpatched, no_export).unwrap();
        assert_eq!(stats.kept_headers.len(), 1, "{stats:?}");
        assert_eq!(mtime(&src.join(header)), before);
        assert_eq!(fs::read_to_string(src.join(header)).unwrap(), decl);
    }

    #[test]
    fn files_written_together_share_one_mtime() {
        let (_dir, repo, work) = store_and_work_dir();
        let files: Vec<(String, String)> = (0..200)
            .map(|i| (format!("locale/programs/f{i:03}.h"), format!("{i}")))
            .collect();
        let entries = |suffix: &str| -> Vec<(String, String)> {
            files
                .iter()
                .map(|(p, t)| (p.clone(), format!("{t}{suffix}")))
                .collect()
        };
        let tree = |entries: &[(String, String)]| {
            let refs: Vec<(&str, &str, git2::FileMode)> = entries
                .iter()
                .map(|(p, t)| (p.as_str(), t.as_str(), FILE))
                .collect();
            tree_of(&repo, &refs)
        };
        let (first, second) = (tree(&entries("")), tree(&entries("+")));
        let mtimes = |work: &WorkDir| -> std::collections::HashSet<SystemTime> {
            files
                .iter()
                .map(|(p, _)| mtime(&work.src().join(p)))
                .collect()
        };
        export_whole(&work, &repo, first);
        assert_eq!(mtimes(&work).len(), 1, "full sync");
        work.update_source(&repo, second, no_export).unwrap();
        assert_eq!(mtimes(&work).len(), 1, "diff update");
    }

    #[test]
    fn interrupted_update_is_finished_by_a_full_comparison() {
        let (_dir, repo, work) = store_and_work_dir();
        let first = tree_of(&repo, &[("a.c", "1", FILE), ("b.c", "1", FILE)]);
        let second = tree_of(&repo, &[("a.c", "2", FILE), ("b.c", "2", FILE)]);
        let repo = &repo;
        let export = |tree| move |dest: &Path| worktree::write_tree(repo, tree, dest);
        work.update_source(repo, first, export(first)).unwrap();
        // Killed halfway through the update to `second`: a.c written, b.c not, marker gone.
        fs::write(work.src().join("a.c"), "2").unwrap();
        fs::remove_file(work.root().join(SOURCE_TREE_MARKER)).unwrap();
        age(&work.src().join("a.c"));
        let before = mtime(&work.src().join("a.c"));

        let stats = work.update_source(repo, second, export(second)).unwrap();
        assert_eq!((stats.written, stats.removed), (1, 0), "{stats:?}");
        assert_eq!(mtime(&work.src().join("a.c")), before);
        assert_eq!(fs::read_to_string(work.src().join("b.c")).unwrap(), "2");
        assert_eq!(
            fs::read_to_string(work.src().join("manual/Makefile")).unwrap(),
            MANUAL_STUB
        );
    }

    #[test]
    fn changed_file_is_newer_even_if_exported_with_an_old_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        write(&to.join("dl-load.c"), "patched");
        write(&from.join("dl-load.c"), "pristine");
        age(&to.join("dl-load.c"));
        age(&from.join("dl-load.c"));
        let before = mtime(&to.join("dl-load.c"));
        sync_tree(&from, &to).unwrap();
        assert!(mtime(&to.join("dl-load.c")) > before);
    }

    #[test]
    fn executable_bit_change_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        write(&to.join("configure"), "#!/bin/sh\n");
        write(&from.join("configure"), "#!/bin/sh\n");
        fs::set_permissions(from.join("configure"), fs::Permissions::from_mode(0o755)).unwrap();
        let stats = sync_tree(&from, &to).unwrap();
        assert_eq!(stats.written, 1);
        assert!(
            to.join("configure")
                .metadata()
                .unwrap()
                .permissions()
                .mode()
                & 0o100
                != 0
        );
    }

    #[test]
    fn every_flavour_has_its_own_lock() {
        let paths: std::collections::HashSet<PathBuf> = [
            "2.44-x86_64-patched",
            "2.44-x86_64-unpatched",
            "2.44-aarch64-patched",
            "2.43-x86_64-patched",
        ]
        .into_iter()
        .map(|name| WorkDir::new(Path::new("/cache/work").join(name)).lock_path())
        .collect();
        assert_eq!(paths.len(), 4, "{paths:?}");
        assert!(paths.contains(Path::new("/cache/work/2.44-x86_64-patched.lock")));
    }

    #[test]
    fn configure_marker_must_match() {
        let dir = tempfile::tempdir().unwrap();
        let work = WorkDir::new(dir.path());
        work.reset_build().unwrap();
        assert!(!work.is_configured("flags a"));
        work.mark_configured("flags a").unwrap();
        assert!(work.is_configured("flags a"));
        assert!(!work.is_configured("flags b"));
        work.reset_build().unwrap();
        assert!(!work.is_configured("flags a"));
    }
}
