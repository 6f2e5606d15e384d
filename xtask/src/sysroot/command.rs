//! `cargo xtask sysroot [SELECTION]`, `sysroot list`, `sysroot prune`.

use anyhow::Result;
use clap::Subcommand;

use model::Cell;

use super::{default_jobs, print_list, BuildCache, Builder};
use crate::cli::{self, Env, Selection};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
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
    /// Build nothing: compile again a sample of the objects each header kept by the last
    /// flavour switch of the selected trees left alone, and fail if one differs from the
    /// tree's (the cheap proof that the kept-header rule holds; see sysroot/declarations.rs).
    #[arg(long, value_name = "OBJECTS_PER_HEADER", num_args = 0..=1, default_missing_value = "8", conflicts_with_all = ["print_key", "print_sysroot", "rebuild"])]
    pub check_kept_headers: Option<usize>,
}

/// What else there is to do with the build cache.
#[derive(Subcommand)]
pub(crate) enum Manage {
    /// List the cached builds.
    List,
    /// Remove every cached build but the newest per release, target and flavour.
    Prune,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let builder = Builder {
            jobs: self.jobs.unwrap_or_else(default_jobs),
            rebuild: self.rebuild,
            ..Builder::new(env)
        };
        let layout = &builder.layout;
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
        if let Some(sample) = self.check_kept_headers {
            let mut cells: Vec<_> = self.selection.cells.iter().collect();
            cells.dedup();
            for Cell { release, target } in cells {
                let work = layout.work_dir(release, target);
                let _lock = work.lock()?;
                let report = super::spot_check::check(&work, &work.kept_headers(), sample.max(1))?;
                out!("glibc {release} {target}: {report}");
            }
            return Ok(());
        }
        // Fail before hours of `--release all` builds, not in the middle of them: a series
        // that is missing, or that `rebase-glibc --check` would refuse.
        for (cell, flavour) in self.selection.iter() {
            builder.series_for(cell.release, flavour)?;
            if !self.print_key {
                builder.guard_series(cell.release, flavour)?;
            }
        }
        for (Cell { release, target }, flavour) in self.selection.iter() {
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
