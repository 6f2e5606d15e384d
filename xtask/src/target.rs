//! `--target` on the command line: one parser for every subcommand.

use anyhow::{bail, Result};
use loader_tests::Target;

/// `x86_64` or `aarch64`.
pub fn parse(text: &str) -> Result<Target> {
    match Target::parse(text) {
        Some(target) => Ok(target),
        None => bail!("unknown target `{text}`; expected x86_64 or aarch64"),
    }
}

/// `x86_64`, `aarch64` or `all`.
pub fn parse_selection(text: &str) -> Result<Vec<Target>> {
    if text == "all" {
        return Ok(Target::ALL.to_vec());
    }
    match Target::parse(text) {
        Some(target) => Ok(vec![target]),
        None => bail!("unknown target `{text}`; expected x86_64, aarch64 or all"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_selection() {
        assert_eq!(parse_selection("aarch64").unwrap(), vec![Target::Aarch64]);
        assert_eq!(parse_selection("all").unwrap().len(), 2);
        assert!(parse_selection("riscv64")
            .unwrap_err()
            .to_string()
            .contains("x86_64, aarch64"));
        assert!(parse("all")
            .unwrap_err()
            .to_string()
            .contains("expected x86_64 or aarch64"));
    }
}
