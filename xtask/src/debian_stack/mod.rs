//! `cargo xtask debian-stack`: the series on the glibc that users build, a release's stable
//! branch. Debian builds a release from its orig tarball (the store's tree) with the patches
//! of `debian/patches/` applied in the order of its `series` file, `git-updates.diff` (the
//! commits of upstream's `release/X.Y/master` since the tag) first; nixpkgs takes the same
//! branch through its own `X.Y-master.patch` (`nix-stack` checks that one). This applies
//! Debian's stack of the release's row (`debian`, the newest revision the archive listed when
//! it was set) to the release from the store with `patch`, as quilt does, then the series, and
//! says per patch whether it applied, moved (offset) or needed fuzz.
//!
//! A series patch that the stable branch rejects has a resolution of its own, kept apart from
//! the series: `patches/stable/<X.Y>/<patch file>`, the patch as it applies there, listed in
//! `patches/stable/<X.Y>/replaces` with the git blob id of the series' patch it stands for.
//! The check applies it in the patch's place, and fails when the series' patch changed since
//! (the resolution was made for another text), when the series' patch applies again (the
//! resolution is not needed), or when a rejected patch has none. `--record` makes one where
//! another release's version of the same patch applies (stable branches take upstream's later
//! changes, so a newer release's version often fits): a proposal to review like any patch.
//!
//! What this proves is that the patches apply; the stable branch is not built here.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{ObjectType, Oid};
use model::Release;
use xshell::cmd;

use crate::cli::{Env, SomeReleases};
use crate::nix_stack::{apply, Applied, Patching};
#[cfg(test)]
use crate::series::Series;
use crate::series::{Patch, Workspace, STABLE_DIR};
use crate::store::import::debian;
use crate::util::exit::NeedsAttention;
use crate::util::{durable, paths, shell, staging};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub releases: SomeReleases,
    /// Where a series patch does not apply and another release's version of it does, write
    /// that version as the stable branch's resolution (patches/stable/<X.Y>/), to review.
    #[arg(long)]
    pub record: bool,
    /// Check against this Debian revision of the one release named (`2.41-12+deb13u4`)
    /// instead of its row's: for when the row's packaging cannot be fetched. The report says
    /// which revision it checked, and that the row's was not; nothing is recorded.
    #[arg(long, value_name = "REVISION", conflicts_with = "record")]
    pub debian_revision: Option<String>,
}

/// `patches/stable/<X.Y>/replaces`: which series patch each resolution stands for.
const REPLACES: &str = "replaces";

const REPLACES_HEADER: &str = "\
# The patches of this directory are the series' patches of the same name as they apply on
# Debian's stable branch of the release (debian/patches applied, git-updates.diff first),
# which rejects the series' own. `cargo xtask debian-stack` applies them in their place. Each
# line: the patch file, and the git blob id of the series' patch it was made for: when that
# patch changes, the resolution is stale and the check says so. Review them like patches.
";

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let ws = Workspace::open_read_only(env)?;
        let downloads = paths::downloads_dir()?;
        let mut problems = Vec::new();
        // A release that cannot be checked (its packaging gone from the mirror) does not
        // stop the others: each is said, and the command fails at the end.
        let mut errors = Vec::new();
        let releases = &self.releases.releases.0;
        if let Some(revision) = &self.debian_revision {
            let [release] = releases.as_slice() else {
                bail!("--debian-revision names one release's revision: give one --release X.Y");
            };
            let upstream = revision.split_once('-').map(|(version, _)| version);
            if upstream != Some(release.version()) {
                bail!(
                    "--debian-revision {revision} is no Debian revision of glibc {release} (one reads `{release}-N`, like the row's {})",
                    release.debian_version().unwrap_or("<none>")
                );
            }
        }
        for release in releases {
            let row = release.debian_version();
            let Some(debian) = self.debian_revision.as_deref().or(row) else {
                outln!(
                    "{release}: SKIPPED: its row in {} names no Debian version (Debian does not carry glibc {release} yet)",
                    model::TABLE_PATH
                );
                continue;
            };
            if self.debian_revision.is_some() && Some(debian) != row {
                let instead = format!(
                    "{release}: checked on Debian's glibc {debian}, as asked, instead of the row's {}: the row's revision is NOT CHECKED",
                    row.unwrap_or("<none>")
                );
                outln!("{instead}");
                // Not a pass of the row: the command says so by its status too.
                problems.push(instead);
            }
            let checked = newer_revision(*release, debian, &downloads).and_then(|newer| {
                if self.debian_revision.is_none() {
                    problems.extend(newer);
                }
                let packaging = debian::fetch_packaging(release.version(), debian, &downloads)?;
                check(&ws, *release, debian, &packaging, &env.cache, self.record)
            });
            match checked {
                Ok(report) => {
                    out!("{}", report.render());
                    problems.extend(report.problems());
                }
                Err(e) => {
                    let why = format!(
                        "{release}: cannot check the series on Debian's glibc {debian}: {e:#}"
                    );
                    outln!(
                        "{release} on Debian's glibc {debian}: NOT CHECKED (see the error below)"
                    );
                    errors.push(why);
                }
            }
        }
        if !errors.is_empty() {
            errors.extend(problems);
            bail!("{}", errors.join("\n"));
        }
        if !problems.is_empty() {
            return Err(NeedsAttention(problems.join("\n")).into());
        }
        Ok(())
    }
}

/// Why the row's Debian revision of `release` is not the newest the archive lists, if it is
/// not: the stable branch users get is the newest one.
fn newer_revision(release: Release, debian: &str, downloads: &Path) -> Result<Option<String>> {
    let Some(newest) = debian::newest_version(release.version(), downloads)? else {
        return Ok(None);
    };
    Ok((newest != debian && debian::dpkg_newer(&newest, debian)?).then(|| {
        format!(
            "{release}: Debian lists glibc {newest}, newer than the row's {debian}: set `debian` to it in {} and check again",
            model::TABLE_PATH
        )
    }))
}

/// How one series patch went on the stable branch.
#[derive(Debug)]
pub(crate) struct PatchOnStable {
    pub applied: Applied,
    pub used: Used,
}

/// Which text of a series patch was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Used {
    /// The series' own.
    Own,
    /// The resolution in patches/stable/ (made for this patch).
    Resolution,
    /// The resolution, made for another version of the patch: stale.
    StaleResolution,
    /// The series' own, though a resolution is recorded for it: not needed any more.
    OwnDespiteResolution,
    /// Another release's version of the patch, written as the resolution (`--record`).
    Recorded(Release),
    /// Another release's version of the patch, which applies: a resolution to make.
    Proposed(Release),
    /// Nothing applies; the patch was left out, and the ones after it applied without it.
    None,
}

/// The series of one release on Debian's stable branch.
#[derive(Debug)]
pub(crate) struct StableReport {
    pub release: Release,
    pub debian: String,
    /// Debian's patches, in order, each with how it applied to the store's tree.
    pub stack: Vec<Applied>,
    pub series: Vec<PatchOnStable>,
    /// Resolutions in patches/stable/ for patches the series does not have.
    pub orphans: Vec<String>,
}

impl StableReport {
    fn stack_applies(&self) -> bool {
        self.stack.iter().all(|a| a.failed.is_empty())
    }

    /// What needs a maintainer: each as a line.
    pub(crate) fn problems(&self) -> Vec<String> {
        let release = self.release;
        let resolutions = format!("patches/{STABLE_DIR}/{release}");
        let mut problems = Vec::new();
        if !self.stack_applies() {
            problems.push(format!(
                "{release}: Debian's own patches do not all apply to the store's glibc {release}: the stable branch could not be made"
            ));
        }
        for patch in &self.series {
            let name = &patch.applied.name;
            let line = match &patch.used {
                _ if !patch.applied.failed.is_empty() => Some(format!(
                    "{release}: {name} does not apply on Debian's glibc {}{}",
                    self.debian,
                    match patch.used {
                        Used::Resolution => format!(" ({resolutions}'s resolution does not either: make it again)"),
                        _ => format!(": write the patch as it applies there into {resolutions}/ (patches/{STABLE_DIR}/README.md)"),
                    }
                )),
                Used::StaleResolution => Some(format!(
                    "{release}: {resolutions}/{name} was made for another version of the series' patch: make it again from patches/{release}/{name}"
                )),
                Used::OwnDespiteResolution => Some(format!(
                    "{release}: {name} applies on Debian's glibc {} as it is: remove {resolutions}/{name} and its line in {resolutions}/{REPLACES}",
                    self.debian
                )),
                Used::Recorded(from) => Some(format!(
                    "{release}: {name} does not apply on Debian's glibc {}; glibc {from}'s version of it does, and is written to {resolutions}/: review and commit it",
                    self.debian
                )),
                Used::Proposed(from) => Some(format!(
                    "{release}: {name} does not apply on Debian's glibc {}; glibc {from}'s version of it does: `cargo xtask debian-stack --release {release} --record` writes it to {resolutions}/",
                    self.debian
                )),
                Used::None => Some(format!(
                    "{release}: {name} does not apply on Debian's glibc {}, nor does any other release's version of it: write it as it applies there into {resolutions}/ (patches/{STABLE_DIR}/README.md)",
                    self.debian
                )),
                Used::Own | Used::Resolution if patch.applied.fuzz > 0 => Some(format!(
                    "{release}: {name} applies on Debian's glibc {} only with fuzz (the context changed: review what it makes, or write a resolution)",
                    self.debian
                )),
                Used::Own | Used::Resolution => None,
            };
            problems.extend(line);
        }
        for orphan in &self.orphans {
            problems.push(format!(
                "{release}: {resolutions}/{orphan} stands for a patch the series does not have: remove it"
            ));
        }
        problems
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let resolved = self
            .series
            .iter()
            .filter(|p| p.used == Used::Resolution && p.applied.failed.is_empty())
            .count();
        let verdict = if !self.stack_applies() {
            "NOT CHECKED: Debian's own patches do not apply"
        } else if !self.problems().is_empty() {
            "NEEDS ATTENTION"
        } else if resolved > 0 {
            "applies, with the stable branch's resolutions"
        } else {
            "applies"
        };
        let _ = writeln!(
            out,
            "{} on Debian's glibc {} ({} Debian patches, git-updates.diff first): the series {verdict}",
            self.release,
            self.debian,
            self.stack.len()
        );
        for failed in self.stack.iter().filter(|a| !a.failed.is_empty()) {
            let _ = writeln!(
                out,
                "  Debian's {}: FAILED: {}",
                failed.name,
                failed.failed.join("; ")
            );
        }
        let width = self
            .series
            .iter()
            .map(|p| p.applied.name.len())
            .max()
            .unwrap_or(0);
        for patch in &self.series {
            let a = &patch.applied;
            let how = if !a.failed.is_empty() {
                format!("DOES NOT APPLY: {}", a.failed.join("; "))
            } else {
                let mut how = "applies".to_string();
                if a.offset > 0 {
                    let _ = write!(how, ", {} hunks at other lines", a.offset);
                }
                if a.fuzz > 0 {
                    let _ = write!(how, ", {} hunks WITH FUZZ", a.fuzz);
                }
                how
            };
            let used = match &patch.used {
                Used::Own => String::new(),
                Used::Resolution => format!(" (patches/{STABLE_DIR}/{}'s version)", self.release),
                Used::StaleResolution => format!(
                    " (patches/{STABLE_DIR}/{}'s version, STALE: made for another version of the patch)",
                    self.release
                ),
                Used::OwnDespiteResolution => {
                    " (the series' own: its resolution is not needed)".to_string()
                }
                Used::Recorded(from) => format!(" (glibc {from}'s version, recorded)"),
                Used::Proposed(from) => {
                    format!(" (the series' own does not; glibc {from}'s version does)")
                }
                Used::None => " (left out)".to_string(),
            };
            let _ = writeln!(out, "  {:<width$}  {how}{used}", a.name);
        }
        out
    }
}

/// Applies Debian's stack of source package `debian` (its packaging, `debian/` as a tarball)
/// to `release` from the store, then the series (with the stable branch's resolutions), in a
/// scratch tree under `cache`. With `record`, a patch that does not apply and another
/// release's version of which does gets that version as its resolution.
pub(crate) fn check(
    ws: &Workspace,
    release: Release,
    debian: &str,
    packaging: &Path,
    cache: &Path,
    record: bool,
) -> Result<StableReport> {
    let scratch = staging::tempdir_in(&cache.join("debian-stack"), "tree")?;
    let unpacked = scratch.path().join("packaging");
    std::fs::create_dir_all(&unpacked)
        .with_context(|| format!("cannot create {}", unpacked.display()))?;
    let sh = shell::here()?;
    cmd!(sh, "tar -xf {packaging} -C {unpacked} debian/patches")
        .quiet()
        .run()
        .with_context(|| format!("cannot unpack debian/patches of {}", packaging.display()))?;
    let patches_dir = unpacked.join("debian/patches");
    let series_file = patches_dir.join("series");
    let text = std::fs::read_to_string(&series_file)
        .with_context(|| format!("cannot read {}", series_file.display()))?;
    let stack = read_series(&text)
        .with_context(|| format!("cannot read the patch list {}", series_file.display()))?;
    let tree = scratch.path().join("glibc");
    ws.store.export_tree(release, &tree)?;
    let mut report = StableReport {
        release,
        debian: debian.to_string(),
        stack: Vec::new(),
        series: Vec::new(),
        orphans: Vec::new(),
    };
    for (name, strip) in &stack {
        let path = patches_dir.join(name);
        let text = model::file::read_regular_text(&path, crate::series::PATCH_LIMIT).with_context(
            || {
                format!(
                    "cannot read {} (listed in debian/patches/series)",
                    path.display()
                )
            },
        )?;
        let how = Patching {
            strip: *strip,
            dry_run: false,
        };
        report.stack.push(apply(&tree, name, &text, &how)?);
    }
    if !report.stack_applies() {
        return Ok(report);
    }
    let series = ws.load_series(release)?;
    let dir = ws.patches_dir.join(STABLE_DIR).join(release.version());
    let mut resolutions = Resolutions::read(&dir)?;
    report.orphans = resolutions
        .made_for
        .iter()
        .map(|(name, _)| name.clone())
        .filter(|name| !series.patches.iter().any(|p| p.name == *name))
        .collect();
    let mut recorded = false;
    for patch in &series.patches {
        let (text, used) = choose(ws, &tree, release, patch, &resolutions)?;
        let (applied, used) = match used {
            Used::None => (failing(&tree, patch)?, Used::None),
            Used::Proposed(from) if record => {
                let before = touched_blobs(&tree, &text)?;
                let applied = apply(&tree, &patch.name, &text, &Patching::STDENV)?;
                let after = touched_blobs(&tree, &text)?;
                let made = with_index_lines(&text, &before, &after);
                resolutions.put(&patch.name, &patch.text, made);
                recorded = true;
                (applied, Used::Recorded(from))
            }
            other => (apply(&tree, &patch.name, &text, &Patching::STDENV)?, other),
        };
        report.series.push(PatchOnStable { applied, used });
    }
    if recorded {
        resolutions.write(&dir)?;
    }
    Ok(report)
}

/// Which text of `patch` to apply on the stable tree as it is now, and why.
fn choose(
    ws: &Workspace,
    tree: &Path,
    release: Release,
    patch: &Patch,
    resolutions: &Resolutions,
) -> Result<(String, Used)> {
    let applies = |text: &str| -> Result<bool> {
        let how = Patching {
            strip: 1,
            dry_run: true,
        };
        Ok(apply(tree, &patch.name, text, &how)?.failed.is_empty())
    };
    let own = applies(&patch.text)?;
    if let Some((made_for, text)) = resolutions.get(&patch.name) {
        return Ok(if made_for != blob_id(&patch.text)? {
            (text.to_string(), Used::StaleResolution)
        } else if own {
            (patch.text.clone(), Used::OwnDespiteResolution)
        } else {
            (text.to_string(), Used::Resolution)
        });
    }
    if own {
        return Ok((patch.text.clone(), Used::Own));
    }
    for other in others_nearest_first(release) {
        let Ok(series) = ws.load_series(other) else {
            continue;
        };
        if let Some(theirs) = series.patches.iter().find(|p| p.name == patch.name) {
            if theirs.text != patch.text && applies(&theirs.text)? {
                return Ok((theirs.text.clone(), Used::Proposed(other)));
            }
        }
    }
    Ok((patch.text.clone(), Used::None))
}

/// The files a patch names (`diff --git a/X b/X`), each with the git blob id of its text in
/// `tree` now (`None`: not there).
fn touched_blobs(tree: &Path, text: &str) -> Result<Vec<(String, Option<Oid>)>> {
    let mut blobs = Vec::new();
    for line in text.lines() {
        let Some(path) = line
            .strip_prefix("diff --git a/")
            .and_then(|rest| rest.split_once(" b/"))
            .map(|(a, _)| a)
        else {
            continue;
        };
        let file = tree.join(path);
        let id = match std::fs::read(&file) {
            Ok(bytes) => Some(Oid::hash_object(ObjectType::Blob, &bytes)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        blobs.push((path.to_string(), id));
    }
    Ok(blobs)
}

/// `text` (a patch made for another release) with each file's `index A..B` line naming the
/// blobs it took and made on the stable branch, abbreviated as the line was: the patch as a
/// reviewer (or `git am -3`) reads it there.
fn with_index_lines(
    text: &str,
    before: &[(String, Option<Oid>)],
    after: &[(String, Option<Oid>)],
) -> String {
    let short = |id: Option<Oid>, len: usize| {
        let full = id.map_or_else(|| "0".repeat(40), |id| id.to_string());
        full[..len.min(40)].to_string()
    };
    let mut out = String::new();
    let mut file = 0;
    let mut in_file = None;
    for line in text.split_inclusive('\n') {
        if line.starts_with("diff --git a/") {
            in_file = Some(file);
            file += 1;
        }
        let rewritten = in_file.and_then(|at| {
            let rest = line.strip_prefix("index ")?;
            let (ids, mode) = rest
                .trim_end()
                .split_once(' ')
                .unwrap_or((rest.trim_end(), ""));
            let (old, _) = ids.split_once("..")?;
            let (b, a) = (before.get(at)?.1, after.get(at)?.1);
            let mode = if mode.is_empty() {
                String::new()
            } else {
                format!(" {mode}")
            };
            Some(format!(
                "index {}..{}{mode}\n",
                short(b, old.len()),
                short(a, old.len())
            ))
        });
        match rewritten {
            Some(line) => {
                out.push_str(&line);
                in_file = None;
            }
            None => out.push_str(line),
        }
    }
    out
}

/// What `patch` says when it fails on the tree, without changing it.
fn failing(tree: &Path, patch: &Patch) -> Result<Applied> {
    let how = Patching {
        strip: 1,
        dry_run: true,
    };
    apply(tree, &patch.name, &patch.text, &how)
}

/// The other supported releases, newer ones first from the nearest, then older ones from the
/// nearest: a stable branch takes upstream's later changes.
fn others_nearest_first(release: Release) -> Vec<Release> {
    let all = model::supported();
    let newer = all.iter().copied().filter(|r| *r > release);
    let older = all.iter().rev().copied().filter(|r| *r < release);
    newer.chain(older).collect()
}

/// The git blob id of a patch's text: what a resolution names as the patch it was made for.
fn blob_id(text: &str) -> Result<Oid> {
    Oid::hash_object(ObjectType::Blob, text.as_bytes()).context("cannot hash a patch")
}

/// The patch files of a `debian/patches/series`, in order, each with the path components
/// `patch` strips (`-pN` after the name; 1 without).
pub(crate) fn read_series(text: &str) -> Result<Vec<(String, u8)>> {
    let mut stack = Vec::new();
    for line in text.lines() {
        let line = line.split(" #").next().unwrap_or_default().trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().expect("a line that is not empty has a word");
        if name.contains("..") || name.starts_with('/') {
            bail!("`{name}` is not a file of debian/patches");
        }
        let mut strip = 1;
        for option in words {
            strip = option
                .strip_prefix("-p")
                .and_then(|n| n.parse::<u8>().ok())
                .with_context(|| {
                    format!("{name}: the option `{option}` is not one this check knows (only -pN)")
                })?;
        }
        stack.push((name.to_string(), strip));
    }
    if stack.is_empty() {
        bail!("no patch listed");
    }
    Ok(stack)
}

/// `patches/stable/<X.Y>/`: the stable branch's resolutions of one release.
#[derive(Debug, Default)]
struct Resolutions {
    /// Each resolution's patch name and the blob id of the series' patch it was made for.
    made_for: Vec<(String, Oid)>,
    /// The resolutions' texts, by patch name.
    texts: Vec<(String, String)>,
}

impl Resolutions {
    fn read(dir: &Path) -> Result<Resolutions> {
        let index = dir.join(REPLACES);
        if !dir.exists() {
            return Ok(Resolutions::default());
        }
        let text =
            crate::series::read_own(&index, crate::series::LIST_LIMIT, crate::series::Head::Text)
                .with_context(|| format!("{} has no readable {REPLACES}", dir.display()))?;
        let mut resolutions = Resolutions::default();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let (name, id) = line.split_once(' ').with_context(|| {
                format!("{}: `{line}` is not `<patch> <blob id>`", index.display())
            })?;
            let id = Oid::from_str(id.trim())
                .with_context(|| format!("{}: `{id}` is not a git object id", index.display()))?;
            if name.contains('/') || !name.ends_with(".patch") {
                bail!("{}: `{name}` is not a patch file's name", index.display());
            }
            let patch = crate::series::read_own(
                &dir.join(name),
                crate::series::PATCH_LIMIT,
                crate::series::Head::Text,
            )?;
            resolutions.made_for.push((name.to_string(), id));
            resolutions.texts.push((name.to_string(), patch));
        }
        Ok(resolutions)
    }

    /// The resolution of `name`: the blob id of the patch it was made for, and its text.
    fn get(&self, name: &str) -> Option<(Oid, &str)> {
        let (_, id) = self.made_for.iter().find(|(n, _)| n == name)?;
        let (_, text) = self.texts.iter().find(|(n, _)| n == name)?;
        Some((*id, text))
    }

    /// `text` as the resolution of the series' patch `name` (whose text is `own`).
    fn put(&mut self, name: &str, own: &str, text: String) {
        let id = Oid::hash_object(ObjectType::Blob, own.as_bytes()).expect("hashing text");
        self.made_for.retain(|(n, _)| n != name);
        self.texts.retain(|(n, _)| n != name);
        self.made_for.push((name.to_string(), id));
        self.texts.push((name.to_string(), text));
        self.made_for.sort();
        self.texts.sort();
    }

    /// Writes the directory whole (staged beside it, then swapped in).
    fn write(&self, dir: &Path) -> Result<()> {
        let parent = dir.parent().context("a release's directory has a parent")?;
        let staged = staging::tempdir_in(parent, "stable")?;
        let mut index = REPLACES_HEADER.to_string();
        for (name, id) in &self.made_for {
            let _ = writeln!(index, "{name} {id}");
        }
        durable::write_synced(&staged.path().join(REPLACES), index.as_bytes())?;
        for (name, text) in &self.texts {
            durable::write_synced(&staged.path().join(name), text.as_bytes())?;
        }
        durable::replace_dir(&staged.keep(), dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_file_is_read_in_order_with_its_strip_levels() {
        let text = "git-updates.diff\n\n# 2.37\nlocale/check-unknown-symbols.diff\nany/x.diff -p0\n  any/y.diff  # why\n";
        assert_eq!(
            read_series(text).unwrap(),
            [
                ("git-updates.diff".to_string(), 1),
                ("locale/check-unknown-symbols.diff".to_string(), 1),
                ("any/x.diff".to_string(), 0),
                ("any/y.diff".to_string(), 1),
            ]
        );
        assert!(read_series("a.diff -R\n")
            .unwrap_err()
            .to_string()
            .contains("`-R` is not one this check knows"));
        assert!(read_series("../etc/passwd\n").is_err());
        assert!(read_series("# nothing\n").is_err());
    }

    /// A store with a release per `(version, a.c)`, a series on each that writes `two` in
    /// capitals, and a `patches/` of them, all under `root`.
    fn project(root: &Path, releases: &[(&str, &str)]) -> Workspace {
        let store = crate::store::SourceStore::open(&root.join("glibc.git")).unwrap();
        let patches = root.join("patches");
        let repo = store.repo();
        let who = git2::Signature::new("t", "t@t.invalid", &git2::Time::new(0, 0)).unwrap();
        let tree_of = |text: &str| {
            let mut root = repo.treebuilder(None).unwrap();
            root.insert("a.c", repo.blob(text.as_bytes()).unwrap(), 0o100644)
                .unwrap();
            repo.find_tree(root.write().unwrap()).unwrap()
        };
        for (version, text) in releases {
            let base = repo
                .commit(None, &who, &who, "release\n", &tree_of(text), &[])
                .unwrap();
            repo.reference(&format!("refs/tags/glibc-{version}"), base, true, "t")
                .unwrap();
            let parent = repo.find_commit(base).unwrap();
            let shouted = tree_of(&text.replacen("two", "TWO", 1));
            let change = repo
                .commit(None, &who, &who, "elf: Shout\n", &shouted, &[&parent])
                .unwrap();
            let release = Release::parse(version).unwrap();
            Series::from_commits(repo, release, &[change])
                .unwrap()
                .write(&patches.join(version))
                .unwrap();
        }
        Workspace {
            store,
            patches_dir: patches,
            rebase_dir: root.join("rebase"),
        }
    }

    /// Debian's packaging whose one patch, `git-updates.diff`, turns `a.c` from `from` into
    /// `to`.
    fn packaging(root: &Path, from: &str, to: &str) -> std::path::PathBuf {
        let dir = root.join("packaging");
        let _ = std::fs::remove_dir_all(&dir);
        let patches = dir.join("debian/patches");
        std::fs::create_dir_all(&patches).unwrap();
        std::fs::write(patches.join("series"), "# stable\ngit-updates.diff\n").unwrap();
        let diff = similar::TextDiff::from_lines(from, to)
            .unified_diff()
            .header("a/a.c", "b/a.c")
            .to_string();
        std::fs::write(patches.join("git-updates.diff"), diff).unwrap();
        let tarball = root.join("glibc.debian.tar");
        let sh = crate::util::shell::here().unwrap();
        cmd!(sh, "tar -cf {tarball} -C {dir} debian")
            .quiet()
            .run()
            .unwrap();
        tarball
    }

    const OLD: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

    /// The stable branch took 2.42's change of `a.c`: 2.41's patch is rejected there, 2.42's
    /// applies and becomes the resolution (`--record`), which the next check uses, which a
    /// change of the series' patch makes stale, and which a stable branch that no longer
    /// needs it makes superfluous.
    #[test]
    fn a_rejected_patch_gets_a_resolution_that_is_held_to_its_patch() {
        let tmp = tempfile::tempdir().unwrap();
        let new = OLD.replace("two", "two, moved on");
        let ws = project(tmp.path(), &[("2.41", OLD), ("2.42", &new)]);
        let (r41, r42) = (
            Release::parse("2.41").unwrap(),
            Release::parse("2.42").unwrap(),
        );
        let cache = tmp.path().join("cache");
        let stable = packaging(tmp.path(), OLD, &new);
        let run = |packaging: &Path, record| {
            check(&ws, r41, "2.41-1", packaging, &cache, record).unwrap()
        };

        let report = run(&stable, false);
        assert_eq!(report.series[0].used, Used::Proposed(r42));
        let problems = report.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].ends_with("`cargo xtask debian-stack --release 2.41 --record` writes it to patches/stable/2.41/"),
            "{problems:?}"
        );
        let dir = ws.patches_dir.join("stable/2.41");
        assert!(!dir.exists());

        let report = run(&stable, true);
        assert_eq!(report.series[0].used, Used::Recorded(r42));
        let name = report.series[0].applied.name.clone();
        let written = std::fs::read_to_string(dir.join(&name)).unwrap();
        assert!(written.contains("+TWO, moved on\n"), "{written}");
        let report = run(&stable, false);
        assert_eq!(report.series[0].used, Used::Resolution);
        assert!(report.problems().is_empty(), "{:?}", report.problems());
        assert!(report
            .render()
            .contains("the series applies, with the stable branch's resolutions"));

        // The series' patch changes: the resolution was made for another text.
        let own = ws.patches_dir.join("2.41").join(&name);
        let text = std::fs::read_to_string(&own).unwrap();
        std::fs::write(&own, text.replace("elf: Shout", "elf: Shout louder")).unwrap();
        let report = run(&stable, false);
        assert_eq!(report.series[0].used, Used::StaleResolution);
        assert!(report.problems()[0].contains("was made for another version of the series' patch"));
        std::fs::write(&own, &text).unwrap();

        // A stable branch that leaves the line alone takes the series' own patch again.
        let plain = packaging(tmp.path(), OLD, &OLD.replace("nine", "nine, fixed"));
        let report = run(&plain, false);
        assert_eq!(report.series[0].used, Used::OwnDespiteResolution);
        assert!(report.problems()[0].contains("as it is: remove patches/stable/2.41/"));

        // Nothing applies where the stable branch changed what every release's patch needs.
        std::fs::remove_dir_all(&dir).unwrap();
        let elsewhere = packaging(tmp.path(), OLD, &OLD.replace("two", "deux"));
        let report = run(&elsewhere, false);
        assert_eq!(report.series[0].used, Used::None);
        assert!(!report.series[0].applied.failed.is_empty());
        assert!(report.render().contains("DOES NOT APPLY"));
    }

    #[test]
    fn a_recorded_patch_names_the_blobs_of_the_stable_branch() {
        let text = "Subject: x\n---\ndiff --git a/a.c b/a.c\nindex 1111111..2222222 100644\n--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/n.c b/n.c\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/n.c\n";
        let id = |hex: &str| Some(Oid::from_str(&hex.repeat(40)[..40]).unwrap());
        let before = [("a.c".to_string(), id("a")), ("n.c".to_string(), None)];
        let after = [("a.c".to_string(), id("b")), ("n.c".to_string(), id("c"))];
        let made = with_index_lines(text, &before, &after);
        assert!(
            made.contains("index aaaaaaa..bbbbbbb 100644\n--- a/a.c"),
            "{made}"
        );
        assert!(
            made.contains("new file mode 100644\nindex 0000000..ccccccc\n"),
            "{made}"
        );
        assert_eq!(made.lines().count(), text.lines().count());
    }
}
