//! `cargo xtask bench store`: how long an import of a release into a fresh store takes.

use std::time::Instant;

use anyhow::Result;

use crate::store::import::{debian, Source};
use crate::store::release::Release;
use crate::store::SourceStore;
use crate::util::paths;

pub fn run() -> Result<()> {
    let newest = Release::newest();
    let tarball = debian::fetch_orig(newest, &paths::downloads_dir()?)?;
    let scratch = crate::util::staging::tempdir_in(&paths::cache_dir()?, "bench")?;
    let fresh = SourceStore::open(&scratch.path().join("glibc.git"))?;
    let started = Instant::now();
    fresh.import(newest, &Source::Tarball(tarball.clone()))?;
    let import = started.elapsed();
    println!(
        "import of glibc {newest} from {} into a fresh store: {:.1} s (target < 60 s)",
        tarball.display(),
        import.as_secs_f64()
    );
    Ok(())
}
