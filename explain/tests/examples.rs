//! The docs' example outputs, from real runs, so that they cannot go stale: one run of the
//! Jetson replay (approach 7, `LD_FALLBACK_PATH` at the driver directory, on a JetPack 6
//! host, whose driver is in `/usr/lib/aarch64-linux-gnu/nvidia`: the cuda_compat app whose
//! `libcuda.so.1` dlopens the board's `libnvrm_*`), under the patched aarch64 loader; then `ld-fallback-explain` on that program and root (text and
//! JSON), the real loader's `LD_DEBUG=libs` search that ends in the fallback, and its
//! `ld.so --help`. Each is a block of a page (README.md, docs/troubleshooting.md,
//! docs/explain.md): a block that differs is rewritten and the test fails: commit it.
//!
//! The sysroot comes from `$LD_FALLBACK_SYSROOT_AARCH64` (`cargo xtask ci` sets it; this test
//! never builds glibc): without it the test is ignored, and under CI it fails.

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use loader_tests::differential::{self, LoaderUnderTest};
use loader_tests::host::{cache_dir, in_ci};
use loader_tests::probe::Invocation;
use loader_tests::replay::{
    self, App, HostLibs, JetsonFixtures, Kernel, Linkage, Origin, RunKey, Testbed, APPROACHES,
    COLUMNS,
};
use loader_tests::root::Bench;
use model::{sysroot_env_var, Flavour, Sysroot, Target};

const TARGET: Target = Target::Aarch64;

fn main() {
    let args = Arguments::from_args();
    let var = sysroot_env_var(TARGET, Flavour::Patched);
    let unset = std::env::var_os(&var).is_none_or(|v| v.is_empty());
    if unset {
        eprintln!(
            "examples ignored: ${var} is not set (under CI this fails); this test never builds glibc"
        );
    }
    let trial = Trial::test("docs-examples-from-a-real-run", || {
        examples().map_err(Failed::from)
    })
    .with_ignored_flag(unset && !in_ci());
    libtest_mimic::run(&args, vec![trial]).exit();
}

fn examples() -> Result<(), String> {
    let var = sysroot_env_var(TARGET, Flavour::Patched);
    let path = std::env::var_os(&var)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("${var} is not set (this test never builds glibc)"))?;
    let e = |e: anyhow::Error| format!("{e:#}");
    let cache = cache_dir().map_err(e)?;
    let sysroot = Sysroot::at(Path::new(&path), TARGET, Flavour::Patched).map_err(e)?;
    let release = sysroot.release.into();
    let bench = Bench::new(sysroot, &cache).map_err(e)?;
    let host = HostLibs::ensure(TARGET, &cache).map_err(|e| e.reason())?;
    let fixtures =
        JetsonFixtures::ensure(&bench.sysroot, &bench.layout, &cache, &host).map_err(e)?;
    let approach = APPROACHES
        .iter()
        .find(|a| a.number == 7)
        .expect("approach 7");
    let column = COLUMNS
        .iter()
        .find(|c| c.id == "jetpack6")
        .expect("jetpack6");
    let key = RunKey {
        flavour: Flavour::Patched,
        way: None,
        linkage: Linkage::Dlopen,
        app: App::Cxx,
        origin: Origin::Last,
        kernel: Kernel::Ptx,
    };
    let testbed = Testbed {
        bench: &bench,
        fixtures: &fixtures,
        host: &host,
    };
    let run = replay::run_one(&testbed, approach, column, key);
    if !run.works {
        return Err(format!("the example run does not work: {}", run.outcome));
    }
    let invocation = run
        .invocation
        .ok_or_else(|| format!("not run: {}", run.outcome))?;
    let loader = LoaderUnderTest {
        path: bench.layout.loader(),
        release,
        target: TARGET,
        flavour: Flavour::Patched,
    };
    // The program and its dlopens as the real loader's trace shows them; the model must agree
    // with that trace, or the example would show a wrong answer.
    let checked = differential::check(&invocation, loader);
    if let Some(difference) = &checked.difference {
        return Err(format!("the model and the loader differ:\n{difference}"));
    }
    let program = checked
        .program
        .clone()
        .ok_or("the run's program is not known")?;
    let fallback = invocation
        .env
        .iter()
        .find(|(name, _)| name == "LD_FALLBACK_PATH")
        .map(|(_, value)| value.clone())
        .ok_or("approach 7 sets no LD_FALLBACK_PATH")?;
    let mut dlopens: Vec<String> = Vec::new();
    for step in checked.observed.iter().filter(|s| s.dlopen) {
        let caller = step.requested_by.as_deref().map(file_name);
        let one = match caller {
            Some(caller) if caller != file_name(&program) => format!("{caller}:{}", step.name),
            _ => step.name.clone(),
        };
        if !dlopens.contains(&one) {
            dlopens.push(one);
        }
    }
    let explain = |json: bool| {
        ld_fallback_explain::Args {
            program: program.clone().into(),
            root: Some(checked.root.clone()),
            fallback_path: Some(fallback.clone().into()),
            dlopen: dlopens.iter().map(Into::into).collect(),
            cwd: Some(invocation.cwd.clone().into()),
            json,
            // The loader the program names, judged from its file (patched here), and every
            // other setting left as the command leaves it.
            ..ld_fallback_explain::Args::default()
        }
        // The environment of a user who set none of the loader's variables (this test's
        // own has cargo's LD_LIBRARY_PATH).
        .explain_with(ld_fallback_explain::environment::Environment::default())
        .map_err(e)
    };
    let text = explain(false)?;
    if !text.complete {
        return Err(format!("the example misses a library:\n{}", text.text));
    }
    let json = explain(true)?;
    let mut command =
        format!("$ ld-fallback-explain {program} --root ROOT \\\n    --fallback-path {fallback}");
    for d in &dlopens {
        command.push_str(&format!(" \\\n    --dlopen {d}"));
    }

    let (_, trace) = run_in_root(&invocation, &[("LD_DEBUG", "libs")])?;
    let search = search_of(&trace, "libnvrm_gpu.so")?;

    let mut help_run = invocation.clone();
    help_run.argv = vec![TARGET.loader_path().to_string(), "--help".to_string()];
    help_run.env = Vec::new();
    let (help, _) = run_in_root(&help_run, &[("LD_FALLBACK_PATH", &fallback)])?;
    if !help.contains("--fallback-path") {
        return Err(format!(
            "the patched loader's --help has no --fallback-path:\n{help}"
        ));
    }

    let excerpt = excerpt_of(
        &text.text,
        &["libcuda.so.1 (dlopen", "libnvrm_gpu.so (dlopen"],
    )?;
    let json_load = json_load_of(&json.text, "libnvrm_gpu.so")?;
    let blocks = [
        (
            generated::README_EXPLAIN_EXAMPLE,
            format!("```text\n{command}\n{excerpt}```\n"),
        ),
        (
            generated::EXPLAIN_EXAMPLE_FULL,
            format!("```text\n{command}\n{}```\n", text.text),
        ),
        (
            generated::EXPLAIN_JSON_EXAMPLE,
            format!(
                "With `--json`, the same answer as data; its fields are {}, and the search for \
                 `libnvrm_gpu.so` is this element of `loads`:\n\n```json\n{json_load}\n```\n",
                json_fields(&json.text)?
            ),
        ),
        (
            generated::LD_DEBUG_EXAMPLE,
            format!(
                "```text\n$ LD_DEBUG=libs LD_FALLBACK_PATH={fallback} {}\n...\n{search}...\n```\n",
                invocation.argv.join(" ")
            ),
        ),
        (
            generated::LD_SO_HELP_EXAMPLE,
            format!(
                "```text\n$ LD_FALLBACK_PATH={fallback} {} --help\n{help}```\n",
                TARGET.loader_path()
            ),
        ),
    ];
    let mut stale = Vec::new();
    for (part, text) in &blocks {
        if part
            .write(&workspace(), text)
            .map_err(|e| format!("{e:#}"))?
        {
            stale.push(part.label());
        }
    }
    if !stale.is_empty() {
        return Err(format!(
            "the examples differed from the real run; rewritten (review and commit them): {}",
            stale.join(", ")
        ));
    }
    Ok(())
}

/// Runs `invocation` again in its root as the harness does, with `extra` added to its
/// environment: what it printed on stdout and stderr.
fn run_in_root(
    invocation: &Invocation,
    extra: &[(&str, &str)],
) -> Result<(String, String), String> {
    let again = extra
        .iter()
        .fold(invocation.clone(), |again, (name, value)| {
            again.with_env(name, value)
        });
    let mut cmd = again.command();
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The explanation's header, the entries of the loads named by `starts` (a line at the left
/// margin and the indented lines under it), and its closing lines, with `...` for what is
/// left out.
fn excerpt_of(text: &str, starts: &[&str]) -> Result<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let header_end = lines
        .iter()
        .position(|l| l.is_empty())
        .ok_or("the explanation has no header")?;
    let mut out: Vec<&str> = lines[..=header_end].to_vec();
    for start in starts {
        let at = lines
            .iter()
            .position(|l| l.starts_with(start))
            .ok_or_else(|| format!("the explanation has no load `{start}`"))?;
        out.push("...");
        out.push(lines[at]);
        out.extend(lines[at + 1..].iter().take_while(|l| l.starts_with(' ')));
    }
    out.push("...");
    let tail = lines
        .iter()
        .rposition(|l| l.is_empty())
        .ok_or("the explanation has no closing lines")?;
    out.extend(&lines[tail..]);
    Ok(out.join("\n") + "\n")
}

/// The `loads` element of the JSON explanation that searched `name`, pretty-printed.
fn json_load_of(json: &str, name: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let load = value["loads"]
        .as_array()
        .and_then(|loads| loads.iter().find(|l| l["name"] == name))
        .ok_or_else(|| format!("the JSON explanation has no load of {name}"))?;
    serde_json::to_string_pretty(load).map_err(|e| e.to_string())
}

/// The top-level fields of the JSON explanation, as `a`, `b` and `c`.
fn json_fields(json: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let fields: Vec<String> = value
        .as_object()
        .ok_or("the JSON explanation is not an object")?
        .keys()
        .map(|k| format!("`{k}`"))
        .collect();
    Ok(match fields.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    })
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The lines of an `LD_DEBUG=libs` trace for one search of `name`: from its `find library=`
/// to the blank line that ends it, without the process ids.
fn search_of(trace: &str, name: &str) -> Result<String, String> {
    let lines: Vec<&str> = trace
        .lines()
        .map(|line| {
            let rest = line.trim_start();
            match rest.split_once(':') {
                Some((pid, rest)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => {
                    rest.strip_prefix('\t').unwrap_or(rest)
                }
                _ => line,
            }
        })
        .collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(&format!("find library={name} ")))
        .ok_or_else(|| format!("the trace has no search for {name}:\n{trace}"))?;
    let mut out = String::new();
    for line in &lines[start..] {
        if line.trim().is_empty() {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !out.contains("(LD_FALLBACK_PATH)") {
        return Err(format!(
            "the search for {name} never reaches the fallback:\n{out}"
        ));
    }
    Ok(out)
}
