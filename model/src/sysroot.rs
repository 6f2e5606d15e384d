//! An installed glibc, and the variables that name a ready one.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::{Flavour, Release, Target};

/// An installed glibc (`make install DESTDIR=...` with `--prefix=/usr`), laid out like a system.
#[derive(Debug, Clone)]
pub struct Sysroot {
    pub path: PathBuf,
    pub target: Target,
    pub release: Release,
    pub flavour: Flavour,
}

/// Environment variables naming a ready sysroot, per target and flavour; they take
/// precedence over building one.
pub fn sysroot_env_var(target: Target, flavour: Flavour) -> String {
    let mut name = "LD_FALLBACK_SYSROOT".to_string();
    if target == Target::Aarch64 {
        name.push_str("_AARCH64");
    }
    match flavour {
        Flavour::Patched => {}
        Flavour::Unpatched => name.push_str("_UNPATCHED"),
        Flavour::FallbackFirst => name.push_str("_FALLBACK_FIRST"),
        Flavour::TestsOnly => name.push_str("_TESTS_ONLY"),
    }
    name
}

impl Sysroot {
    /// A sysroot installed at `path`; its release is read from its `<features.h>`, and must be
    /// a supported one.
    pub fn at(path: &Path, target: Target, flavour: Flavour) -> Result<Sysroot> {
        let features = path.join("usr/include/features.h");
        let text = std::fs::read_to_string(&features).with_context(|| {
            format!(
                "{} is not an installed glibc (no usr/include/features.h)",
                path.display()
            )
        })?;
        let Some(version) = glibc_version(&text) else {
            bail!("cannot read the glibc version from {}", features.display());
        };
        let release = Release::parse(&version)
            .with_context(|| format!("{} is glibc {version}", path.display()))?;
        if !path
            .join(target.loader_path().trim_start_matches('/'))
            .exists()
        {
            bail!(
                "{} has no {}: not a {} glibc install",
                path.display(),
                target.loader_path(),
                target.name()
            );
        }
        Ok(Sysroot {
            path: path.to_path_buf(),
            target,
            release,
            flavour,
        })
    }
}

/// `X.Y` from the text of `<features.h>`.
fn glibc_version(features: &str) -> Option<String> {
    let define = |name: &str| {
        features
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("#define\t{name}\t"))
                    .or_else(|| l.strip_prefix(&format!("#define {name} ")))
            })
            .map(|v| v.trim().to_string())
    };
    Some(format!(
        "{}.{}",
        define("__GLIBC__")?,
        define("__GLIBC_MINOR__")?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(major: &str, minor: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let include = dir.path().join("usr/include");
        std::fs::create_dir_all(&include).unwrap();
        std::fs::write(
            include.join("features.h"),
            format!("#define\t__GLIBC__\t{major}\n#define\t__GLIBC_MINOR__\t{minor}\n"),
        )
        .unwrap();
        let loader = dir
            .path()
            .join(Target::X86_64.loader_path().trim_start_matches('/'));
        std::fs::create_dir_all(loader.parent().unwrap()).unwrap();
        std::fs::write(loader, "").unwrap();
        dir
    }

    #[test]
    fn a_sysroot_knows_its_release() {
        let dir = installed("2", "41");
        let sysroot = Sysroot::at(dir.path(), Target::X86_64, Flavour::Patched).unwrap();
        assert_eq!(sysroot.release, Release::parse("2.41").unwrap());
    }

    #[test]
    fn a_sysroot_of_an_unsupported_release_is_refused_naming_it() {
        let dir = installed("2", "39");
        let err = Sysroot::at(dir.path(), Target::X86_64, Flavour::Patched).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("is glibc 2.39: glibc 2.39 is not a supported release"),
            "{text}"
        );
    }
}
