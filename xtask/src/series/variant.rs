//! Variants of a series (`patches/variants/<name>/<X.Y>/*.patch`): patches applied on top of
//! `patches/<X.Y>/` for comparisons, never proposed (see patches/variants/README.md).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{Patch, Series};
use model::Release;

/// `patches/variants/<variant>/<X.Y>/`.
pub(crate) fn dir(patches_dir: &Path, variant: &str, release: Release) -> PathBuf {
    patches_dir
        .join("variants")
        .join(variant)
        .join(release.version())
}

/// Appends the variant's patches, in name order, to `series` (the release's own), and names
/// them in its series text, so that they are part of the series' content id.
pub(crate) fn append(
    series: &mut Series,
    patches_dir: &Path,
    variant: &str,
    release: Release,
) -> Result<()> {
    let dir = dir(patches_dir, variant, release);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| {
            format!(
                "the {variant} variant has no patches for glibc {release} ({} is not readable)",
                dir.display()
            )
        })?
        .map(|entry| {
            entry
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .with_context(|| format!("cannot read {}", dir.display()))
        })
        .collect::<Result<_>>()?;
    names.retain(|name| name.ends_with(".patch"));
    names.sort();
    if names.is_empty() {
        bail!("{} holds no .patch file", dir.display());
    }
    series
        .series_text
        .push_str(&format!("# variant: {variant}\n"));
    for name in names {
        let path = dir.join(&name);
        // The rule of every file of patches/: a regular file, never a symlink.
        let text = super::read_own_patch(&path)?;
        series.series_text.push_str(&format!(
            "variants/{variant}/{}/{name}\n",
            release.version()
        ));
        series.patches.push(Patch { name, text });
    }
    Ok(())
}
