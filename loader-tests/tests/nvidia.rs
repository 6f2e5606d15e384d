//! NVIDIA's real libraries arrive as the real-binary scenarios need them: both packages for
//! both architectures, unpacked into the project cache, ELF files of the right machine.
//! An unreachable archive is a visible skip outside CI and a failure under it (see
//! loader-tests/README.md); anything else that keeps them away fails.

use std::net::TcpListener;
use std::process::Command;

use loader_tests::host::{self, in_ci};
use loader_tests::nvidia;
use model::Target;

/// `e_machine` of an ELF file.
fn machine(path: &std::path::Path) -> u16 {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert_eq!(&bytes[..4], b"\x7fELF", "{} is not ELF", path.display());
    u16::from_le_bytes([bytes[18], bytes[19]])
}

#[test]
fn both_packages_for_both_architectures() {
    for target in Target::ALL {
        let libs = match nvidia::ensure_once(target) {
            Ok(libs) => libs,
            Err(skip) if skip.is_skip() => {
                eprintln!("{target} SKIPPED: {}", skip.reason());
                continue;
            }
            Err(failed) => panic!("{target}: {}", failed.reason()),
        };
        let expected = match target {
            Target::X86_64 => 62,
            Target::Aarch64 => 183,
        };
        for file in [&libs.cudart, &libs.libcuda] {
            assert_eq!(machine(file), expected, "{}", file.display());
        }
        for package in nvidia::PACKAGES {
            assert!(
                libs.versions
                    .iter()
                    .any(|v| v.starts_with(&format!("{package} "))),
                "{target}: {package} not among {:?}",
                libs.versions
            );
        }
        eprintln!(
            "{target}: {} (fetched in {:.1} s; 0 = cached)",
            libs.versions.join(", "),
            libs.fetch_seconds
        );
    }
}

/// The test above against a mirror that refuses connections (`$LD_FALLBACK_APT_SOURCES`) and
/// an empty cache: with `CI` set it fails, saying the archive was unreachable and that CI does
/// not accept that; without it, it passes with both architectures SKIPPED, visibly. It runs as
/// a child of this binary, so that the variables are the child's alone.
#[test]
fn an_unreachable_archive_fails_under_ci_and_is_a_visible_skip_elsewhere() {
    let missing: Vec<&str> = ["apt-get", "dpkg-deb"]
        .into_iter()
        .filter(|p| host::find_program(p).is_none())
        .collect();
    if !missing.is_empty() {
        assert!(
            !in_ci(),
            "{} missing: the fetch cannot be tried",
            missing.join(", ")
        );
        eprintln!(
            "SKIPPED: {} missing (scripts/install-deps installs them)",
            missing.join(", ")
        );
        return;
    }
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("cannot bind a local port")
        .port();
    let sources = tempfile::tempdir().unwrap();
    std::fs::write(
        sources.path().join("refused.sources"),
        format!("Types: deb\nURIs: http://127.0.0.1:{port}/debian\nSuites: bookworm\nComponents: main\n"),
    )
    .unwrap();
    let run = |ci: bool| {
        let cache = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "both_packages_for_both_architectures",
            "--nocapture",
        ])
        .env("LD_FALLBACK_APT_SOURCES", sources.path())
        .env("LD_FALLBACK_CACHE", cache.path())
        .env_remove("CI");
        if ci {
            cmd.env("CI", "1");
        }
        let out = cmd.output().expect("cannot rerun the test binary");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let refused = format!("127.0.0.1:{port}");

    let (passed, text) = run(true);
    assert!(
        !passed,
        "under CI an unreachable archive must fail:\n{text}"
    );
    assert!(
        text.contains(nvidia::UNREACHABLE)
            && text.contains("under CI the Debian packages must be fetched")
            && text.contains(&refused),
        "the failure must say the archive at {refused} was unreachable:\n{text}"
    );

    let (passed, text) = run(false);
    assert!(
        passed,
        "outside CI an unreachable archive is a skip:\n{text}"
    );
    for target in Target::ALL {
        let skipped = format!("{target} SKIPPED: {}", nvidia::UNREACHABLE);
        assert!(text.contains(&skipped), "no `{skipped}` in:\n{text}");
    }
}
