//! The build cache: keys, publication, and what killed or failed builds leave behind.

use super::*;

fn inputs() -> KeyInputs {
    KeyInputs {
        release: Release::parse("2.44").unwrap(),
        tree_id: "1111111111111111111111111111111111111111".into(),
        series_id: Some("series-a".into()),
        flavour: Flavour::Patched,
        target: Target::X86_64,
        configure_flags: vec!["--prefix=/usr".into(), "--disable-werror".into()],
        environment: vec![("CC".into(), "gcc".into())],
        compiler: "gcc (Debian 12.2.0-14) 12.2.0".into(),
        recipe: 1,
    }
}

/// A build cache in a fresh temp dir (kept alive by the first half).
fn empty_cache() -> (tempfile::TempDir, BuildCache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = BuildCache::new(dir.path());
    (dir, cache)
}

#[test]
fn equal_inputs_give_equal_keys() {
    assert_eq!(inputs().key(), inputs().key());
    assert_eq!(inputs().entry_name(), inputs().entry_name());
    assert!(inputs().entry_name().starts_with("2.44-x86_64-patched-"));
}

/// The text a key hashes, pinned byte for byte for two known sets of inputs: builds are cached
/// under keys of it (in CI caches too), so a refactor of the types that make it (releases,
/// targets, flavours) must not change a byte. Keyed on the inputs, never on a type's name.
#[test]
fn the_key_text_of_known_inputs_is_pinned() {
    assert_eq!(
        inputs().text(),
        "recipe 1\nrelease 2.44\ntree 1111111111111111111111111111111111111111\nseries series-a\n\
         target x86_64\ncompiler gcc (Debian 12.2.0-14) 12.2.0\nconfigure --prefix=/usr\n\
         configure --disable-werror\nenv CC=gcc\n"
    );
    assert_eq!(inputs().key(), "ead11805a1311c24775f5e909589f466d17a1e13");
    assert_eq!(
        inputs().entry_name(),
        "2.44-x86_64-patched-ead11805a1311c24"
    );
    let variant = KeyInputs {
        release: Release::parse("2.41").unwrap(),
        tree_id: "1eb2ab87021ce79bc0aa92c3bdc7ef13689a09a6".into(),
        series_id: Some("0123abcd".into()),
        flavour: Flavour::FallbackFirst,
        target: Target::Aarch64,
        configure_flags: vec!["--prefix=/usr".into()],
        environment: vec![
            ("CC".into(), "aarch64-linux-gnu-gcc".into()),
            ("CFLAGS".into(), "-O2 -g".into()),
        ],
        compiler: "aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0".into(),
        recipe: 7,
    };
    assert_eq!(
        variant.text(),
        "recipe 7\nrelease 2.41\ntree 1eb2ab87021ce79bc0aa92c3bdc7ef13689a09a6\nseries 0123abcd\n\
         target aarch64\ncompiler aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0\n\
         variant fallback-first\nconfigure --prefix=/usr\nenv CC=aarch64-linux-gnu-gcc\n\
         env CFLAGS=-O2 -g\n"
    );
    assert_eq!(variant.key(), "7225d601c6b262f0ec54b7abf83495b37330f5ea");
    assert_eq!(variant.label(), "glibc 2.41 aarch64 fallback-first");
}

type Change = Box<dyn Fn(&mut KeyInputs)>;

#[test]
fn every_input_changes_the_key() {
    let base = inputs().key();
    let changes: Vec<(&str, Change)> = vec![
        (
            "series",
            Box::new(|i| i.series_id = Some("series-b".into())),
        ),
        ("unpatched", Box::new(|i| i.series_id = None)),
        ("tree", Box::new(|i| i.tree_id = "2222".into())),
        (
            "release",
            Box::new(|i| i.release = Release::parse("2.43").unwrap()),
        ),
        ("target", Box::new(|i| i.target = Target::Aarch64)),
        (
            "flags",
            Box::new(|i| i.configure_flags.push("--enable-x".into())),
        ),
        ("env", Box::new(|i| i.environment[0].1 = "clang".into())),
        (
            "compiler",
            Box::new(|i| i.compiler = "gcc (Debian 13.1.0-1) 13.1.0".into()),
        ),
        ("recipe", Box::new(|i| i.recipe = 2)),
        ("variant", Box::new(|i| i.flavour = Flavour::FallbackFirst)),
    ];
    for (what, change) in changes {
        let mut changed = inputs();
        change(&mut changed);
        assert_ne!(changed.key(), base, "changing the {what} kept the key");
        assert_ne!(changed.entry_name(), inputs().entry_name(), "{what}");
    }
}

#[test]
fn a_variant_is_named_and_kept_as_a_flavour_of_its_own() {
    let mut variant = inputs();
    variant.flavour = Flavour::FallbackFirst;
    assert!(variant
        .entry_name()
        .starts_with("2.44-x86_64-fallback-first-"));
    assert!(variant.text().contains("variant fallback-first\n"));
    assert!(!inputs().text().contains("variant"));
    let manifest = Manifest::new(&variant, 1, Path::new("/dev/null"));
    assert_eq!(manifest.flavour, Flavour::FallbackFirst);
    assert!(manifest.render().contains("\nflavour: fallback-first\n"));
}

#[test]
fn manifest_round_trips() {
    let manifest = Manifest::new(&inputs(), 412, Path::new("/tmp/x.log"));
    assert_eq!(Manifest::parse(&manifest.render()).unwrap(), manifest);
    assert!(manifest
        .render()
        .starts_with("release: 2.44\ntarget: x86_64\nflavour: patched\n"));
}

/// A build of a release this checkout no longer supports is no entry of its cache: its
/// manifest does not read, so neither a lookup nor `--list` takes it for one.
#[test]
fn a_manifest_of_an_unsupported_release_does_not_read() {
    let text = Manifest::new(&inputs(), 1, Path::new("/dev/null"))
        .render()
        .replace("release: 2.44\n", "release: 2.39\n");
    let err = format!("{:#}", Manifest::parse(&text).unwrap_err());
    assert!(
        err.contains("glibc 2.39 is not a supported release"),
        "{err}"
    );
}

/// A stand-in for configure/make/install: writes a few files into the staging sysroot.
fn fake_install(staging: &Staging) {
    let lib = staging.sysroot().join("lib64");
    fs::create_dir_all(&lib).unwrap();
    fs::write(lib.join("ld-linux-x86-64.so.2"), "loader").unwrap();
}

fn fake_build(cache: &BuildCache, inputs: &KeyInputs) -> Entry {
    let name = inputs.entry_name();
    let _lock = cache.lock(&name).unwrap();
    let staging = cache.stage(&name).unwrap();
    fake_install(&staging);
    staging
        .publish(&Manifest::new(inputs, 1, Path::new("/dev/null")))
        .unwrap()
}

fn visible(cache: &BuildCache) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(cache.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".locks")
        .collect();
    names.sort();
    names
}

#[test]
fn published_build_is_found() {
    let (_dir, cache) = empty_cache();
    let name = inputs().entry_name();
    assert!(cache.lookup(&name).is_none());
    let entry = fake_build(&cache, &inputs());
    let found = cache.lookup(&name).unwrap();
    assert_eq!(found.dir, entry.dir);
    assert_eq!(found.manifest.key, inputs().key());
    assert!(found.sysroot().join("lib64/ld-linux-x86-64.so.2").is_file());
    assert_eq!(visible(&cache), vec![name]);
}

#[test]
fn failed_build_leaves_nothing() {
    let (_dir, cache) = empty_cache();
    let name = inputs().entry_name();
    let result: Result<Entry> = (|| {
        let staging = cache.stage(&name)?;
        fake_install(&staging);
        bail!("make failed");
    })();
    assert!(result.is_err());
    assert!(cache.lookup(&name).is_none());
    assert!(visible(&cache).is_empty(), "{:?}", visible(&cache));
}

#[test]
fn killed_build_is_never_taken_for_a_finished_one() {
    let (_dir, cache) = empty_cache();
    let name = inputs().entry_name();
    let staging = cache.stage(&name).unwrap();
    fake_install(&staging);
    // The process dies here: no destructor runs, the staging directory stays.
    std::mem::forget(staging);
    assert!(cache.lookup(&name).is_none());
    assert!(cache.list().unwrap().is_empty());
    assert_eq!(visible(&cache).len(), 1);

    // The next build of the key clears the leftover and publishes.
    fake_build(&cache, &inputs());
    assert!(cache.lookup(&name).is_some());
    assert_eq!(visible(&cache), vec![name]);
}

#[test]
fn directory_without_manifest_is_ignored_and_replaced() {
    let (dir, cache) = empty_cache();
    let name = inputs().entry_name();
    fs::create_dir_all(dir.path().join(&name).join("sysroot/lib64")).unwrap();
    assert!(cache.lookup(&name).is_none());
    assert!(cache.list().unwrap().is_empty());
    let entry = fake_build(&cache, &inputs());
    assert!(entry.dir.join(MANIFEST).is_file());
}

#[test]
fn republishing_replaces_the_old_build() {
    let (_dir, cache) = empty_cache();
    let first = fake_build(&cache, &inputs());
    fs::write(first.sysroot().join("old-marker"), "").unwrap();
    let second = fake_build(&cache, &inputs());
    assert_eq!(first.dir, second.dir);
    assert!(!second.sysroot().join("old-marker").exists());
    assert_eq!(visible(&cache).len(), 1);
}

#[test]
fn prune_keeps_the_newest_per_flavour() {
    let (_dir, cache) = empty_cache();
    let mut old = inputs();
    old.series_id = Some("old-series".into());
    let old_entry = fake_build(&cache, &old);
    // Manifests have one-second resolution: age the old one explicitly.
    let manifest_path = old_entry.dir.join(MANIFEST);
    let mut manifest = Manifest::parse(&fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest.created -= 100;
    fs::write(&manifest_path, manifest.render()).unwrap();
    let new_entry = fake_build(&cache, &inputs());
    let mut unpatched = inputs();
    unpatched.series_id = None;
    unpatched.flavour = Flavour::Unpatched;
    let unpatched_entry = fake_build(&cache, &unpatched);

    let removed = cache.prune().unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].dir, old_entry.dir);
    let mut left: Vec<PathBuf> = cache.list().unwrap().into_iter().map(|e| e.dir).collect();
    left.sort();
    let mut expected = vec![new_entry.dir, unpatched_entry.dir];
    expected.sort();
    assert_eq!(left, expected);
    assert!(!old_entry.dir.exists());
}

#[test]
fn prune_removes_leftovers_of_killed_builds_but_not_of_running_ones() {
    let (_dir, cache) = empty_cache();
    let killed = inputs();
    let mut running = inputs();
    running.target = Target::Aarch64;
    std::mem::forget(cache.stage(&killed.entry_name()).unwrap());
    let _held = cache.lock(&running.entry_name()).unwrap();
    let in_progress = cache.stage(&running.entry_name()).unwrap();
    assert_eq!(visible(&cache).len(), 2);

    cache.prune().unwrap();
    assert_eq!(visible(&cache).len(), 1);
    assert!(in_progress.dir.is_dir());
}
