//! `cargo xtask explain PROGRAM`: which file a program would map for every library, with
//! `LD_FALLBACK_PATH` (or without the patch), without running it or the patched loader: the
//! search model of `loader_harness::search`, printed for a reader or as JSON.

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use loader_model::fs::{OpenError, Tree};
use loader_model::{Config, Cpu, Dlopen, PathList};
use model::Target;

use crate::cli::{self};
use crate::util::exit::NeedsAttention;
use model::{printable, Release, SUPPORTED};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The program, as it would be started (a path inside --root).
    pub program: String,
    /// The tree taken as `/`: a scenario root, a container's or a board's filesystem.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// LD_FALLBACK_PATH: the fallback directories.
    #[arg(long, value_name = "LIST")]
    pub fallback_path: Option<String>,
    /// LD_LIBRARY_PATH.
    #[arg(long, value_name = "LIST")]
    pub library_path: Option<String>,
    /// A dlopen the program makes: `NAME` (from the program) or `CALLER:NAME` (from a
    /// loaded library, named by path, soname or file name). Repeat, in the program's order.
    #[arg(long, value_name = "[CALLER:]NAME")]
    pub dlopen: Vec<String>,
    /// A dlmopen (LM_ID_NEWLM) from the program, into a namespace of its own.
    #[arg(long, value_name = "NAME")]
    pub dlmopen: Vec<String>,
    /// glibc release of the modelled loader [default: the release of the program's own
    /// loader when it is a supported one, else the newest].
    #[arg(long, value_name = "X.Y", value_parser = cli::release())]
    pub release: Option<Release>,
    /// Target [default: the program's architecture].
    #[arg(long, value_parser = cli::target())]
    pub target: Option<Target>,
    /// Model the release as it is, without the LD_FALLBACK_PATH series.
    #[arg(long)]
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
    /// The working directory inside --root (for relative paths and empty LD_LIBRARY_PATH
    /// entries).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub cwd: String,
    /// Print JSON instead of the explanation.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    pub(crate) fn run(self) -> Result<()> {
        let started = Instant::now();
        let program = printable(&self.program);
        let opened = Tree::new(&self.root)
            .open(&self.program, &self.cwd)
            .map_err(|why| {
                anyhow::anyhow!(
                    "cannot open {program} in {}: {}",
                    printable(&self.root.display().to_string()),
                    match why {
                        OpenError::Absent => "no such file",
                        OpenError::NotDirectory => "a path component is not a directory",
                        OpenError::Loop => "too many symlinks",
                        OpenError::Denied => "permission denied",
                    }
                )
            })?;
        // A file that cannot be read is said as such, with the system's reason, before its
        // content is judged: "not an ELF program" would blame bytes nobody looked at.
        std::fs::File::open(&opened.host)
            .and_then(|mut file| file.read(&mut [0u8; 1]))
            .with_context(|| {
                format!(
                    "cannot read {program} in {}",
                    printable(&self.root.display().to_string())
                )
            })?;
        let detected = loader_model::release_in(&self.root, &self.program, &self.cwd);
        let (release, release_note) = match (&self.release, detected) {
            (Some(r), _) => (parse(r), None),
            (None, Some(found)) if SUPPORTED.iter().any(|r| parse(r) == found) => (found, None),
            (None, found) => {
                let newest = parse(&Release::newest());
                let why = match found {
                    Some(found) => format!("its loader is glibc {found}, not a supported release"),
                    None => "its loader says no release".to_string(),
                };
                (newest, Some(format!("modelled as glibc {newest}: {why}")))
            }
        };
        let target = match (
            self.target,
            loader_model::target_of(&self.root, &self.program, &self.cwd),
        ) {
            (Some(asked), Some(built)) if asked != built => {
                bail!("{program} is a {built} program, not {asked}")
            }
            (Some(asked), _) => asked,
            (None, Some(built)) => built,
            (None, None) => bail!(
                "{program} is not an x86_64 or aarch64 ELF program in {}",
                printable(&self.root.display().to_string())
            ),
        };
        let mut dlopens: Vec<Dlopen> = self.dlopen.iter().map(|d| Dlopen::parse(d)).collect();
        dlopens.extend(self.dlmopen.iter().map(|name| Dlopen {
            name: name.clone(),
            from: None,
            new_namespace: true,
        }));
        let config = Config {
            root: self.root.clone(),
            program: self.program.clone(),
            cwd: self.cwd.clone(),
            release,
            target,
            patched: !self.unpatched,
            library_path: self.library_path.clone().map(|value| PathList {
                value,
                source: "LD_LIBRARY_PATH".into(),
            }),
            fallback_path: self.fallback_path.clone().map(|value| PathList {
                value,
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
        let mut explanation =
            loader_model::explain(&config).with_context(|| format!("cannot explain {program}"))?;
        explanation.notes.extend(release_note);
        let text = if self.json {
            let mut json = serde_json::to_string_pretty(&explanation)
                .context("cannot write the JSON explanation")?;
            json.push('\n');
            json
        } else {
            loader_model::render::text(&explanation)
        };
        // A reader that stops early (`| head`) is no error (see `util::output`).
        out!("{text}");
        if !self.json {
            diagln!(
                "explain: {:.0} ms",
                started.elapsed().as_secs_f64() * 1000.0
            );
        }
        let missing = explanation.loads.iter().any(|l| {
            matches!(
                l.outcome,
                loader_model::Outcome::NotFound | loader_model::Outcome::Failed { .. }
            )
        });
        // A request that names a caller no object is: the answer leaves it out, so it is not
        // the answer that was asked for.
        if let Some(first) = explanation.not_followed.first() {
            bail!(
                "{} not followed ({}): --dlopen CALLER:NAME names its caller by a loaded library's path, soname or file name",
                match explanation.not_followed.len() {
                    1 => "a --dlopen was".to_string(),
                    n => format!("{n} --dlopen requests were"),
                },
                printable(first)
            );
        }
        if missing || !explanation.starts {
            return Err(NeedsAttention(format!(
                "{program} would not find every library (see `not found` above)"
            ))
            .into());
        }
        Ok(())
    }
}

/// The model's release from the shared vocabulary's.
fn parse(release: &Release) -> loader_model::Release {
    loader_model::Release::parse(release.version()).expect("supported releases are X.Y")
}
