//! A file that never ends, given where a command reads a file: a FIFO nobody writes (whose
//! plain `open` waits for a writer) and `/dev/zero` (which a plain read takes until memory
//! runs out). Every command ends within a second with exit status 1 and a message naming the file,
//! or, for a file of `patches/`, reports it as the series' defect.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::project::{Project, Ran, PATCH_1};

/// `cmd`, killed and failed when it runs past a second.
fn within_a_second(mut cmd: Command) -> Ran {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(1) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{cmd:?} ran past a second");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ran::of(child.wait_with_output().unwrap())
}

fn fifo_in(dir: &Path) -> PathBuf {
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    fifo
}

const FIFO_IS: &str = "it is a FIFO (a named pipe), not a regular file";
const ZERO_IS: &str = "it is a character device, not a regular file";

/// Both never-ending files as `arg` of `args` (`{}` stands for it): exit status 1, and
/// `said` (with `{}` the file) in the error.
fn refused(p: &Project, args: &[&str], said: &str) {
    let fifo = fifo_in(p.root());
    for (file, kind) in [(fifo.as_path(), FIFO_IS), (Path::new("/dev/zero"), ZERO_IS)] {
        let file = file.to_str().unwrap();
        let args: Vec<String> = args.iter().map(|a| a.replace("{}", file)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ran = within_a_second(p.command(&args)).expect(1);
        let said = said.replace("{}", file);
        assert!(
            ran.stderr.starts_with(&format!("error: {said}: {kind}")),
            "{args:?}:\n{}",
            ran.stderr
        );
    }
    std::fs::remove_file(fifo).unwrap();
}

#[test]
fn verify_merge_refuses_a_record_that_never_ends() {
    refused(
        &Project::new(),
        &["verify", "merge", "{}"],
        "cannot read {}",
    );
}

/// A file as large as a record may be (16 MiB) or a patch (64 MiB) that is of another kind
/// altogether is refused from its first bytes, saying what it should start with, before the
/// rest is read: `verify merge` (a record is a JSON object), `series import` (a patch is a
/// mail) and `store import --from tarball:` (a tarball is compressed or a tar archive).
#[test]
fn a_large_file_of_another_kind_is_refused_from_its_head() {
    let p = Project::new();
    let junk = p.root().join("junk");
    for (args, limit, said) in [
        (
            &["verify", "merge", "{}"][..],
            16 << 20,
            "it is not a support record (`cargo xtask verify --json` output): it does not start with `{`, as the JSON object of a record does",
        ),
        (
            &["series", "import", "--release", "2.41", "--replace", "{}"],
            64 << 20,
            "it is not a mail as git format-patch writes one: it does not start with `From <commit> Mon Sep 17 00:00:00 2001`",
        ),
    ] {
        std::fs::write(&junk, "junk").unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&junk)
            .unwrap()
            .set_len(limit)
            .unwrap();
        let file = junk.to_str().unwrap();
        let args: Vec<String> = args.iter().map(|a| a.replace("{}", file)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ran = within_a_second(p.command(&args)).expect(1);
        assert!(ran.stderr.contains(said), "{args:?}: {}", ran.stderr);
    }
    // A tarball neither compressed nor a tar archive: its first header says so (the tar
    // reader's complaint quoted its bytes, newlines and all).
    std::fs::write(&junk, "not a tarball\n".repeat(100)).unwrap();
    let from = format!("tarball:{}", junk.display());
    let ran = within_a_second(p.command(&["store", "import", "2.44", "--from", &from])).expect(1);
    assert_eq!(
        ran.stderr.lines().last().unwrap(),
        format!(
            "error: {} is not a tarball: it starts with neither a compressed stream (xz, gzip, bzip2, zstd) nor a tar header (`ustar` at byte 257)",
            junk.display()
        )
    );
}

#[test]
fn patches_import_refuses_a_patch_that_never_ends() {
    refused(
        &Project::new(),
        &["series", "import", "--release", "2.41", "--replace", "{}"],
        "cannot read {}",
    );
}

#[test]
fn explain_refuses_a_program_that_never_ends() {
    refused(&Project::new(), &["explain", "{}"], "cannot read {} in /");
}

/// A patch of `patches/` that is a FIFO is the series' defect, found at once: `--check` and
/// `series status` report it and go on (exit status 2).
#[test]
fn a_series_file_that_never_ends_is_a_defect_of_the_series() {
    let p = Project::new();
    let patch = p.patches().join("2.41").join(PATCH_1);
    std::fs::remove_file(&patch).unwrap();
    let made = Command::new("mkfifo").arg(&patch).status().unwrap();
    assert!(made.success());
    let said = format!("cannot read {}: {FIFO_IS}", patch.display());
    let ran = within_a_second(p.command(&["rebase-glibc", "--check"])).expect(2);
    assert!(ran.stdout.contains(&said), "{}", ran.both());
    let ran = within_a_second(p.command(&["series", "status"])).expect(2);
    assert!(ran.stdout.contains(&said), "{}", ran.both());
}

/// A tarball is streamed to its decompressor, not read whole, but it must be a regular file
/// all the same, and the refusal says what it is, not that it "does not exist".
#[test]
fn glibc_import_refuses_a_tarball_that_never_ends() {
    refused(
        &Project::new(),
        &["store", "import", "2.44", "--from", "tarball:{}"],
        "cannot read {}",
    );
}

/// format-series reads upstream's manual chapter from the sender's checkout and the manual
/// patch (`$LD_FALLBACK_MANUAL_PATCH`): neither may be a file that never ends.
#[test]
fn format_series_refuses_a_manual_that_never_ends() {
    let p = Project::new();
    let out = p.root().join("out");
    let out = out.to_str().unwrap();
    let args = [
        "format-series",
        "--release",
        "2.41",
        "--author",
        "Ada Lovelace <ada@gnu.org>",
        "--out",
        out,
    ];
    let chapter = p.root().join("upstream-glibc/manual/dynlink.texi");
    let text = std::fs::read(&chapter).unwrap();
    let fifo = fifo_in(p.root());
    for file in [fifo.as_path(), Path::new("/dev/zero")] {
        std::fs::remove_file(&chapter).unwrap();
        std::os::unix::fs::symlink(file, &chapter).unwrap();
        let ran = within_a_second(p.command(&args)).expect(1);
        assert!(
            ran.stderr.starts_with(&format!(
                "error: cannot read {}: it is a ",
                chapter.display()
            )),
            "{}",
            ran.stderr
        );
    }
    std::fs::remove_file(&chapter).unwrap();
    std::fs::write(&chapter, text).unwrap();
    let mut command = p.command(&args);
    command.env("LD_FALLBACK_MANUAL_PATCH", &fifo);
    let ran = within_a_second(command).expect(1);
    assert!(
        ran.stderr
            .starts_with(&format!("error: cannot read {}: {FIFO_IS}", fifo.display())),
        "{}",
        ran.stderr
    );
    assert!(!Path::new(out).exists(), "nothing is written");
}

/// A stopped rebase's marker that never ends (a FIFO where a rebase that was writing its
/// series leaves `finishing`): `--abort` reads no such marker, and ends at once (it waited
/// for a writer).
#[test]
fn a_rebase_marker_that_never_ends_is_not_waited_for() {
    let p = Project::new();
    p.run(crate::common::project::ONTO).expect(2);
    let marker = p.cache().join("rebase/2.42/finishing");
    let made = Command::new("mkfifo").arg(&marker).status().unwrap();
    assert!(made.success());
    let ran = within_a_second(p.command(&["rebase-glibc", "--abort"])).expect(0);
    assert!(
        ran.stdout.contains("patches/ is unchanged"),
        "{}",
        ran.both()
    );
}

/// An edit of a file's text.
type Edit<'a> = dyn Fn(&str) -> String + 'a;

/// A line of 10 MB in a series file (2 MB in a patch), or a name of 300 KB in a series file: a clear
/// finding, not the line printed back (the series file's was an I/O error that printed 20 MB).
#[test]
fn a_line_of_10_mb_is_refused_without_printing_it() {
    let long = "x".repeat(10 << 20);
    let appended = |text: &str| format!("{text}{long}\n");
    let in_the_message = |text: &str| {
        let line = "x".repeat(2 << 20);
        text.replacen("\n\n", &format!("\n\n{line}\n"), 1)
    };
    // Under the series file's limit (1 MiB), a name no file can have.
    let named = |text: &str| format!("{text}{}.patch\n", "x".repeat(300_000));
    let edits: [(&str, &Edit<'_>); 3] = [
        ("series", &appended),
        ("series", &named),
        (PATCH_1, &in_the_message),
    ];
    for (file, edit) in edits {
        let p = Project::new();
        let path = p.patches().join("2.41").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, edit(&text)).unwrap();
        for args in [&["rebase-glibc", "--check"][..], &["series", "status"]] {
            let ran = p.run(args);
            assert!(
                ran.stdout.len() + ran.stderr.len() < 10_000,
                "{file}, {args:?}: {} bytes of output (exit status {})",
                ran.stdout.len() + ran.stderr.len(),
                ran.code
            );
            assert_eq!(ran.code, 2, "{file}, {args:?}: {}", ran.both());
        }
    }
}

/// `cargo xtask <args>` on `p` with `$HOME` at `home` and nothing else telling git where its
/// configuration is.
fn with_home(p: &Project, home: &Path, args: &[&str]) -> Command {
    let mut cmd = p.command(args);
    cmd.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_CONFIG_GLOBAL")
        .env_remove("GIT_CONFIG_SYSTEM");
    cmd
}

/// git's configuration that never ends: a FIFO as `~/.gitconfig`, as `~/.config/git/config`
/// or as the upstream checkout's `.git/config` (libgit2 opens each with a blocking `open` to
/// open any repository, and waited for a writer). Every command that opens a repository
/// refuses at once, naming the file.
#[test]
fn a_git_configuration_that_never_ends_is_refused_at_once() {
    let p = Project::new();
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
    let commands = [
        &["store", "list"][..],
        &["series", "status"],
        crate::common::project::CHECK,
        &format_series,
    ];
    let home = p.root().join("home");
    for config in [".gitconfig", ".config/git/config"] {
        let file = home.join(config);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let made = Command::new("mkfifo").arg(&file).status().unwrap();
        assert!(made.success());
        let said = format!(
            "cannot read git's configuration file {}: {FIFO_IS}",
            file.display()
        );
        for args in commands {
            let ran = within_a_second(with_home(&p, &home, args)).expect(1);
            assert!(ran.stderr.contains(&said), "{args:?}:\n{}", ran.stderr);
        }
        std::fs::remove_file(&file).unwrap();
    }
    // The sender's checkout of upstream, which format-series opens with git.
    let checkout = p.root().join("upstream-glibc");
    git2::Repository::init(&checkout).unwrap();
    let config = checkout.join(".git/config");
    std::fs::remove_file(&config).unwrap();
    let made = Command::new("mkfifo").arg(&config).status().unwrap();
    assert!(made.success());
    let ran = within_a_second(with_home(&p, &home, &format_series)).expect(1);
    assert!(
        ran.stderr.contains(&format!(
            "cannot read git's configuration file {}: {FIFO_IS}",
            config.display()
        )),
        "{}",
        ran.stderr
    );
    assert!(!out.exists(), "nothing is written");
}

/// What puts a file in place at a path.
type Make<'a> = dyn Fn(&Path) + 'a;

/// The previous version's mails (`format-series --previous DIR`): a FIFO, a link to
/// `/dev/zero`, a file of 100 MiB, one of 60 MiB that is no mail (told from its first bytes)
/// and a mail without a subject are refused at once, naming the file (a FIFO waited for a writer, `/dev/zero` was read until memory
/// ran out, and the other two made the cover letter say "- dropped: " of no name).
#[test]
fn format_series_refuses_previous_mails_that_never_end_or_are_none() {
    let p = Project::new();
    let previous = p.root().join("v1");
    let out = p.root().join("v2");
    let format = |version: &str, out: &Path, previous: Option<&Path>| {
        let mut args = vec![
            "format-series",
            "--release",
            "2.41",
            "--author",
            "Ada Lovelace <ada@gnu.org>",
            "--version",
            version,
            "--out",
            out.to_str().unwrap(),
        ];
        if let Some(previous) = previous {
            args.extend(["--previous", previous.to_str().unwrap()]);
        }
        p.command(&args)
    };
    Ran::of(format("1", &previous, None).output().unwrap()).expect(0);
    let mail = previous.join("0001-elf-Search-LD_FALLBACK_PATH-last.patch");
    let text = std::fs::read_to_string(&mail).unwrap();
    let fifo = fifo_in(p.root());
    let unnamed = text.replace("\nSubject: ", "\nX-Subject: ");
    let sparse =
        |bytes: u64| move |m: &Path| std::fs::File::create(m).unwrap().set_len(bytes).unwrap();
    let cases: [(&str, &Make<'_>); 5] = [
        (FIFO_IS, &|m| std::os::unix::fs::symlink(&fifo, m).unwrap()),
        (ZERO_IS, &|m| std::os::unix::fs::symlink("/dev/zero", m).unwrap()),
        (
            "it is larger than 64 MiB, the most a patch can hold here",
            &sparse(100 << 20),
        ),
        (
            "it is not a mail as git format-patch writes one: it does not start with `From <commit> Mon Sep 17 00:00:00 2001`",
            &sparse(60 << 20),
        ),
        (
            "it has no `Subject:` line, which tells which patch of the new version it was",
            &|m| std::fs::write(m, &unnamed).unwrap(),
        ),
    ];
    for (said, make) in cases {
        std::fs::remove_file(&mail).unwrap();
        make(&mail);
        let ran = within_a_second(format("2", &out, Some(&previous))).expect(1);
        assert!(
            ran.stderr
                .starts_with(&format!("error: cannot read {}: {said}", mail.display())),
            "{}",
            ran.stderr
        );
        assert!(!out.exists(), "nothing is written");
    }
}
