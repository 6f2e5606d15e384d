//! `cargo xtask format-series`: a mail-ready patch set from a series, tested on a synthetic
//! release: a real author and sign-off, `[PATCH vN m/n]`, the NEWS entry in a development
//! section, a cover letter with a range diff against the previous version, the manual's
//! patch checked against a synthetic sender's checkout of upstream, and mails that `git am`
//! takes on the release.

use std::path::{Path, PathBuf};

use crate::common::*;
use xtask::format_series::{format, Author, Base, Checkout, Manual, Request};
use xtask::series::Workspace;

const NEWS: &str = "GNU C Library NEWS\n\nVersion 2.41\n\nMajor new features:\n\n* Something.\n";
const ENTRY: &str = "* LD_FALLBACK_PATH is searched last.\n\n";

/// Upstream's file: its copyright line is not the series' to change.
const RTLD: &str = "/* Copyright (C) 1995-2026 Free Software Foundation, Inc.  */\nint rtld;\n";
/// A file the series adds, with the DCO copyright line every series carries.
const NEW_TEST: &str =
    "/* Test LD_FALLBACK_PATH.\n   Copyright The GNU Toolchain Authors.\n   This file is part of the GNU C Library.  */\nint main (void) { return 0; }\n";

struct Fixture {
    t: TestStore,
    ws: Workspace,
    /// The sender's checkout of upstream (synthetic) and the manual patch made against it.
    checkout: PathBuf,
    manual_patch: PathBuf,
}

fn fixture(dl_change: &str) -> Fixture {
    let t = TestStore::new();
    let (release, base) = t.add(
        "2.41",
        &[
            ("NEWS", NEWS),
            ("elf/dl-load.c", &dl_load("2.41", "")),
            ("elf/rtld.c", RTLD),
        ],
    );
    let news = NEWS.replace("* Something.\n", &format!("{ENTRY}* Something.\n"));
    let dl = dl_load("2.41", "").replace("  return default_path ();\n", dl_change);
    let c1 = t.commit(
        base,
        "elf: Search LD_FALLBACK_PATH last\n\nAfter the default path.\n",
        &[
            ("NEWS", &news),
            ("elf/dl-load.c", &dl),
            ("elf/rtld.c", &format!("{RTLD}int fallback;\n")),
            ("elf/tst-fallback.c", NEW_TEST),
        ],
        1_764_000_000,
    );
    let c2 = parse_patch(&t, c1);
    let ws = t.workspace_with_series(release, &[c1, c2], "NEWS\nelf/**\n");
    let (checkout, manual_patch) = synthetic_manual(t.tmp.path());
    Fixture {
        t,
        ws,
        checkout,
        manual_patch,
    }
}

impl Fixture {
    fn manual(&self) -> anyhow::Result<Manual> {
        Manual::read(&self.manual_patch, &Checkout::new(&self.checkout))
    }
}

fn request(f: &Fixture, version: u32, previous: Option<Vec<(String, String)>>) -> Request {
    Request {
        release: f.ws.releases_with_series()[0],
        base: None,
        base_run: None,
        version,
        cover_letter: true,
        author: Author::parse("Ada Lovelace <ada@gnu.org>").unwrap(),
        previous,
        testing: Some("Tested on glibc 2.41.\n\n".into()),
        manual: f.manual().unwrap(),
    }
}

#[test]
fn a_second_version_is_ready_to_mail() {
    let v1 = fixture("  return default_path () || fallback ();\n");
    let first = format(&v1.ws, &request(&v1, 1, None)).unwrap();
    assert_eq!(first.len(), 4);
    assert!(first[1]
        .1
        .contains("Subject: [PATCH 1/3] elf: Search LD_FALLBACK_PATH last\n"));

    let v2 = fixture("  return default_path () || fallback_path ();\n");
    let mails = format(&v2.ws, &request(&v2, 2, Some(first))).unwrap();
    let names: Vec<&str> = mails.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "v2-0000-cover-letter.patch",
            "v2-0001-elf-Search-LD_FALLBACK_PATH-last.patch",
            "v2-0002-elf-Parse-LD_FALLBACK_PATH.patch",
            "v2-0003-manual-Document-LD_FALLBACK_PATH-and-ld.so-fallback.patch"
        ]
    );
    let (cover, patch) = (&mails[0].1, &mails[1].1);
    // The cover letter: `[PATCH v2 0/3]`, what changed since v1 and its range diff, and the
    // testing note.
    insta::assert_snapshot!("v2_cover_letter", cover);
    // The design argued for upstream: the alternatives and the prior art by name, and
    // nothing of the distribution the project builds from, no tracker number.
    for named in [
        "a tunable",
        "la_objsearch",
        "patchelf",
        "ld.so.conf",
        "DYLD_FALLBACK_LIBRARY_PATH",
        "nixpkgs",
        "Jetson",
    ] {
        assert!(words(cover).contains(named), "{named}: {cover}");
    }
    assert!(!cover.contains("Debian"), "{cover}");
    assert!(
        !cover
            .split(|c: char| c.is_whitespace() || c == '(')
            .any(|w| w.starts_with('#') && w[1..].starts_with(|c: char| c.is_ascii_digit())),
        "a tracker number: {cover}"
    );
    // The first patch: its author and sign-off, `[PATCH v2 1/3]`, the NEWS entry in a
    // development section; the file the series adds carries the DCO copyright line, the
    // upstream file it changes keeps its own.
    insta::assert_snapshot!("v2_first_patch", patch);
    assert!(!mails.iter().any(|(_, t)| t.contains("example.invalid")));

    // git am takes them on the release.
    let am = v2.t.tmp.path().join("am");
    v2.t.store
        .export_tree(v2.ws.releases_with_series()[0], &am)
        .unwrap();
    // Upstream's tree has the manual the last patch changes.
    std::fs::create_dir(am.join("manual")).unwrap();
    std::fs::write(am.join("manual/dynlink.texi"), MANUAL).unwrap();
    run(&am, "git", &["init", "-q"]);
    run(&am, "git", &["add", "-A"]);
    run(
        &am,
        "git",
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@e.invalid",
            "commit",
            "-qm",
            "release",
        ],
    );
    let files: Vec<String> = mails[1..]
        .iter()
        .map(|(name, text)| {
            let path = v2.t.tmp.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        })
        .collect();
    let mut args = vec![
        "-c",
        "user.name=u",
        "-c",
        "user.email=u@e.invalid",
        "am",
        "-q",
    ];
    args.extend(files.iter().map(String::as_str));
    run(&am, "git", &args);
    let manual = std::fs::read_to_string(am.join("manual/dynlink.texi")).unwrap();
    assert_eq!(manual, patched_manual());
    let news = std::fs::read_to_string(am.join("NEWS")).unwrap();
    assert!(
        news.starts_with(
            "GNU C Library NEWS\n\nVersion 2.42\n\nMajor new features:\n\n* LD_FALLBACK_PATH"
        ),
        "{news}"
    );
}

/// The mails go to the development branch, whose NEWS already has the next
/// version's section: the series is moved onto the sender's commit, its NEWS entry goes under
/// that section (no second one), the cover letter names the commit, and `git am` takes the
/// mails there. Before, the NEWS hunk added a second `Version 2.42` section and did not apply.
#[test]
fn the_mails_apply_to_a_development_branch_that_has_the_next_version_s_news() {
    let f = fixture("  return default_path () || fallback ();\n");
    let release = f.ws.releases_with_series()[0];
    // Upstream's master after 2.41: the release's files, moved on; NEWS with the section of
    // the version in development; version.h saying so; the manual.
    let master = f.t.tmp.path().join("master");
    f.t.store.export_tree(release, &master).unwrap();
    let dev_news = "GNU C Library NEWS\n\nVersion 2.42\n\nMajor new features:\n\n* Newer.\n\nVersion 2.41\n\nMajor new features:\n\n* Something.\n";
    std::fs::write(master.join("NEWS"), dev_news).unwrap();
    std::fs::write(
        master.join("version.h"),
        "#define RELEASE \"development\"\n#define VERSION \"2.41.9000\"\n",
    )
    .unwrap();
    std::fs::write(master.join("elf/dl-open.c"), "int moved_on;\n").unwrap();
    std::fs::create_dir(master.join("manual")).unwrap();
    std::fs::write(master.join("manual/dynlink.texi"), MANUAL).unwrap();
    let git = |args: &[&str]| {
        let mut all = vec!["-c", "user.name=u", "-c", "user.email=u@e.invalid"];
        all.extend(args);
        run(&master, "git", &all);
    };
    git(&["init", "-q", "-b", "master"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "master"]);
    let head = String::from_utf8(
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&master)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();

    let base = Base::resolve(&master, None).unwrap().unwrap();
    assert_eq!(base.name, format!("master at {}", &head[..12]));
    assert_eq!(base.development, "2.42");
    let manual = Manual::at_base(&f.manual_patch, &master, &base).unwrap();
    let request = Request {
        base: Some(base),
        manual,
        ..request(&f, 1, None)
    };
    let mails = format(&f.ws, &request).unwrap();
    let cover = &mails[0].1;
    assert!(
        cover.contains(&format!("\nbase-commit: {head}\n")),
        "{cover}"
    );
    assert!(
        words(cover).contains(&format!(
            "The series applies to master at {} of upstream glibc (commit {head}, the base-commit below); the NEWS entry is under Version 2.42, the version in development there.",
            &head[..12]
        )),
        "{cover}"
    );
    assert!(
        words(cover).contains(&format!(
            "It was not built or tested on master at {}.",
            &head[..12]
        )),
        "{cover}"
    );

    // git am takes every mail on that commit, and NEWS has one 2.42 section, the entry first.
    let files: Vec<String> = mails[1..]
        .iter()
        .map(|(name, text)| {
            let path = f.t.tmp.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        })
        .collect();
    let mut args = vec!["am", "-q"];
    args.extend(files.iter().map(String::as_str));
    git(&args);
    let news = std::fs::read_to_string(master.join("NEWS")).unwrap();
    assert_eq!(
        news,
        dev_news.replace(
            "Version 2.42\n\nMajor new features:\n\n",
            &format!("Version 2.42\n\nMajor new features:\n\n{ENTRY}")
        )
    );
    assert_eq!(
        std::fs::read_to_string(master.join("manual/dynlink.texi")).unwrap(),
        patched_manual()
    );
    assert_eq!(
        std::fs::read_to_string(master.join("elf/rtld.c")).unwrap(),
        "int rtld;\nint fallback;\n"
    );
    assert!(master.join("elf/dl-open.c").exists());
}

/// The header block of a mail, without its `Subject:` (whose `[PATCH m/n]` tag differs).
fn headers_but_subject(mail: &str) -> String {
    let (headers, _) = mail.split_once("\n\n").unwrap();
    headers
        .lines()
        .filter(|line| !line.starts_with("Subject: "))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// A real name outside ASCII goes out as `git format-patch` writes it: `From:` RFC
/// 2047-encoded (folded when long), and the MIME headers its UTF-8 sign-off needs.
#[test]
fn a_utf8_author_is_written_as_git_format_patch_writes_it() {
    let f = fixture("  return 1;\n");
    let mut req = request(&f, 1, None);
    for name in [
        "José Müller",
        "Ángel Ñúñez-Özdemir de la Peña y Castañeda Ü",
        "J. Random Hacker",
    ] {
        req.author = Author::parse(&format!("{name} <jose@gnu.org>")).unwrap();
        let mails = format(&f.ws, &req).unwrap();
        let store = f.t.store.dir().display().to_string();
        for (file, text) in &mails[1..] {
            let id = text["From ".len()..].split(' ').next().unwrap();
            let git = run(
                f.t.tmp.path(),
                "git",
                &["--git-dir", &store, "format-patch", "-1", "--stdout", id],
            );
            assert_eq!(
                headers_but_subject(text),
                headers_but_subject(&git),
                "{file}"
            );
            assert!(text.contains(&format!("\nSigned-off-by: {name} <jose@gnu.org>\n")));
        }
        // The cover letter is from the same sender, in the same form.
        let from = |mail: &str| {
            let headers = headers_but_subject(mail);
            headers[headers.find("From: ").unwrap()..headers.find("Date: ").unwrap()].to_string()
        };
        assert_eq!(from(&mails[0].1), from(&mails[1].1), "{}", mails[0].1);
    }
}

#[test]
fn a_later_version_needs_the_previous_one() {
    let f = fixture("  return 1;\n");
    let mut req = request(&f, 2, None);
    req.cover_letter = false;
    // Without a previous version the cover letter has no range diff, and no cover letter
    // is asked for here: the library call formats; the command insists on --previous.
    assert_eq!(format(&f.ws, &req).unwrap().len(), 3);
}

// --- the manual's mail: from the sender's checkout of upstream -----------------------------

/// `text` with its runs of white space as one space: a filled paragraph as one line.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The manual's mail is the manual patch applied to the sender's file: the same diff (its
/// `index` line naming that file's blob), last; the cover letter names the file by its blob
/// when the checkout is not a git work tree.
#[test]
fn the_manual_mail_is_the_patch_made_against_the_sender_s_file() {
    let f = fixture("  return 1;\n");
    let mails = format(&f.ws, &request(&f, 1, None)).unwrap();
    let (name, mail) = mails.last().unwrap();
    assert_eq!(
        name,
        "0003-manual-Document-LD_FALLBACK_PATH-and-ld.so-fallback.patch"
    );
    let diff = &mail[mail.find("diff --git ").unwrap()..];
    assert_eq!(
        diff,
        format!("{}{}", manual_patch(), xtask::series::TRAILER)
    );
    assert!(
        words(&mails[0].1).contains(&format!(
            " Patch 3, the manual's, applies to manual/dynlink.texi as of blob {}.",
            short_blob(MANUAL)
        )),
        "{}",
        mails[0].1
    );
}

/// A git checkout is named by its branch and commit in the cover letter, and its file must be
/// the one committed there (the letter would name a commit the patch was not checked against).
#[test]
fn a_git_checkout_is_named_by_its_commit_and_holds_the_file_as_committed() {
    let f = fixture("  return 1;\n");
    let c = &f.checkout;
    let git = |args: &[&str]| {
        let mut all = vec!["-c", "user.name=u", "-c", "user.email=u@e.invalid"];
        all.extend(args);
        run(c, "git", &all)
    };
    git(&["init", "-q", "-b", "master"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "upstream"]);
    let head = git(&["rev-parse", "HEAD"]);
    // The cover letter names the upstream commit the manual's patch applies to.
    let cover_says = |words_of_it: String| {
        let mails = format(&f.ws, &request(&f, 1, None)).unwrap();
        assert!(words(&mails[0].1).contains(&words_of_it), "{}", mails[0].1);
    };
    cover_says(format!(
        " Patch 3, the manual's, applies to manual/dynlink.texi of master at {}.",
        &head[..12]
    ));
    // Detached, the commit alone.
    git(&["checkout", "-q", "--detach"]);
    cover_says(format!(
        " Patch 3, the manual's, applies to manual/dynlink.texi of {}.",
        &head[..12]
    ));
    // Changed in the work tree since: refused, whatever the patch.
    std::fs::write(c.join("manual/dynlink.texi"), format!("{MANUAL}@c mine\n")).unwrap();
    assert_eq!(
        format!("{:#}", f.manual().err().unwrap()),
        format!(
            "{}/manual/dynlink.texi is not the one committed at HEAD ({}) of {}: the mail names that commit as upstream's, so the file must be as committed there; restore it (`git -C {} checkout HEAD -- manual/dynlink.texi`) or stash the change",
            c.display(),
            &head[..12],
            c.display(),
            c.display()
        )
    );
}

/// Each way the sender's file and the patch can disagree is refused with its cause, and the
/// way out.
#[test]
fn a_patch_not_made_against_the_sender_s_file_is_refused_with_its_cause() {
    let f = fixture("  return 1;\n");
    let file = f.checkout.join("manual/dynlink.texi");
    let patch = f.manual_patch.display();
    // Another version of upstream's file: the patch was made against another blob.
    let newer = MANUAL.replace("Searched before", "Looked in before");
    std::fs::write(&file, &newer).unwrap();
    assert_eq!(
        format!("{:#}", f.manual().err().unwrap()),
        format!(
            "{patch} was made against blob {} of manual/dynlink.texi, not against {}, blob {}: make it again against that file: in {}, `git apply --3way {patch}` (and resolve what it cannot merge), then `git -c core.abbrev=12 diff HEAD -- manual/dynlink.texi > {patch}` and `git checkout HEAD -- manual/dynlink.texi`",
            short_blob(MANUAL),
            file.display(),
            short_blob(&newer),
            f.checkout.display()
        )
    );
    std::fs::write(&file, MANUAL).unwrap();
    // A patch without an `index` line cannot say what it was made against.
    let no_index: String = manual_patch()
        .lines()
        .filter(|l| !l.starts_with("index "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&f.manual_patch, no_index).unwrap();
    assert_eq!(
        format!("{:#}", f.manual().err().unwrap()),
        format!("{patch} has no `index` line naming the blob it was made against: make it with git diff")
    );
    // The right blob named, but a hunk whose context is not the file's.
    let broken = manual_patch().replace(" @item LD_LIBRARY_PATH\n", " @item LD_PRELOAD\n");
    std::fs::write(&f.manual_patch, broken).unwrap();
    let err = format(&f.ws, &request(&f, 1, None)).unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        format!(
            "{patch} does not apply to manual/dynlink.texi as of blob {}: hunk at line 6 did not apply",
            short_blob(MANUAL)
        )
    );
    // Not a checkout of upstream: no manual/ (a release tarball's tree), no directory.
    std::fs::remove_dir_all(f.checkout.join("manual")).unwrap();
    assert_eq!(
        format!("{:#}", f.manual().err().unwrap()),
        format!(
            "--upstream {} has no manual/dynlink.texi: it must be a checkout of upstream glibc (`git clone git://sourceware.org/git/glibc.git`); a release tarball's tree has no manual/",
            f.checkout.display()
        )
    );
    let missing = f.checkout.join("nowhere");
    assert_eq!(
        format!(
            "{:#}",
            Manual::read(&f.manual_patch, &Checkout::new(&missing))
                .err()
                .unwrap()
        ),
        format!(
            "--upstream {} is not a directory: name your checkout of upstream glibc (`git clone git://sourceware.org/git/glibc.git`)",
            missing.display()
        )
    );
}

/// What `format-series` says without a checkout of upstream, through the binary.
const NO_CHECKOUT: &str = "error: the mails need upstream glibc's manual/dynlink.texi, which the manual's patch (docs/upstream/manual-dynlink.texi.patch) must apply to, and this project carries no copy of it (Debian's release tarballs have no manual/, and upstream's file is not the project's to ship): pass --upstream DIR, your checkout of upstream glibc's master (`git clone git://sourceware.org/git/glibc.git`), or set $LD_FALLBACK_GLIBC_UPSTREAM; nothing was written\n";

/// Without `--upstream` or `$LD_FALLBACK_GLIBC_UPSTREAM` (unset or empty) the command is
/// refused as bad input (exit 1) and writes nothing: a v1 without the manual is not what a
/// contributor sends. Failed before the change (exit 0: the manual came from a copy of
/// upstream's file in the repository).
#[test]
fn without_a_checkout_of_upstream_nothing_is_written() {
    let p = Project::new();
    let out = p.root().join("mails");
    for unset in [None, Some("")] {
        let mut cmd = format_command(&p, &out, &[]);
        match unset {
            None => cmd.env_remove("LD_FALLBACK_GLIBC_UPSTREAM"),
            Some(empty) => cmd.env("LD_FALLBACK_GLIBC_UPSTREAM", empty),
        };
        let ran = Ran::of(cmd.output().unwrap()).expect(1);
        assert_eq!(
            (ran.stdout.as_str(), ran.stderr.as_str()),
            ("", NO_CHECKOUT)
        );
        assert!(!out.exists(), "{unset:?}");
    }
    let help = p.run(&["format-series", "--help"]).expect(0).stdout;
    assert!(
        words(&help).contains("--upstream <DIR> Your checkout of upstream glibc"),
        "{help}"
    );
    assert!(
        words(&help).contains("[default: $LD_FALLBACK_GLIBC_UPSTREAM]"),
        "{help}"
    );
}

/// A cover letter is aimed at the upstream commit the mails apply to: without a git
/// checkout as `--upstream` there is none, and `--cover-letter` is refused (exit 1), naming
/// why, with nothing written; the patches alone are still made from the exported tree.
/// Failed before the change (exit 0, a letter aimed at the release).
#[test]
fn a_cover_letter_without_a_git_base_is_refused() {
    let p = Project::new();
    let out = p.root().join("mails");
    let ran = format_into(&p, &out, &["--cover-letter"]).expect(1);
    assert!(ran.stdout.is_empty(), "{}", ran.stdout);
    assert!(
        ran.stderr.starts_with("error: --cover-letter needs a git base: ")
            && ran.stderr.contains(" is no git checkout, so the mails would apply to the glibc release the series is kept on")
            && ran.stderr.ends_with("name a git checkout of upstream glibc with --upstream (and --base REV), or leave --cover-letter out; nothing was written\n"),
        "{}",
        ran.stderr
    );
    assert!(!out.exists());
    format_into(&p, &out, &[]).expect(0);
    assert_eq!(visible_files(&out).len(), 3);
}

/// `--upstream` is taken before the variable, and a checkout whose file the patch was not
/// made against is refused, through the binary, with nothing written. Failed before the
/// change (no such option).
#[test]
fn upstream_names_the_checkout_before_the_variable() {
    let p = Project::new();
    let other = p.root().join("other-glibc");
    std::fs::create_dir_all(other.join("manual")).unwrap();
    let newer = MANUAL.replace("Searched before", "Looked in before");
    std::fs::write(other.join("manual/dynlink.texi"), &newer).unwrap();
    let out = p.root().join("mails");
    let ran = format_into(&p, &out, &["--upstream", &other.display().to_string()]).expect(1);
    let patch = p.root().join("manual-dynlink.texi.patch");
    let patch = patch.display();
    assert_eq!(
        ran.stderr,
        format!(
            "error: {patch} was made against blob {} of manual/dynlink.texi, not against {}/manual/dynlink.texi, blob {}: make it again against that file: in {}, `git apply --3way {patch}` (and resolve what it cannot merge), then `git -c core.abbrev=12 diff HEAD -- manual/dynlink.texi > {patch}` and `git checkout HEAD -- manual/dynlink.texi`\n",
            short_blob(MANUAL),
            other.display(),
            short_blob(&newer),
            other.display()
        )
    );
    assert!(!out.exists());
    // The variable's checkout, which the patch was made against, when the option is not given.
    format_into(&p, &out, &[]).expect(0);
    let names: Vec<String> = visible_files(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "0001-elf-Search-LD_FALLBACK_PATH-last.patch",
            "0002-elf-Parse-LD_FALLBACK_PATH.patch",
            "0003-manual-Document-LD_FALLBACK_PATH-and-ld.so-fallback.patch"
        ]
    );
}

// --- where the mails go: `--out` never destroys what format-series did not write -----------

const AUTHOR: &str = "Ada Lovelace <ada@gnu.org>";

fn format_into(p: &Project, out: &Path, extra: &[&str]) -> Ran {
    Ran::of(format_command(p, out, extra).output().unwrap())
}

/// `cargo xtask format-series` of the project's 2.41 series into `out`, `extra` after.
fn format_command(p: &Project, out: &Path, extra: &[&str]) -> std::process::Command {
    let out = out.display().to_string();
    let mut args = vec![
        "format-series",
        "--release",
        "2.41",
        "--author",
        AUTHOR,
        "--out",
        &out,
    ];
    args.extend(extra);
    p.command(&args)
}

use crate::common::project::{scrubbed, visible_files, Project, Ran};

#[test]
fn out_refuses_a_directory_it_did_not_write_and_deletes_nothing() {
    let p = Project::new();
    // A checkout: a `.git`, uncommitted work.
    let checkout = p.root().join("checkout");
    std::fs::create_dir_all(checkout.join(".git/objects")).unwrap();
    std::fs::write(checkout.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(checkout.join("work.c"), "int uncommitted;\n").unwrap();
    let before = visible_files(&checkout);
    let ran = format_into(&p, &checkout, &[]).expect(1);
    insta::assert_snapshot!("out_is_a_checkout", scrubbed(&p, &ran.stderr));
    assert_eq!(visible_files(&checkout), before);
    assert!(checkout.join(".git/HEAD").is_file());

    // The series itself.
    let series = p.patches().join("2.41");
    let before = visible_files(&series);
    let ran = format_into(&p, &series, &[]).expect(1);
    insta::assert_snapshot!("out_is_the_series", scrubbed(&p, &ran.stderr));
    assert_eq!(visible_files(&series), before);
}

#[test]
fn out_replaces_only_its_own_output_of_the_same_version() {
    let p = Project::new();
    // An empty directory is taken, and written into in place.
    let v1 = p.root().join("v1");
    std::fs::create_dir(&v1).unwrap();
    let ran = format_into(&p, &v1, &[]).expect(0);
    let first = visible_files(&v1);
    assert_eq!(first.len(), 3, "{ran:?}");
    // Run again: the same version's output is replaced, whole.
    format_into(&p, &v1, &[]).expect(0);
    assert_eq!(visible_files(&v1), first);
    // A file added beside the output is not the command's to delete.
    std::fs::write(v1.join("notes.txt"), "my notes\n").unwrap();
    let ran = format_into(&p, &v1, &[]).expect(1);
    insta::assert_snapshot!("out_holds_a_file_beside", scrubbed(&p, &ran.stderr));
    assert!(v1.join("notes.txt").is_file());
    std::fs::remove_file(v1.join("notes.txt")).unwrap();

    // v2 over the v1 it is compared with: v1 would be gone.
    let v1_arg = v1.display().to_string();
    let ran = format_into(&p, &v1, &["--version", "2", "--previous", &v1_arg]).expect(1);
    insta::assert_snapshot!("out_is_the_previous", scrubbed(&p, &ran.stderr));
    assert_eq!(visible_files(&v1), first);
    // v2 over another v1 output: another version's mails are not replaced either.
    let other = p.root().join("other");
    format_into(&p, &other, &[]).expect(0);
    let ran = format_into(&p, &other, &["--version", "2", "--previous", &v1_arg]).expect(1);
    insta::assert_snapshot!("out_holds_another_version", scrubbed(&p, &ran.stderr));
    assert_eq!(visible_files(&other), first);
    // A new directory takes v2.
    let v2 = p.root().join("v2");
    format_into(&p, &v2, &["--version", "2", "--previous", &v1_arg]).expect(0);
    assert_eq!(visible_files(&v2).len(), 3);
}

/// `format-series --out out` refuses (exit 1) to replace what it cannot prove it wrote:
/// `what`, the name and why.
fn refused_unproven(p: &Project, out: &Path, what: &str) {
    let ran = format_into(p, out, &[]).expect(1);
    assert_eq!(
        ran.stderr,
        format!(
            "error: --out {}: format-series cannot prove it wrote {what}; nothing was written or \
             deleted. Name a new or empty directory, or move those files away\n",
            out.display()
        )
    );
}

/// The manifest is anyone's to write, so what it names is deleted only when
/// format-series can prove it wrote it: a mail of its own name, a plain file, with the content
/// it wrote (the manifest records each mail's blob id). A directory it names, a file of
/// another name, and a mail edited since are refused, with nothing deleted.
#[test]
fn out_deletes_only_the_mails_it_can_prove_it_wrote() {
    let p = Project::new();
    let out = p.root().join("out");
    format_into(&p, &out, &[]).expect(0);
    let marker = out.join(".format-series");
    let written = std::fs::read_to_string(&marker).unwrap();

    // A hand-written manifest that names a directory of the user's.
    let forged = p.root().join("forged");
    std::fs::create_dir_all(forged.join("sub")).unwrap();
    std::fs::write(forged.join("sub/keep.c"), "int keep;\n").unwrap();
    std::fs::write(
        forged.join(".format-series"),
        "# Written by `cargo xtask format-series`\nversion 1\nrelease 2.41\nmail sub\n",
    )
    .unwrap();
    refused_unproven(&p, &forged, "sub (not a name it gives its mails)");
    assert_eq!(
        std::fs::read_to_string(forged.join("sub/keep.c")).unwrap(),
        "int keep;\n"
    );

    // A directory under a mail's name.
    let name = "0001-elf-Search-LD_FALLBACK_PATH-last.patch";
    std::fs::create_dir_all(forged.join(format!("{name}/inside"))).unwrap();
    std::fs::remove_dir_all(forged.join("sub")).unwrap();
    std::fs::write(
        forged.join(".format-series"),
        format!("version 1\nrelease 2.41\nmail {name}\n"),
    )
    .unwrap();
    refused_unproven(&p, &forged, &format!("{name} (not a plain file)"));
    assert!(forged.join(format!("{name}/inside")).is_dir());

    // A mail edited since it was written.
    let before = visible_files(&out);
    std::fs::write(out.join(name), "my own text\n").unwrap();
    refused_unproven(
        &p,
        &out,
        &format!("{name} (its content is not what format-series wrote there: edited since?)"),
    );
    assert_eq!(
        std::fs::read_to_string(out.join(name)).unwrap(),
        "my own text\n"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), written);
    // Put back as written, the output is the command's again.
    for (file, text) in &before {
        std::fs::write(out.join(file), text).unwrap();
    }
    format_into(&p, &out, &[]).expect(0);
    assert_eq!(visible_files(&out), before);
}

/// Without `--author`, the sender is whom git would name, in git's order: `$GIT_AUTHOR_NAME`
/// and `$GIT_AUTHOR_EMAIL` before `user.name` and `user.email` (the
/// configuration won).
#[test]
fn the_sender_is_git_s_author_in_git_s_order() {
    let p = Project::new();
    let home = p.root().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Config Person\n\temail = config@gnu.org\n",
    )
    .unwrap();
    let sent_by = |env: &[(&str, &str)]| {
        let out = p.root().join(format!("mails-{}", env.len()));
        let mut cmd = p.command(&[
            "format-series",
            "--release",
            "2.41",
            "--out",
            &out.display().to_string(),
        ]);
        cmd.env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_AUTHOR_NAME")
            .env_remove("GIT_AUTHOR_EMAIL")
            .env_remove("EMAIL");
        for (key, value) in env {
            cmd.env(key, value);
        }
        Ran::of(cmd.output().unwrap()).expect(0);
        let mail = std::fs::read_to_string(out.join(PATCH_NAMES[0])).unwrap();
        mail.lines()
            .find(|l| l.starts_with("From: "))
            .unwrap()
            .to_string()
    };
    assert_eq!(sent_by(&[]), "From: Config Person <config@gnu.org>");
    assert_eq!(
        sent_by(&[
            ("GIT_AUTHOR_NAME", "Env Person"),
            ("GIT_AUTHOR_EMAIL", "env@gnu.org")
        ]),
        "From: Env Person <env@gnu.org>"
    );
}

const PATCH_NAMES: [&str; 1] = ["0001-elf-Search-LD_FALLBACK_PATH-last.patch"];
