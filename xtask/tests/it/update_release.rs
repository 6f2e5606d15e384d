//! `cargo xtask update-release` through the real binary on a synthetic project: a stop at
//! each conflict with the command that goes on, `--continue` after a fix and after a kill,
//! `--abort`, and the second run unattended. `--no-verify --no-build-check` throughout: the
//! builds and the verification are `verify`'s and the build check's, tested where they live;
//! a test never starts a glibc build.

use crate::common::project::*;

const UPDATE: &[&str] = &["update-release", "2.42", "--no-verify", "--no-build-check"];
const CONTINUE: &[&str] = &["update-release", "2.42", "--continue"];
const ABORT: &[&str] = &["update-release", "2.42", "--abort"];

#[test]
fn an_update_stops_at_each_conflict_goes_on_and_runs_unattended_the_next_time() {
    let p = Project::new();
    let ran = p.run(UPDATE).expect(2);
    insta::assert_snapshot!("first_stop", p.normalised(&ran.both()));
    assert!(!p.patches().join("2.42").exists());

    // Asked again before the fix: it says where it stopped, and does nothing.
    let ran = p.run(UPDATE).expect(2);
    insta::assert_snapshot!("asked_again", p.normalised(&ran.both()));
    assert_eq!(stopped_at(p.root()), Some(0));

    p.resolve(0);
    p.run(CONTINUE).expect(2);
    assert_eq!(stopped_at(p.root()), Some(1));
    p.resolve(1);
    let ran = p.run(CONTINUE).expect(0);
    insta::assert_snapshot!("written", p.normalised(&ran.both()));
    let first = visible_files(&p.patches().join("2.42"));
    let records = visible_files(&p.patches().join("resolutions/2.42"));
    assert_eq!(records.len(), 2, "{records:?}");
    p.check();

    // The next update of the release needs nobody.
    std::fs::remove_dir_all(p.patches().join("2.42")).unwrap();
    let ran = p.run(&[UPDATE, &["--from", "2.41"]].concat()).expect(0);
    insta::assert_snapshot!("unattended", p.normalised(&ran.both()));
    assert_eq!(visible_files(&p.patches().join("2.42")), first);
    assert_eq!(
        visible_files(&p.patches().join("resolutions/2.42")),
        records
    );
}

/// The update stopped at its second conflict, the first resolved.
fn stop_at_the_second_conflict(p: &Project) {
    p.run(UPDATE).expect(2);
    p.resolve(0);
    p.run(CONTINUE).expect(2);
}

#[test]
fn a_killed_update_goes_on_with_the_same_command() {
    let p = Project::new();
    stop_at_the_second_conflict(&p);
    p.resolve(1);
    let uninterrupted = p.root().parent().unwrap().join(format!(
        "{}-uninterrupted",
        p.root().file_name().unwrap().to_string_lossy()
    ));
    copy_project(p.root(), &uninterrupted);
    run_in(&uninterrupted, CONTINUE).expect(0);

    for point in ["together:swapped", "rebase:written"] {
        let case = p.root().parent().unwrap().join(format!(
            "{}-{}",
            p.root().file_name().unwrap().to_string_lossy(),
            point.replace(':', "-")
        ));
        copy_project(p.root(), &case);
        let out = command_in(&case, CONTINUE)
            .env("LD_FALLBACK_FAULT", format!("{point}:1"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "killed at {point}");
        run_in(&case, CONTINUE).expect(0);
        for dir in ["patches/2.42", "patches/resolutions/2.42"] {
            assert_eq!(
                visible_files(&case.join(dir)),
                visible_files(&uninterrupted.join(dir)),
                "{dir} after a kill at {point}"
            );
        }
        std::fs::remove_dir_all(&case).unwrap();
    }
    std::fs::remove_dir_all(&uninterrupted).unwrap();
}

#[test]
fn an_abort_leaves_patches_as_it_was() {
    let p = Project::new();
    let before = visible_files(&p.patches());
    p.run(UPDATE).expect(2);
    let ran = p.run(ABORT).expect(0);
    insta::assert_snapshot!("aborted", p.normalised(&ran.both()));
    assert_eq!(stopped_at(p.root()), None);
    assert_eq!(visible_files(&p.patches()), before);
    let ran = p.run(CONTINUE).expect(1);
    insta::assert_snapshot!("nothing_to_continue", p.normalised(&ran.both()));
}

#[test]
fn exec_runs_after_each_patch_of_an_update() {
    let p = Project::new();
    stop_at_the_second_conflict(&p);
    p.run(ABORT).expect(0);
    // With a check that fails on patch 1's fallback search: the stop names the check.
    let ran = p
        .run(&[UPDATE, &["--exec", "! grep -q fallback_path elf/dl-load.c"]].concat())
        .expect(2);
    // The recorded resolution of patch 1's conflict is not there yet (the abort dropped
    // it with the state): the rebase stops at the conflict first.
    insta::assert_snapshot!("exec_conflict_first", p.normalised(&ran.both()));
    p.resolve(0);
    let ran = p.run(CONTINUE).expect(2);
    insta::assert_snapshot!("exec_check_fails", p.normalised(&ran.both()));
}

#[test]
fn a_verifying_update_continued_without_verification_writes_the_candidate() {
    let p = Project::new();
    // Verification asked for, but the rebase stops before it: no build starts.
    let ran = p
        .run(&["update-release", "2.42", "--no-build-check"])
        .expect(2);
    insta::assert_snapshot!("verifying_stop", p.normalised(&ran.both()));
    p.resolve(0);
    p.run(&[CONTINUE, &["--no-verify"]].concat()).expect(2);
    p.resolve(1);
    let ran = p.run(&[CONTINUE, &["--no-verify"]].concat()).expect(0);
    insta::assert_snapshot!("continued_without_verification", p.normalised(&ran.both()));
    assert!(p.patches().join("2.42/series").is_file());
    assert!(
        !p.cache().join("update/2.42").exists(),
        "the candidate is gone"
    );
    p.check();
}

/// An update that verifies, through both conflicts, killed at `fault` in its last
/// `--continue`: before any build (a test never starts one; an empty PATH makes sure one
/// could not start if the kill did not come).
fn verifying_update_killed_at(p: &Project, fault: &str) {
    p.run(&["update-release", "2.42", "--no-build-check"])
        .expect(2);
    p.resolve(0);
    p.run(CONTINUE).expect(2);
    p.resolve(1);
    let empty = p.root().join("no-tools");
    std::fs::create_dir_all(&empty).unwrap();
    let out = p
        .command(CONTINUE)
        .env("PATH", &empty)
        .env("LD_FALLBACK_FAULT", fault)
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(9),
        "not killed at {fault}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An update that verifies writes nothing to `patches/` before the verification passed: the
/// recorded resolutions wait in the candidate with the series. The run is killed as soon as
/// the rebase wrote the candidate.
#[test]
fn an_update_writes_no_recorded_resolution_before_its_verification() {
    let p = Project::new();
    verifying_update_killed_at(&p, "rebase:written:1");
    assert!(!p.patches().join("2.42").exists());
    assert!(
        !p.patches().join("resolutions/2.42").exists(),
        "recorded resolutions were written before the series was verified"
    );
    let ran = p.run(ABORT).expect(0);
    insta::assert_snapshot!("aborted_candidate", p.normalised(&ran.both()));
    assert!(!p.patches().join("resolutions/2.42").exists());
}

/// What a human fixed in an update whose verification did not pass (here: killed once the
/// rebase was over, as verification begins) is not lost with the candidate: the next update
/// replays it, and goes through unattended.
#[test]
fn the_next_update_replays_what_a_failed_one_recorded() {
    let p = Project::new();
    verifying_update_killed_at(&p, "rebase-remove:unlinked:1");
    let ran = p.run(UPDATE).expect(0);
    insta::assert_snapshot!("replayed_after_failure", p.normalised(&ran.both()));
    assert_eq!(
        visible_files(&p.patches().join("resolutions/2.42")).len(),
        2
    );
    p.check();
}

/// A version without a row can only be added: there is nothing of it to go on with or give
/// up; a row is not rewritten by `--debian-version`; text that is no version is refused.
#[test]
fn a_version_without_a_row_is_added_or_refused_with_the_reason() {
    let p = Project::new();
    let newest = model::Release::newest();
    let (major, minor) = model::version_numbers(newest.version()).unwrap();
    let next = format!("{major}.{}", minor + 1);
    let ran = p.run(&["update-release", &next, "--continue"]).expect(1);
    assert!(
        ran.stderr.contains(&format!(
            "there is no update of glibc {next} to go on with or give up: glibc {next} has no row in data/releases.json"
        )),
        "{}",
        ran.both()
    );
    let ran = p
        .run(&[
            "update-release",
            "2.42",
            "--debian-version",
            "2.42-1",
            "--no-verify",
        ])
        .expect(1);
    assert!(
        ran.stderr
            .contains("glibc 2.42 has a row already (Debian version "),
        "{}",
        ran.both()
    );
    let ran = p.run(&["update-release", "2.x"]).expect(1);
    assert!(
        ran.stderr.contains("`2.x` is not a glibc version (`X.Y`)"),
        "{}",
        ran.both()
    );
    // Nothing was written: the table is the checkout's.
    assert!(!p.patches().join(&next).exists());
}
