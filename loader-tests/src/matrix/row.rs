//! A simple scenario as data, and the one interpreter that runs them all.
//!
//! Paths and variable values are written with the contract's letters: `{C}` the cuda_compat
//! directory, `{T}` the driver (tegra) directory, `{U}` another fallback directory, `{A}` an
//! empty LD_LIBRARY_PATH directory, `{T32}` the directory of the ELFCLASS32 impostor, and
//! `{shims}` the directory of the shim libraries (see [`crate::layout::Layout`]).

use anyhow::{bail, Result};

use super::{seen, Observed};
use crate::fixtures::Role;
use crate::layout::Layout;
use crate::probe::Output;
use crate::root::Run;
use crate::root::{Ctx, Root};

/// A directory of a scenario root, by its role in the contract.
#[derive(Debug, Clone, Copy)]
pub enum Dir {
    /// C: the cuda_compat directory, in the DT_RUNPATH of the `*-runpath` probes.
    Compat,
    /// T: the Jetson driver directory.
    Tegra,
    /// S: glibc's libdir, a default system directory.
    Default,
    /// S: a directory in `/etc/ld.so.conf`: in ld.so.cache, not a default directory.
    Cached,
    /// The working directory of every run.
    Cwd,
    /// A directory below the working directory, by its name relative to it.
    InCwd(&'static str),
    /// A: an LD_LIBRARY_PATH directory without a copy.
    Empty,
    /// U: another fallback directory.
    Other,
    /// T32: where the ELFCLASS32 impostor goes.
    Tegra32,
    /// A path of its own.
    At(&'static str),
}

impl Dir {
    pub(crate) fn path(self, l: &Layout) -> String {
        match self {
            Dir::Compat => l.compat.clone(),
            Dir::Tegra => l.tegra.clone(),
            Dir::Default => l.libdir.clone(),
            Dir::Cached => l.cached.clone(),
            Dir::Cwd => l.cwd.clone(),
            Dir::InCwd(name) => format!("{}/{name}", l.cwd),
            Dir::Empty => l.empty.clone(),
            Dir::Other => l.other.clone(),
            Dir::Tegra32 => l.tegra32.clone(),
            Dir::At(path) => path.to_string(),
        }
    }
}

/// Something a scenario puts into its root before running.
#[derive(Debug, Clone, Copy)]
pub enum Put {
    /// The `libcuda.so.1` marker that reports this role.
    Cuda(Role, Dir),
    /// An ELFCLASS32 `libcuda.so.1`: the wrong class for the loader under test.
    Elf32(Dir),
    /// `libnvrm_mem.so` and `libnvrm_gpu.so`, which the compat `libcuda.so.1` dlopens.
    Nvrm(Dir),
    /// An empty directory.
    Mkdir(Dir),
    /// `/etc/ld.so.conf` listing these directories, and an ld.so.cache made from it by the
    /// sysroot's own ldconfig (which adds the default directories itself).
    Cache(&'static [Dir]),
    /// A copy of a probe at a path of its own.
    ProbeAt(&'static str, &'static str),
    /// The host's bash, to run the sysroot's `ldd` script (native targets only).
    HostBash,
}

/// The command a scenario runs.
#[derive(Debug, Clone, Copy)]
pub enum Cmd {
    /// A probe from the probes' directory, with its commands (`c-fixtures/probe.c`).
    Probe(&'static str, &'static [&'static str]),
    /// A program at a path of its own, with its arguments.
    Program(&'static str, &'static [&'static str]),
    /// The loader run as a command: its options, then a probe and the probe's commands.
    LdSo(
        &'static [&'static str],
        &'static str,
        &'static [&'static str],
    ),
    /// A listing of a probe's libraries.
    Listing(List, &'static str),
}

/// Two ways of listing a program's libraries: `ld.so --list PROG`, and what the `ldd` script
/// runs (`LD_TRACE_LOADED_OBJECTS=1 ld.so PROG`), besides the script itself. They differ:
/// `--list` stops at a missing library, `ldd` prints "not found".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Option,
    Ldd,
    /// The sysroot's `/usr/bin/ldd`, run by the host's bash copied into the root.
    Script,
}

/// A variable set for the run.
#[derive(Debug, Clone, Copy)]
pub struct EnvVar(pub &'static str, pub Value);

/// A variable's value.
#[derive(Debug, Clone, Copy)]
pub enum Value {
    /// Text with the contract's letters (`{T}`, ...) replaced by their paths.
    Text(&'static str),
    /// That many missing directories, then the directory.
    ManyMissing(usize, Dir),
    /// One missing directory whose name is that many bytes long, then the directory.
    LongMissing(usize, Dir),
}

/// `LD_FALLBACK_PATH=text`.
pub(super) const fn fb(text: &'static str) -> EnvVar {
    EnvVar("LD_FALLBACK_PATH", Value::Text(text))
}

/// `LD_LIBRARY_PATH=text`.
pub(super) const fn llp(text: &'static str) -> EnvVar {
    EnvVar("LD_LIBRARY_PATH", Value::Text(text))
}

/// How a run's output becomes the scenario's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Which `libcuda.so.1` the last load got, by role; or "not found", or what went wrong.
    Winner,
    /// What a listing says about `libcuda.so.1`.
    Listed,
    /// The winner, and where the compat copy found `libnvrm_mem.so` and `libnvrm_gpu.so`.
    NvrmPlaces,
    /// The first load's winner, and whether the second load got the same link map.
    SameMap,
    /// The winner, provided the environment the program sees still holds the variable as set
    /// (an ld.so option applies to one run and must not rewrite the environment).
    WinnerKeepsEnviron,
}

/// A simple scenario.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub put: &'static [Put],
    pub run: Cmd,
    pub env: &'static [EnvVar],
    pub look: Look,
}

impl Row {
    pub(crate) fn run(&self, cx: &Ctx) -> Result<Observed> {
        let l = cx.layout;
        let mut root = cx.root();
        for put in self.put {
            place(&mut root, *put, l);
        }
        let mut run = self.command(&root, l);
        let mut values = Vec::new();
        for EnvVar(name, value) in self.env {
            let value = value.render(l);
            run = run.env(name, &value);
            values.push((*name, value));
        }
        let out = run.output()?;
        match self.look {
            Look::Winner => seen(out.winner()),
            Look::Listed => seen(out.listed()),
            Look::NvrmPlaces => nvrm(&out, l),
            Look::SameMap => same_map(&out),
            Look::WinnerKeepsEnviron => {
                let Some((name, value)) = values.first() else {
                    bail!("WinnerKeepsEnviron needs a variable to check");
                };
                let environ = format!("env {name}={value}\n");
                if out.code == Some(0) && !out.stdout.contains(&environ) {
                    return seen(format!(
                        "{}; environ changed: {}",
                        out.winner(),
                        out.stdout.trim()
                    ));
                }
                seen(out.winner())
            }
        }
    }

    fn command<'r>(&self, root: &'r Root, l: &Layout) -> Run<'r> {
        let expand = |args: &[&str]| -> Vec<String> { args.iter().map(|a| expand(a, l)).collect() };
        let probe = |name: &str| format!("{}/{name}", l.bin);
        match self.run {
            Cmd::Probe(name, args) => root.probe(name).args_owned(expand(args)),
            Cmd::Program(path, args) => root.command(path).args_owned(expand(args)),
            Cmd::LdSo(options, name, args) => root
                .ld_so()
                .args_owned(expand(options))
                .arg(&probe(name))
                .args_owned(expand(args)),
            Cmd::Listing(List::Script, name) => root
                .command("/bin/bash")
                .args(&["/usr/bin/ldd", &probe(name)]),
            Cmd::Listing(List::Option, name) => root.ld_so().args(&["--list", &probe(name)]),
            Cmd::Listing(List::Ldd, name) => root
                .ld_so()
                .arg(&probe(name))
                .env("LD_TRACE_LOADED_OBJECTS", "1"),
        }
    }
}

fn place(root: &mut Root, put: Put, l: &Layout) {
    match put {
        Put::Cuda(role, dir) => root.cuda(role, &dir.path(l)),
        Put::Elf32(dir) => root.cuda32(&dir.path(l)),
        Put::Nvrm(dir) => root.nvrm(&dir.path(l)),
        Put::Mkdir(dir) => root.mkdir(&dir.path(l)),
        Put::Cache(dirs) => {
            let dirs: Vec<String> = dirs.iter().map(|d| d.path(l)).collect();
            let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
            root.ldconfig(&dirs)
        }
        Put::ProbeAt(name, path) => root.fixture(name, path),
        Put::HostBash => root.host_bash(),
    };
}

impl Value {
    pub(crate) fn render(self, l: &Layout) -> String {
        match self {
            Value::Text(text) => expand(text, l),
            Value::ManyMissing(count, then) => {
                let mut dirs: Vec<String> = (0..count).map(|i| format!("/nope/{i}")).collect();
                dirs.push(then.path(l));
                dirs.join(":")
            }
            Value::LongMissing(bytes, then) => format!("/{}:{}", "x".repeat(bytes), then.path(l)),
        }
    }
}

/// `text` with `{C}`, `{T}`, `{U}`, `{A}`, `{T32}` and `{shims}` replaced by their paths.
pub(super) fn expand(text: &str, l: &Layout) -> String {
    [
        ("{T32}", &l.tegra32),
        ("{C}", &l.compat),
        ("{T}", &l.tegra),
        ("{U}", &l.other),
        ("{A}", &l.empty),
        ("{shims}", &l.shims),
    ]
    .iter()
    .fold(text.to_string(), |text, (letter, path)| {
        text.replace(letter, path)
    })
}

fn nvrm(out: &Output, l: &Layout) -> Result<Observed> {
    let Some(load) = out.loads().pop().filter(|_| out.code == Some(0)) else {
        return seen(out.winner());
    };
    seen(format!(
        "{}; nvrm_mem={}; nvrm_gpu={}",
        out.name(&load),
        Output::nvrm_place(&load.nvrm_mem, &l.tegra),
        Output::nvrm_place(&load.nvrm_gpu, &l.tegra)
    ))
}

fn same_map(out: &Output) -> Result<Observed> {
    let loads = out.loads();
    if out.code != Some(0) || loads.len() != 2 {
        return seen(out.winner());
    }
    let same = if out.stdout.contains("same-map yes") {
        "the same map".to_string()
    } else {
        format!("a second copy: {}", out.name(&loads[1]))
    };
    seen(format!("{}, then {same}", out.name(&loads[0])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Target;

    fn layout() -> Layout {
        Layout::for_target(Target::X86_64, "/lib64", "/usr/lib64")
    }

    #[test]
    fn letters_expand_to_paths() {
        let l = layout();
        assert_eq!(expand(":{T}", &l), format!(":{}", l.tegra));
        assert_eq!(
            expand("{T32}:{T}", &l),
            format!("{}:{}", l.tegra32, l.tegra)
        );
        assert_eq!(expand("$ORIGIN/../fb", &l), "$ORIGIN/../fb");
    }

    #[test]
    fn generated_values() {
        let l = layout();
        let many = Value::ManyMissing(3, Dir::Tegra).render(&l);
        assert_eq!(many, format!("/nope/0:/nope/1:/nope/2:{}", l.tegra));
        let long = Value::LongMissing(10, Dir::Tegra).render(&l);
        assert_eq!(long, format!("/xxxxxxxxxx:{}", l.tegra));
    }
}
