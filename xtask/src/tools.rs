//! Host tools the slow steps need, checked before any work starts.

use std::path::Path;

use anyhow::{bail, Result};

/// A program and the Debian package that provides it.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    pub program: &'static str,
    pub package: &'static str,
}

impl Tool {
    pub const fn new(program: &'static str, package: &'static str) -> Tool {
        Tool { program, package }
    }
}

/// Fails naming every missing tool and one `apt-get install` line that provides them all.
pub fn require(tools: &[Tool]) -> Result<()> {
    let missing: Vec<&Tool> = tools
        .iter()
        .filter(|t| find_program(t.program).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = missing
        .iter()
        .map(|t| format!("`{}` (package {})", t.program, t.package))
        .collect();
    let mut packages: Vec<&str> = missing.iter().map(|t| t.package).collect();
    packages.dedup();
    bail!(
        "missing tool{}: {}\ninstall with: apt-get install {}",
        if missing.len() == 1 { "" } else { "s" },
        names.join(", "),
        packages.join(" ")
    )
}

/// The first `program` on `$PATH`, like `command -v`.
pub fn find_program(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| program.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tool_names_its_package() {
        let err = require(&[
            Tool::new("sh", "dash"),
            Tool::new("ld-fallback-no-such-tool", "ld-fallback-pkg"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`ld-fallback-no-such-tool` (package ld-fallback-pkg)"),
            "{err}"
        );
        assert!(err.contains("apt-get install ld-fallback-pkg"), "{err}");
        assert!(!err.contains("dash"), "{err}");
    }
}
