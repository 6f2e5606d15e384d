//! `rebase-glibc` on synthetic releases: clean moves, changed context, patches already
//! upstream, conflicts with --continue and --abort, drift caught by --check, and the NEWS
//! entry placed by rule.

use std::path::Path;

use crate::common::*;
use git2::Oid;
use model::Release;
use xtask::rebase;
use xtask::rebase::series_check::{check_read, SeriesVerdict};
use xtask::series::status::{self, Base, State};
use xtask::series::Series;
use xtask::series::Workspace;
use xtask::store::SourceStore;

const OLD_LINE: &str = "  return default_path ();\n";
const NEW_LINES: &str = "  if (default_path () == 0)\n    return 0;\n  return fallback_path ();\n";

struct Fixture {
    t: TestStore,
    ws: Workspace,
}

fn rel(v: &str) -> Release {
    Release::parse(v).unwrap()
}

/// 2.41 carries a two-patch series; 2.42 moves and rewords context; 2.43 changes the patched
/// line; 2.44 already has the second patch.
fn fixture() -> Fixture {
    let t = TestStore::new();
    let rtld = "int rtld;\n";
    let (r41, base) = t.add(
        "2.41",
        &[
            ("elf/dl-load.c", &dl_load("2.41", "")),
            ("elf/rtld.c", rtld),
        ],
    );
    let moved = dl_load("2.42", "int moved_a;\nint moved_b;\n")
        .replace("search (void)", "search (int mode)");
    t.add("2.42", &[("elf/dl-load.c", &moved), ("elf/rtld.c", rtld)]);
    let clash = dl_load("2.43", "").replace(OLD_LINE, "  return default_path (flags);\n");
    t.add("2.43", &[("elf/dl-load.c", &clash), ("elf/rtld.c", rtld)]);
    t.add(
        "2.44",
        &[
            ("elf/dl-load.c", &dl_load("2.44", "")),
            ("elf/rtld.c", "int rtld;\nint fallback;\n"),
        ],
    );

    let c1 = t.commit(
        base,
        "elf: Search LD_FALLBACK_PATH last\n",
        &[(
            "elf/dl-load.c",
            &dl_load("2.41", "").replace(OLD_LINE, NEW_LINES),
        )],
        1_764_000_000,
    );
    let c2 = parse_patch(&t, c1);
    let series = Series::from_commits(t.repo(), r41, &[c1, c2]).unwrap();
    let ws = Workspace {
        store: SourceStore::open(t.store.dir()).unwrap(),
        patches_dir: t.tmp.path().join("patches"),
        rebase_dir: t.tmp.path().join("rebase"),
    };
    series.write(&ws.series_dir(r41)).unwrap();
    std::fs::write(ws.patches_dir.join("scope"), "elf/**\n").unwrap();
    Fixture { t, ws }
}

/// `text` with the fixture's temporary directory written as `TMP`: a whole output, for a
/// snapshot.
fn scrubbed(f: &Fixture, text: &str) -> String {
    text.replace(&f.t.tmp.path().display().to_string(), "TMP")
}

/// What `rebase::check` finds, asserting it does not pass: its report with the fixture's
/// patches/ written `ROOT/patches` (as the binary's tests write it), without the lines of
/// the releases that have no series.
fn findings(f: &Fixture) -> String {
    let check = rebase::check(&f.ws).unwrap();
    assert!(!check.ok(), "{}", check.render());
    let report = check
        .render()
        .replace(&f.ws.patches_dir.display().to_string(), "ROOT/patches");
    let report = project::without_absent_series(&scrubbed(f, &report));
    crate::common::releases_folded(&report, &["2.41", "2.42", "2.43", "2.44"])
}

fn file_in_series_tree(f: &Fixture, release: Release, path: &str) -> String {
    let series = Series::load(&f.ws.series_dir(release)).unwrap();
    let dest =
        f.t.tmp
            .path()
            .join(format!("export-{release}-{}", path.replace('/', "-")));
    series.export(&f.ws.store, &dest).unwrap();
    std::fs::read_to_string(dest.join(path)).unwrap()
}

#[test]
fn clean_rebase_reports_changed_context_and_writes_a_series_that_checks() {
    let f = fixture();
    let summary = written(rebase::start(&f.ws, None, rel("2.42")).unwrap());
    // Patch 1's context line was reworded upstream: only that shows, not the moved hunk,
    // and no line numbers; patch 2 is unchanged.
    insta::assert_snapshot!("clean_rebase_summary", scrubbed(&f, &summary));
    // The whole file: 2.42's, with patch 1's lines where 2.42 moved the function.
    let moved = dl_load("2.42", "int moved_a;\nint moved_b;\n")
        .replace("search (void)", "search (int mode)");
    assert_eq!(
        file_in_series_tree(&f, rel("2.42"), "elf/dl-load.c"),
        moved.replace(OLD_LINE, NEW_LINES)
    );
    let check = rebase::check(&f.ws).unwrap();
    assert!(passes_but_for_absent_series(&check), "{}", check.render());
    let passed = check
        .findings
        .iter()
        .filter(|f| matches!(f.verdict, SeriesVerdict::Applies { .. }))
        .count();
    assert_eq!(passed, 2, "{}", check.render());
}

#[test]
fn a_patch_already_upstream_is_dropped() {
    let f = fixture();
    let summary = written(rebase::start(&f.ws, Some(rel("2.41")), rel("2.44")).unwrap());
    insta::assert_snapshot!("dropped_summary", scrubbed(&f, &summary));
    let series = Series::load(&f.ws.series_dir(rel("2.44"))).unwrap();
    assert_eq!(series.patches.len(), 1);
    // Its Subject line, renumbered (the From line above it names a commit of this run).
    let subject = series.patches[0]
        .text
        .lines()
        .find(|line| line.starts_with("Subject: "));
    assert_eq!(
        subject,
        Some("Subject: [PATCH 1/1] elf: Search LD_FALLBACK_PATH last")
    );
}

#[test]
fn conflict_stops_then_continue_finishes() {
    let f = fixture();
    let report = conflict(rebase::start(&f.ws, None, rel("2.43")).unwrap());
    insta::assert_snapshot!("conflict_report", scrubbed(&f, &report));
    assert!(
        !f.ws.series_dir(rel("2.43")).exists(),
        "patches/ must stay untouched"
    );

    let tree = f.ws.rebase_dir.join("2.43/tree");
    let conflicted = std::fs::read_to_string(tree.join("elf/dl-load.c")).unwrap();
    // The whole file: 2.43's, the three sides of the conflict where the patch changes it.
    let sides = format!(
        "<<<<<<< glibc 2.43 (+ patches so far)\n  return default_path (flags);\n\
         ||||||| original release\n{OLD_LINE}=======\n{NEW_LINES}\
         >>>>>>> 0001-elf-Search-LD_FALLBACK_PATH-last.patch\n"
    );
    assert_eq!(conflicted, dl_load("2.43", "").replace(OLD_LINE, &sides));
    assert_eq!(
        std::fs::read_to_string(tree.join("elf/rtld.c")).unwrap(),
        "int rtld;\n"
    );

    // A second start is refused while the first is stopped, and leaves it as it was.
    let state = std::fs::read(f.ws.rebase_dir.join("2.43/state")).unwrap();
    let err = rebase::start(&f.ws, None, rel("2.43"))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        "a rebase onto glibc 2.43 is already in progress: finish it with \
         `cargo xtask rebase-glibc --continue` or drop it with \
         `cargo xtask rebase-glibc --abort`"
    );
    assert_eq!(
        std::fs::read(f.ws.rebase_dir.join("2.43/state")).unwrap(),
        state
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("elf/dl-load.c")).unwrap(),
        conflicted
    );
    // Markers left: refused.
    let err = rebase::continue_rebase(&f.ws, rel("2.43"), &[])
        .err()
        .unwrap()
        .to_string();
    insta::assert_snapshot!("markers_remain", scrubbed(&f, &err));

    let resolved = dl_load("2.43", "").replace(
        OLD_LINE,
        "  if (default_path (flags) == 0)\n    return 0;\n  return fallback_path ();\n",
    );
    std::fs::write(tree.join("elf/dl-load.c"), &resolved).unwrap();
    let summary = written(rebase::continue_rebase(&f.ws, rel("2.43"), &[]).unwrap());
    insta::assert_snapshot!("continued_summary", scrubbed(&f, &summary));
    assert!(!f.ws.rebase_dir.join("2.43").exists(), "state must be gone");
    assert_eq!(
        file_in_series_tree(&f, rel("2.43"), "elf/dl-load.c"),
        resolved
    );
    assert_eq!(
        file_in_series_tree(&f, rel("2.43"), "elf/rtld.c"),
        "int rtld;\nint fallback;\n"
    );
    let check = rebase::check(&f.ws).unwrap();
    assert!(passes_but_for_absent_series(&check), "{}", check.render());
}

#[test]
fn abort_drops_the_state_and_leaves_patches_alone() {
    let f = fixture();
    let before = snapshot(&f.ws.patches_dir);
    conflict(rebase::start(&f.ws, None, rel("2.43")).unwrap());
    rebase::abort(&f.ws, rel("2.43")).unwrap();
    assert!(!f.ws.rebase_dir.join("2.43").exists());
    assert_eq!(snapshot(&f.ws.patches_dir), before);
    // and the rebase can start over
    conflict(rebase::start(&f.ws, None, rel("2.43")).unwrap());
}

#[test]
fn check_catches_drift_and_patches_that_do_not_apply() {
    let f = fixture();
    let dir = f.ws.series_dir(rel("2.41"));
    let check = rebase::check(&f.ws).unwrap();
    assert!(passes_but_for_absent_series(&check), "{}", check.render());

    // A hand edit that still applies: the re-export differs.
    let name = "0002-elf-Parse-LD_FALLBACK_PATH.patch";
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name),
        text.replace("\n\n---\n", "\n\nHand-written note.\n---\n"),
    )
    .unwrap();
    // The line the hand edit changed, against the commit the patch's From line names.
    insta::assert_snapshot!("check_hand_edit", findings(&f));

    // A context line that is not in the release: does not apply.
    std::fs::write(
        dir.join(name),
        text.replace(" int rtld;\n", " int rtld2;\n"),
    )
    .unwrap();
    insta::assert_snapshot!("check_does_not_apply", findings(&f));

    // An extra file in the series dir is drift too.
    std::fs::write(dir.join(name), &text).unwrap();
    std::fs::write(dir.join("0003-stray.patch"), "x").unwrap();
    insta::assert_snapshot!("check_stray_file", findings(&f));

    // A series dir for a release that is not supported is reported, not skipped.
    std::fs::create_dir_all(f.ws.patches_dir.join("2.39")).unwrap();
    insta::assert_snapshot!("check_unsupported_release", findings(&f));
}

#[test]
fn status_has_a_row_per_release() {
    let f = fixture();
    let releases = [rel("2.41"), rel("2.42"), rel("2.43"), rel("2.44")];
    let rows = status::states(&f.ws, &releases, &check_read).unwrap();
    assert!(
        matches!(&rows[0].1, State::AppliesCleanly { base: Base::Own { release, .. } } if *release == rel("2.41")),
        "{:?}",
        rows[0]
    );
    assert_eq!(
        rows[1].1,
        State::NeedsRebase {
            from: rel("2.41"),
            dropped: 0
        }
    );
    assert_eq!(
        rows[2].1,
        State::Conflicts {
            from: rel("2.41"),
            files: vec!["elf/dl-load.c".into()]
        }
    );
    assert_eq!(
        rows[3].1,
        State::NeedsRebase {
            from: rel("2.41"),
            dropped: 1
        }
    );
    let table = status::status(&f.ws, &releases, &check_read).unwrap();
    insta::assert_snapshot!("status_table", scrubbed(&f, &table.render()));
    // Only a series of its own that applies needs nothing: a rebase or a conflict does.
    assert!(table.needs_attention() && !table.errors());
}

fn snapshot(dir: &Path) -> Oid {
    xtask::store::snapshot::Snapshot::of_dir(dir, &[])
        .unwrap()
        .root
}

#[test]
fn picking_only_touched_paths_equals_a_full_cherry_pick() {
    let f = fixture();
    let repo = f.t.repo();
    let series = Series::load(&f.ws.series_dir(rel("2.41"))).unwrap();
    let (base, mut commits) = f.ws.commit_series(&series).unwrap();
    // Also a commit that adds a file (in a new directory) and deletes one.
    let last = repo.find_commit(*commits.last().unwrap()).unwrap();
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert(
        "elf/fallback/dl-fallback.c",
        repo.blob(b"int fb;\n").unwrap(),
        git2::FileMode::Blob,
    );
    update.remove("elf/rtld.c");
    let tree = repo
        .find_tree(update.create_updated(repo, &last.tree().unwrap()).unwrap())
        .unwrap();
    let sig = last.author();
    commits.push(
        repo.commit(None, &sig, &sig, "add and delete\n", &tree, &[&last])
            .unwrap(),
    );
    assert_ne!(base, commits[0]);

    for onto in ["2.42", "2.44"] {
        let head = f.ws.store.ensure_release(rel(onto)).unwrap();
        let mut steps = Vec::new();
        let xtask::merge::Picked::Done { head: fast } =
            xtask::merge::pick(repo, &commits, 0, head, &mut steps).unwrap()
        else {
            panic!("unexpected conflict onto {onto}")
        };
        // The same picks with libgit2's whole-tree cherry-pick.
        let mut full = head;
        for id in &commits {
            let mut index = repo
                .cherrypick_commit(
                    &repo.find_commit(*id).unwrap(),
                    &repo.find_commit(full).unwrap(),
                    0,
                    None,
                )
                .unwrap();
            let tree = index.write_tree_to(repo).unwrap();
            if let Some(new) =
                xtask::merge::commit_like(repo, &repo.find_commit(*id).unwrap(), full, tree)
                    .unwrap()
            {
                full = new;
            }
        }
        assert_eq!(fast, full, "onto {onto}");
        let tree = repo.find_commit(fast).unwrap().tree().unwrap();
        assert!(tree
            .get_path(Path::new("elf/fallback/dl-fallback.c"))
            .is_ok());
        assert!(tree.get_path(Path::new("elf/rtld.c")).is_err());
    }
}

/// A series made elsewhere with `git format-patch` (git's own signature) comes in as the
/// canonical files, never overwrites a series by accident, and never half-writes one.
#[test]
fn patches_import_takes_git_format_patch_files() {
    let f = fixture();
    let dir = f.ws.series_dir(rel("2.41"));
    let original = Series::load(&dir).unwrap();
    let outside = f.t.tmp.path().join("from-git");
    std::fs::create_dir_all(&outside).unwrap();
    let files: Vec<std::path::PathBuf> = original
        .patches
        .iter()
        .map(|p| {
            let path = outside.join(&p.name);
            let git_style = p.text.replace(xtask::series::TRAILER, "-- \n2.47.3\n\n");
            std::fs::write(&path, git_style).unwrap();
            path
        })
        .collect();

    let err = xtask::series::import::import(&f.ws, rel("2.41"), &files, false).unwrap_err();
    insta::assert_snapshot!("import_over_a_series", scrubbed(&f, &format!("{err:#}")));

    xtask::series::import::import(&f.ws, rel("2.41"), &files, true).unwrap();
    assert!(Series::load(&dir)
        .unwrap()
        .drift_against(&dir)
        .unwrap()
        .is_empty());
    for patch in &original.patches {
        assert_eq!(
            std::fs::read_to_string(dir.join(&patch.name)).unwrap(),
            patch.text
        );
    }

    let err = xtask::series::import::import(&f.ws, rel("2.43"), &files, false).unwrap_err();
    insta::assert_snapshot!(
        "import_onto_another_release",
        scrubbed(&f, &format!("{err:#}"))
    );
    assert!(!f.ws.series_dir(rel("2.43")).exists());
}

const NEWS_ENTRY: &str =
    "* The dynamic linker searches LD_FALLBACK_PATH last.\n  It is ignored in secure mode.\n\n";

/// 2.41 carries a one-patch series adding the NEWS entry (and a line of dl-load.c); 2.42
/// rewrote the lines around where the entry goes, so a merge of NEWS would conflict.
/// `news_41` is what the patch makes of 2.41's NEWS.
fn news_fixture(news_41: impl Fn(&str) -> String) -> Fixture {
    let t = TestStore::new();
    let news41 = news_2_41();
    let (r41, base) = t.add(
        "2.41",
        &[("NEWS", &news41), ("elf/dl-load.c", &dl_load("2.41", ""))],
    );
    t.add(
        "2.42",
        &[
            ("NEWS", &news_2_42()),
            ("elf/dl-load.c", &dl_load("2.42", "int moved;\n")),
        ],
    );
    let c1 = t.commit(
        base,
        "elf: Search LD_FALLBACK_PATH last\n",
        &[
            (
                "elf/dl-load.c",
                &dl_load("2.41", "").replace(OLD_LINE, NEW_LINES),
            ),
            ("NEWS", &news_41(&news41)),
        ],
        1_764_000_000,
    );
    let ws = Workspace {
        store: SourceStore::open(t.store.dir()).unwrap(),
        patches_dir: t.tmp.path().join("patches"),
        rebase_dir: t.tmp.path().join("rebase"),
    };
    Series::from_commits(t.repo(), r41, &[c1])
        .unwrap()
        .write(&ws.series_dir(r41))
        .unwrap();
    std::fs::write(ws.patches_dir.join("scope"), "NEWS\nelf/**\n").unwrap();
    Fixture { t, ws }
}

#[test]
fn the_news_entry_is_placed_by_rule_and_the_series_stays_consumable() {
    use xtask::merge::news;
    let f = news_fixture(|news| news::place(news, NEWS_ENTRY).unwrap());
    let summary = written(rebase::start(&f.ws, None, rel("2.42")).unwrap());
    // The entry placed by rule; only the entry shows in the summary's diff, not the
    // release's lines around it.
    insta::assert_snapshot!("news_summary", scrubbed(&f, &summary));
    let news42 = news_2_42();
    assert_eq!(
        file_in_series_tree(&f, rel("2.42"), "NEWS"),
        news::place(&news42, NEWS_ENTRY).unwrap()
    );
    let check = rebase::check(&f.ws).unwrap();
    assert!(passes_but_for_absent_series(&check), "{}", check.render());

    // git am and patch -p1 take the written series on the release as it is.
    let dir = f.ws.series_dir(rel("2.42"));
    let series = Series::load(&dir).unwrap();
    let (_, commits) = f.ws.commit_series(&series).unwrap();
    let expected =
        f.t.repo()
            .find_commit(*commits.last().unwrap())
            .unwrap()
            .tree_id();
    let plain = f.t.tmp.path().join("plain");
    f.ws.store.export_tree(rel("2.42"), &plain).unwrap();
    for p in &series.patches {
        let file = dir.join(&p.name);
        run(
            &plain,
            "patch",
            &["-p1", "--quiet", "-i", file.to_str().unwrap()],
        );
    }
    assert_eq!(snapshot(&plain), expected);
    let am = f.t.tmp.path().join("am");
    f.ws.store.export_tree(rel("2.42"), &am).unwrap();
    let git = |args: &[&str]| {
        let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@e.invalid"];
        all.extend_from_slice(args);
        run(&am, "git", &all)
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    let files: Vec<String> = series
        .patches
        .iter()
        .map(|p| dir.join(&p.name).display().to_string())
        .collect();
    let mut am_args = vec!["am", "-q"];
    am_args.extend(files.iter().map(String::as_str));
    git(&am_args);
    assert_eq!(
        git(&["rev-parse", "HEAD^{tree}"]).trim(),
        expected.to_string()
    );
}

#[test]
fn news_changed_any_other_way_is_merged_and_may_conflict() {
    // Rewords an upstream line instead of adding an entry: merged the usual way.
    let f = news_fixture(|news| news.replace("Tunables 2.41.", "Tunables 2.41, reworded."));
    let report = conflict(rebase::start(&f.ws, None, rel("2.42")).unwrap());
    insta::assert_snapshot!(scrubbed(&f, &report));
}
