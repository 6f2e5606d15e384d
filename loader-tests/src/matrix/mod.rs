//! The contract's scenarios (docs/contract.md), as data.
//!
//! A scenario is either a [`Row`] (what goes where in a root, what runs with which
//! variables, how to read the result), run by one interpreter, or, for the few that need more
//! than that (diagnostics, secure mode, the Jetson story), a function. Either way it says what
//! the patched loader must give and what the unpatched one gives instead.

use anyhow::Result;

use crate::root::Ctx;

mod jetson;
mod real;
mod row;
mod special;
mod table;

pub use real::RealCase;
pub use row::{Cmd, Dir, Env, List, Look, Put, Row, Value};
pub use table::MATRIX;

/// One scenario of the matrix.
pub struct Scenario {
    /// Stable name: `03-dlopen-runpath-miss`.
    pub id: &'static str,
    /// Where in the contract it comes from.
    pub contract: Contract,
    pub title: &'static str,
    /// What the patched loader must give.
    pub expected: &'static str,
    /// What the unpatched loader gives.
    pub unpatched: Unpatched,
    /// Secure-mode scenarios run a setuid-root program: elsewhere they are skipped.
    pub needs_root: bool,
    /// Real-binary scenarios need NVIDIA's libraries from Debian's archive: where it cannot be
    /// reached they are skipped (see `crate::nvidia`).
    pub needs_archive: bool,
    pub how: How,
}

/// A scenario's place in docs/contract.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contract {
    /// A numbered row of the contract's table.
    Row(u8),
    /// The user story (the Jetson app), told end to end.
    Story,
}

impl Contract {
    /// The row number, 0 for the story (JSON and sorting).
    pub fn number(self) -> u8 {
        match self {
            Contract::Row(n) => n,
            Contract::Story => 0,
        }
    }
}

/// What the unpatched loader does in a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpatched {
    /// The same as the patched one: the scenario does not depend on the patch.
    Same,
    /// Something else, which must differ from `expected`: the scenario needs the patch.
    Gives(&'static str),
}

/// How a scenario runs.
pub enum How {
    Row(Row),
    Code(fn(&Ctx) -> Result<Observed>),
}

/// What a scenario saw, or why it could not look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Seen(String),
    Skipped(String),
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

impl Scenario {
    pub fn needs_patch(&self) -> bool {
        matches!(self.unpatched, Unpatched::Gives(_))
    }

    /// What a loader of this flavour is expected to give.
    pub fn expectation(&self, flavour: crate::Flavour) -> &'static str {
        match (flavour, self.unpatched) {
            (crate::Flavour::Unpatched, Unpatched::Gives(without)) => without,
            _ => self.expected,
        }
    }

    pub fn run(&self, cx: &Ctx) -> Result<Observed> {
        if self.needs_root && !crate::host::is_root() {
            return Ok(Observed::Skipped(NOT_AS_ROOT.into()));
        }
        match &self.how {
            How::Row(row) => row.run(cx),
            How::Code(run) => run(cx),
        }
    }
}

const NOT_AS_ROOT: &str =
    "secure mode needs root: a setuid-root probe run as uid 65534 (run as root, as in CI)";

pub(crate) const CUDA: &str = "libcuda.so.1";

pub fn find(id: &str) -> Option<&'static Scenario> {
    MATRIX.iter().find(|s| s.id == id)
}

pub(crate) fn seen(text: impl Into<String>) -> Result<Observed> {
    Ok(Observed::Seen(text.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::MARKERS;

    #[test]
    fn ids_are_unique_and_rows_ordered() {
        let mut last = 0;
        for (i, s) in MATRIX.iter().enumerate() {
            assert!(
                MATRIX[..i].iter().all(|t| t.id != s.id),
                "duplicate id {}",
                s.id
            );
            if let Contract::Row(n) = s.contract {
                assert!(n >= last, "{} is out of order", s.id);
                assert!(
                    s.id.starts_with(&format!("{n:02}-")),
                    "{} is not row {n}",
                    s.id
                );
                last = n;
            }
        }
    }

    #[test]
    fn scenarios_that_need_the_patch_differ_without_it() {
        for s in MATRIX {
            if let Unpatched::Gives(without) = s.unpatched {
                assert_ne!(without, s.expected, "{}", s.id);
            }
        }
    }

    #[test]
    fn every_placed_role_has_a_marker() {
        for s in MATRIX {
            if let How::Row(row) = &s.how {
                for put in row.put {
                    if let Put::Cuda(role, _) = put {
                        assert!(
                            MARKERS.iter().any(|m| m.role == *role),
                            "{}: no marker for role {role}",
                            s.id
                        );
                    }
                }
            }
        }
    }
}
