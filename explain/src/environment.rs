//! The environment the program is started with, as far as its loader reads it: explain's
//! own (as a shell started from here would pass it on), unless `--ignore-env`; the options
//! (`--library-path`, ...) over it; then what a wrapper script exports, and what nix-ld's
//! shim makes of `NIX_LD_LIBRARY_PATH`. Every variable keeps where its value came from, and
//! the explanation's header says it.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use loader_model::{Bytes, Setting};
use model::Target;

/// The variables the loader reads (`elf/rtld.c`, and the series' `LD_FALLBACK_PATH`).
pub const LOADER_VARIABLES: [&str; 3] = ["LD_LIBRARY_PATH", "LD_FALLBACK_PATH", "LD_PRELOAD"];

/// One variable: its value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Var {
    pub value: Bytes,
    /// Where the value came from, as the header says it: `the environment`,
    /// `--library-path`, `the wrapper /nix/store/...-app/bin/app`.
    pub from: String,
    /// Passed on to a program the shell starts (a variable from the environment is; one a
    /// script sets is once it is exported).
    pub exported: bool,
}

/// The environment, by name.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    vars: BTreeMap<Bytes, Var>,
    /// Said in the header: the environment ignored, directories left out.
    pub notes: Vec<String>,
}

impl Environment {
    /// This process's environment, every variable.
    pub fn of_process() -> Environment {
        Environment::from_vars(std::env::vars_os())
    }

    /// An environment of `vars`, each said to come from the environment.
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Environment {
        let vars = vars
            .into_iter()
            .map(|(name, value)| {
                (
                    Bytes::from(name),
                    Var {
                        value: Bytes::from(value),
                        from: "the environment".into(),
                        exported: true,
                    },
                )
            })
            .collect();
        Environment {
            vars,
            notes: Vec::new(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Var> {
        self.vars.get(&Bytes::from(name))
    }

    /// The value of `name`, when it is set and passed on to the program.
    pub fn exported(&self, name: &str) -> Option<&Var> {
        self.get(name).filter(|var| var.exported)
    }

    /// Sets `name` (exported), said to come `from`.
    pub fn set(&mut self, name: &str, value: Bytes, from: &str) {
        self.vars.insert(
            Bytes::from(name),
            Var {
                value,
                from: from.into(),
                exported: true,
            },
        );
    }

    pub(crate) fn var_mut(&mut self, name: &[u8]) -> Option<&mut Var> {
        self.vars.get_mut(name)
    }

    pub(crate) fn lookup(&self, name: &[u8]) -> Option<&Var> {
        self.vars.get(name)
    }

    pub(crate) fn insert(&mut self, name: &[u8], var: Var) {
        self.vars.insert(Bytes::from(name), var);
    }

    pub fn unset(&mut self, name: &[u8]) {
        self.vars.remove(name);
    }

    /// `LD_LIBRARY_PATH` without the directories `cargo run` (and rustup's proxy before
    /// it) put in front of the user's own: everything up to the first directory that lies
    /// neither under `ours` (the directory of the running program, the cargo target
    /// directory's profile) nor under `toolchain` (the toolchain cargo runs from). `cargo
    /// xtask explain` starts under cargo; the user's shell never had them.
    pub fn without_cargo_directories(mut self, ours: &OsStr, toolchain: Option<&OsStr>) -> Self {
        let Some(var) = self.vars.get_mut(&Bytes::from("LD_LIBRARY_PATH")) else {
            return self;
        };
        let under = |dir: &[u8], base: &OsStr| {
            let base = base.as_bytes();
            !base.is_empty()
                && dir.starts_with(base)
                && matches!(dir.get(base.len()), None | Some(b'/'))
        };
        let entries: Vec<&[u8]> = var.value.split(|&b| b == b':').collect();
        let cargo = entries
            .iter()
            .take_while(|dir| under(dir, ours) || toolchain.is_some_and(|t| under(dir, t)))
            .count();
        if cargo == 0 {
            return self;
        }
        let kept = entries[cargo..].join(&b':');
        self.notes.push(format!(
            "LD_LIBRARY_PATH: the {cargo} director{} cargo adds to run this command {} left out",
            if cargo == 1 { "y" } else { "ies" },
            if cargo == 1 { "is" } else { "are" },
        ));
        if kept.is_empty() && cargo == entries.len() {
            self.vars.remove(&Bytes::from("LD_LIBRARY_PATH"));
        } else {
            var.value = Bytes::from(kept);
        }
        self
    }

    /// The loader's variables as the explanation's header says them.
    pub fn settings(&self, names: &[&str]) -> Vec<Setting> {
        names
            .iter()
            .filter_map(|name| {
                self.exported(name).map(|var| Setting {
                    name: name.to_string(),
                    value: var.value.clone(),
                    from: var.from.clone(),
                })
            })
            .collect()
    }
}

/// The name nix-ld gives a system in its system-specific variables (`NIX_LD_x86_64_linux`):
/// the Nix system with `-` made `_` (nix-community/nix-ld, `build.rs`).
fn nix_system(target: Target) -> &'static str {
    match target {
        Target::X86_64 => "x86_64_linux",
        Target::Aarch64 => "aarch64_linux",
    }
}

/// nix-ld's defaults, when neither variable is set (`src/main.rs`: `DEFAULT_NIX_LD`, which
/// nixpkgs' build leaves as it is, and `DEFAULT_NIX_LD_LIBRARY_PATH`).
const DEFAULT_NIX_LD: &str = "/run/current-system/sw/share/nix-ld/lib/ld.so";
const DEFAULT_NIX_LD_LIBRARY_PATH: &str = "/run/current-system/sw/share/nix-ld/lib";

/// What nix-ld's shim does before it hands the program to a loader
/// (nix-community/nix-ld at 588fa76375f9040012404a55c7f0388d3efb354d, `src/main.rs`):
/// the loader is `NIX_LD_<system>`, else `NIX_LD`, else its default (an empty value counts
/// as unset); `LD_LIBRARY_PATH` becomes `$LD_LIBRARY_PATH:$NIX_LD_LIBRARY_PATH` when set (no
/// `:` added after an empty value or one ending in `:`), else `NIX_LD_LIBRARY_PATH` renamed,
/// else the default directory; `NIX_LD_LIBRARY_PATH_<system>` wins over the plain one. The
/// loader's path, and who named it.
pub fn nix_ld(env: &mut Environment, target: Target) -> (Bytes, String) {
    let system = nix_system(target);
    let pick = |env: &Environment, specific: &str, plain: &str| {
        env.exported(specific)
            .map(|var| (specific.to_string(), var.clone()))
            .or_else(|| {
                env.exported(plain)
                    .map(|var| (plain.to_string(), var.clone()))
            })
    };
    let loader = match pick(env, &format!("NIX_LD_{system}"), "NIX_LD") {
        Some((name, var)) if !var.value.is_empty() => (var.value, format!("{name}, {}", var.from)),
        Some((name, _)) => (
            Bytes::from(DEFAULT_NIX_LD),
            format!("nix-ld's default: {name} is empty"),
        ),
        None => (
            Bytes::from(DEFAULT_NIX_LD),
            "nix-ld's default: NIX_LD is not set".into(),
        ),
    };
    let nix_path = pick(
        env,
        &format!("NIX_LD_LIBRARY_PATH_{system}"),
        "NIX_LD_LIBRARY_PATH",
    );
    match (env.exported("LD_LIBRARY_PATH").cloned(), nix_path) {
        (Some(head), tail) => {
            let (tail, said) = match tail {
                Some((name, var)) => (var.value, name),
                None => (
                    Bytes::from(DEFAULT_NIX_LD_LIBRARY_PATH),
                    "nix-ld's default directory".to_string(),
                ),
            };
            let sep: &[u8] = if head.value.is_empty() || head.value.ends_with(b":") {
                b""
            } else {
                b":"
            };
            env.set(
                "LD_LIBRARY_PATH",
                head.value.join(&[sep, &tail]),
                &format!("{}, then {said} appended by nix-ld's shim", head.from),
            );
        }
        (None, Some((name, var))) => env.set(
            "LD_LIBRARY_PATH",
            var.value,
            &format!(
                "{name} ({}), made LD_LIBRARY_PATH by nix-ld's shim",
                var.from
            ),
        ),
        (None, None) => env.set(
            "LD_LIBRARY_PATH",
            Bytes::from(DEFAULT_NIX_LD_LIBRARY_PATH),
            "nix-ld's shim: its default directory (NIX_LD_LIBRARY_PATH is not set)",
        ),
    }
    loader
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Environment {
        Environment::from_vars(vars.iter().map(|(n, v)| (n.into(), v.into())))
    }

    fn library_path(env: &Environment) -> Option<String> {
        env.get("LD_LIBRARY_PATH")
            .map(|var| var.value.to_str().unwrap().to_string())
    }

    /// nix-ld's rules, one case each, as `src/main.rs` writes them.
    #[test]
    fn nix_ld_picks_its_loader_and_library_path_as_its_source_does() {
        let x86 = Target::X86_64;
        // Nothing set: the defaults.
        let mut e = env(&[]);
        let (loader, _) = nix_ld(&mut e, x86);
        assert_eq!(loader, DEFAULT_NIX_LD);
        assert_eq!(
            library_path(&e).as_deref(),
            Some(DEFAULT_NIX_LD_LIBRARY_PATH)
        );
        // The system-specific variables win; NIX_LD_LIBRARY_PATH is renamed.
        let mut e = env(&[
            ("NIX_LD", "/plain/ld.so"),
            ("NIX_LD_x86_64_linux", "/specific/ld.so"),
            ("NIX_LD_LIBRARY_PATH", "/nix/lib"),
        ]);
        assert_eq!(nix_ld(&mut e, x86).0, "/specific/ld.so");
        assert_eq!(library_path(&e).as_deref(), Some("/nix/lib"));
        // The other system's variable is not this one's.
        let mut e = env(&[("NIX_LD", "/plain/ld.so"), ("NIX_LD_aarch64_linux", "/arm")]);
        assert_eq!(nix_ld(&mut e, x86).0, "/plain/ld.so");
        // An empty NIX_LD is the default.
        let mut e = env(&[("NIX_LD", "")]);
        assert_eq!(nix_ld(&mut e, x86).0, DEFAULT_NIX_LD);
        // LD_LIBRARY_PATH set: NIX_LD_LIBRARY_PATH appended, with one `:`.
        let mut e = env(&[("LD_LIBRARY_PATH", "/a"), ("NIX_LD_LIBRARY_PATH", "/n")]);
        nix_ld(&mut e, x86);
        assert_eq!(library_path(&e).as_deref(), Some("/a:/n"));
        let mut e = env(&[("LD_LIBRARY_PATH", "/a:"), ("NIX_LD_LIBRARY_PATH", "/n")]);
        nix_ld(&mut e, x86);
        assert_eq!(library_path(&e).as_deref(), Some("/a:/n"));
        let mut e = env(&[("LD_LIBRARY_PATH", "")]);
        nix_ld(&mut e, x86);
        assert_eq!(
            library_path(&e).as_deref(),
            Some(DEFAULT_NIX_LD_LIBRARY_PATH)
        );
        let mut e = env(&[
            ("NIX_LD_LIBRARY_PATH", "/plain"),
            ("NIX_LD_LIBRARY_PATH_x86_64_linux", "/specific"),
        ]);
        nix_ld(&mut e, x86);
        assert_eq!(library_path(&e).as_deref(), Some("/specific"));
    }

    /// `cargo run` puts its directories before the user's LD_LIBRARY_PATH; they go, and
    /// what the user had stays.
    #[test]
    fn cargo_directories_are_left_out() {
        let cargo = "/w/target/debug:/w/target/debug/deps:/r/toolchains/t/lib/rustlib/x/lib:/r/toolchains/t/lib";
        let strip = |value: &str| {
            env(&[("LD_LIBRARY_PATH", value)]).without_cargo_directories(
                "/w/target/debug".as_ref(),
                Some("/r/toolchains/t".as_ref()),
            )
        };
        assert_eq!(library_path(&strip(cargo)), None);
        let e = strip(&format!("{cargo}:/opt/mine:/w/target/debug"));
        assert_eq!(
            library_path(&e).as_deref(),
            Some("/opt/mine:/w/target/debug")
        );
        assert_eq!(e.notes.len(), 1, "{:?}", e.notes);
        assert_eq!(
            library_path(&strip("/opt/mine")).as_deref(),
            Some("/opt/mine")
        );
        // A directory that only starts like ours is not ours.
        assert_eq!(
            library_path(&strip("/w/target/debugger")).as_deref(),
            Some("/w/target/debugger")
        );
    }
}
