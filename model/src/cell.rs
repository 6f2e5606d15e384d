//! A cell: one release on one target, what `verify` proves and the support table lists.

use crate::{Release, Target};

/// One release on one target.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Cell {
    pub release: Release,
    pub target: Target,
}

impl Cell {
    pub fn new(release: Release, target: Target) -> Cell {
        Cell { release, target }
    }
}

/// `2.44 x86_64`.
impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.release, self.target)
    }
}
