//! `ld-fallback-explain`: which file a program would map for every library, under the
//! patched loader with `LD_FALLBACK_PATH` (or the release as it is), without running the
//! program or any loader. It reads the program's ELF files and the tree they live in, and
//! walks the search model of `loader_model`, which is proven against the real loaders
//! (docs/explain.md).
//!
//! The crate is the stand-alone form users install (`cargo install --path explain`);
//! `cargo xtask explain` runs the same [`Args`].

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use loader_model::{Bytes, Config, Cpu, Dlopen, GlibcVersion, PathList, Program, ReadError};
use model::{printable, Flavour, Release, Target, SUPPORTED};

/// The command line; `Default` is the command with nothing given (an empty program).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// The program, as it would be started: an absolute path, or one relative to the
    /// working directory (with --root: relative to --cwd inside the root).
    pub program: OsString,
    /// The tree taken as `/`: a scenario root, a container's or a board's filesystem
    /// [default: /, this machine].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// LD_FALLBACK_PATH: the fallback directories.
    #[arg(long, value_name = "LIST")]
    pub fallback_path: Option<OsString>,
    /// LD_LIBRARY_PATH.
    #[arg(long, value_name = "LIST")]
    pub library_path: Option<OsString>,
    /// A dlopen the program makes: `NAME` (from the program) or `CALLER:NAME` (from a
    /// loaded library, named by path, soname or file name). Repeat, in the program's order.
    #[arg(long, value_name = "[CALLER:]NAME")]
    pub dlopen: Vec<OsString>,
    /// A dlmopen (LM_ID_NEWLM) from the program, into a namespace of its own.
    #[arg(long, value_name = "NAME")]
    pub dlmopen: Vec<OsString>,
    /// glibc release of the modelled loader [default: the release of the program's own
    /// loader when it is a supported one, else the newest].
    #[arg(long, value_name = "X.Y", value_parser = release())]
    pub release: Option<Release>,
    /// Target [default: the program's architecture].
    #[arg(long, value_parser = target())]
    pub target: Option<Target>,
    /// Model this loader instead of the one the program names (PT_INTERP): `patched` (the
    /// series: what a patched loader would do), `unpatched` (the release as it is) or
    /// `fallback-first` (the variant that searches the fallback list right after DT_RUNPATH,
    /// before ld.so.cache and the default directories, as NixOS/nixpkgs#248547 proposed)
    /// [default: what the program's loader file is: patched when it carries LD_FALLBACK_PATH
    /// and --fallback-path]
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
    /// Requests that could not be followed (a dlopen from a caller that is not loaded):
    /// the answer leaves them out, so it is not the one asked for.
    pub not_followed: Vec<String>,
}

impl Explained {
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
    PossibleValuesParser::new(SUPPORTED.iter().map(|r| r.version()))
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

    /// The explanation of the program, or why there is none (it cannot be opened, or it is
    /// not an x86_64 or aarch64 ELF program).
    pub fn explain(&self) -> Result<Explained> {
        // Values from outside are quoted with their control characters escaped.
        let program_bytes = Bytes::from(self.program.as_os_str());
        let program = program_bytes.to_string();
        let root_dir = self.root.clone().unwrap_or_else(|| PathBuf::from("/"));
        let root = Bytes::from(root_dir.as_os_str()).to_string();
        let cwd = self.cwd()?;
        // Where a relative program was looked for, said with the error: the working
        // directory, or --cwd inside --root.
        let looked_in = if program_bytes.starts_with(b"/") {
            format!("in {root}")
        } else if self.root.is_some() {
            format!("in {root} (from {cwd} inside it)")
        } else {
            format!("(from the working directory {cwd})")
        };
        // The root first: a path in it cannot be found when it is no directory (a symlink
        // loop, a file), and the system's reason says why.
        match std::fs::metadata(&root_dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => bail!("{root} is not a directory"),
            Err(err) => bail!("cannot use {root} as the root: {err}"),
        }
        // Read once: the release, the target and the walk all look at this reading.
        let read = Program::read(&root_dir, &program_bytes, &cwd).map_err(|err| match err {
            ReadError::Open(why) => anyhow::anyhow!("cannot open {program} {looked_in}: {why}"),
            // A file that cannot be read is said as such, with the system's reason, before
            // its content is judged: "not an ELF program" would blame bytes nobody looked at.
            ReadError::Read(err) => anyhow::anyhow!("cannot read {program} {looked_in}: {err}"),
        })?;
        let detected = read.release();
        let (release, release_note) = match (&self.release, detected) {
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
        };
        let target = match (self.target, read.target()) {
            (Some(asked), Some(built)) if asked != built => {
                bail!("{program} is a {built} program, not {asked}")
            }
            (Some(asked), _) => asked,
            (None, Some(built)) => built,
            (None, None) => bail!("{program} is not an x86_64 or aarch64 ELF program in {root}"),
        };
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
        // The loader the program names, as its file is, unless another is asked for.
        let flavour = match (self.unpatched, self.flavour, read.series()) {
            (true, _, _) => Flavour::Unpatched,
            (false, Some(asked), _) => asked,
            (false, None, Some(series)) => series.flavour(),
            // No loader file to judge: the walk refuses such a program and says why (the
            // loader is not in the root), so this flavour is never modelled.
            (false, None, None) => Flavour::Unpatched,
        };
        let config = Config {
            root: root_dir,
            program: program_bytes.clone(),
            cwd,
            release,
            target,
            flavour,
            library_path: self.library_path.clone().map(|value| PathList {
                value: value.into(),
                source: "LD_LIBRARY_PATH".into(),
            }),
            fallback_path: self.fallback_path.clone().map(|value| PathList {
                value: value.into(),
                source: "LD_FALLBACK_PATH".into(),
            }),
            dlopens,
            audit: Vec::new(),
            inhibit_cache: self.inhibit_cache,
            secure: self.secure,
            trace: self.ldd,
            via_loader: false,
            cpu: Cpu::detect(target),
        };
        let mut explanation = loader_model::explain_program(&config, read)
            .with_context(|| format!("cannot explain {program}"))?;
        explanation.notes.extend(release_note);
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
                loader_model::Outcome::NotFound | loader_model::Outcome::Failed { .. }
            )
        });
        Ok(Explained {
            text,
            complete: !missing && explanation.starts,
            not_followed: explanation.not_followed,
        })
    }
}
