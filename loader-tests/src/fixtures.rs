//! The C fixtures of `c-fixtures/`, compiled against the glibc under test and cached per
//! sysroot: marker builds of `libcuda.so.1`, `libnvrm_*` markers, probes, shims.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::host::{tools, Toolchain};
use crate::layout::Layout;
use model::Sysroot;

/// Bump when the build recipe below changes in a way the sources hash cannot see.
const RECIPE: &str = "fixtures-v1";

const SOURCES: &[&str] = &[
    "marker.h",
    "libcuda.c",
    "libcuda32.c",
    "libnvrm.c",
    "libshim.c",
    "libcudart.c",
    "audit.c",
    "probe.c",
    "saxpy.c",
    "cudart-probe.c",
];

/// The `libcuda.so.1` markers, one per role, each with the version it reports: stated once,
/// so that a role has its build, and a scenario can place (or expect) only a role that has one.
macro_rules! roles {
    ($($(#[$doc:meta])* $role:ident = $name:literal, $version:literal;)+) => {
        /// A `libcuda.so.1` copy a scenario places, by the role it reports (`role=` in the
        /// probe's records).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Role {
            $($(#[$doc])* $role,)+
        }

        impl Role {
            /// Every role, in the order the fixtures are built.
            pub const ALL: &[Role] = &[$(Role::$role),+];

            /// What its marker reports, and names its build by.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Role::$role => $name,)+
                }
            }

            /// The driver version its marker reports.
            pub const fn version(self) -> u32 {
                match self {
                    $(Role::$role => $version,)+
                }
            }
        }
    };
}

roles! {
    /// The newer driver in the cuda_compat directory (C): it loads `libnvrm_*` like the
    /// Jetson cuda_compat driver, the others do not.
    Compat = "compat", 12020;
    /// The board's older driver in the tegra directory (T).
    Driver = "driver", 11040;
    /// A copy in a default system directory.
    System = "system", 10010;
    /// A copy in a directory of ld.so.cache.
    Cache = "cache", 10020;
    /// A copy reached through the working directory.
    Cwd = "cwd", 10030;
    /// A copy in a directory named by `$ORIGIN`.
    Origin = "origin", 10040;
    /// A copy in another fallback directory (U).
    Other = "other", 10050;
    /// A copy in a directory named by `$LIB` or `$PLATFORM`.
    Dst = "dst", 10060;
}

impl Role {
    /// The role `name` names, if any.
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.iter().copied().find(|role| role.name() == name)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A directory of compiled fixtures for one sysroot.
#[derive(Debug, Clone)]
pub struct Fixtures {
    pub dir: PathBuf,
}

impl Fixtures {
    /// The `libcuda.so.1` build reporting `role`.
    pub(crate) fn libcuda(&self, role: Role) -> PathBuf {
        self.dir.join(format!("libcuda-{role}.so.1"))
    }

    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Compiles the fixtures for `sysroot` into `cache/fixtures/<key>`, unless that exists.
    pub(crate) fn ensure(sysroot: &Sysroot, layout: &Layout, cache: &Path) -> Result<Fixtures> {
        ensure_set(
            FixtureSet {
                prefix: "",
                recipe: RECIPE,
                sources: SOURCES,
                build: &|c: &Compiler| c.build_all(layout),
            },
            sysroot,
            layout,
            cache,
        )
    }
}

/// A set of fixtures compiled together and cached under one key: the matrix's, or the
/// Jetson replay's (`crate::replay::fixtures`).
pub(crate) struct FixtureSet<'a> {
    /// Starts the cache directory's name (`""` for the matrix's set).
    pub prefix: &'a str,
    /// Bump when the recipe changes in a way the sources hash cannot see.
    pub recipe: &'a str,
    /// Files of `c-fixtures/` the set is made from (all go into the key).
    pub sources: &'a [&'a str],
    pub build: &'a dyn Fn(&Compiler) -> Result<()>,
}

/// Compiles `set` for `sysroot` into `cache/fixtures/<prefix><key>`, unless that exists.
pub(crate) fn ensure_set(
    set: FixtureSet<'_>,
    sysroot: &Sysroot,
    layout: &Layout,
    cache: &Path,
) -> Result<Fixtures> {
    let sources = sources_dir();
    let key = cache_key(sysroot, &sources, set.recipe, set.sources)?;
    let all = cache.join("fixtures");
    let dir = all.join(format!(
        "{}{}-{}-{}-{key:016x}",
        set.prefix, sysroot.release, sysroot.target, sysroot.flavour
    ));
    if dir.join(".complete").exists() {
        return Ok(Fixtures { dir });
    }
    fs::create_dir_all(&all).with_context(|| format!("cannot create {}", all.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&all)
        .context("cannot create a staging directory for fixtures")?;
    let compiler = Compiler::new(sysroot, layout, &sources, staging.path())?;
    (set.build)(&compiler).with_context(|| {
        format!(
            "cannot compile the c-fixtures against {}",
            sysroot.path.display()
        )
    })?;
    fs::write(staging.path().join(".complete"), set.recipe)
        .context("cannot mark the fixtures complete")?;
    let staged = staging.keep();
    if let Err(err) = fs::rename(&staged, &dir) {
        let _ = fs::remove_dir_all(&staged);
        // Another process published the same key first: theirs is as good as ours.
        if !dir.join(".complete").exists() {
            return Err(err).with_context(|| format!("cannot publish {}", dir.display()));
        }
    }
    Ok(Fixtures { dir })
}

/// Compiles `source` of `c-fixtures/` against `sysroot`'s glibc into `out/name`, with the
/// flags the fixtures are compiled with and `flags`, `link` added: for a tool that builds its
/// own variant of a fixture (the fuzzer's probe, with placeholders in its dynamic section).
pub fn compile_variant(
    sysroot: &Sysroot,
    layout: &Layout,
    out: &Path,
    name: &str,
    source: &str,
    flags: &[String],
    link: &[String],
) -> Result<()> {
    let sources = sources_dir();
    Compiler::new(sysroot, layout, &sources, out)?.compile(name, source, flags, link)
}

/// `c-fixtures/` of the checkout.
pub fn sources_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("loader-tests lives one level below the workspace root")
        .join("c-fixtures")
}

fn cache_key(sysroot: &Sysroot, sources: &Path, recipe: &str, files: &[&str]) -> Result<u64> {
    let mut hash = Fnv::new();
    hash.add(recipe.as_bytes());
    for role in Role::ALL {
        hash.add(role.name().as_bytes());
        hash.add(&role.version().to_le_bytes());
    }
    hash.add(sysroot.target.name().as_bytes());
    hash.add(sysroot.path.as_os_str().as_encoded_bytes());
    // A rebuilt sysroot at the same path must not reuse fixtures linked against the old one.
    let libc = sysroot.path.join("usr/include/gnu/libc-version.h");
    for probe in [
        &libc,
        &sysroot
            .path
            .join(sysroot.target.loader_path().trim_start_matches('/')),
    ] {
        let meta = fs::metadata(probe)
            .with_context(|| format!("{} is not an installed glibc", sysroot.path.display()))?;
        hash.add(&meta.len().to_le_bytes());
        if let Ok(modified) = meta.modified() {
            if let Ok(since) = modified.duration_since(std::time::UNIX_EPOCH) {
                hash.add(&since.as_nanos().to_le_bytes());
            }
        }
    }
    // A header a listed file includes is part of what it compiles to, listed or not.
    let mut headers: Vec<String> = Vec::new();
    for name in files {
        let path = sources.join(name);
        let text = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        hash.add(name.as_bytes());
        hash.add(&text);
        headers.extend(local_includes(&String::from_utf8_lossy(&text)));
    }
    headers.sort();
    headers.dedup();
    headers.retain(|header| !files.contains(&header.as_str()));
    for name in &headers {
        let path = sources.join(name);
        let text = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        hash.add(name.as_bytes());
        hash.add(&text);
    }
    Ok(hash.0)
}

/// The files a C source includes from its own directory (`#include "name"`).
fn local_includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('#')?.trim_start();
            let quoted = rest
                .strip_prefix("include")?
                .trim_start()
                .strip_prefix('"')?;
            Some(quoted.split('"').next()?.to_string())
        })
        .collect()
}

/// FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for b in bytes.iter().chain(&[0xff]) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Compiles fixtures against the glibc under test, into one output directory.
pub(crate) struct Compiler<'a> {
    sysroot: &'a Sysroot,
    layout: &'a Layout,
    sources: &'a Path,
    out: &'a Path,
    cc: &'static str,
    /// Kernel headers (`linux/`, `asm/`) the glibc headers include; a glibc install has none.
    kernel_headers: &'static [&'static str],
}

impl<'a> Compiler<'a> {
    fn new(
        sysroot: &'a Sysroot,
        layout: &'a Layout,
        sources: &'a Path,
        out: &'a Path,
    ) -> Result<Compiler<'a>> {
        let toolchain = Toolchain::for_target(sysroot.target);
        toolchain.require()?;
        // The impostor is built with the host compiler.
        crate::host::require(&[tools::GCC])?;
        Ok(Compiler {
            sysroot,
            layout,
            sources,
            out,
            cc: toolchain.cc.program,
            kernel_headers: toolchain.kernel_headers,
        })
    }

    /// Where the compiled files go (to link later fixtures against earlier ones).
    pub(crate) fn out(&self) -> &Path {
        self.out
    }

    fn build_all(&self, layout: &Layout) -> Result<()> {
        for &role in Role::ALL {
            let mut defines = vec![
                format!("-DROLE=\"{role}\""),
                format!("-DROLE_VERSION={}", role.version()),
            ];
            if role == Role::Compat {
                defines.push("-DLOAD_NVRM".into());
            }
            self.shared(
                &format!("libcuda-{role}.so.1"),
                "libcuda.c",
                "libcuda.so.1",
                &defines,
                &[],
            )?;
        }
        for name in ["libnvrm_mem.so", "libnvrm_gpu.so"] {
            self.shared(name, "libnvrm.c", name, &["-DROLE=\"tegra\"".into()], &[])?;
        }
        self.impostor()?;
        let compat = layout.compat.as_str();
        self.shared(
            "libshim-plain.so",
            "libshim.c",
            "libshim-plain.so",
            &[],
            &[],
        )?;
        self.shared(
            "libshim-runpath.so",
            "libshim.c",
            "libshim-runpath.so",
            &[],
            &[runpath(compat)],
        )?;
        self.shared("libaudit.so", "audit.c", "libaudit.so", &[], &[])?;
        self.shared(
            "libcudart.so.12",
            "libcudart.c",
            "libcudart.so.12",
            &[],
            &[runpath(&layout.nix_compat)],
        )?;

        let needed = ["-DNEEDED".to_string()];
        let link_cuda = [
            "-L".to_string(),
            self.out.display().to_string(),
            "-l:libcuda-driver.so.1".to_string(),
        ];
        let nodeflib = ["-Wl,-z,nodefaultlib".to_string(), runpath(&layout.slibdir)];
        self.program("probe", &[], &[])?;
        self.compile("cudart-probe", "cudart-probe.c", &[], &[])?;
        self.program("probe-runpath", &[], &[runpath(compat)])?;
        self.program("probe-nodeflib", &[], &nodeflib)?;
        self.program("probe-static", &[], &["-static".into()])?;
        self.program("needed", &needed, &link_cuda)?;
        self.program(
            "needed-runpath",
            &needed,
            &[&link_cuda[..], &[runpath(compat)]].concat(),
        )?;
        self.program(
            "needed-rpath",
            &needed,
            &[
                &link_cuda[..],
                &[format!("-Wl,--disable-new-dtags,-rpath,{compat}")],
            ]
            .concat(),
        )?;
        self.program(
            "needed-nodeflib",
            &needed,
            &[&link_cuda[..], &nodeflib[..]].concat(),
        )?;
        self.compile(
            "saxpy",
            "saxpy.c",
            &[],
            &[
                "-L".into(),
                self.out.display().to_string(),
                "-l:libcudart.so.12".into(),
                runpath(&layout.nix_cudart),
            ],
        )?;
        // The link above found libcuda as libcuda-driver.so.1; the DT_NEEDED entry is the
        // SONAME, which is what the scenarios are about.
        Ok(())
    }

    fn program(&self, name: &str, defines: &[String], link: &[String]) -> Result<()> {
        self.compile(name, "probe.c", defines, link)
    }

    pub(crate) fn shared(
        &self,
        name: &str,
        source: &str,
        soname: &str,
        defines: &[String],
        link: &[String],
    ) -> Result<()> {
        let mut flags = vec![
            "-shared".to_string(),
            "-fPIC".to_string(),
            format!("-Wl,-soname,{soname}"),
        ];
        flags.extend_from_slice(defines);
        self.compile(name, source, &flags, link)
    }

    /// Compiles `source` into `name` (which may name a subdirectory of the output).
    pub(crate) fn compile(
        &self,
        name: &str,
        source: &str,
        flags: &[String],
        link: &[String],
    ) -> Result<()> {
        let output = self.out.join(name);
        if let Some(dir) = output.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        // `--sysroot` alone is not enough with Debian's gcc: it still takes crt files and
        // libc.so from the host's multiarch directories. -B and -L point it at the sysroot.
        let root = self.sysroot.path.display();
        let libdir = format!("{root}{}", self.layout.libdir);
        let slibdir = format!("{root}{}", self.layout.slibdir);
        let mut cmd = Command::new(self.cc);
        cmd.arg(format!("--sysroot={root}"))
            .arg(format!("-B{libdir}/"))
            .arg(format!("-L{libdir}"))
            .arg(format!("-L{slibdir}"))
            .arg(format!("-Wl,-rpath-link,{slibdir}"))
            .args(["-O2", "-g0", "-Wall", "-Werror"])
            .arg("-I")
            .arg(self.sources);
        for dir in self.kernel_headers {
            cmd.arg("-idirafter").arg(dir);
        }
        cmd.args(flags)
            .arg("-o")
            .arg(&output)
            .arg(self.sources.join(source))
            .args(link)
            .arg(format!(
                "-Wl,--dynamic-linker={}",
                self.sysroot.target.loader_path()
            ));
        run(&mut cmd)
    }

    /// An ELFCLASS32 `libcuda.so.1`: the host gcc with `-m32 -nostdlib` needs no 32-bit libc,
    /// and a 32-bit i386 object is the wrong class for both x86_64 and aarch64 loaders.
    fn impostor(&self) -> Result<()> {
        let mut cmd = Command::new(tools::GCC.program);
        cmd.args(["-m32", "-nostdlib", "-shared", "-fPIC", "-O2"])
            .arg("-Wl,-soname,libcuda.so.1")
            .arg("-o")
            .arg(self.out.join("libcuda32.so.1"))
            .arg(self.sources.join("libcuda32.c"));
        run(&mut cmd)
    }
}

fn runpath(dirs: &str) -> String {
    format!("-Wl,--enable-new-dtags,-rpath,{dirs}")
}

fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_includes_are_the_quoted_ones() {
        let text = "#define _GNU_SOURCE\n#include <link.h>\n#include \"jetson.h\"\n  # include \"loaded.h\" /* why */\n/* #include <x.h> */\n";
        assert_eq!(local_includes(text), ["jetson.h", "loaded.h"]);
    }
}
