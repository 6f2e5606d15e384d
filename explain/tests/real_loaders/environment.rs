//! The loader's variables from explain's own environment, as a user who exported them
//! (docs/nix.md says to) runs it: each case is run for real with the same environment
//! first, and held against the model (`loader_tests::differential`) where the loader traces.

use std::path::Path;

use loader_tests::differential::{self, LoaderUnderTest};
use loader_tests::probe::Invocation;
use model::Flavour;

use super::{explain, explain_in_env, fixture, says, scratch, with_interpreter, LOADER, TARGET};

pub(super) const CASES: &[(&str, super::starts::Case)] = &[
    ("variables-from-the-environment", variables),
    ("nix-ld-shim-hands-the-program-to-nix-ld", nix_ld),
];

/// `needed` run for real on this machine with `env`: its exit status, after its trace
/// agrees with the model of the stock loader.
fn real(program: &str, env: &[(&str, &str)]) -> Result<i32, String> {
    let invocation = Invocation {
        root: "/".into(),
        cwd: "/".into(),
        qemu: None,
        argv: vec![program.into(), "needed".into()],
        env: env
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        secure: false,
        placed: Vec::new(),
    };
    let out = invocation
        .command()
        .output()
        .map_err(|e| format!("cannot run {}: {e}", invocation.display()))?;
    let release = loader_model::release_in(Path::new("/"), LOADER.as_bytes(), b"/")
        .ok_or("the stock loader says no release")?;
    let checked = differential::check(
        &invocation,
        LoaderUnderTest {
            path: LOADER,
            release,
            target: TARGET,
            flavour: Flavour::Unpatched,
        },
    );
    if let Some(difference) = checked.difference {
        return Err(format!(
            "the model differs from {}:\n{difference}",
            invocation.display()
        ));
    }
    out.status
        .code()
        .ok_or_else(|| format!("{} ended by a signal", invocation.display()))
}

/// LD_LIBRARY_PATH exported: the real loader finds the library there (exit status 0), and
/// so does explain, saying where the list came from (it said "not found", exit status 2).
/// `--library-path` overrides it, `--ignore-env` ignores it. LD_PRELOAD exported: the
/// library is loaded first, as the trace shows. LD_FALLBACK_PATH exported, under the stock
/// loader: ignored, as the real run (127) shows.
fn variables() -> Result<(), String> {
    let f = fixture()?;
    let program = f.program();
    let driver = f.driver();
    let root = Path::new("/");
    let llp = [("LD_LIBRARY_PATH", driver.as_str())];
    if real(&program, &llp)? != 0 {
        return Err("needed with LD_LIBRARY_PATH at its driver does not run".into());
    }
    let x = explain_in_env(root, &[&program], &llp)?;
    says(
        &x,
        0,
        &[
            &format!("  LD_LIBRARY_PATH={driver} (from the environment)"),
            &format!("  -> {driver}/libcuda.so.1  [LD_LIBRARY_PATH]"),
        ],
    )?;
    let x = explain_in_env(root, &[&program, "--library-path", "/nowhere"], &llp)?;
    says(
        &x,
        2,
        &[
            "  LD_LIBRARY_PATH=/nowhere (from --library-path)",
            "not found: libcuda.so.1",
        ],
    )?;
    let x = explain_in_env(root, &[&program, "--ignore-env"], &llp)?;
    says(
        &x,
        2,
        &[
            "  note: this environment is not read (--ignore-env)",
            "not found: libcuda.so.1",
        ],
    )?;
    if x.stdout.contains("LD_LIBRARY_PATH=") {
        return Err(format!(
            "--ignore-env still shows LD_LIBRARY_PATH:\n{}",
            x.show()
        ));
    }
    // LD_PRELOAD: the driver by path, loaded before the DT_NEEDED entries; the program
    // then finds libcuda.so.1 already loaded, by its soname.
    let preload = format!("{driver}/libcuda.so.1");
    let env = [("LD_PRELOAD", preload.as_str())];
    if real(&program, &env)? != 0 {
        return Err("needed with its driver preloaded does not run".into());
    }
    let x = explain_in_env(root, &[&program], &env)?;
    says(
        &x,
        0,
        &[
            &format!("{preload} (preloaded for {program})"),
            &format!("libcuda.so.1 (needed by {program}): already loaded, {preload} (by name)"),
        ],
    )?;
    // LD_FALLBACK_PATH: the stock loader does not know it.
    let env = [("LD_FALLBACK_PATH", driver.as_str())];
    if real(&program, &env)? != 127 {
        return Err("the stock loader took LD_FALLBACK_PATH".into());
    }
    let x = explain_in_env(root, &[&program], &env)?;
    says(
        &x,
        2,
        &[
            &format!("  LD_FALLBACK_PATH={driver} (from the environment)"),
            "IGNORED, the loader is not patched",
        ],
    )?;
    // Without any of them, as before.
    let x = explain(root, &[&program])?;
    says(&x, 2, &["not found: libcuda.so.1"])
}

/// A program whose interpreter is nix-ld's shim (here a stand-in: a static program that
/// names `NIX_LD_LIBRARY_PATH`, as nix-ld's does): the loader is the one NIX_LD names, and
/// NIX_LD_LIBRARY_PATH becomes LD_LIBRARY_PATH, as nix-ld's `src/main.rs` does
/// (nix-community/nix-ld at 588fa76375f9040012404a55c7f0388d3efb354d). Not run for real:
/// nix-ld is not built here; its rules are `environment`'s unit test, from its source.
fn nix_ld() -> Result<(), String> {
    let f = fixture()?;
    let dir = scratch("explain-nixld-")?;
    let program = dir.path().join("needed");
    let shim = f.dir.join("shim").display().to_string();
    with_interpreter(&f.dir.join("needed"), &program, &shim)?;
    let program = program.display().to_string();
    let driver = f.driver();
    let env = [("NIX_LD", LOADER), ("NIX_LD_LIBRARY_PATH", driver.as_str())];
    let x = explain_in_env(Path::new("/"), &[&program], &env)?;
    says(
        &x,
        0,
        &[
            &format!("{program}: glibc 2.36 x86_64 loader, unpatched ({LOADER})"),
            &format!("  loader: {shim}, the program's interpreter, is nix-ld's shim: it hands the program to {LOADER} (NIX_LD, the environment)"),
            &format!("  LD_LIBRARY_PATH={driver} (from NIX_LD_LIBRARY_PATH (the environment), made LD_LIBRARY_PATH by nix-ld's shim)"),
            &format!("  -> {driver}/libcuda.so.1  [LD_LIBRARY_PATH]"),
        ],
    )?;
    // --loader names another loader in NIX_LD's place; without NIX_LD, nix-ld's default,
    // which this machine does not have.
    let x = explain_in_env(
        Path::new("/"),
        &[&program, "--loader", "/nowhere/ld.so"],
        &env,
    )?;
    says(
        &x,
        2,
        &["the program does not start: the loader nix-ld's shim starts (--loader) /nowhere/ld.so cannot be opened (no such file)"],
    )?;
    let x = explain(Path::new("/"), &[&program])?;
    says(
        &x,
        2,
        &["the program does not start: the loader nix-ld's shim starts (nix-ld's default: NIX_LD is not set) /run/current-system/sw/share/nix-ld/lib/ld.so cannot be opened"],
    )
}
