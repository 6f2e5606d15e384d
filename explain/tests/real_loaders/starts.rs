//! Whether the program can start at all, and under which loader: programs whose interpreter
//! is no loader the kernel can start them with (each run for real first: it does not
//! start), a relative interpreter (found from the working directory, as the kernel finds
//! it), and a loader that only looks patched (the strings of the series appended to the
//! stock loader): explain asks the loader itself.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::{explain, explain_in_env, fixture, says, scratch, with_interpreter, LOADER};

pub(super) type Case = fn() -> Result<(), String>;

pub(super) const CASES: &[(&str, Case)] = &[
    ("interpreters-that-cannot-start-the-program", cannot_start),
    ("relative-interpreter-from-the-working-directory", relative),
    ("strings-appended-to-an-unpatched-loader", appended),
    (
        "a-set-user-id-program-is-said-to-run-in-secure-mode",
        set_id,
    ),
];

/// A set-user-ID program runs in secure mode when another user starts it: explain says so
/// (and that --secure models it) unless --secure is given.
fn set_id() -> Result<(), String> {
    let f = fixture()?;
    let dir = scratch("explain-setid-")?;
    let program = dir.path().join("hello");
    fs::copy(f.dir.join("hello"), &program).map_err(|e| e.to_string())?;
    let shown = program.display().to_string();
    let note = format!("  note: {shown} is set-user-ID or set-group-ID: started by another user than its owner, it runs in secure mode, which --secure models");
    let plain = explain(Path::new("/"), &[&shown])?;
    if plain.stdout.contains(&note) {
        return Err(format!(
            "a program without the bit is said to be set-user-ID:\n{}",
            plain.show()
        ));
    }
    fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o4755),
    )
    .map_err(|e| e.to_string())?;
    says(&explain(Path::new("/"), &[&shown])?, 0, &[&note])?;
    let secure = explain(Path::new("/"), &[&shown, "--secure"])?;
    if secure.stdout.contains(&note) {
        return Err(format!(
            "--secure given, and still the note:\n{}",
            secure.show()
        ));
    }
    Ok(())
}

/// How a real start of `program` ended: `None` when it ran and exited 0 (it started).
fn fails_to_start(program: &Path, cwd: &Path) -> Option<String> {
    match Command::new(program).current_dir(cwd).output() {
        Err(err) => Some(format!("execve fails: {err}")),
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!("it ends with {}", out.status)),
    }
}

/// `/etc/passwd`, a `#!` script, a static program, a loader of another machine, a path
/// that is not there and a directory, each as the interpreter of a program that needs only
/// libc: the real start fails every time (execve refuses, or the static program crashes in
/// the program's place), and explain must say the program does not start (it said
/// "starts" for the first four).
fn cannot_start() -> Result<(), String> {
    let f = fixture()?;
    let dir = scratch("explain-interp-")?;
    let io = |e: std::io::Error| e.to_string();
    let script = dir.path().join("interp.sh");
    fs::write(
        &script,
        "#!/bin/sh\n# an interpreter that is a script, long enough for the kernel to read its header\necho never\n",
    )
    .map_err(io)?;
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(io)?;
    // The stock loader, its e_machine made aarch64's.
    let foreign = dir.path().join("ld-linux-aarch64.so.1");
    let mut bytes = fs::read(LOADER).map_err(io)?;
    bytes[18..20].copy_from_slice(&183u16.to_le_bytes());
    fs::write(&foreign, bytes).map_err(io)?;
    fs::set_permissions(
        &foreign,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .map_err(io)?;
    let shown = |p: &Path| p.display().to_string();
    let cases = [
        (
            "/etc/passwd".to_string(),
            "it is not executable (no execute permission): the kernel refuses it".to_string(),
        ),
        (
            shown(&script),
            "it is a script (`#!`): the kernel maps only an ELF file as an interpreter, and refuses this one"
                .to_string(),
        ),
        (
            shown(&f.dir.join("static")),
            "a static program or another libc's loader (no DT_SONAME ld-linux-x86-64.so.2): not glibc's loader: the kernel starts it in the program's place, and explain models only glibc's loader"
                .to_string(),
        ),
        (
            shown(&foreign),
            "it is built for another machine (aarch64) than the program: the kernel refuses it"
                .to_string(),
        ),
        (
            shown(&dir.path().join("nowhere")),
            "cannot be opened (no such file): the kernel cannot start the program".to_string(),
        ),
        (
            "/tmp".to_string(),
            "it is a directory: the kernel cannot execute it".to_string(),
        ),
    ];
    for (n, (interpreter, why)) in cases.iter().enumerate() {
        let program = dir.path().join(format!("prog{n}"));
        with_interpreter(&f.dir.join("hello"), &program, interpreter)?;
        let Some(real) = fails_to_start(&program, dir.path()) else {
            return Err(format!(
                "{} with the interpreter {interpreter} starts: not a case of a program that cannot",
                program.display()
            ));
        };
        let x = explain(dir.path(), &[&shown(&program)])?;
        let verdict = format!("the program does not start: its interpreter {interpreter}");
        says(&x, 2, &[&verdict, why]).map_err(|e| format!("(the real start: {real}) {e}"))?;
    }
    Ok(())
}

/// A PT_INTERP without a leading `/` is opened by the kernel from the working directory of
/// the exec: from `/` it is the stock loader and the program runs; from elsewhere there is
/// no such file and it does not start. explain, from the same directories, says the same
/// (it looked in `/` only and said "is not in /").
fn relative() -> Result<(), String> {
    let f = fixture()?;
    let dir = scratch("explain-relinterp-")?;
    let program = dir.path().join("prog");
    let relative = LOADER.trim_start_matches('/');
    with_interpreter(&f.dir.join("hello"), &program, relative)?;
    let shown = program.display().to_string();
    if let Some(real) = fails_to_start(&program, Path::new("/")) {
        return Err(format!("from /, {shown} should run: {real}"));
    }
    let x = explain(Path::new("/"), &[&shown])?;
    says(
        &x,
        0,
        &[
            &format!("{shown}: glibc 2.36 x86_64 loader, unpatched ({relative})"),
            "the program starts",
        ],
    )?;
    let elsewhere = dir.path();
    if fails_to_start(&program, elsewhere).is_none() {
        return Err(format!(
            "from {}, {shown} should not find its interpreter",
            elsewhere.display()
        ));
    }
    let x = explain(elsewhere, &[&shown])?;
    says(
        &x,
        2,
        &[&format!(
            "the program does not start: its interpreter {relative} cannot be opened (no such file)"
        )],
    )?;
    // --cwd says the same for a working directory other than explain's own.
    let x = explain(elsewhere, &[&shown, "--cwd", "/"])?;
    says(&x, 0, &["the program starts"])
}

/// The stock loader with the series' two strings appended (`LD_FALLBACK_PATH` and
/// `--fallback-path`, each ended by a NUL byte): the strings alone make it look patched,
/// but it is not, and a library only in the fallback is not found (real run: 127). explain
/// asks the loader (`--help`): unpatched, exit status 2 (it said patched, exit status 0).
fn appended() -> Result<(), String> {
    let f = fixture()?;
    let dir = scratch("explain-appended-")?;
    let io = |e: std::io::Error| e.to_string();
    let fake = dir.path().join("ld-fake.so.2");
    let mut bytes = fs::read(LOADER).map_err(io)?;
    bytes.extend_from_slice(b"\0LD_FALLBACK_PATH\0--fallback-path\0");
    fs::write(&fake, bytes).map_err(io)?;
    fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).map_err(io)?;
    let program = dir.path().join("needed");
    with_interpreter(&f.dir.join("needed"), &program, &fake.display().to_string())?;
    let shown = program.display().to_string();
    let real = Command::new(&program)
        .arg("needed")
        .env_clear()
        .env("LD_FALLBACK_PATH", f.driver())
        .output()
        .map_err(io)?
        .status;
    if real.code() != Some(127) {
        return Err(format!(
            "the stock loader with two strings appended ends with {real}, not exit status 127"
        ));
    }
    let x = explain_in_env(
        Path::new("/"),
        &[&shown],
        &[("LD_FALLBACK_PATH", &f.driver())],
    )?;
    says(
        &x,
        2,
        &[
            "loader, unpatched (",
            "  unpatched: its --help lists no --fallback-path (a loader with the series does)",
            "not found: libcuda.so.1",
        ],
    )
}

/// An aarch64 program in a root whose loader is the patched aarch64 one: on this x86_64
/// machine explain asks it under QEMU (`--help`: patched, nothing to caveat); with no QEMU
/// on PATH it cannot, and judges the file's strings, saying so.
pub(super) fn strings_with_a_caveat() -> Result<(), String> {
    use model::{sysroot_env_var, Flavour, Target};
    let var = sysroot_env_var(Target::Aarch64, Flavour::Patched);
    let sysroot = std::env::var_os(&var)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .ok_or_else(|| format!("${var} is not set (this test never builds glibc)"))?;
    let dir = scratch("explain-caveat-")?;
    let root = dir.path();
    let io = |e: std::io::Error| e.to_string();
    fs::create_dir_all(root.join("lib")).map_err(io)?;
    fs::copy(
        sysroot.join("lib/ld-linux-aarch64.so.1"),
        root.join("lib/ld-linux-aarch64.so.1"),
    )
    .map_err(io)?;
    fs::write(root.join("hello.c"), "int main(void) { return 0; }\n").map_err(io)?;
    let out = Command::new(super::tools::AARCH64_GCC.program)
        .arg(root.join("hello.c"))
        .arg("-o")
        .arg(root.join("hello"))
        .output()
        .map_err(io)?;
    if !out.status.success() {
        return Err(format!(
            "aarch64-linux-gnu-gcc: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let root_arg = root.display().to_string();
    let asked = explain(Path::new("/"), &["/hello", "--root", &root_arg])?;
    says(
        &asked,
        2,
        &["  patched: its --help lists --fallback-path, the series' option"],
    )?;
    if asked.stdout.contains("caveat:") {
        return Err(format!(
            "a caveat where the loader was asked:\n{}",
            asked.show()
        ));
    }
    let empty = scratch("explain-nopath-")?;
    let empty_path = empty.path().display().to_string();
    let judged = explain_in_env(
        Path::new("/"),
        &["/hello", "--root", &root_arg],
        &[("PATH", &empty_path)],
    )?;
    says(
        &judged,
        2,
        &[
            "  patched: the file carries LD_FALLBACK_PATH and --fallback-path, as a loader with the series does",
            "  caveat: judged from the strings in the file, not by running it (it is an aarch64 loader, and this machine runs no aarch64 code (no qemu-aarch64 or qemu-aarch64-static on PATH)): an unpatched loader with those two strings added to it would be taken for patched",
        ],
    )
}
