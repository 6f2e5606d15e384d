//! `ld-fallback-explain`: which file a program would map for every library, under the loader
//! that would really run it (the one its interpreter names, or nix-ld's `NIX_LD`, or one a
//! wrapper script starts, or `--loader`), with the variables that loader would get (this
//! process's environment, the options over it, what a wrapper script exports), without
//! running the program. It reads the program's ELF files and the tree they live in, asks the
//! loader whether it is patched (`ld.so --help`: the only thing it runs), and walks the
//! search model of `loader_model`, which is proven against the real loaders
//! (docs/explain.md).
//!
//! The crate is the stand-alone form users install (`cargo install --path explain`);
//! `cargo xtask explain` runs the same [`Args`].

pub mod environment;
mod loader;
pub mod wrapper;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use loader_model::{
    Bytes, Config, Cpu, Dlopen, GlibcVersion, LoaderKind, PathList, Program, ReadError,
    RunningLoader, Setting,
};
use model::{printable, supported, Flavour, Release, Target};

use environment::{Environment, LOADER_VARIABLES};

/// The command line; `Default` is the command with nothing given (an empty program).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// The program, as it would be started: an absolute path, or one relative to the
    /// working directory (with --root: relative to --cwd inside the root). A wrapper script
    /// (nixpkgs' makeWrapper) is followed to the program it starts.
    pub program: OsString,
    /// The tree taken as `/`: a scenario root, a container's or a board's filesystem
    /// [default: /, this machine].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// LD_FALLBACK_PATH: the fallback directories [default: the variable in this
    /// environment].
    #[arg(long, value_name = "LIST")]
    pub fallback_path: Option<OsString>,
    /// LD_LIBRARY_PATH [default: the variable in this environment].
    #[arg(long, value_name = "LIST")]
    pub library_path: Option<OsString>,
    /// LD_PRELOAD: objects loaded before the program's libraries [default: the variable in
    /// this environment].
    #[arg(long, value_name = "LIST")]
    pub preload: Option<OsString>,
    /// Read none of LD_LIBRARY_PATH, LD_FALLBACK_PATH, LD_PRELOAD, NIX_LD* from this
    /// environment: the program gets only what the options give.
    #[arg(long)]
    pub ignore_env: bool,
    /// The loader that runs the program, a path in the tree: started as `LOADER PROGRAM`
    /// (as a wrapper does), or, when the program's interpreter is nix-ld's shim, in place
    /// of NIX_LD. Its release, whether it is patched and its default directories are its
    /// own [default: the program's interpreter; under nix-ld, NIX_LD].
    #[arg(long, value_name = "PATH")]
    pub loader: Option<OsString>,
    /// A dlopen the program makes: `NAME` (from the program) or `CALLER:NAME` (from a
    /// loaded library, named by path, soname or file name). Repeat, in the program's order.
    #[arg(long, value_name = "[CALLER:]NAME")]
    pub dlopen: Vec<OsString>,
    /// A dlmopen (LM_ID_NEWLM) from the program, into a namespace of its own.
    #[arg(long, value_name = "NAME")]
    pub dlmopen: Vec<OsString>,
    /// glibc release of the modelled loader [default: the release of the loader that runs
    /// the program when it is a supported one, else the newest].
    #[arg(long, value_name = "X.Y", value_parser = release())]
    pub release: Option<Release>,
    /// Target [default: the program's architecture].
    #[arg(long, value_parser = target())]
    pub target: Option<Target>,
    /// Model this loader instead of what the loader that runs the program is: `patched` (the
    /// series: what a patched loader would do), `unpatched` (the release as it is) or
    /// `fallback-first` (the variant that searches the fallback list right after DT_RUNPATH,
    /// before ld.so.cache and the default directories, as nixpkgs' earlier ld-fallback.patch did)
    /// [default: what that loader says it is (its --help lists --fallback-path), or, where
    /// it cannot run, what its file carries]
    #[arg(long, value_parser = flavour())]
    pub flavour: Option<Flavour>,
    /// Model the release as it is, without the LD_FALLBACK_PATH series: `--flavour unpatched`.
    #[arg(long, conflicts_with = "flavour")]
    pub unpatched: bool,
    /// Secure mode (AT_SECURE: setuid, setgid, capabilities).
    #[arg(long)]
    pub secure: bool,
    /// As under `ld.so --inhibit-cache`.
    #[arg(long)]
    pub inhibit_cache: bool,
    /// As `ldd` lists: go on past a missing library.
    #[arg(long)]
    pub ldd: bool,
    /// The working directory (for a relative program, relative paths and empty
    /// LD_LIBRARY_PATH entries) [default: this process's own; with --root: / inside it].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<OsString>,
    /// Print JSON instead of the explanation.
    #[arg(long)]
    pub json: bool,
}

/// What [`Args::explain`] found.
#[derive(Debug)]
pub struct Explained {
    /// The explanation, as text or JSON, ending in a newline.
    pub text: String,
    /// Every library found and the program would start.
    pub complete: bool,
    /// The program would start (every DT_NEEDED entry found).
    pub starts: bool,
    /// Requests that could not be followed (a dlopen from a caller that is not loaded):
    /// the answer leaves them out, so it is not the one asked for.
    pub not_followed: Vec<String>,
}

impl Explained {
    /// What an incomplete explanation found, in one line for the end of the output (a
    /// finding: exit status 2).
    pub fn finding(&self, program: &std::ffi::OsStr) -> String {
        let program = model::printable_bytes(program.as_bytes());
        if self.starts {
            format!("{program} would not find every library (see `not found` above)")
        } else {
            format!("{program} would not start (see above)")
        }
    }

    /// Why the request itself was wrong, when a `--dlopen` named a caller nothing loaded:
    /// a failure (exit status 1), said after the explanation.
    pub fn request_error(&self) -> Option<String> {
        let first = self.not_followed.first()?;
        Some(format!(
            "{} not followed ({}): --dlopen CALLER:NAME names its caller by a loaded library's path, soname or file name",
            match self.not_followed.len() {
                1 => "a --dlopen was".to_string(),
                n => format!("{n} --dlopen requests were"),
            },
            printable(first)
        ))
    }
}

/// `X.Y` of a supported release.
fn release() -> impl TypedValueParser<Value = Release> {
    PossibleValuesParser::new(supported().iter().map(|r| r.version()))
        .map(|text| Release::parse(&text).expect("a possible value is a supported release"))
}

/// A flavour by name.
fn flavour() -> impl TypedValueParser<Value = Flavour> {
    PossibleValuesParser::new(
        Flavour::ALL
            .into_iter()
            .chain(Flavour::VARIANTS)
            .map(Flavour::name),
    )
    .map(|text| Flavour::parse(&text).expect("a possible value is a flavour"))
}

/// `x86_64` or `aarch64`.
fn target() -> impl TypedValueParser<Value = Target> {
    PossibleValuesParser::new(Target::ALL.map(Target::name))
        .map(|text| Target::parse(&text).expect("a possible value is a target"))
}

/// How many wrapper scripts are followed, one starting the next, before explain gives up.
const WRAPPERS: usize = 8;

/// A loader started as a command by a wrapper script, with its options.
#[derive(Debug, Default)]
struct LoaderCommand {
    path: Bytes,
    /// The wrapper that starts it.
    from: String,
    library_path: Option<Bytes>,
    fallback_path: Option<Bytes>,
    preload: Option<Bytes>,
    audit: Vec<Bytes>,
    inhibit_cache: bool,
}

/// The program as explain ends up with it: after every wrapper, with the environment those
/// wrappers leave.
struct Reached {
    program: Bytes,
    cwd: Bytes,
    read: Program,
    command: Option<LoaderCommand>,
    notes: Vec<String>,
}

impl Args {
    /// The working directory the program is started from: --cwd, else `/` inside --root, or
    /// this process's own.
    fn cwd(&self) -> Result<Bytes> {
        if let Some(cwd) = &self.cwd {
            return Ok(Bytes::from(cwd.as_os_str()));
        }
        if self.root.is_some() {
            return Ok("/".into());
        }
        let here = std::env::current_dir().context("cannot read the working directory")?;
        Ok(Bytes::from(here.into_os_string()))
    }

    /// The explanation of the program, with the loader's variables taken from this
    /// process's environment (unless `--ignore-env`), or why there is none (it cannot be
    /// opened, it is not an x86_64 or aarch64 ELF program or a wrapper of one).
    pub fn explain(&self) -> Result<Explained> {
        self.explain_with(Environment::of_process())
    }

    /// [`Args::explain`] with `env` as the environment the program would be started from.
    pub fn explain_with(&self, env: Environment) -> Result<Explained> {
        let root_dir = self.root.clone().unwrap_or_else(|| PathBuf::from("/"));
        let root = Bytes::from(root_dir.as_os_str()).to_string();
        // The root first: a path in it cannot be found when it is no directory (a symlink
        // loop, a file), and the system's reason says why.
        match std::fs::metadata(&root_dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => bail!("{root} is not a directory"),
            Err(err) => bail!("cannot use {root} as the root: {err}"),
        }
        let mut env = if self.ignore_env {
            let mut empty = Environment::default();
            empty
                .notes
                .push("this environment is not read (--ignore-env)".into());
            empty
        } else {
            env
        };
        for (option, name, value) in [
            ("--library-path", "LD_LIBRARY_PATH", &self.library_path),
            ("--fallback-path", "LD_FALLBACK_PATH", &self.fallback_path),
            ("--preload", "LD_PRELOAD", &self.preload),
        ] {
            if let Some(value) = value {
                env.set(name, Bytes::from(value.as_os_str()), option);
            }
        }
        let cwd = self.cwd()?;
        let reached = self.reach(&root_dir, &root, &mut env, cwd)?;
        let Reached {
            program,
            cwd,
            mut read,
            command,
            notes: wrapper_notes,
        } = reached;
        let program_shown = program.to_string();
        let target = match (self.target, read.target()) {
            (Some(asked), Some(built)) if asked != built => {
                bail!("{program_shown} is a {built} program, not {asked}")
            }
            (Some(asked), _) => asked,
            (None, Some(built)) => built,
            (None, None) => {
                bail!("{program_shown} is not an x86_64 or aarch64 ELF program in {root}")
            }
        };
        let (running, via_loader) = self.running_loader(&read, command.as_ref(), &mut env, target);
        if let Some(running) = &running {
            read = read.run_by(&running.path, &cwd);
        }
        let judged = judge(&read, target);
        let set_id = read.set_id();
        let (release, release_note) = self.release(&read);
        let mut dlopens: Vec<Dlopen> = self
            .dlopen
            .iter()
            .map(|d| Dlopen::parse(d.as_bytes()))
            .collect();
        dlopens.extend(self.dlmopen.iter().map(|name| Dlopen {
            name: Bytes::from(name.as_os_str()),
            from: None,
            new_namespace: true,
        }));
        // What the loader file is, unless another is asked for. No loader to judge: the
        // walk refuses such a program and says why, so this flavour is never modelled.
        let flavour = match (self.unpatched, self.flavour, &judged) {
            (true, _, _) => Flavour::Unpatched,
            (false, Some(asked), _) => asked,
            (false, None, Some(judged)) => judged.flavour(),
            (false, None, None) => Flavour::Unpatched,
        };
        let command_ref = command.as_ref();
        let (library_path, fallback_path, preload) = lists(&env, command_ref);
        let config = Config {
            root: root_dir,
            program: program.clone(),
            cwd,
            release,
            target,
            flavour,
            library_path,
            fallback_path,
            preload,
            dlopens,
            audit: command_ref.map(|c| c.audit.clone()).unwrap_or_default(),
            inhibit_cache: self.inhibit_cache || command_ref.is_some_and(|c| c.inhibit_cache),
            secure: self.secure,
            trace: self.ldd,
            via_loader,
            loader: running,
            loader_series: judged,
            cpu: Cpu::detect(target),
        };
        let mut explanation = loader_model::explain_program(&config, read)
            .with_context(|| format!("cannot explain {program_shown}"))?;
        explanation.settings = settings(&env, command_ref);
        let mut notes = env.notes.clone();
        if set_id && !self.secure {
            notes.push(format!(
                "{program_shown} is set-user-ID or set-group-ID: started by another user than its owner, it runs in secure mode, which --secure models"
            ));
        }
        notes.extend(wrapper_notes);
        notes.extend(explanation.notes);
        notes.extend(release_note);
        explanation.notes = notes;
        let text = if self.json {
            let mut json = serde_json::to_string_pretty(&explanation)
                .context("cannot write the JSON explanation")?;
            json.push('\n');
            json
        } else {
            loader_model::render::text(&explanation)
        };
        let missing = explanation.loads.iter().any(|l| {
            matches!(
                l.outcome,
                loader_model::RequestOutcome::NotFound
                    | loader_model::RequestOutcome::Failed { .. }
                    | loader_model::RequestOutcome::StopsAt { .. }
            )
        });
        Ok(Explained {
            text,
            complete: !missing && explanation.starts,
            starts: explanation.starts,
            not_followed: explanation.not_followed,
        })
    }

    /// The loader that runs the program when it is not the file its interpreter names, and
    /// whether it is started as a command (`LOADER PROGRAM`): `--loader`, the loader a
    /// wrapper starts, or the one nix-ld's shim hands the program to (`env` then gets what
    /// the shim makes of `NIX_LD_LIBRARY_PATH`).
    fn running_loader(
        &self,
        read: &Program,
        command: Option<&LoaderCommand>,
        env: &mut Environment,
        target: Target,
    ) -> (Option<RunningLoader>, bool) {
        let nix_ld = read.loader_kind() == Some(LoaderKind::NixLd);
        match (&self.loader, command) {
            (Some(path), _) => (
                Some(RunningLoader {
                    path: Bytes::from(path.as_os_str()),
                    source: "--loader".into(),
                }),
                !nix_ld,
            ),
            (None, Some(command)) => (
                Some(RunningLoader {
                    path: command.path.clone(),
                    source: command.from.clone(),
                }),
                true,
            ),
            (None, None) if nix_ld => {
                let (path, source) = environment::nix_ld(env, target);
                (Some(RunningLoader { path, source }), false)
            }
            (None, None) => (None, false),
        }
    }

    /// The release modelled: `--release`, else the loader's own when supported, else the
    /// newest, said in a note.
    fn release(&self, read: &Program) -> (GlibcVersion, Option<String>) {
        match (&self.release, read.release()) {
            (Some(r), _) => (GlibcVersion::from(*r), None),
            (None, Some(found)) if found.supported().is_some() => (found, None),
            (None, found) => {
                let newest = GlibcVersion::from(Release::newest());
                let why = match found {
                    Some(found) => format!("its loader is glibc {found}, not a supported release"),
                    None => "its loader says no release".to_string(),
                };
                (newest, Some(format!("modelled as glibc {newest}: {why}")))
            }
        }
    }

    /// The program, read: the one named, or, through every wrapper script, the one they
    /// start; `env` is left as they leave it.
    fn reach(
        &self,
        root_dir: &std::path::Path,
        root: &str,
        env: &mut Environment,
        cwd: Bytes,
    ) -> Result<Reached> {
        let mut program = Bytes::from(self.program.as_os_str());
        let mut cwd = cwd;
        let mut notes = Vec::new();
        let mut command = None;
        for _ in 0..=WRAPPERS {
            let read = self.read(root_dir, root, &program, &cwd)?;
            let Some(script) = read.script() else {
                return Ok(Reached {
                    program,
                    cwd,
                    read,
                    command,
                    notes,
                });
            };
            if command.is_some() {
                bail!(
                    "{program} is a script, started by a loader: a loader runs ELF programs only"
                );
            }
            let followed = wrapper::follow(script, &program, env, &cwd).map_err(|why| {
                anyhow::anyhow!(
                    "{program} is a script explain cannot follow as a wrapper (nixpkgs' makeWrapper, or `exec` of a program): {}",
                    why.0
                )
            })?;
            for line in &followed.not_followed {
                notes.push(format!(
                    "the wrapper {program} runs {line}, which explain does not follow: what it changes is not known"
                ));
            }
            let (target, rest) = followed
                .exec
                .split_first()
                .expect("a followed wrapper execs a program");
            let next = self
                .read(root_dir, root, target, &followed.cwd)
                .with_context(|| format!("{program} is a wrapper script that starts {target}"))?;
            let exported = if followed.changed.is_empty() {
                String::new()
            } else {
                format!("it sets {}, and ", followed.changed.join(", "))
            };
            if next.script().is_none()
                && next.interpreter().is_none()
                && next.kind_as_loader() == Some(LoaderKind::Glibc)
            {
                let (parsed, started) = loader_command(target, rest, &program)?;
                notes.push(format!(
                    "{program} is a wrapper script: {exported}it starts the loader {target} with the program {started}"
                ));
                command = Some(parsed);
                program = started;
            } else {
                notes.push(format!(
                    "{program} is a wrapper script: {exported}it starts {target}"
                ));
                program = target.clone();
            }
            cwd = followed.cwd;
        }
        bail!(
            "{} starts a wrapper that starts a wrapper, {WRAPPERS} deep: explain follows no further",
            Bytes::from(self.program.as_os_str())
        )
    }

    /// `program` read in the tree, from `cwd`; the error names where it was looked for.
    fn read(
        &self,
        root_dir: &std::path::Path,
        root: &str,
        program: &Bytes,
        cwd: &Bytes,
    ) -> Result<Program> {
        // Where a relative program was looked for, said with the error: the working
        // directory, or --cwd inside --root.
        let looked_in = if program.starts_with(b"/") {
            format!("in {root}")
        } else if self.root.is_some() {
            format!("in {root} (from {cwd} inside it)")
        } else {
            format!("(from the working directory {cwd})")
        };
        Program::read(root_dir, program, cwd).map_err(|err| match err {
            ReadError::Open(why) => anyhow::anyhow!("cannot open {program} {looked_in}: {why}"),
            // A file that cannot be read is said as such, with the system's reason, before
            // its content is judged: "not an ELF program" would blame bytes nobody looked at.
            ReadError::Read(err) => anyhow::anyhow!("cannot read {program} {looked_in}: {err}"),
        })
    }
}

/// The lists the loader gets: LD_LIBRARY_PATH, LD_FALLBACK_PATH and LD_PRELOAD from `env`,
/// each replaced by the option of a loader started as a command (`--preload` adds to
/// LD_PRELOAD: the loader reads both).
fn lists(
    env: &Environment,
    command: Option<&LoaderCommand>,
) -> (Option<PathList>, Option<PathList>, Option<PathList>) {
    let variable = |name: &str| {
        env.exported(name).map(|var| PathList {
            value: var.value.clone(),
            source: name.into(),
        })
    };
    let option = |value: Option<&Bytes>, name: &str| {
        value.map(|value| PathList {
            value: value.clone(),
            source: name.into(),
        })
    };
    let library_path = command
        .and_then(|c| option(c.library_path.as_ref(), "--library-path"))
        .or_else(|| variable("LD_LIBRARY_PATH"));
    let fallback_path = command
        .and_then(|c| option(c.fallback_path.as_ref(), "--fallback-path"))
        .or_else(|| variable("LD_FALLBACK_PATH"));
    let preload = match (
        variable("LD_PRELOAD"),
        command.and_then(|c| c.preload.as_ref()),
    ) {
        (Some(variable), Some(option)) => Some(PathList {
            value: variable.value.join(&[b":", option]),
            source: "LD_PRELOAD and --preload".into(),
        }),
        (Some(variable), None) => Some(variable),
        (None, option_value) => option(option_value, "--preload"),
    };
    (library_path, fallback_path, preload)
}

/// The header's variables: those of `env`, then the options of a loader a wrapper starts.
fn settings(env: &Environment, command: Option<&LoaderCommand>) -> Vec<Setting> {
    let mut settings = env.settings(&LOADER_VARIABLES);
    if let Some(command) = command {
        for (name, value) in [
            ("--library-path", &command.library_path),
            ("--fallback-path", &command.fallback_path),
            ("--preload", &command.preload),
        ] {
            if let Some(value) = value {
                settings.push(Setting {
                    name: name.into(),
                    value: value.clone(),
                    from: command.from.clone(),
                });
            }
        }
    }
    settings
}

/// What the loader that would run `read` is (a program of `target`), asked of it where it
/// can run (`ld.so --help`), else read from its file with a caveat said; `None` without a
/// loader file to judge.
pub fn judge(read: &Program, target: Target) -> Option<loader_model::SeriesInFile> {
    let strings = read.series()?;
    if read.interpreter().is_none() {
        // A static program: its own libc, which has no --help to ask.
        return Some(loader::from_strings(
            strings,
            "a static program has no loader to ask",
        ));
    }
    let Some(host) = read.loader_on_host() else {
        return Some(strings);
    };
    if read.loader_kind() != Some(LoaderKind::Glibc) {
        return Some(strings);
    }
    Some(match loader::ask(host, target) {
        Ok(asked) => asked,
        Err(why) => loader::from_strings(strings, &why),
    })
}

/// The loader options and the program of `LOADER [OPTION]... PROGRAM`, as a wrapper (`from`)
/// starts it (`elf/rtld.c`'s option loop, with the series' `--fallback-path`).
fn loader_command(loader: &Bytes, words: &[Bytes], from: &Bytes) -> Result<(LoaderCommand, Bytes)> {
    let mut command = LoaderCommand {
        path: loader.clone(),
        from: format!("the wrapper {from}"),
        ..LoaderCommand::default()
    };
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let mut value = |option: &str| {
            words.next().cloned().with_context(|| {
                format!("the wrapper {from} gives {loader} {option} without a value")
            })
        };
        match word.as_bytes() {
            b"--library-path" => command.library_path = Some(value("--library-path")?),
            b"--fallback-path" => command.fallback_path = Some(value("--fallback-path")?),
            b"--preload" => command.preload = Some(value("--preload")?),
            b"--audit" => command
                .audit
                .extend(value("--audit")?.split(|&b| b == b':').map(Bytes::from)),
            b"--argv0" => {
                value("--argv0")?;
            }
            b"--inhibit-cache" => command.inhibit_cache = true,
            option if option.starts_with(b"--") => bail!(
                "the wrapper {from} starts {loader} with {word}, an option explain does not follow"
            ),
            _ => return Ok((command, word.clone())),
        }
    }
    bail!("the wrapper {from} starts the loader {loader} without a program")
}
