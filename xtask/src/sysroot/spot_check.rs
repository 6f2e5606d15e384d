//! `sysroot --check-kept-headers`: the cheap, repeatable form of the proof that a header
//! which kept its mtime across a flavour switch (see `declarations`) changed no object.
//!
//! The objects of the tree that depend on such a header were compiled against its other
//! version and left alone by the switch. A sample of them, spread over glibc's
//! subdirectories, is compiled again now, with glibc's own compile command for each (asked of
//! its makefiles, as the rebase's build check does), into a scratch directory, and compared
//! with the tree's object section by section (`compare`): the same program, or the check
//! fails naming the object and the section that differs.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::cmd;

use super::compare::{self, FileVerdict};
use super::workdir::WorkDir;
use crate::sysroot::compile_check::compile_command;
use crate::util::shell;

/// Checks up to `sample` objects per header in `headers` (paths in the source tree).
/// Returns the report; fails when an object differs.
pub(crate) fn check(work: &WorkDir, headers: &[String], sample: usize) -> Result<String> {
    if headers.is_empty() {
        bail!(
            "no header of {} kept its mtime in the last flavour switch: nothing to check \
             (build another flavour of the release first)",
            work.root().display()
        );
    }
    let (src, build) = (work.src(), work.build());
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let mut report = String::new();
    let mut failures = Vec::new();
    for header in headers {
        let objects = dependents(&build, &src, header, sample)?;
        if objects.is_empty() {
            bail!(
                "no compiled object of {} depends on {header}",
                build.display()
            );
        }
        let _ = writeln!(report, "{header}: {} objects compiled again", objects.len());
        for (file, object) in objects {
            let verdict = recompile(&src, &build, &file, &object, scratch.path())?;
            let shown = object.strip_prefix(&build).unwrap_or(&object).display();
            let _ = match &verdict {
                FileVerdict::Identical => writeln!(report, "  {shown}: identical"),
                FileVerdict::DebugInfoOnly(sections) => writeln!(
                    report,
                    "  {shown}: the same program (debug information differs: {})",
                    sections.join(" ")
                ),
                other => {
                    failures.push(format!("{shown}: {other:?}"));
                    writeln!(report, "  {shown}: DIFFERENT: {other:?}")
                }
            };
        }
    }
    if !failures.is_empty() {
        // A finding (exit status 2), like every check's.
        return Err(crate::util::exit::NeedsAttention(format!(
            "{report}objects that a kept header changed after all (the kept-header rule is wrong \
             for them): {}",
            failures.join("; ")
        ))
        .into());
    }
    Ok(report)
}

/// Up to `sample` (source file, object) pairs whose object's dependency file names
/// `header`, one subdirectory at a time so that the sample spreads over glibc. Only objects
/// of a top-level subdirectory's own `.c` files (the ones glibc's makefiles can be asked
/// about by name).
fn dependents(
    build: &Path,
    src: &Path,
    header: &str,
    sample: usize,
) -> Result<Vec<(String, PathBuf)>> {
    let sh = shell::in_dir(build)?;
    let out = cmd!(sh, "grep -r -l -F --include=*.d -e /{header} .")
        .ignore_status()
        .output()
        .context("cannot run grep over make's dependency files")?;
    let mut by_dir: BTreeMap<String, Vec<(String, PathBuf)>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let dep = Path::new(line.trim_start_matches("./"));
        let (Some(dir), Some(name)) = (dep.parent(), dep.file_name()) else {
            continue;
        };
        let name = name.to_string_lossy();
        let Some(object) = name.strip_suffix(".d") else {
            continue;
        };
        let Some(stem) = object
            .strip_suffix(".os")
            .or_else(|| object.strip_suffix(".o"))
            .filter(|stem| !stem.starts_with("rtld-"))
        else {
            continue;
        };
        let dir = dir.to_string_lossy().into_owned();
        if dir.contains('/') || dir.is_empty() {
            continue;
        }
        let file = format!("{dir}/{stem}.c");
        let object = build.join(&dir).join(object);
        if src.join(&file).is_file() && object.is_file() {
            by_dir.entry(dir).or_default().push((file, object));
        }
    }
    let mut picked = Vec::new();
    let mut round = 0;
    while picked.len() < sample && by_dir.values().any(|v| v.len() > round) {
        for objects in by_dir.values() {
            if let Some(pair) = objects.get(round) {
                if picked.len() < sample {
                    picked.push(pair.clone());
                }
            }
        }
        round += 1;
    }
    Ok(picked)
}

fn recompile(
    src: &Path,
    build: &Path,
    file: &str,
    object: &Path,
    scratch: &Path,
) -> Result<FileVerdict> {
    let command = compile_command(src, build, file, object)?;
    let relative = object.strip_prefix(build).unwrap_or(object);
    let out = scratch.join(relative);
    fs::create_dir_all(out.parent().expect("an object has a directory"))
        .with_context(|| format!("cannot create the directory of {}", out.display()))?;
    // The object and make's dependency output go to the scratch copy; the rest is make's.
    let line = command.replace(&object.display().to_string(), &out.display().to_string());
    let dir = file.split_once('/').map_or("", |(dir, _)| dir);
    let sh = shell::in_dir(&src.join(dir))?;
    let output = cmd!(sh, "sh -c {line}")
        .ignore_status()
        .output()
        .with_context(|| format!("cannot compile {file} again"))?;
    if !output.status.success() {
        bail!(
            "compiling {file} again failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let read = |p: &Path| fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    let (old, new) = (read(object)?, read(&out)?);
    Ok(if old == new {
        FileVerdict::Identical
    } else {
        compare::compare_binaries(&old, &new)
    })
}
