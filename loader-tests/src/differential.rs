//! The search model held against the real loader. A scenario's last command is run with
//! `LD_DEBUG=libs,files`; the trace says what the loader searched for, who asked, every
//! file it tried and the one it ended with. The model, given the same program, root and
//! settings (and the `dlopen`s the trace shows the program made), must give exactly that:
//! the same searches in the same order, the same files tried, the same file taken.
//!
//! A secure-mode or static program prints no trace (LD_DEBUG is dropped in secure mode,
//! static programs never read it): there the probe's own record of the `libcuda.so.1` it
//! got is compared with the model's, the probe's `dlopen`s read from its command line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::probe::Invocation;
use crate::trace::{self, Traced};
use loader_model::{
    Bytes, CandidateVerdict, Config, Cpu, Dlopen, Explanation, GlibcVersion, How, PathList,
    RequestOutcome, RunningLoader,
};
use model::{Flavour, Target};

/// One search as both sides tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ComparedSearch {
    pub namespace: usize,
    pub name: String,
    /// Who asked (absent when the trace does not say).
    pub requested_by: Option<String>,
    /// Asked for by `dlopen` rather than by a DT_NEEDED entry.
    pub dlopen: bool,
    /// Every file tried, in order (`trying file=`).
    pub tried: Vec<String>,
    /// The file the search ended with, if it found one.
    pub ended_with: Option<String>,
}

/// How a run was compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every search of an `LD_DEBUG=libs,files` trace.
    Traced,
    /// The `libcuda.so.1` the probe reports (secure mode, static programs).
    Recorded,
    /// The command runs no program the model can take (`ld.so --help`, the ldd script).
    NotApplicable(String),
}

/// The model against one run.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub mode: Mode,
    /// The program, inside the root.
    pub program: Option<String>,
    pub root: PathBuf,
    pub observed: Vec<ComparedSearch>,
    pub predicted: Vec<ComparedSearch>,
    /// The first difference, if any.
    pub difference: Option<String>,
}

/// What the model must know about the loader a run used.
#[derive(Debug, Clone, Copy)]
pub struct LoaderUnderTest<'a> {
    /// Its path inside the root (an `argv[0]` equal to it is `ld.so PROGRAM`).
    pub path: &'a str,
    pub release: GlibcVersion,
    pub target: Target,
    pub flavour: Flavour,
}

/// An empty comparison in `mode` that names the program, with the model's configuration for
/// `invocation`; where the model cannot take the run, the comparison says why and there is
/// no configuration.
fn start(
    invocation: &Invocation,
    loader: LoaderUnderTest,
    mode: Mode,
) -> (Checked, Option<Config>) {
    let mut checked = Checked {
        mode,
        program: None,
        root: invocation.root.clone(),
        observed: Vec::new(),
        predicted: Vec::new(),
        difference: None,
    };
    match config_for(invocation, loader) {
        Ok(config) => {
            checked.program = Some(text(&config.program));
            (checked, Some(config))
        }
        Err(why) => {
            checked.mode = Mode::NotApplicable(why);
            (checked, None)
        }
    }
}

/// Runs `invocation` again, traced, and holds the model against it.
pub fn check(invocation: &Invocation, loader: LoaderUnderTest) -> Checked {
    let (mut checked, config) = start(invocation, loader, Mode::Traced);
    let Some(mut config) = config else {
        return checked;
    };
    let is_static = is_static(&config);
    if invocation.secure || is_static {
        checked.mode = Mode::Recorded;
        config.dlopens = probe_dlopens(&invocation.argv);
        let out = match invocation.run(invocation.placed.clone()) {
            Ok(out) => out,
            Err(err) => {
                checked.difference = Some(format!("cannot run it again: {err:#}"));
                return checked;
            }
        };
        let seen = out.loads().pop().filter(|_| out.code == Some(0));
        checked.observed = vec![ComparedSearch {
            namespace: 0,
            name: "libcuda.so.1".into(),
            requested_by: None,
            dlopen: false,
            tried: Vec::new(),
            ended_with: seen.map(|load| load.path),
        }];
        match loader_model::explain(&config) {
            Ok(x) => {
                let last = x.loads.iter().rev().find(|l| l.name == "libcuda.so.1");
                checked.predicted = vec![ComparedSearch {
                    namespace: 0,
                    name: "libcuda.so.1".into(),
                    requested_by: None,
                    dlopen: false,
                    tried: Vec::new(),
                    ended_with: last.and_then(|l| l.mapped()).map(text),
                }];
            }
            Err(err) => checked.difference = Some(format!("the model fails: {err:#}")),
        }
        if checked.difference.is_none() {
            checked.difference = compare(&checked.predicted, &checked.observed);
        }
        return checked;
    }
    let traced = invocation.with_env("LD_DEBUG", "libs,files");
    let out = match traced.run(Vec::new()) {
        Ok(out) => out,
        Err(err) => {
            checked.difference = Some(format!("cannot run it again: {err:#}"));
            return checked;
        }
    };
    compare_trace(checked, config, &out.stderr, loader.path)
}

/// Holds the model against a run of `invocation` made by the caller with
/// `LD_DEBUG=libs,files` (under its own time limit, say): `trace` is that run's stderr.
pub fn check_trace(invocation: &Invocation, loader: LoaderUnderTest, trace: &str) -> Checked {
    let checked = Checked {
        mode: Mode::Traced,
        program: None,
        root: invocation.root.clone(),
        observed: Vec::new(),
        predicted: Vec::new(),
        difference: None,
    };
    match config_for(invocation, loader) {
        Ok(config) => compare_trace(
            Checked {
                program: Some(text(&config.program)),
                ..checked
            },
            config,
            trace,
            loader.path,
        ),
        Err(why) => Checked {
            mode: Mode::NotApplicable(why),
            ..checked
        },
    }
}

/// Like [`check_trace`] for a run of the probe (`c-fixtures/probe.c`): the model follows the
/// `dlopen`s of the probe's command line rather than those the trace shows, so that a
/// `dlopen` the loader answers without a search, or one it never makes, is held against the
/// model too. The probe ends at the first `dlopen`, `dlmopen` or `shim` that fails; so does
/// the list the model follows.
pub fn check_probe_trace(invocation: &Invocation, loader: LoaderUnderTest, trace: &str) -> Checked {
    let (mut checked, config) = start(invocation, loader, Mode::Traced);
    let Some(mut config) = config else {
        return checked;
    };
    let searches = trace::searches(trace);
    checked.observed = observed(&searches, &config, loader.path);
    let answer = probe_dlopens_until_a_failure(&mut config, &invocation.argv);
    with_the_model(checked, answer)
}

/// Holds the model against a run of the probe that printed no trace (secure mode drops
/// LD_DEBUG): whether the program started (`status` 127: the loader stopped at a DT_NEEDED
/// entry it did not find), and every `load` or `fail` record the probe printed for its calls,
/// with the file each call ended with. The files the program's own DT_NEEDED entries mapped
/// are not compared: the probe prints no list of its maps.
pub fn check_probe_records(
    invocation: &Invocation,
    loader: LoaderUnderTest,
    status: i32,
    stdout: &str,
) -> Checked {
    let (mut checked, config) = start(invocation, loader, Mode::Recorded);
    let Some(mut config) = config else {
        return checked;
    };
    let program = text(&config.program);
    let record = |how: &str, name: &str, path: Option<String>| ComparedSearch {
        namespace: 0,
        name: format!("{how} {name}"),
        requested_by: None,
        dlopen: true,
        tried: Vec::new(),
        ended_with: path,
    };
    let started = |yes: bool| ComparedSearch {
        dlopen: false,
        ..record("start", &program, yes.then(|| program.clone()))
    };
    checked.observed.push(started(status != 127));
    for line in stdout.lines() {
        let mut words = line.split(' ');
        let kind = words.next().unwrap_or_default();
        let field = |key: &str| {
            line.split(' ')
                .find_map(|w| w.strip_prefix(key).map(str::to_string))
                .unwrap_or_default()
        };
        match kind {
            "load" => checked.observed.push(record(
                &field("how="),
                &field("name="),
                Some(field("path=")),
            )),
            "fail" => checked
                .observed
                .push(record(&field("how="), &field("name="), None)),
            _ => {}
        }
    }
    let x = match probe_dlopens_until_a_failure(&mut config, &invocation.argv) {
        Ok(x) => x,
        Err(err) => {
            checked.difference = Some(format!("the model fails: {err:#}"));
            return checked;
        }
    };
    checked.predicted.push(started(x.starts));
    if x.starts {
        // The calls' own loads, in order, each with the loads its dependencies made.
        let calls: Vec<usize> = (0..x.loads.len())
            .filter(|&i| matches!(x.loads[i].how, How::Dlopen | How::Dlmopen))
            .collect();
        let words = probe_calls_words(&invocation.argv);
        for (n, &at) in calls.iter().enumerate() {
            let end = calls.get(n + 1).copied().unwrap_or(x.loads.len());
            let own = &x.loads[at];
            let failed = x.loads[at..end].iter().any(|l| {
                matches!(
                    l.outcome,
                    RequestOutcome::NotFound
                        | RequestOutcome::Failed { .. }
                        | RequestOutcome::StopsAt { .. }
                )
            });
            let path = match &own.outcome {
                RequestOutcome::Mapped { path, .. }
                | RequestOutcome::AlreadyLoaded { path, .. } => Some(text(path)),
                _ => None,
            }
            .filter(|_| !failed);
            let Some((how, prints)) = words.get(n) else {
                break;
            };
            if *prints || failed {
                checked.predicted.push(record(how, &text(&own.name), path));
            }
        }
    }
    checked.difference = compare(&checked.predicted, &checked.observed);
    checked
}

/// The probe's word for each `dlopen` of its command line, and whether it prints a record
/// when the call succeeds (the first `dlopen` of a `shim` prints only when it fails).
fn probe_calls_words(argv: &[String]) -> Vec<(&'static str, bool)> {
    let mut out = Vec::new();
    for word in argv.iter().skip(1) {
        match word.as_str() {
            "dlopen" => out.push(("dlopen", true)),
            "try" => out.push(("try", true)),
            "dlmopen" => out.push(("dlmopen", true)),
            "shim" => out.extend([("shim", false), ("shim", true)]),
            _ => {}
        }
    }
    out
}

/// Sets `config.dlopens` to the probe's calls up to the first one that ends the probe by
/// failing (in the model's answer), and gives the model's answer to that.
fn probe_dlopens_until_a_failure(
    config: &mut Config,
    argv: &[String],
) -> anyhow::Result<Explanation> {
    let calls = probe_calls(argv);
    config.dlopens = Vec::new();
    let mut before = loader_model::explain(config)?;
    for (dlopen, ends_on_failure) in calls {
        config.dlopens.push(dlopen);
        let after = loader_model::explain(config)?;
        let failed = after.not_followed.len() > before.not_followed.len()
            || after.loads[before.loads.len().min(after.loads.len())..]
                .iter()
                .any(|l| {
                    matches!(
                        l.outcome,
                        RequestOutcome::NotFound
                            | RequestOutcome::Failed { .. }
                            | RequestOutcome::StopsAt { .. }
                    )
                });
        before = after;
        if failed && ends_on_failure {
            break;
        }
    }
    Ok(before)
}

fn compare_trace(mut checked: Checked, mut config: Config, trace: &str, loader: &str) -> Checked {
    let searches = trace::searches(trace);
    config.dlopens = dlopens(&searches, &text(&config.program));
    checked.observed = observed(&searches, &config, loader);
    let answer = loader_model::explain(&config);
    with_the_model(checked, answer)
}

/// `checked`, its observed searches read, with the model's `answer` as its predicted ones and
/// the first difference between the two (or why the model gave no answer).
fn with_the_model(mut checked: Checked, answer: anyhow::Result<Explanation>) -> Checked {
    match answer {
        Ok(x) => checked.predicted = predicted(&x),
        Err(err) => {
            checked.difference = Some(format!("the model fails: {err:#}"));
            return checked;
        }
    }
    checked.difference = compare(&checked.predicted, &checked.observed);
    checked
}

/// The model's settings for a command run in a root: the program (after `ld.so` and its
/// options, if the loader is run as a command) and the variables the loader reads.
pub(crate) fn config_for(
    invocation: &Invocation,
    loader: LoaderUnderTest,
) -> Result<Config, String> {
    let mut args = invocation.argv.iter();
    let first = args.next().ok_or("an empty command")?;
    let mut via_loader = false;
    let mut library_option = None;
    let mut fallback_option = None;
    let mut preload_option = None;
    let mut inhibit_cache = false;
    let program = if first == loader.path {
        via_loader = true;
        loop {
            let Some(arg) = args.next() else {
                return Err("ld.so runs no program".into());
            };
            match arg.as_str() {
                "--list" => {}
                "--inhibit-cache" => inhibit_cache = true,
                "--library-path" => library_option = args.next().cloned(),
                "--fallback-path" => fallback_option = args.next().cloned(),
                "--preload" => preload_option = args.next().cloned(),
                option if option.starts_with("--") => {
                    return Err(format!("ld.so {option} is not modelled"));
                }
                program => break program.to_string(),
            }
        }
    } else if first.ends_with("/bash") {
        return Err(
            "the ldd script: bash starts the loader twice (--verify, then the listing), checked as 04-ldd/21-ldd"
                .into(),
        );
    } else {
        first.clone()
    };
    let env = |name: &str| {
        invocation
            .env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let audit: Vec<Bytes> = env("LD_AUDIT")
        .map(|list| {
            list.split([':', ';'])
                .filter(|m| !m.is_empty())
                .map(Bytes::from)
                .collect()
        })
        .unwrap_or_default();
    let list = |option: Option<String>, option_name: &str, variable: &str| match option {
        Some(value) => Some(PathList {
            value: value.into(),
            source: option_name.into(),
        }),
        None => env(variable).map(|value| PathList {
            value: value.into(),
            source: variable.into(),
        }),
    };
    Ok(Config {
        root: invocation.root.clone(),
        program: program.into(),
        cwd: invocation.cwd.clone().into(),
        release: loader.release,
        target: loader.target,
        flavour: loader.flavour,
        library_path: list(library_option, "--library-path", "LD_LIBRARY_PATH"),
        fallback_path: list(fallback_option, "--fallback-path", "LD_FALLBACK_PATH"),
        // The loader reads LD_PRELOAD, then --preload: one list, in that order.
        preload: match (env("LD_PRELOAD"), preload_option) {
            (Some(variable), Some(option)) => Some(PathList {
                value: format!("{variable}:{option}").into(),
                source: "LD_PRELOAD and --preload".into(),
            }),
            (_, option) => list(option, "--preload", "LD_PRELOAD"),
        },
        dlopens: Vec::new(),
        audit,
        inhibit_cache,
        secure: invocation.secure,
        trace: env("LD_TRACE_LOADED_OBJECTS").is_some_and(|v| !v.is_empty()),
        via_loader,
        // `ld.so PROGRAM`: the loader run is the one on the command line, whatever the
        // program's PT_INTERP names.
        loader: via_loader.then(|| RunningLoader {
            path: loader.path.into(),
            source: "the command line".into(),
        }),
        loader_series: None,
        cpu: Cpu::detect(loader.target),
    })
}

fn is_static(config: &Config) -> bool {
    let tree = loader_model::fs::Tree::new(&config.root);
    tree.open(&config.program, &config.cwd)
        .ok()
        .and_then(|file| tree.read(&file, loader_model::fs::ELF_OBJECT).ok())
        .and_then(|bytes| loader_model::elf::dynamic(&bytes).ok())
        .is_some_and(|d| d.interpreter.is_none())
}

/// The `dlopen`s a traced run made, in order, from their callers.
pub(crate) fn dlopens(searches: &[Traced], program: &str) -> Vec<Dlopen> {
    searches
        .iter()
        .filter(|s| s.dlopen)
        .map(|s| Dlopen {
            name: s.name.clone().into(),
            from: s
                .requested_by
                .clone()
                .filter(|by| by != program)
                .map(Bytes::from),
            new_namespace: s.namespace != s.requester_namespace,
        })
        .collect()
}

/// The `dlopen`s of the probe's command line (`c-fixtures/probe.c`).
pub(crate) fn probe_dlopens(argv: &[String]) -> Vec<Dlopen> {
    probe_calls(argv).into_iter().map(|(d, _)| d).collect()
}

/// The `dlopen`s of the probe's command line, each with whether its failure ends the probe
/// (all but `try`).
fn probe_calls(argv: &[String]) -> Vec<(Dlopen, bool)> {
    let mut dlopens = Vec::new();
    let mut words = argv.iter().skip(1);
    let from_program = |name: &str, new_namespace| Dlopen {
        name: name.into(),
        from: None,
        new_namespace,
    };
    while let Some(word) = words.next() {
        match word.as_str() {
            "dlopen" => dlopens.extend(words.next().map(|n| (from_program(n, false), true))),
            "try" => dlopens.extend(words.next().map(|n| (from_program(n, false), false))),
            "dlmopen" => dlopens.extend(words.next().map(|n| (from_program(n, true), true))),
            "shim" => {
                if let (Some(path), Some(name)) = (words.next(), words.next()) {
                    dlopens.push((from_program(path, false), true));
                    dlopens.push((
                        Dlopen {
                            name: name.into(),
                            from: Some(path.into()),
                            new_namespace: false,
                        },
                        true,
                    ));
                }
            }
            _ => {}
        }
    }
    dlopens
}

/// The trace's searches as steps: the file a search ended with is the last one it tried,
/// when that one is a file the loader maps (a new map, or a loadable ELF file it found
/// again).
fn observed(searches: &[Traced], config: &Config, loader: &str) -> Vec<ComparedSearch> {
    let tree = loader_model::fs::Tree::new(&config.root);
    let identity = |path: &str| tree.open(path.as_bytes(), &config.cwd).ok().map(|f| f.id);
    let loader_id = identity(loader);
    searches
        .iter()
        .map(|s| {
            let last = s.tried.last().cloned();
            let loadable = |path: &str| {
                tree.open(path.as_bytes(), &config.cwd)
                    .ok()
                    .filter(|f| !f.is_dir)
                    .and_then(|f| tree.head(&f, 64).ok())
                    .is_some_and(|head| {
                        loader_model::elf::verify(&head, config.target)
                            == loader_model::elf::Verified::Usable
                    })
            };
            // Without a new map, a loadable last try still ended the search (the file was
            // loaded already, under another name) unless ld.so.cache named it: that line
            // comes before the loader decides. The loader's own file ends it from the cache
            // too, in a namespace other than the base one: the loader's map stands in there
            // ("there can only be one copy", `_dl_map_object_from_fd` in elf/dl-load.c).
            let the_loader =
                |p: &str| s.namespace != 0 && loader_id.is_some() && identity(p) == loader_id;
            let ended_with = last
                .filter(|p| s.mapped_new || (!s.last_from_cache && loadable(p)) || the_loader(p));
            ComparedSearch {
                namespace: s.namespace,
                name: s.name.clone(),
                requested_by: s.requested_by.clone(),
                dlopen: s.dlopen,
                tried: s.tried.clone(),
                ended_with,
            }
        })
        .collect()
}

/// The model's searches as steps.
pub(crate) fn predicted(x: &Explanation) -> Vec<ComparedSearch> {
    // The loader maps an LD_AUDIT module without a `file=` request line: only its
    // dependencies show in a trace.
    x.searches()
        .filter(|load| load.how != How::Audit)
        .map(|load| ComparedSearch {
            namespace: load.namespace,
            name: text(&load.name),
            requested_by: Some(text(&load.requested_by)),
            // A preload is "needed by" the program in a trace, as a DT_NEEDED entry is.
            dlopen: matches!(load.how, How::Dlopen | How::Dlmopen),
            tried: load
                .candidates
                .iter()
                .filter(|c| c.verdict.is_traced())
                .map(|c| text(&c.path))
                .collect(),
            ended_with: load
                .candidates
                .iter()
                .find(|c| c.verdict == CandidateVerdict::Taken)
                .map(|c| text(&c.path)),
        })
        .collect()
}

/// The first difference between the model's steps and the trace's, or `None`. Namespaces
/// are compared by the order they appear in (the real loader may have used numbers for
/// namespaces the model does not have, such as an audit module's).
pub(crate) fn compare(predicted: &[ComparedSearch], observed: &[ComparedSearch]) -> Option<String> {
    let renumber = |steps: &[ComparedSearch]| -> Vec<ComparedSearch> {
        let mut seen: HashMap<usize, usize> = HashMap::new();
        steps
            .iter()
            .map(|s| {
                let next = seen.len();
                let namespace = *seen.entry(s.namespace).or_insert(next);
                ComparedSearch {
                    namespace,
                    ..s.clone()
                }
            })
            .collect()
    };
    let (predicted, observed) = (renumber(predicted), renumber(observed));
    for (i, (p, o)) in predicted.iter().zip(&observed).enumerate() {
        let same_asker = match (&p.requested_by, &o.requested_by) {
            (Some(a), Some(b)) => a == b && p.dlopen == o.dlopen,
            _ => true,
        };
        if p.namespace != o.namespace
            || p.name != o.name
            || !same_asker
            || (!o.tried.is_empty() || !p.tried.is_empty()) && p.tried != o.tried
            || p.ended_with != o.ended_with
        {
            return Some(format!(
                "search {} differs:\n  model: {}\n  real:  {}",
                i + 1,
                describe(p),
                describe(o)
            ));
        }
    }
    if predicted.len() != observed.len() {
        let (longer, who) = if predicted.len() > observed.len() {
            (&predicted[observed.len()..], "only the model")
        } else {
            (&observed[predicted.len()..], "only the real loader")
        };
        let extra: Vec<String> = longer.iter().map(describe).collect();
        return Some(format!(
            "{who} searched for more ({} vs {} searches):\n  {}",
            predicted.len(),
            observed.len(),
            extra.join("\n  ")
        ));
    }
    None
}

fn describe(s: &ComparedSearch) -> String {
    format!(
        "[{}] {} ({} {}) -> {}; tried {}",
        s.namespace,
        s.name,
        if s.dlopen { "dlopen from" } else { "needed by" },
        s.requested_by.as_deref().unwrap_or("?"),
        s.ended_with.as_deref().unwrap_or("nothing"),
        if s.tried.is_empty() {
            "nothing".to_string()
        } else {
            s.tried.join(" ")
        }
    )
}

/// A name or path of the model as a trace shows it: the trace is read as text (its bytes
/// outside UTF-8 replaced), and so is this.
fn text(bytes: &Bytes) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `path` inside `root` on this machine.
pub fn host_path(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, tried: &[&str], ended: Option<&str>) -> ComparedSearch {
        ComparedSearch {
            namespace: 0,
            name: name.into(),
            requested_by: Some("/bin/p".into()),
            dlopen: false,
            tried: tried.iter().map(|t| t.to_string()).collect(),
            ended_with: ended.map(str::to_string),
        }
    }

    #[test]
    fn any_difference_is_reported() {
        let a = vec![step(
            "libx.so",
            &["/a/libx.so", "/b/libx.so"],
            Some("/b/libx.so"),
        )];
        assert_eq!(compare(&a, &a), None);
        let other_file = vec![step("libx.so", &["/a/libx.so"], Some("/a/libx.so"))];
        assert!(compare(&a, &other_file)
            .unwrap()
            .contains("search 1 differs"));
        let more = [a.clone(), vec![step("liby.so", &[], None)]].concat();
        assert!(compare(&a, &more)
            .unwrap()
            .contains("only the real loader searched for more"));
    }

    #[test]
    fn the_probe_command_line_names_its_dlopens() {
        let argv: Vec<String> = [
            "/p",
            "needed",
            "shim",
            "/s/lib.so",
            "libcuda.so.1",
            "try",
            "a.so",
            "dlmopen",
            "b.so",
        ]
        .map(String::from)
        .to_vec();
        let d = probe_dlopens(&argv);
        assert_eq!(d.len(), 4);
        assert_eq!(d[1].from.as_ref().unwrap(), "/s/lib.so");
        assert!(d[3].new_namespace);
    }
}
