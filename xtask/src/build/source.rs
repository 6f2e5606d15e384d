//! The sources a build starts from: a release from the source store, plus the patch series.

use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::release::Release;

use standin::{Series, SourceStore};

/// A resolved build input: which tree and which series, ready to be written out.
pub struct BuildSource {
    store: SourceStore,
    release: Release,
    /// The git tree id of the release (pinned, or the store commit's tree).
    pub tree_id: String,
    pub series: Option<Series>,
}

impl BuildSource {
    /// Imports the release into the store if needed.
    pub fn resolve(
        store_flag: Option<&Path>,
        release: Release,
        series: Option<Series>,
    ) -> Result<BuildSource> {
        let store = SourceStore::open_default(store_flag)?;
        let commit = store.ensure_release(release)?;
        let tree_id = if release.tree.is_empty() {
            store.tree_id(commit)?
        } else {
            release.tree.to_string()
        };
        Ok(BuildSource {
            store,
            release,
            tree_id,
            series,
        })
    }

    pub fn series_id(&self) -> Option<String> {
        self.series.as_ref().map(Series::content_id)
    }

    /// Writes the release with the series applied into the empty directory `dest`.
    pub fn export(&self, dest: &Path) -> Result<()> {
        self.store
            .export_tree(self.release, self.series.as_ref(), dest)
            .with_context(|| format!("cannot write the glibc {} sources", self.release))
    }
}

/// `patches/<X.Y>/`, or an error that says how to make it.
pub fn load_series(patches_dir: &Path, release: Release) -> Result<Series> {
    let dir = patches_dir.join(release.version);
    if !dir.is_dir() {
        bail!(
            "glibc {release} has no patch series ({} does not exist); create it with \
             `cargo xtask rebase-glibc --onto {release}`, or build with --unpatched",
            dir.display()
        );
    }
    let series = Series::load(&dir)
        .with_context(|| format!("cannot load the patch series {}", dir.display()))?;
    if series.base != release {
        bail!(
            "{} is based on glibc {}, not {release}",
            dir.display(),
            series.base
        );
    }
    Ok(series)
}

/// TEMPORARY stand-in for the store helper's `store::SourceStore` / `series::Series`, with the
/// same signatures; removed when wip/store lands.
mod standin {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use anyhow::{bail, Context, Result};

    use crate::release::Release;

    pub struct SourceStore;

    pub struct Series {
        pub base: Release,
        pub patches: Vec<PathBuf>,
    }

    impl SourceStore {
        pub fn open_default(_flag: Option<&Path>) -> Result<SourceStore> {
            Ok(SourceStore)
        }
        pub fn ensure_release(&self, release: Release) -> Result<git2::Oid> {
            if release.version != "2.44" {
                bail!("stand-in store has only 2.44");
            }
            Ok(git2::Oid::zero())
        }
        pub fn tree_id(&self, _commit: git2::Oid) -> Result<String> {
            Ok("standin-2.44".into())
        }
        pub fn export_tree(
            &self,
            _release: Release,
            series: Option<&Series>,
            dest: &Path,
        ) -> Result<()> {
            let status = Command::new("cp")
                .args([
                    "-a",
                    "/work/scratch/src/glibc-2.44/.",
                    &dest.to_string_lossy(),
                ])
                .status()?;
            if !status.success() {
                bail!("cp failed");
            }
            for patch in series.map(|s| s.patches.as_slice()).unwrap_or_default() {
                let status = Command::new("patch")
                    .args(["-s", "-p1", "-d", &dest.to_string_lossy(), "-i"])
                    .arg(patch)
                    .status()?;
                if !status.success() {
                    bail!("patch {} failed", patch.display());
                }
            }
            Ok(())
        }
    }

    impl Series {
        pub fn load(dir: &Path) -> Result<Series> {
            let mut patches: Vec<PathBuf> = std::fs::read_dir(dir)?
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<_>>()?;
            patches.retain(|p| p.extension().is_some_and(|e| e == "patch"));
            patches.sort();
            let version = dir.file_name().context("no name")?.to_string_lossy();
            Ok(Series {
                base: Release::parse(&version)?,
                patches,
            })
        }
        pub fn content_id(&self) -> String {
            let mut all = Vec::new();
            for p in &self.patches {
                all.extend(std::fs::read(p).unwrap_or_default());
            }
            git2::Oid::hash_object(git2::ObjectType::Blob, &all)
                .unwrap()
                .to_string()
        }
    }
}
