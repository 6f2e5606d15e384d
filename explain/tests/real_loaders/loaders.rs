//! A loader other than the program's interpreter runs it: one named by `--loader` (started
//! as `LOADER PROGRAM`, as a wrapper starts it), one a makeWrapper-style script's program
//! names, and one a shell wrapper `exec`s with its options (docs/nix.md's wrapper). Each is
//! run for real under the sysroot's loader of the flavour (patched: it starts, exit status
//! 0; unpatched: 127), and explain must give the same verdict, judging that loader, not the
//! program's interpreter (the stock 2.36 one).

use std::fs;
use std::path::Path;
use std::process::Command;

use loader_tests::differential::{self, LoaderUnderTest};
use loader_tests::probe::Invocation;
use model::Flavour;

use super::{explain, fixture, says, scratch, sysroot, tools, with_interpreter, LOADER, TARGET};

pub(super) type Case = fn(Flavour) -> Result<(), String>;

pub(super) const CASES: &[(&str, Case)] = &[
    ("loader-option-in-a-root", loader_option),
    ("wrapper-scripts", wrappers),
];

/// The real run's exit status the flavour gives a program whose library only the fallback
/// holds.
fn want_real(flavour: Flavour) -> i32 {
    if flavour.is_patched() {
        0
    } else {
        127
    }
}

/// explain's exit status for that run.
fn want_explain(flavour: Flavour) -> i32 {
    if flavour.is_patched() {
        0
    } else {
        2
    }
}

/// The model of `loader` (a path in `invocation`'s root, run as the command) against the
/// real run's trace.
fn agrees_with_trace(
    invocation: &Invocation,
    loader: &str,
    flavour: Flavour,
) -> Result<(), String> {
    let host_loader = invocation.root.join(loader.trim_start_matches('/'));
    let bytes = fs::read(&host_loader).map_err(|e| format!("{}: {e}", host_loader.display()))?;
    let release = loader_model::platform::release_of(&bytes).ok_or("the loader says no release")?;
    let checked = differential::check(
        invocation,
        LoaderUnderTest {
            path: loader,
            release,
            target: TARGET,
            flavour,
        },
    );
    match checked.difference {
        None => Ok(()),
        Some(difference) => Err(format!(
            "the model of {loader} differs from {}:\n{difference}",
            invocation.display()
        )),
    }
}

/// A root whose `/lib64/ld-linux-x86-64.so.2`, the program's interpreter, is this machine's
/// stock loader, and whose `/alt/ld-linux-x86-64.so.2` is the sysroot's loader of
/// `flavour` (its libc in `/lib64`): `/alt/ld-linux-x86-64.so.2 /fx/needed` runs the
/// program under the sysroot's loader. explain with `--loader /alt/...` must judge that
/// one; without it, the stock one.
fn loader_option(flavour: Flavour) -> Result<(), String> {
    let f = fixture()?;
    let sysroot = sysroot(flavour)?;
    let dir = scratch("explain-loader-")?;
    let root = dir.path();
    let io = |e: std::io::Error| e.to_string();
    for sub in ["lib64", "alt", "fx/driver", "tmp", "proc", "dev"] {
        fs::create_dir_all(root.join(sub)).map_err(io)?;
    }
    fs::copy(LOADER, root.join("lib64/ld-linux-x86-64.so.2")).map_err(io)?;
    fs::copy(
        sysroot.join("lib64/libc.so.6"),
        root.join("lib64/libc.so.6"),
    )
    .map_err(io)?;
    fs::copy(
        sysroot.join("lib64/ld-linux-x86-64.so.2"),
        root.join("alt/ld-linux-x86-64.so.2"),
    )
    .map_err(io)?;
    fs::copy(f.dir.join("needed"), root.join("fx/needed")).map_err(io)?;
    fs::copy(
        f.dir.join("driver/libcuda.so.1"),
        root.join("fx/driver/libcuda.so.1"),
    )
    .map_err(io)?;
    let alt = "/alt/ld-linux-x86-64.so.2";
    let invocation = Invocation {
        root: root.to_path_buf(),
        cwd: "/".into(),
        qemu: None,
        argv: vec![alt.into(), "/fx/needed".into(), "needed".into()],
        env: vec![("LD_FALLBACK_PATH".into(), "/fx/driver".into())],
        secure: false,
        placed: Vec::new(),
    };
    let real = invocation
        .command()
        .output()
        .map_err(|e| format!("cannot run {}: {e}", invocation.display()))?
        .status;
    if real.code() != Some(want_real(flavour)) {
        return Err(format!(
            "{} under the {flavour} loader ends with {real}",
            invocation.display()
        ));
    }
    agrees_with_trace(&invocation, alt, flavour)?;
    let root_arg = root.display().to_string();
    let args = [
        "/fx/needed",
        "--root",
        &root_arg,
        "--fallback-path",
        "/fx/driver",
    ];
    let x = explain(Path::new("/"), &[&args[..], &["--loader", alt]].concat())?;
    says(
        &x,
        want_explain(flavour),
        &[
            &format!("/fx/needed: glibc 2.44 x86_64 loader, {flavour} ({alt})"),
            &format!("  loader: {alt} (--loader) runs the program as a command (`{alt} PROGRAM`), not its interpreter {LOADER}"),
        ],
    )?;
    // Without --loader: the program's interpreter, the stock loader, which ignores the
    // fallback whatever the sysroot's loader does.
    let x = explain(Path::new("/"), &args)?;
    says(
        &x,
        2,
        &[&format!(
            "/fx/needed: glibc 2.36 x86_64 loader, unpatched ({LOADER})"
        )],
    )
}

/// Two wrappers of `needed`, on this machine: a makeWrapper script (its `--set` and
/// `--prefix` lines as nixpkgs' make-wrapper.sh writes them) that exports LD_FALLBACK_PATH
/// and starts `.app-wrapped`, whose interpreter is the sysroot's loader; and docs/nix.md's
/// shell wrapper, which `exec`s the sysroot's loader with `--fallback-path` and the
/// program. Each run for real, then explained as the program it starts.
fn wrappers(flavour: Flavour) -> Result<(), String> {
    let f = fixture()?;
    let sysroot = sysroot(flavour)?;
    let lib64 = sysroot.join("lib64").display().to_string();
    let loader = format!("{lib64}/ld-linux-x86-64.so.2");
    let dir = scratch("explain-wrapper-")?;
    let io = |e: std::io::Error| e.to_string();
    let at = |name: &str| dir.path().join(name).display().to_string();
    let driver = f.driver();
    // The wrapped program: the sysroot's loader as its interpreter, its libc by RUNPATH.
    let wrapped = dir.path().join(".app-wrapped");
    with_interpreter(&f.dir.join("needed"), &wrapped, &loader)?;
    let plain = dir.path().join("plain");
    fs::copy(f.dir.join("needed"), &plain).map_err(io)?;
    for program in [&wrapped, &plain] {
        let out = Command::new(tools::PATCHELF.program)
            .args(["--set-rpath", &lib64])
            .arg(program)
            .output()
            .map_err(io)?;
        if !out.status.success() {
            return Err(format!(
                "patchelf --set-rpath: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let app = at("app");
    fs::write(
        &app,
        format!(
            r#"#! /bin/bash -e
export LD_FALLBACK_PATH='{driver}'
LD_LIBRARY_PATH=${{LD_LIBRARY_PATH:+':'$LD_LIBRARY_PATH':'}}
LD_LIBRARY_PATH=${{LD_LIBRARY_PATH/':''/nowhere/lib'':'/':'}}
LD_LIBRARY_PATH='/nowhere/lib'$LD_LIBRARY_PATH
LD_LIBRARY_PATH=${{LD_LIBRARY_PATH#':'}}
LD_LIBRARY_PATH=${{LD_LIBRARY_PATH%':'}}
export LD_LIBRARY_PATH
exec -a "$0" "{}"  "$@"
"#,
            wrapped.display()
        ),
    )
    .map_err(io)?;
    let ldso = at("ldso");
    fs::write(
        &ldso,
        format!(
            "#!/bin/sh\nexec {loader} \\\n    --fallback-path {driver} {} \"$@\"\n",
            plain.display()
        ),
    )
    .map_err(io)?;
    // An unpatched loader refuses `--fallback-path` as an option it does not know (its
    // usage error, exit status 1) before it loads anything.
    let ldso_real = if flavour.is_patched() { 0 } else { 1 };
    for (script, want) in [(&app, want_real(flavour)), (&ldso, ldso_real)] {
        fs::set_permissions(script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .map_err(io)?;
        let real = Command::new(script)
            .arg("needed")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .map_err(io)?
            .status;
        if real.code() != Some(want) {
            return Err(format!(
                "{script} under the {flavour} loader ends with {real}"
            ));
        }
    }
    let x = explain(Path::new("/"), &[&app])?;
    says(
        &x,
        want_explain(flavour),
        &[
            &format!("{}: glibc 2.44 x86_64 loader, {flavour} ({loader})", wrapped.display()),
            &format!("  LD_FALLBACK_PATH={driver} (from the wrapper {app})"),
            &format!("  LD_LIBRARY_PATH=/nowhere/lib (from the wrapper {app})"),
            &format!(
                "  note: {app} is a wrapper script: it sets LD_FALLBACK_PATH, LD_LIBRARY_PATH, and it starts {}",
                wrapped.display()
            ),
        ],
    )?;
    let x = explain(Path::new("/"), &[&ldso])?;
    says(
        &x,
        want_explain(flavour),
        &[
            &format!(
                "  note: {ldso} is a wrapper script: it starts the loader {loader} with the program {}",
                plain.display()
            ),
            &format!("  loader: {loader} (the wrapper {ldso}) runs the program as a command"),
            if flavour.is_patched() {
                "the program starts"
            } else {
                "  note: ld.so: unrecognized option '--fallback-path': the unpatched loader does not know it"
            },
        ],
    )?;
    // The loader started as a command, with its option, against its trace.
    let invocation = Invocation {
        root: "/".into(),
        cwd: "/".into(),
        qemu: None,
        argv: vec![
            loader.clone(),
            "--fallback-path".into(),
            driver.clone(),
            plain.display().to_string(),
            "needed".into(),
        ],
        env: Vec::new(),
        secure: false,
        placed: Vec::new(),
    };
    agrees_with_trace(&invocation, &loader, flavour)
}
