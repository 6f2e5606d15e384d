//! A release goes through unattended: `--exec` and `--build-check` stop at the patch that
//! broke something and take the fix with `--continue`, and the resolutions and fixes made
//! once are replayed the next time (synthetic releases, the library's API; the NEWS rule is
//! in rebase.rs, `update-release` through the binary in update_release.rs).

use std::path::{Path, PathBuf};

use crate::common::*;
use model::Release;
use xtask::merge::news;
use xtask::rebase::patch_checks::Checks;
use xtask::rebase::{self, Options};
use xtask::series::{Series, Workspace};
use xtask::sysroot::compile_check::{self, BuildCheck};

const OLD_LINE: &str = "  return default_path ();\n";
/// Patch 1's lines: `GL(dl_rtld_map)` is what glibc 2.41 renamed to `_dl_rtld_map`; in these
/// releases 2.42 did (the silent break: the hunk applies, the code is wrong).
const NEW_LINES: &str = "  l = &GL(dl_rtld_map);\n  return fallback_path ();\n";
const FIXED_LINES: &str = "  l = &_dl_rtld_map;\n  return fallback_path ();\n";
const ENTRY: &str =
    "* The dynamic linker searches LD_FALLBACK_PATH last.\n  It is ignored in secure mode.\n\n";

fn rel(v: &str) -> Release {
    Release::parse(v).unwrap()
}

struct Fixture {
    t: TestStore,
    ws: Workspace,
}

/// 2.41 carries the series (patch 1: NEWS entry and elf/dl-load.c; patch 2: elf/rtld.c);
/// 2.42 rewrote NEWS around the entry (placed by rule) and moved dl-load.c's lines (merges
/// cleanly, but for the silent break); 2.43 changed the very line patch 1 changes (a
/// conflict).
fn fixture() -> Fixture {
    let t = TestStore::new();
    let (r41, base) = t.add(
        "2.41",
        &[
            ("NEWS", &news_2_41()),
            ("elf/dl-load.c", &dl_load("2.41", "")),
            ("elf/rtld.c", "int rtld;\n"),
            ("README", "glibc\n"),
        ],
    );
    t.add(
        "2.42",
        &[
            ("NEWS", &news_2_42()),
            (
                "elf/dl-load.c",
                &dl_load("2.42", "int moved_a;\nint moved_b;\n"),
            ),
            ("elf/rtld.c", "int rtld;\n"),
            ("README", "glibc\n"),
        ],
    );
    t.add(
        "2.43",
        &[
            ("NEWS", &news_of("2.43", &["Something else."])),
            (
                "elf/dl-load.c",
                &dl_load("2.43", "").replace(OLD_LINE, "  return default_path (flags);\n"),
            ),
            ("elf/rtld.c", "int rtld;\n"),
            ("README", "glibc\n"),
        ],
    );
    let news41 = news_2_41();
    let c1 = t.commit(
        base,
        "elf: Search LD_FALLBACK_PATH last\n",
        &[
            (
                "elf/dl-load.c",
                &dl_load("2.41", "").replace(OLD_LINE, NEW_LINES),
            ),
            ("NEWS", &news::place(&news41, ENTRY).unwrap()),
        ],
        1_764_000_000,
    );
    let c2 = parse_patch(&t, c1);
    let ws = t.workspace_with_series(r41, &[c1, c2], "NEWS\nelf/**\n");
    Fixture { t, ws }
}

fn with_checks(ws: &Workspace, checks: Checks) -> Options {
    Options {
        checks,
        ..Options::plain(ws)
    }
}

fn exec(command: &str) -> Checks {
    Checks {
        exec: vec![command.to_string()],
        build_check: false,
    }
}

/// The check standing in for a compile: this release has no `GL(dl_rtld_map)`.
const NO_GL_RTLD_MAP: &str =
    "if grep -n 'GL(dl_rtld_map)' elf/dl-load.c; then echo 'elf/dl-load.c: error: dl_rtld_map is no member of GL here' >&2; exit 1; fi";

/// The rebase onto 2.42 with the check that this release has no `GL(dl_rtld_map)`.
fn start_onto_2_42_checking_gl(f: &Fixture) -> rebase::RebaseOutcome {
    let options = with_checks(&f.ws, exec(NO_GL_RTLD_MAP));
    rebase::start_with(&f.ws, None, rel("2.42"), options).unwrap()
}

/// The file `path` with the series of `release` applied.
fn file_in_series(f: &Fixture, release: Release, path: &str) -> String {
    let series = Series::load(&f.ws.series_dir(release)).unwrap();
    let dest = f.t.tmp.path().join(format!(
        "export-{release}-{}-{}",
        path.replace('/', "-"),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    series.export(&f.ws.store, &dest).unwrap();
    std::fs::read_to_string(dest.join(path)).unwrap()
}

fn series_files(f: &Fixture, release: Release) -> Vec<(String, Vec<u8>)> {
    project::visible_files(&f.ws.series_dir(release))
}

#[test]
fn exec_stops_after_the_patch_and_continue_takes_the_fix_then_replays_it() {
    let f = fixture();
    let report = check_failed(start_onto_2_42_checking_gl(&f));
    insta::assert_snapshot!("exec_check_fails", f.t.normalised(&report));
    assert!(
        !f.ws.series_dir(rel("2.42")).exists(),
        "patches/ is untouched"
    );
    // The work tree holds the patch applied, ready for the fix.
    let tree = f.ws.rebase_dir.join("2.42/tree");
    let applied = std::fs::read_to_string(tree.join("elf/dl-load.c")).unwrap();
    assert_eq!(
        applied,
        dl_load("2.42", "int moved_a;\nint moved_b;\n").replace(OLD_LINE, NEW_LINES)
    );
    // The scratch tree the check ran in is gone with its run.
    assert!(project::hidden_entries(&f.ws.rebase_dir)
        .iter()
        .all(|n| !n.starts_with(".check-")));

    // Continuing without a fix runs the check again: it still fails, the state stays.
    check_failed(rebase::continue_rebase(&f.ws, rel("2.42"), &[]).unwrap());
    std::fs::write(
        tree.join("elf/dl-load.c"),
        applied.replace("GL(dl_rtld_map)", "_dl_rtld_map"),
    )
    .unwrap();
    let summary = written(rebase::continue_rebase(&f.ws, rel("2.42"), &[]).unwrap());
    insta::assert_snapshot!("exec_fix_recorded", f.t.normalised(&summary));
    let fixed = dl_load("2.42", "int moved_a;\nint moved_b;\n").replace(OLD_LINE, FIXED_LINES);
    assert_eq!(file_in_series(&f, rel("2.42"), "elf/dl-load.c"), fixed);
    let record =
        f.ws.patches_dir
            .join("resolutions/2.42/0001-elf-Search-LD_FALLBACK_PATH-last.patch.resolution");
    let text = std::fs::read_to_string(&record).unwrap();
    insta::assert_snapshot!("exec_fix_record", text);
    let check = rebase::check(&f.ws).unwrap();
    assert!(passes_but_for_absent_series(&check), "{}", check.render());
    let records_line = check
        .render()
        .lines()
        .find(|line| line.contains("resolutions/2.42"))
        .map(|line| f.t.scrubbed(line));
    // The rest of the report is the releases without a series, compared whole in safety.rs.
    assert_eq!(
        records_line.as_deref(),
        Some(
            "ok      ROOT/patches/resolutions/2.42: 1 recorded resolution(s) for rebases onto \
             glibc-2.42, in scope"
        )
    );

    // The next time, the same rebase needs nobody, even with the check: the fix is replayed.
    let first = series_files(&f, rel("2.42"));
    std::fs::remove_dir_all(f.ws.series_dir(rel("2.42"))).unwrap();
    let summary = written(start_onto_2_42_checking_gl(&f));
    insta::assert_snapshot!("exec_fix_replayed", f.t.normalised(&summary));
    assert_eq!(series_files(&f, rel("2.42")), first);
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        text,
        "the record is kept as it was"
    );
}

#[test]
fn a_conflict_resolution_is_replayed_only_on_the_text_it_was_made_for() {
    let f = fixture();
    let report = conflict(rebase::start(&f.ws, None, rel("2.43")).unwrap());
    insta::assert_snapshot!("conflict_stop", f.t.normalised(&report));
    let tree = f.ws.rebase_dir.join("2.43/tree");
    let resolved = dl_load("2.43", "").replace(
        OLD_LINE,
        "  l = &GL(dl_rtld_map);\n  return fallback_path (flags);\n",
    );
    std::fs::write(tree.join("elf/dl-load.c"), &resolved).unwrap();
    let summary = written(rebase::continue_rebase(&f.ws, rel("2.43"), &[]).unwrap());
    insta::assert_snapshot!("conflict_recorded", f.t.normalised(&summary));
    let first = series_files(&f, rel("2.43"));

    // Again: unattended, the same series.
    std::fs::remove_dir_all(f.ws.series_dir(rel("2.43"))).unwrap();
    let summary = written(rebase::start(&f.ws, None, rel("2.43")).unwrap());
    insta::assert_snapshot!("conflict_replayed", f.t.normalised(&summary));
    assert_eq!(series_files(&f, rel("2.43")), first);

    // The series changed: the conflict's text is another, the record does not apply; the
    // rebase stops and points at the record, and the new resolution replaces the stale one.
    let r41 = rel("2.41");
    let base = f.ws.store.release_commit(r41).unwrap().unwrap();
    let news41 = news_2_41();
    let c1 = f.t.commit(
        base,
        "elf: Search LD_FALLBACK_PATH last\n",
        &[
            (
                "elf/dl-load.c",
                &dl_load("2.41", "").replace(OLD_LINE, "  return fallback_path_v2 ();\n"),
            ),
            ("NEWS", &news::place(&news41, ENTRY).unwrap()),
        ],
        1_764_000_000,
    );
    let c2 = parse_patch(&f.t, c1);
    Series::from_commits(f.t.repo(), r41, &[c1, c2])
        .unwrap()
        .write(&f.ws.series_dir(r41))
        .unwrap();
    let report = conflict(rebase::start(&f.ws, Some(r41), rel("2.43")).unwrap());
    insta::assert_snapshot!("conflict_record_for_other_text", f.t.normalised(&report));
    std::fs::write(
        tree.join("elf/dl-load.c"),
        dl_load("2.43", "").replace(OLD_LINE, "  return fallback_path_v2 (flags);\n"),
    )
    .unwrap();
    let summary = written(rebase::continue_rebase(&f.ws, rel("2.43"), &[]).unwrap());
    insta::assert_snapshot!("conflict_stale_record_dropped", f.t.normalised(&summary));
    let text = std::fs::read_to_string(
        f.ws.patches_dir
            .join("resolutions/2.43/0001-elf-Search-LD_FALLBACK_PATH-last.patch.resolution"),
    )
    .unwrap();
    insta::assert_snapshot!("conflict_record_replaced", text);
}

#[test]
fn a_damaged_or_out_of_scope_record_is_a_finding_of_the_check() {
    let f = fixture();
    conflict(rebase::start(&f.ws, None, rel("2.43")).unwrap());
    let tree = f.ws.rebase_dir.join("2.43/tree");
    std::fs::write(
        tree.join("elf/dl-load.c"),
        dl_load("2.43", "").replace(OLD_LINE, "  return fallback_path (flags);\n"),
    )
    .unwrap();
    written(rebase::continue_rebase(&f.ws, rel("2.43"), &[]).unwrap());
    let record =
        f.ws.patches_dir
            .join("resolutions/2.43/0001-elf-Search-LD_FALLBACK_PATH-last.patch.resolution");
    let good = std::fs::read_to_string(&record).unwrap();

    // What the check says of the record once `edit`ed: its line, the one not about a
    // release without a series.
    let finding = |edit: &str, said: &str| {
        let check = rebase::check(&f.ws).unwrap();
        assert!(!check.ok(), "{edit}: {}", check.render());
        let finding = check
            .render()
            .lines()
            .filter(|line| line.contains("resolutions/"))
            .map(|line| f.t.scrubbed(line) + "\n")
            .collect::<String>();
        assert_eq!(finding, said, "{edit}");
    };
    std::fs::write(&record, good.replace("\nkey ", "\nkey nonsense-")).unwrap();
    finding(
        "key",
        "FAILED  ROOT/patches/resolutions/2.43: ROOT/patches/resolutions/2.43/\
         0001-elf-Search-LD_FALLBACK_PATH-last.patch.resolution:9: not a blob id: not a recorded \
         resolution (restore the file from git, or delete it and let the rebase stop there \
         again)\n",
    );
    std::fs::write(
        &record,
        good.replace("elf/dl-load.c", "sysdeps/x86/other.c"),
    )
    .unwrap();
    finding(
        "path",
        "FAILED  ROOT/patches/resolutions/2.43: recorded resolutions change paths \
         ROOT/patches/scope does not allow: sysdeps/x86/other.c \
         (0001-elf-Search-LD_FALLBACK_PATH-last.patch)\n",
    );

    // A record whose diff was edited is refused when replayed, not applied.
    std::fs::write(
        &record,
        good.replace(
            "+  return fallback_path (flags);",
            "+  return something_else ();",
        ),
    )
    .unwrap();
    std::fs::remove_dir_all(f.ws.series_dir(rel("2.43"))).unwrap();
    let err = rebase::start(&f.ws, None, rel("2.43")).err().unwrap();
    assert_eq!(
        format!("{err:#}"),
        "the recorded resolution of elf/dl-load.c for 0001-elf-Search-LD_FALLBACK_PATH-last.patch \
         is damaged (edited by hand?): its diff makes blob \
         42ec21bbb2fbf7c8b9d47960ec16d88f87965494, not the recorded result \
         30734ff7b6a70ec45a1be9de770906de77b0187e; delete its section and let the rebase stop \
         there again"
    );
    assert!(!f.ws.series_dir(rel("2.43")).exists());
}

/// A compiled "glibc" tree for the build check: a makefile that says how it compiles
/// `elf/dl-load.c` (as glibc's does, for `make -n`), its sources and an object, in `root`.
fn compiled_tree(root: &Path, release_dl_load: &str) -> PathBuf {
    let src = root.join("src/elf");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(root.join("build/elf")).unwrap();
    std::fs::write(
        src.join("Makefile"),
        "$(objdir)/elf/%.os: %.c\n\tcc -c $< -DMODULE_NAME=rtld -DSHARED -o $@ -MD -MP -MF $@.dt -MT $@\n",
    )
    .unwrap();
    std::fs::write(src.join("dl-load.c"), release_dl_load).unwrap();
    std::fs::write(root.join("build/elf/dl-load.os"), "").unwrap();
    root.to_path_buf()
}

/// dl-load.c of a release whose loader map is `map` (`GL(dl_rtld_map)` before the rename,
/// `_dl_rtld_map` after), compilable C.
fn compilable_dl_load(version: &str, map_declaration: &str) -> String {
    let mut text = format!("/* glibc {version} */\n{map_declaration}");
    for i in 0..12 {
        text.push_str(&format!("static int line{i};\n"));
    }
    text.push_str("int *\nsearch (void)\n{\n  int *l = 0;\n  return l;\n}\n");
    text
}

#[test]
fn the_build_check_stops_at_the_patch_that_no_longer_compiles() {
    if loader_tests::host::find_program("cc").is_none()
        || loader_tests::host::find_program("make").is_none()
    {
        assert!(!loader_tests::host::in_ci(), "cc and make are needed");
        eprintln!("no cc or make: skipping");
        return;
    }
    let t = TestStore::new();
    let before = "struct rtld_global { int dl_rtld_map; };\nextern struct rtld_global _rtld_global;\n#define GL(x) _rtld_global.x\n";
    let after = "struct rtld_global { int other; };\nextern int _dl_rtld_map;\n";
    let dl41 = compilable_dl_load("2.41", before);
    let dl42 = compilable_dl_load("2.42", after);
    let (r41, base) = t.add(
        "2.41",
        &[("elf/dl-load.c", &dl41), ("elf/rtld.c", "int rtld;\n")],
    );
    t.add(
        "2.42",
        &[("elf/dl-load.c", &dl42), ("elf/rtld.c", "int rtld;\n")],
    );
    let c1 = t.commit(
        base,
        "elf: Search LD_FALLBACK_PATH last\n",
        &[(
            "elf/dl-load.c",
            &dl41.replace("  int *l = 0;\n", "  int *l = &GL(dl_rtld_map);\n"),
        )],
        1_764_000_000,
    );
    let c2 = parse_patch(&t, c1);
    let ws = t.workspace_with_series(r41, &[c1, c2], "elf/**\n");
    let compiled = compiled_tree(&t.tmp.path().join("compiled"), &dl42);
    let options = |ws: &Workspace| Options {
        checks: Checks {
            exec: Vec::new(),
            build_check: true,
        },
        compiled: Some(Box::new(BuildCheck::new(
            compile_check::Source::At(compiled.clone()),
            1,
        ))),
        ..Options::plain(ws)
    };

    let report = check_failed(rebase::start_with(&ws, None, rel("2.42"), options(&ws)).unwrap());
    insta::assert_snapshot!("build_check_fails", t.normalised(&report));
    let tree = ws.rebase_dir.join("2.42/tree");
    let applied = std::fs::read_to_string(tree.join("elf/dl-load.c")).unwrap();
    std::fs::write(
        tree.join("elf/dl-load.c"),
        applied.replace("&GL(dl_rtld_map)", "&_dl_rtld_map"),
    )
    .unwrap();
    let summary = written(rebase::continue_with(&ws, rel("2.42"), &[], options(&ws)).unwrap());
    insta::assert_snapshot!("build_check_passes", t.normalised(&summary));
    let written_series = Series::load(&ws.series_dir(rel("2.42"))).unwrap();
    // A fragment: the patch's From line names the commit the rebase made, at its own time.
    assert!(written_series.patches[0]
        .text
        .contains("+  int *l = &_dl_rtld_map;"));

    // The next time the fix is replayed and the build check passes at once.
    std::fs::remove_dir_all(ws.series_dir(rel("2.42"))).unwrap();
    let summary = written(rebase::start_with(&ws, None, rel("2.42"), options(&ws)).unwrap());
    insta::assert_snapshot!("build_check_fix_replayed", t.normalised(&summary));
    // No build check without a compiled tree to take it from.
    std::fs::remove_dir_all(ws.series_dir(rel("2.42"))).unwrap();
    let err = rebase::start_with(
        &ws,
        None,
        rel("2.42"),
        Options {
            compiled: None,
            ..options(&ws)
        },
    )
    .err()
    .unwrap();
    assert_eq!(
        format!("{err:#}"),
        "the build check needs a compiled glibc tree, and none was provided"
    );
}

#[test]
fn a_run_killed_while_checking_leaves_a_scratch_tree_the_next_run_removes() {
    let f = fixture();
    let rebase_onto_2_42 = |exec: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["--store"])
            .arg(f.t.store.dir())
            .args(crate::common::project::ONTO)
            .args(exec)
            .env("LD_FALLBACK_PATCHES", &f.ws.patches_dir)
            .env("LD_FALLBACK_CACHE", f.t.tmp.path().join("cache"))
            .output()
            .unwrap()
    };
    // The check kills the cargo xtask it runs under (the parent of its guard, the check's
    // parent: `util::child`), as a crash would.
    let outcome = rebase_onto_2_42(&["--exec", "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)"]);
    assert_eq!(outcome.status.code(), None, "killed by a signal");
    let rebase_dir = f.t.tmp.path().join("cache/rebase");
    assert!(
        project::hidden_entries(&rebase_dir)
            .iter()
            .any(|n| n.starts_with(".check-")),
        "{:?}",
        project::hidden_entries(&rebase_dir)
    );
    let next = rebase_onto_2_42(&[]);
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert_eq!(next.status.code(), Some(0), "{stderr}");
    assert_eq!(
        f.t.normalised(&stderr),
        "removed ROOT/cache/rebase/.check-N, the work tree a killed run checked its patches in\n"
    );
    assert_eq!(project::hidden_entries(&rebase_dir), Vec::<String>::new());
}
