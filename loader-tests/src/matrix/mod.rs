//! The contract's scenarios (docs/contract.md), as data.
//!
//! A scenario is either a [`Row`] (what goes where in a root, what runs with which
//! variables, how to read the result), run by one interpreter, or, for the few that need more
//! than that (diagnostics, secure mode, the Jetson story), a function. Either way it says what
//! the patched loader must give and what the unpatched one gives instead.

use anyhow::Result;
use serde::{Serialize, Serializer};

use crate::fixtures::Role;
use crate::root::Ctx;

mod jetson;
mod real;
mod row;
mod special;
mod table;

pub(crate) use row::{Cmd, EnvVar, Look, Put, Row};
pub use table::MATRIX;

/// One scenario of the matrix.
pub struct Scenario {
    /// Stable name: `03-dlopen-runpath-miss`.
    pub id: &'static str,
    /// Where in the contract it comes from.
    pub contract: Contract,
    pub title: &'static str,
    /// What the patched loader must give.
    pub expected: Expected,
    /// What the unpatched loader gives.
    pub unpatched: Unpatched,
    /// Secure-mode scenarios run a setuid-root program: elsewhere they are skipped.
    pub needs_root: bool,
    /// Real-binary scenarios need NVIDIA's libraries from Debian's archive: where it cannot be
    /// reached they are skipped (see `crate::nvidia`).
    pub needs_archive: bool,
    /// Where the scenario cannot apply by design, and why: there it is reported as n/a, never
    /// run, and never counted as a skip (a skip is a missing input, an n/a is not).
    pub not_applicable: Option<NotApplicable>,
    pub how: How,
}

/// A scenario's declaration that it cannot apply somewhere, by design.
#[derive(Debug, Clone, Copy)]
pub struct NotApplicable {
    pub when: Condition,
    pub why: &'static str,
}

/// Where a scenario may be declared not applicable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// The loader runs under QEMU user mode (a target the host cannot run natively).
    Emulated,
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
    Gives(Expected),
}

/// What a scenario gives: which `libcuda.so.1` copy won, that none was found, or, for a
/// scenario that reads more than the winner, what it says in words. The table writes
/// [`Expected`] answers; a run's answer is read from what it printed ([`Answer::read`]), and
/// the two compare as values. A role's name or `not found` is never words: the table cannot
/// write one with [`says`], and [`Answer::read`] reads one as what it is.
#[derive(Debug, Clone, Copy)]
pub enum Answer<Words = String> {
    /// The copy of this role won.
    Wins(Role),
    /// No copy was found.
    NotFound,
    /// Anything else, word for word: a diagnostic, a combined reading, an error.
    Says(Words),
}

/// An answer the table expects: its words are constants.
pub type Expected = Answer<&'static str>;

const NOT_FOUND: &str = "not found";

impl Answer {
    /// The answer `text` gives: a role's name, `not found`, or other words.
    pub fn read(text: impl Into<String>) -> Answer {
        let text = text.into();
        if text == NOT_FOUND {
            return Answer::NotFound;
        }
        match Role::parse(&text) {
            Some(role) => Answer::Wins(role),
            None => Answer::Says(text),
        }
    }
}

/// An expected answer in words. Evaluated in the table (a constant), so that words which name
/// a role or say `not found` fail to compile: those are [`Answer::Wins`] and
/// [`Answer::NotFound`], and as words they would never equal what a run reads.
pub(crate) const fn says(text: &'static str) -> Expected {
    assert!(
        !same_text(text, NOT_FOUND),
        "`not found` is Answer::NotFound, not words"
    );
    let mut i = 0;
    while i < Role::ALL.len() {
        assert!(
            !same_text(text, Role::ALL[i].name()),
            "a role's name is Answer::Wins, not words"
        );
        i += 1;
    }
    Answer::Says(text)
}

/// `a == b`, where a constant can evaluate it.
const fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// An expected answer equals a run's when both name the same copy, both found none, or both
/// say the same words.
impl<A: AsRef<str>, B: AsRef<str>> PartialEq<Answer<B>> for Answer<A> {
    fn eq(&self, other: &Answer<B>) -> bool {
        match (self, other) {
            (Answer::Wins(a), Answer::Wins(b)) => a == b,
            (Answer::NotFound, Answer::NotFound) => true,
            (Answer::Says(a), Answer::Says(b)) => a.as_ref() == b.as_ref(),
            _ => false,
        }
    }
}

impl<Words: AsRef<str>> Eq for Answer<Words> {}

impl<Words: AsRef<str>> std::fmt::Display for Answer<Words> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Wins(role) => f.write_str(role.name()),
            Answer::NotFound => f.write_str(NOT_FOUND),
            Answer::Says(words) => f.write_str(words.as_ref()),
        }
    }
}

/// Written as the text the report's table shows.
impl<Words: AsRef<str>> Serialize for Answer<Words> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// How a scenario runs.
pub enum How {
    Row(Row),
    Code(fn(&Ctx) -> Result<Observed>),
}

/// What a scenario saw, or why it could not look: an input is missing here (a skip), or the
/// scenario does not apply here by its declaration (n/a).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Seen(Answer),
    Skipped(String),
    NotApplicable(&'static str),
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
    pub fn expectation(&self, flavour: model::Flavour) -> Expected {
        match (flavour, self.unpatched) {
            (model::Flavour::Unpatched, Unpatched::Gives(without)) => without,
            _ => self.expected,
        }
    }

    /// Why the scenario does not apply on `bench`, when it is declared so.
    pub(crate) fn not_applicable_on(&self, bench: &crate::root::Bench) -> Option<&'static str> {
        let declared = self.not_applicable?;
        let holds = match declared.when {
            Condition::Emulated => bench.qemu.is_some(),
        };
        holds.then_some(declared.why)
    }

    pub fn run(&self, cx: &Ctx) -> Result<Observed> {
        if let Some(why) = self.not_applicable_on(cx.bench) {
            return Ok(Observed::NotApplicable(why));
        }
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

/// What a run printed, read as its answer.
pub(crate) fn seen(text: impl Into<String>) -> Result<Observed> {
    Ok(Observed::Seen(Answer::read(text)))
}

#[cfg(test)]
mod tests {
    use super::row::List;
    use super::*;

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

    /// A run's printed answer is read as the value the table writes: the same copy, none, or
    /// the same words; another copy, or other words, differ.
    #[test]
    fn answers_compare_as_values() {
        assert_eq!(Answer::read("driver"), Expected::Wins(Role::Driver));
        assert_eq!(Answer::read("not found"), Expected::NotFound);
        assert_ne!(Answer::read("compat"), Expected::Wins(Role::Driver));
        assert_ne!(Answer::read("not found"), Expected::Wins(Role::Driver));
        assert_eq!(Answer::read("T listed last"), says("T listed last"));
        assert_ne!(Answer::read("T not listed"), says("T listed last"));
        assert_ne!(
            Answer::read("driver from /elsewhere/libcuda.so.1"),
            Expected::Wins(Role::Driver)
        );
    }

    /// What the table says a scenario gives reads back as the same answer: the text a report
    /// shows for an expectation is the text a run that meets it prints.
    #[test]
    fn every_expectation_reads_back_as_itself() {
        for s in MATRIX {
            for flavour in [model::Flavour::Patched, model::Flavour::Unpatched] {
                let expected = s.expectation(flavour);
                assert_eq!(Answer::read(expected.to_string()), expected, "{}", s.id);
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

    /// The ldd script needs a bash of the target's machine, which QEMU user mode does not
    /// give: both scenarios that run it say so in the table, and no other scenario is n/a.
    #[test]
    fn the_ldd_script_scenarios_are_declared_not_applicable_under_qemu() {
        let declared: Vec<&str> = MATRIX
            .iter()
            .filter(|s| s.not_applicable.is_some())
            .map(|s| s.id)
            .collect();
        assert_eq!(declared, ["04-ldd-script-nothing-set", "21-ldd-script"]);
        for s in MATRIX {
            let runs_the_script = matches!(&s.how, How::Row(row)
                if matches!(row.run, Cmd::Listing(List::Script, _)));
            assert_eq!(
                runs_the_script,
                s.not_applicable
                    .is_some_and(|n| n.when == Condition::Emulated),
                "{}",
                s.id
            );
        }
    }
}
