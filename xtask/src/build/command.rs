//! `cargo xtask build-glibc [SELECTION]`, `build-glibc list`, `build-glibc prune`.

use anyhow::Result;
use clap::Subcommand;

use super::{default_jobs, print_list, source, BuildCache, Builder, Layout};
use crate::cli::{self, Global, Selection};
use crate::util::paths;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub manage: Option<Manage>,
    #[command(flatten)]
    pub selection: Selection,
    /// Parallel make jobs [default: the number of CPUs].
    #[arg(long, value_parser = cli::at_least_one::<usize>)]
    pub jobs: Option<usize>,
    /// Print only the sysroot path(s) on stdout, after building them if needed.
    #[arg(long, conflicts_with = "print_key")]
    pub print_sysroot: bool,
    /// Print only the cache key of each selected build, one per line, and build nothing
    /// (what a CI engine's cache is keyed by).
    #[arg(long)]
    pub print_key: bool,
    /// Rebuild (incrementally) and republish even if the build is cached.
    #[arg(long)]
    pub rebuild: bool,
}

/// What else there is to do with the build cache.
#[derive(Subcommand)]
pub enum Manage {
    /// List the cached builds.
    List,
    /// Remove every cached build but the newest per release, target and flavour.
    Prune,
}

impl Args {
    pub fn run(self, global: &Global) -> Result<()> {
        let layout = Layout::from_env()?;
        let cache = BuildCache::new(&layout.builds);
        match self.manage {
            Some(Manage::List) => return print_list(&cache),
            Some(Manage::Prune) => {
                for entry in cache.prune()? {
                    outln!("removed {}", entry.dir.display());
                }
                return Ok(());
            }
            None => {}
        }
        // Fail before hours of `--release all` builds, not in the middle of them.
        for (release, _, flavour) in self.selection.iter() {
            source::series_for(&paths::patches_dir(), release, flavour)?;
        }
        let builder = Builder {
            layout,
            store: global.store.clone(),
            patches_dir: paths::patches_dir(),
            jobs: self.jobs.unwrap_or_else(default_jobs),
            rebuild: self.rebuild,
        };
        for (release, target, flavour) in self.selection.iter() {
            if self.print_key {
                outln!("{}", builder.key(release, target, flavour)?.0);
                continue;
            }
            let outcome = builder.ensure(release, target, flavour)?;
            let path = outcome.sysroot.path.display();
            if self.print_sysroot {
                outln!("{path}");
            } else {
                let how = if outcome.built { "built" } else { "cached" };
                outln!("glibc {release} {target} {flavour} ({how}): {path}");
            }
        }
        Ok(())
    }
}
