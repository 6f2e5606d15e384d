//! `cargo xtask bench suite`: glibc's `make check subdirs=elf` in the x86_64 tree (natively)
//! and in the aarch64 tree (under QEMU, through the private binfmt_misc `verify` uses), one
//! after the other in one run, timed: what the aarch64 suite adds to a cell, and to CI.

use std::time::Instant;

use anyhow::{Context, Result};
use model::Target;

use crate::cli::{Env, OneFlavour, OneRelease};
use crate::sysroot::Builder;
use crate::verify::emulated::Sandbox;
use crate::verify::testsuite::{self, Status};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub release: OneRelease,
    #[command(flatten)]
    pub flavour: OneFlavour,
}

impl Args {
    /// Each target's tree is built first when it is not (not timed), then its suite runs
    /// once; the time includes building the test programs a tree has not built yet.
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let (release, flavour) = (self.release.release, self.flavour.flavour);
        let builder = Builder::new(env);
        outln!(
            "glibc {release} ({flavour}): `make -k check subdirs=elf`, -j{}, one run per target",
            builder.jobs
        );
        let mut times = Vec::new();
        for target in Target::ALL {
            let sysroot = builder.ensure(release, target, flavour)?.sysroot;
            let sandbox = if target.is_native() {
                None
            } else {
                let loader = sysroot
                    .path
                    .join(target.loader_path().trim_start_matches('/'));
                Some(Sandbox::probe(target, &loader).with_context(|| {
                    format!("glibc's {target} tests cannot run on this machine")
                })?)
            };
            let tree = builder.tree(release, target, flavour)?;
            let started = Instant::now();
            let results = testsuite::run_check(&tree, "elf", builder.jobs, sandbox.as_ref())?;
            let seconds = started.elapsed().as_secs_f64();
            drop(tree);
            let count = |s: Status| results.values().filter(|r| r.status == s).count();
            // Counted as docs/support.md counts them, so that the parts add up to the whole
            // and the two pages agree: the tests glibc expects to fail are a part of their own.
            outln!(
                "  {target:<8} {:>6.1} s  {} tests: {} PASS, {} FAIL, {} UNSUPPORTED, {} XPASS or XFAIL ({})",
                seconds,
                results.len(),
                count(Status::Pass),
                count(Status::Fail) + count(Status::Error),
                count(Status::Unsupported),
                count(Status::Xpass) + count(Status::Xfail),
                sandbox.as_ref().map_or("natively", |s| s.runs.as_str())
            );
            times.push(seconds);
        }
        if let [native, emulated] = times[..] {
            outln!(
                "  aarch64 under QEMU / x86_64 natively: {:.2}x",
                emulated / native.max(0.001)
            );
        }
        outln!(
            "  load average afterwards: {}",
            std::fs::read_to_string("/proc/loadavg")
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        );
        Ok(())
    }
}
