//! A new glibc release is data: `cargo xtask rehearse-release` takes the version after the
//! newest supported release, made from the newest's tree in the store, through
//! `update-release X.Y --source tarball:... --no-verify --no-build-check` in scratch copies of
//! the checkout and the store. The update must exit 0, write the release's row and series and
//! nothing that is Rust or Cargo, and `rebase-glibc --check` must then pass on every release.
//!
//! Retiring the oldest release in the same copy is the inverse: its series, resolutions,
//! cells and row go, `rebase-glibc --check` passes on the rest, and no source file changes.
//!
//! The real store is read (every supported release in it: imported from Debian first where
//! the store lacks one, as `real_release`'s tests do) and never written: the rehearsal's
//! store borrows its objects.

use std::process::Command;

use model::{Release, Table};
use xtask::store::SourceStore;

use crate::common::project::Ran;

#[test]
fn a_new_release_and_a_retired_one_take_no_code_edit() {
    let env = xtask::cli::Global::default().resolve().unwrap();
    let store = SourceStore::open(&env.store).unwrap();
    for release in model::supported() {
        store.ensure_release(*release).unwrap();
    }
    let newest = Release::newest();
    let (major, minor) = model::version_numbers(newest.version()).unwrap();
    let next = format!("{major}.{}", minor + 1);

    let tmp = tempfile::TempDir::new().unwrap();
    let scratch = tmp.path().join("rehearsal");
    let started = std::time::Instant::now();
    let ran = Ran::of(
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["rehearse-release", "--keep"])
            .arg(&scratch)
            .env_remove("LD_FALLBACK_CHECKOUT")
            .env_remove("LD_FALLBACK_PATCHES")
            .output()
            .unwrap(),
    )
    .expect(0);
    eprintln!(
        "rehearse-release took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let out = ran.both();
    assert!(
        out.contains(&format!(
            "rehearse-release: passed: no source file changed; `rebase-glibc --check` passes on every release, {next} included"
        )),
        "{out}"
    );

    // The row pins the tree the store's copy holds; the series is on it.
    let checkout = scratch.join("checkout");
    let table =
        Table::parse(&std::fs::read_to_string(checkout.join(model::TABLE_PATH)).unwrap()).unwrap();
    let row = table.row(&next).unwrap();
    let copy = SourceStore::open(&scratch.join("glibc.git")).unwrap();
    let stored = copy
        .list()
        .unwrap()
        .into_iter()
        .find(|s| s.tag == format!("glibc-{next}"))
        .unwrap();
    assert_eq!(row.tree, stored.tree.to_string());
    // (Read as text: this process's table is the checkout's, without the new release, and
    // the tests beside this one share it.)
    let series = |version: &str| {
        std::fs::read_to_string(checkout.join("patches").join(version).join("series")).unwrap()
    };
    let new = series(&next);
    assert!(
        new.starts_with(&format!("# base: glibc-{next} {}\n", stored.tree)),
        "{new}"
    );
    let patches = |text: &str| text.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(patches(&new), patches(&series(newest.version())));
    // The variant the Jetson replay builds on the newest release came along.
    assert!(checkout
        .join("patches/variants/fallback-first")
        .join(&next)
        .is_dir());
    // The workflow names the new release's cells; the real store has no new tag.
    let workflow = std::fs::read_to_string(checkout.join(".github/workflows/verify.yml")).unwrap();
    assert!(workflow.contains(&format!("\"{next}\"]")), "{workflow}");
    assert!(store
        .list()
        .unwrap()
        .iter()
        .all(|s| s.tag != format!("glibc-{next}")));

    // The oldest release retired in the same copy.
    let oldest = model::supported()[0].version();
    let in_copy = |args: &[&str]| {
        Ran::of(
            Command::new(env!("CARGO_BIN_EXE_xtask"))
                .arg("--store")
                .arg(scratch.join("glibc.git"))
                .args(args)
                .env("LD_FALLBACK_CHECKOUT", &checkout)
                .env("LD_FALLBACK_CACHE", scratch.join("cache"))
                .env_remove("LD_FALLBACK_PATCHES")
                .output()
                .unwrap(),
        )
    };
    let ran = in_copy(&["retire-release", oldest]).expect(0);
    assert!(
        ran.stdout.contains(&format!(
            "glibc {oldest} is retired; the newest release is {next}"
        )),
        "{}",
        ran.both()
    );
    in_copy(&["rebase-glibc", "--check"]).expect(0);
    let table =
        Table::parse(&std::fs::read_to_string(checkout.join(model::TABLE_PATH)).unwrap()).unwrap();
    assert!(table.row(oldest).is_none());
    for gone in ["", "resolutions/", "stable/"] {
        let dir = checkout.join(format!("patches/{gone}{oldest}"));
        assert!(!dir.exists(), "{} is still there", dir.display());
    }
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(checkout.join("docs/support.json")).unwrap())
            .unwrap();
    let cells = record["cells"].as_array().unwrap();
    assert!(!cells.is_empty());
    assert!(cells.iter().all(|c| c["release"] != oldest), "{record}");
    let readme = std::fs::read_to_string(checkout.join("README.md")).unwrap();
    assert!(
        !readme.contains(&format!("glibc {oldest},")),
        "README still names {oldest}"
    );
    let changed = Ran::of(
        Command::new("git")
            .args(["-C"])
            .arg(&checkout)
            .args(["status", "--porcelain"])
            .output()
            .unwrap(),
    )
    .expect(0);
    assert!(
        !changed
            .stdout
            .lines()
            .any(|l| l.ends_with(".rs") || l.ends_with("Cargo.toml") || l.ends_with("Cargo.lock")),
        "{}",
        changed.stdout
    );
}
