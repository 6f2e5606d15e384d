//! `ld-fallback-explain` (the installed binary) against the loader a program really runs
//! under: the one its PT_INTERP names, in the tree it is looked at in. One program, compiled
//! here, needs `libcuda.so.1`, which only its fallback directory holds:
//!
//! - on this machine (`/`), whose loader is Debian's stock one: run with `LD_FALLBACK_PATH`
//!   it does not start (127), and explain must say so: exit status 2, the loader named and
//!   judged unpatched from its file, the fallback shown as ignored, what to change;
//! - in a root whose `/lib64/ld-linux-x86-64.so.2` is the patched 2.44 loader: it starts,
//!   and explain (`--root`) must say that, exit status 0;
//! - in a root whose loader is the same release without the series: the same as stock.
//!
//! In each, the verdict is the real run's (exit status 0 or 2 against 0 or 127), and the
//! model with the loader explain judged is held against the run's `LD_DEBUG=libs,files`
//! trace (`loader_tests::differential`). `--flavour patched` on this machine models the
//! patched loader on purpose: the header says so, and its answer is the patched root's run.
//! A relative program is looked up from the working directory, or from `--cwd` in `--root`.
//!
//! The stock cases need gcc and bubblewrap (ignored without them, failing under CI); the
//! roots' loaders come from `$LD_FALLBACK_SYSROOT` and `$LD_FALLBACK_SYSROOT_UNPATCHED` (the
//! x86_64 sysroots; this test never builds glibc): without them those cases are ignored,
//! and under CI they fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Failed, Trial};
use loader_tests::differential::{self, LoaderUnderTest};
use loader_tests::host::{find_program, in_ci, tools};
use loader_tests::probe::Invocation;
use model::{sysroot_env_var, Flavour, Target};

#[path = "real_loaders/environment.rs"]
mod environment;
#[path = "real_loaders/loaders.rs"]
mod loaders;
#[path = "real_loaders/starts.rs"]
mod starts;

/// The loader every x86_64 program here names, in whichever tree it runs.
const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";
const TARGET: Target = Target::X86_64;

fn main() {
    let args = Arguments::from_args();
    let host = why_not_here();
    if let Some(why) = &host {
        eprintln!("real_loaders: the cases on this machine ignored: {why}");
    }
    let ignored = |why: &Option<String>| why.is_some() && !in_ci();
    let mut trials = vec![
        Trial::test("stock-loader-ignores-the-fallback", || {
            stock().map_err(Failed::from)
        })
        .with_ignored_flag(ignored(&host)),
        Trial::test("stock-loader-named-for-bin-ls", || {
            bin_ls().map_err(Failed::from)
        })
        .with_ignored_flag(ignored(&host)),
        Trial::test("relative-program-from-the-working-directory", || {
            relative().map_err(Failed::from)
        })
        .with_ignored_flag(ignored(&host)),
        Trial::test("names-that-are-not-utf-8", || {
            not_utf8().map_err(Failed::from)
        })
        .with_ignored_flag(ignored(&host)),
    ];
    for (name, case) in starts::CASES.iter().chain(environment::CASES).copied() {
        trials.push(
            Trial::test(name, move || case().map_err(Failed::from))
                .with_ignored_flag(ignored(&host)),
        );
    }
    // An aarch64 loader, asked under QEMU and, with QEMU out of reach, judged by its strings.
    let aarch64 = sysroot_env_var(Target::Aarch64, Flavour::Patched);
    let no_aarch64 = host.clone().or_else(|| {
        std::env::var_os(&aarch64)
            .is_none_or(|v| v.is_empty())
            .then(|| format!("${aarch64} is not set (this test never builds glibc)"))
            .or_else(|| {
                [tools::AARCH64_GCC, tools::QEMU_AARCH64]
                    .iter()
                    .find(|t| find_program(t.program).is_none())
                    .map(|t| format!("no {} (package {})", t.program, t.package))
            })
    });
    trials.push(
        Trial::test("a-loader-that-cannot-run-is-judged-by-its-strings", || {
            starts::strings_with_a_caveat().map_err(Failed::from)
        })
        .with_ignored_flag(ignored(&no_aarch64)),
    );
    for flavour in Flavour::ALL {
        let var = sysroot_env_var(TARGET, flavour);
        let missing = host.clone().or_else(|| {
            std::env::var_os(&var)
                .is_none_or(|v| v.is_empty())
                .then(|| format!("${var} is not set (this test never builds glibc)"))
        });
        if let Some(why) = &missing {
            eprintln!("real_loaders: the {flavour} root ignored: {why}");
        }
        trials.push(
            Trial::test(format!("{flavour}-interpreter-in-a-root"), move || {
                in_root(flavour).map_err(Failed::from)
            })
            .with_ignored_flag(ignored(&missing)),
        );
        for (name, case) in loaders::CASES.iter().copied() {
            trials.push(
                Trial::test(format!("{flavour}-{name}"), move || {
                    case(flavour).map_err(Failed::from)
                })
                .with_ignored_flag(ignored(&missing)),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Why this machine cannot run the cases, if it cannot.
fn why_not_here() -> Option<String> {
    if std::env::consts::ARCH != "x86_64" {
        return Some("not an x86_64 machine".into());
    }
    [tools::GCC, tools::BWRAP, tools::PATCHELF]
        .iter()
        .find(|t| find_program(t.program).is_none())
        .map(|t| format!("no {} (package {})", t.program, t.package))
}

/// The compiled program and its driver, in a scratch directory of this machine.
struct Fixture {
    _scratch: tempfile::TempDir,
    /// The scratch directory.
    dir: PathBuf,
}

impl Fixture {
    fn program(&self) -> String {
        self.dir.join("needed").display().to_string()
    }

    fn driver(&self) -> String {
        self.dir.join("driver").display().to_string()
    }
}

fn fixture() -> Result<&'static Fixture, String> {
    static FIXTURE: OnceLock<Result<Fixture, String>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| compile().map_err(|e| format!("cannot compile the program: {e:#}")))
        .as_ref()
        .map_err(Clone::clone)
}

/// `needed` (the probe, linked to `libcuda.so.1`, without RPATH or RUNPATH) and the marker
/// `driver/libcuda.so.1`, the only copy.
fn compile() -> anyhow::Result<Fixture> {
    let scratch = tempfile::Builder::new()
        .prefix("explain-real-")
        .tempdir_in("/tmp")?;
    let dir = scratch.path().to_path_buf();
    fs::create_dir_all(dir.join("driver"))?;
    let src = loader_tests::fixtures::sources_dir();
    let include = format!("-I{}", src.display());
    let gcc = |args: &[&str]| -> anyhow::Result<()> {
        let out = Command::new(tools::GCC.program).args(args).output()?;
        anyhow::ensure!(
            out.status.success(),
            "gcc {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    let path = |rel: &str| dir.join(rel).display().to_string();
    gcc(&[
        "-shared",
        "-fPIC",
        "-O2",
        "-Wl,-soname,libcuda.so.1",
        "-DROLE=\"driver\"",
        "-DROLE_VERSION=1",
        &include,
        &src.join("libcuda.c").display().to_string(),
        "-o",
        &path("driver/libcuda.so.1"),
    ])?;
    gcc(&[
        &include,
        "-DNEEDED",
        &src.join("probe.c").display().to_string(),
        "-o",
        &path("needed"),
        "-L",
        &path("driver"),
        "-l:libcuda.so.1",
    ])?;
    // A program that needs nothing but libc, and two static ones: one that is only a
    // program, one that names nix-ld's variable as nix-ld's shim does.
    fs::write(dir.join("hello.c"), "int main(void) { return 0; }\n")?;
    gcc(&[&path("hello.c"), "-o", &path("hello")])?;
    fs::write(
        dir.join("static.c"),
        "#include <stdio.h>\nint main(void) { puts(\"a static program\"); return 3; }\n",
    )?;
    gcc(&["-static", &path("static.c"), "-o", &path("static")])?;
    fs::write(
        dir.join("shim.c"),
        "#include <stdio.h>\nint main(void) { puts(\"NIX_LD_LIBRARY_PATH\"); return 0; }\n",
    )?;
    gcc(&["-static", &path("shim.c"), "-o", &path("shim")])?;
    Ok(Fixture {
        _scratch: scratch,
        dir,
    })
}

/// `program` copied to `to`, its interpreter (PT_INTERP) made `interpreter`.
fn with_interpreter(program: &Path, to: &Path, interpreter: &str) -> Result<(), String> {
    fs::copy(program, to).map_err(|e| format!("{}: {e}", program.display()))?;
    let out = Command::new(tools::PATCHELF.program)
        .args(["--set-interpreter", interpreter])
        .arg(to)
        .output()
        .map_err(|e| format!("patchelf: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "patchelf --set-interpreter {interpreter}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// The x86_64 sysroot of `flavour` (`$LD_FALLBACK_SYSROOT...`).
fn sysroot(flavour: Flavour) -> Result<PathBuf, String> {
    let var = sysroot_env_var(TARGET, flavour);
    std::env::var_os(&var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| format!("${var} is not set (this test never builds glibc)"))
}

/// A scratch directory, removed at the end.
fn scratch(prefix: &str) -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .map_err(|e| e.to_string())
}

/// Fails with the explanation unless explain exited `code` and said each of `lines`.
fn says(x: &Explained, code: i32, lines: &[&str]) -> Result<(), String> {
    if x.code != Some(code) {
        return Err(format!("want exit status {code}:\n{}", x.show()));
    }
    for line in lines {
        if !x.stdout.contains(line) {
            return Err(format!("explain does not say {line:?}:\n{}", x.show()));
        }
    }
    Ok(())
}

/// What `ld-fallback-explain` printed and how it ended.
struct Explained {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Explained {
    fn header(&self) -> &str {
        self.stdout.lines().next().unwrap_or("")
    }

    fn show(&self) -> String {
        format!(
            "exit status {:?}\n{}{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The installed binary, as a user runs it, from `cwd`, with none of the loader's
/// variables in its environment (`cargo test` sets LD_LIBRARY_PATH).
fn explain(cwd: &Path, args: &[&str]) -> Result<Explained, String> {
    explain_in_env(cwd, args, &[])
}

/// [`explain`] with `env` set in its environment.
fn explain_in_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Explained, String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"));
    for name in [
        "LD_LIBRARY_PATH",
        "LD_FALLBACK_PATH",
        "LD_PRELOAD",
        "NIX_LD",
        "NIX_LD_LIBRARY_PATH",
        "NIX_LD_x86_64_linux",
        "NIX_LD_LIBRARY_PATH_x86_64_linux",
    ] {
        command.env_remove(name);
    }
    let out = command
        .envs(env.iter().copied())
        .args(args)
        .current_dir(cwd)
        .output()
        .map_err(|e| format!("cannot run ld-fallback-explain: {e}"))?;
    Ok(Explained {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The program run for real in `root` with `LD_FALLBACK_PATH` at `fallback`: its exit
/// status, and the model (with the loader explain judges it runs under) against its trace.
fn real_run(root: &Path, program: &str, fallback: &str) -> Result<i32, String> {
    let invocation = Invocation {
        root: root.to_path_buf(),
        cwd: "/".into(),
        qemu: None,
        argv: vec![program.into(), "needed".into()],
        env: vec![("LD_FALLBACK_PATH".into(), fallback.into())],
        secure: false,
        placed: Vec::new(),
    };
    let out = invocation
        .command()
        .output()
        .map_err(|e| format!("cannot run {}: {e}", invocation.display()))?;
    let code = out
        .status
        .code()
        .ok_or_else(|| format!("{} ended by a signal", invocation.display()))?;
    let read = loader_model::Program::read(root, program.as_bytes(), b"/")
        .map_err(|e| format!("cannot read {program}: {e:?}"))?;
    let judged =
        ld_fallback_explain::judge(&read, TARGET).ok_or("explain cannot judge the loader")?;
    let release = read.release().ok_or("the loader says no release")?;
    let checked = differential::check(
        &invocation,
        LoaderUnderTest {
            path: LOADER,
            release,
            target: TARGET,
            flavour: judged.flavour(),
        },
    );
    if let Some(difference) = checked.difference {
        return Err(format!(
            "the model of the loader explain judges {} differs from the real run of {}:\n{difference}",
            judged.flavour(),
            invocation.display()
        ));
    }
    if checked.observed.is_empty() {
        return Err("the trace shows no search: nothing was compared".into());
    }
    Ok(code)
}

/// The verdict explain must give for a real run that ended with `code`.
fn agrees(real: i32, x: &Explained, loader: &str) -> Result<(), String> {
    let (want_code, want) = match real {
        0 => (
            0,
            [
                format!("loader, patched ({loader})"),
                "every library is found".into(),
                "the program starts".into(),
            ],
        ),
        // The loader's "cannot open shared object file" exit status.
        127 => (
            2,
            [
                format!("loader, unpatched ({loader})"),
                "not found: libcuda.so.1".into(),
                "the program does not start".into(),
            ],
        ),
        other => {
            return Err(format!(
                "the real run ended with {other}, neither 0 nor 127"
            ))
        }
    };
    if x.code != Some(want_code) {
        return Err(format!(
            "the real run exits {real}, explain {:?} (want {want_code}):\n{}",
            x.code,
            x.show()
        ));
    }
    for line in &want {
        if !x.stdout.contains(line.as_str()) {
            return Err(format!(
                "the real run exits {real}, and explain does not say {line:?}:\n{}",
                x.show()
            ));
        }
    }
    Ok(())
}

/// The example: on this machine, a library only in the fallback directory.
fn stock() -> Result<(), String> {
    let f = fixture()?;
    let real = real_run(Path::new("/"), &f.program(), &f.driver())?;
    if real != 127 {
        return Err(format!(
            "this machine's {LOADER} takes LD_FALLBACK_PATH (exit status {real}): not the stock loader these cases are for"
        ));
    }
    let x = explain(
        Path::new("/"),
        &[&f.program(), "--fallback-path", &f.driver()],
    )?;
    agrees(real, &x, LOADER)?;
    for line in [
        "  unpatched: its --help lists no --fallback-path (a loader with the series does)"
            .to_string(),
        format!("  fallback: {} (LD_FALLBACK_PATH) IGNORED", f.driver()),
        format!(
            "to change: libcuda.so.1 is only in the fallback ({}/libcuda.so.1), which {LOADER} does not search",
            f.driver()
        ),
    ] {
        if !x.stdout.contains(&line) {
            return Err(format!("explain does not say {line:?}:\n{}", x.show()));
        }
    }
    // What if it were patched: asked for, said in the header, and the patched loader's
    // answer (the patched root's run, when it is here, shows that is what one does).
    let what_if = explain(
        Path::new("/"),
        &[
            &f.program(),
            "--fallback-path",
            &f.driver(),
            "--flavour",
            "patched",
        ],
    )?;
    let header = format!("loader, unpatched, modelled as patched ({LOADER})");
    if what_if.code != Some(0)
        || !what_if.header().contains(&header)
        || !what_if.stdout.contains("the program starts")
    {
        return Err(format!(
            "--flavour patched: want exit status 0, {header:?} and the program starting:\n{}",
            what_if.show()
        ));
    }
    Ok(())
}

/// `ld-fallback-explain /bin/ls` on this machine names Debian's loader as it is.
fn bin_ls() -> Result<(), String> {
    let x = explain(Path::new("/"), &["/bin/ls"])?;
    let want = format!("/bin/ls: glibc 2.36 x86_64 loader, unpatched ({LOADER})");
    if x.code != Some(0) || x.header() != want {
        return Err(format!("want exit status 0 and {want:?}:\n{}", x.show()));
    }
    Ok(())
}

/// `./needed` from its directory is the program there; with `--root`, from `--cwd` in it.
fn relative() -> Result<(), String> {
    let f = fixture()?;
    let absolute = explain(
        Path::new("/"),
        &[&f.program(), "--fallback-path", &f.driver()],
    )?;
    let from_here = explain(&f.dir, &["./needed", "--fallback-path", &f.driver()])?;
    let want = absolute.stdout.replace(&f.program(), "./needed");
    if from_here.code != absolute.code || from_here.stdout != want {
        return Err(format!(
            "./needed from {} is not {}:\n{}\n-- absolute:\n{}",
            f.dir.display(),
            f.program(),
            from_here.show(),
            absolute.show()
        ));
    }
    // A root holding this machine's loader and the program in /fx.
    let scratch = tempfile::Builder::new()
        .prefix("explain-rel-")
        .tempdir_in("/tmp")
        .map_err(|e| e.to_string())?;
    let root = scratch.path();
    let io = |e: std::io::Error| e.to_string();
    for dir in ["lib64", "fx"] {
        fs::create_dir_all(root.join(dir)).map_err(io)?;
    }
    fs::copy(LOADER, root.join("lib64/ld-linux-x86-64.so.2")).map_err(io)?;
    fs::copy(f.dir.join("needed"), root.join("fx/needed")).map_err(io)?;
    let root = root.display().to_string();
    let rooted = explain(&f.dir, &["needed", "--root", &root, "--cwd", "/fx"])?;
    if !rooted.header().starts_with(&format!(
        "needed: glibc 2.36 x86_64 loader, unpatched ({LOADER})"
    )) {
        return Err(format!("needed --root {root} --cwd /fx: {}", rooted.show()));
    }
    // Without --cwd, a relative program in --root is looked up from its `/` (not from the
    // working directory, which holds one), and the error says where it looked.
    let absent = explain(&f.dir, &["needed", "--root", &root])?;
    let said = format!("cannot open needed in {root} (from / inside it)");
    if absent.code != Some(1) || !absent.stderr.contains(&said) {
        return Err(format!(
            "want exit status 1 and {said:?}:\n{}",
            absent.show()
        ));
    }
    let missing = explain(&f.dir, &["./nothing-here"])?;
    let said = format!(
        "cannot open ./nothing-here (from the working directory {})",
        f.dir.display()
    );
    if missing.code != Some(1) || !missing.stderr.contains(&said) {
        return Err(format!(
            "want exit status 1 and {said:?}:\n{}",
            missing.show()
        ));
    }
    Ok(())
}

/// A RUNPATH `.../x/lib\xff` and a DT_NEEDED `lib\xe9foo.so` (Latin-1 bytes, not UTF-8):
/// the loader compares and joins them as bytes, and the program runs; explain must find the
/// library too (it said NOT FOUND when it decoded them lossily), and print both escaped, in
/// the text and in the JSON.
fn not_utf8() -> Result<(), String> {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let scratch = tempfile::Builder::new()
        .prefix("explain-bytes-")
        .tempdir_in("/tmp")
        .map_err(|e| e.to_string())?;
    let dir = scratch.path();
    let io = |e: std::io::Error| e.to_string();
    let lib_dir = dir.join(OsStr::from_bytes(b"x/lib\xff"));
    fs::create_dir_all(&lib_dir).map_err(io)?;
    fs::write(dir.join("foo.c"), "int foo(void) { return 0; }\n").map_err(io)?;
    fs::write(
        dir.join("main.c"),
        "int foo(void);\nint main(void) { return foo(); }\n",
    )
    .map_err(io)?;
    let soname = OsStr::from_bytes(b"lib\xe9foo.so");
    let gcc = |args: &[&OsStr]| -> Result<(), String> {
        let out = Command::new(tools::GCC.program)
            .args(args)
            .output()
            .map_err(io)?;
        if !out.status.success() {
            return Err(format!(
                "gcc {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    };
    let with = |prefix: &str, value: &OsStr| {
        let mut arg = std::ffi::OsString::from(prefix);
        arg.push(value);
        arg
    };
    let library = lib_dir.join(soname);
    gcc(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        &with("-Wl,-soname,", soname),
        dir.join("foo.c").as_os_str(),
        "-o".as_ref(),
        library.as_os_str(),
    ])?;
    let program = dir.join("main");
    gcc(&[
        dir.join("main.c").as_os_str(),
        "-o".as_ref(),
        program.as_os_str(),
        &with("-L", lib_dir.as_os_str()),
        &with("-l:", soname),
        &with("-Wl,--enable-new-dtags,-rpath,", lib_dir.as_os_str()),
    ])?;
    let ran = Command::new(&program)
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .map_err(io)?;
    if ran.code() != Some(0) {
        return Err(format!("the program does not run here: {ran}"));
    }
    let program = program.display().to_string();
    let x = explain(Path::new("/"), &[&program])?;
    let shown_dir = format!("{}/x/lib\\xff", dir.display());
    for line in [
        format!("lib\\xe9foo.so (needed by {program})"),
        format!("  -> {shown_dir}/lib\\xe9foo.so  [RUNPATH of {program}]"),
        "every library is found".to_string(),
    ] {
        if x.code != Some(0) || !x.stdout.contains(&line) {
            return Err(format!(
                "the program runs: want exit status 0 and {line:?}:\n{}",
                x.show()
            ));
        }
    }
    let json = explain(Path::new("/"), &[&program, "--json"])?;
    let value: serde_json::Value = serde_json::from_str(&json.stdout)
        .map_err(|e| format!("the JSON does not parse: {e}\n{}", json.show()))?;
    let load = value["loads"]
        .as_array()
        .and_then(|loads| loads.iter().find(|l| l["name"] == "lib\\xe9foo.so"))
        .ok_or_else(|| format!("no load named lib\\xe9foo.so in the JSON:\n{}", json.show()))?;
    let want = format!("{shown_dir}/lib\\xe9foo.so");
    if load["outcome"]["path"] != want.as_str() {
        return Err(format!("want the path {want:?} in {load}"));
    }
    Ok(())
}

/// The program in a root of its own whose loader (and libc) are the sysroot's of `flavour`.
fn in_root(flavour: Flavour) -> Result<(), String> {
    let f = fixture()?;
    let var = sysroot_env_var(TARGET, flavour);
    let sysroot = std::env::var_os(&var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| format!("${var} is not set (this test never builds glibc)"))?;
    let scratch = tempfile::Builder::new()
        .prefix("explain-root-")
        .tempdir_in("/tmp")
        .map_err(|e| e.to_string())?;
    let root = scratch.path();
    let io = |e: std::io::Error| e.to_string();
    for dir in ["lib64", "fx/driver", "tmp", "proc", "dev"] {
        fs::create_dir_all(root.join(dir)).map_err(io)?;
    }
    for lib in ["ld-linux-x86-64.so.2", "libc.so.6"] {
        let from = sysroot.join("lib64").join(lib);
        fs::copy(&from, root.join("lib64").join(lib))
            .map_err(|e| format!("{}: {e}", from.display()))?;
    }
    fs::copy(f.dir.join("needed"), root.join("fx/needed")).map_err(io)?;
    fs::copy(
        f.dir.join("driver/libcuda.so.1"),
        root.join("fx/driver/libcuda.so.1"),
    )
    .map_err(io)?;
    let real = real_run(root, "/fx/needed", "/fx/driver")?;
    let want_real = if flavour.is_patched() { 0 } else { 127 };
    if real != want_real {
        return Err(format!(
            "the {flavour} loader of ${var} exits {real} on a library only in the fallback, not {want_real}"
        ));
    }
    let x = explain(
        Path::new("/"),
        &[
            "/fx/needed",
            "--root",
            &root.display().to_string(),
            "--fallback-path",
            "/fx/driver",
        ],
    )?;
    agrees(real, &x, LOADER)
}
