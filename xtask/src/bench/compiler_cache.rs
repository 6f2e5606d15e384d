//! `cargo xtask bench compiler-cache`: what compiling through ccache saves where the project
//! compiles glibc a second time from the same sources, beside the plain way, in one run:
//!
//! 1. the default configuration's build, through ccache, into an empty ccache (what a cold
//!    run costs with the cache: every compile a miss, and stored);
//! 2. the `--enable-hardcoded-path-in-tests` configuration's build of the same flavour,
//!    through that cache (its own tree, the same objects: hits);
//! 3. the same build as 2 without ccache, in another empty cache root: what it costs without
//!    the cache, and, as that configuration compiles the same objects as the default one, the
//!    plain figure for 1 too;
//!
//! and whether 2 and 3 installed the same programs (`sysroot::compare`, with each build's
//! directory spelled as the other's: that configuration writes it into the modules it installs).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use model::Flavour;

use super::build::{minutes, timed_build};
use crate::cli::{self, Env, OneRelease, OneTarget};
use crate::sysroot::compiler_cache::CCACHE;
use crate::sysroot::recipe::Configuration;
use crate::sysroot::{compare, default_jobs, Builder, Layout};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub release: OneRelease,
    #[command(flatten)]
    pub target: OneTarget,
    /// Parallel make jobs [default: the number of CPUs].
    #[arg(long, value_parser = cli::at_least_one::<usize>)]
    pub jobs: Option<usize>,
}

/// ccache's counters that say how a build went through it.
#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    hits: u64,
    misses: u64,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let release = self.release.release;
        let target = self.target.target;
        let jobs = self.jobs.unwrap_or_else(default_jobs);
        loader_tests::host::require(&[CCACHE])?;
        fs::create_dir_all(&env.cache)
            .with_context(|| format!("cannot create {}", env.cache.display()))?;
        let fresh = |what: &str| {
            tempfile::Builder::new()
                .prefix(&format!("bench-{what}-"))
                .tempdir_in(&env.cache)
                .with_context(|| format!("cannot create a fresh cache root for {what}"))
        };
        // Named alike in length: the hardcoded-path configuration writes its build directory
        // into modules it installs (a DT_RPATH), and the comparison below spells one root as
        // the other.
        let cached_root = fresh("ccache")?;
        let plain_root = fresh("direct")?;
        let builder = |root: &Path, compiler_cache: bool, configuration: Configuration| Builder {
            layout: Layout::under(root),
            jobs,
            compiler_cache,
            configuration,
            ..Builder::new(env)
        };
        let flavour = Flavour::Unpatched;
        let label = format!("glibc {release} {} {flavour}", target.name());
        let timed = |what: &str, builder: &Builder| -> Result<(Duration, PathBuf)> {
            diagln!("==== bench compiler-cache: {label}, {what}");
            timed_build(builder, release, target, flavour)
        };

        let layout = Layout::under(cached_root.path());
        let (first, _) = timed(
            "default configuration, through an empty ccache",
            &builder(cached_root.path(), true, Configuration::Default),
        )?;
        let after_first = counters(&layout.ccache)?;
        let (second, cached_sysroot) = timed(
            "--enable-hardcoded-path-in-tests, through the same ccache",
            &builder(
                cached_root.path(),
                true,
                Configuration::HardcodedPathInTests,
            ),
        )?;
        let after_second = counters(&layout.ccache)?;
        let (plain, plain_sysroot) = timed(
            "--enable-hardcoded-path-in-tests, without ccache",
            &builder(
                plain_root.path(),
                false,
                Configuration::HardcodedPathInTests,
            ),
        )?;
        let built_in = compare::BuiltIn::new(cached_root.path(), plain_root.path())?;
        let comparison =
            compare::compare_trees_built_in(&cached_sysroot, &plain_sysroot, Some(&built_in))?;

        let second_counters = Counters {
            hits: after_second.hits - after_first.hits,
            misses: after_second.misses - after_first.misses,
        };
        outln!(
            "{label} builds, make -j{jobs} (times exclude waiting for locks; each build configures, compiles and installs)"
        );
        let row = |what: &str, time: Duration, note: String| {
            outln!("  {what:<62} {:>9}  {note}", minutes(time));
        };
        row(
            "1. default configuration, through an empty ccache",
            first,
            format!(
                "{} = {:.2}x the build without ccache (3.)",
                describe(after_first),
                first.as_secs_f64() / plain.as_secs_f64()
            ),
        );
        row(
            "2. --enable-hardcoded-path-in-tests, through the same ccache",
            second,
            format!(
                "{} = {:.2}x the build without ccache (3.)",
                describe(second_counters),
                second.as_secs_f64() / plain.as_secs_f64()
            ),
        );
        row(
            "3. --enable-hardcoded-path-in-tests, without ccache",
            plain,
            "the plain way".into(),
        );
        outln!(
            "  1. and 2. together: {}; without ccache (3. twice): {}",
            minutes(first + second),
            minutes(plain * 2)
        );
        outln!(
            "identical output (2.'s sysroot vs 3.'s): {}\n  {}",
            if comparison.same_programs() {
                "same programs"
            } else {
                "DIFFERENT"
            },
            comparison.render(8)
        );
        if !comparison.same_programs() {
            bail!("the build through ccache and the build without it installed different programs");
        }
        Ok(())
    }
}

/// ccache's hit and miss counters for the cache in `dir`.
fn counters(dir: &Path) -> Result<Counters> {
    let out = Command::new(CCACHE.program)
        .arg("--print-stats")
        .env("CCACHE_DIR", dir)
        .output()
        .context("cannot run ccache --print-stats")?;
    if !out.status.success() {
        bail!(
            "ccache --print-stats failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(parse_counters(&String::from_utf8_lossy(&out.stdout)))
}

/// `--print-stats`' lines are `name<TAB>value`: hits are direct and preprocessed ones.
fn parse_counters(text: &str) -> Counters {
    let mut counters = Counters::default();
    for line in text.lines() {
        let Some((name, value)) = line.split_once('\t') else {
            continue;
        };
        let Ok(value) = value.trim().parse::<u64>() else {
            continue;
        };
        match name {
            "direct_cache_hit" | "preprocessed_cache_hit" => counters.hits += value,
            "cache_miss" => counters.misses += value,
            _ => {}
        }
    }
    counters
}

fn describe(counters: Counters) -> String {
    format!("{} hits, {} misses", counters.hits, counters.misses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_direct_and_preprocessed_ones() {
        let text = "cache_miss\t7\ndirect_cache_hit\t40\ndirect_cache_miss\t9\n\
                    preprocessed_cache_hit\t2\npreprocessed_cache_miss\t7\nstats_updated_timestamp\t0\n";
        let c = parse_counters(text);
        assert_eq!((c.hits, c.misses), (42, 7));
    }
}
