//! `rebase-glibc --build-check`, as the sysroot stage provides it to the rebase (a
//! `rebase::patch_checks::CompileCheck`): after each patch, the loader files it touches are
//! compiled in the release's real configuration, so that a hunk that applies but no longer compiles (an
//! internal rename upstream) stops the rebase at the patch that caused it, with the
//! compiler's error.
//!
//! The fastest meaningful compile: glibc's own make, asked in a configured, compiled build
//! tree of the target release (unpatched, from `Builder::tree`) how it compiles each object
//! of a touched `.c` file (`make -n -W <file> <object>`), then that command run on the
//! rebase's work tree instead of the release's sources, its output going to a scratch
//! directory. Every variant glibc builds a file as is compiled (`.os` for ld.so and
//! libc.so, `.o` for libc.a, ...), since `SHARED` and `MODULE_NAME` select different code. A
//! few seconds per patch; the build tree itself is a cold build of the release the first time
//! (under the machine-wide build lock), reused by the release's unpatched sysroot builds.
//!
//! Tests (`elf/tst-*.c`) have no objects in a compiled tree: `make check` builds them, and
//! `cargo xtask verify` runs it.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use model::{parallel_map, Flavour, Target};
use xshell::cmd;

use crate::cli::Env;
use crate::rebase::patch_checks::{CompileCheck, Compiled};
use crate::sysroot::{default_jobs, Builder, BuiltTree};
use crate::util::shell;
use model::Release;

/// Where the compiled build tree comes from.
pub enum Source {
    /// `Builder::tree` of the release's unpatched x86_64 build: built the first time.
    Builder(Box<Builder>),
    /// A compiled tree given as is (`<root>/src`, `<root>/build`), for tests.
    At(PathBuf),
}

/// A compiled tree, locked for as long as this lives when the builder handed it out.
struct CompiledTree {
    src: PathBuf,
    build: PathBuf,
    _held: Option<BuiltTree>,
}

/// The build check of one rebase run.
pub struct BuildCheck {
    source: Source,
    compiled: Option<CompiledTree>,
    /// The compile command of each object, as make prints it for the release's sources.
    commands: HashMap<PathBuf, String>,
    jobs: usize,
}

/// One compile the check runs.
struct Job {
    file: String,
    object: PathBuf,
    command: String,
}

/// The build check of a command's rebase: its tree from the environment's build cache,
/// built the first time, compiling with one job per CPU.
pub(crate) fn for_rebase(env: &Env) -> Box<dyn CompileCheck> {
    Box::new(BuildCheck::new(
        Source::Builder(Box::new(Builder::new(env))),
        default_jobs(),
    ))
}

impl BuildCheck {
    pub fn new(source: Source, jobs: usize) -> BuildCheck {
        BuildCheck {
            source,
            compiled: None,
            commands: HashMap::new(),
            jobs: jobs.max(1),
        }
    }

    /// The compiled tree of `onto`, made (or brought up to date) the first time.
    fn compiled(&mut self, onto: Release) -> Result<&CompiledTree> {
        if self.compiled.is_none() {
            let compiled = match &self.source {
                Source::At(root) => CompiledTree {
                    src: root.join("src"),
                    build: root.join("build"),
                    _held: None,
                },
                Source::Builder(builder) => {
                    diagln!(
                        "build check: taking the compiled glibc {onto} x86_64 tree (unpatched) from the build cache; \
                         the first time for a release this is a cold build of about 20 min on 2 cores, under the \
                         machine-wide build lock {}, reused by later builds of the release",
                        crate::util::lock::MACHINE_LOCK
                    );
                    let started = Instant::now();
                    let tree = builder
                        .tree(onto, Target::X86_64, Flavour::Unpatched)
                        .with_context(|| {
                            format!("the build check needs a compiled glibc {onto} tree")
                        })?;
                    diagln!(
                        "build check: glibc {onto} build tree ready in {:.0} s ({})",
                        started.elapsed().as_secs_f64(),
                        tree.work.root().display()
                    );
                    CompiledTree {
                        src: tree.work.src(),
                        build: tree.work.build(),
                        _held: Some(tree),
                    }
                }
            };
            self.compiled = Some(compiled);
        }
        Ok(self.compiled.as_ref().expect("set above"))
    }
}

impl CompileCheck for BuildCheck {
    fn check(
        &mut self,
        onto: Release,
        tree: &Path,
        files: &[String],
        log: &Path,
    ) -> Result<Compiled> {
        let started = Instant::now();
        let (src, build) = {
            let compiled = self.compiled(onto)?;
            (compiled.src.clone(), compiled.build.clone())
        };
        let mut jobs = Vec::new();
        let mut without = Vec::new();
        for file in files {
            let objects = objects_of(&build, file);
            if objects.is_empty() {
                without.push(file.clone());
            }
            for object in objects {
                let command = match self.commands.get(&object) {
                    Some(command) => command.clone(),
                    None => {
                        let command = compile_command(&src, &build, file, &object)?;
                        self.commands.insert(object.clone(), command.clone());
                        command
                    }
                };
                jobs.push(Job {
                    file: file.clone(),
                    object,
                    command,
                });
            }
        }
        if jobs.is_empty() {
            return Ok(Compiled::Nothing(format!(
                "build check: nothing to compile: {} ha{} no object in glibc {onto}'s build (tests are compiled by `make check`, which verify runs)",
                listed(&without),
                if without.len() == 1 { "s" } else { "ve" }
            )));
        }
        let scratch = tempfile::tempdir().context("cannot create a directory for the objects")?;
        let results = parallel_map(&jobs, self.jobs, |job| {
            compile(job, &src, &build, tree, scratch.path())
        });
        let mut text = String::new();
        let mut failed = None;
        for (job, result) in jobs.iter().zip(results) {
            let (ok, output) = result?;
            let _ = writeln!(
                text,
                "$ (cd {}/{} && {})\n{output}{}",
                tree.display(),
                dir_of(&job.file),
                job.command,
                if ok { "" } else { "FAILED\n" }
            );
            if !ok && failed.is_none() {
                failed = Some((job, output));
            }
        }
        std::fs::write(log, &text).with_context(|| format!("cannot write {}", log.display()))?;
        let compiled: Vec<String> = jobs
            .iter()
            .map(|j| {
                j.object
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        if let Some((job, output)) = failed {
            let object = job.object.file_name().unwrap_or_default().to_string_lossy();
            let lines: Vec<&str> = output.lines().collect();
            let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
            let mut report = format!(
                "build check: {} does not compile as {object} ({}) in glibc {onto}'s configuration:\n",
                job.file,
                module_of(&job.command)
            );
            for line in tail {
                let _ = writeln!(report, "    {line}");
            }
            let _ = write!(
                report,
                "  (the compiler ran in {}/ of a scratch copy of the work tree named below: its paths are relative to that; full log: {})",
                dir_of(&job.file),
                log.display()
            );
            return Ok(Compiled::Failed(report));
        }
        let mut summary = format!(
            "build check: {} compiled ({}) in {:.1} s",
            listed(files),
            compiled.join(", "),
            started.elapsed().as_secs_f64()
        );
        if !without.is_empty() {
            let _ = write!(
                summary,
                "; {} ha{} no object",
                listed(&without),
                if without.len() == 1 { "s" } else { "ve" }
            );
        }
        Ok(Compiled::Compiled(summary))
    }
}

/// Lines of a failed compile a report shows.
const TAIL_LINES: usize = 25;

fn listed(files: &[String]) -> String {
    files.join(", ")
}

fn dir_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// What a compile command builds, in words: `MODULE_NAME` and whether it is a shared object.
fn module_of(command: &str) -> String {
    let module = command
        .split_whitespace()
        .find_map(|w| w.strip_prefix("-DMODULE_NAME="))
        .unwrap_or("?");
    let what = match module {
        "rtld" => "the ld.so object",
        "libc" if command.contains("-DSHARED") => "the libc.so object",
        "libc" => "the libc.a object",
        _ => "an object",
    };
    format!("{what}, MODULE_NAME={module}")
}

/// The objects glibc builds `<dir>/<stem>.c` as, in the compiled tree `build`: `.o`
/// (static), `.os` (shared), `.oS` (libc_nonshared), `rtld-*.os` (ld.so's own copy of a libc
/// file). Only top-level subdirectories: a sysdeps file is compiled in the subdirectory that
/// uses it, under that subdirectory's name.
pub(crate) fn objects_of(build: &Path, file: &str) -> Vec<PathBuf> {
    let Some((dir, name)) = file.split_once('/') else {
        return Vec::new();
    };
    let Some(stem) = name.strip_suffix(".c") else {
        return Vec::new();
    };
    if stem.contains('/') {
        return Vec::new();
    }
    [
        format!("{stem}.o"),
        format!("{stem}.os"),
        format!("{stem}.oS"),
        format!("rtld-{stem}.os"),
    ]
    .into_iter()
    .map(|name| build.join(dir).join(name))
    .filter(|path| path.is_file())
    .collect()
}

/// The command make runs to compile `object` from `file`, asked of the release's own
/// makefiles: `make -n -W <file>` pretends the source changed and prints, without running
/// anything, what it would run.
pub(crate) fn compile_command(
    src: &Path,
    build: &Path,
    file: &str,
    object: &Path,
) -> Result<String> {
    let (dir, name) = file
        .split_once('/')
        .with_context(|| format!("{file} is not in a glibc subdirectory"))?;
    let sh = shell::in_dir(&src.join(dir))?;
    let mut make = cmd!(
        sh,
        "make -n -W {name} objdir={build} subdir={dir} ..=../ {object}"
    );
    // A caller's flags or make settings would change the command (see sysroot::recipe).
    for var in ["CFLAGS", "CPPFLAGS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"] {
        make = make.env_remove(var);
    }
    let out = make
        .ignore_status()
        .output()
        .with_context(|| format!("cannot run make in {}", src.join(dir).display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let wanted = format!(" -o {} ", object.display());
    let found = stdout
        .lines()
        .find(|line| format!("{line} ").contains(&wanted) && line.contains(" -c"));
    match found {
        Some(line) => Ok(line.trim().to_string()),
        None => bail!(
            "glibc's make did not say how it compiles {} (`make -n -W {name} {}` in {}):\n{}{}",
            object.display(),
            object.display(),
            src.join(dir).display(),
            stdout,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// `command` (make's, for the release's sources in `src` and objects in `build`) rewritten
/// to compile the work tree's file into `out` instead.
fn rewrite(
    command: &str,
    src: &Path,
    object: &Path,
    build: &Path,
    tree: &Path,
    out: &Path,
) -> String {
    let relative = object.strip_prefix(build).unwrap_or(object);
    command
        .replace(
            &object.display().to_string(),
            &out.join(relative).display().to_string(),
        )
        .replace(
            &format!("{}/", src.display()),
            &format!("{}/", tree.display()),
        )
}

/// How one compile went: whether it succeeded, and the compiler's output.
type OneCompile = Result<(bool, String)>;

fn compile(job: &Job, src: &Path, build: &Path, tree: &Path, out: &Path) -> OneCompile {
    let dir = dir_of(&job.file);
    let relative = job.object.strip_prefix(build).unwrap_or(&job.object);
    if let Some(parent) = out.join(relative).parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let line = rewrite(&job.command, src, &job.object, build, tree, out);
    let sh = shell::in_dir(&tree.join(dir))?;
    let mut cmd = Command::from(cmd!(sh, "sh -c {line}"));
    crate::util::child::dies_with_us(&mut cmd);
    let output = cmd
        .output()
        .with_context(|| format!("cannot run the compiler for {}", job.file))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok((output.status.success(), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_compiles_the_work_tree_into_the_scratch_dir() {
        let command = "gcc dl-load.c -c -I../include -I/b/elf -include /b/libc-modules.h -DMODULE_NAME=rtld -DSHARED -I/s/x -o /b/elf/dl-load.os -MD -MP -MF /b/elf/dl-load.os.dt -MT /b/elf/dl-load.os";
        let line = rewrite(
            command,
            Path::new("/s"),
            Path::new("/b/elf/dl-load.os"),
            Path::new("/b"),
            Path::new("/t"),
            Path::new("/o"),
        );
        assert_eq!(
            line,
            "gcc dl-load.c -c -I../include -I/b/elf -include /b/libc-modules.h -DMODULE_NAME=rtld -DSHARED -I/t/x -o /o/elf/dl-load.os -MD -MP -MF /o/elf/dl-load.os.dt -MT /o/elf/dl-load.os"
        );
        assert_eq!(module_of(command), "the ld.so object, MODULE_NAME=rtld");
    }

    #[test]
    fn objects_are_every_variant_built() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("elf")).unwrap();
        for name in ["dl-load.o", "dl-load.os", "dl-load.os.d", "rtld.os"] {
            std::fs::write(tmp.path().join("elf").join(name), "").unwrap();
        }
        let names = |file| {
            objects_of(tmp.path(), file)
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(names("elf/dl-load.c"), ["dl-load.o", "dl-load.os"]);
        assert_eq!(names("elf/tst-fallback-path.c"), Vec::<String>::new());
        assert_eq!(names("elf/dl-load.h"), Vec::<String>::new());
    }
}
