//! The templates' edits read back by the model's own ELF reader, worlds that depend on the
//! seed and trial alone, and the fuzzer shown able to fail.

use super::world::{Call, Dir, Entry, Library, List, Noise, Object, Places, Search, Tag};
use super::*;
use crate::cli::Global;
use loader_tests::host::in_ci;

fn places() -> Places {
    Places {
        slibdir: "/lib64".into(),
        libdir: "/usr/lib64".into(),
        dst_lib: "lib64".into(),
        platform: "x86_64".into(),
    }
}

/// The templates of this machine's target, or `None` (SKIPPED outside CI) without a compiler.
fn templates(dir: &Path) -> Option<Templates> {
    match Templates::compile(Target::X86_64, "/lib64/ld-linux-x86-64.so.2", dir) {
        Ok(t) => Some(t),
        Err(err) => {
            let why = format!("cannot compile the templates: {err:#}");
            assert!(!in_ci(), "{why}");
            diagln!("SKIPPED: {why}");
            None
        }
    }
}

#[test]
fn an_edited_library_has_the_worlds_dynamic_section() {
    let dir = tempfile::tempdir().unwrap();
    let Some(templates) = templates(dir.path()) else {
        return;
    };
    let object = Object {
        needed: Vec::new(),
        search: Some(Search {
            tag: Tag::Rpath,
            entries: vec![Entry::Origin, Entry::Absolute(Dir::B), Entry::Lib],
        }),
        nodefaultlib: true,
    };
    let needed = ["libfz3.so".to_string(), "libfz5.so".to_string()];
    let bytes = templates
        .library(false, "libfz1.so", &needed, &object, &places())
        .unwrap();
    let d = loader_model::elf::dynamic(&bytes).unwrap();
    assert_eq!(d.soname.unwrap(), "libfz1.so");
    assert_eq!(d.needed, ["libfz3.so", "libfz5.so"]);
    assert_eq!(d.rpath.unwrap(), "$ORIGIN:/fz/b:/fz/$LIB");
    assert_eq!(d.runpath, None);
    assert!(d.nodeflib);
}

#[test]
fn an_edited_program_keeps_its_interpreter_and_drops_what_the_world_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let Some(templates) = templates(dir.path()) else {
        return;
    };
    let object = Object {
        needed: Vec::new(),
        search: None,
        nodefaultlib: false,
    };
    let bytes = templates.program(false, &[], &object, &places()).unwrap();
    let d = loader_model::elf::dynamic(&bytes).unwrap();
    assert_eq!(d.interpreter.unwrap(), "/lib64/ld-linux-x86-64.so.2");
    assert!(d.needed.is_empty() && d.soname.is_none());
    assert_eq!((d.rpath, d.runpath, d.nodeflib), (None, None, false));
}

#[test]
fn a_trial_is_the_same_world_whatever_ran_before_it() {
    let strategy = world::world();
    let world = |seed, trial| {
        strategy
            .new_tree(&mut runner(seed, trial))
            .unwrap()
            .current()
    };
    assert_eq!(world(7, 41), world(7, 41));
    assert_ne!(world(7, 41), world(7, 42));
    assert_ne!(world(7, 41), world(8, 41));
}

/// The fuzzer can fail: the unpatched model held against the patched loader disagrees
/// (LD_FALLBACK_PATH is searched by one and not the other) within a few hundred worlds, and
/// the finding is shrunk to a world of at most two libraries.
#[test]
fn the_unpatched_model_disagrees_with_the_patched_loader() {
    let Some((_env, fuzzer)) = patched_fuzzer() else {
        return;
    };
    let release = Release::parse("2.44").unwrap();
    let campaign = Campaign {
        release,
        target: Target::X86_64,
        flavour: Flavour::Patched,
        model_flavour: Flavour::Unpatched,
        seed: 1,
    };
    let log = tempfile::NamedTempFile::new().unwrap();
    let summary = campaign.run(&fuzzer, 0..300, log.path()).unwrap();
    let finding = summary.finding.expect(
        "300 worlds and no disagreement between the unpatched model and the patched loader",
    );
    assert_eq!(finding.kind, Kind::Disagreement, "{finding:#?}");
    assert!(finding.world.libraries.len() <= 2, "{finding:#?}");
    assert!(finding.world.fallback_path.is_some(), "{finding:#?}");
}

/// The fuzzer of the cached glibc 2.44 x86_64 patched sysroot, or `None` (SKIPPED outside
/// CI) where there is none.
fn patched_fuzzer() -> Option<(Env, Fuzzer)> {
    let env = Global::default().resolve().unwrap();
    let release = Release::parse("2.44").unwrap();
    let sysroot = cached_sysroot(&env, release, Target::X86_64, Flavour::Patched).unwrap();
    let Some(sysroot) = sysroot else {
        let why = "no cached glibc 2.44 x86_64 patched sysroot (this test never builds glibc)";
        assert!(!in_ci(), "{why}");
        diagln!("SKIPPED: {why}");
        return None;
    };
    let fuzzer = Fuzzer::new(&sysroot, &env.cache).unwrap();
    Some((env, fuzzer))
}

fn plain(needed: &[usize], search: Option<Search>) -> Object {
    Object {
        needed: needed.to_vec(),
        search,
        nodefaultlib: false,
    }
}

fn library(object: Object, copies: &[Dir]) -> Library {
    Library {
        object,
        copies: copies.to_vec(),
    }
}

fn bare(program: Object, libraries: Vec<Library>, calls: Vec<Call>) -> World {
    World {
        program,
        libraries,
        library_path: None,
        fallback_path: None,
        preload: Vec::new(),
        cached: Vec::new(),
        listing: false,
        calls,
        secure: false,
    }
}

fn fallback(dirs: &[Dir]) -> Option<List> {
    Some(List {
        entries: dirs.iter().copied().map(Entry::Absolute).collect(),
        semicolons: false,
        noise: Vec::new(),
    })
}

fn assert_agrees(fuzzer: &Fuzzer, world: &World, model: Flavour) {
    match fuzzer.judge(world, model).unwrap() {
        WorldVerdict::Agrees { .. } => {}
        WorldVerdict::Finding(kind, what) => panic!("{kind:?} ({model} model):\n{what}"),
    }
}

fn assert_disagrees(fuzzer: &Fuzzer, world: &World, model: Flavour) {
    match fuzzer.judge(world, model).unwrap() {
        WorldVerdict::Finding(Kind::Disagreement, _) => {}
        other => panic!("the {model} model does not disagree: {other:?}"),
    }
}

/// `dlopen` from the program, and from a library the loader found through LD_FALLBACK_PATH
/// (with that library's `$ORIGIN`): each search is held against the model, so the unpatched
/// model, which never searches the fallback, disagrees where the patched one agrees.
#[test]
fn dlopens_from_the_program_and_from_a_fallback_library_are_compared() {
    let Some((_env, fuzzer)) = patched_fuzzer() else {
        return;
    };
    let origin = Some(Search {
        tag: Tag::Runpath,
        entries: vec![Entry::Origin],
    });
    let mut world = bare(
        plain(&[0], None),
        vec![
            library(plain(&[], origin), &[Dir::B]),
            library(plain(&[], None), &[Dir::B]),
            library(plain(&[], None), &[Dir::C]),
        ],
        vec![
            Call::FromLibrary {
                caller: 0,
                library: 1,
            },
            Call::Dlopen(2),
        ],
    );
    world.fallback_path = fallback(&[Dir::C, Dir::B]);
    assert_agrees(&fuzzer, &world, Flavour::Patched);
    assert_disagrees(&fuzzer, &world, Flavour::Unpatched);
    // Only the program's dlopen reaches the fallback: its search alone tells them apart.
    world.libraries[0].copies = vec![Dir::A];
    world.libraries[0].object.search = None;
    world.program.search = Some(Search {
        tag: Tag::Runpath,
        entries: vec![Entry::Absolute(Dir::A)],
    });
    world.calls = vec![Call::Dlopen(2)];
    assert_agrees(&fuzzer, &world, Flavour::Patched);
    assert_disagrees(&fuzzer, &world, Flavour::Unpatched);
}

/// Shrunk from a campaign: a library that `dlmopen` maps into a new namespace needs
/// libc.so.6, which needs the loader; ld.so.cache names the loader's file, and the loader's
/// own map answers (no new map in the trace, and yet found: the probe's `dlmopen` succeeds).
#[test]
fn a_new_namespace_gets_the_loader_through_the_cache() {
    let Some((_env, fuzzer)) = patched_fuzzer() else {
        return;
    };
    let mut world = bare(
        plain(&[0], None),
        vec![library(plain(&[], None), &[Dir::DstLib])],
        vec![Call::Dlmopen(0)],
    );
    world.cached = vec![Dir::DstLib];
    assert_agrees(&fuzzer, &world, Flavour::Patched);
}

/// A killed campaign leaves its scratch directory: the next one removes it, and leaves a
/// live campaign's (locked) and a young unlocked one alone.
#[test]
fn an_abandoned_scratch_directory_is_removed() {
    let parent = tempfile::tempdir().unwrap();
    let make = |name: &str, lock: bool| {
        let dir = parent.path().join(name);
        std::fs::create_dir_all(dir.join("world-3")).unwrap();
        lock.then(|| std::fs::File::create(dir.join(SCRATCH_LOCK)).unwrap())
    };
    make("fuzz-model-killed", true);
    let live = make("fuzz-model-live", true).unwrap();
    live.try_lock().unwrap();
    make("fuzz-model-starting", false);
    make("other", false);
    let removed = remove_abandoned(parent.path(), std::time::SystemTime::now()).unwrap();
    assert_eq!(removed, [parent.path().join("fuzz-model-killed")]);
    let later = std::time::SystemTime::now() + UNLOCKED_GRACE * 2;
    let removed = remove_abandoned(parent.path(), later).unwrap();
    assert_eq!(removed, [parent.path().join("fuzz-model-starting")]);
    assert!(parent.path().join("fuzz-model-live").exists());
    assert!(parent.path().join("other").exists());
    drop(live);
}

/// Secure mode: the loader ignores LD_FALLBACK_PATH and LD_LIBRARY_PATH (and a `$ORIGIN`
/// outside the trusted directories); the probe's records of its calls and whether it
/// started are held against the model told AT_SECURE.
#[test]
fn a_secure_world_is_compared_by_the_probes_records() {
    let Some((_env, fuzzer)) = patched_fuzzer() else {
        return;
    };
    let mut world = bare(
        plain(&[0], None),
        vec![
            library(plain(&[], None), &[Dir::Slib]),
            library(plain(&[], None), &[Dir::B]),
        ],
        vec![Call::Dlopen(1), Call::Dlmopen(0)],
    );
    world.secure = true;
    world.fallback_path = fallback(&[Dir::B]);
    world.library_path = fallback(&[Dir::B]);
    assert_agrees(&fuzzer, &world, Flavour::Patched);
}

/// Shrunk from a campaign: a secure run starts in `/` (chroot changes there), so an empty
/// RUNPATH entry names `/`, not the working directory the other worlds run in.
#[test]
fn a_secure_world_runs_in_the_root_directory() {
    let Some((_env, fuzzer)) = patched_fuzzer() else {
        return;
    };
    let runpath = Some(Search {
        tag: Tag::Runpath,
        entries: vec![Entry::Empty, Entry::Absolute(Dir::A)],
    });
    let mut world = bare(
        plain(&[0], runpath),
        vec![library(plain(&[], None), &[Dir::Cwd])],
        vec![Call::Dlopen(0)],
    );
    world.secure = true;
    assert_agrees(&fuzzer, &world, Flavour::Patched);
}

/// Shrunk from a campaign: a list entry of one non-breaking space, which the trace reading
/// once trimmed from the file the loader tried.
#[test]
fn a_list_entry_of_a_non_breaking_space_is_compared_whole() {
    let Some((_env, fuzzer)) = patched_fuzzer() else {
        return;
    };
    let mut world = bare(
        plain(&[0], None),
        vec![library(plain(&[], None), &[])],
        Vec::new(),
    );
    world.library_path = Some(List {
        entries: Vec::new(),
        semicolons: false,
        noise: vec![Noise::Junk("\u{a0}".into())],
    });
    assert_agrees(&fuzzer, &world, Flavour::Patched);
}
