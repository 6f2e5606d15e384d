//! Real glibc builds: minutes each, so ignored by default. CI runs them once through
//! `cargo xtask sysroot`; run these by hand with `cargo test -p xtask --test it -- build_glibc:: --ignored`.
//! A cached build makes them return in seconds.

use std::path::Path;
use std::process::Command;

use model::Release;
use model::{Flavour, Sysroot, Target};
use xtask::cli::Global;
use xtask::sysroot::Builder;

/// The cached sysroot, built first if needed, as a command without options gets it.
fn ensure_sysroot(release: Release, target: Target, flavour: Flavour) -> Sysroot {
    let env = Global::default().resolve().unwrap();
    Builder::new(&env)
        .ensure(release, target, flavour)
        .unwrap()
        .sysroot
}

fn assert_system_layout(sysroot: &Sysroot) {
    let loader = sysroot
        .path
        .join(sysroot.target.loader_path().trim_start_matches('/'));
    assert!(loader.exists(), "no loader at {}", loader.display());
    for file in [
        "usr/bin/ldd",
        "sbin/ldconfig",
        "usr/include/stdio.h",
        "usr/lib64/crt1.o",
        "lib64/libc.so.6",
    ] {
        assert!(
            sysroot.path.join(file).exists(),
            "{file} missing in {}",
            sysroot.path.display()
        );
    }
}

#[test]
#[ignore = "builds glibc for x86_64 (about 7 min on 2 cores) unless cached"]
fn x86_64_sysroot_has_a_working_loader() {
    let release = Release::newest();
    let sysroot = ensure_sysroot(release, Target::X86_64, Flavour::Unpatched);
    assert_system_layout(&sysroot);
    let out = Command::new(sysroot.path.join("lib64/ld-linux-x86-64.so.2"))
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("version {}", release.version())),
        "{text}"
    );
}

#[test]
#[ignore = "builds glibc for aarch64 (about 6 min on 2 cores) unless cached"]
fn aarch64_sysroot_has_its_loader_in_lib() {
    let sysroot = ensure_sysroot(Release::newest(), Target::Aarch64, Flavour::Unpatched);
    assert_system_layout(&sysroot);
    assert!(Path::new(&sysroot.path)
        .join("lib/ld-linux-aarch64.so.1")
        .exists());
}
