//! Real glibc releases: imports from Debian (downloaded when not cached) reproduce the
//! pinned trees and the same commit ids as everywhere else, an interrupted import leaves no
//! half store, a series on elf/dl-load.c rebases from 2.41 to 2.42, and the committed
//! recorded resolutions take every release's rebase through unattended.
//!
//! These tests use the real cache (`$LD_FALLBACK_CACHE`, else `~/.cache/ld-fallback`) for
//! downloads and the shared store: imports are verified against the pinned tree ids and
//! deterministic, so sharing them is safe, and it lets CI cache one download and one import
//! per release instead of redoing them on every run. Rebase state and patches go to temp dirs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use model::Release;
use tempfile::TempDir;
use xtask::bench::rebase::synthetic_series;
use xtask::rebase::{self, RebaseOutcome};
use xtask::series::Series;
use xtask::series::Workspace;
use xtask::store::import::{debian, Source};
use xtask::store::SourceStore;

/// The environment a command without options runs in: the user's store and cache.
fn env() -> xtask::cli::Env {
    xtask::cli::Global::default().resolve().unwrap()
}

/// The commit ids of the deterministic imports: the same on every machine.
const COMMIT_2_41: &str = "8591ed12590ee499c798e1c0ba1aa4037ec65c65";
const COMMIT_2_42: &str = "dcff25644f092abaad71089897de8dcafe01c886";

#[test]
fn a_series_on_dl_load_c_rebases_from_2_41_to_2_42() {
    let store = SourceStore::open(&env().store).unwrap();
    let (r41, r42) = (
        Release::parse("2.41").unwrap(),
        Release::parse("2.42").unwrap(),
    );
    let base = store.ensure_release(r41).unwrap();
    assert_eq!(base.to_string(), COMMIT_2_41);
    assert_eq!(store.ensure_release(r42).unwrap().to_string(), COMMIT_2_42);

    let tmp = TempDir::new().unwrap();
    let ws = Workspace {
        store: SourceStore::open(store.dir()).unwrap(),
        patches_dir: tmp.path().join("patches"),
        rebase_dir: tmp.path().join("rebase"),
    };
    std::fs::create_dir_all(&ws.patches_dir).unwrap();
    std::fs::write(ws.patches_dir.join("scope"), "elf/**\n").unwrap();
    synthetic_series(ws.store.repo(), r41, base)
        .unwrap()
        .write(&ws.series_dir(r41))
        .unwrap();
    let summary = crate::common::written(rebase::start(&ws, Some(r41), r42).unwrap());
    assert!(
        summary.contains("0001-elf-Mark-where-LD_FALLBACK_PATH-is-searched.patch"),
        "{summary}"
    );
    let check = rebase::check(&ws).unwrap();
    assert!(
        crate::common::passes_but_for_absent_series(&check),
        "{}",
        check.render()
    );

    let series = Series::load(&ws.series_dir(r42)).unwrap();
    assert_eq!(series.base_tree.to_string(), r42.pinned_tree());
    let src = tmp.path().join("src");
    series.export(&ws.store, &src).unwrap();
    let dl_load = std::fs::read_to_string(src.join("elf/dl-load.c")).unwrap();
    assert!(dl_load.contains("/* Finally, try the default path.  */\n      /* LD_FALLBACK_PATH is searched after this.  */\n"));
    use std::os::unix::fs::PermissionsExt;
    assert_ne!(
        src.join("configure")
            .metadata()
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0,
        "modes survive the export"
    );
}

#[test]
fn an_interrupted_import_leaves_no_half_store() {
    let r41 = Release::parse("2.41").unwrap();
    let downloads = xtask::util::paths::downloads_dir().unwrap();
    let tarball = debian::fetch_release_orig(r41, &downloads).unwrap();
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path().join("glibc.git");
    for delay in [50, 500, 2000, 5000] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["store", "import", "2.41", "--store"])
            .arg(&dir)
            .arg(format!("--from=tarball:{}", tarball.display()))
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill();
        child.wait().unwrap();
        assert_whole_or_absent(&dir, r41);
    }
    let store = SourceStore::open(&dir).unwrap();
    let commit = store.import(r41, &Source::Tarball(tarball)).unwrap();
    assert_eq!(commit.to_string(), COMMIT_2_41);
    assert_whole_or_absent(&dir, r41);
}

/// Either no store, or a store whose release is absent or complete down to every blob.
fn assert_whole_or_absent(dir: &Path, release: Release) {
    if !dir.exists() {
        return;
    }
    let store = SourceStore::open(dir).expect("a store that exists must open");
    let Some(commit) = store.release_commit(release).unwrap() else {
        return;
    };
    let repo = store.repo();
    let tree = repo.find_commit(commit).unwrap().tree().unwrap();
    assert_eq!(tree.id().to_string(), release.pinned_tree());
    let mut missing = 0;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        if !repo.odb().unwrap().exists(entry.id()) {
            missing += 1;
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    assert_eq!(missing, 0, "a tagged release must be complete");
}

/// The rule that places the NEWS entry (merge::news) reproduces the NEWS of every committed
/// series from its release's NEWS: no release needs a human for NEWS.
#[test]
fn the_news_entry_lands_where_every_committed_series_has_it() {
    use xtask::merge::news;
    let ws = Workspace::open(&env()).unwrap();
    let newest = ws.newest_series().unwrap();
    let (_, commits) = ws.commit_series(&newest).unwrap();
    let repo = ws.store.repo();
    let news_of = |commit: git2::Oid| -> String {
        let tree = repo.find_commit(commit).unwrap().tree().unwrap();
        let blob = repo
            .find_blob(tree.get_path(Path::new(news::PATH)).unwrap().id())
            .unwrap();
        String::from_utf8(blob.content().to_vec()).unwrap()
    };
    // The patch that adds the entry (the feature's; the support and refactoring patches
    // before it leave NEWS alone).
    let entry = commits
        .iter()
        .find_map(|&commit| {
            let parent = repo.find_commit(commit).unwrap().parent_id(0).unwrap();
            news::entry_added(&news_of(parent), &news_of(commit)).unwrap()
        })
        .expect("a patch of the series adds the NEWS entry");
    for release in ws.releases_with_series() {
        let series = ws.load_series(release).unwrap();
        let (base, commits) = ws.commit_series(&series).unwrap();
        let placed = news::place(&news_of(base), &entry).unwrap();
        assert_eq!(
            placed,
            news_of(*commits.last().unwrap()),
            "glibc {release}: the placed entry differs from the committed series' NEWS"
        );
    }
}

/// The committed records of `patches/resolutions/` are current: moving each release's series
/// source (the `from` of its records) onto the release again needs nobody (every conflict and
/// fix-up is replayed from its record) and writes the committed series and records byte for
/// byte. A change of the series that moves the text a record was made for (0002's elf/Makefile,
/// say) fails here until the records are made again (README, "Recorded resolutions").
#[test]
fn the_recorded_resolutions_take_every_release_through_unattended() {
    use xtask::rebase::records::Resolutions;
    let (project, ws, _tmp) = project_copy();
    let mut replayed = 0;
    for onto in project.releases_with_series() {
        let records = project.patches_dir.join("resolutions").join(onto.version());
        if !records.is_dir() {
            continue;
        }
        let set = Resolutions::load_dir(&records).unwrap();
        let from = set.list.first().map(|r| r.from).unwrap();
        assert!(
            set.list.iter().all(|r| r.from == from),
            "glibc {onto}: records made from more than one series"
        );
        for release in [from, onto] {
            project.store.ensure_release(release).unwrap();
        }
        let summary = match rebase::start(&ws, Some(from), onto).unwrap() {
            RebaseOutcome::Written(written) => written.render(),
            RebaseOutcome::Stopped(stop) => panic!(
                "glibc {from} -> {onto} stopped although patches/resolutions/{onto} is committed (stale records? make them again):\n{}",
                stop.render()
            ),
        };
        assert_eq!(
            summary.matches("resolved from record: ").count(),
            set.list.len(),
            "glibc {from} -> {onto}: every record is replayed\n{summary}"
        );
        replayed += set.list.len();
        for dir in [onto.version().to_string(), format!("resolutions/{onto}")] {
            assert_eq!(
                files_of(&ws.patches_dir.join(&dir)),
                files_of(&project.patches_dir.join(&dir)),
                "glibc {from} -> {onto}: patches/{dir} differs from the committed one"
            );
        }
    }
    assert!(replayed > 0, "no recorded resolution was checked");
}

/// A variant (patches/variants/) rides on its release's series: `--check` says whether it
/// still applies on top, so that a change of the series that breaks it (the final series of
/// a stale variant once did) fails there, not first in the build of the variant's flavour.
#[test]
fn rebase_check_says_whether_each_variant_applies_on_its_series() {
    use xtask::rebase::series_check::SeriesVerdict;
    let (_, ws, _tmp) = project_copy();
    let variant_verdicts = |ws: &Workspace| -> Vec<SeriesVerdict> {
        let report = rebase::check(ws).unwrap();
        report
            .findings
            .into_iter()
            .map(|f| f.verdict)
            .filter(|v| {
                matches!(
                    v,
                    SeriesVerdict::VariantApplies { .. } | SeriesVerdict::VariantDefect { .. }
                )
            })
            .collect()
    };
    let committed = variant_verdicts(&ws);
    assert!(!committed.is_empty(), "no variant was checked");
    assert!(
        committed
            .iter()
            .all(|v| matches!(v, SeriesVerdict::VariantApplies { .. })),
        "{committed:?}"
    );

    // The variant as it was made against an older series: its dl-load.c blob is
    // not the one the series leaves.
    let dir = ws.patches_dir.join("variants/fallback-first/2.44");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&file).unwrap();
    let at = text.find("\nindex ").expect("the variant changes a file") + "\nindex ".len();
    let stale = format!("{}c6463f2995a0{}", &text[..at], &text[at + 12..]);
    std::fs::write(&file, stale).unwrap();
    let report = rebase::check(&ws).unwrap();
    assert!(!report.ok(), "{}", report.render());
    let rendered = report.render();
    assert!(
        rendered.contains("the fallback-first variant does not apply on top of patches/2.44")
            && rendered.contains("but the patch was made against c6463f2995a0"),
        "{rendered}"
    );
}

/// The project's workspace, and one on the same store with a copy of its patches/ in a temp
/// dir (kept as long as the returned TempDir), for tests that change or rewrite the series.
fn project_copy() -> (Workspace, Workspace, TempDir) {
    let project = Workspace::open(&env()).unwrap();
    let tmp = TempDir::new().unwrap();
    let ws = Workspace {
        store: SourceStore::open(project.store.dir()).unwrap(),
        patches_dir: tmp.path().join("patches"),
        rebase_dir: tmp.path().join("rebase"),
    };
    copy_dir(&project.patches_dir, &ws.patches_dir);
    (project, ws, tmp)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Every file below `dir` (names relative to it) with its content, in name order.
fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// glibc's `make check` runs `lint-makefiles` (scripts/sort-makefile-lines.py over every
/// Makefile) on the releases that have it, and a failure there stops 2.44's `make check`
/// before it runs any test. Every Makefile a series changes must pass the
/// release's own script; 2.36 has none.
#[test]
fn every_makefile_a_series_changes_passes_the_release_s_lint() {
    let ws = Workspace::open(&env()).unwrap();
    let repo = ws.store.repo();
    let tmp = TempDir::new().unwrap();
    let mut linted = 0;
    for release in ws.releases_with_series() {
        let series = ws.load_series(release).unwrap();
        let (_, commits) = ws.commit_series(&series).unwrap();
        let tree = repo
            .find_commit(*commits.last().unwrap())
            .unwrap()
            .tree()
            .unwrap();
        let file = |path: &str| -> Option<Vec<u8>> {
            let entry = tree.get_path(Path::new(path)).ok()?;
            Some(repo.find_blob(entry.id()).unwrap().content().to_vec())
        };
        let Some(script) = file("scripts/sort-makefile-lines.py") else {
            continue;
        };
        let script_path = tmp.path().join(format!("sort-makefile-lines-{release}.py"));
        std::fs::write(&script_path, script).unwrap();
        let changed: std::collections::BTreeSet<&str> = series
            .patches
            .iter()
            .flat_map(|p| p.text.lines())
            .filter_map(|l| l.strip_prefix("+++ b/"))
            .filter(|path| path.ends_with("Makefile"))
            .collect();
        assert!(
            !changed.is_empty(),
            "glibc {release}: the series changes no Makefile"
        );
        for makefile in changed {
            let text = file(makefile).unwrap();
            let input = tmp.path().join("Makefile");
            std::fs::write(&input, &text).unwrap();
            let sorted = crate::common::stdout_of(
                Command::new("python3")
                    .arg(&script_path)
                    .stdin(std::fs::File::open(&input).unwrap()),
            );
            if sorted != text {
                let want = String::from_utf8_lossy(&sorted);
                let have = String::from_utf8_lossy(&text);
                let diff = similar::TextDiff::from_lines(&*want, &*have);
                panic!(
                    "glibc {release}: {makefile} fails glibc's lint-makefiles (sort-makefile-lines.py):\n{}",
                    diff.unified_diff().context_radius(2).header("expected", "series")
                );
            }
            linted += 1;
        }
    }
    assert!(linted >= 5, "only {linted} Makefiles linted");
}
