//! NVIDIA's real libraries arrive as the real-binary scenarios need them: both packages for
//! both architectures, unpacked into the project cache, ELF files of the right machine.
//! An unreachable archive is a visible skip (see loader-tests/README.md); anything else that
//! keeps them away fails.

use loader_tests::nvidia::{self, Unavailable};
use loader_tests::Target;

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
            Err(unreachable @ Unavailable::Unreachable(_)) => {
                eprintln!("{target} SKIPPED: {}", unreachable.reason());
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
