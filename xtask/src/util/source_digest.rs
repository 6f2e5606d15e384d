//! The digest of the sources that judge a verify cell, keyed by what they do rather than
//! where they stand: a verified cell costs up to 20 minutes of machine time, so a pure
//! refactor (a module moved or renamed, items reordered, comments, formatting, tests) must
//! not make it unverified, while any change to what the code does, to the scenario table or
//! to a fixture must.
//!
//! A Rust file counts as the set of its top-level items, each with comments, whitespace,
//! trailing commas and lower-case path prefixes (`crate::`, `super::`, module names,
//! `std::fs::`) taken out; `use` and `mod` declarations and `#[cfg(test)]` items do not
//! count. The items of all files are one sorted list, so an item that moves to another file
//! or module leaves the digest as it was. Type and function names stay in (renaming one is
//! an edit of what the code says). Any other file (a C fixture, a header) counts by its name
//! within its directory and its bytes: the harness compiles fixtures by name.
//!
//! `xtask/build.rs` includes this file (`#[path]`) to digest the sources the binary is built
//! from; it uses std and `sha1_smol` only.

use std::path::{Path, PathBuf};

/// What a cell's verdict depends on besides the series and the builds, relative to the
/// workspace root, with the parts of each that never judge a cell: the harness (its scenario
/// table, fixtures and roots; not the Jetson replay nor the model's differential test, which
/// verify never runs), the vocabulary it is written in, the C fixtures, and the stages that
/// run the matrix and judge (`verify`'s insta snapshots are test data).
pub(crate) const JUDGING_SOURCES: &[(&str, &[&str])] = &[
    ("model/src", &[]),
    ("loader-tests/src", &["replay", "differential.rs"]),
    ("c-fixtures", &[]),
    ("xtask/src/resolution", &[]),
    ("xtask/src/verify", &["snapshots"]),
];

/// Every file of [`JUDGING_SOURCES`] under `root`, in path order.
pub(crate) fn judging_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for (dir, left_out) in JUDGING_SOURCES {
        collect(&root.join(dir), left_out, &mut files)?;
    }
    files.sort();
    Ok(files)
}

fn collect(dir: &Path, left_out: &[&str], files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if left_out.contains(&name.as_ref()) {
            continue;
        }
        if path.is_dir() {
            collect(&path, &[], files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// The digest of the judging sources under `root`.
pub(crate) fn judging_digest(root: &Path) -> std::io::Result<String> {
    let mut entries = Vec::new();
    for (dir, left_out) in JUDGING_SOURCES {
        let base = root.join(dir);
        let mut files = Vec::new();
        collect(&base, left_out, &mut files)?;
        for file in files {
            let bytes = std::fs::read(&file)?;
            if file.extension().is_some_and(|e| e == "rs") {
                let text = String::from_utf8_lossy(&bytes);
                entries.extend(
                    rust_items(&text)
                        .into_iter()
                        .map(|item| sha1(item.as_bytes())),
                );
            } else {
                let name = file
                    .strip_prefix(&base)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                let mut named = format!("file {dir}/{name}\0").into_bytes();
                named.extend_from_slice(&bytes);
                entries.push(sha1(&named));
            }
        }
    }
    entries.sort();
    entries.dedup();
    Ok(sha1(
        format!("judging sources v2\n{}\n", entries.join("\n")).as_bytes(),
    ))
}

fn sha1(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// A piece of Rust text: a string or character literal, kept whole, or one character of
/// code; `Space` stands for whitespace and comments between tokens.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Literal(String),
    Char(char),
    Space,
}

/// The top-level items of a Rust file that count, normalised (see the module header).
pub(crate) fn rust_items(text: &str) -> Vec<String> {
    let toks = tokens(text);
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, tok) in toks.iter().enumerate() {
        match tok {
            Tok::Char('(' | '[' | '{') => depth += 1,
            Tok::Char(')' | ']') => depth = depth.saturating_sub(1),
            Tok::Char('}') => {
                depth = depth.saturating_sub(1);
                // `use a::{b, c};` ends at its `;`.
                if depth == 0 && next_code(&toks, i + 1) != Some(&Tok::Char(';')) {
                    items.push(&toks[start..=i]);
                    start = i + 1;
                }
            }
            Tok::Char(';') if depth == 0 => {
                items.push(&toks[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&toks[start..]);
    items
        .into_iter()
        .filter(|item| counts(item))
        .map(normalised)
        .filter(|item| !item.is_empty() && item != ";")
        .collect()
}

/// Whether an item says what the code does: not a `use` or `mod` declaration (where code
/// stands), not a test.
fn counts(item: &[Tok]) -> bool {
    let spaced: String = item
        .iter()
        .map(|t| match t {
            Tok::Literal(l) => l.as_str().to_string(),
            Tok::Char(c) => c.to_string(),
            Tok::Space => " ".to_string(),
        })
        .collect();
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let text = words.join(" ");
    if text.starts_with("#[cfg(test)]") {
        return false;
    }
    let declaration = text
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub(super) ")
        .trim_start_matches("pub ");
    let is_declaration = declaration.starts_with("use ") || declaration.starts_with("mod ");
    !(is_declaration && text.ends_with(';'))
}

/// The item without whitespace, trailing commas and lower-case path prefixes.
fn normalised(item: &[Tok]) -> String {
    let ident =
        |t: Option<&Tok>| matches!(t, Some(Tok::Char(c)) if c.is_alphanumeric() || *c == '_');
    let mut out = String::new();
    let mut i = 0;
    while i < item.len() {
        match &item[i] {
            Tok::Space => i += 1,
            Tok::Literal(l) => {
                out.push_str(l);
                i += 1;
            }
            Tok::Char(',')
                if next_code(item, i + 1)
                    .is_some_and(|t| matches!(t, Tok::Char(')' | ']' | '}'))) =>
            {
                i += 1;
            }
            Tok::Char(c) if ident(Some(&item[i])) && !(i > 0 && ident(item.get(i - 1))) => {
                // A word: dropped with its `::` when it is a lower-case path prefix.
                let mut end = i;
                while ident(item.get(end)) {
                    end += 1;
                }
                let prefix = (c.is_ascii_lowercase() || *c == '_')
                    && item.get(end) == Some(&Tok::Char(':'))
                    && item.get(end + 1) == Some(&Tok::Char(':'));
                if prefix {
                    i = end + 2;
                } else {
                    for tok in &item[i..end] {
                        if let Tok::Char(c) = tok {
                            out.push(*c);
                        }
                    }
                    i = end;
                }
            }
            Tok::Char(c) => {
                out.push(*c);
                i += 1;
            }
        }
    }
    out
}

/// The first token at or after `at` that is not `Space`.
fn next_code(item: &[Tok], at: usize) -> Option<&Tok> {
    item.get(at..)?.iter().find(|t| **t != Tok::Space)
}

/// Rust text as tokens: comments and whitespace become `Space`, literals stay whole.
fn tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
            push_space(&mut toks);
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            push_space(&mut toks);
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            push_space(&mut toks);
        } else if let Some(end) = literal_end(&chars, i) {
            toks.push(Tok::Literal(chars[i..end].iter().collect()));
            i = end;
        } else {
            toks.push(Tok::Char(c));
            i += 1;
        }
    }
    toks
}

/// Where a string or character literal starting at `i` ends (after its closing quote), if
/// one starts there.
fn literal_end(chars: &[char], i: usize) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let next = chars.get(i + 1).copied();
    match chars[i] {
        'r' if !(i > 0 && ident(chars[i - 1])) && matches!(next, Some('"' | '#')) => {
            raw_string_at(chars, i + 1)
        }
        '"' => Some(quoted_end(chars, i + 1, '"')),
        // '\n', '\'', '\\', '\u{..}': the scan starts on the backslash, which escapes what follows.
        '\'' if next == Some('\\') => Some(quoted_end(chars, i + 1, '\'')),
        '\'' if chars.get(i + 2) == Some(&'\'') => Some(i + 3),
        _ => None,
    }
}

/// Where a literal closed by `quote` ends (after it), its text starting at `from`; a
/// backslash escapes the character after it.
fn quoted_end(chars: &[char], from: usize, quote: char) -> usize {
    let mut j = from;
    while j < chars.len() && chars[j] != quote {
        j += if chars[j] == '\\' { 2 } else { 1 };
    }
    (j + 1).min(chars.len())
}

fn push_space(toks: &mut Vec<Tok>) {
    if toks.last() != Some(&Tok::Space) {
        toks.push(Tok::Space);
    }
}

/// Where a raw string whose `#`s or quote start at `at` ends (after its last `#`), if it is
/// one.
fn raw_string_at(chars: &[char], at: usize) -> Option<usize> {
    let hashes = chars[at..].iter().take_while(|c| **c == '#').count();
    if chars.get(at + hashes) != Some(&'"') {
        return None;
    }
    let mut j = at + hashes + 1;
    while j < chars.len() {
        if chars[j] == '"' && chars[j + 1..].iter().take_while(|c| **c == '#').count() >= hashes {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf()
    }

    /// A copy of the judging sources of this checkout.
    fn copy() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in judging_files(&workspace()).unwrap() {
            let rel = file.strip_prefix(workspace()).unwrap();
            let to = dir.path().join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&file, &to).unwrap();
        }
        dir
    }

    fn edit(root: &Path, rel: &str, from: &str, to: &str) {
        let path = root.join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{rel} has no {from:?}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    }

    /// Every file of `dir` (recursively) with `from` replaced by `to`.
    fn edit_all(dir: &Path, from: &str, to: &str) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                edit_all(&path, from, to);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, text.replace(from, to)).unwrap();
            }
        }
    }

    #[test]
    fn a_module_moved_and_renamed_keeps_the_digest() {
        let tree = copy();
        let root = tree.path();
        let before = judging_digest(root).unwrap();
        // probe.rs becomes run/invocation.rs, and every path to it says so.
        let src = root.join("loader-tests/src");
        std::fs::create_dir(src.join("run")).unwrap();
        std::fs::rename(src.join("probe.rs"), src.join("run/invocation.rs")).unwrap();
        std::fs::write(
            src.join("run/mod.rs"),
            "//! Running.\npub mod invocation;\n",
        )
        .unwrap();
        edit(
            root,
            "loader-tests/src/lib.rs",
            "pub mod probe;",
            "pub mod run;",
        );
        edit_all(&src, "crate::probe::", "crate::run::invocation::");
        edit_all(
            &root.join("xtask/src"),
            "loader_tests::probe::",
            "loader_tests::run::invocation::",
        );
        // Comments and formatting are not what the code does either.
        edit(
            root,
            "loader-tests/src/root.rs",
            "//! Hermetic scenario roots",
            "//! Roots",
        );
        assert_eq!(judging_digest(root).unwrap(), before);
    }

    #[test]
    fn the_scenario_table_a_fixture_and_code_change_the_digest() {
        let tree = copy();
        let root = tree.path();
        let mut last = judging_digest(root).unwrap();
        // Each edit on top of the ones before it: (what, file, from, to).
        for (what, file, from, to) in [
            (
                "a fixture edit",
                "c-fixtures/libcuda.c",
                "#include",
                "#define EXTRA 1\n#include",
            ),
            (
                "a scenario table edit",
                "loader-tests/src/matrix/table.rs",
                "NEEDED_RUNPATH, FB_T), expected: Wins(Role::Compat)",
                "NEEDED_RUNPATH, FB_T), expected: Wins(Role::Driver)",
            ),
            ("a verdict edit", "xtask/src/verify/outcome.rs", "==", "!="),
        ] {
            edit(root, file, from, to);
            let digest = judging_digest(root).unwrap();
            assert_ne!(digest, last, "{what}");
            last = digest;
        }
    }

    #[test]
    fn items_leave_out_where_code_stands() {
        let text = r#"//! A module.
use crate::probe::{Run, Output};
pub(crate) mod inner;

/// Doc.
pub(crate) fn f(x: u32) -> String {
    let s = "a // not a comment, crate::x";
    crate::probe::run(
        x, // why
        '"',
    )
}

#[cfg(test)]
mod tests {
    fn t() {}
}
"#;
        assert_eq!(
            rust_items(text),
            [r#"pub(crate)fnf(x:u32)->String{lets="a // not a comment, crate::x";run(x,'"')}"#]
        );
    }

    /// A character literal whose escaped character is a quote or a backslash is one literal:
    /// its closing quote neither starts another literal nor is swallowed into one.
    #[test]
    fn escaped_quote_and_backslash_char_literals_are_whole() {
        let text = r"const PAIR: (char, char) = ('\'',' ');
const SLASH: char = '\\'; // it's
const NEXT: u8 = 1;
";
        assert_eq!(
            rust_items(text),
            [
                r"constPAIR:(char,char)=('\'',' ');",
                r"constSLASH:char='\\';",
                "constNEXT:u8=1;",
            ]
        );
    }
}
