//! The search model against this machine's own loader (an unpatched glibc, Debian 12's 2.36
//! here), which needs no built sysroot: real programs and the c-fixtures compiled with the
//! host's gcc, in a scratch directory, each run traced (`LD_DEBUG=libs,files`) under bwrap
//! with `/` as its root; the model must name the same searches, the same files tried and
//! the same files taken (`loader_tests::differential`). The cases cover what the scenario
//! roots do not: the distribution's real ld.so.cache and multiarch default dirs, glibc-hwcaps
//! subdirectories that exist, the legacy hwcap subdirectories of 2.36, python's extension
//! modules dlopened by path. The same cases (python's aside) run for aarch64 under QEMU user
//! mode in a root made of Debian's aarch64 cross libc (`libc6-arm64-cross`, which
//! `gcc-aarch64-linux-gnu` brings): another loader, machine and cache flavour, and QEMU's CPU.
//!
//! The sysroots' own differential test is `tests/explain.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Failed, Trial};
use loader_model::GlibcVersion;
use loader_tests::differential::{self, LoaderUnderTest, Mode};
use loader_tests::host::{find_program, in_ci, require_dirs, tools, AARCH64_CROSS_LIBC};
use loader_tests::probe::Invocation;
use model::{Flavour, Target};

/// Debian's aarch64 cross libc: its loader and libraries.
const CROSS_LIBC: &str = "/usr/aarch64-linux-gnu/lib";

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for target in Target::ALL {
        let why_not = why_not_here(target);
        if let Some(why) = &why_not {
            eprintln!("explain_host {target} tests ignored: {why}");
        }
        if target == Target::X86_64 {
            for check in CONTRACT {
                let trial = Trial::test(format!("contract::{}", check.name), move || {
                    contract(check).map_err(Failed::from)
                });
                trials.push(trial.with_ignored_flag(why_not.is_some() && !in_ci()));
            }
        }
        for case in CASES {
            if target == Target::Aarch64 && case.argv[0].contains("python3") {
                continue;
            }
            let trial = Trial::test(format!("{target}::{}", case.name), move || {
                run(target, case).map_err(Failed::from)
            });
            trials.push(trial.with_ignored_flag(why_not.is_some() && !in_ci()));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The loader the cases of `target` run under.
fn loader(target: Target) -> &'static str {
    target.loader_path()
}

/// Why this machine cannot serve as the reference for `target`, if it cannot.
fn why_not_here(target: Target) -> Option<String> {
    if std::env::consts::ARCH != "x86_64" {
        return Some("not an x86_64 machine".into());
    }
    let mut needed = vec![tools::GCC, tools::BWRAP];
    if target == Target::Aarch64 {
        needed.extend([tools::AARCH64_GCC, tools::QEMU_AARCH64]);
        if let Err(err) = require_dirs(&[AARCH64_CROSS_LIBC]) {
            return Some(format!("{err:#}"));
        }
    }
    if let Some(tool) = needed.iter().find(|t| find_program(t.program).is_none()) {
        return Some(format!("no {} (package {})", tool.program, tool.package));
    }
    let known = |r: GlibcVersion| r == GlibcVersion::parse("2.36").unwrap() || r.minor >= 40;
    let binary = match target {
        Target::X86_64 => PathBuf::from(loader(target)),
        Target::Aarch64 => Path::new(CROSS_LIBC).join("ld-linux-aarch64.so.1"),
    };
    let release = fs::read(&binary)
        .ok()
        .and_then(|b| loader_model::platform::release_of(&b));
    match release {
        Some(r) if known(r) => None,
        Some(r) => Some(format!("its glibc {r} is not a release the model knows")),
        None => Some(format!("{} says no release", binary.display())),
    }
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
            "/lib64/ld-linux-x86-64.so.2",
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

/// A row of docs/contract.md the patched model must give, on the host's fixtures (no
/// patched loader is needed, and none checks it here: tests/explain.rs does, against the
/// built one). `{D}` as in the cases.
struct ContractCheck {
    name: &'static str,
    program: &'static str,
    fallback: Option<&'static str>,
    library_path: Option<&'static str>,
    dlopen: Option<&'static str>,
    secure: bool,
    inhibit_cache: bool,
    flavour: Flavour,
    cwd: &'static str,
    /// The library looked at.
    library: &'static str,
    /// The file the model must take for it, or `None` for not found.
    expect: Option<&'static str>,
}

const CHECK: ContractCheck = ContractCheck {
    name: "",
    program: "{D}/probe",
    fallback: Some("{D}/driver"),
    library_path: None,
    dlopen: Some("libcuda.so.1"),
    secure: false,
    inhibit_cache: false,
    flavour: Flavour::Patched,
    cwd: "/",
    library: "libcuda.so.1",
    expect: Some("{D}/driver/libcuda.so.1"),
};

const CONTRACT: &[ContractCheck] = &[
    ContractCheck {
        name: "03-the-fallback-is-reached",
        ..CHECK
    },
    ContractCheck {
        name: "23-not-without-the-patch",
        flavour: Flavour::Unpatched,
        expect: None,
        ..CHECK
    },
    ContractCheck {
        name: "02-runpath-beats-the-fallback",
        program: "{D}/probe-runpath",
        expect: Some("{D}/hwcaps/glibc-hwcaps/x86-64-v2/libcuda.so.1"),
        ..CHECK
    },
    ContractCheck {
        name: "01-llp-beats-the-fallback",
        library_path: Some("{D}/app/lib"),
        expect: Some("{D}/app/lib/libcuda.so.1"),
        ..CHECK
    },
    ContractCheck {
        name: "12-secure-mode-ignores-it",
        secure: true,
        expect: None,
        ..CHECK
    },
    ContractCheck {
        name: "14-nodefaultlib-keeps-it",
        program: "{D}/probe-nodeflib",
        ..CHECK
    },
    ContractCheck {
        name: "15-inhibit-cache-keeps-it",
        inhibit_cache: true,
        ..CHECK
    },
    ContractCheck {
        name: "16-an-empty-entry-is-never-the-cwd",
        fallback: Some("::"),
        cwd: "{D}/driver",
        expect: None,
        ..CHECK
    },
    ContractCheck {
        name: "16-empty-entries-are-dropped",
        fallback: Some(";;{D}/driver;"),
        cwd: "{D}/app/lib",
        ..CHECK
    },
    // A relative entry names a directory with a copy, below the working directory; the
    // absolute entry after it shows that the list itself is searched.
    ContractCheck {
        name: "16-a-relative-entry-is-ignored",
        fallback: Some("driver:{D}/app/lib"),
        cwd: "{D}",
        expect: Some("{D}/app/lib/libcuda.so.1"),
        ..CHECK
    },
    ContractCheck {
        name: "16-dot-is-ignored",
        fallback: Some(".:{D}/app/lib"),
        cwd: "{D}/driver",
        expect: Some("{D}/app/lib/libcuda.so.1"),
        ..CHECK
    },
    ContractCheck {
        name: "16-relative-after-expansion-is-ignored",
        fallback: Some("$LIB:{D}/app/lib"),
        cwd: "{D}",
        expect: Some("{D}/app/lib/libcuda.so.1"),
        ..CHECK
    },
    ContractCheck {
        name: "17-origin-expands-against-the-program",
        fallback: Some("$ORIGIN/app/../driver"),
        expect: Some("{D}/app/../driver/libcuda.so.1"),
        ..CHECK
    },
    ContractCheck {
        name: "18-wrong-class-is-passed-over",
        fallback: Some("{D}/elf32:{D}/driver"),
        ..CHECK
    },
    ContractCheck {
        name: "08-09-the-cache-and-default-dirs-beat-the-fallback",
        fallback: Some("{D}/fbm"),
        dlopen: Some("libm.so.6"),
        library: "libm.so.6",
        expect: Some("/lib/x86_64-linux-gnu/libm.so.6"),
        ..CHECK
    },
    // Not a row of the contract: the variant that breaks rows 08-09 on purpose, modelled so
    // that `--flavour fallback-first` shows what the other placement would take.
    ContractCheck {
        name: "variant-fallback-first-shadows-the-default-dirs",
        fallback: Some("{D}/fbm"),
        dlopen: Some("libm.so.6"),
        library: "libm.so.6",
        flavour: Flavour::FallbackFirst,
        expect: Some("{D}/fbm/libm.so.6"),
        ..CHECK
    },
    ContractCheck {
        name: "19-missing-dirs-then-found",
        fallback: Some("/nope:/nope/too:{D}/driver"),
        ..CHECK
    },
];

/// The patched model on one contract row.
fn contract(check: &ContractCheck) -> Result<(), String> {
    use loader_model::{Config, Cpu, Dlopen, PathList};
    let place = fixtures(Target::X86_64)?;
    let d = place.dir.as_str();
    let expand = |s: &str| s.replace("{D}", d);
    let release =
        loader_model::release_in(Path::new("/"), b"/bin/true", b"/").ok_or("no release")?;
    let config = Config {
        root: PathBuf::from("/"),
        program: expand(check.program).into(),
        cwd: expand(check.cwd).into(),
        release,
        target: Target::X86_64,
        flavour: check.flavour,
        library_path: check.library_path.map(|v| PathList {
            value: expand(v).into(),
            source: "LD_LIBRARY_PATH".into(),
        }),
        fallback_path: check.fallback.map(|v| PathList {
            value: expand(v).into(),
            source: "LD_FALLBACK_PATH".into(),
        }),
        preload: None,
        dlopens: check
            .dlopen
            .map(|name| Dlopen {
                name: name.into(),
                from: None,
                new_namespace: false,
            })
            .into_iter()
            .collect(),
        audit: Vec::new(),
        inhibit_cache: check.inhibit_cache,
        secure: check.secure,
        trace: false,
        via_loader: false,
        loader: None,
        loader_series: None,
        cpu: Cpu::detect(Target::X86_64),
    };
    let x = loader_model::explain(&config).map_err(|e| format!("{e:#}"))?;
    let got = x
        .loads
        .iter()
        .rev()
        .find(|l| l.name == check.library)
        .and_then(|l| {
            l.mapped()
                .map(|path| String::from_utf8_lossy(path).into_owned())
        });
    let want = check.expect.map(expand);
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "{}: the model takes {got:?}, the contract says {want:?}\n{}",
            check.library,
            loader_model::render::text(&x)
        ))
    }
}

fn run(target: Target, case: &Case) -> Result<(), String> {
    let place = fixtures(target)?;
    let d = place.dir.as_str();
    let expand = |s: &str| {
        s.replace("{D}", d)
            .replace("/lib64/ld-linux-x86-64.so.2", loader(target))
    };
    let invocation = Invocation {
        root: place.root.clone(),
        cwd: expand(case.cwd),
        qemu: place.qemu.clone(),
        argv: case.argv.iter().map(|a| expand(a)).collect(),
        env: case
            .env
            .iter()
            .map(|(n, v)| (n.to_string(), expand(v)))
            .collect(),
        secure: false,
        placed: Vec::new(),
    };
    let release = loader_model::release_in(&place.root, loader(target).as_bytes(), b"/")
        .ok_or("the loader says no release")?;
    let checked = differential::check(
        &invocation,
        LoaderUnderTest {
            path: loader(target),
            release,
            target,
            flavour: Flavour::Unpatched,
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

/// Where a target's cases run: the root, the fixtures' directory inside it, QEMU.
struct Place {
    /// Kept for the whole test binary: the root and the fixtures live in it.
    _scratch: tempfile::TempDir,
    root: PathBuf,
    dir: String,
    qemu: Option<PathBuf>,
}

/// The c-fixtures compiled for `target`, once per test binary, laid out for the cases: for
/// x86_64 in a scratch directory of this machine (root `/`), for aarch64 in a root of its
/// own holding the cross libc where a Debian arm64 system has it.
fn fixtures(target: Target) -> Result<&'static Place, String> {
    static PLACES: [OnceLock<Result<Place, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    PLACES[target as usize]
        .get_or_init(|| build(target).map_err(|e| format!("cannot compile the fixtures: {e:#}")))
        .as_ref()
        .map_err(Clone::clone)
}

fn build(target: Target) -> anyhow::Result<Place> {
    let scratch = tempfile::Builder::new()
        .prefix("explain-host-")
        .tempdir_in("/tmp")?;
    let (root, inside, qemu) = match target {
        Target::X86_64 => (PathBuf::from("/"), scratch.path().to_path_buf(), None),
        Target::Aarch64 => {
            let root = scratch.path().to_path_buf();
            let multiarch = root.join("lib/aarch64-linux-gnu");
            fs::create_dir_all(&multiarch)?;
            for entry in fs::read_dir(CROSS_LIBC)? {
                let entry = entry?;
                let to = if entry.file_name() == "ld-linux-aarch64.so.1" {
                    root.join("lib/ld-linux-aarch64.so.1")
                } else {
                    multiarch.join(entry.file_name())
                };
                if entry.file_type()?.is_file() {
                    fs::copy(entry.path(), to)?;
                } else if entry.file_type()?.is_symlink() {
                    std::os::unix::fs::symlink(fs::read_link(entry.path())?, to)?;
                }
            }
            for dir in ["tmp", "proc", "dev"] {
                fs::create_dir_all(root.join(dir))?;
            }
            let qemu = find_program(tools::QEMU_AARCH64.program);
            (root.clone(), root.join("fx"), qemu)
        }
    };
    let d = inside.as_path();
    let src = loader_tests::fixtures::sources_dir();
    let include = format!("-I{}", src.display());
    let cc = match target {
        Target::X86_64 => tools::GCC.program,
        Target::Aarch64 => tools::AARCH64_GCC.program,
    };
    let gcc = |args: &[&str]| -> anyhow::Result<()> {
        let out = Command::new(cc).args(args).output()?;
        anyhow::ensure!(
            out.status.success(),
            "gcc {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(())
    };
    let path = |rel: &str| d.join(rel).to_string_lossy().into_owned();
    // The fixtures' directory as the programs see it (RUNPATH entries).
    let seen = match target {
        Target::X86_64 => d.to_string_lossy().into_owned(),
        Target::Aarch64 => "/fx".to_string(),
    };
    let guest = |rel: &str| format!("{seen}/{rel}");
    for sub in [
        "driver",
        "empty",
        "elf32",
        "hwcaps/glibc-hwcaps/x86-64-v2",
        "app/bin",
        "app/lib",
        target.name(),
        &format!("lib/{}", target.triplet()),
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
    fs::create_dir_all(d.join("fbm"))?;
    marker("libm-impostor", "fbm/libm.so.6")?;
    marker("hwcaps", "hwcaps/glibc-hwcaps/x86-64-v2/libcuda.so.1")?;
    marker("origin", "app/lib/libcuda.so.1")?;
    marker("platform", &format!("{}/libcuda.so.1", target.name()))?;
    marker("lib", &format!("lib/{}/libcuda.so.1", target.triplet()))?;
    // The impostor comes from the host's compiler, whatever the target: i386 is the wrong
    // class for both loaders.
    let host_gcc = Command::new(tools::GCC.program)
        .args([
            "-m32",
            "-nostdlib",
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcuda.so.1",
        ])
        .arg(src.join("libcuda32.c"))
        .arg("-o")
        .arg(d.join("elf32/libcuda.so.1"))
        .output()?;
    anyhow::ensure!(
        host_gcc.status.success(),
        "gcc -m32: {}",
        String::from_utf8_lossy(&host_gcc.stderr)
    );
    let probe = src.join("probe.c").to_string_lossy().into_owned();
    let runpath = |dirs: &str| format!("-Wl,--enable-new-dtags,-rpath,{dirs}");
    gcc(&[&include, &probe, "-o", &path("probe")])?;
    gcc(&[
        &include,
        &probe,
        "-o",
        &path("probe-runpath"),
        &runpath(&guest("hwcaps")),
    ])?;
    gcc(&[
        &include,
        &probe,
        "-o",
        &path("probe-nodeflib"),
        "-Wl,-z,nodefaultlib",
        &runpath(&format!("/lib/{}", target.triplet())),
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
            &runpath(&guest("hwcaps")),
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
        &runpath(&guest("driver")),
    ])?;
    Ok(Place {
        _scratch: scratch,
        root,
        dir: seen,
        qemu,
    })
}
