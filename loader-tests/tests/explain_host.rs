//! The search model against this machine's own loader (an unpatched glibc, Debian 12's 2.36
//! here), which needs no built sysroot: real programs and the c-fixtures compiled with the
//! host's gcc, in a scratch directory, each run traced (`LD_DEBUG=libs,files`) under bwrap
//! with `/` as its root; the model must name the same searches, the same files tried and
//! the same files taken (`loader_tests::differential`). The cases cover what the scenario
//! roots do not: the distribution's real ld.so.cache and multiarch default dirs, glibc-hwcaps
//! subdirectories that exist, the legacy hwcap subdirectories of 2.36, python's extension
//! modules dlopened by path.
//!
//! The sysroots' own differential test is `tests/explain.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Failed, Trial};
use loader_tests::differential::{self, LoaderUnderTest, Mode};
use loader_tests::host::{find_program, in_ci};
use loader_tests::probe::Invocation;
use loader_tests::search::Release;
use loader_tests::Target;

const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

fn main() {
    let args = Arguments::from_args();
    let why_not = why_not_here();
    if let Some(why) = &why_not {
        eprintln!("explain_host tests ignored: {why}");
    }
    let trials = CASES
        .iter()
        .map(|case| {
            Trial::test(format!("host::{}", case.name), move || {
                run(case).map_err(Failed::from)
            })
            .with_ignored_flag(why_not.is_some() && !in_ci())
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// Why the host cannot serve as the reference loader, if it cannot.
fn why_not_here() -> Option<String> {
    if std::env::consts::ARCH != "x86_64" {
        return Some("not an x86_64 machine".into());
    }
    for tool in ["gcc", "bwrap"] {
        if find_program(tool).is_none() {
            return Some(format!("no {tool}"));
        }
    }
    match host_release() {
        Some(r) if r == Release::parse("2.36").unwrap() || r.minor >= 40 => None,
        Some(r) => Some(format!(
            "the host's glibc {r} is not a release the model knows"
        )),
        None => Some(format!("{LOADER} says no release")),
    }
}

fn host_release() -> Option<Release> {
    loader_tests::search::release_in(Path::new("/"), "/bin/true", "/")
}

/// One traced run.
struct Case {
    name: &'static str,
    /// argv; `{D}` is the scratch directory of compiled fixtures.
    argv: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    cwd: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "python3-extension-modules",
        argv: &["/usr/bin/python3", "-c", "import ssl, ctypes, sqlite3"],
        env: &[],
        cwd: "/",
    },
    Case {
        name: "python3-library-path-and-fallback-ignored",
        argv: &["/usr/bin/python3", "-c", "import ssl"],
        env: &[
            ("LD_LIBRARY_PATH", "{D}/empty:/nonexistent:{D}/hwcaps"),
            ("LD_FALLBACK_PATH", "{D}/driver"),
        ],
        cwd: "/",
    },
    Case {
        name: "dlopen-through-llp-wrong-class-first",
        argv: &["{D}/probe", "dlopen", "libcuda.so.1"],
        env: &[("LD_LIBRARY_PATH", "{D}/elf32:{D}/driver")],
        cwd: "/",
    },
    Case {
        name: "runpath-with-glibc-hwcaps-copy",
        argv: &["{D}/probe-runpath", "dlopen", "libcuda.so.1"],
        env: &[],
        cwd: "/",
    },
    Case {
        name: "rpath-origin-before-llp",
        argv: &["{D}/app/bin/needed-rpath", "needed"],
        env: &[("LD_LIBRARY_PATH", "{D}/driver")],
        cwd: "/",
    },
    Case {
        name: "runpath-after-llp",
        argv: &["{D}/needed-runpath", "needed"],
        env: &[("LD_LIBRARY_PATH", "{D}/driver")],
        cwd: "/",
    },
    Case {
        name: "missing-twice-remembers-missing-dirs",
        argv: &[
            "{D}/probe-runpath",
            "try",
            "libmissing.so",
            "try",
            "libmissing.so",
        ],
        env: &[("LD_LIBRARY_PATH", "{D}/gone:{D}/empty")],
        cwd: "/",
    },
    Case {
        name: "empty-llp-entry-is-the-cwd",
        argv: &["{D}/probe", "dlopen", "libcuda.so.1"],
        env: &[("LD_LIBRARY_PATH", ":{D}/empty")],
        cwd: "{D}/driver",
    },
    Case {
        name: "nodefaultlib-skips-cache-and-default-dirs",
        argv: &[
            "{D}/probe-nodeflib",
            "try",
            "libz.so.1",
            "try",
            "libcuda.so.1",
        ],
        env: &[],
        cwd: "/",
    },
    Case {
        name: "shim-runpath-and-already-loaded",
        argv: &[
            "{D}/probe",
            "shim",
            "{D}/libshim-runpath.so",
            "libcuda.so.1",
            "dlopen",
            "libcuda.so.1",
        ],
        env: &[],
        cwd: "/",
    },
    Case {
        name: "dlmopen-new-namespace",
        argv: &["{D}/probe", "dlmopen", "libcuda.so.1"],
        env: &[("LD_LIBRARY_PATH", "{D}/driver")],
        cwd: "/",
    },
    Case {
        name: "ld-so-inhibit-cache-library-path",
        argv: &[
            LOADER,
            "--inhibit-cache",
            "--library-path",
            "{D}/driver",
            "{D}/needed",
            "needed",
        ],
        env: &[],
        cwd: "/",
    },
    Case {
        name: "ldd-listing-goes-on-past-a-miss",
        argv: &["{D}/needed"],
        env: &[("LD_TRACE_LOADED_OBJECTS", "1")],
        cwd: "/",
    },
    Case {
        name: "platform-and-lib-tokens",
        argv: &["{D}/probe", "try", "libcuda.so.1"],
        env: &[("LD_LIBRARY_PATH", "{D}/$PLATFORM:{D}/$LIB")],
        cwd: "/",
    },
];

fn run(case: &Case) -> Result<(), String> {
    let dir = fixtures()?;
    let d = dir.to_string_lossy();
    let expand = |s: &str| s.replace("{D}", &d);
    let invocation = Invocation {
        root: PathBuf::from("/"),
        cwd: expand(case.cwd),
        qemu: None,
        argv: case.argv.iter().map(|a| expand(a)).collect(),
        env: case
            .env
            .iter()
            .map(|(n, v)| (n.to_string(), expand(v)))
            .collect(),
        secure: false,
        placed: Vec::new(),
    };
    let release = host_release().ok_or("the host's loader says no release")?;
    let checked = differential::check(
        &invocation,
        LoaderUnderTest {
            path: LOADER,
            release,
            target: Target::X86_64,
            patched: false,
        },
    );
    if checked.mode != Mode::Traced {
        return Err(format!("not compared: {:?}", checked.mode));
    }
    if checked.observed.is_empty() {
        return Err("the trace shows no search: nothing was compared".into());
    }
    match checked.difference {
        None => Ok(()),
        Some(diff) => Err(format!("{}: {diff}", invocation.display())),
    }
}

/// The c-fixtures compiled with the host's gcc, once per test binary, laid out for the cases.
fn fixtures() -> Result<&'static Path, String> {
    static DIR: OnceLock<Result<tempfile::TempDir, String>> = OnceLock::new();
    DIR.get_or_init(|| build().map_err(|e| format!("cannot compile the fixtures: {e:#}")))
        .as_ref()
        .map(|d| d.path())
        .map_err(Clone::clone)
}

fn build() -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("explain-host-")
        .tempdir_in("/tmp")?;
    let d = dir.path();
    let src = loader_tests::fixtures::sources_dir();
    let include = format!("-I{}", src.display());
    let gcc = |args: &[&str]| -> anyhow::Result<()> {
        let out = Command::new("gcc").args(args).output()?;
        anyhow::ensure!(
            out.status.success(),
            "gcc {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    let path = |rel: &str| d.join(rel).to_string_lossy().into_owned();
    for sub in [
        "driver",
        "empty",
        "elf32",
        "hwcaps/glibc-hwcaps/x86-64-v2",
        "app/bin",
        "app/lib",
        "x86_64",
        "lib/x86_64-linux-gnu",
    ] {
        fs::create_dir_all(d.join(sub))?;
    }
    let libcuda = src.join("libcuda.c").to_string_lossy().into_owned();
    let marker = |role: &str, out: &str| {
        gcc(&[
            "-shared",
            "-fPIC",
            "-O2",
            "-Wl,-soname,libcuda.so.1",
            &format!("-DROLE=\"{role}\""),
            "-DROLE_VERSION=1",
            &include,
            &libcuda,
            "-o",
            &path(out),
        ])
    };
    marker("driver", "driver/libcuda.so.1")?;
    marker("hwcaps", "hwcaps/glibc-hwcaps/x86-64-v2/libcuda.so.1")?;
    marker("origin", "app/lib/libcuda.so.1")?;
    marker("platform", "x86_64/libcuda.so.1")?;
    marker("lib", "lib/x86_64-linux-gnu/libcuda.so.1")?;
    gcc(&[
        "-m32",
        "-nostdlib",
        "-shared",
        "-fPIC",
        "-Wl,-soname,libcuda.so.1",
        &src.join("libcuda32.c").to_string_lossy(),
        "-o",
        &path("elf32/libcuda.so.1"),
    ])?;
    let probe = src.join("probe.c").to_string_lossy().into_owned();
    let runpath = |dirs: &str| format!("-Wl,--enable-new-dtags,-rpath,{dirs}");
    gcc(&[&include, &probe, "-o", &path("probe")])?;
    gcc(&[
        &include,
        &probe,
        "-o",
        &path("probe-runpath"),
        &runpath(&path("hwcaps")),
    ])?;
    gcc(&[
        &include,
        &probe,
        "-o",
        &path("probe-nodeflib"),
        "-Wl,-z,nodefaultlib",
        &runpath("/lib/x86_64-linux-gnu"),
    ])?;
    let link_cuda = ["-L", &path("driver"), "-l:libcuda.so.1"];
    gcc(&[
        &[&include, "-DNEEDED", &probe, "-o", &path("needed")][..],
        &link_cuda,
    ]
    .concat())?;
    gcc(&[
        &[
            &include,
            "-DNEEDED",
            &probe,
            "-o",
            &path("needed-runpath"),
            &runpath(&path("hwcaps")),
        ][..],
        &link_cuda,
    ]
    .concat())?;
    gcc(&[
        &[
            &include,
            "-DNEEDED",
            &probe,
            "-o",
            &path("app/bin/needed-rpath"),
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib",
        ][..],
        &link_cuda,
    ]
    .concat())?;
    gcc(&[
        "-shared",
        "-fPIC",
        &src.join("libshim.c").to_string_lossy(),
        "-o",
        &path("libshim-runpath.so"),
        &runpath(&path("driver")),
    ])?;
    Ok(dir)
}
