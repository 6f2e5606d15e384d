//! explain's reading of wrapper scripts held against bash: each script (the lines nixpkgs'
//! make-wrapper.sh writes for `--set`, `--set-default`, `--unset`, `--prefix`, `--suffix`,
//! in its current and its older forms, with bash's `${value@Q}` quoting) is run by bash from
//! several starting environments, its `exec` pointed at `env -0`, and the variables bash
//! hands the program must be exactly those explain says the program gets.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

use ld_fallback_explain::environment::Environment;
use ld_fallback_explain::wrapper;
use loader_model::Bytes;

/// The lines a makeWrapper call writes before its `exec`, and the variables it touches.
struct Script {
    what: &'static str,
    lines: &'static str,
    vars: &'static [&'static str],
}

const SCRIPTS: &[Script] = &[
    Script {
        what: "--set, --set-default, --unset",
        lines: "export FOO='a b'\nexport BAR=${BAR-'dflt'}\nunset BAZ\n",
        vars: &["FOO", "BAR", "BAZ"],
    },
    Script {
        what: "--prefix LD_LIBRARY_PATH : /x:/y (one block per value, the last first)",
        lines: "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+':'$LD_LIBRARY_PATH':'}
LD_LIBRARY_PATH=${LD_LIBRARY_PATH/':''/y'':'/':'}
LD_LIBRARY_PATH='/y'$LD_LIBRARY_PATH
LD_LIBRARY_PATH=${LD_LIBRARY_PATH#':'}
LD_LIBRARY_PATH=${LD_LIBRARY_PATH%':'}
export LD_LIBRARY_PATH
LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+':'$LD_LIBRARY_PATH':'}
LD_LIBRARY_PATH=${LD_LIBRARY_PATH/':''/x'':'/':'}
LD_LIBRARY_PATH='/x'$LD_LIBRARY_PATH
LD_LIBRARY_PATH=${LD_LIBRARY_PATH#':'}
LD_LIBRARY_PATH=${LD_LIBRARY_PATH%':'}
export LD_LIBRARY_PATH
",
        vars: &["LD_LIBRARY_PATH"],
    },
    Script {
        what: "--suffix LD_FALLBACK_PATH : /s",
        lines: "LD_FALLBACK_PATH=${LD_FALLBACK_PATH:+':'$LD_FALLBACK_PATH':'}
if [[ $LD_FALLBACK_PATH != *':''/s'':'* ]]; then
    LD_FALLBACK_PATH=$LD_FALLBACK_PATH'/s'
fi
LD_FALLBACK_PATH=${LD_FALLBACK_PATH#':'}
LD_FALLBACK_PATH=${LD_FALLBACK_PATH%':'}
export LD_FALLBACK_PATH
",
        vars: &["LD_FALLBACK_PATH"],
    },
    Script {
        what: "the older --prefix and --suffix forms, and extraFlagsArray",
        lines: "declare -a extraFlagsArray=()
export LD_LIBRARY_PATH='/x'${LD_LIBRARY_PATH:+':'$LD_LIBRARY_PATH}
export LD_FALLBACK_PATH+=${LD_FALLBACK_PATH:+':'}'/s'
set +u
",
        vars: &["LD_LIBRARY_PATH", "LD_FALLBACK_PATH"],
    },
    Script {
        what: "values quoted by ${value@Q}: a quote, a tab, bytes outside UTF-8",
        lines:
            "export Q='it'\\''s'\nexport T=$'a\\tb'\nexport B=$'/lib\\377'\nexport C='/lib\u{e9}'\n",
        vars: &["Q", "T", "B", "C"],
    },
];

/// The starting environments: nothing set, a value, a value holding the one added, empty.
const STARTS: &[&str] = &["", "/a", "/a:/x:/b:/s", "EMPTY"];

/// What bash hands `env -0`: every variable, by name.
fn bash(script: &[u8], start: &[(String, Vec<u8>)]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrapper");
    std::fs::write(&path, script).unwrap();
    let mut command = Command::new("bash");
    command.arg(&path).arg("-0").env_clear();
    for (name, value) in start {
        command.env(name, OsString::from_vec(value.clone()));
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .split(|&b| b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| {
            let eq = v.iter().position(|&b| b == b'=').unwrap();
            (v[..eq].to_vec(), v[eq + 1..].to_vec())
        })
        .collect()
}

#[test]
fn wrappers_set_what_bash_sets() {
    for script in SCRIPTS {
        let text = format!(
            "#! /bin/bash -e\n{}exec -a \"$0\" \"/usr/bin/env\"  \"$@\"\n",
            script.lines
        );
        for start in STARTS {
            let value: &[u8] = if *start == "EMPTY" {
                b""
            } else {
                start.as_bytes()
            };
            let start_env: Vec<(String, Vec<u8>)> = if start.is_empty() {
                Vec::new()
            } else {
                script
                    .vars
                    .iter()
                    .map(|name| (name.to_string(), value.to_vec()))
                    .collect()
            };
            let by_bash = bash(text.as_bytes(), &start_env);
            let mut env = Environment::from_vars(start_env.iter().map(|(n, v)| {
                (
                    OsString::from(n),
                    OsString::from(std::ffi::OsStr::from_bytes(v)),
                )
            }));
            let followed = wrapper::follow(
                text.as_bytes(),
                &Bytes::from("/bin/wrapper"),
                &mut env,
                &Bytes::from("/"),
            )
            .unwrap_or_else(|e| panic!("{}: {e:?}", script.what));
            assert_eq!(
                followed.exec,
                [Bytes::from("/usr/bin/env")],
                "{}",
                script.what
            );
            assert!(
                followed.not_followed.is_empty(),
                "{}: {:?}",
                script.what,
                followed.not_followed
            );
            for name in script.vars {
                let bash_value = by_bash.get(name.as_bytes()).map(|v| Bytes::from(&v[..]));
                let explain_value = env.exported(name).map(|var| var.value.clone());
                assert_eq!(
                    explain_value, bash_value,
                    "{}: {name} from {start:?}",
                    script.what
                );
            }
        }
    }
}

/// A script that is no wrapper explain can follow is refused (exit status 1), naming why:
/// the line it cannot read, or that it never `exec`s a program; it was "not an ELF
/// program" for every script.
#[test]
fn a_script_explain_cannot_follow_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_ld-fallback-explain"))
            .arg(&path)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            path.display().to_string(),
        )
    };
    let (code, stderr, path) = run("plain", "#!/bin/sh\necho hello\n");
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        format!("error: {path} is a script explain cannot follow as a wrapper (nixpkgs' makeWrapper, or `exec` of a program): it never `exec`s a program (makeWrapper's last line is `exec ... \"$@\"`)\n")
    );
    let (code, stderr, path) = run("subst", "#!/bin/sh\nexec \"$(which app)\" \"$@\"\n");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: {path} is a script explain cannot follow as a wrapper (nixpkgs' makeWrapper, or `exec` of a program): line 2: `exec \"$(which app)\" \"$@\"`: ")),
        "{stderr}"
    );
}
