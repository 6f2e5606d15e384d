//! Every message true, and no exit 0 on failure: the real binary on synthetic projects, one
//! test per input once found to end in a wrong status or a misleading line. Each asserts
//! the exit status (0 ok, 2 needs attention, 1 failure) and what the command says.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::project::*;

/// `cmd` with its stdout into `/dev/full`: every write fails with ENOSPC.
fn into_a_full_disk(mut cmd: Command) -> Ran {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = cmd.stdout(full).stderr(Stdio::piped()).output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A report written into a full disk is cut short: the command fails and says why (it used
/// to end 0 with nothing said, or with its finding's status). Only a reader that left ends
/// quietly (`safety::a_closed_pipe_ends_quietly_and_the_work_is_done`).
#[test]
fn a_write_error_on_the_output_fails_the_command_with_its_cause() {
    let p = Project::new();
    let ran = into_a_full_disk(p.command(&["store", "list"])).expect(1);
    assert_eq!(
        ran.stderr,
        "error: cannot write to standard output, so what the command printed there is cut short: No space left on device (os error 28)\n"
    );
    // clap's help, too, a command's as well (`cargo xtask` has no version to print).
    for args in [&["--help"][..], &["glibc", "--help"], &["help", "patches"]] {
        let ran = into_a_full_disk(p.command(args)).expect(1);
        assert_eq!(
            ran.stderr, "error: cannot write the help: No space left on device (os error 28)\n",
            "{args:?}"
        );
    }
    // A finding (exit status 2) whose report is lost is a failure too.
    let ran = into_a_full_disk(p.command(CHECK)).expect(1);
    assert!(
        ran.stderr.ends_with(
            "error: cannot write to standard output, so what the command printed there is cut short: No space left on device (os error 28)\n"
        ),
        "{ran:?}"
    );
}

/// The file size limit behind `> out.txt` is named as such.
#[test]
fn the_file_size_limit_on_the_output_is_named() {
    let p = Project::new();
    let out = p.root().join("out.txt");
    let mut cmd = p.command(&["store", "list"]);
    cmd.stdout(std::fs::File::create(&out).unwrap());
    crate::common::limit_file_size(&mut cmd, 10, false);
    let out = cmd.stderr(Stdio::piped()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: a file outgrew the file size limit (`ulimit -f`, now 10 bytes) of this process: raise it and run the command again: cannot write to standard output, so what the command printed there is cut short: File too large (os error 27)\n"
    );
}

/// The file size limit met where libgit2 writes an object says no more than "no error": a
/// patch applied to a file whose object outgrows the limit. format-series and the rebase
/// name the limit all the same (they said "cannot apply the diff: no error").
#[test]
fn the_file_size_limit_is_named_where_git_says_nothing() {
    // Letters that do not compress: an object about as large as the file.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let letters: String = (0..60_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect();
    let p = Project::with_dl_load_top(&format!("/* {letters} */\n"));
    let out = p.root().join("out");
    let format_series = [
        "format-series",
        "--release",
        "2.41",
        "--author",
        "Ada Lovelace <ada@gnu.org>",
        "--out",
        out.to_str().unwrap(),
    ];
    for args in [&format_series[..], ONTO] {
        let mut cmd = p.command(args);
        crate::common::limit_file_size(&mut cmd, 20_000, false);
        let ran = Ran::of(cmd.output().unwrap()).expect(1);
        assert!(
            ran.stderr.starts_with(
                "error: a file outgrew the file size limit (`ulimit -f`, now 20000 bytes) of this process: raise it and run the command again: "
            ),
            "{args:?}: {}",
            ran.stderr
        );
    }
}

/// The table of `series status` after `patches/` was replaced by `what`.
fn status_with_patches(p: &Project, patches: &Path) -> Ran {
    let mut cmd = p.command(&["series", "status"]);
    cmd.env("LD_FALLBACK_PATCHES", patches);
    let out = cmd.output().unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every row of a table whose rows all say `state` and `detail`.
fn table_of(state: &str, detail: &str) -> String {
    let mut table = format!(
        "{:<8} {:<16} {}\n",
        "release", "state", "series base / details"
    );
    for release in model::supported() {
        table.push_str(&format!("{:<8} {state:<16} {detail}\n", release.version()));
    }
    table
}

/// `series status` with no series at all says what `patches/` is, and needs attention, as
/// `rebase-glibc --check` does (it said "nothing in ..." and exited 0); a file in its place
/// fails the command, as it fails `--check`, and so does a directory the environment names
/// that does not exist
/// (`a_patches_dir_the_environment_names_that_does_not_exist_fails_every_command`).
#[test]
fn status_without_a_series_says_what_patches_is_and_exits_2() {
    let p = Project::new();
    // A file there is bad input, as `--check` says too (exit status 1), before any row.
    let file = p.root().join("a-file");
    std::fs::write(&file, "").unwrap();
    let ran = status_with_patches(&p, &file).expect(1);
    assert_eq!(ran.stdout, "");
    assert_eq!(
        ran.stderr,
        format!("error: {} is not a directory: `$LD_FALLBACK_PATCHES` (or the checkout's patches/) names the directory of the series\n", file.display())
    );
    let empty = p.root().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let ran = status_with_patches(&p, &empty).expect(2);
    assert_eq!(
        ran.stdout,
        table_of("no series", &format!("{} holds no series", empty.display()))
    );
}

/// The commands' old names (`glibc`, `patches`, `build-glibc`), in scripts and notes written
/// before each was named for its module, run the same command and say the same.
#[test]
fn old_command_names_run_the_same_commands() {
    let p = Project::new();
    for (old, new) in [
        (&["patches", "status"][..], &["series", "status"][..]),
        (&["glibc", "list"], &["store", "list"]),
        (
            &["build-glibc", "--release", "9.99"],
            &["sysroot", "--release", "9.99"],
        ),
    ] {
        let (old_ran, new_ran) = (p.run(old), p.run(new));
        assert_eq!(old_ran.code, new_ran.code, "{old:?}");
        assert_eq!(old_ran.both(), new_ran.both(), "{old:?}");
    }
}

/// A release that is imported but lost its series is not "not imported" when the release
/// missing from the store is the one whose series was tried on it.
#[test]
fn a_row_names_the_release_that_is_missing_not_its_own() {
    let p = Project::new();
    // The newest series is 2.43's, whose release the store lacks; 2.42 is there, series-less.
    p.add_series_of_a_release_not_imported();
    let ran = p.run(&["series", "status"]).expect(2);
    let row = ran.stdout.lines().find(|l| l.starts_with("2.42 ")).unwrap();
    let store = p.store();
    assert_eq!(
        row,
        format!(
            "2.42     no series        no series of its own, and patches/2.43 cannot be tried on it: glibc 2.43 is not in the store {}; import it with `cargo xtask --store {} store import 2.43`, or run `cargo xtask series status --import-missing`",
            store.display(),
            store.display()
        )
    );
}

/// `cargo xtask explain` on `--root /`: `args` after the program.
fn explain(program: &str, args: &[&str]) -> Ran {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("explain")
        .arg(program)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// This machine's `true`, a dynamic program every Debian machine has; a test that needs it
/// fails under CI when it is not there.
fn host_program() -> Option<&'static str> {
    let path = "/usr/bin/true";
    if Path::new(path).is_file() {
        return Some(path);
    }
    assert!(std::env::var_os("CI").is_none(), "{path} is missing");
    eprintln!("SKIPPED: {path} is missing");
    None
}

/// A newline or an escape sequence in a fallback entry is printed escaped: the line stays
/// one line and the terminal's colours stay as they were.
#[test]
fn control_characters_in_values_are_escaped() {
    let Some(program) = host_program() else {
        return;
    };
    let value = "/opt/a\nb:/opt/\x1b[31mred";
    // Modelled as patched: each entry the loader would search, escaped.
    let ran = explain(program, &["--flavour", "patched", "--fallback-path", value]);
    assert!(!ran.both().contains('\x1b'), "{ran:?}");
    assert_eq!(
        fallback_lines(&ran),
        ["  fallback: /opt/a\\nb/ /opt/\\u{1b}[31mred/"]
    );
    // The machine's own loader (unpatched): the value it ignores, escaped as well.
    let ran = explain(
        program,
        &["--flavour", "unpatched", "--fallback-path", value],
    );
    assert!(!ran.both().contains('\x1b'), "{ran:?}");
    let line = fallback_lines(&ran);
    assert_eq!(line.len(), 1, "{ran:?}");
    assert!(
        line[0]
            .starts_with("  fallback: /opt/a\\nb:/opt/\\u{1b}[31mred (LD_FALLBACK_PATH) IGNORED"),
        "{ran:?}"
    );
    // An error quoting a value says it escaped too.
    let ran = explain("/no/such\x1b[2Jprogram", &[]).expect(1);
    assert_eq!(
        ran.stderr,
        "error: cannot open /no/such\\u{1b}[2Jprogram in /: no such file\n"
    );
}

/// A usage error of `cargo xtask explain` exits 1, as `ld-fallback-explain`'s does (its
/// `output` test): 2 is what the explanation finds, never a command line it could not parse.
#[test]
fn explain_usage_errors_exit_1() {
    for args in [
        &["--no-such-option"][..],
        &["--target", "riscv64"],
        &["--unpatched", "--flavour", "patched"],
    ] {
        let ran = explain("/usr/bin/true", args).expect(1);
        assert!(
            ran.stderr.starts_with("error: "),
            "{args:?}: {}",
            ran.stderr
        );
    }
}

/// The `fallback:` lines of an explanation.
fn fallback_lines(ran: &Ran) -> Vec<&str> {
    ran.stdout
        .lines()
        .filter(|l| l.starts_with("  fallback:"))
        .collect()
}

/// A program that cannot be read is said to be unreadable, with the system's reason, not
/// to be something other than an ELF program.
#[test]
fn explain_says_why_a_program_cannot_be_read() {
    let dir = tempfile::TempDir::new().unwrap();
    let program = dir.path().display().to_string();
    let ran = explain(&program, &[]).expect(1);
    assert_eq!(
        ran.stderr,
        format!("error: cannot read {program} in /: it is a directory, not a regular file (an ELF object is read from a regular file only)\n")
    );
}

/// A dlopen from a caller that is not loaded is not followed: the summary does not say that
/// every library is found, and the command fails naming the request.
#[test]
fn explain_does_not_claim_every_library_after_an_unfollowed_dlopen() {
    let Some(program) = host_program() else {
        return;
    };
    let ran = explain(program, &["--dlopen", "nosuchcaller:libm.so.6"]).expect(1);
    let tail: Vec<&str> = ran
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("not followed"))
        .take(2)
        .collect();
    assert_eq!(
        tail,
        [
            "not followed: dlopen libm.so.6 from nosuchcaller: nosuchcaller is not loaded (name a loaded library by path, soname or file name)",
            "every library of the requests followed is found; 1 request not followed",
        ]
    );
    assert!(
        ran.stderr.ends_with(
            "error: a --dlopen was not followed (dlopen libm.so.6 from nosuchcaller: nosuchcaller is not loaded (name a loaded library by path, soname or file name)): --dlopen CALLER:NAME names its caller by a loaded library's path, soname or file name\n"
        ),
        "{ran:?}"
    );
}

/// A patch file that is a symlink out of patches/ is refused by every command that reads
/// the series, with a message naming the link (`--check` said ok, `format-series` mailed what
/// it pointed at, and `--onto` called it "not part of its series").
#[test]
fn a_patch_that_is_a_symlink_is_refused_by_every_command_naming_it() {
    let p = Project::new();
    let name = "0002-elf-Parse-LD_FALLBACK_PATH.patch";
    let patch = p.patches().join("2.41").join(name);
    let elsewhere = p.root().join("elsewhere.patch");
    std::fs::rename(&patch, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &patch).unwrap();
    let out = p.root().join("mails");
    let out = out.display().to_string();
    let format_series = [
        "format-series",
        "--release",
        "2.41",
        "--author",
        "Ada Lovelace <ada@gnu.org>",
        "--out",
        &out,
    ];
    // What each says, whole, one after the other.
    let said: String = [
        (CHECK, 2),
        (&format_series[..], 1),
        (ONTO, 1),
        (&["series", "status"][..], 2),
        (&["sysroot", "--release", "2.41"][..], 1),
    ]
    .into_iter()
    .map(|(args, code)| {
        let ran = p.run(args).expect(code);
        scrubbed(&p, &format!("$ {}\n{}", args.join(" "), ran.both()))
    })
    .collect();
    insta::assert_snapshot!(crate::common::releases_folded(&said, INVOLVED));
}

/// A FIFO (or a socket) in the work tree of a stopped rebase is the tree not being ready:
/// exit status 2, naming it, as README documents (it was exit 1, as if reading had failed).
#[test]
fn a_fifo_in_the_work_tree_is_not_ready_exit_2() {
    let p = Project::new();
    p.run(ONTO).expect(2);
    p.resolve(0);
    let fifo = p.tree().join("elf/pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let ran = p.run(CONTINUE).expect(2);
    assert_eq!(
        ran.stderr,
        format!(
            "error: the work tree {} is not ready to continue:\n  - neither a file, a directory nor a symlink, so git cannot hold it: {} (a FIFO). Remove it (a series holds regular files)\nthen run `cargo xtask rebase-glibc --continue` again (the rebase state is unchanged)\n",
            p.tree().display(),
            fifo.display()
        )
    );
    assert_eq!(stopped_at(p.root()), Some(0));
    std::fs::remove_file(&fifo).unwrap();
    p.run(CONTINUE).expect(2);
    assert_eq!(stopped_at(p.root()), Some(1));
    // A work tree that is gone is not ready either (it was exit 1).
    std::fs::remove_dir_all(p.tree()).unwrap();
    let ran = p.run(CONTINUE).expect(2);
    assert_eq!(
        ran.stderr,
        format!(
            "error: the work tree {} is gone; drop the rebase with --abort and start it again\n",
            p.tree().display()
        )
    );
}

/// `sysroot` runs the guard a rebase and `format-series` run: a series `--check`
/// refuses (here a patch edited by hand, which still applies) is not built.
#[test]
fn build_glibc_refuses_a_series_that_check_refuses() {
    let p = Project::new();
    p.edit_patch(PATCH_2, |text| {
        text.replace("Parse LD_FALLBACK_PATH", "Parse it")
    });
    let ran = p.run(&["sysroot", "--release", "2.41"]).expect(1);
    // The whole output: the refusal, and nothing built before it.
    insta::assert_snapshot!(scrubbed(&p, &ran.both()));
}

/// One judge of a series, `rebase-glibc --check`'s. A series file with CRLF
/// line endings, and a patch that lost one of its file diffs, still apply, but are not what
/// their commits export: DRIFT for `--check`, and the same verdict from `series status`
/// (which said "applies cleanly", exit 0).
#[test]
fn status_and_check_judge_a_drifted_series_alike() {
    let crlf = |p: &Project| {
        let path = p.patches().join("2.41/series");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace('\n', "\r\n")).unwrap();
        "series"
    };
    let without_news = |p: &Project| {
        p.edit_patch(PATCH_1, |text| {
            let start = text.find("diff --git a/NEWS").unwrap();
            let end = start + text[start + 1..].find("diff --git").unwrap() + 1;
            format!("{}{}", &text[..start], &text[end..])
        });
        PATCH_1
    };
    for edit in [&crlf as &dyn Fn(&Project) -> &'static str, &without_news] {
        let p = Project::new();
        let file = edit(&p);
        let check = p.run(CHECK).expect(2);
        assert!(
            check.stdout.contains("DRIFT   ") && check.stdout.contains(file),
            "{file}: {}",
            check.both()
        );
        let status = p.run(&["series", "status"]).expect(2);
        let row = status
            .stdout
            .lines()
            .find(|l| l.starts_with("2.41 "))
            .unwrap()
            .to_string();
        assert!(
            row.starts_with("2.41     drift            glibc-2.41 ")
                && row.contains("applies, but its files are not what its commits export: ")
                && row.contains(file),
            "{file}: {row}"
        );
        // check-support judges the series it describes with the same judge (the checkout's
        // record describes other series: those findings are beside the point here).
        let support = p.run(&["verify", "check-support"]).expect(2);
        let drift = format!(
            "{}: DRIFT (`rebase-glibc --check` says more): ",
            p.patches().join("2.41").display()
        );
        assert!(
            support
                .stderr
                .lines()
                .any(|l| l.trim_start().starts_with(&drift) && l.contains(file)),
            "{file}: {}",
            support.both()
        );
    }
}

/// `$LD_FALLBACK_PATCHES` naming nothing is bad input, the same for every
/// command (status and `--check` exited 2, check-support 1, and `--check` told to make every
/// release's series with `update-release`).
#[test]
fn a_patches_dir_the_environment_names_that_does_not_exist_fails_every_command() {
    let p = Project::new();
    let gone = p.root().join("no-such-dir");
    for args in [
        &["series", "status"][..],
        CHECK,
        &["verify", "check-support"],
    ] {
        let mut cmd = p.command(args);
        cmd.env("LD_FALLBACK_PATCHES", &gone);
        let ran = Ran::of(cmd.output().unwrap()).expect(1);
        assert_eq!(ran.stdout, "", "{args:?}");
        assert_eq!(
            ran.stderr,
            format!("error: `$LD_FALLBACK_PATCHES` names {}, which does not exist: name the directory of the series (or unset it for the checkout's patches/)\n", gone.display()),
            "{args:?}"
        );
    }
}

/// A path the user named that is not there, or not what it must be, is an
/// error (exit status 1) naming it, not every cell SKIPPED or every release "not imported"
/// (both ended 0).
#[test]
fn a_path_the_user_named_that_is_not_there_is_an_error() {
    let p = Project::new();
    let gone = p.root().join("no-such-dir");
    let ran = p
        .run(&["nix-stack", "--nixpkgs", gone.to_str().unwrap()])
        .expect(1);
    assert_eq!(
        ran.stderr,
        format!(
            "error: --nixpkgs {} does not exist: name the directory holding one nixpkgs checkout per pin\n",
            gone.display()
        )
    );
    // A directory holding no checkout of any pin the cells need (every cell was SKIPPED,
    // exit 0): the directory is the mistake.
    let empty = p.root().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let ran = p
        .run(&[
            "nix-stack",
            "--nixpkgs",
            empty.to_str().unwrap(),
            "--release",
            "all",
        ])
        .expect(1);
    assert!(
        ran.stderr.ends_with(&format!(
            "error: --nixpkgs {} holds no nixpkgs checkout of the pins of the releases asked for (DIR/<commit>/, a checkout at each release's nixpkgs commit in data/releases.json): name the directory holding them\n",
            empty.display()
        )),
        "{}",
        ran.both()
    );
    let file = p.root().join("a-file");
    std::fs::write(&file, "").unwrap();
    let mut cmd = p.command(&["nix-stack"]);
    cmd.env("LD_FALLBACK_NIXPKGS", &file);
    let ran = Ran::of(cmd.output().unwrap()).expect(1);
    assert_eq!(
        ran.stderr,
        format!(
            "error: $LD_FALLBACK_NIXPKGS {} is not a directory: name the directory holding one nixpkgs checkout per pin\n",
            file.display()
        )
    );
    // The cache: a file, and a symlink loop.
    let looped = p.root().join("loop");
    std::os::unix::fs::symlink("loop", &looped).unwrap();
    for (cache, said) in [
        (
            &file,
            "which is not a directory: name the cache's directory",
        ),
        (
            &looped,
            "which cannot be looked at: Too many levels of symbolic links (os error 40)",
        ),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.args(["store", "list"])
            .env("LD_FALLBACK_CACHE", cache)
            .env_remove("LD_FALLBACK_STORE");
        let ran = Ran::of(cmd.output().unwrap()).expect(1);
        assert_eq!(
            ran.stderr,
            format!(
                "error: `$LD_FALLBACK_CACHE` names {}, {said}\n",
                cache.display()
            )
        );
    }
}

/// `--store` naming another git repository (one with a branch) is not a
/// store without releases: importing into it would mix the two.
#[test]
fn a_store_that_is_another_repository_is_refused() {
    let p = Project::new();
    let other = p.root().join("other.git");
    let repo = git2::Repository::init_bare(&other).unwrap();
    let tree = repo.treebuilder(None).unwrap().write().unwrap();
    let tree = repo.find_tree(tree).unwrap();
    let who = git2::Signature::now("A U Thor", "author@example.com").unwrap();
    repo.commit(Some("HEAD"), &who, &who, "not glibc", &tree, &[])
        .unwrap();
    let branch = repo.head().unwrap().name().unwrap().to_string();
    let ran = p.run_on_store(&other, &["store", "list"]).expect(1);
    assert_eq!(
        ran.stderr,
        format!(
            "error: {} is not a glibc source store (a bare git repository of glibc-X.Y tags): it holds {branch}, which no store holds (only glibc-X.Y tags): name the store with --store or $LD_FALLBACK_STORE, or leave both unset for the cache's\n",
            other.display()
        )
    );
    // An empty one is a store without releases yet, as a new store is.
    let empty = p.root().join("empty.git");
    git2::Repository::init_bare(&empty).unwrap();
    p.run_on_store(&empty, &["store", "list"]).expect(0);
}

/// Standard error is not the report. `explain` with stderr into a full
/// disk ends with the status of what it found (it ended 1 for its lost timing line), its
/// report on stdout whole; stdout into a full disk is still a failure
/// (`a_write_error_on_the_output_fails_the_command_with_its_cause`).
#[test]
fn a_full_stderr_leaves_the_exit_status_to_say_what_was_found() {
    let p = Project::new();
    let me = std::env::current_exe().unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = p
        .command(&["explain", me.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(full)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("every library is found"), "{stdout}");
}

/// Git's configuration that cannot be read (here, a `$HOME/.gitconfig`
/// that does not parse) is said as that, not as a store that is none.
#[test]
fn an_unreadable_git_configuration_is_not_blamed_on_the_store() {
    let p = Project::new();
    let home = p.root().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join(".gitconfig"), "[user\n bad").unwrap();
    let mut cmd = p.command(&["store", "list"]);
    cmd.env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_CONFIG_GLOBAL");
    let ran = Ran::of(cmd.output().unwrap()).expect(1);
    assert!(
        ran.stderr.starts_with(&format!(
            "error: cannot read git's configuration, which opening the store {} needs: ",
            p.store().display()
        )),
        "{}",
        ran.stderr
    );
}

/// Of two `--abort`s at once, the one that loses must not remove the state
/// the other is removing and call it "a rebase state a killed run left": the other is alive,
/// holding the release's lock (here stopped between unlinking the state and removing it).
#[test]
fn an_abort_beside_a_live_one_does_not_call_it_killed() {
    use std::io::Read;
    let p = Project::new();
    p.run(ONTO).expect(2);
    let mut winner = p.command(&["rebase-glibc", "--abort"]);
    winner
        .env("LD_FALLBACK_FAULT", "rebase-remove:unlinked:1:stop")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let winner = winner.spawn().unwrap();
    let stat = format!("/proc/{}/stat", winner.id());
    let started = std::time::Instant::now();
    // `pid (comm) T ...`: stopped.
    while !std::fs::read_to_string(&stat)
        .unwrap()
        .rsplit_once(") ")
        .is_some_and(|(_, rest)| rest.starts_with('T'))
    {
        assert!(
            started.elapsed().as_secs() < 20,
            "the first --abort never stopped"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut loser = p.command(&["rebase-glibc", "--abort"]);
    let mut loser = loser
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It recovers what it may while the stopped one holds the lock.
    let mut stderr = loser.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let lost = loser.wait().unwrap();
    // SAFETY: kill(2) on a child of this test.
    unsafe {
        libc::kill(winner.id() as libc::pid_t, libc::SIGCONT);
    }
    let won = winner.wait_with_output().unwrap();
    assert_eq!(won.status.code(), Some(0), "{won:?}");
    assert_eq!(lost.code(), Some(1));
    let said = said.join().unwrap();
    assert!(!said.contains("a killed run left"), "{said}");
    // The state is unlinked already: nothing is in progress for it to abort.
    assert!(said.contains("no rebase is in progress"), "{said}");
}

/// A series file that lists a patch twice is said to, not reported as what
/// applying it a second time meets ("NEWS is blob ...").
#[test]
fn a_patch_listed_twice_is_said_to_be() {
    let p = Project::new();
    let series = p.patches().join("2.41/series");
    let text = std::fs::read_to_string(&series).unwrap();
    std::fs::write(&series, format!("{text}{PATCH_1}\n")).unwrap();
    let ran = p.run(CHECK).expect(2);
    let said = format!(
        "FAILED  {}: {} lists `{PATCH_1}` twice: a series names each patch once",
        p.patches().join("2.41").display(),
        series.display()
    );
    assert!(ran.stdout.contains(&said), "{}", ran.both());
    let ran = p.run(&["series", "status"]).expect(2);
    assert!(
        ran.stdout.contains("twice: a series names each patch once"),
        "{}",
        ran.both()
    );
}

/// A byte order mark at the start of a series file (as some Windows
/// editors write one) is said to be one, never printed raw.
#[test]
fn a_byte_order_mark_in_a_series_file_is_named_not_printed() {
    let p = Project::new();
    let series = p.patches().join("2.41/series");
    let text = std::fs::read_to_string(&series).unwrap();
    std::fs::write(&series, format!("\u{feff}{text}")).unwrap();
    for args in [CHECK, &["series", "status"]] {
        let ran = p.run(args).expect(2);
        assert!(!ran.both().contains('\u{feff}'), "{args:?}: {}", ran.both());
        assert!(
            ran.stdout.contains(&format!(
                "{} starts with a byte order mark (U+FEFF)",
                series.display()
            )),
            "{args:?}: {}",
            ran.both()
        );
    }
}

/// Clap's message for a value it refuses quotes the value escaped, as
/// every message does: a newline in `--release` does not break its line, an escape sequence
/// reaches no terminal (it was written as typed).
#[test]
fn a_refused_option_value_is_quoted_escaped() {
    let p = Project::new();
    let ran = p.run(&["sysroot", "--release", "2.4\x1b[31m\nX"]).expect(1);
    assert!(
        ran.stderr
            .starts_with("error: invalid value '2.4\\u{1b}[31m\\nX' for '--release <X.Y>'\n"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains('\x1b'), "{}", ran.stderr);
}

/// `series status`'s row of `release` and `rebase-glibc --check`'s line of `dir`, each
/// asserted to end in `code`.
fn both_judges(p: &Project, release: &str, dir: &Path, code: i32) -> (String, String) {
    let status = p.run(&["series", "status"]).expect(code);
    let row = status
        .stdout
        .lines()
        .find(|l| l.starts_with(&format!("{release} ")))
        .unwrap_or_else(|| panic!("no row of {release}:\n{}", status.both()))
        .to_string();
    let check = p.run(CHECK).expect(code);
    let prefix = format!("{}: ", dir.display());
    let line = check
        .stdout
        .lines()
        .find(|l| l.get(8..).is_some_and(|rest| rest.starts_with(&prefix)))
        .unwrap_or_else(|| panic!("no line of {}:\n{}", dir.display(), check.both()))
        .to_string();
    assert!(!check.stdout.contains("ERROR"), "{}", check.both());
    (row, line)
}

/// One judge of a series, also when what it is made of is not what it must be: `patches/scope`
/// a FIFO or a directory (`--check` said it could not read it, exit 1, where resolutions are
/// recorded; `series status`, "does not apply", exit 2), a release's directory a symlink to
/// a directory outside the repository (both said "ok") or a FIFO (`series status` called the
/// release "not imported"). Each is the series' defect, refused by both with exit status 2.
#[test]
fn status_and_check_refuse_an_unfit_scope_or_series_directory_alike() {
    let p = Project::new();
    std::fs::create_dir_all(p.patches().join("resolutions/2.42")).unwrap();
    let scope = p.patches().join("scope");
    let text = std::fs::read_to_string(&scope).unwrap();
    let series = p.patches().join("2.41");
    let fifo = |path: &Path| {
        let made = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(made.success());
    };
    std::fs::remove_file(&scope).unwrap();
    fifo(&scope);
    let (row, line) = both_judges(&p, "2.41", &series, 2);
    let said = format!(
        "cannot read {}: it is a FIFO (a named pipe)",
        scope.display()
    );
    assert!(
        row.contains(&said) && row.contains("does not apply"),
        "{row}"
    );
    assert!(line.starts_with("FAILED") && line.contains(&said), "{line}");
    std::fs::remove_file(&scope).unwrap();
    std::fs::create_dir(&scope).unwrap();
    let (row, line) = both_judges(&p, "2.41", &series, 2);
    let said = format!("cannot read {}: it is a directory", scope.display());
    assert!(row.contains(&said), "{row}");
    assert!(line.contains(&said), "{line}");
    std::fs::remove_dir(&scope).unwrap();
    std::fs::write(&scope, text).unwrap();

    // The series itself a link to a copy outside the repository.
    let outside = tempfile::TempDir::new().unwrap();
    let copy = outside.path().join("2.41");
    std::fs::rename(&series, &copy).unwrap();
    std::os::unix::fs::symlink(&copy, &series).unwrap();
    let (row, line) = both_judges(&p, "2.41", &series, 2);
    let said = format!(
        "{}: it is a symlink (to {}): a series lives in a directory of patches/ itself",
        series.display(),
        copy.display()
    );
    assert!(
        row.contains("does not apply") && row.contains(&said),
        "{row}"
    );
    assert!(line.starts_with("FAILED") && line.contains(&said), "{line}");
    std::fs::remove_file(&series).unwrap();
    std::fs::rename(&copy, &series).unwrap();

    // A FIFO where a release's series would be.
    let named = p.patches().join("2.44");
    fifo(&named);
    let (row, line) = both_judges(&p, "2.44", &named, 2);
    let said = "not a directory: the series of glibc 2.44 lives in a directory of that name";
    assert!(
        row.contains("does not apply") && row.contains(said),
        "{row}"
    );
    assert!(line.starts_with("FAILED") && line.contains(said), "{line}");
}

/// A newline or a tab in a value the user gives is never printed raw (escape sequences were
/// escaped already; these broke or shifted the line quoting the value): a path with one, or
/// any other value with one (`--base`), is refused, quoted escaped, whether an option or an
/// environment variable names it (`--store`, `--upstream`, `--out`, whose mails format-series
/// lists one a line, `--from`, `$LD_FALLBACK_*`).
#[test]
fn a_control_character_in_a_value_is_refused_and_said_escaped() {
    let p = Project::new();
    let weird = p.root().join("no\nsuch\tdir");
    let weird = weird.to_str().unwrap();
    let escaped = model::printable(weird).into_owned();
    let out = p.root().join("out");
    let out = out.to_str().unwrap();
    let format_series = |extra: &[&str]| {
        let mut args = vec![
            "format-series",
            "--release",
            "2.41",
            "--author",
            "Ada Lovelace <ada@gnu.org>",
        ];
        args.extend(extra);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let tarball = format!("tarball:{weird}");
    // `--store` on its own (the project's commands name theirs).
    let ran = Ran::of(
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["--store", weird, "store", "list"])
            .env("LD_FALLBACK_CACHE", p.cache())
            .output()
            .unwrap(),
    )
    .expect(1);
    assert!(
        !ran.both().contains(weird) && ran.both().contains(&escaped),
        "{}",
        ran.both()
    );
    let options: Vec<(Vec<String>, &str)> = vec![
        (format_series(&["--base", "x\ny", "--out", out]), "x\ny"),
        (format_series(&["--upstream", weird, "--out", out]), weird),
        (format_series(&["--out", weird]), weird),
        (
            ["store", "import", "2.44", "--from", &tarball]
                .map(String::from)
                .to_vec(),
            weird,
        ),
    ];
    for (args, value) in options {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ran = p.run(&args).expect(1);
        let said = ran.both();
        assert!(
            !said.contains('\t') && !said.contains(value),
            "{args:?}: {said}"
        );
        assert!(
            said.contains(model::printable(value).as_ref()),
            "{args:?}: {said}"
        );
    }
    for variable in [
        "LD_FALLBACK_STORE",
        "LD_FALLBACK_PATCHES",
        "LD_FALLBACK_CACHE",
        "LD_FALLBACK_GLIBC_UPSTREAM",
        "LD_FALLBACK_MANUAL_PATCH",
        "LD_FALLBACK_NIXPKGS",
    ] {
        let args = match variable {
            "LD_FALLBACK_GLIBC_UPSTREAM" | "LD_FALLBACK_MANUAL_PATCH" => {
                format_series(&["--out", out])
            }
            "LD_FALLBACK_NIXPKGS" => vec!["nix-stack".to_string()],
            _ => vec!["patches".to_string(), "status".to_string()],
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = if variable == "LD_FALLBACK_STORE" {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
            cmd.args(&args)
                .env("LD_FALLBACK_PATCHES", p.patches())
                .env("LD_FALLBACK_CACHE", p.cache());
            cmd
        } else {
            p.command(&args)
        };
        cmd.env(variable, weird).env_remove("CI");
        let ran = Ran::of(cmd.output().unwrap()).expect(1);
        let said = ran.both();
        assert!(
            !said.contains('\t') && !said.contains(weird),
            "{variable}: {said}"
        );
        assert!(said.contains(&escaped), "{variable}: {said}");
        assert!(said.contains(variable), "{variable}: {said}");
    }
}

/// `debian-stack --debian-revision` checks one release's other revision: a revision of
/// another release, or several releases, are refused before anything is fetched.
#[test]
fn a_debian_revision_of_another_release_is_refused() {
    let p = Project::new();
    let ran = p
        .run(&[
            "debian-stack",
            "--release",
            "2.41",
            "--debian-revision",
            "2.42-13",
        ])
        .expect(1);
    assert!(
        ran.stderr
            .contains("--debian-revision 2.42-13 is no Debian revision of glibc 2.41"),
        "{ran:?}"
    );
    let ran = p
        .run(&[
            "debian-stack",
            "--release",
            "all",
            "--debian-revision",
            "2.41-12",
        ])
        .expect(1);
    assert!(ran.stderr.contains("give one --release X.Y"), "{ran:?}");
}
