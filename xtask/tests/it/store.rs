//! The source store on synthetic tarballs and git tags: deterministic ids, modes, refusals.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;
use xtask::store::import::Source;
use xtask::store::SourceStore;

fn files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("elf/dl-load.c", "int dl_load;\n"),
        ("scripts/run.sh", "#!/bin/sh\n"),
        (".gitignore", "*.o\n"),
        ("elf/ignored.o", "imported although .gitignore names it\n"),
        ("manual/dynlink.texi", "@node\n"),
    ]
}

/// A tarball of `files()` with an executable script and a symlink; returns it and its release.
fn release_tarball(t: &TestStore) -> (Synthetic, std::path::PathBuf) {
    let src = t.tmp.path().join("src");
    let top = source_dir(&src, "2.41", &files());
    make_executable(&top.join("scripts/run.sh"));
    std::os::unix::fs::symlink("dl-load.c", top.join("elf/link.c")).unwrap();
    std::fs::create_dir_all(top.join("empty/dir")).unwrap();
    let release = release_of("2.41", &top);
    (
        release,
        tarball(&top, &t.tmp.path().join("glibc-2.41.tar.xz")),
    )
}

/// [`release_tarball`] imported into `t`'s store: the release, its commit, and the directory
/// the tarball was made from.
fn imported_tarball(t: &TestStore) -> (Synthetic, git2::Oid, std::path::PathBuf) {
    let (release, tar) = release_tarball(t);
    let commit = release.import(&t.store, &Source::Tarball(tar)).unwrap();
    (release, commit, t.tmp.path().join("src/glibc-2.41"))
}

#[test]
fn imports_are_deterministic_and_keep_modes() {
    let t = TestStore::new();
    let (release, tar) = release_tarball(&t);
    let commit = release
        .import(&t.store, &Source::Tarball(tar.clone()))
        .unwrap();

    let other = TestStore::new();
    assert_eq!(
        other
            .store
            .import_expecting(release.release, release.tree, &Source::Tarball(tar))
            .unwrap(),
        commit
    );
    // Re-importing is a no-op.
    assert_eq!(t.store.ensure_release(release.release).unwrap(), commit);
    let listed = t.store.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].tag.as_str(), listed[0].commit),
        ("glibc-2.41", commit)
    );
    assert_eq!(listed[0].tree, release.tree);

    let c = t.repo().find_commit(commit).unwrap();
    assert_eq!(c.parent_count(), 0);
    assert_eq!(c.author().when().seconds(), 0);

    let out = t.tmp.path().join("out");
    t.store.export_tree(release.release, &out).unwrap();
    assert!(
        !out.join("manual").exists(),
        "manual/ is dropped from every stored tree"
    );
    assert!(!out.join("empty").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("elf/ignored.o")).unwrap(),
        "imported although .gitignore names it\n"
    );
    assert_eq!(
        std::fs::metadata(out.join("scripts/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0o111
    );
    assert_eq!(
        std::fs::metadata(out.join("elf/dl-load.c"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
    assert_eq!(
        std::fs::read_link(out.join("elf/link.c")).unwrap().to_str(),
        Some("dl-load.c")
    );
    let tree = t.repo().find_commit(commit).unwrap().tree().unwrap();
    let mode = |p: &str| tree.get_path(std::path::Path::new(p)).unwrap().filemode();
    assert_eq!(
        (
            mode("scripts/run.sh"),
            mode("elf/link.c"),
            mode("elf/dl-load.c")
        ),
        (0o100755, 0o120000, 0o100644)
    );

    // Export refuses to write over something.
    assert!(t.store.export_tree(release.release, &out).is_err());
}

#[test]
fn the_same_tree_as_git_write_tree() {
    let t = TestStore::new();
    let (release, _) = release_tarball(&t);
    let top = t.tmp.path().join("src/glibc-2.41");
    std::fs::remove_dir_all(top.join("manual")).unwrap();
    run(&top, "git", &["init", "-q"]);
    run(&top, "git", &["add", "-A", "-f"]);
    assert_eq!(
        run(&top, "git", &["write-tree"]).trim(),
        release.tree.to_string()
    );
}

/// Why importing `release` from `source` into `t`'s store fails, asserting the store is left
/// empty.
fn refused(t: &TestStore, release: Synthetic, source: Source) -> String {
    let err = release.import(&t.store, &source).unwrap_err();
    assert!(t.store.list().unwrap().is_empty(), "{err:#}");
    format!("{err:#}")
}

#[test]
fn a_corrupt_tarball_is_refused_and_the_store_is_unchanged() {
    let t = TestStore::new();
    let (release, tar) = release_tarball(&t);
    let bytes = std::fs::read(&tar).unwrap();
    let corrupt = t.tmp.path().join("corrupt.tar.xz");
    std::fs::write(&corrupt, &bytes[..bytes.len() / 2]).unwrap();
    let err = refused(&t, release, Source::Tarball(corrupt));
    insta::assert_snapshot!("corrupt_tarball", t.normalised(&err));
    assert!(t.store.release_commit(release.release).unwrap().is_none());
}

#[test]
fn a_tarball_of_other_content_is_refused() {
    let t = TestStore::new();
    let (release, _) = release_tarball(&t);
    let other = source_dir(
        &t.tmp.path().join("other"),
        "2.41",
        &[("elf/dl-load.c", "int changed;\n")],
    );
    let tar = tarball(&other, &t.tmp.path().join("other.tar.xz"));
    let err = refused(&t, release, Source::Tarball(tar));
    insta::assert_snapshot!("tarball_of_other_content", t.normalised(&err));
}

#[test]
fn a_git_tag_imports_to_the_same_commit_as_the_tarball() {
    let t = TestStore::new();
    // An upstream-like repository: the same files, manual/ included, tagged glibc-2.41.
    let (release, from_tarball, upstream) = imported_tarball(&t);
    run(&upstream, "git", &["init", "-q"]);
    run(&upstream, "git", &["add", "-A", "-f"]);
    git_commit(&upstream, &["-qm", "release"]);
    run(&upstream, "git", &["tag", "glibc-2.41"]);

    let other = TestStore::new();
    let from_git = release
        .import(&other.store, &Source::Git(upstream.display().to_string()))
        .unwrap();
    assert_eq!(from_git, from_tarball);

    // A tag that is not the release is refused.
    run(&upstream, "git", &["tag", "-d", "glibc-2.41"]);
    std::fs::write(upstream.join("elf/dl-load.c"), "int other;\n").unwrap();
    git_commit(&upstream, &["-qam", "other"]);
    run(&upstream, "git", &["tag", "glibc-2.41"]);
    let err = refused(
        &TestStore::new(),
        release,
        Source::Git(upstream.display().to_string()),
    );
    insta::assert_snapshot!("tag_of_other_content", t.normalised(&err));
}

/// `git commit` with a throwaway identity, whatever the machine's git config says.
fn git_commit(dir: &std::path::Path, args: &[&str]) {
    let identity = [
        "-c",
        "user.name=u",
        "-c",
        "user.email=u@e.invalid",
        "commit",
    ];
    run(dir, "git", &[&identity[..], args].concat());
}

#[test]
fn a_new_store_appears_whole_or_not_at_all() {
    let tmp = tempfile::TempDir::new().unwrap();
    let dir = tmp.path().join("cache/glibc.git");
    // A leftover of a creation killed before its rename (its process is gone) is removed;
    // one of a process still running is left alone.
    std::fs::create_dir_all(tmp.path().join("cache/.store-999999999-abc")).unwrap();
    let alive = format!("cache/.store-{}-abc", std::process::id());
    std::fs::create_dir_all(tmp.path().join(&alive)).unwrap();
    let store = SourceStore::open(&dir).unwrap();
    assert!(store.list().unwrap().is_empty());
    assert!(dir.join("HEAD").is_file());
    let names: Vec<_> = std::fs::read_dir(tmp.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "only the store and the old leftover: {names:?}"
    );
    // Something else at the path is not silently reused.
    let not_a_store = tmp.path().join("file");
    std::fs::create_dir_all(&not_a_store).unwrap();
    std::fs::write(not_a_store.join("x"), "x").unwrap();
    assert!(SourceStore::open(&not_a_store).is_err());
}

#[test]
fn every_compression_and_hard_links_give_the_same_release() {
    let t = TestStore::new();
    let (release, commit, top) = imported_tarball(&t);
    // git drops `.git` entries at any depth; a hard link is a second copy of its file.
    std::fs::create_dir_all(top.join("elf/.git")).unwrap();
    std::fs::write(top.join("elf/.git/config"), "not part of any tree\n").unwrap();
    std::fs::hard_link(top.join("elf/dl-load.c"), top.join("elf/hard.c")).unwrap();
    let with_link = release_of("2.41", &top);
    assert_ne!(with_link.tree, release.tree);
    for (flag, name) in [("-czf", "gz"), ("-cjf", "bz2"), ("-cf", "tar")] {
        let tar = t.tmp.path().join(format!("glibc-2.41.tar.{name}"));
        run(
            top.parent().unwrap(),
            "tar",
            &[flag, tar.to_str().unwrap(), "glibc-2.41"],
        );
        let other = TestStore::new();
        let linked = other
            .store
            .import_expecting(with_link.release, with_link.tree, &Source::Tarball(tar))
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_ne!(linked, commit);
        // git's own checks: pack and index checksums, every object, connectivity.
        run(
            other.store.dir(),
            "git",
            &["fsck", "--strict", "--no-dangling"],
        );
    }
}

#[test]
fn a_second_release_packs_only_new_objects() {
    let t = TestStore::new();
    // The number of objects in each pack, from its index's fan-out table.
    let packed = || -> Vec<u32> {
        let mut counts: Vec<u32> = std::fs::read_dir(t.store.dir().join("objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "idx"))
            .map(|p| {
                let idx = std::fs::read(p).unwrap();
                u32::from_be_bytes(idx[8 + 255 * 4..8 + 256 * 4].try_into().unwrap())
            })
            .collect();
        counts.sort();
        counts
    };
    t.add(
        "2.40",
        &[("elf/dl-load.c", "int v40;\n"), ("COPYING", "gpl\n")],
    );
    assert_eq!(packed(), [4], "2 blobs, elf/ and the root");
    let (_, commit) = t.add(
        "2.41",
        &[("elf/dl-load.c", "int v41;\n"), ("COPYING", "gpl\n")],
    );
    assert_eq!(packed(), [3, 4], "the new dl-load.c, elf/ and the root");
    let tree = t.repo().find_commit(commit).unwrap().tree_id();
    let top = t.tmp.path().join("src-2.41/glibc-2.41");
    assert_eq!(tree, release_of("2.41", &top).tree);
    run(t.store.dir(), "git", &["fsck", "--strict", "--no-dangling"]);
}

#[test]
fn a_tarball_with_two_top_level_directories_is_refused() {
    let t = TestStore::new();
    let (release, _) = release_tarball(&t);
    let src = t.tmp.path().join("src");
    std::fs::create_dir_all(src.join("stray")).unwrap();
    std::fs::write(src.join("stray/file"), "x").unwrap();
    let tar = t.tmp.path().join("two.tar.xz");
    run(
        &src,
        "tar",
        &["-cJf", tar.to_str().unwrap(), "glibc-2.41", "stray"],
    );
    let err = refused(&t, release, Source::Tarball(tar));
    insta::assert_snapshot!("two_top_level_directories", t.normalised(&err));
}
