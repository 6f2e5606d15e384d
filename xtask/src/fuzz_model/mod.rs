//! `cargo xtask fuzz-model`: the loader model (`ld-fallback-explain`'s) against the built
//! loader on worlds nobody wrote. Each trial generates a world from the seed and the trial's
//! number ([`world::world`], a proptest strategy): a program, a DAG of libraries, their
//! search lists, copies of each in several directories, LD_LIBRARY_PATH, LD_FALLBACK_PATH,
//! LD_PRELOAD, an ld.so.cache. It is made into a hermetic root (the loader under test, the
//! world's files, and the sysroot's ldconfig where the world has a cache), the program is run
//! there with `LD_DEBUG=libs,files` as the harness runs it, and the trace is held against the
//! model's answer to the same question (`loader_tests::differential`: every search, every file
//! tried, every file mapped, every "not found"). A difference, a crash, a hang or an odd exit
//! status of the loader is a finding: proptest shrinks the world, the command that replays the
//! trial and the shrunk world are printed, and the command ends with status 2.

mod objects;
mod world;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use loader_tests::differential::{self, LoaderUnderTest, Mode};
use loader_tests::host::{self, tools};
use loader_tests::layout::Layout;
use loader_tests::probe::Invocation;
use model::{Flavour, Release, Sysroot, Target};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};

use crate::cli::{Env, OneFlavour, OneRelease, OneTarget};
use crate::sysroot::Builder;
use crate::util::child;
use crate::util::exit::NeedsAttention;
use objects::Templates;
use world::{Places, World, CWD, PROGRAM};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub release: OneRelease,
    #[command(flatten)]
    pub target: OneTarget,
    #[command(flatten)]
    pub flavour: OneFlavour,
    /// The flavour the model is asked about [default: the loader's]: another one must
    /// disagree with the loader (the fuzzer's own check that it can fail).
    #[arg(long, value_parser = crate::cli::flavour())]
    pub model_flavour: Option<Flavour>,
    /// How many worlds to try.
    #[arg(long, default_value_t = 100)]
    pub trials: u64,
    /// The seed every world derives from (with its trial's number) [default: from the clock,
    /// printed].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run only this trial of the seed (as a reproducer names it).
    #[arg(long, conflicts_with = "trials")]
    pub trial: Option<u64>,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let release = self.release.release;
        let target = self.target.target;
        let flavour = self.flavour.flavour;
        let Some(sysroot) = cached_sysroot(env, release, target, flavour)? else {
            bail!(
                "no cached glibc {release} {target} {flavour} sysroot (fuzz-model never builds \
                 glibc): build it with `cargo xtask sysroot --release {release} --target \
                 {target} --flavour {flavour}`, or name one in ${}",
                model::sysroot_env_var(target, flavour)
            );
        };
        let seed = self.seed.unwrap_or_else(clock_seed);
        let campaign = Campaign {
            release,
            target,
            flavour,
            model_flavour: self.model_flavour.unwrap_or(flavour),
            seed,
        };
        let trials = match self.trial {
            Some(trial) => trial..trial + 1,
            None => 0..self.trials,
        };
        let log_path = env.cache.join("logs").join(format!(
            "fuzz-model-{release}-{target}-{flavour}-{}-{seed}.log",
            campaign.model_flavour
        ));
        diagln!("fuzz-model: the loader of {}", sysroot.path.display());
        let fuzzer = Fuzzer::new(&sysroot, &env.cache)?;
        let summary = campaign.run(&fuzzer, trials, &log_path)?;
        match summary.finding {
            None => Ok(()),
            Some(finding) => Err(anyhow!(NeedsAttention(finding.report(&campaign, &fuzzer)))),
        }
    }
}

/// The sysroot of a flavour from `$LD_FALLBACK_SYSROOT...` or the build cache, never built.
pub(crate) fn cached_sysroot(
    env: &Env,
    release: Release,
    target: Target,
    flavour: Flavour,
) -> Result<Option<Sysroot>> {
    let var = model::sysroot_env_var(target, flavour);
    if let Some(path) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
        let sysroot = Sysroot::at(&PathBuf::from(path), target, flavour)
            .with_context(|| format!("${var} does not name a usable sysroot"))?;
        if sysroot.release == release {
            return Ok(Some(sysroot));
        }
    }
    Builder::new(env).cached(release, target, flavour)
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a campaign asks: the loader (release, target, flavour), the model's flavour, the seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Campaign {
    pub release: Release,
    pub target: Target,
    pub flavour: Flavour,
    pub model_flavour: Flavour,
    pub seed: u64,
}

/// How a campaign ended.
#[derive(Debug)]
pub(crate) struct Summary {
    pub trials: u64,
    pub elapsed: Duration,
    /// Over the trials that agreed.
    pub counts: Counts,
    pub finding: Option<Finding>,
}

/// What the agreeing trials compared.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    /// Trials in secure mode (compared by the probe's records).
    pub secure: u64,
    /// Trials whose LD_LIBRARY_PATH or LD_FALLBACK_PATH holds odd entries.
    pub noisy: u64,
    pub searches: usize,
    pub dlopens: usize,
    pub found: usize,
}

/// A trial whose world the loader and the model disagree on (or that the loader does not
/// survive), shrunk.
#[derive(Debug)]
pub(crate) struct Finding {
    pub trial: u64,
    pub kind: Kind,
    pub what: String,
    pub world: World,
    pub shrink_steps: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Disagreement,
    Crash,
    Hang,
    ExitStatus,
}

impl Finding {
    fn report(&self, c: &Campaign, fuzzer: &Fuzzer) -> String {
        let kind = match self.kind {
            Kind::Disagreement => "the model and the loader disagree",
            Kind::Crash => "the loader crashed",
            Kind::Hang => "the loader did not end in time",
            Kind::ExitStatus => "the loader ended with an unexpected status",
        };
        format!(
            "trial {trial} of seed {seed}: {kind} (shrunk in {steps} steps):\n{what}\n\
             the world:\n{world}reproduce with: cargo xtask fuzz-model --release {release} \
             --target {target} --flavour {flavour} --model-flavour {model} --seed {seed} \
             --trial {trial}",
            trial = self.trial,
            seed = c.seed,
            steps = self.shrink_steps,
            what = self.what.trim_end(),
            world = self.world.describe(&fuzzer.places),
            release = c.release,
            target = c.target,
            flavour = c.flavour,
            model = c.model_flavour,
        )
    }
}

/// The most worlds one shrink tries (each is a run of the loader).
const SHRINK_BUDGET: usize = 400;

impl Campaign {
    /// Runs `trials`, stopping at the first finding (shrunk). Progress goes to stderr, a line
    /// per trial to the log at `log_path`.
    pub(crate) fn run(
        &self,
        fuzzer: &Fuzzer,
        trials: std::ops::Range<u64>,
        log_path: &Path,
    ) -> Result<Summary> {
        if let Some(dir) = log_path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let mut log = std::fs::File::create(log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let total = trials.end - trials.start;
        diagln!(
            "fuzz-model: glibc {} {} {} loader, {} model, seed {}, {total} trials (log: {})",
            self.release,
            self.target,
            self.flavour,
            self.model_flavour,
            self.seed,
            log_path.display()
        );
        let started = Instant::now();
        let mut last_progress = Instant::now();
        let mut done = 0;
        let mut counts = Counts::default();
        let strategy = world::world();
        for trial in trials {
            let mut runner = runner(self.seed, trial);
            let mut tree = strategy
                .new_tree(&mut runner)
                .map_err(|why| anyhow!("cannot generate trial {trial}'s world: {why}"))?;
            let judged = fuzzer.judge(&tree.current(), self.model_flavour);
            if tree.current().secure {
                counts.secure += 1;
            }
            if tree.current().noisy() {
                counts.noisy += 1;
            }
            let verdict = judged.with_context(|| format!("trial {trial}"))?;
            done += 1;
            match verdict {
                WorldVerdict::Agrees {
                    searches,
                    dlopens,
                    found,
                } => {
                    counts.searches += searches;
                    counts.dlopens += dlopens;
                    counts.found += found;
                    writeln!(
                        log,
                        "trial {trial}: agree ({searches} searches, {dlopens} by dlopen, {found} found){}",
                        calls_text(&tree.current())
                    )
                    .context("cannot write the log")?;
                }
                WorldVerdict::Finding(kind, what) => {
                    writeln!(log, "trial {trial}: {kind:?}, shrinking:\n{what}")
                        .context("cannot write the log")?;
                    diagln!("fuzz-model: trial {trial}: {kind:?}; shrinking the world");
                    // The trials' time, without the shrink's.
                    let elapsed = started.elapsed();
                    let finding = self.shrink(fuzzer, &mut tree, trial, kind, what, &mut log)?;
                    let summary = Summary {
                        trials: done,
                        elapsed,
                        counts,
                        finding: Some(finding),
                    };
                    self.print_summary(&summary);
                    return Ok(summary);
                }
            }
            if last_progress.elapsed() > Duration::from_secs(10) {
                last_progress = Instant::now();
                let per = started.elapsed() / done as u32;
                let left = per * (total - done) as u32;
                diagln!(
                    "fuzz-model: {done}/{total} trials, {} ms per trial, about {} s left",
                    per.as_millis(),
                    left.as_secs()
                );
            }
        }
        let summary = Summary {
            trials: done,
            elapsed: started.elapsed(),
            counts,
            finding: None,
        };
        self.print_summary(&summary);
        Ok(summary)
    }

    fn print_summary(&self, summary: &Summary) {
        let per = summary.elapsed.as_secs_f64() * 1000.0 / summary.trials.max(1) as f64;
        outln!(
            "fuzz-model: glibc {} {} {} loader against the {} model, seed {}: {} trials in {:.1} s ({per:.1} ms per trial, {} in secure mode, {} with odd list entries; {} searches compared, {} of them by dlopen, {} found, {} not found), {}",
            self.release,
            self.target,
            self.flavour,
            self.model_flavour,
            self.seed,
            summary.trials,
            summary.elapsed.as_secs_f64(),
            summary.counts.secure,
            summary.counts.noisy,
            summary.counts.searches,
            summary.counts.dlopens,
            summary.counts.found,
            summary.counts.searches - summary.counts.found,
            match &summary.finding {
                None => "no disagreement, crash or hang".to_string(),
                Some(f) => format!("a finding in trial {}", f.trial),
            }
        );
    }

    /// proptest's shrink: simpler worlds while the finding stays of the same kind.
    fn shrink(
        &self,
        fuzzer: &Fuzzer,
        tree: &mut impl ValueTree<Value = World>,
        trial: u64,
        kind: Kind,
        what: String,
        log: &mut std::fs::File,
    ) -> Result<Finding> {
        let mut best = Finding {
            trial,
            kind,
            what,
            world: tree.current(),
            shrink_steps: 0,
        };
        let mut tries = 0;
        if !tree.simplify() {
            return Ok(best);
        }
        while tries < SHRINK_BUDGET {
            tries += 1;
            let world = tree.current();
            let still = match fuzzer.judge(&world, self.model_flavour)? {
                WorldVerdict::Finding(k, what) if k == kind => Some(what),
                _ => None,
            };
            match still {
                Some(what) => {
                    best.shrink_steps += 1;
                    best.world = world;
                    best.what = what;
                    if !tree.simplify() {
                        break;
                    }
                }
                None => {
                    if !tree.complicate() {
                        break;
                    }
                }
            }
        }
        writeln!(
            log,
            "shrunk in {} steps ({tries} worlds tried):\n{}",
            best.shrink_steps,
            best.world.describe(&fuzzer.places)
        )
        .context("cannot write the log")?;
        Ok(best)
    }
}

/// The runner of one trial: its random numbers from the seed and the trial's number alone,
/// so that a trial is replayed without the ones before it.
fn runner(seed: u64, trial: u64) -> TestRunner {
    let mut state = seed ^ trial.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    TestRunner::new_with_rng(
        proptest::test_runner::Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// What one world gave.
#[derive(Debug)]
pub(crate) enum WorldVerdict {
    /// Both sides made `searches` searches, `found` of which ended with a file.
    Agrees {
        searches: usize,
        /// Searches made by `dlopen` or `dlmopen`.
        dlopens: usize,
        found: usize,
    },
    Finding(Kind, String),
}

/// Everything the trials of one loader share.
pub(crate) struct Fuzzer {
    sysroot: Sysroot,
    layout: Layout,
    places: Places,
    templates: Templates,
    qemu: Option<PathBuf>,
    /// A set-user-ID root copy of QEMU, for secure worlds (QEMU passes its AT_SECURE on).
    setuid_qemu: Option<PathBuf>,
    /// How long one run of the loader may take.
    limit: Duration,
    scratch: tempfile::TempDir,
    /// The lock on the scratch directory (see [`remove_abandoned`]).
    _lock: std::fs::File,
    roots: std::cell::Cell<usize>,
}

impl Fuzzer {
    pub(crate) fn new(sysroot: &Sysroot, cache: &Path) -> Result<Fuzzer> {
        host::require(&[tools::BWRAP])?;
        let layout = Layout::new(sysroot)?;
        let qemu = match sysroot.target {
            Target::X86_64 => None,
            Target::Aarch64 => {
                host::require(&[tools::QEMU_AARCH64])?;
                host::find_program(tools::QEMU_AARCH64.program)
            }
        };
        let parent = cache.join("roots");
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        for left in remove_abandoned(&parent, std::time::SystemTime::now())? {
            diagln!(
                "fuzz-model: removed {}, the scratch directory of a campaign that did not end",
                left.display()
            );
        }
        // Next to the sysroots, so that the loader is hard-linked rather than copied.
        let scratch = tempfile::Builder::new()
            .prefix(SCRATCH_PREFIX)
            .tempdir_in(&parent)
            .context("cannot create a scratch directory for the worlds")?;
        // Held while the campaign runs; the kernel lets go of it however the campaign ends,
        // so that the next one can tell an abandoned directory from a live one.
        let lock_path = scratch.path().join(SCRATCH_LOCK);
        let lock = std::fs::File::create(&lock_path)
            .with_context(|| format!("cannot create {}", lock_path.display()))?;
        lock.try_lock()
            .with_context(|| format!("cannot lock {}", lock_path.display()))?;
        let templates_dir = scratch.path().join("templates");
        std::fs::create_dir_all(&templates_dir)
            .with_context(|| format!("cannot create {}", templates_dir.display()))?;
        let templates = Templates::compile(sysroot.target, layout.loader(), &templates_dir)
            .and_then(|t| t.with_calls(sysroot, &layout, &templates_dir))
            .context("cannot compile the ELF templates of the worlds")?;
        let setuid_qemu = match &qemu {
            None => None,
            Some(qemu) => {
                use std::os::unix::fs::PermissionsExt;
                let copy = scratch.path().join("qemu-setuid");
                std::fs::copy(qemu, &copy)
                    .with_context(|| format!("cannot copy {}", qemu.display()))?;
                std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755))
                    .with_context(|| format!("cannot make {} set-user-ID", copy.display()))?;
                Some(copy)
            }
        };
        let dst_lib = layout
            .slibdir
            .rsplit('/')
            .next()
            .unwrap_or("lib")
            .to_string();
        let places = Places {
            slibdir: layout.slibdir.clone(),
            libdir: layout.libdir.clone(),
            dst_lib,
            platform: sysroot.target.name().to_string(),
        };
        Ok(Fuzzer {
            sysroot: sysroot.clone(),
            places,
            templates,
            limit: match qemu {
                None => Duration::from_secs(10),
                Some(_) => Duration::from_secs(60),
            },
            qemu,
            setuid_qemu,
            layout,
            scratch,
            _lock: lock,
            roots: std::cell::Cell::new(0),
        })
    }

    /// Makes `world` into a root, runs it, and holds the `model` flavour against the trace.
    /// An error is the fuzzer's failure (a file it could not write), never a finding.
    pub(crate) fn judge(&self, world: &World, model: Flavour) -> Result<WorldVerdict> {
        let n = self.roots.get();
        self.roots.set(n + 1);
        let root = self.scratch.path().join(format!("world-{n}"));
        let verdict = self.judge_in(&root, world, model);
        // Each world's root goes once judged: a campaign makes thousands.
        std::fs::remove_dir_all(&root)
            .with_context(|| format!("cannot remove {}", root.display()))?;
        verdict
    }

    fn judge_in(&self, root: &Path, world: &World, model: Flavour) -> Result<WorldVerdict> {
        self.make_root(root, world)?;
        let mut env = Vec::new();
        if let Some(list) = &world.library_path {
            env.push(("LD_LIBRARY_PATH".to_string(), list.text(&self.places)));
        }
        if let Some(list) = &world.fallback_path {
            env.push(("LD_FALLBACK_PATH".to_string(), list.text(&self.places)));
        }
        if !world.preload.is_empty() {
            let names: Vec<String> = world.preload.iter().map(|&i| world::soname(i)).collect();
            env.push(("LD_PRELOAD".to_string(), names.join(":")));
        }
        if world.listing {
            env.push(("LD_TRACE_LOADED_OBJECTS".to_string(), "1".to_string()));
        }
        let calls = world.calls();
        let mut argv = vec![PROGRAM.to_string()];
        argv.extend(world.probe_words());
        let invocation = Invocation {
            root: root.to_path_buf(),
            // A secure run starts through chroot(1), which changes to the new root's `/`.
            cwd: if world.secure { "/" } else { CWD }.to_string(),
            qemu: self.qemu.clone(),
            argv,
            env,
            secure: world.secure,
            placed: Vec::new(),
        };
        if !world.cached.is_empty() {
            self.ldconfig(root, world)?;
        }
        // Secure mode drops LD_DEBUG: the probe's records are what there is to compare.
        let ran = match world.secure {
            true => self.run_limited(&invocation)?,
            false => self.run_limited(&invocation.with_env("LD_DEBUG", "libs,files"))?,
        };
        let status = match ran.ended {
            Ended::TimedOut => {
                return Ok(WorldVerdict::Finding(
                    Kind::Hang,
                    format!("no end after {} s", self.limit.as_secs()),
                ))
            }
            Ended::Signal(signal) => {
                return Ok(WorldVerdict::Finding(
                    Kind::Crash,
                    format!("killed by signal {signal}:\n{}", tail(&ran.stderr)),
                ))
            }
            Ended::Code(code) => code,
        };
        if ran.stderr.starts_with("bwrap:") || ran.stderr.starts_with("chroot:") {
            bail!("bwrap could not run the world: {}", ran.stderr.trim());
        }
        // 0: the program ran; 127: the loader stopped at a library it did not find; 1: the
        // probe stopped at a call that failed.
        if status != 0 && status != 127 && !(calls && status == 1) {
            return Ok(WorldVerdict::Finding(
                Kind::ExitStatus,
                format!("exit status {status}:\n{}", tail(&ran.stderr)),
            ));
        }
        let loader = LoaderUnderTest {
            path: self.layout.loader(),
            release: self.sysroot.release.into(),
            target: self.sysroot.target,
            flavour: model,
        };
        let checked = if world.secure {
            differential::check_probe_records(&invocation, loader, status, &ran.stdout)
        } else if calls {
            differential::check_probe_trace(&invocation, loader, &ran.stderr)
        } else {
            differential::check_trace(&invocation, loader, &ran.stderr)
        };
        if let Mode::NotApplicable(why) = &checked.mode {
            bail!("the differential check does not apply to the world's run: {why}");
        }
        Ok(match checked.difference {
            // Without a trace, what the run printed is the evidence.
            Some(difference) if world.secure => WorldVerdict::Finding(
                Kind::Disagreement,
                format!(
                    "{difference}\nthe probe's output (exit status {status}):\n{}{}",
                    ran.stdout,
                    tail(&ran.stderr)
                ),
            ),
            Some(difference) => WorldVerdict::Finding(Kind::Disagreement, difference),
            None => WorldVerdict::Agrees {
                searches: checked.observed.len(),
                dlopens: checked.observed.iter().filter(|s| s.dlopen).count(),
                found: checked
                    .observed
                    .iter()
                    .filter(|s| s.ended_with.is_some())
                    .count(),
            },
        })
    }

    /// The root of `world`: the loader under test, the program and every copy of every
    /// library (and ldconfig, where the world has a cache).
    fn make_root(&self, root: &Path, world: &World) -> Result<()> {
        let inside = |path: &str| root.join(path.trim_start_matches('/'));
        for dir in ["/proc", "/dev", "/tmp", CWD, "/fz/bin"] {
            std::fs::create_dir_all(inside(dir))
                .with_context(|| format!("cannot create {dir} in {}", root.display()))?;
        }
        let mut links = vec![self.layout.loader().to_string()];
        if !world.cached.is_empty() {
            links.push("/sbin/ldconfig".into());
        }
        if world.calls() {
            links.push(format!("{}/libc.so.6", self.layout.slibdir));
        }
        if let (true, Some(qemu)) = (world.secure, &self.setuid_qemu) {
            let to = inside(loader_tests::probe::SETUID_QEMU);
            std::fs::hard_link(qemu, &to)
                .with_context(|| format!("cannot place {} in the world", qemu.display()))?;
        }
        for path in links {
            let to = inside(&path);
            std::fs::create_dir_all(to.parent().unwrap_or(root))
                .with_context(|| format!("cannot create the directory of {path}"))?;
            let from = self.sysroot.path.join(path.trim_start_matches('/'));
            std::fs::hard_link(&from, &to)
                .or_else(|_| std::fs::copy(&from, &to).map(|_| ()))
                .with_context(|| format!("cannot place {} in the world", from.display()))?;
        }
        let needed_names = |object, from| -> Vec<String> {
            world
                .needed(object, from)
                .into_iter()
                .map(world::soname)
                .collect()
        };
        let calls = world.calls();
        let program = self.templates.program(
            calls,
            &needed_names(&world.program, None),
            &world.program,
            &self.places,
        )?;
        write_executable(&inside(PROGRAM), &program)?;
        if world.secure {
            // Set-user-ID root, run as nobody: the kernel gives the loader AT_SECURE.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(inside(PROGRAM), std::fs::Permissions::from_mode(0o4755))
                .context("cannot make the program set-user-ID")?;
        }
        for (i, library) in world.libraries.iter().enumerate() {
            let bytes = self.templates.library(
                calls,
                &world::soname(i),
                &needed_names(&library.object, Some(i)),
                &library.object,
                &self.places,
            )?;
            for dir in &library.copies {
                let dir = inside(&self.places.dir(*dir));
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                write_executable(&dir.join(world::soname(i)), &bytes)?;
            }
        }
        Ok(())
    }

    /// /etc/ld.so.conf with the world's directories, and the sysroot's ldconfig run in the
    /// root: a cache in the format of the glibc under test.
    fn ldconfig(&self, root: &Path, world: &World) -> Result<()> {
        let conf: String = world
            .cached
            .iter()
            .map(|d| format!("{}\n", self.places.dir(*d)))
            .collect();
        let etc = root.join("etc");
        std::fs::create_dir_all(&etc)
            .with_context(|| format!("cannot create {}", etc.display()))?;
        std::fs::write(etc.join("ld.so.conf"), conf).context("cannot write /etc/ld.so.conf")?;
        let invocation = Invocation {
            root: root.to_path_buf(),
            cwd: CWD.to_string(),
            qemu: self.qemu.clone(),
            argv: vec!["/sbin/ldconfig".into()],
            env: Vec::new(),
            secure: false,
            placed: Vec::new(),
        };
        let ran = self.run_limited(&invocation)?;
        match ran.ended {
            Ended::Code(0) => Ok(()),
            other => bail!(
                "ldconfig failed in the world's root ({other:?}): {}",
                ran.stderr.trim()
            ),
        }
    }

    /// Runs `invocation` as the harness does, killed (with everything it started) after the
    /// time limit.
    fn run_limited(&self, invocation: &Invocation) -> Result<Ran> {
        let mut cmd: Command = invocation.command();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        child::dies_with_us(&mut cmd);
        let mut running = cmd
            .spawn()
            .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
        let mut stderr = running.stderr.take().context("no stderr pipe")?;
        let mut stdout = running.stdout.take().context("no stdout pipe")?;
        let reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.read_to_end(&mut text);
            text
        });
        let out_reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = stdout.read_to_end(&mut text);
            text
        });
        let deadline = Instant::now() + self.limit;
        let ended = loop {
            if let Some(status) = running.try_wait().context("cannot wait for the run")? {
                use std::os::unix::process::ExitStatusExt;
                break match (status.code(), status.signal()) {
                    (Some(code), _) => Ended::Code(code),
                    (None, Some(signal)) => Ended::Signal(signal),
                    (None, None) => Ended::Signal(0),
                };
            }
            if Instant::now() > deadline {
                child::kill_group(&running);
                let _ = running.wait();
                break Ended::TimedOut;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let stderr = reader
            .join()
            .map_err(|_| anyhow!("the stderr reader panicked"))?;
        let stdout = out_reader
            .join()
            .map_err(|_| anyhow!("the stdout reader panicked"))?;
        Ok(Ran {
            ended,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
        })
    }
}

const SCRATCH_PREFIX: &str = "fuzz-model-";
const SCRATCH_LOCK: &str = "lock";
/// A scratch directory without a lock this long unchanged is abandoned: a running campaign
/// makes and removes a world in it every trial.
const UNLOCKED_GRACE: Duration = Duration::from_secs(600);

/// Removes the scratch directories in `parent` that no campaign holds any more (one killed
/// before it could remove its own), and says which. A directory whose lock can be taken is
/// abandoned; one without a lock (made by a campaign that did not lock it yet, or by an
/// older fuzzer) only when it has not changed for [`UNLOCKED_GRACE`].
fn remove_abandoned(parent: &Path, now: std::time::SystemTime) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let entries =
        std::fs::read_dir(parent).with_context(|| format!("cannot read {}", parent.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", parent.display()))?;
        let dir = entry.path();
        let ours = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(SCRATCH_PREFIX));
        if !ours || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let abandoned = match std::fs::File::open(dir.join(SCRATCH_LOCK)) {
            Ok(lock) => match lock.try_lock() {
                Ok(()) => true,
                Err(std::fs::TryLockError::WouldBlock) => false,
                Err(std::fs::TryLockError::Error(err)) => {
                    return Err(err).with_context(|| format!("cannot lock {}", dir.display()))
                }
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|changed| now.duration_since(changed).ok())
                .is_some_and(|age| age > UNLOCKED_GRACE),
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("cannot open the lock of {}", dir.display()))
            }
        };
        if abandoned {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot remove {}", dir.display()))?;
            removed.push(dir);
        }
    }
    Ok(removed)
}

#[derive(Debug)]
enum Ended {
    Code(i32),
    Signal(i32),
    TimedOut,
}

struct Ran {
    ended: Ended,
    stderr: String,
    stdout: String,
}

fn write_executable(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// The probe's calls of a world, for the log.
fn calls_text(world: &World) -> String {
    let secure = if world.secure { " secure," } else { "" };
    match world.calls() {
        true => format!("{secure} calls: {}", world.probe_words().join(" ")),
        false => String::new(),
    }
}

/// The last lines of a run's stderr, for a report.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests;
