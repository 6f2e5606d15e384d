//! The templates' edits read back by the model's own ELF reader, worlds that depend on the
//! seed and trial alone, and the fuzzer shown able to fail.

use super::world::{Dir, Entry, Object, Places, Search, Tag};
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
        .library("libfz1.so", &needed, &object, &places())
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
    let bytes = templates.program(&[], &object, &places()).unwrap();
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
    let env = Global::default().resolve().unwrap();
    let release = Release::parse("2.44").unwrap();
    let sysroot = cached_sysroot(&env, release, Target::X86_64, Flavour::Patched).unwrap();
    let Some(sysroot) = sysroot else {
        let why = "no cached glibc 2.44 x86_64 patched sysroot (this test never builds glibc)";
        assert!(!in_ci(), "{why}");
        diagln!("SKIPPED: {why}");
        return;
    };
    let fuzzer = Fuzzer::new(&sysroot, &env.cache).unwrap();
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
