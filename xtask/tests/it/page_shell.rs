//! The rule for what a page gives a user to run in a shell: every `sh` block of README.md and
//! docs/, and every Nix string that is shell (a build hook of a docs block, a `runCommand`
//! script of the repository's Nix files a block calls), is run by `bash -eu` (and by `bash
//! -e`: a hook may run without `-u`) against stub files in a temporary directory, and judged by
//! what it leaves: the interpreter and RUNPATH the ELF files end up with (read by the loader
//! model's ELF reader), what a copy holds, what a copied program prints when it runs. A Nix
//! string is first evaluated by Nix against the stand-in nixpkgs ([`crate::nix_env`]), so the
//! shell that runs is the one Nix hands to bash, its escapes resolved.
//!
//! The stubs: an ELF program built here that prints the loader the kernel mapped for it and
//! the variables it was given; a store directory of it as nixpkgs lays programs out (a
//! makeWrapper script starting `.hello-wrapped`, a plain program, a chain of two wrappers), and
//! one with a binary wrapper; a shared library with cuda_compat's RUNPATH; a "patched glibc"
//! whose `lib/` is the patched loader built here (`$LD_FALLBACK_SYSROOT`, as `cargo xtask ci`
//! sets it), or else a copy of this machine's loader; the real patchelf. The pages' recipes
//! are for a Jetson: their `ld-linux-aarch64.so.1` is this machine's loader's name here, and
//! their checkout placeholder this checkout.
//!
//! A block that only runs this project's own tools (cargo, git, its scripts and programs) is
//! no recipe on a user's files: it is known by its commands, and every other block needs a
//! scenario here.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use loader_tests::host::{in_ci, Tool};
use model::{sysroot_env_var, Flavour, Target};

use crate::nix_docs::write_block;
use crate::nix_env::{blocks, tool, with_checkout, workspace, Block, Nix, StandIn};

const GCC: Tool = Tool::new("gcc", "gcc");
const PATCHELF: Tool = Tool::new("patchelf", "patchelf");

/// A scenario: runs a block's shell against the stubs, and says what is wrong with what it
/// left, if anything.
type Scenario = fn(&StubBench, &Block) -> Result<(), String>;

/// The Nix blocks whose strings are shell, by the file their first line names.
const NIX_SHELL: &[(&str, Scenario)] = &[
    ("compat-origin-first.nix", origin_first_in_cuda_compat),
    ("app-fallback.nix", nix_copies_the_programs),
];

/// Whether a scenario here runs the shell of the Nix block `name`.
pub(crate) fn runs_nix_shell(name: &str) -> bool {
    NIX_SHELL.iter().any(|(n, _)| *n == name)
}

/// The `sh` blocks that are recipes, by the start of their first command.
const SH_RECIPES: &[(&str, Scenario)] = &[
    (
        "nix-build glibc-fallback.nix -o glibc-fallback",
        the_copy_recipe,
    ),
    (
        "./glibc-fallback/lib/ld-linux-aarch64.so.1 --fallback-path",
        the_loader_starts_it,
    ),
];

/// The repository's Nix files with shell in their strings, and the block whose scenario runs
/// that shell.
const REPOSITORY_SHELL: &[(&str, &str)] = &[("nix/with-fallback-loader.nix", "app-fallback.nix")];

/// The commands of this project's own tools and of the version control around them: a block
/// of these alone builds, tests or installs this repository (they need its sources, a Rust
/// toolchain or the network, and `cargo xtask ci` runs them), it changes no file of the user's
/// system. `export` sets a variable of the user's shell for explain to read (as the loader
/// would): it writes nothing.
const PROJECT_COMMANDS: &[&str] = &[
    "cargo",
    "export",
    "git",
    "cd",
    "mkdir",
    "cat",
    "tee",
    "for",
    "done",
    "scripts/install-deps",
    "ld-fallback-explain",
];

/// The placeholder the pages' recipes give for a Jetson's loader.
const JETSON_LOADER: &str = "ld-linux-aarch64.so.1";

/// The value the recipes give `LD_FALLBACK_PATH` (README, "What to set"): passed along, never
/// opened by the stubs.
const DRIVER_DIR: &str = "/usr/lib/aarch64-linux-gnu/nvidia";

/// The commands a block runs: the first word of each command (after `&&`, `||`, `;`, `do`,
/// `then`), its lines joined where they continue, comments and `VAR=value` prefixes left out.
/// What a pipe feeds is not counted: a synopsis' `|` separates alternatives
/// (`sysroot list | prune`).
fn commands(text: &str) -> Vec<String> {
    let joined = text.replace("\\\n", " ");
    let mut words = Vec::new();
    for line in joined.lines() {
        let line = line.split(" #").next().unwrap_or("").trim();
        if line.starts_with('#') {
            continue;
        }
        let line = line.replace(" && ", ";").replace(" || ", ";");
        for part in line.split(';') {
            let mut part = part.trim();
            for keyword in ["do", "then", "else"] {
                if part == keyword {
                    part = "";
                }
                if let Some(rest) = part.strip_prefix(&format!("{keyword} ")) {
                    part = rest;
                }
            }
            let word = part.split_whitespace().find(|w| !is_assignment(w));
            if let Some(word) = word {
                words.push(word.to_string());
            }
        }
    }
    words
}

/// `NAME=value`, which sets a variable for the command after it.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn only_project_commands(block: &Block) -> bool {
    commands(&block.text)
        .iter()
        .all(|c| PROJECT_COMMANDS.contains(&c.as_str()))
}

/// An indented string (`'' ... ''`): the form Nix expressions give shell in.
fn has_indented_string(nix: &str) -> bool {
    nix.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .any(|l| l.contains("''"))
}

/// What the scenarios run against.
struct StubBench {
    scratch: PathBuf,
    nix: Nix,
    stubs: Stubs,
}

struct Stubs {
    /// A store directory of a package as nixpkgs lays it out (`hello` of the stand-in):
    /// `bin/hello` a makeWrapper script starting `bin/.hello-wrapped`, `bin/hello-plain` an ELF
    /// program, `bin/chain` a wrapper of a wrapper.
    package: PathBuf,
    /// A store directory whose `bin/tool` is a binary wrapper of `bin/.tool-wrapped`.
    binary_wrapped: PathBuf,
    /// A shared library with cuda_compat's RUNPATH, and one without a RUNPATH.
    library: PathBuf,
    bare_library: PathBuf,
    /// The stand-in's patched glibc: `lib/<loader>` is a loader that runs the stub program.
    glibc: PathBuf,
    /// Whether that loader is the patched one built here (it takes `--fallback-path`).
    patched_loader: bool,
    /// A directory with `bin/patchelf`.
    patchelf: PathBuf,
    /// The file name of this machine's loader.
    loader: String,
}

/// The program the copies are made of. It prints the loader the kernel mapped for it and the
/// variables a wrapper and the user set.
const PROGRAM_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
  char line[4096];
  FILE *maps = fopen("/proc/self/maps", "r");
  while (maps && fgets(line, sizeof line, maps)) {
    char *path = strchr(line, '/');
    char *base = path ? strrchr(path, '/') + 1 : NULL;
    if (base && strncmp(base, "ld-", 3) == 0) {
      printf("loader=%s", path);
      break;
    }
  }
  const char *wrapper = getenv("STUB_WRAPPER"), *fallback = getenv("LD_FALLBACK_PATH");
  printf("wrapper=%s\nfallback=%s\n", wrapper ? wrapper : "", fallback ? fallback : "");
  return 0;
}
"#;

const LIBRARY_C: &str = "int stub_driver(void) { return 0; }\n";

/// cuda_compat's `libcuda.so.1` as nixpkgs builds it: the driver directory first, `$ORIGIN`
/// last (troubleshooting.md, error 222).
const CUDA_COMPAT_RUNPATH: &str = "/run/opengl-driver/lib:$ORIGIN";

/// The patched loader's directory, from `$LD_FALLBACK_SYSROOT` (this machine's target).
fn patched_lib_dir() -> Option<PathBuf> {
    let target = *Target::ALL.iter().find(|t| t.is_native())?;
    let var = sysroot_env_var(target, Flavour::Patched);
    let sysroot = std::env::var_os(&var).filter(|v| !v.is_empty());
    let Some(sysroot) = sysroot else {
        let why = format!(
            "${var} is not set: the copies run on a copy of this machine's loader, and the recipe that passes --fallback-path to the loader is not run (cargo xtask ci sets it)"
        );
        assert!(!in_ci(), "{why}");
        eprintln!("SKIPPED in part: {why}");
        return None;
    };
    let loader = PathBuf::from(sysroot).join(target.loader_path().trim_start_matches('/'));
    assert!(loader.exists(), "${var}: no {}", loader.display());
    Some(loader.parent().unwrap().to_path_buf())
}

fn gcc(args: &[&str], source: &str, output: &Path) {
    let dir = output.parent().unwrap();
    let c = dir.join(format!(
        "{}.c",
        output.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&c, source).unwrap();
    let out = Command::new("gcc")
        .args(["-o"])
        .arg(output)
        .arg(&c)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gcc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(c).unwrap();
}

fn write_executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o555)).unwrap();
}

/// A makeWrapper script in the form nixpkgs' make-wrapper.sh writes it: its `#!` line, an
/// export, `exec -a "$0" 'PROGRAM' "$@"`.
fn make_wrapper(path: &Path, program: &Path, value: &str) {
    let bash = crate::nix_env::tool(Tool::new("bash", "bash")).unwrap();
    write_executable(
        path,
        &format!(
            "#! {} -e\nexport STUB_WRAPPER='{value}'\nexec -a \"$0\" '{}' \"$@\"\n",
            bash.display(),
            program.display()
        ),
    );
}

impl Stubs {
    fn make(scratch: &Path) -> Option<Stubs> {
        tool(GCC)?;
        let patchelf_program = tool(PATCHELF)?;
        let stubs = scratch.join("stubs");
        std::fs::create_dir_all(&stubs).unwrap();
        let patched = patched_lib_dir();
        // A Nix program names its glibc in its RUNPATH: the stub names the patched one's, so
        // that its libc.so.6 matches the loader it is re-pointed to.
        let mut program_flags = vec!["-Wl,--enable-new-dtags".to_string()];
        if let Some(lib) = &patched {
            program_flags.push(format!("-Wl,-rpath,{}", lib.display()));
        }
        let flags: Vec<&str> = program_flags.iter().map(String::as_str).collect();
        let program = stubs.join("program");
        gcc(&flags, PROGRAM_C, &program);
        let interpreter = loader_model::elf::dynamic(&std::fs::read(&program).unwrap())
            .unwrap()
            .interpreter
            .expect("gcc's program has an interpreter")
            .to_str()
            .expect("gcc's interpreter is UTF-8")
            .to_string();
        let loader = interpreter.rsplit('/').next().unwrap().to_string();

        let glibc = stubs.join("glibc-fallback");
        match &patched {
            Some(lib) => {
                std::fs::create_dir_all(&glibc).unwrap();
                std::os::unix::fs::symlink(lib, glibc.join("lib")).unwrap();
            }
            None => {
                std::fs::create_dir_all(glibc.join("lib")).unwrap();
                std::fs::copy(&interpreter, glibc.join("lib").join(&loader)).unwrap();
            }
        }

        let package = stubs.join("hello-2.12.2");
        let bin = package.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for name in [".hello-wrapped", "hello-plain", ".chain-wrapped_"] {
            std::fs::copy(&program, bin.join(name)).unwrap();
            std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o555))
                .unwrap();
        }
        make_wrapper(
            &bin.join("hello"),
            &bin.join(".hello-wrapped"),
            "set by the wrapper",
        );
        make_wrapper(
            &bin.join(".chain-wrapped"),
            &bin.join(".chain-wrapped_"),
            "set by the inner wrapper",
        );
        make_wrapper(
            &bin.join("chain"),
            &bin.join(".chain-wrapped"),
            "set by the outer wrapper",
        );

        let binary_wrapped = stubs.join("tool-1.0");
        std::fs::create_dir_all(binary_wrapped.join("bin")).unwrap();
        for name in ["tool", ".tool-wrapped"] {
            std::fs::copy(&program, binary_wrapped.join("bin").join(name)).unwrap();
        }

        let library = stubs.join("libcuda.so.1");
        gcc(
            &[
                "-shared",
                "-fPIC",
                "-Wl,-soname,libcuda.so.1",
                "-Wl,--enable-new-dtags",
                &format!("-Wl,-rpath,{CUDA_COMPAT_RUNPATH}"),
            ],
            LIBRARY_C,
            &library,
        );
        let bare_library = stubs.join("libcuda-bare.so.1");
        gcc(
            &["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1"],
            LIBRARY_C,
            &bare_library,
        );

        let patchelf = stubs.join("patchelf");
        std::fs::create_dir_all(patchelf.join("bin")).unwrap();
        std::os::unix::fs::symlink(&patchelf_program, patchelf.join("bin/patchelf")).unwrap();

        Some(Stubs {
            package,
            binary_wrapped,
            library,
            bare_library,
            glibc,
            patched_loader: patched.is_some(),
            patchelf,
            loader,
        })
    }

    /// The loader's file as the kernel maps it (links resolved): what a program that runs on
    /// it prints.
    fn loader_file(&self) -> PathBuf {
        std::fs::canonicalize(self.glibc.join("lib").join(&self.loader)).unwrap()
    }
}

impl StubBench {
    fn make(scratch: &Path) -> Option<StubBench> {
        let stubs = Stubs::make(scratch)?;
        let stand_in = StandIn {
            glibc_fallback: stubs.glibc.clone(),
            hello: stubs.package.clone(),
            patchelf: stubs.patchelf.clone(),
            loader: stubs.loader.clone(),
            ..StandIn::default()
        };
        let nix = Nix::new(scratch, &stand_in)?;
        Some(StubBench {
            scratch: scratch.to_path_buf(),
            nix,
            stubs,
        })
    }

    /// A new empty directory of the scratch space.
    fn dir(&self, name: &str) -> PathBuf {
        let mut n = 0;
        loop {
            let dir = self.scratch.join(format!("{name}-{n}"));
            if std::fs::create_dir(&dir).is_ok() {
                return dir;
            }
            n += 1;
        }
    }

    /// Runs `script` with `bash FLAGS` in `cwd`, `path` ahead of this machine's PATH, with
    /// `env` and without the loader's variables of the test's own environment.
    fn bash(
        &self,
        flags: &str,
        script: &str,
        cwd: &Path,
        path: &[PathBuf],
        env: &[(&str, String)],
    ) -> Ran {
        let file = self.dir("fragment").join("fragment.sh");
        std::fs::write(&file, script).unwrap();
        let host = std::env::var_os("PATH").unwrap_or_default();
        let path =
            std::env::join_paths(path.iter().cloned().chain(std::env::split_paths(&host))).unwrap();
        let out = Command::new("bash")
            .arg(flags)
            .arg(&file)
            .current_dir(cwd)
            .env("PATH", path)
            .env_remove("LD_FALLBACK_PATH")
            .env_remove("LD_LIBRARY_PATH")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        Ran {
            flags: flags.to_string(),
            script: script.to_string(),
            out,
        }
    }
}

/// A fragment's run.
struct Ran {
    flags: String,
    script: String,
    out: Output,
}

impl Ran {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// What went wrong, with the run: `bash FLAGS`, the script, its status and output.
    fn failed(&self, what: &str) -> String {
        format!(
            "{what}\n  bash {}, {}\n  script:\n{}  stdout:\n{}  stderr:\n{}",
            self.flags,
            self.out.status,
            indent(&self.script),
            indent(&self.stdout()),
            indent(&self.stderr())
        )
    }

    fn succeeded(&self) -> Result<&Ran, String> {
        if self.out.status.success() {
            Ok(self)
        } else {
            Err(self.failed("the fragment failed"))
        }
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn dynamic(file: &Path) -> Result<loader_model::elf::Dynamic, String> {
    let data = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    loader_model::elf::dynamic(&data).map_err(|e| format!("{}: {e}", file.display()))
}

/// A copy's ELF program must name `loader` as its interpreter.
fn interpreter_is(file: &Path, loader: &Path) -> Result<(), String> {
    let interpreter = dynamic(file)?.interpreter;
    if interpreter.as_ref().and_then(|i| i.to_str()) != Some(&*loader.display().to_string()) {
        return Err(format!(
            "{}: interpreter {interpreter:?}, not the patched glibc's {}",
            file.display(),
            loader.display()
        ));
    }
    Ok(())
}

/// A copied script must start copies only: it names no file of the original's directory.
fn starts_copies(script: &Path, original_dir: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(script).map_err(|e| format!("{}: {e}", script.display()))?;
    if text.contains(&format!("{}/", original_dir.display())) {
        return Err(format!(
            "{} still starts the original ({}/...):\n{text}",
            script.display(),
            original_dir.display()
        ));
    }
    Ok(())
}

/// What a copy printed when run: the loader mapped for it, and the variables.
fn printed(ran: &Ran, loader: &Path, wrapper: &str, fallback: &str) -> Result<(), String> {
    let wanted = format!(
        "loader={}\nwrapper={wrapper}\nfallback={fallback}\n",
        loader.display()
    );
    if !ran.stdout().ends_with(&wanted) {
        return Err(ran.failed(&format!("the program did not print:\n{}", indent(&wanted))));
    }
    Ok(())
}

/// troubleshooting.md's overlay: its `postFixup`, as Nix gives it to the builder, run with
/// `$out` holding cuda_compat's library, must leave RUNPATH `$ORIGIN`, then the entries it
/// had, in their order, and no empty entry (which the loader reads as the working directory).
fn origin_first_in_cuda_compat(bench: &StubBench, block: &Block) -> Result<(), String> {
    let dir = write_block(&bench.scratch, block);
    let name = block.file_name().unwrap();
    let expr = format!(
        "let prev = {{ cudaPackages.overrideScope = f: f {{ }} {{ cuda_compat.overrideAttrs = g: g {{ postFixup = \"\"; }}; }}; }}; in ((import ./{name}) prev prev).cudaPackages.cuda_compat.postFixup"
    );
    let script = bench.nix.eval(&dir, &expr)?;
    let script = script.as_str().ok_or("postFixup is not a string")?;
    origin_first(bench, script, &["-eu", "-e"])
}

/// Runs a `postFixup` against both stub libraries, with each of `bash`'s `flags`.
fn origin_first(bench: &StubBench, script: &str, flags: &[&str]) -> Result<(), String> {
    for &flags in flags {
        for (library, before) in [
            (&bench.stubs.library, CUDA_COMPAT_RUNPATH),
            (&bench.stubs.bare_library, ""),
        ] {
            let out = bench.dir("cuda_compat");
            let lib = out.join("compat/libcuda.so.1");
            std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
            std::fs::copy(library, &lib).unwrap();
            let ran = bench.bash(
                flags,
                script,
                &out,
                &[bench.stubs.patchelf.join("bin")],
                &[("out", out.display().to_string())],
            );
            ran.succeeded()?;
            let runpath = dynamic(&lib)?
                .runpath
                .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned())
                .unwrap_or_default();
            let mut wanted = vec!["$ORIGIN"];
            wanted.extend(before.split(':').filter(|e| !e.is_empty()));
            let entries: Vec<&str> = runpath.split(':').collect();
            if entries != wanted || entries.contains(&"") {
                return Err(ran.failed(&format!(
                    "RUNPATH {runpath:?} (before: {before:?}), not {:?}: `$ORIGIN` first, the old entries after it, no empty entry",
                    wanted.join(":")
                )));
            }
        }
    }
    Ok(())
}

/// nix.md's `app-fallback.nix`: the builder script of `withFallbackLoader hello`, run with
/// the PATH its `nativeBuildInputs` give, must leave in `$out/bin` each program of hello's
/// `bin/` on the patched loader: the ELF ones re-pointed, the wrappers starting re-pointed
/// copies with their variables; and each copy runs on that loader.
fn nix_copies_the_programs(bench: &StubBench, block: &Block) -> Result<(), String> {
    let dir = write_block(&bench.scratch, block);
    let name = block.file_name().unwrap();
    let built = bench.nix.eval(
        &dir,
        &format!("let d = import ./{name}; in {{ inherit (d) script nativeBuildInputs; }}"),
    )?;
    let script = bench
        .nix
        .real(built["script"].as_str().ok_or("no builder script")?);
    let path: Vec<PathBuf> = built["nativeBuildInputs"]
        .as_array()
        .ok_or("no nativeBuildInputs")?
        .iter()
        .map(|p| PathBuf::from(bench.nix.real(p.as_str().unwrap_or(""))).join("bin"))
        .collect();
    let loader = bench.stubs.glibc.join("lib").join(&bench.stubs.loader);
    let original = bench.stubs.package.join("bin");
    for flags in ["-eu", "-e"] {
        let out = bench.dir("out").join("result");
        let ran = bench.bash(
            flags,
            &script,
            &bench.scratch,
            &path,
            &[("out", out.display().to_string())],
        );
        ran.succeeded()?;
        let bin = out.join("bin");
        for program in [".hello-wrapped", "hello-plain", ".chain-wrapped_"] {
            interpreter_is(&bin.join(program), &loader).map_err(|e| ran.failed(&e))?;
        }
        for script in ["hello", "chain", ".chain-wrapped"] {
            starts_copies(&bin.join(script), &original).map_err(|e| ran.failed(&e))?;
        }
        for (program, wrapper) in [
            ("hello", "set by the wrapper"),
            ("hello-plain", ""),
            ("chain", "set by the inner wrapper"),
        ] {
            let run = bench.bash(
                flags,
                &format!(
                    "LD_FALLBACK_PATH={DRIVER_DIR} {}\n",
                    bin.join(program).display()
                ),
                &bench.scratch,
                &[],
                &[],
            );
            printed(&run, &bench.stubs.loader_file(), wrapper, DRIVER_DIR)?;
        }
    }
    Ok(())
}

/// A user's directory for nix.md's recipes: nix.md's `glibc-fallback.nix` in it, `nix-build`
/// a stand-in that makes the out-link to what the file evaluates to (the stand-in's glibc
/// is the stub), `app` on PATH through a profile's link to `program`. (cwd, PATH, env).
fn users_directory(
    bench: &StubBench,
    program: &Path,
) -> (PathBuf, Vec<PathBuf>, Vec<(&'static str, String)>) {
    let cwd = bench.dir("home");
    let glibc = blocks("nix")
        .into_iter()
        .find(|b| b.page == "docs/nix.md" && b.file_name() == Some("glibc-fallback.nix"))
        .expect("nix.md gives glibc-fallback.nix");
    std::fs::write(cwd.join("glibc-fallback.nix"), with_checkout(&glibc.text)).unwrap();
    let tools = bench.dir("tools");
    write_executable(
        &tools.join("nix-build"),
        "#!/usr/bin/env bash\n\
         # nix-build FILE -o LINK, as the pages use it: the out-link to FILE's outPath.\n\
         set -eu\n\
         [ \"$2\" = -o ]\n\
         path=$(nix-instantiate --eval -E \"(import ./$1 { }).outPath\")\n\
         path=${path#\\\"}\n\
         ln -sfn \"${path%\\\"}\" \"$3\"\n",
    );
    let profile = bench.dir("profile");
    std::os::unix::fs::symlink(program, profile.join("app")).unwrap();
    (
        cwd,
        vec![tools, profile, bench.stubs.patchelf.join("bin")],
        bench.nix.env(),
    )
}

/// nix.md's copy recipe, on a makeWrapper script, a plain program and a binary wrapper, each
/// `app` through a profile's link: the first two must leave `app-fallback/app` running on the
/// patched loader (through the out-link) with the wrapper's variables and the user's list;
/// the third must stop, saying why, and copy no `app`.
fn the_copy_recipe(bench: &StubBench, block: &Block) -> Result<(), String> {
    let script = with_checkout(&block.text);
    let package = bench.stubs.package.join("bin");
    for flags in ["-eu", "-e"] {
        for (program, copies, wrapper) in [
            (
                "hello",
                &["app", ".hello-wrapped"][..],
                "set by the wrapper",
            ),
            ("hello-plain", &["app"][..], ""),
        ] {
            let (cwd, path, env) = users_directory(bench, &package.join(program));
            let ran = bench.bash(flags, &script, &cwd, &path, &env);
            ran.succeeded()?;
            let loader = cwd.join("glibc-fallback/lib").join(&bench.stubs.loader);
            let elf = copies.last().unwrap();
            interpreter_is(&cwd.join("app-fallback").join(elf), &loader)
                .map_err(|e| ran.failed(&e))?;
            if copies.len() > 1 {
                starts_copies(&cwd.join("app-fallback/app"), &package)
                    .map_err(|e| ran.failed(&e))?;
            }
            printed(&ran, &bench.stubs.loader_file(), wrapper, DRIVER_DIR)?;
        }
        let tool = bench.stubs.binary_wrapped.join("bin/tool");
        let (cwd, path, env) = users_directory(bench, &tool);
        let ran = bench.bash(flags, &script, &cwd, &path, &env);
        if ran.out.status.success()
            || !ran.stderr().contains("is a binary wrapper")
            || cwd.join("app-fallback/app").exists()
        {
            return Err(
                ran.failed("a binary wrapper must stop the recipe, saying so, and leave no copy")
            );
        }
    }
    Ok(())
}

/// nix.md's one run: the patched loader, given the list, starts the program (an ELF one, as
/// the page says) and the program runs on it.
fn the_loader_starts_it(bench: &StubBench, block: &Block) -> Result<(), String> {
    if !bench.stubs.patched_loader {
        eprintln!("SKIPPED: {}: needs the patched loader", block.at());
        return Ok(());
    }
    let script = with_checkout(&block.text).replace(JETSON_LOADER, &bench.stubs.loader);
    let program = bench.stubs.package.join("bin/hello-plain");
    for flags in ["-eu", "-e"] {
        let (cwd, path, env) = users_directory(bench, &program);
        std::os::unix::fs::symlink(&bench.stubs.glibc, cwd.join("glibc-fallback")).unwrap();
        let ran = bench.bash(flags, &script, &cwd, &path, &env);
        ran.succeeded()?;
        printed(&ran, &bench.stubs.loader_file(), "", "")?;
    }
    Ok(())
}

/// The repository's Nix files: the flake, default.nix, nix/.
fn repository_nix_files() -> Vec<String> {
    let mut files = vec!["flake.nix".to_string(), "default.nix".to_string()];
    for entry in std::fs::read_dir(workspace().join("nix"))
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".nix") {
            files.push(format!("nix/{name}"));
        }
    }
    files.sort();
    files
}

#[test]
fn every_shell_fragment_of_the_pages_runs_as_the_user_runs_it() {
    let scratch = tempfile::TempDir::new().unwrap();
    let Some(bench) = StubBench::make(scratch.path()) else {
        return;
    };
    let mut failures = Vec::new();
    let mut used = Vec::new();
    let mut run =
        |key: &'static str, scenario: Scenario, block: &Block, failures: &mut Vec<String>| {
            used.push(key);
            if let Err(why) = scenario(&bench, block) {
                failures.push(format!("{}: {why}", block.at()));
            }
        };
    for block in blocks("sh") {
        if only_project_commands(&block) {
            continue;
        }
        match SH_RECIPES
            .iter()
            .find(|(start, _)| block.first_command().starts_with(start))
        {
            Some((key, scenario)) => run(key, *scenario, &block, &mut failures),
            None => failures.push(format!(
                "{}: a sh block that runs more than this project's commands ({:?}) and that no scenario runs: add one to SH_RECIPES",
                block.at(),
                commands(&block.text)
            )),
        }
    }
    // A block that calls the repository's Nix files may have its shell there.
    for block in blocks("nix") {
        let name = crate::nix_docs::file_name(&block).unwrap_or_default();
        match NIX_SHELL.iter().find(|(n, _)| *n == name) {
            Some((key, scenario)) => run(key, *scenario, &block, &mut failures),
            None if !has_indented_string(&block.text) => {}
            None => failures.push(format!(
                "{}: a Nix block with shell in its strings ({name}) that no scenario runs: add one to NIX_SHELL",
                block.at()
            )),
        }
    }
    for file in repository_nix_files() {
        let text = std::fs::read_to_string(workspace().join(&file)).unwrap();
        if !has_indented_string(&text) {
            continue;
        }
        match REPOSITORY_SHELL.iter().find(|(f, _)| *f == file) {
            Some((_, block)) if used.contains(block) => {}
            Some((_, block)) => failures.push(format!(
                "{file}: its shell is run through {block}, which no page gives"
            )),
            None => failures.push(format!(
                "{file}: shell in its strings that no scenario runs: name the block that calls it in REPOSITORY_SHELL"
            )),
        }
    }
    for (key, _) in SH_RECIPES.iter().chain(NIX_SHELL) {
        if !used.contains(key) {
            failures.push(format!(
                "no page gives {key:?} any more: its scenario is stale"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The overlay troubleshooting.md gave before: Nix turns its `''$ORIGIN` into `$ORIGIN`
/// inside double quotes, which bash expands; under `-u` the build stops, without it RUNPATH
/// gets an empty entry. The scenario fails on it both ways.
#[test]
fn the_overlay_with_origin_in_double_quotes_is_refused() {
    let scratch = tempfile::TempDir::new().unwrap();
    let Some(bench) = StubBench::make(scratch.path()) else {
        return;
    };
    let overlay = r#"final: prev: {
  cudaPackages = prev.cudaPackages.overrideScope (cfinal: cprev: {
    cuda_compat = cprev.cuda_compat.overrideAttrs (old: {
      postFixup = (old.postFixup or "") + ''
        lib=$out/compat/libcuda.so.1
        patchelf --set-rpath "''$ORIGIN:$(patchelf --print-rpath "$lib")" "$lib"
      '';
    });
  });
}
"#;
    let block = Block {
        page: "before".to_string(),
        line: 1,
        text: format!("# compat-origin-first.nix: an overlay\n{overlay}"),
    };
    let err = origin_first_in_cuda_compat(&bench, &block).unwrap_err();
    assert!(err.contains("ORIGIN: unbound variable"), "{err}");
    let dir = write_block(&bench.scratch, &block);
    let script = bench
        .nix
        .eval(&dir, "let prev = { cudaPackages.overrideScope = f: f { } { cuda_compat.overrideAttrs = g: g { postFixup = \"\"; }; }; }; in ((import ./compat-origin-first.nix) prev prev).cudaPackages.cuda_compat.postFixup")
        .unwrap();
    let err = origin_first(&bench, script.as_str().unwrap(), &["-e"]).unwrap_err();
    assert!(
        err.contains("RUNPATH \":/run/opengl-driver/lib:$ORIGIN\""),
        "bash expands the unset ORIGIN to nothing, an empty first entry: {err}"
    );
}

#[test]
fn commands_are_read_from_a_block() {
    assert_eq!(
        commands("git clone x && cd y\n# a comment\nFOO=1 cargo xtask ci 2>&1 | tee log   # trailing\nfor c in a b; do\n  git -C $c fetch \\\n    --depth 1\ndone\n"),
        ["git", "cd", "cargo", "for", "git", "done"]
    );
    assert_eq!(
        commands("nix-build a.nix -o g   # the GC root\nLD_FALLBACK_PATH=/x ./app\n"),
        ["nix-build", "./app"]
    );
}
