//! House rules, checked like tests (rust-analyzer's tidy): formatting, clippy with warnings
//! denied, a `//!` header on every module, context on every filesystem error, and no unused
//! dependency. `cargo xtask ci` runs this first: it is the cheapest failure to find.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace());
    cmd
}

fn run(cmd: &mut Command, fix: &str) {
    crate::common::succeeded(cmd, &format!("; to fix: {fix}"));
}

/// The Rust sources of every crate of [`CRATES`]: `src/` and `tests/`.
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for (krate, _) in CRATES {
        for dir in ["src", "tests"] {
            collect(&workspace().join(krate).join(dir), &mut files);
        }
    }
    files.sort();
    files
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn formatted() {
    run(
        cargo().args(["fmt", "--all", "--", "--check"]),
        "cargo fmt --all",
    );
}

#[test]
fn clippy_has_nothing_to_say() {
    run(
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "--deny",
            "warnings",
        ]),
        "cargo clippy --workspace --all-targets, then mend what it says",
    );
}

/// `pub` means reachable from outside the crate; everything else is `pub(crate)`, so that
/// dead code is the compiler's to find. The workspace warns `unreachable_pub` (and the clippy
/// run above denies warnings); every crate must take the workspace's lints.
#[test]
fn pub_means_reachable_in_every_crate() {
    let manifest = std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    let lints = manifest
        .split("[workspace.lints.rust]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap_or("");
    assert!(
        lints.contains("unreachable_pub = \"warn\""),
        "Cargo.toml's [workspace.lints.rust] must warn unreachable_pub"
    );
    for (krate, dir) in crate_dirs() {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("[lints]\nworkspace = true\n"),
            "{krate}/Cargo.toml does not take the workspace's lints ([lints] workspace = true)"
        );
    }
}

/// Fails listing what was `found`, one a line, under `what` (what they are, and the fix).
fn assert_none_found(found: &[String], what: &str) {
    assert!(found.is_empty(), "{what}:\n  {}", found.join("\n  "));
}

/// Calls `visit` with each line of the code (what comes before any `#[cfg(test)]`: unit
/// tests may do as they like) of the sources whose path (from the workspace) `wanted` keeps:
/// the path, the line's 0-based index, and all the code's lines.
fn for_each_code_line(wanted: impl Fn(&str) -> bool, mut visit: impl FnMut(&str, usize, &[&str])) {
    for path in sources() {
        let rel = relative(&path);
        if !wanted(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let lines: Vec<&str> = code.lines().collect();
        for i in 0..lines.len() {
            visit(&rel, i, &lines);
        }
    }
}

#[test]
fn every_module_says_what_it_is() {
    let missing: Vec<String> = sources()
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            !text.trim_start().starts_with("//!")
        })
        .map(|path| relative(path))
        .collect();
    assert_none_found(
        &missing,
        "modules without a `//!` header saying what they are for",
    );
}

/// A filesystem call whose error is passed on with `?` must say which path failed: a bare
/// "No such file or directory" names no file.
#[test]
fn filesystem_errors_carry_context() {
    let mut bare = Vec::new();
    // model/src/file.rs reads a file for its caller and returns std's error as it is (its
    // kind tells a missing file from a refused one): every caller names the path.
    let outside_tests =
        |rel: &str| !rel.split('/').any(|c| c == "tests") && rel != "model/src/file.rs";
    for_each_code_line(outside_tests, |rel, i, lines| {
        let line = lines[i];
        if line.trim_start().starts_with("//") || !is_fs_call(line) {
            return;
        }
        let statement = statement_from(lines, i);
        // `.ok()?` turns the error into `None` on purpose: nothing is passed on.
        let propagates = statement.replace(".ok()?", "").contains(")?");
        let described = statement.contains("context(") || statement.contains("with_context(");
        if propagates && !described {
            bare.push(format!("{rel}:{}: {}", i + 1, line.trim()));
        }
    });
    assert_none_found(
        &bare,
        "filesystem errors passed on without naming the path (add .with_context(|| \
         format!(\"cannot ... {}\", path.display())))",
    );
}

/// The commands print through `xtask::util::output`'s macros, which survive a closed pipe
/// (`cargo xtask store list | head -1`); std's panic on it, in the middle of the work.
/// The files of `src/` that are code a user runs: not `tests/`, not a unit-test module of its
/// own (`tests.rs`).
fn production(rel: &str) -> bool {
    rel.contains("/src/") && !rel.split('/').any(|c| c == "tests" || c == "tests.rs")
}

/// No `unwrap()` where a user's run can reach it: a panic names a line of ours, not what was
/// wrong; an error with context names the cause (and where `None` cannot happen, the code
/// says why without a panic in waiting).
#[test]
fn no_unwrap_outside_tests() {
    let mut found = Vec::new();
    for_each_code_line(production, |rel, i, lines| {
        let line = lines[i];
        if line.contains(".unwrap()") && !line.trim_start().starts_with("//") {
            found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
        }
    });
    assert_none_found(
        &found,
        "unwrap() outside tests (return an error with .context(...), or say with a match or \
         a default why the value is always there)",
    );
}

/// No line of source over a thousand characters: prose a page shows is written in lines a
/// reviewer can read in a diff (a string continued with `\`), not one line per paragraph.
#[test]
fn no_source_line_over_a_thousand_characters() {
    let mut found = Vec::new();
    for path in sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.chars().count() > 1000 {
                found.push(format!("{}:{}", relative(&path), i + 1));
            }
        }
    }
    assert_none_found(
        &found,
        "source lines over 1,000 characters (continue the string with `\\` at a space)",
    );
}

#[test]
fn output_survives_a_closed_pipe() {
    let mut std_macros = Vec::new();
    let commands = |rel: &str| rel.starts_with("xtask/src/") && rel != "xtask/src/util/output.rs";
    for_each_code_line(commands, |rel, i, lines| {
        let line = lines[i];
        let uses_std = ["println!", "print!(", "eprintln!", "eprint!("]
            .iter()
            .any(|m| line.contains(m));
        if uses_std && !line.trim_start().starts_with("//") {
            std_macros.push(format!("{rel}:{}: {}", i + 1, line.trim()));
        }
    });
    assert_none_found(
        &std_macros,
        "std's print macros panic when the reader of a pipe is gone; use outln!/out! (stdout) \
         or diagln!/diag! (stderr)",
    );
}

/// libgit2 reads git's configuration with a blocking `open` to open any repository: a FIFO
/// as `~/.gitconfig` would hang the command. Repositories and git's configuration are opened
/// through `xtask::util::git`, which looks at every file git would read first.
#[test]
fn git_opens_through_util_git() {
    let mut direct = Vec::new();
    let commands = |rel: &str| rel.starts_with("xtask/src/") && rel != "xtask/src/util/git.rs";
    for_each_code_line(commands, |rel, i, lines| {
        let line = lines[i];
        let opens = [
            "Repository::open",
            "Repository::init",
            "Repository::discover",
            "Config::open",
        ]
        .iter()
        .any(|call| line.contains(call));
        if opens && !line.trim_start().starts_with("//") {
            direct.push(format!("{rel}:{}: {}", i + 1, line.trim()));
        }
    });
    assert_none_found(
        &direct,
        "git repositories or configuration opened without looking at git's configuration \
         files first; use xtask::util::git's open, open_bare, init_bare, discover or \
         user_configuration",
    );
}

/// xshell's `Cmd::run` echoes the command line with std's `eprintln!` unless told `.quiet()`:
/// the panic [`output_survives_a_closed_pipe`] keeps out, from inside a dependency. Found per
/// statement: a `cmd!` whose statement runs it.
#[test]
fn shell_commands_run_quietly() {
    let mut loud = Vec::new();
    let commands = |rel: &str| rel.starts_with("xtask/src/");
    for_each_code_line(commands, |rel, i, lines| {
        let line = lines[i];
        if line.trim_start().starts_with("//") || !line.contains("cmd!(") {
            return;
        }
        let statement = statement_from(lines, i);
        if statement.contains(".run()") && !statement.contains(".quiet()") {
            loud.push(format!("{rel}:{}: {}", i + 1, line.trim()));
        }
    });
    assert_none_found(
        &loud,
        "xshell commands run with their echo, which std's eprintln! writes (and panics on a \
         closed pipe): add .quiet() before .run()",
    );
}

/// The workspace's crates, bottom first: the vocabulary, the generated files and blocks, the
/// model of the loader's search,
/// the harness that runs real loaders (and holds the model against them), the stand-alone
/// `ld-fallback-explain` (its examples test runs the harness), `cargo xtask`.
/// A crate may name only crates below it (its own tests may name it too), so that the light
/// crates stay light and no crate reaches up.
const CRATES: &[(&str, &str)] = &[
    ("model", "model"),
    ("generated", "generated"),
    ("loader-model", "loader_model"),
    ("loader-tests", "loader_tests"),
    ("explain", "ld_fallback_explain"),
    ("xtask", "xtask"),
];

/// Each crate of [`CRATES`] with its directory.
fn crate_dirs() -> impl Iterator<Item = (&'static str, PathBuf)> {
    CRATES.iter().map(|(dir, _)| (*dir, workspace().join(dir)))
}

/// xtask's top-level modules in layers, bottom first: plumbing and vocabulary, the stages in
/// the order data flows through them, the commands that take several stages, the check of
/// what they all generate, the command tree. A module may name (`crate::<module>`) only modules of lower layers, so that no
/// stage reaches back up the pipeline and no import circle joins two of them. A new module
/// has to be placed here.
const LAYERS: &[&[&str]] = &[
    &["util"],
    &["cli"],
    &["store"],
    &["merge"],
    &["series"],
    &["nix_stack"],
    &["debian_stack"],
    &["rebase"],
    &["sysroot"],
    &["resolution"],
    &["verify"],
    &["ci"],
    &[
        "update",
        "rehearse_release",
        "format_series",
        "jetson_replay",
        "explain",
        "fuzz_model",
    ],
    // The benches, which time the stages and the commands above (the replay's, for one).
    &["bench"],
    // Every generated file, whichever command above makes it (the Jetson page's provenance).
    &["regenerate"],
    &["commands"],
];

/// loader-model's modules, bottom first: names and paths as bytes; reading files and ELF
/// objects and ld.so.cache, what the loader brings (default directories, hwcaps), directory
/// lists, whether the program starts and under which loader, the walk, the tiers of one
/// search and the hazards found in a finished walk, the renderings.
const LOADER_MODEL_LAYERS: &[&[&str]] = &[
    &["bytes"],
    &["fs", "elf", "cache"],
    &["platform"],
    &["paths", "start"],
    &["walk"],
    &["tiers", "hazards"],
    &["render"],
];

/// loader-tests' modules, bottom first: the host; the layout of a root, running a program
/// and reading its trace; fixtures and Debian packages; the hermetic roots; the scenarios
/// (the matrix), the model held against the real loaders and the worlds it traces; the
/// Jetson replay and the reports.
const LOADER_TESTS_LAYERS: &[&[&str]] = &[
    &["host"],
    &["layout", "probe", "trace"],
    &["apt", "fixtures"],
    &["debs"],
    &["nvidia", "root"],
    &["matrix", "differential", "world"],
    &["replay", "report"],
];

/// Code only: comment lines left out.
fn code_of(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// The first words of the paths that start with `prefix` (`crate::`, `super::`) in `code`.
fn path_heads(code: &str, prefix: &str) -> Vec<String> {
    let mut named = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            // `crate::{a, b::{c, d}, self}`: the first word of each top-level item.
            Some(group) => top_level_items(group)
                .into_iter()
                .map(|item| item.trim().split("::").next().unwrap_or(""))
                .collect(),
            None => vec![rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")],
        };
        named.extend(
            names
                .into_iter()
                .filter(|n| !n.is_empty())
                .map(str::to_string),
        );
    }
    named
}

/// The top-level modules `text` names through `crate::`, code only (comments left out).
fn crate_modules(text: &str) -> Vec<String> {
    path_heads(&code_of(text), "crate::")
}

/// The items of a `{...}` group (`group` starts after its `{`), split at its own commas.
fn top_level_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// The imports of `src` (a crate's `src/`) against `layers`: `path` is where the file
/// is, relative to `src`, and `text` what it holds.
fn layer_violations(krate: &str, layers: &[&[&str]], files: &[(PathBuf, String)]) -> Vec<String> {
    let layer_of = |module: &str| layers.iter().position(|layer| layer.contains(&module));
    let modules: Vec<String> = files.iter().map(|(rel, _)| top_module(rel)).collect();
    let mut wrong = Vec::new();
    for ((rel, text), module) in files.iter().zip(&modules) {
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(layer) = layer_of(module) else {
            wrong.push(format!(
                "{krate}/src/{}: a module in no layer (add it to the crate's layers)",
                rel.display()
            ));
            continue;
        };
        let code = code_of(text);
        let mut named = path_heads(&code, "crate::");
        // In `src/x.rs` and `src/x/mod.rs`, `super::` is the crate root.
        if rel.components().count() == 1 || rel.ends_with("mod.rs") && rel.components().count() == 2
        {
            named.extend(path_heads(&code, "super::"));
        }
        for named in named {
            if &named == module {
                continue;
            }
            match layer_of(&named) {
                Some(other) if other < layer => {}
                // An item of the crate root, not a module.
                None if !modules.contains(&named) => {}
                _ => wrong.push(format!(
                    "{krate}/src/{}: imports crate::{named}, which is not below {module}",
                    rel.display()
                )),
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    wrong
}

/// The top-level module a file of `src/` belongs to (`lib` for `lib.rs`).
fn top_module(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The `.rs` files under `dir`, relative to it, with their text.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    collect(dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            (path.strip_prefix(dir).unwrap().to_path_buf(), text)
        })
        .collect()
}

#[test]
fn stages_import_only_downward() {
    let mut wrong = Vec::new();
    for (krate, layers) in [
        ("xtask", LAYERS),
        ("loader-model", LOADER_MODEL_LAYERS),
        ("loader-tests", LOADER_TESTS_LAYERS),
    ] {
        let files = files_under(&workspace().join(krate).join("src"));
        wrong.extend(layer_violations(krate, layers, &files));
    }
    assert_none_found(
        &wrong,
        "imports against the layers (see LAYERS and the crates' layers beside it: move the \
         code to the lower module, or pass what it needs in from above)",
    );
}

/// The module a file of `src/` is (`replay::cache` for `replay/cache.rs` and
/// `replay/cache/mod.rs`; the crate root for `lib.rs` and `main.rs`), as its path words.
fn module_of(rel: &Path) -> Vec<String> {
    let mut words: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if words.last().is_some_and(|w| w == "mod") || words == ["lib"] || words == ["main"] {
        words.pop();
    }
    words
}

/// Every path in `code` that starts at `crate::`, `super::` or `self::`, groups expanded
/// (`super::{a::X, b}` is `super::a::X` and `super::b`), as its words.
fn module_paths(code: &str) -> Vec<Vec<String>> {
    fn ident_end(s: &str) -> usize {
        s.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    }
    /// The paths of `rest` (just after a `::`) below `stem`.
    fn expand(stem: &[String], rest: &str, out: &mut Vec<Vec<String>>) {
        let rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            for item in top_level_items(group) {
                expand(stem, item, out);
            }
            return;
        }
        let end = ident_end(rest);
        let mut path = stem.to_vec();
        if end > 0 {
            path.push(rest[..end].to_string());
        }
        match rest[end..].strip_prefix("::") {
            Some(tail) if end > 0 => expand(&path, tail, out),
            _ => out.push(path),
        }
    }
    let mut paths = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let head = start.trim_end_matches(':').to_string();
            expand(&[head], &code[at + start.len()..], &mut paths);
        }
    }
    paths
}

/// Where `path`, named in the module `from`, leads: the longest of its prefixes that is one of
/// `modules` (the crate root when none is).
fn resolve(from: &[String], path: &[String], modules: &[Vec<String>]) -> Vec<String> {
    let mut at: Vec<String> = from.to_vec();
    let mut words = path.iter().peekable();
    match words.peek().map(|w| w.as_str()) {
        Some("crate") => {
            at.clear();
            words.next();
        }
        Some("self") => {
            words.next();
        }
        _ => {}
    }
    while words.peek().is_some_and(|w| *w == "super") {
        at.pop();
        words.next();
    }
    let mut found = at.clone();
    for word in words {
        at.push(word.clone());
        if modules.contains(&at) {
            found = at.clone();
        }
    }
    found
}

/// The import circles between the files of `krate`'s `src/` (`files`, as [`files_under`]
/// reads them): each import from one file to another is lifted to the two modules of their
/// nearest common module that hold them (`verify/cell.rs` naming `super::outcome` is
/// `cell -> outcome` in `verify`; `a/x.rs` naming `crate::b::y` is `a -> b` at the root),
/// and a loop of such imports among the modules of one parent is a circle. A module naming
/// its own parent or a module inside it is no import between two rooms (`super::Column`
/// in a submodule, `mod.rs` naming its children), and the compiler checks that.
fn import_circles(krate: &str, files: &[(PathBuf, String)]) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let modules: Vec<Vec<String>> = files.iter().map(|(rel, _)| module_of(rel)).collect();
    // parent -> (child -> (child it imports -> the first file that does, and what it names)).
    type Edges = BTreeMap<String, BTreeMap<String, (String, String)>>;
    let mut graphs: BTreeMap<Vec<String>, Edges> = BTreeMap::new();
    for ((rel, text), from) in files.iter().zip(&modules) {
        for path in module_paths(&code_of(text)) {
            let to = resolve(from, &path, &modules);
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue;
            }
            let (a, b) = (from[common].clone(), to[common].clone());
            graphs
                .entry(from[..common].to_vec())
                .or_default()
                .entry(a)
                .or_default()
                .entry(b)
                .or_insert_with(|| (rel.display().to_string(), path.join("::")));
        }
    }
    let mut circles = Vec::new();
    for (parent, edges) in &graphs {
        // A node's circle is what it reaches that reaches it back (the graphs are a few
        // dozen nodes: no need for Tarjan's algorithm).
        let reaches = |from: &str| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.to_string()];
            while let Some(node) = todo.pop() {
                for next in edges.get(&node).into_iter().flat_map(|e| e.keys()) {
                    if seen.insert(next.clone()) {
                        todo.push(next.clone());
                    }
                }
            }
            seen
        };
        let mut placed = BTreeSet::new();
        for node in edges.keys() {
            if placed.contains(node) {
                continue;
            }
            let from_node = reaches(node);
            if !from_node.contains(node) {
                continue;
            }
            let circle: BTreeSet<String> = from_node
                .into_iter()
                .filter(|other| reaches(other).contains(node))
                .collect();
            let mut ties = Vec::new();
            for a in &circle {
                for (b, (file, named)) in &edges[a] {
                    if circle.contains(b) {
                        ties.push(format!("{a} -> {b} ({file} names {named})"));
                    }
                }
            }
            placed.extend(circle);
            let place = match parent.is_empty() {
                true => String::new(),
                false => format!("{}/", parent.join("/")),
            };
            circles.push(format!("{krate}/src/{place}: {}", ties.join(", ")));
        }
    }
    circles
}

/// No two files import each other, directly or round a loop, at any depth: a circle makes
/// the pair one unit that reads as two. The layers above hold the top-level modules; this
/// holds the files inside a module, in every crate.
#[test]
fn no_import_circles_between_files() {
    let mut circles = Vec::new();
    for (krate, dir) in crate_dirs() {
        circles.extend(import_circles(krate, &files_under(&dir.join("src"))));
    }
    assert_none_found(
        &circles,
        "import circles between files (move what both need into one of them, or into a \
         module both import)",
    );
}

/// A circle between two files of a module is found, and so is one round a third file of
/// another module; a file naming its parent's items is none.
#[test]
fn an_import_circle_is_found() {
    let file = |rel: &str, text: &str| (PathBuf::from(rel), format!("//! A file.\n{text}"));
    let files = vec![
        file("lib.rs", "mod replay;\nmod root;\n"),
        file("root.rs", "use crate::layout::Layout;\n"),
        file(
            "replay/mod.rs",
            "mod cache;\nmod paths;\nuse paths::Paths;\n",
        ),
        file(
            "replay/cache.rs",
            "use super::{paths::Paths, Column};\nuse crate::root::Root;\n",
        ),
        file("replay/paths.rs", "// super::cache in a comment\n"),
    ];
    assert_eq!(import_circles("loader-tests", &files), Vec::<String>::new());
    let mut planted = files.clone();
    planted[4] = file(
        "replay/paths.rs",
        "fn dir() -> &'static str { super::cache::compat_dir() }\n",
    );
    assert_eq!(
        import_circles("loader-tests", &planted),
        ["loader-tests/src/replay/: cache -> paths (replay/cache.rs names super::paths::Paths), \
          paths -> cache (replay/paths.rs names super::cache::compat_dir)"]
    );
    let mut planted = files;
    planted[1] = file("root.rs", "use crate::replay::cache::Layout;\n");
    assert_eq!(
        import_circles("loader-tests", &planted),
        [
            "loader-tests/src/: replay -> root (replay/cache.rs names crate::root::Root), \
          root -> replay (root.rs names crate::replay::cache::Layout)"
        ]
    );
}

/// The crates ARCHITECTURE.md gives a section (`### `model/``), and the top-level modules of
/// `xtask/src/` it names anywhere (`xtask/src/store/`, `xtask/src/cli.rs`).
fn architecture_names(page: &str) -> (Vec<String>, Vec<String>) {
    let crates = page
        .lines()
        .filter_map(|line| line.strip_prefix("### `")?.strip_suffix("/`"))
        .map(str::to_string)
        .collect();
    let mut modules: Vec<String> = page
        .match_indices("`xtask/src/")
        .map(|(at, prefix)| {
            let rest = &page[at + prefix.len()..];
            let end = rest.find(['/', '`']).unwrap_or(rest.len());
            rest[..end].trim_end_matches(".rs").to_string()
        })
        // `xtask/src/` itself names no module.
        .filter(|name| !name.is_empty())
        .collect();
    modules.sort();
    modules.dedup();
    (crates, modules)
}

/// What ARCHITECTURE.md names and what is there, apart: `crates` and `modules` are the
/// workspace's members and the entries of `xtask/src/` (`lib.rs` and `main.rs` left out).
fn architecture_gaps(page: &str, crates: &[String], modules: &[String]) -> Vec<String> {
    let (named_crates, named_modules) = architecture_names(page);
    let mut gaps = Vec::new();
    for (what, there, named) in [
        ("crate ", crates, &named_crates),
        ("module xtask/src/", modules, &named_modules),
    ] {
        for name in there.iter().filter(|n| !named.contains(n)) {
            gaps.push(format!(
                "the {what}{name} is there, and the page does not name it"
            ));
        }
        for name in named.iter().filter(|n| !there.contains(n)) {
            gaps.push(format!(
                "the page names the {what}{name}, which is not there"
            ));
        }
    }
    gaps
}

/// The workspace's members, from the root Cargo.toml.
fn workspace_members() -> Vec<String> {
    let manifest = std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("the root Cargo.toml lists its members")
        .0;
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The top-level modules of xtask, as its `src/` holds them.
fn xtask_modules() -> Vec<String> {
    let mut modules: Vec<String> = std::fs::read_dir(workspace().join("xtask/src"))
        .unwrap()
        .map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            name.trim_end_matches(".rs").to_string()
        })
        .filter(|name| name != "lib" && name != "main")
        .collect();
    modules.sort();
    modules
}

/// ARCHITECTURE.md is the map of the house: every crate and every top-level module of
/// xtask is on it, and nothing it names is gone.
#[test]
fn architecture_names_every_crate_and_module() {
    let page = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    assert_none_found(
        &architecture_gaps(&page, &workspace_members(), &xtask_modules()),
        "ARCHITECTURE.md and the tree disagree (give a crate its `### `name/`` section, a \
         module its line under xtask/; take out what is gone)",
    );
}

#[test]
fn a_crate_or_module_missing_from_the_map_is_found() {
    let page = "### `model/`\n\n### `xtask/`\n\n- `xtask/src/store/`: the store.\n\
                - `xtask/src/cli.rs`: words; see `xtask/src/store/import/`.\n\
                - `xtask/src/glibc/`: gone.\n";
    let crates = ["model", "explain", "xtask"].map(String::from);
    let modules = ["cli", "store", "verify"].map(String::from);
    assert_eq!(
        architecture_gaps(page, &crates, &modules),
        [
            "the crate explain is there, and the page does not name it",
            "the module xtask/src/verify is there, and the page does not name it",
            "the page names the module xtask/src/glibc, which is not there",
        ]
    );
}

/// xtask/src/lib.rs declares its modules in the order of [`LAYERS`], bottom first, so that
/// the file reads as the map does.
#[test]
fn xtask_declares_its_modules_in_layer_order() {
    let lib = std::fs::read_to_string(workspace().join("xtask/src/lib.rs")).unwrap();
    let code = code_of(&lib);
    let declared: Vec<&str> = code
        .lines()
        .filter_map(|line| {
            let line = line.trim_start_matches("pub ");
            line.strip_prefix("mod ")?.strip_suffix(';')
        })
        .map(|name| name.trim())
        .collect();
    let layer_of = |m: &str| LAYERS.iter().position(|layer| layer.contains(&m));
    let out_of_order: Vec<String> = declared
        .windows(2)
        .filter(|pair| layer_of(pair[0]) > layer_of(pair[1]))
        .map(|pair| format!("{} before {}", pair[0], pair[1]))
        .collect();
    assert_none_found(
        &out_of_order,
        "xtask/src/lib.rs declares a module before one of a lower layer (see LAYERS)",
    );
}

/// The workspace crates a file names (`loader_model::`, `use model;`), code only.
fn crates_named(text: &str) -> Vec<&'static str> {
    let code = code_of(text);
    CRATES
        .iter()
        .map(|(_, name)| *name)
        .filter(|name| {
            code.match_indices(name).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = &code[at + name.len()..];
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                    && (after.starts_with("::") || after.starts_with(';'))
            })
        })
        .collect()
}

fn crate_violations(
    krate: &str,
    place: &str,
    files: &[(PathBuf, String)],
    own_tests: bool,
) -> Vec<String> {
    let level = |name: &str| CRATES.iter().position(|(_, n)| *n == name).unwrap();
    let own = CRATES.iter().position(|(dir, _)| *dir == krate).unwrap();
    let mut wrong = Vec::new();
    for (rel, text) in files {
        for named in crates_named(text) {
            let other = level(named);
            if other < own || own_tests && other == own {
                continue;
            }
            if other != own {
                wrong.push(format!(
                    "{krate}/{place}/{}: names the crate {named}, which is not below {krate}",
                    rel.display()
                ));
            }
        }
    }
    wrong
}

#[test]
fn crates_import_only_downward() {
    let mut wrong = Vec::new();
    for (krate, dir) in crate_dirs() {
        let src = files_under(&dir.join("src"));
        wrong.extend(crate_violations(krate, "src", &src, false));
        let tests = files_under(&dir.join("tests"));
        wrong.extend(crate_violations(krate, "tests", &tests, true));
    }
    assert_none_found(&wrong, "crates naming crates above them (see CRATES)");
}

/// The checks above find an upward import, in a module and across crates.
#[test]
fn an_upward_import_is_found() {
    let files = vec![
        (
            PathBuf::from("fs.rs"),
            "//! Files.\nuse super::walk::Model;\n".to_string(),
        ),
        (
            PathBuf::from("walk.rs"),
            "//! The walk.\nuse crate::fs::Tree;\n// crate::render in a comment\n".to_string(),
        ),
        (PathBuf::from("render.rs"), "//! Text.\n".to_string()),
    ];
    assert_eq!(
        layer_violations("loader-model", LOADER_MODEL_LAYERS, &files),
        ["loader-model/src/fs.rs: imports crate::walk, which is not below fs"]
    );
    let files = vec![(
        PathBuf::from("lib.rs"),
        "//! The model.\nuse loader_tests::root::Root;\nuse model::Target;\n".to_string(),
    )];
    assert_eq!(
        crate_violations("loader-model", "src", &files, false),
        ["loader-model/src/lib.rs: names the crate loader_tests, which is not below loader-model"]
    );
}

#[test]
fn crate_paths_are_read_from_code_only() {
    let text = "use crate::{cli::Env, util::{self, paths}};\n// crate::verify in a comment\n\
                let x = crate::store::open(); my_crate::series::x();\n";
    assert_eq!(crate_modules(text), ["cli", "util", "store"]);
}

fn is_fs_call(line: &str) -> bool {
    ["fs::", "File::open(", "File::create(", "OpenOptions::"]
        .iter()
        .any(|call| line.contains(call))
        && !line.trim_start().starts_with("use ")
}

/// The statement starting at line `i`, up to its `;` (or the block it opens).
fn statement_from(lines: &[&str], i: usize) -> String {
    let mut text = String::new();
    for line in &lines[i..] {
        text.push_str(line.trim());
        text.push(' ');
        if line.trim_end().ends_with(';') || line.trim_end().ends_with('{') {
            break;
        }
    }
    text
}

#[test]
fn every_dependency_is_used() {
    let mut unused = Vec::new();
    for (krate, dir) in crate_dirs() {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        for (section, code_dirs) in [
            ("[dependencies]", &["src"][..]),
            ("[dev-dependencies]", &["tests", "src"][..]),
        ] {
            for dep in dependencies(&manifest, section) {
                let name = dep.replace('-', "_");
                let used = code_dirs.iter().any(|d| {
                    let mut files = Vec::new();
                    collect(&dir.join(d), &mut files);
                    files.iter().any(|f| {
                        let text = std::fs::read_to_string(f).unwrap();
                        text.contains(&format!("{name}::")) || text.contains(&format!("use {name}"))
                    })
                });
                if !used {
                    unused.push(format!("{krate}: {dep} ({section})"));
                }
            }
        }
    }
    assert_none_found(
        &unused,
        "dependencies no code uses (remove them from Cargo.toml)",
    );
}

fn dependencies(manifest: &str, section: &str) -> Vec<String> {
    let Some(body) = manifest.split(section).nth(1) else {
        return Vec::new();
    };
    body.lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| {
            let l = l.trim();
            (!l.is_empty() && !l.starts_with('#'))
                .then(|| l.split(['.', ' ', '=']).next().unwrap().to_string())
        })
        .collect()
}

/// Where a page quotes a duration (`6:49`, `27.4 min`, `50-80 ms`, `7.4 minutes`, "hours to
/// days"), outside the blocks a command generates (`<!-- NAME: begin ... -->` to
/// `<!-- NAME: end -->`), if anywhere.
fn quoted_durations(text: &str) -> Vec<(usize, String)> {
    outside_generated(text, false)
        .flat_map(|(n, line)| durations_in(line).into_iter().map(move |d| (n, d)))
        .collect()
}

/// The lines of a page (1-based numbers) outside its generated blocks and, with
/// `skip_fences`, outside its fenced blocks too (a command's output, quoted from one dated run).
fn outside_generated(text: &str, skip_fences: bool) -> impl Iterator<Item = (usize, &str)> {
    let mut generated = false;
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(n, line)| {
        let trimmed = line.trim_start();
        if trimmed.starts_with("<!-- ") && trimmed.contains(": begin") {
            generated = true;
            return None;
        }
        if trimmed.starts_with("<!-- ") && trimmed.contains(": end -->") {
            generated = false;
            return None;
        }
        if skip_fences && trimmed.starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!generated && !fenced).then_some((n + 1, line))
    })
}

/// Durations said in words: these always (`hours to days`, `in seconds`), and their singular
/// after a number (`1 hour`).
const DURATION_WORDS: [&str; 4] = ["seconds", "minutes", "hours", "days"];

/// The durations of one line: a number or range (`0.6-2.5`) followed by `ms`, `s`, `min` or
/// `h` as a word, or a clock figure (`6:49`).
fn durations_in(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0 || !(is_word(chars[i - 1]) || matches!(chars[i - 1], '.' | ':' | '-')));
        if !starts_number {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && (chars[j].is_ascii_digit() || matches!(chars[j], '.' | '-')) {
            j += 1;
        }
        // A clock figure: one or two digits, a colon, two digits, then no word.
        if j < chars.len()
            && chars[j] == ':'
            && j - i <= 2
            && chars[i..j].iter().all(char::is_ascii_digit)
        {
            let k = j + 1;
            if k + 2 <= chars.len()
                && chars[k..k + 2].iter().all(char::is_ascii_digit)
                && chars.get(k + 2).is_none_or(|&c| !is_word(c) && c != ':')
            {
                found.push(chars[i..k + 2].iter().collect());
                i = k + 2;
                continue;
            }
        }
        let number_end = j;
        let mut k = j;
        if chars.get(k) == Some(&' ') {
            k += 1;
        }
        let unit_start = k;
        while k < chars.len() && chars[k].is_ascii_alphabetic() {
            k += 1;
        }
        let unit: String = chars[unit_start..k].iter().collect();
        let unit = unit.to_ascii_lowercase();
        let in_words = DURATION_WORDS
            .iter()
            .any(|w| unit == *w || unit == w[..w.len() - 1]);
        if (matches!(unit.as_str(), "ms" | "s" | "min" | "h") || in_words)
            && chars.get(k).is_none_or(|&c| !is_word(c))
        {
            found.push(chars[i..k].iter().collect());
            // The words are found once, with their number.
            i = k;
            continue;
        }
        i = number_end.max(i + 1);
    }
    // The words without a number (`(minutes; ...)`, `hours to days`); with one, they are
    // found above.
    let lower = line.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !is_word(c))
        .filter(|w| !w.is_empty())
        .collect();
    for (n, word) in words.iter().enumerate() {
        let after_number = n > 0 && words[n - 1].starts_with(|c: char| c.is_ascii_digit());
        if DURATION_WORDS.contains(word) && !after_number {
            found.push(word.to_string());
        }
    }
    found
}

/// What the project counts, whose figures change as it grows: a count of one of them is
/// quoted on one page only.
const COUNTED: [&str; 5] = ["scenarios", "cells", "trials", "approaches", "columns"];

/// Words that make the number after them a label, not a count (`row 16 tests it`).
const LABELS: [&str; 8] = [
    "row",
    "rows",
    "approach",
    "approaches",
    "issue",
    "patch",
    "column",
    "step",
];

/// The counts a line quotes (`63 scenarios`, `12 cells`): a number, a space and a counted
/// noun, the number not a label's.
fn counts_in(line: &str) -> Vec<(String, String)> {
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';' | ':'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = Vec::new();
    for (n, pair) in words.windows(2).enumerate() {
        let [number, noun] = pair else { continue };
        let noun = noun.trim_end_matches(['.', '*', '`']);
        let counted = number.chars().all(|c| c.is_ascii_digit())
            && !(number.len() > 1 && number.starts_with('0'))
            && COUNTED.contains(&noun);
        let labelled = n > 0 && LABELS.contains(&words[n - 1].to_ascii_lowercase().as_str());
        if counted && !labelled {
            found.push((noun.to_string(), format!("{number} {noun}")));
        }
    }
    found
}

#[test]
fn durations_are_found_where_pages_quote_them() {
    assert_eq!(
        durations_in(
            "the cold build 6:49, then 0:36; a cell 15-19 min, 2 h 45 min, 50-80 ms, 5.0 s"
        ),
        [
            "6:49",
            "0:36",
            "15-19 min",
            "2 h",
            "45 min",
            "50-80 ms",
            "5.0 s"
        ]
    );
    assert_eq!(
        durations_in("glibc 2.42-67, x86_64 scenarios, 63 scenarios, 1:2.66-4, 04:45:00"),
        Vec::<String>::new()
    );
    // In words, with a number or without one ("7.4 minutes", "hours to days").
    assert_eq!(
        durations_in("took 7.4 minutes, 1 hour, 3 seconds; (minutes), hours to Days"),
        [
            "7.4 minutes",
            "1 hour",
            "3 seconds",
            "minutes",
            "hours",
            "days"
        ]
    );
    assert_eq!(
        durations_in("a second flavour, today, the minute hand, holidays"),
        Vec::<String>::new()
    );
    let page = "a 9 min build\n<!-- x: begin (generated) -->\n6:49\n<!-- x: end -->\n";
    assert_eq!(quoted_durations(page), [(1, "9 min".to_string())]);
}

#[test]
fn counts_are_found_where_pages_quote_them() {
    let counts = |line| -> Vec<String> { counts_in(line).into_iter().map(|c| c.1).collect() };
    assert_eq!(
        counts("the matrix, 63 scenarios; what the 12 cells cost (5037 trials)."),
        ["63 scenarios", "12 cells", "5037 trials"]
    );
    assert_eq!(
        counts("row 16 cells, approach 7 columns, glibc 2.44 cells, 0002 cells, the cells"),
        Vec::<String>::new()
    );
    let page = "12 cells\n```\n63 scenarios\n```\n<!-- x: begin -->\n4 cells\n<!-- x: end -->\n";
    let lines: Vec<(usize, &str)> = outside_generated(page, true).collect();
    assert_eq!(lines, [(1, "12 cells")]);
}

/// Every figure of time has one source: docs/measurements.md, or a block a command
/// generates. Another page links to the measurement instead of quoting it, so that two pages
/// cannot disagree about one figure.
#[test]
fn docs_quote_durations_from_one_page() {
    let mut pages = vec![
        workspace().join("README.md"),
        workspace().join("loader-tests/README.md"),
        workspace().join("patches/variants/README.md"),
    ];
    for entry in std::fs::read_dir(workspace().join("docs"))
        .unwrap()
        .flatten()
    {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // measurements.md is the one source; support.md is rendered from support.json.
        if path.extension().is_some_and(|e| e == "md")
            && name != "measurements.md"
            && name != "support.md"
        {
            pages.push(path);
        }
    }
    pages.sort();
    let mut quoted = Vec::new();
    for page in pages {
        let Ok(text) = std::fs::read_to_string(&page) else {
            continue;
        };
        for (line, figure) in quoted_durations(&text) {
            quoted.push(format!("{}:{line}: {figure}", relative(&page)));
        }
    }
    assert_none_found(
        &quoted,
        "durations quoted outside docs/measurements.md (move the figure there and link to it)",
    );
}

/// A count of what the project counts (scenarios, cells, ...) is quoted on one page only,
/// outside generated blocks and quoted output (docs/support.md is rendered from
/// support.json): two pages that quote one would disagree when it changes (once: 63
/// scenarios on one page, 67 on the others).
#[test]
fn docs_quote_each_count_on_one_page() {
    let mut pages = vec![
        workspace().join("README.md"),
        workspace().join("loader-tests/README.md"),
        workspace().join("patches/variants/README.md"),
    ];
    for entry in std::fs::read_dir(workspace().join("docs"))
        .unwrap()
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "md")
            && path.file_name().is_some_and(|n| n != "support.md")
        {
            pages.push(path);
        }
    }
    pages.sort();
    let mut by_noun: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (line, text) in outside_generated(&text, true) {
            for (noun, figure) in counts_in(text) {
                by_noun
                    .entry(noun)
                    .or_default()
                    .push(format!("{}:{line}: {figure}", relative(page)));
            }
        }
    }
    let mut twice = Vec::new();
    for (noun, quotes) in by_noun {
        let pages: std::collections::BTreeSet<&str> =
            quotes.iter().filter_map(|q| q.split(':').next()).collect();
        if pages.len() > 1 {
            twice.push(format!("{noun}: {}", quotes.join(", ")));
        }
    }
    assert_none_found(
        &twice,
        "counts quoted on two pages (keep the figure on one and link to it)",
    );
}

/// `ld-fallback-explain` is what users install on their own machine (a Jetson): it builds
/// without the maintainer tooling, so none of xtask's heavy dependencies may reach it.
#[test]
fn explain_installs_without_the_maintainer_tooling() {
    let tree = crate::common::stdout_of(cargo().args([
        "tree",
        "--offline",
        "-p",
        "ld-fallback-explain",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]));
    let tree = String::from_utf8_lossy(&tree);
    let mut crates: Vec<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    crates.sort();
    crates.dedup();
    let heavy: Vec<&&str> = crates
        .iter()
        .filter(|c| ["xtask", "git2", "libgit2-sys", "flate2", "tar", "similar"].contains(c))
        .collect();
    assert!(heavy.is_empty(), "the explain crate pulls in {heavy:?}");
    assert!(crates.len() <= 40, "{} crates: {crates:?}", crates.len());
}

/// The pages users read, and what `collect` finds of the C fixtures: where a tracker number
/// could reach a reader besides the Rust sources.
fn pages_and_fixtures() -> Vec<PathBuf> {
    let mut files = vec![
        workspace().join("README.md"),
        workspace().join("ARCHITECTURE.md"),
        workspace().join("loader-tests/README.md"),
        workspace().join("patches/variants/README.md"),
    ];
    for dir in ["docs", "c-fixtures"] {
        let Ok(entries) = std::fs::read_dir(workspace().join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path
                .extension()
                .is_some_and(|e| e == "md" || e == "c" || e == "h")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The first "issue N" (or "issues N") of `line`, any case: how this project's tracker is
/// named. Other projects' threads go by their repository and `#N`.
fn tracker_number(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("issue") {
        let start = from + at;
        from = start + "issue".len();
        let word_start = start == 0 || !lower.as_bytes()[start - 1].is_ascii_alphanumeric();
        let rest = &lower[from..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let number = rest
            .strip_prefix(' ')
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        if word_start && number {
            let end = line.len().min(start + 12);
            return Some(line[start..end].to_string());
        }
    }
    None
}

/// A tracker number ("issue" and a number) means nothing to a reader of a page, of a program's output or
/// of the code: say what was measured or found instead. Every Rust source (comments and
/// strings), every page and every C fixture.
#[test]
fn no_tracker_numbers() {
    let mut found = Vec::new();
    for path in sources().into_iter().chain(pages_and_fixtures()) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(hit) = tracker_number(line) {
                found.push(format!("{}:{}: {hit}", relative(&path), n + 1));
            }
        }
    }
    assert_none_found(
        &found,
        "this project's tracker numbers (say what was measured or found instead)",
    );
}

#[test]
fn tracker_numbers_are_found_in_any_case_and_other_projects_threads_are_not() {
    let named = |words: &str| tracker_number(&words.replace('_', "issue"));
    assert_eq!(
        named("as _ 23 measured").map(|hit| hit.replace("issue", "_")),
        Some("_ 23 mea".to_string())
    );
    assert!(named("_s 12 and 13").is_some());
    assert!(named("(_ 44 class 8)").is_some());
    assert!(named("Measured once (see _ #184)").is_none());
    assert!(named("nixpkgs _ #273797; the _s in a list").is_none());
    assert!(named("non_ 23 or _23").is_none());
}
