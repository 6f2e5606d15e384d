//! Builds without a series, and where the loader ends up in a sysroot.

use super::*;

#[test]
fn patched_build_without_series_names_the_fix() {
    let patches = tempfile::tempdir().unwrap();
    let release = Release::parse("2.40").unwrap();
    let Err(err) = source::load_series(patches.path(), release) else {
        panic!("a release without patches/ loaded a series");
    };
    let err = err.to_string();
    assert!(
        err.contains("cargo xtask rebase-glibc --onto 2.40"),
        "{err}"
    );
    assert!(err.contains("--flavour unpatched"), "{err}");
}

#[test]
fn loader_is_linked_where_the_target_expects_it() {
    let root = tempfile::tempdir().unwrap();
    let sysroot = root.path();
    std::fs::create_dir_all(sysroot.join("lib64")).unwrap();
    std::fs::write(sysroot.join("lib64/ld-linux-aarch64.so.1"), "elf").unwrap();
    place_loader(sysroot, Target::Aarch64).unwrap();
    let link = sysroot.join("lib/ld-linux-aarch64.so.1");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../lib64/ld-linux-aarch64.so.1")
    );
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "elf");
    // Already in place: nothing to do.
    place_loader(sysroot, Target::Aarch64).unwrap();
}

#[test]
fn missing_loader_fails_the_build() {
    let root = tempfile::tempdir().unwrap();
    let err = place_loader(root.path(), Target::X86_64)
        .unwrap_err()
        .to_string();
    assert!(err.contains("/lib64/ld-linux-x86-64.so.2"), "{err}");
}

#[test]
fn editing_a_patch_changes_the_key_and_nothing_else_does() {
    let patches = tempfile::tempdir().unwrap();
    let release = Release::parse("2.44").unwrap();
    let dir = patches.path().join("2.44");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("series"),
        format!(
            "# base: glibc-2.44 {}\n0001-fallback.patch\n",
            release.pinned_tree()
        ),
    )
    .unwrap();
    let patch = dir.join("0001-fallback.patch");
    // Only its bytes count here (it is never applied), but a patch starts as a mail.
    let from = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n";
    std::fs::write(&patch, format!("{from}Subject: [PATCH] fallback\n\n+a\n")).unwrap();
    let key = || {
        let series = source::load_series(patches.path(), release).unwrap();
        KeyInputs {
            release,
            tree_id: release.pinned_tree().into(),
            series_id: Some(series.content_id()),
            flavour: Flavour::Patched,
            target: Target::X86_64,
            configure_flags: vec!["--prefix=/usr".into()],
            environment: vec![],
            compiler: "gcc 12".into(),
            recipe: recipe::RECIPE_VERSION,
        }
        .key()
    };
    let first = key();
    assert_eq!(key(), first);
    std::fs::write(&patch, format!("{from}Subject: [PATCH] fallback\n\n+b\n")).unwrap();
    assert_ne!(key(), first);
}

#[test]
fn a_variant_builds_from_the_series_plus_its_own_patches() {
    let release = Release::newest();
    let patches = crate::util::paths::patches_dir();
    let series = source::series_for(&patches, release, Flavour::Patched)
        .unwrap()
        .unwrap();
    let variant = source::series_for(&patches, release, Flavour::FallbackFirst)
        .unwrap()
        .unwrap();
    assert_eq!(variant.patches.len(), series.patches.len() + 1);
    assert_eq!(variant.patches[..series.patches.len()], series.patches[..]);
    assert_ne!(variant.content_id(), series.content_id());
    assert!(source::series_for(&patches, release, Flavour::Unpatched)
        .unwrap()
        .is_none());
    let older = Release::parse("2.36").unwrap();
    let err = source::series_for(&patches, older, Flavour::FallbackFirst).unwrap_err();
    assert!(
        format!("{err:#}").contains("variants/fallback-first/2.36"),
        "{err:#}"
    );
}

/// A builder reads a release's series once: the variant and every later flavour take it
/// from that reading (here `patches/2.44/` is gone before they ask); a builder given
/// another `patches/` reads that one.
#[test]
fn a_builder_reads_each_series_once() {
    let release = Release::newest();
    let copy = tempfile::tempdir().unwrap();
    let project = crate::util::paths::patches_dir();
    let patches = copy.path().join("patches");
    let sh = crate::util::shell::here().unwrap();
    xshell::cmd!(sh, "cp -r {project} {patches}")
        .quiet()
        .run()
        .unwrap();
    let builder = Builder {
        layout: Layout::under(copy.path()),
        store: copy.path().join("store"),
        patches_dir: patches.clone(),
        jobs: 1,
        rebuild: false,
        configuration: Default::default(),
        compiler_cache: false,
        memo: Default::default(),
    };
    let first = builder.series_for(release, Flavour::Patched).unwrap();
    std::fs::remove_file(patches.join(release.version()).join("series")).unwrap();
    let again = builder.series_for(release, Flavour::Patched).unwrap();
    assert_eq!(
        again.map(|s| s.content_id()),
        first.as_ref().map(|s| s.content_id())
    );
    let variant = builder
        .series_for(release, Flavour::FallbackFirst)
        .unwrap()
        .unwrap();
    assert_eq!(variant.patches.len(), first.unwrap().patches.len() + 1);
    let elsewhere = Builder {
        patches_dir: copy.path().join("none"),
        ..builder
    };
    let err = elsewhere.series_for(release, Flavour::Patched).unwrap_err();
    assert!(
        format!("{err:#}").contains("has no patch series"),
        "{err:#}"
    );
}
