//! The search model (`cargo xtask explain`) proven against the real loaders: every scenario
//! of the resolution matrix and every run of the Jetson replay (each cell, both ways the
//! compat driver loads `libnvrm_*`), on x86_64 and aarch64, under the patched and the
//! unpatched glibc. Each scenario's root is built as the harness builds it, its command run
//! traced, and the model must name the same searches, files tried and files taken
//! (`loader_tests::differential`); any difference fails. Runs whose roots, commands and
//! variables are equal (`loader_tests::world`) are one world to the loader: each world is
//! traced once, the worlds side by side, and its result is every such run's. Runs of the
//! replay whose roots are written down alike (`loader_tests::replay::recipe`) are one world
//! before any is built: their root is built once.
//!
//! The same runs are given to the `lddtree` crate, side by side: the table of
//! docs/explain.md is this test's (rewritten when out of date, and the test fails: commit it).
//!
//! Sysroots come only from `$LD_FALLBACK_SYSROOT[_AARCH64][_UNPATCHED]` (this test never
//! builds glibc); without them its tests are ignored, and under CI they fail.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use libtest_mimic::{Arguments, Failed, Trial};
use loader_tests::differential::{self, Checked, LoaderUnderTest, Mode};
use loader_tests::host::{cache_dir, in_ci};
use loader_tests::matrix::{Observed, Scenario, MATRIX};
use loader_tests::probe::Invocation;
use loader_tests::replay::{
    self, Approach, Column, HostLibs, JetsonFixtures, Launcher, RunKey, Testbed, APPROACHES,
    COLUMNS,
};
use loader_tests::root::{Bench, Ctx};
use loader_tests::world::{World, Worlds};
use model::{parallel_map, sysroot_env_var, Flavour, Sysroot, Target};

const FLAVOURS: [Flavour; 2] = [Flavour::Patched, Flavour::Unpatched];

/// One in this many of the runs that share another run's root builds its own as well, and the
/// two must be one world: the permanent check that equal recipes build equal roots.
const SHARING_SAMPLE: usize = 16;

/// `1`: every run made, run and traced on its own, one at a time per loader (no world shared).
const EVERY_RUN: &str = "LD_FALLBACK_EXPLAIN_EVERY_RUN";

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    let mut missing = Vec::new();
    let mut loaders = Vec::new();
    for target in Target::ALL {
        for flavour in FLAVOURS {
            let var = sysroot_env_var(target, flavour);
            let unset = std::env::var_os(&var).is_none_or(|v| v.is_empty());
            if unset {
                missing.push(var);
            }
            loaders.push((target, flavour, unset && !in_ci()));
        }
    }
    // Run by run, each run under every loader in turn: the first trials of the test threads
    // (one per CPU) then ask for different loaders' results, which are computed side by side
    // instead of one after the other while the other threads wait for the first.
    for id in run_ids() {
        for &(target, flavour, ignored) in &loaders {
            let id = id.clone();
            trials.push(
                Trial::test(format!("{target}::{flavour}::{id}"), move || {
                    one(target, flavour, &id).map_err(Failed::from)
                })
                .with_ignored_flag(ignored),
            );
        }
    }
    // With every sysroot the table is checked against docs/explain.md; with some, outside
    // CI, it is only printed (for a look at a partial run).
    let all = missing.is_empty() || in_ci();
    let none = missing.len() == Target::ALL.len() * FLAVOURS.len();
    trials.push(
        Trial::test("lddtree-side-by-side-in-docs", move || {
            side_by_side(all).map_err(Failed::from)
        })
        .with_ignored_flag(none && !in_ci()),
    );
    if !missing.is_empty() {
        eprintln!(
            "explain tests ignored where ${} is not set (under CI this fails); this test never builds glibc",
            missing.join(", $")
        );
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Every run: `matrix::<scenario>` and `replay::<the replay's name of the run>`.
fn run_ids() -> Vec<String> {
    let mut ids: Vec<String> = MATRIX.iter().map(|s| format!("matrix::{}", s.id)).collect();
    ids.extend(replay_runs(Flavour::Patched).map(|(id, ..)| id));
    ids
}

/// Every distinct run of every replay cell under one loader, with its id (the same for both
/// loaders: the replay names a run after its row's flavour, here the name of the patched one).
fn replay_runs(
    flavour: Flavour,
) -> impl Iterator<Item = (String, &'static Approach, &'static Column, RunKey)> {
    // The runtime probe (approach 10) unloads a driver and looks it up again: the model has
    // no dlclose, so those runs are the replay's alone.
    APPROACHES
        .iter()
        .filter(|approach| approach.launcher != Launcher::Probe)
        .flat_map(move |approach| {
            COLUMNS.iter().flat_map(move |column| {
                let mut keys: Vec<RunKey> = Vec::new();
                for key in RunKey::all(approach, column) {
                    let key = RunKey { flavour, ..key };
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
                keys.into_iter().map(move |key| {
                    let named = RunKey {
                        flavour: Flavour::Patched,
                        ..key
                    };
                    let id = format!("replay::{}", replay::run_name(approach, column, named));
                    (id, approach, column, key)
                })
            })
        })
}

/// One run, compared.
#[derive(Debug, Clone)]
struct Row {
    id: String,
    checked: Result<Checked, String>,
    lddtree: Lddtree,
}

/// What the lddtree crate made of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Lddtree {
    Agrees,
    /// The loader took a library the program dlopened: lddtree reads DT_NEEDED only.
    NoDlopen(String),
    /// Another file (or none) for a DT_NEEDED entry.
    Differs(String),
    Error(String),
    NotCompared,
}

type Results = BTreeMap<String, Row>;

/// The results of one (target, flavour), computed once per test binary.
fn results(target: Target, flavour: Flavour) -> Result<&'static Results, String> {
    // Keyed by name: a variant (fallback-first) is a key like the series' two flavours.
    type Cells = BTreeMap<(Target, Flavour), &'static OnceLock<Result<Results, String>>>;
    static CELLS: Mutex<Cells> = Mutex::new(BTreeMap::new());
    let cell: &'static OnceLock<_> = *CELLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry((target, flavour))
        .or_insert_with(|| Box::leak(Box::default()));
    cell.get_or_init(|| compute(target, flavour))
        .as_ref()
        .map_err(Clone::clone)
}

/// One run of the comparison: a scenario of the matrix or a run of the replay.
enum Run {
    Matrix(&'static Scenario),
    Replay(&'static Approach, &'static Column, RunKey),
}

fn compute(target: Target, flavour: Flavour) -> Result<Results, String> {
    let var = sysroot_env_var(target, flavour);
    let path = std::env::var_os(&var)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("${var} is not set (this test never builds glibc)"))?;
    let cache = cache_dir().map_err(|e| format!("{e:#}"))?;
    let set_up = Instant::now();
    let sysroot = Sysroot::at(Path::new(&path), target, flavour).map_err(|e| format!("{e:#}"))?;
    let release = sysroot.release.into();
    let bench = Bench::new(sysroot, &cache).map_err(|e| format!("{e:#}"))?;
    let host = HostLibs::ensure(target, &cache).map_err(|e| e.reason())?;
    let fixtures = JetsonFixtures::ensure(&bench.sysroot, &bench.layout, &cache, &host)
        .map_err(|e| format!("{e:#}"))?;
    let loader = LoaderUnderTest {
        path: bench.layout.loader(),
        release,
        target,
        flavour,
    };
    let testbed = Testbed {
        bench: &bench,
        fixtures: &fixtures,
        host: &host,
    };
    let set_up_in = set_up.elapsed();
    let mut runs: Vec<(String, Run)> = MATRIX
        .iter()
        .map(|scenario| (format!("matrix::{}", scenario.id), Run::Matrix(scenario)))
        .collect();
    runs.extend(
        replay_runs(flavour)
            .map(|(id, approach, column, key)| (id, Run::Replay(approach, column, key))),
    );
    // The plain way, for `cargo xtask bench differential`'s side-by-side figure: every run
    // made, run and traced on its own, one after the other.
    let every_run = std::env::var_os(EVERY_RUN).is_some_and(|v| v == "1");
    let workers = match every_run {
        true => 1,
        false => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let started = Instant::now();
    // Runs of the replay whose roots are built alike (equal recipes, equal commands) are one
    // world: each such root is built once, for the first run that names it.
    let recipes = match every_run {
        true => vec![None; runs.len()],
        false => parallel_map(&runs, workers, |(_, run)| match run {
            Run::Replay(approach, column, key) => replay::recipe(&testbed, approach, column, *key),
            Run::Matrix(_) => None,
        }),
    };
    let mut first_of_recipe = HashMap::new();
    let built_as: Vec<Option<usize>> = recipes
        .into_iter()
        .enumerate()
        .map(|(i, recipe)| {
            let recipe = recipe?;
            let first = *first_of_recipe.entry(recipe).or_insert(i);
            (first != i).then_some(first)
        })
        .collect();
    // Sharing rests on equal recipes building equal roots. A sample of the runs that share a
    // root build their own too, and its world must be the shared one's (below).
    let mut shared = 0;
    let sampled: Vec<bool> = built_as
        .iter()
        .map(|first| {
            first.is_some() && {
                shared += 1;
                shared % SHARING_SAMPLE == 1
            }
        })
        .collect();
    let to_build: Vec<(&Run, bool)> = runs
        .iter()
        .zip(built_as.iter().zip(&sampled))
        .map(|((_, run), (built_as, sampled))| (run, built_as.is_none() || *sampled))
        .collect();
    let recipes_in = started.elapsed();
    let started = Instant::now();
    // Every run's root built, side by side, and the command it runs: a scenario of the matrix
    // runs (its outcome says whether it is compared), a run of the replay is only built.
    let mut built = parallel_map(&to_build, workers, |&(run, build)| match run {
        _ if !build => Err("built as another run".to_string()),
        Run::Matrix(scenario) => {
            let cx = Ctx::new(&bench, scenario.id);
            match scenario.run(&cx) {
                Err(err) => Err(format!("the scenario fails to run: {err:#}")),
                Ok(Observed::Skipped(why)) => Err(format!("SKIPPED: {why}")),
                Ok(Observed::NotApplicable(why)) => Err(format!("n/a: {why}")),
                Ok(Observed::Seen(_)) => cx
                    .last_invocation()
                    .ok_or_else(|| "the scenario ran no command".to_string()),
            }
        }
        Run::Replay(approach, column, key) if every_run => {
            let run = replay::run_one(&testbed, approach, column, *key);
            run.invocation
                .ok_or_else(|| format!("not run: {}", run.outcome))
        }
        Run::Replay(approach, column, key) => replay::world(&testbed, approach, column, *key)
            .map_err(|outcome| format!("not run: {outcome}")),
    });
    let built_in = started.elapsed();
    let roots_built = built_as.iter().filter(|first| first.is_none()).count();
    let (mut sharing_checked, mut sharing_equal) = (0, 0);
    let mut unsound_sharing: Vec<Option<String>> = vec![None; built.len()];
    for (i, first) in built_as.iter().enumerate() {
        if let Some(first) = *first {
            let unsound = match (sampled[i], &built[i], &built[first]) {
                (true, Ok(own), Ok(shared)) => {
                    sharing_checked += 1;
                    match (World::of(own), World::of(shared)) {
                        (Ok(own), Ok(shared)) if own == shared => {
                            sharing_equal += 1;
                            None
                        }
                        (Ok(_), Ok(_)) => Some(format!(
                            "its root, built from a recipe equal to {}'s, is another world: \
                             sharing that root would have hidden a difference",
                            runs[first].0
                        )),
                        (own, shared) => own.and(shared).err().map(|e| format!("{e:#}")),
                    }
                }
                (true, Err(why), Ok(_)) => Some(format!(
                    "its own root, from a recipe equal to {}'s, could not be built ({why}) where that one's was",
                    runs[first].0
                )),
                (true, Ok(_), Err(why)) => Some(format!(
                    "its own root, from a recipe equal to {}'s, was built where that one's was not ({why})",
                    runs[first].0
                )),
                _ => None,
            };
            unsound_sharing[i] = unsound;
            built[i] = built[first].clone();
        }
    }
    // Equal worlds (the same files, command and variables) get the same answer from this
    // loader: each is traced once, and its result is every run's that made it.
    let started = Instant::now();
    let mut worlds = Worlds::default();
    let mut traced: Vec<Invocation> = Vec::new();
    let mut world_of: Vec<Result<usize, String>> = Vec::with_capacity(built.len());
    for (i, invocation) in built.into_iter().enumerate() {
        if let Some(first) = built_as[i] {
            let same = match unsound_sharing[i].take() {
                Some(why) => Err(why),
                None => world_of[first].clone(),
            };
            world_of.push(same);
            continue;
        }
        world_of.push((|| {
            let invocation = invocation?;
            if every_run {
                traced.push(invocation);
                return Ok(traced.len() - 1);
            }
            let world = World::of(&invocation).map_err(|e| format!("{e:#}"))?;
            let (number, new) = worlds.number(world);
            if new {
                traced.push(invocation);
            }
            Ok(number)
        })());
    }
    let numbered_in = started.elapsed();
    let started = Instant::now();
    let compared = parallel_map(&traced, workers, |invocation| {
        let checked = differential::check(invocation, loader);
        let lddtree = match checked.mode {
            Mode::Traced => lddtree(&checked),
            _ => Lddtree::NotCompared,
        };
        (checked, lddtree)
    });
    eprintln!(
        "{target}::{flavour}: {} runs, {roots_built} roots built (and {sharing_checked} of the shared ones again: {sharing_equal} the same world), {} distinct worlds, {} traced runs; set up in {:.1} s, recipes written in {:.1} s, roots built in {:.1} s, worlds read in {:.1} s, traced in {:.1} s, {workers} at a time",
        runs.len(),
        if every_run { "not sought".to_string() } else { worlds.len().to_string() },
        traced.len(),
        set_up_in.as_secs_f64(),
        recipes_in.as_secs_f64(),
        built_in.as_secs_f64(),
        numbered_in.as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );
    let rows = runs
        .into_iter()
        .zip(world_of)
        .map(|((id, _), world)| {
            let (checked, lddtree) = match world {
                Ok(number) => {
                    let (checked, lddtree) = &compared[number];
                    (Ok(checked.clone()), lddtree.clone())
                }
                Err(why) => (Err(why), Lddtree::NotCompared),
            };
            let row = Row {
                id: id.clone(),
                checked,
                lddtree,
            };
            (id, row)
        })
        .collect();
    // The roots removed side by side, the bench's scratch with it (LD_FALLBACK_KEEP_ROOTS=1
    // keeps them for a look).
    let started = Instant::now();
    if let Err(err) = bench.remove_roots(workers) {
        eprintln!("{target}::{flavour}: {err:#}");
    }
    drop(bench);
    eprintln!(
        "{target}::{flavour}: roots removed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(rows)
}

/// The lddtree crate on the same program and root, against what the loader took: for each
/// search of the traced run, the file lddtree names for that name.
fn lddtree(c: &Checked) -> Lddtree {
    let Some(program) = &c.program else {
        return Lddtree::NotCompared;
    };
    let tree = match lddtree::DependencyAnalyzer::new(c.root.clone())
        .analyze(differential::host_path(&c.root, program))
    {
        Ok(tree) => tree,
        Err(err) => return Lddtree::Error(err.to_string()),
    };
    let canonical = |path: &str| std::fs::canonicalize(differential::host_path(&c.root, path)).ok();
    // The objects lddtree's graph holds: the program and every library it resolved.
    let in_graph = |requester: &str| {
        requester == program
            || canonical(requester).is_some_and(|real| {
                tree.libraries
                    .values()
                    .any(|lib| lib.realpath.as_ref() == Some(&real))
            })
    };
    for step in &c.observed {
        let Some(lib) = tree.libraries.get(&step.name) else {
            let asked_in_graph = step.requested_by.as_deref().is_some_and(in_graph);
            if step.dlopen || !asked_in_graph || step.name.contains('/') {
                return Lddtree::NoDlopen(step.name.clone());
            }
            return Lddtree::Differs(format!("{}: lddtree does not list it", step.name));
        };
        let ours = step.ended_with.as_deref().and_then(canonical);
        if ours != lib.realpath {
            return Lddtree::Differs(format!(
                "{}: lddtree {}, the loader {}",
                step.name,
                lib.realpath
                    .as_ref()
                    .map_or("nothing".into(), |p| inside(&c.root, p)),
                step.ended_with.as_deref().unwrap_or("nothing")
            ));
        }
    }
    Lddtree::Agrees
}

fn inside(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => path.display().to_string(),
    }
}

fn one(target: Target, flavour: Flavour, id: &str) -> Result<(), String> {
    let rows = results(target, flavour)?;
    let row = rows.get(id).ok_or_else(|| format!("no run {id}"))?;
    match &row.checked {
        Err(why) if accepted_skip(why, target) => {
            eprintln!("{target}::{flavour}::{id}: not compared: {why}");
            Ok(())
        }
        Err(why) => Err(why.clone()),
        Ok(c) => match (&c.mode, &c.difference) {
            (Mode::NotApplicable(why), _) => {
                eprintln!("{target}::{flavour}::{id}: not compared: {why}");
                Ok(())
            }
            (_, Some(difference)) => Err(format!(
                "the model and the real loader differ in {} (LD_FALLBACK_KEEP_ROOTS=1 keeps it):\n{difference}",
                c.root.display()
            )),
            (_, None) if c.observed.is_empty() && c.predicted.is_empty() => {
                // Nothing searched on either side (a refused option): still a comparison.
                Ok(())
            }
            (_, None) => Ok(()),
        },
    }
}

/// Runs the matrix itself does not count: a scenario its table declares not applicable to
/// the target (the ldd script under QEMU), and outside CI a skip for a missing input (no
/// archive for NVIDIA's libraries, secure mode when not root).
fn accepted_skip(why: &str, _target: Target) -> bool {
    if why.starts_with("n/a: ") {
        return true;
    }
    let Some(reason) = why.strip_prefix("SKIPPED: ") else {
        return false;
    };
    !in_ci()
        && (reason.starts_with(loader_tests::nvidia::UNREACHABLE)
            || reason.starts_with("secure mode needs root"))
}

/// The side-by-side table of every (target, flavour) with results; with `all`, it must be
/// docs/explain.md's.
fn side_by_side(all: bool) -> Result<(), String> {
    let mut table = String::from(
        "| target | loader | runs compared | `explain` agrees | `lddtree` agrees | lddtree: a dlopen it cannot know | lddtree: another file or none | not compared |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut details = String::new();
    for target in Target::ALL {
        for flavour in FLAVOURS {
            let rows = match results(target, flavour) {
                Ok(rows) => rows,
                Err(_) if !all => continue,
                Err(err) => return Err(err),
            };
            let compared: Vec<&Row> = rows
                .values()
                .filter(|r| {
                    r.checked
                        .as_ref()
                        .is_ok_and(|c| !matches!(c.mode, Mode::NotApplicable(_)))
                })
                .collect();
            let agrees = compared
                .iter()
                .filter(|r| r.checked.as_ref().is_ok_and(|c| c.difference.is_none()))
                .count();
            let count = |f: fn(&Lddtree) -> bool| compared.iter().filter(|r| f(&r.lddtree)).count();
            let ldd_ok = count(|l| *l == Lddtree::Agrees);
            let ldd_dlopen = count(|l| matches!(l, Lddtree::NoDlopen(_)));
            let ldd_differs = count(|l| matches!(l, Lddtree::Differs(_) | Lddtree::Error(_)));
            table.push_str(&format!(
                "| {target} | {flavour} | {} | {agrees} | {ldd_ok} | {ldd_dlopen} | {ldd_differs} | {} |\n",
                compared.len(),
                rows.len() - compared.len()
            ));
            for r in &compared {
                if let Lddtree::Differs(why) | Lddtree::Error(why) = &r.lddtree {
                    details.push_str(&format!("- {target} {flavour} `{}`: {why}\n", r.id));
                }
            }
        }
    }
    let block = format!("{table}\nWhere lddtree takes another file or none:\n\n{details}");
    if !all {
        eprintln!(
            "side by side, for the sysroots named (not written to docs/explain.md):\n{block}"
        );
        return Ok(());
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    if !generated::LDDTREE
        .write(&root, &block)
        .map_err(|e| format!("{e:#}"))?
    {
        return Ok(());
    }
    Err("docs/explain.md's side-by-side table was out of date: rewritten, commit it".into())
}
