//! The series can never be silently damaged: the real binary on synthetic projects, one
//! test per way once found to damage a series or mislead its user. Each asserts what the
//! command says, its exit status (0 ok, 1 failure, 2 needs attention) and what it leaves.

use std::path::Path;

use crate::common::project::*;
use crate::common::{releases_folded, source_dir, tarball};
use xtask::rebase::records::{Kind, Resolution, Resolutions};

/// The lines of `stderr` from its first `error: ` on: a command's error without the progress
/// lines before it, which carry timings and scratch paths.
fn error_lines(stderr: &str) -> &str {
    stderr.find("error: ").map_or("", |at| &stderr[at..])
}

/// What `rebase-glibc --check` reports (scrubbed), asserting it needs attention (exit 2),
/// without the lines of the supported releases that have no series (the project has 2.41's
/// only).
fn check_report(p: &Project) -> String {
    without_absent_series(&scrubbed(p, &p.run(CHECK).expect(2).stdout))
}

/// `--check`'s line for the project's 2.41 series as it is.
const SERIES_2_41_OK: &str = "ok      ROOT/patches/2.41: 2 patch(es) apply exactly to glibc-2.41 \
     (tree b2d81302f7395ecc405433d1a3a14565d098e22b), stay in scope, and re-export byte for byte\n";

/// What `--continue` says (scrubbed) when the work tree is not ready for the one `reason`.
fn not_ready(reason: &str) -> String {
    format!(
        "error: the work tree ROOT/cache/rebase/2.42/tree is not ready to continue:\n  - {reason}\n\
         then run `cargo xtask rebase-glibc --continue` again (the rebase state is unchanged)\n"
    )
}

/// [`not_ready`] for conflict markers left in `file`.
fn markers_remain(file: &str) -> String {
    not_ready(&format!(
        "conflict markers remain in {file}: resolve them (remove every `<<<<<<<`, `|||||||`, \
         `=======` and `>>>>>>>` line)"
    ))
}

fn stop_at_first_conflict(p: &Project) {
    p.run(ONTO).expect(2);
    assert_eq!(stopped_at(p.root()), Some(0));
}

/// The rebase stopped at its first conflict, resolved in the work tree, not continued yet.
fn stop_with_the_first_conflict_resolved(p: &Project) {
    stop_at_first_conflict(p);
    p.resolve(0);
}

/// The rebase stopped at its last patch (the second conflict), both conflicts resolved: the
/// next `--continue` writes the series.
fn stop_at_the_last_patch_resolved(p: &Project) {
    stop_with_the_first_conflict_resolved(p);
    p.run(CONTINUE).expect(2);
    p.resolve(1);
}

#[test]
fn a_conflict_exits_2_and_a_failure_exits_1() {
    let p = Project::new();
    let conflict = p.run(ONTO);
    assert_eq!(conflict.code, 2, "{}", conflict.both());
    insta::assert_snapshot!(scrubbed(&p, &conflict.stderr));
    // A release with no series to move is a failure of the command.
    let failure = p.run(&["rebase-glibc", "--onto", "2.43", "--from", "2.40"]);
    assert_eq!(failure.code, 1, "{}", failure.both());
    // Usage errors too (clap's own code would be 2).
    assert_eq!(p.run(&["rebase-glibc", "--bogus"]).code, 1);
}

/// docs/jetson.md is the aarch64 replay: `--check` and `--write-doc` default to its target
/// (they defaulted to x86_64 and then refused it), and refuse another one before any work.
#[test]
fn the_jetson_page_is_checked_and_written_only_on_its_target() {
    let p = Project::new();
    for mode in ["--check", "--write-doc"] {
        let ran = p
            .run(&["jetson-replay", "--target", "x86_64", mode])
            .expect(1);
        assert_eq!(
            ran.stderr,
            "error: docs/jetson.md is the aarch64 replay (Jetson boards are aarch64), not \
             x86_64's: run with --target aarch64\n",
            "{mode}"
        );
    }
    // Without --target, the check is the page's: it reads the page (made from a series this
    // project does not hold, so stale: a finding) before building anything. The finding names
    // this checkout's page and the digests it was made from: not a fixed text.
    let ran = p.run(&["jetson-replay", "--check"]).expect(2);
    assert!(ran.stderr.contains("docs/jetson.md is stale: "), "{ran:?}");
}

/// `cmd` run with `RUST_BACKTRACE=1`, asserting it fails (exit 1).
fn failing_with_backtraces_on(mut cmd: std::process::Command) -> Ran {
    Ran::of(cmd.env("RUST_BACKTRACE", "1").output().unwrap()).expect(1)
}

#[test]
fn a_user_error_prints_no_backtrace() {
    let p = Project::new();
    let ran = failing_with_backtraces_on(p.command(&["rebase-glibc", "--abort"]));
    // The whole of it: one line, no backtrace under it.
    assert_eq!(
        scrubbed(&p, &ran.stderr),
        "error: no rebase is in progress (state lives in ROOT/cache/rebase): there is nothing \
         to continue or abort\n"
    );
}

#[test]
fn abort_with_nothing_to_abort_fails() {
    let p = Project::new();
    let ran = p.run(&["rebase-glibc", "--abort"]).expect(1);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    let ran = p
        .run(&["rebase-glibc", "--abort", "--onto", "2.42"])
        .expect(1);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert_eq!(ran.stdout, "", "nothing was aborted");
}

#[test]
fn a_missing_file_is_not_a_deletion() {
    let p = Project::new();
    stop_with_the_first_conflict_resolved(&p);
    std::fs::remove_file(p.tree().join("NEWS")).unwrap();
    let ran = p.run(CONTINUE).expect(2);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert_eq!(stopped_at(p.root()), Some(0), "the state is unchanged");

    // Saying so is not enough: patches/scope allows no deletion.
    let ran = p
        .run(&["rebase-glibc", "--continue", "--delete", "NEWS"])
        .expect(1);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert!(!p.patches().join("2.42").exists());

    // The restore command the refusal prints puts the file back.
    let hint = p.run(CONTINUE).stderr;
    let restore = hint
        .split('`')
        .find(|s| s.starts_with("git --git-dir="))
        .unwrap();
    let status = std::process::Command::new("sh")
        .args(["-c", restore])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(p.tree().join("NEWS")).unwrap(),
        with_entry(&news("2.42"))
    );
    p.run(CONTINUE).expect(2);
    assert_eq!(stopped_at(p.root()), Some(1));
}

#[test]
fn a_half_deleted_tree_is_refused_naming_what_is_missing() {
    let p = Project::new();
    stop_with_the_first_conflict_resolved(&p);
    for i in 0..25 {
        std::fs::remove_file(p.tree().join(format!("misc/file{i:02}.c"))).unwrap();
    }
    let ran = p.run(CONTINUE).expect(2);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert!(!p.patches().join("2.42").exists());
}

#[test]
fn stray_files_are_refused_and_editor_leftovers_ignored() {
    let p = Project::new();
    stop_with_the_first_conflict_resolved(&p);
    // A backup with conflict markers inside, as an editor leaves it.
    let conflicted = std::fs::read(p.tree().join("elf/dl-load.c")).unwrap();
    std::fs::write(
        p.tree().join("NEWS~"),
        b"<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n",
    )
    .unwrap();
    std::fs::write(p.tree().join("elf/dl-load.c.orig"), &conflicted).unwrap();
    std::fs::write(p.tree().join("elf/notes.txt"), "my notes\n").unwrap();
    let ran = p.run(CONTINUE).expect(2);
    // The leftovers are not refused, nor named.
    assert_eq!(
        scrubbed(&p, &ran.stderr),
        not_ready(
            "1 file(s) in the work tree are neither in the release (with the patches so far) nor \
             touched by 0001-elf-Search-LD_FALLBACK_PATH-last.patch: elf/notes.txt. Remove them \
             (editor leftovers like *~, *.orig, *.rej and .#* are ignored)"
        )
    );

    std::fs::remove_file(p.tree().join("elf/notes.txt")).unwrap();
    let ran = p.run(CONTINUE).expect(2);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    p.resolve(1);
    p.run(CONTINUE).expect(0);
    for file in visible_files(&p.patches().join("2.42")) {
        let text = String::from_utf8_lossy(&file.1);
        assert!(
            !text.contains("NEWS~") && !text.contains(".orig"),
            "{}",
            file.0
        );
    }
}

#[test]
fn markers_are_searched_in_every_changed_file() {
    let p = Project::new();
    stop_with_the_first_conflict_resolved(&p);
    // README did not conflict; a marker pasted into it must not slip through.
    std::fs::write(
        p.tree().join("elf/rtld.c"),
        "<<<<<<< pasted\nint rtld_renamed;\n",
    )
    .unwrap();
    let ran = p.run(CONTINUE).expect(2);
    assert_eq!(scrubbed(&p, &ran.stderr), markers_remain("elf/rtld.c"));
}

#[test]
fn check_does_not_skip_a_series_that_lost_its_series_file() {
    let p = Project::new();
    std::fs::remove_file(p.patches().join("2.41/series")).unwrap();
    insta::assert_snapshot!(check_report(&p));
}

#[test]
fn check_and_status_import_nothing_and_name_what_is_missing() {
    let p = Project::new();
    p.add_series_of_a_release_not_imported();
    let before = visible_files(&p.store());
    insta::assert_snapshot!("import_nothing_check", check_report(&p));
    let ran = p.run(&["series", "status"]).expect(2);
    insta::assert_snapshot!(
        "import_nothing_status",
        releases_folded(&scrubbed(&p, &ran.both()), INVOLVED)
    );
    assert_eq!(
        visible_files(&p.store()),
        before,
        "the store must not change"
    );
}

#[test]
fn check_and_status_work_without_a_store_and_do_not_create_one() {
    let p = Project::new();
    let elsewhere = p.root().join("no-store.git");
    let ran = p.run_on_store(&elsewhere, &["series", "status"]);
    assert_eq!(ran.code, 2, "{ran:?}");
    insta::assert_snapshot!(releases_folded(&scrubbed(&p, &ran.both()), INVOLVED));
    assert!(!elsewhere.exists());
}

/// A store mounted read-only (bubblewrap, as the resolution matrix uses): check and status
/// work, and report no I/O error as "does not apply".
#[test]
fn check_and_status_work_on_a_read_only_store() {
    if loader_tests::host::find_program("bwrap").is_none() {
        assert!(
            !loader_tests::host::in_ci(),
            "bwrap is not installed (scripts/install-deps installs it)"
        );
        eprintln!("bwrap is not installed: skipping (this fails under CI)");
        return;
    }
    let p = Project::new();
    let store = p.store();
    let store = store.to_str().unwrap();
    let in_bwrap = |args: &[&str]| {
        let inner = p.command(args);
        let mut cmd = std::process::Command::new("bwrap");
        cmd.args([
            "--bind",
            "/",
            "/",
            "--ro-bind",
            store,
            store,
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--",
        ])
        .arg(inner.get_program())
        .args(inner.get_args());
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.output().unwrap()
    };
    let probe = in_bwrap(&["store", "list"]);
    if !probe.status.success() {
        // bwrap itself may be refused (no user namespaces in this container).
        assert!(!loader_tests::host::in_ci(), "{probe:?}");
        eprintln!(
            "bwrap cannot run here: skipping ({})",
            String::from_utf8_lossy(&probe.stderr)
        );
        return;
    }
    let check = in_bwrap(CHECK);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.code() == Some(2) && crate::common::output_passes_but_for_absent_series(&text),
        "{text}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let status = in_bwrap(&["series", "status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    insta::assert_snapshot!(
        "read_only_status",
        releases_folded(&scrubbed(&p, &text), INVOLVED)
    );
    // A rebase must write: it says the store is not writable, not that anything conflicts,
    // nor that `--check` (which just passed) refuses the series.
    let onto = in_bwrap(ONTO);
    let err = String::from_utf8_lossy(&onto.stderr);
    assert_eq!(onto.status.code(), Some(1), "{err}");
    // libgit2 names its temporary object file at random: the text up to it.
    let err = scrubbed(&p, &err);
    let (before_random_name, _) = err.split_once("tmp_object_git2_").unwrap_or((&err, ""));
    assert_eq!(
        error_lines(before_random_name),
        "error: the store ROOT/glibc.git is not writable, and a rebase keeps its commits there: \
         cannot commit 0001-elf-Search-LD_FALLBACK_PATH-last.patch on glibc 2.41 in the store: \
         cannot apply the diff: failed to create temporary file 'ROOT/glibc.git/objects/"
    );
}

#[test]
fn status_exits_2_when_a_series_does_not_apply() {
    let p = Project::new();
    p.edit_patch(PATCH_2, |text| {
        text.replace(" int rtld;\n", " int rtld2;\n")
    });
    let ran = p.run(&["series", "status"]).expect(2);
    insta::assert_snapshot!(
        "does_not_apply_status",
        releases_folded(&scrubbed(&p, &ran.both()), INVOLVED)
    );
    // The failed hunk is named with its file; the hint does not send you back to --check.
    insta::assert_snapshot!("does_not_apply_check", check_report(&p));
}

/// What `--check` reports (see [`check_report`]) on a fresh project whose first patch had
/// `edit` made to it by hand.
fn check_after_editing_patch_1<T: AsRef<[u8]>>(edit: impl FnOnce(&str) -> T) -> String {
    let p = Project::new();
    p.edit_patch(PATCH_1, edit);
    check_report(&p)
}

#[test]
fn parse_errors_name_the_real_cause() {
    let crlf = check_after_editing_patch_1(|text| text.replace('\n', "\r\n"));
    insta::assert_snapshot!("parse_error_crlf", crlf);
    let empty = check_after_editing_patch_1(|_| "");
    insta::assert_snapshot!("parse_error_empty", empty);
    let latin1 = check_after_editing_patch_1(|text| {
        // `Searché` as Latin-1 writes it, in the Subject: line.
        let mut bytes = text.replacen("Search", "Search\u{1}", 1).into_bytes();
        let at = bytes.iter().position(|b| *b == 1).unwrap();
        bytes[at] = 0xe9;
        bytes
    });
    insta::assert_snapshot!("parse_error_latin1", latin1);
    let cut = check_after_editing_patch_1(|text| text.trim_end().to_string());
    insta::assert_snapshot!("parse_error_cut", cut);
}

#[test]
fn a_one_byte_edit_is_shown_at_its_line_in_the_patch_that_changed() {
    let out = check_after_editing_patch_1(|text| text.replace("+    return 0;", "+    return 1;"));
    insta::assert_snapshot!(out);
}

/// The project's 2.41 series, and its commits on the release in the store (to build a bad
/// series on).
fn series_2_41(p: &Project) -> (model::Release, xtask::series::Series, Vec<git2::Oid>) {
    let release = model::Release::parse("2.41").unwrap();
    let series = xtask::series::Series::load(&p.patches().join("2.41")).unwrap();
    let base = p.t.store.release_commit(release).unwrap().unwrap();
    let commits = series.commit_on(p.t.repo(), base).unwrap();
    (release, series, commits)
}

/// The project's 2.41 series with a third patch, `message`, that makes the `edit` to the tree
/// of the second: a bad series to refuse.
fn with_a_third_patch(
    p: &Project,
    message: &str,
    edit: impl FnOnce(&git2::Repository, &mut git2::build::TreeUpdateBuilder),
) -> xtask::series::Series {
    let repo = p.t.repo();
    let (release, _, commits) = series_2_41(p);
    let last = repo.find_commit(commits[1]).unwrap();
    let mut update = git2::build::TreeUpdateBuilder::new();
    edit(repo, &mut update);
    let tree = repo
        .find_tree(update.create_updated(repo, &last.tree().unwrap()).unwrap())
        .unwrap();
    let sig = last.author();
    let bad = repo
        .commit(None, &sig, &sig, message, &tree, &[&last])
        .unwrap();
    xtask::series::Series::from_commits(repo, release, &[commits[0], commits[1], bad]).unwrap()
}

#[test]
fn the_scope_guard_refuses_deletions_and_paths_outside_it() {
    let p = Project::new();
    // A series whose third patch deletes files and touches README: as if a bug had
    // committed a half-deleted tree.
    let bad_series = with_a_third_patch(&p, "elf: Oops\n", |repo, update| {
        for i in 0..12 {
            update.remove(format!("misc/file{i:02}.c"));
        }
        update.upsert(
            "README",
            repo.blob(b"changed\n").unwrap(),
            git2::FileMode::Blob,
        );
    });
    let why = "0003-elf-Oops.patch deletes 12 file(s), which ROOT/patches/scope does not allow: \
               misc/file00.c, misc/file01.c, misc/file02.c, misc/file03.c, misc/file04.c, \
               misc/file05.c, misc/file06.c, misc/file07.c, misc/file08.c, misc/file09.c and 2 \
               more (if the patch must delete them, add `delete <path>` lines there); and changes \
               1 path(s) outside the scope declared in ROOT/patches/scope: README (if the patch \
               must change them, add them there)";
    let ran = import_replacing(&p, &bad_series).expect(1);
    assert_eq!(scrubbed(&p, &ran.stderr), import_refused(why));
    assert_eq!(
        xtask::series::Series::load(&p.patches().join("2.41"))
            .unwrap()
            .patches
            .len(),
        2,
        "the series is unchanged"
    );

    // The same series written by hand: --check and a rebase refuse it too.
    check_and_rebase_refuse(&p, &bad_series, why);
}

/// `series import --release 2.41 --replace` of `series`' patches, written as mails outside
/// `patches/` first.
fn import_replacing(p: &Project, series: &xtask::series::Series) -> Ran {
    let outside = p.root().join("mails");
    let _ = std::fs::remove_dir_all(&outside);
    std::fs::create_dir_all(&outside).unwrap();
    let files: Vec<String> = series
        .patches
        .iter()
        .map(|patch| {
            std::fs::write(outside.join(&patch.name), &patch.text).unwrap();
            outside.join(&patch.name).display().to_string()
        })
        .collect();
    let mut args = vec!["series", "import", "--release", "2.41", "--replace"];
    args.extend(files.iter().map(String::as_str));
    p.run(&args)
}

/// Moves the 2.41 series aside (to `.old-2.41`) as its writer does for a moment: its
/// directory, and its files before.
fn series_2_41_moved_aside(p: &Project) -> (std::path::PathBuf, Vec<(String, Vec<u8>)>) {
    let dir = p.patches().join("2.41");
    let before = visible_files(&dir);
    std::fs::rename(&dir, p.patches().join(".old-2.41")).unwrap();
    (dir, before)
}

#[test]
fn an_interrupted_series_write_is_recovered_and_said() {
    let p = Project::new();
    // Killed between the two renames of the fallback: the series is aside.
    let (dir, before) = series_2_41_moved_aside(&p);
    let ran = p.run(&["series", "status"]);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert_eq!(visible_files(&dir), before);
    // Killed after: the old copy is left beside the new series.
    copy_project(&dir, &p.patches().join(".old-2.41"));
    let ran = p.check();
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert!(hidden_entries(&p.patches()).is_empty());
}

#[test]
fn rejected_import_input_does_not_create_a_store() {
    let p = Project::new();
    let store = p.root().join("new.git");
    let missing = p.run_on_store(
        &store,
        &[
            "glibc",
            "import",
            "2.42",
            "--from",
            "tarball:/nonexistent.tar.xz",
        ],
    );
    assert_eq!(missing.code, 1, "{missing:?}");
    insta::assert_snapshot!(scrubbed(&p, &missing.stderr));
    let other = source_dir(
        &p.root().join("other"),
        "2.42",
        &[("README", "not glibc\n")],
    );
    let tar = tarball(&other, &p.root().join("other.tar.xz"));
    let wrong = p.run_on_store(
        &store,
        &[
            "glibc",
            "import",
            "2.42",
            "--from",
            &format!("tarball:{}", tar.display()),
        ],
    );
    assert_eq!(wrong.code, 1, "{wrong:?}");
    // Its progress lines carry timings: the error only.
    assert!(
        wrong.stderr.contains("does not hold glibc 2.42 as pinned"),
        "{wrong:?}"
    );
    assert!(!store.exists());
}

/// The last `--continue` of the rebase with `files` (name, text) the user keeps in `dir`,
/// where it writes: refused (exit 1), the files and the rebase state kept. What it says,
/// scrubbed.
fn continue_over_user_files(p: &Project, dir: &Path, files: &[(&str, &str)]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let ran = p.run(CONTINUE).expect(1);
    for (name, _) in files {
        assert!(dir.join(name).is_file(), "{name}");
    }
    assert_eq!(stopped_at(p.root()), Some(1), "the state is kept");
    scrubbed(p, &ran.stderr)
}

/// Writing a series replaces its directory whole; what the user keeps beside the series there
/// is not the command's to delete.
#[test]
fn a_series_write_deletes_no_file_it_did_not_write() {
    let p = Project::new();
    // The rebase onto 2.42, at its end: the series it writes goes where notes wait.
    stop_at_the_last_patch_resolved(&p);
    let refused = continue_over_user_files(
        &p,
        &p.patches().join("2.42"),
        &[
            ("NOTES.md", "plans for 2.42\n"),
            (".review-status", "half done\n"),
        ],
    );
    insta::assert_snapshot!(refused);

    // `series import --replace` replaces the series, not what lies beside it.
    let dir = p.patches().join("2.41");
    std::fs::write(dir.join("NOTES.md"), "why patch 2 exists\n").unwrap();
    std::fs::write(dir.join(".review-status"), "half done\n").unwrap();
    let series = xtask::series::Series::load(&dir).unwrap();
    let ran = import_replacing(&p, &series).expect(1);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert!(dir.join("NOTES.md").is_file());

    std::fs::remove_file(dir.join("NOTES.md")).unwrap();
    std::fs::remove_file(dir.join(".review-status")).unwrap();
    import_replacing(&p, &series).expect(0);
}

/// The same for the recorded resolutions, which are written with the series: both refused.
#[test]
fn a_resolutions_write_deletes_no_file_it_did_not_write() {
    let p = Project::new();
    stop_at_the_last_patch_resolved(&p);
    let records = p.patches().join("resolutions/2.42");
    let refused = continue_over_user_files(&p, &records, &[(".notes", "to review\n")]);
    insta::assert_snapshot!(refused);
    assert!(!p.patches().join("2.42").exists(), "{refused}");
    std::fs::remove_file(records.join(".notes")).unwrap();
    p.run(CONTINUE).expect(0);
    assert!(p.patches().join("2.42/series").is_file());
}

/// `cargo xtask ... | head -1`: the reader is gone before the command writes.
fn with_reader_gone(mut cmd: std::process::Command, stream: &str) -> Ran {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    match stream {
        "stdout" => cmd.stdout(writer).stderr(std::process::Stdio::piped()),
        _ => cmd.stderr(writer).stdout(std::process::Stdio::piped()),
    };
    let out = cmd.output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A closed pipe ends a command quietly, with the shell's status for it (128 + SIGPIPE) when
/// nothing else went wrong, never a panic; and a command that changes something finishes it.
#[test]
fn a_closed_pipe_ends_quietly_and_the_work_is_done() {
    let p = Project::new();
    let ran = with_reader_gone(p.command(&["store", "list"]), "stdout");
    assert_eq!(ran.code, 141, "{ran:?}");
    assert_eq!(ran.stderr, "", "{ran:?}");
    // A finding is the command's own status, read or not (the project lacks most series).
    let ran = with_reader_gone(p.command(CHECK), "stdout");
    assert_eq!(ran.code, 2, "{ran:?}");
    assert_eq!(
        scrubbed(&p, &ran.stderr),
        "error: the series in ROOT/patches need attention (see above)\n"
    );
    // An error still says what it is, in its own status, when stderr is the closed one.
    let ran = with_reader_gone(p.command(&["rebase-glibc", "--abort"]), "stderr");
    assert_eq!(ran.code, 1, "{ran:?}");
    // The rebase goes on to write the series though nobody reads its report.
    let ran = with_reader_gone(p.command(ONTO), "stdout");
    assert_eq!(ran.code, 2, "a stop needs attention, read or not: {ran:?}");
    p.resolve(0);
    p.run(CONTINUE).expect(2);
    p.resolve(1);
    let ran = with_reader_gone(p.command(CONTINUE), "stdout");
    assert_eq!(ran.code, 141, "{ran:?}");
    assert_eq!(ran.stderr, "", "{ran:?}");
    assert_eq!(stopped_at(p.root()), None);
    p.check();
    assert!(p.patches().join("2.42/series").is_file());
}

/// A system that refuses a thread (a container's pids limit) gets an error naming what could
/// not start, not a panic. A stack no address space can hold makes every thread fail to start.
#[test]
fn a_refused_thread_is_an_error_not_a_panic() {
    let p = Project::new();
    let top = source_dir(&p.root().join("src-new"), "2.43", &[("README", "2.43\n")]);
    let tar = tarball(&top, &p.root().join("glibc_2.43.tar.xz"));
    let from = format!("tarball:{}", tar.display());
    let mut import = p.command(&["store", "import", "2.43", "--from", &from]);
    import.env("RUST_MIN_STACK", (1u64 << 60).to_string());
    let ran = failing_with_backtraces_on(import);
    assert_eq!(
        error_lines(&scrubbed(&p, &ran.stderr)),
        "error: cannot import ROOT/glibc_2.43.tar.xz: cannot start a thread to compress the \
         release's objects: Resource temporarily unavailable (os error 11)\n",
        "{ran:?}"
    );
}

/// `cmd` run under a file size limit (`ulimit -f`) of `bytes`, its signal left as it is.
fn with_file_size_limit(mut cmd: std::process::Command, bytes: u64) -> std::process::Output {
    crate::common::limit_file_size(&mut cmd, bytes, false);
    cmd.output().unwrap()
}

/// A command that meets the file size limit says so and fails, and leaves nothing half
/// written; the limit's signal (SIGXFSZ) killed it without a word, mid-write. At 0 bytes the
/// rebase fails writing to the store; at 1000 its objects (compressed) fit, but not the
/// series copy its state keeps.
#[test]
fn a_file_size_limit_is_an_error_not_a_silent_death() {
    let p = Project::new();
    for bytes in [0, 1000] {
        let out = with_file_size_limit(p.command(ONTO), bytes);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{bytes}: {:?}: {stderr}",
            out.status
        );
        // What it was writing when the limit struck is libgit2's or ours, and said after this.
        let said = format!(
            "error: a file outgrew the file size limit (`ulimit -f`, now {bytes} bytes) of this \
             process: raise it and run the command again: "
        );
        assert!(error_lines(&stderr).starts_with(&said), "{bytes}: {stderr}");
        assert_eq!(stopped_at(p.root()), None, "{bytes}");
        assert_eq!(
            hidden_entries(&p.cache().join("rebase")),
            Vec::<String>::new(),
            "{bytes}: {stderr}"
        );
    }
    // The rebase starts again once the limit is raised.
    p.run(ONTO).expect(2);
}

/// The soft CPU time limit (`ulimit -t`) sends SIGXCPU, which killed a command without a
/// word; now it says why it ends, with status 1, and its checks' commands end with it. The
/// check here sends the signal itself, at a known moment, to cargo xtask: the parent of the
/// guard its commands run under (`util::child`).
#[test]
fn the_cpu_time_limit_ends_a_command_with_a_message() {
    let p = Project::new();
    let ran = p.run(&[
        "rebase-glibc",
        "--onto",
        "2.41",
        "--from",
        "2.41",
        "--exec",
        "kill -XCPU $(cut -d' ' -f4 /proc/$PPID/stat); sleep 10",
    ]);
    assert_eq!(ran.code, 1, "{ran:?}");
    // Its progress lines name a scratch directory of the run's pid: the error only.
    assert_eq!(
        error_lines(&ran.stderr),
        "error: this command used up the CPU time limit of its process (`ulimit -t`): raise it \
         and run the command again (what it was writing is left as it was, or whole; the next run \
         removes what it left)\n",
        "{ran:?}"
    );
    // What it left is the next run's to remove, as after any crash.
    let ran = p.check();
    assert_eq!(
        hidden_entries(&p.cache().join("rebase")),
        Vec::<String>::new(),
        "{ran:?}"
    );
}

/// A marker line is the marker alone too: git writes `=======` with nothing after it, and a
/// hand-edited file may keep a bare `<<<<<<<`. Each is refused, whatever follows it.
#[test]
fn every_form_of_a_marker_line_is_refused() {
    let p = Project::new();
    stop_at_first_conflict(&p);
    for marker in [
        "=======",
        "<<<<<<<",
        ">>>>>>>",
        "|||||||",
        "======= ",
        "<<<<<<<\t",
    ] {
        p.resolve(0);
        let path = p.tree().join("elf/dl-load.c");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replacen("static int line3;\n", &format!("{marker}\n"), 1),
        )
        .unwrap();
        let ran = p.run(CONTINUE).expect(2);
        assert_eq!(
            scrubbed(&p, &ran.stderr),
            markers_remain("elf/dl-load.c"),
            "{marker:?}"
        );
        assert_eq!(stopped_at(p.root()), Some(0), "{marker:?}");
    }
    // Longer runs are text, not markers (a row of `=` under a heading).
    p.resolve(0);
    let path = p.tree().join("elf/dl-load.c");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen("static int line3;\n", "/* ==========\n   <<<<<<<< */\n", 1),
    )
    .unwrap();
    p.run(CONTINUE).expect(2);
    assert_eq!(stopped_at(p.root()), Some(1));
}

/// A series whose patch adds a marker line (accepted by an older `--continue`, or written by
/// hand) is refused by `--check`, by a rebase from it and by `series import`.
#[test]
fn a_series_carrying_a_marker_is_refused_everywhere() {
    let p = Project::new();
    let repo = p.t.repo();
    let (release, _, commits) = series_2_41(&p);
    let marked = p.t.commit(
        commits[0],
        "elf: Parse LD_FALLBACK_PATH\n",
        &[("elf/rtld.c", "int rtld;\n=======\nint fallback;\n")],
        1_764_000_100,
    );
    let bad = xtask::series::Series::from_commits(repo, release, &[commits[0], marked]).unwrap();
    let why = "0002-elf-Parse-LD_FALLBACK_PATH.patch adds conflict markers, left from a merge: \
               elf/rtld.c line 2: `=======`";
    let ran = import_replacing(&p, &bad).expect(1);
    assert_eq!(scrubbed(&p, &ran.stderr), import_refused(why));
    check_and_rebase_refuse(&p, &bad, why);
    assert!(!p.patches().join("2.42").exists());
}

/// A recorded resolution whose result keeps a marker line is refused by `--check` (a replay of
/// it would put the marker back into the series).
#[test]
fn check_refuses_a_recorded_resolution_that_keeps_a_marker() {
    let p = Project::new();
    publish_record(
        &p,
        "0002-elf-Parse-LD_FALLBACK_PATH.patch",
        "elf/rtld.c",
        Kind::Conflict,
        "<<<<<<< a\nint rtld_renamed;\n=======\nint fallback;\n>>>>>>> b\n",
        "int rtld_renamed;\n=======\nint fallback;\n",
    );
    insta::assert_snapshot!(check_report(&p));
}

/// What a resolution may change in the work tree is text: a symlink (out of the tree, say)
/// or a mode change is refused by name, and the state is left as it was.
#[test]
fn a_symlink_or_a_mode_change_in_the_work_tree_is_refused() {
    let p = Project::new();
    stop_at_first_conflict(&p);
    let file = p.tree().join("elf/dl-load.c");
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &file).unwrap();
    let ran = p.run(CONTINUE).expect(2);
    assert_eq!(
        scrubbed(&p, &ran.stderr),
        not_ready(
            "elf/dl-load.c is a symlink (to /etc/passwd): make it the file it was (a series \
             holds regular files)"
        )
    );
    assert_eq!(stopped_at(p.root()), Some(0));

    std::fs::remove_file(&file).unwrap();
    p.resolve(0);
    crate::common::make_executable(&file);
    let ran = p.run(CONTINUE).expect(2);
    assert_eq!(
        scrubbed(&p, &ran.stderr),
        not_ready(
            "elf/dl-load.c changed mode from 100644 to 100755: `chmod -x elf/dl-load.c` puts it \
             back (a resolution changes text, not modes)"
        )
    );
    assert_eq!(stopped_at(p.root()), Some(0));

    // With the mode put back, the resolution goes through.
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    p.run(CONTINUE).expect(2);
    assert_eq!(stopped_at(p.root()), Some(1));
}

/// A series whose patch changes a file's mode, adds a symlink or adds a file with the FSF
/// copyright line is refused by `--check`, a rebase from it, and `series import`, like one
/// that leaves the scope.
#[test]
fn a_series_changing_a_mode_or_adding_a_symlink_is_refused() {
    let p = Project::new();
    let (_, series, _) = series_2_41(&p);
    for (what, path, mode, content) in [
        (
            "0003-elf-Odd.patch changes the mode of elf/rtld.c from 100644 to 100755: a series \
             holds regular files and keeps their modes",
            "elf/rtld.c",
            git2::FileMode::BlobExecutable,
            &b"int rtld;\nint fallback;\n"[..],
        ),
        (
            "0003-elf-Odd.patch adds a symlink elf/passwd (to /etc/passwd): a series holds \
             regular files and keeps their modes",
            "elf/passwd",
            git2::FileMode::Link,
            b"/etc/passwd",
        ),
        // One copyright form, in the carried series as in the mails.
        (
            "0003-elf-Odd.patch adds elf/tst-odd.c with the FSF copyright line of glibc's \
             template: the series is contributed under the DCO, so the files it adds say \
             `Copyright The GNU Toolchain Authors.`",
            "elf/tst-odd.c",
            git2::FileMode::Blob,
            b"/* Odd.\n   Copyright (C) 2026 Free Software Foundation, Inc.  */\n",
        ),
    ] {
        let bad = with_a_third_patch(&p, "elf: Odd\n", |repo, update| {
            update.upsert(path, repo.blob(content).unwrap(), mode);
        });
        let ran = import_replacing(&p, &bad).expect(1);
        assert_eq!(scrubbed(&p, &ran.stderr), import_refused(what));
        check_and_rebase_refuse(&p, &bad, what);
        series.write(&p.patches().join("2.41")).unwrap();
    }
}

/// A source series that `--check` does not pass is not moved: a patch cut short by hand
/// (its trailer kept, so it still parses and applies) would be written smaller, and the
/// recorded resolutions of what it lost dropped as stale.
#[test]
fn a_rebase_refuses_a_source_series_that_check_does_not_pass() {
    let p = Project::new();
    p.edit_patch(PATCH_1, |text| {
        // The patch changes NEWS, then elf/dl-load.c: cut the second file's part.
        let cut = text.find("diff --git a/elf/dl-load.c").unwrap();
        format!("{}-- \nld-fallback\n", &text[..cut])
    });
    insta::assert_snapshot!("source_series_drift", check_report(&p));
    for args in [
        ONTO,
        &[
            "update-release",
            "2.42",
            "--from",
            "2.41",
            "--no-verify",
            "--no-build-check",
        ],
        &[
            "format-series",
            "--release",
            "2.41",
            "--author",
            "A B <a@gnu.org>",
        ],
    ] {
        let ran = p.run(args).expect(1);
        insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
        assert!(!p.patches().join("2.42").exists(), "{args:?}");
        assert_eq!(stopped_at(p.root()), None, "{args:?}");
    }
    // Meant as it is: the files are taken as the series, in place, and check again.
    let dir = p.patches().join("2.41");
    let files: Vec<String> = xtask::series::Series::load(&dir)
        .unwrap()
        .patches
        .iter()
        .map(|patch| dir.join(&patch.name).display().to_string())
        .collect();
    let mut args = vec!["series", "import", "--release", "2.41", "--replace"];
    args.extend(files.iter().map(String::as_str));
    p.run(&args).expect(0);
    p.check();
}

/// A `series` line is a file of the series' own directory: an absolute path (or one that
/// climbs out) names a file nothing checks.
#[test]
fn a_series_line_naming_a_file_elsewhere_is_refused() {
    let p = Project::new();
    let dir = p.patches().join("2.41");
    let name = "0002-elf-Parse-LD_FALLBACK_PATH.patch";
    let elsewhere = p.root().join(name);
    std::fs::rename(dir.join(name), &elsewhere).unwrap();
    let series = std::fs::read_to_string(dir.join("series")).unwrap();
    for (line, form) in [
        (elsewhere.display().to_string(), "absolute"),
        (format!("../{name}"), "climbing"),
    ] {
        if line.starts_with("..") {
            std::fs::rename(&elsewhere, p.patches().join(name)).unwrap();
        }
        std::fs::write(dir.join("series"), series.replace(name, &line)).unwrap();
        insta::assert_snapshot!(format!("series_line_{form}_check"), check_report(&p));
        let ran = p.run(ONTO).expect(1);
        insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    }
}

/// Publishes one recorded resolution for the rebase onto 2.42: of `path` in `patch`, from
/// what 2.41's series `produced` to what the user `kept`.
fn publish_record(p: &Project, patch: &str, path: &str, kind: Kind, produced: &str, kept: &str) {
    let from = model::Release::parse("2.41").unwrap();
    let record = Resolution::make(
        patch,
        path,
        kind,
        from,
        produced.as_bytes(),
        Some(kept.as_bytes()),
    )
    .unwrap();
    Resolutions { list: vec![record] }
        .publish(&p.patches(), model::Release::parse("2.42").unwrap())
        .unwrap();
}

/// Recorded resolutions `--check` refuses (a path outside the scope, say) are not replayed by
/// a rebase either: it refuses to start.
#[test]
fn a_rebase_refuses_recorded_resolutions_that_check_refuses() {
    let p = Project::new();
    publish_record(
        &p,
        "0001-elf-Search-LD_FALLBACK_PATH-last.patch",
        "README",
        Kind::FixUp,
        "glibc 2.42\n",
        "glibc 2.42, patched\n",
    );
    insta::assert_snapshot!("record_outside_scope_check", check_report(&p));
    let ran = p.run(ONTO).expect(1);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert_eq!(stopped_at(p.root()), None);
}

/// Every supported release is accounted for: one whose directory is gone gets a line, and
/// the check does not pass.
#[test]
fn check_names_a_supported_release_whose_series_is_gone() {
    let p = Project::new();
    // The whole report, made from model::supported() (not a snapshot: a new release adds a line):
    // the findings first, then the series that pass.
    let mut expected: String = model::supported()
        .iter()
        .filter(|release| release.version() != "2.41")
        .map(|release| no_series_line(release.version()) + "\n")
        .collect();
    expected.push_str(SERIES_2_41_OK);
    assert_eq!(scrubbed(&p, &p.run(CHECK).expect(2).stdout), expected);
    // Without those lines, the report is the 2.41 series' line alone.
    assert_eq!(check_report(&p), SERIES_2_41_OK);
}

/// `verify check-support` reads the series `$LD_FALLBACK_PATCHES` names, like every other
/// command, not the checkout's; a supported release without one is a finding, as `--check`
/// says (it was a failure to load, exit status 1).
#[test]
fn check_support_reads_the_patches_the_environment_names() {
    let p = Project::new();
    let ran = p.run(&["verify", "check-support"]).expect(2);
    assert!(
        scrubbed(&p, &ran.stderr).contains(
            "ROOT/patches/2.36: FAILED (`rebase-glibc --check` says more): ROOT/patches/2.36/series does not exist"
        ),
        "{ran:?}"
    );
}

/// A series file that lists no patch is a damaged series, not one with nothing to check, and
/// not a failure of the check itself.
#[test]
fn check_refuses_a_series_that_lists_no_patch() {
    let p = Project::new();
    let file = p.patches().join("2.41/series");
    let text = std::fs::read_to_string(&file).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, kept).unwrap();
    insta::assert_snapshot!(check_report(&p));
}

/// A `patches/resolutions` the check cannot read as a directory is a finding, never "no
/// records". (An unreadable one is an ERROR; root reads through any mode, so a file stands
/// in for it here.)
#[test]
fn check_refuses_a_resolutions_path_that_is_not_a_directory() {
    let p = Project::new();
    let root = p.patches().join("resolutions");
    std::fs::write(&root, "not a directory\n").unwrap();
    insta::assert_snapshot!(check_report(&p));
}

/// A write that fails halfway (the disk fills between the series and its records: here the
/// file size limit stops the records) leaves both as they were, and the state to go on from.
#[test]
fn a_series_and_its_records_are_written_both_or_neither() {
    let p = Project::new();
    stop_at_the_last_patch_resolved(&p);
    // The series' files are under 900 bytes, the records over.
    let out = with_file_size_limit(p.command(CONTINUE), 900);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!p.patches().join("2.42").exists(), "{stderr}");
    assert!(!p.patches().join("resolutions").exists(), "{stderr}");
    assert_eq!(hidden_entries(&p.patches()), Vec::<String>::new());
    assert_eq!(stopped_at(p.root()), Some(1));
    let ran = p.run(&["rebase-glibc", "--abort"]).expect(0);
    insta::assert_snapshot!(scrubbed(&p, &ran.both()));
}

/// Two commands on one rebase: an `--abort` while a `--continue` is writing waits for it,
/// and then says what is true (there is nothing left to abort), instead of dropping the state
/// under it and saying patches/ is unchanged while the series is being written.
#[test]
fn an_abort_waits_for_a_continue_on_the_same_rebase() {
    let p = Project::new();
    let started = p.root().join("check-started");
    let exec = format!("touch {}; sleep 2", started.display());
    p.run(&[ONTO, &["--exec", &exec]].concat()).expect(2);
    p.resolve(0);
    p.run(CONTINUE).expect(2);
    p.resolve(1);
    let _ = std::fs::remove_file(&started);
    let continuing = p
        .command(CONTINUE)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() {
        assert!(std::time::Instant::now() < deadline, "the check never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let abort = p.run(&["rebase-glibc", "--abort"]);
    let continued = continuing.wait_with_output().unwrap();
    assert_eq!(
        continued.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&continued.stderr)
    );
    assert!(p.patches().join("2.42/series").is_file());
    // The abort came second: the rebase it would drop was over.
    assert_eq!(abort.code, 1, "{abort:?}");
    assert!(
        abort
            .stderr
            .contains("no rebase onto glibc 2.42 is in progress")
            && !abort.stdout.contains("unchanged"),
        "{abort:?}"
    );
    // How long it waited is in its lines: not a fixed text.
    assert!(abort.stderr.contains("waiting for"), "{abort:?}");
}

/// What a writer of a series leaves for a moment (its old directory moved aside, on a
/// filesystem that cannot swap in one step) is a leftover only once nobody works on that
/// series: another command's recovery must not "restore" it under a live writer.
#[test]
fn recovery_leaves_a_series_alone_while_its_writer_works() {
    let p = Project::new();
    let (dir, before) = series_2_41_moved_aside(&p);
    let lock = xtask::util::lock::acquire(&p.cache().join("rebase/2.41.lock"), "test").unwrap();
    let ran = p.run(&["series", "status"]);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert!(!dir.exists() && p.patches().join(".old-2.41").exists());
    drop(lock);
    let ran = p.run(&["series", "status"]);
    insta::assert_snapshot!(scrubbed(&p, &ran.stderr));
    assert_eq!(visible_files(&dir), before);
}

/// `series` written by hand into patches/2.41: `--check` calls it FAILED for `why` (a patch's
/// file name and what is wrong with it, the project's directory written `ROOT`), and a rebase
/// from it refuses it for that reason.
fn check_and_rebase_refuse(p: &Project, series: &xtask::series::Series, why: &str) {
    series.write(&p.patches().join("2.41")).unwrap();
    assert_eq!(
        check_report(p),
        format!(
            "FAILED  ROOT/patches/2.41: {why}\n        restore the files from git (`git diff -- \
             ROOT/patches/2.41` shows what changed)\n"
        )
    );
    let ran = p.run(ONTO).expect(1);
    assert_eq!(
        scrubbed(p, &ran.stderr),
        format!(
            "error: refusing to use the series in ROOT/patches/2.41: `cargo xtask rebase-glibc \
             --check` does not pass it: {why}\n"
        )
    );
}

/// What `series import` of a bad series written as mails says (scrubbed) for `why`.
fn import_refused(why: &str) -> String {
    format!(
        "error: refusing to import the series; ROOT/patches/2.41 is unchanged: ROOT/mails/{why}\n"
    )
}
