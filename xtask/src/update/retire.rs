//! `cargo xtask retire-release X.Y`: the inverse of a new release's update. The release's
//! series, recorded resolutions and variants leave `patches/`, its cells leave the support
//! record (docs/support.json and the page rendered from it), its row leaves
//! data/releases.json, and every generated part that follows from the table is written
//! again. The store keeps the release (other checkouts may still want it).
//!
//! The row goes last: a run killed before it leaves a supported release without its series,
//! which `rebase-glibc --check` names, and the same command finishes the job; never a series
//! or a cell of a release the table no longer knows (a record with such a cell would not
//! read). Each directory leaves whole: it is renamed out of `patches/` first, then removed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use model::{supported, Release};

use crate::cli::{self, Env};
use crate::rebase::state;
use crate::series::{Workspace, RESOLUTIONS_DIR};
use crate::update::Regenerate;
use crate::util::{paths, release_table, staging};
use crate::verify::provenance::{Provenance, WrittenBy};
use crate::verify::support::SupportDoc;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The release to retire.
    #[arg(value_name = "X.Y", value_parser = cli::release())]
    pub release: Release,
}

impl Args {
    pub(crate) fn run(self, env: &Env, regenerate: Regenerate<'_>) -> Result<()> {
        let release = self.release;
        if supported().len() == 1 {
            bail!("glibc {release} is the only supported release: the project needs one");
        }
        let ws = Workspace::open(env)?;
        let _lock = ws.lock_release(release)?;
        if state::state_dir(&ws, release).join("state").exists() {
            bail!(
                "a rebase onto glibc {release} is stopped: give it up first with `cargo xtask update-release {release} --abort`"
            );
        }
        let root = paths::project_root();
        if let Some(record) = SupportDoc::read(&root)? {
            let provenance = Provenance::now(
                &root,
                WrittenBy::RetireRelease {
                    version: release.version().to_string(),
                },
            );
            let [record, page] = record.without(provenance, release).write(&root)?;
            outln!(
                "dropped glibc {release}'s cells from {} and {}",
                record.display(),
                page.display()
            );
        }
        for dir in release_dirs(&ws.patches_dir, release)? {
            remove_whole(&dir)?;
            outln!("removed {}", dir.display());
        }
        let table = release_table::read()?.without(release.version())?;
        release_table::write(&table)?;
        outln!(
            "removed glibc {release}'s row from {}",
            release_table::path().display()
        );
        out!("{}", regenerate(&root)?);
        outln!(
            "glibc {release} is retired; the newest release is {}. The store keeps it. Review and commit what changed \
             (`git status`); the pages' prose about it is yours to read again.",
            model::Release::newest()
        );
        Ok(())
    }
}

/// Every directory of `patches/` that belongs to `release`: its series, its recorded
/// resolutions, its stable-branch resolutions and its variants, those that exist.
fn release_dirs(patches: &Path, release: Release) -> Result<Vec<PathBuf>> {
    let version = release.version();
    let mut dirs = vec![
        patches.join(version),
        patches.join(RESOLUTIONS_DIR).join(version),
        patches.join(crate::series::STABLE_DIR).join(version),
    ];
    let variants = patches.join("variants");
    if let Some(entries) = paths::entries_if_exists(&variants)? {
        let mut named: Vec<PathBuf> = entries
            .into_iter()
            .filter(|e| e.path().is_dir())
            .map(|e| e.path().join(version))
            .collect();
        named.sort();
        dirs.extend(named);
    }
    Ok(dirs.into_iter().filter(|d| d.exists()).collect())
}

/// Renames `dir` out of its parent (one step: it is there whole or gone), then removes it.
fn remove_whole(dir: &Path) -> Result<()> {
    let parent = dir
        .parent()
        .with_context(|| format!("{} has no parent", dir.display()))?;
    let scratch = staging::tempdir_in(parent, "retired")?;
    let away = scratch.path().join("dir");
    std::fs::rename(dir, &away)
        .with_context(|| format!("cannot move {} out of the way", dir.display()))?;
    scratch
        .close()
        .with_context(|| format!("cannot remove the retired {}", dir.display()))
}
