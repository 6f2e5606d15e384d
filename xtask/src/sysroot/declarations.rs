//! Header changes that cannot change an object which does not mention them.
//!
//! The flavours of a release share one build tree (see `workdir`), and switching it from one
//! flavour to another rewrites the files that differ. make then rebuilds every object that
//! depends on one of them, and the series changes two headers that nearly every object of
//! glibc includes (`include/link.h`, `sysdeps/generic/ldsodefs.h`): a switch would recompile
//! all of glibc. Yet those changes only declare new names (`__rtld_fallback_path_list`,
//! `_dl_init_fallback_paths`), and a declaration of a name that a translation unit never
//! mentions cannot change the code compiled from it.
//!
//! So a changed header keeps its old mtime, and make leaves the objects that include it alone,
//! when the change is proven to be of that kind:
//! 1. the lines it inserts or deletes are whole declarations, with no preprocessor line,
//!    brace or initializer among them, and the lines it replaces differ only in their
//!    comments ([`parse`]);
//! 2. each declares exactly one name that the tree without the declaration never mentions,
//!    every other word outside its parentheses (types, attributes) being known there; for a
//!    function, that name is the one before the parameter list;
//! 3. every file that mentions the name in the tree with the declaration is the header itself
//!    or a file the same switch rewrites, so every object that could refer to the name is
//!    rebuilt anyway (its own file, or a header it includes, is newer).
//!
//! Left out on purpose: names formed by token pasting (glibc forms `GL(x)` and `GLRO(x)` that
//! way, but their argument is still a word in the source, so rule 3 sees it). What the rule
//! cannot keep is the line numbering of the header below an insertion: debug information of
//! the objects it kept still gives the old line of each declaration after it; `cargo xtask
//! bench build` names that difference when it compares a derived build with a cold one.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::Oid;
use xshell::cmd;

use crate::util::shell;

/// One declaration the change inserts or deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declaration {
    /// Inserted by the change (else deleted).
    pub inserted: bool,
    /// The words outside any parentheses, in order: types, qualifiers, attributes, the name.
    pub outer_words: Vec<String>,
    /// The word right before the first parenthesis at the top level, when it is not
    /// `__attribute__`: a function's name.
    pub function: Option<String>,
    /// The declaration as written, comments removed (for messages).
    pub text: String,
}

/// The declarations `old` -> `new` inserts or deletes, or `None` when the change is anything
/// else (a replaced line, a macro, a definition, a partial declaration).
pub(crate) fn parse(old: &str, new: &str) -> Option<Vec<Declaration>> {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut declarations = Vec::new();
    for group in diff.grouped_ops(0) {
        let first = group.first()?;
        let (old_start, new_start) = (first.old_range().start, first.new_range().start);
        let (mut inserted, mut deleted) = (String::new(), String::new());
        for op in &group {
            for change in diff.iter_changes(op) {
                match change.tag() {
                    similar::ChangeTag::Insert => inserted.push_str(change.value()),
                    similar::ChangeTag::Delete => deleted.push_str(change.value()),
                    similar::ChangeTag::Equal => {}
                }
            }
        }
        let (text, was_inserted) = match (inserted.is_empty(), deleted.is_empty()) {
            (false, true) => (inserted, true),
            (true, false) => (deleted, false),
            // Replaced lines that differ only in their comments (0001 rewords the comment
            // of LA_SER_LIBPATH in elf/link.h, inside an enum) declare nothing, wherever
            // they are.
            _ if same_code(&deleted, &inserted) => continue,
            // Any other replaced line: what it changes is anybody's guess.
            _ => return None,
        };
        // Declarations only at file scope: a line inserted into a struct changes its
        // layout, one inserted into an inline function its code, whatever names they
        // mention.
        if !at_file_scope(old, old_start) || !at_file_scope(new, new_start) {
            return None;
        }
        declarations.extend(parse_block(&text, was_inserted)?);
    }
    Some(declarations)
}

/// Whole declarations in `text` (lines of a header), comments aside.
fn parse_block(text: &str, inserted: bool) -> Option<Vec<Declaration>> {
    let code = strip_comments(text)?;
    if code.lines().any(|line| line.trim_start().starts_with('#')) || code.contains(['{', '}', '='])
    {
        return None;
    }
    let mut declarations = Vec::new();
    let mut statements: Vec<&str> = code.split(';').collect();
    // Everything after the last `;` must be blank: a declaration cut in two is not whole.
    if !statements.pop()?.trim().is_empty() {
        return None;
    }
    for statement in statements {
        declarations.push(parse_declaration(statement.trim(), inserted)?);
    }
    Some(declarations)
}

fn parse_declaration(statement: &str, inserted: bool) -> Option<Declaration> {
    const STORAGE_THAT_DEFINES: &[&str] = &[
        "typedef",
        "static",
        "inline",
        "__inline",
        "__inline__",
        "register",
        "auto",
    ];
    let mut outer_words = Vec::new();
    let mut function = None;
    let mut depth = 0usize;
    let mut previous_word: Option<String> = None;
    let mut chars = statement.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        match c {
            '(' => {
                if depth == 0 && function.is_none() {
                    function = previous_word
                        .take()
                        .filter(|w| w != "__attribute__" && w != "__typeof__" && w != "__typeof");
                }
                depth += 1;
                previous_word = None;
            }
            ')' => {
                depth = depth.checked_sub(1)?;
                previous_word = None;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut end = start + c.len_utf8();
                while let Some(&(i, next)) = chars.peek() {
                    if next.is_ascii_alphanumeric() || next == '_' {
                        chars.next();
                        end = i + next.len_utf8();
                    } else {
                        break;
                    }
                }
                let word = &statement[start..end];
                if depth == 0 {
                    if STORAGE_THAT_DEFINES.contains(&word) {
                        return None;
                    }
                    outer_words.push(word.to_string());
                    previous_word = Some(word.to_string());
                }
            }
            c if c.is_whitespace() => {}
            '"' if depth > 0 => {
                // A string inside an attribute: skip it whole.
                for (_, next) in chars.by_ref() {
                    if next == '"' {
                        break;
                    }
                }
            }
            '*' | ',' => previous_word = None,
            _ => {
                if depth == 0 {
                    // Arrays, bit-fields, anything else at the top level: not a plain
                    // declaration of a name.
                    return None;
                }
            }
        }
    }
    if depth != 0 || outer_words.is_empty() {
        return None;
    }
    Some(Declaration {
        inserted,
        outer_words,
        function,
        text: statement.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}

/// Whether line `line` (0-based) of `text` starts outside every brace: the lines before it,
/// comments removed, open as many braces as they close (braces in string and character
/// literals aside). A prefix that ends inside a comment or a literal counts as not at file
/// scope.
fn at_file_scope(text: &str, line: usize) -> bool {
    let prefix: String = text.split_inclusive('\n').take(line).collect();
    let Some(code) = strip_comments(&prefix) else {
        return false;
    };
    let mut depth = 0i64;
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            '"' | '\'' => {
                // Skip the literal, escapes included; an unterminated one ends the scan.
                let quote = c;
                loop {
                    match chars.next() {
                        Some('\\') => {
                            chars.next();
                        }
                        Some(c) if c == quote => break,
                        Some('\n') | None => return false,
                        Some(_) => {}
                    }
                }
            }
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// Whether two runs of whole lines are the same code once their comments are removed and
/// their blanks are folded: a comment cannot change what the compiler makes of them. A run
/// that starts or ends inside a comment is not seen as one (its comment does not open or
/// close in it), so it compares as code and is not the same.
fn same_code(old: &str, new: &str) -> bool {
    let code = |text: &str| {
        strip_comments(text).map(|code| code.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    matches!((code(old), code(new)), (Some(old), Some(new)) if old == new)
}

/// `text` without C comments; `None` when a comment does not end in it.
fn strip_comments(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                let end = rest[b + 2..].find("*/")?;
                out.push(' ');
                rest = &rest[b + 2 + end + 2..];
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |n| &rest[l + n..]);
            }
            (None, None) => {
                out.push_str(rest);
                return Some(out);
            }
            (Some(_), None) => unreachable!("handled by the first arm"),
        }
    }
}

/// What [`keeps_mtime`] decided for one header, for the build's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderVerdict {
    /// The header may keep its mtime; the names it declares (or no longer declares).
    Keep(Vec<String>),
    /// It must look changed to make, and why.
    Rebuild(String),
}

/// Where the words of a tree are looked up: the source store (a git repository).
pub(crate) struct Trees<'a> {
    pub store: &'a Path,
    pub old: Oid,
    pub new: Oid,
}

impl Trees<'_> {
    /// The files of `tree` in which `word` occurs as a whole word.
    fn files_mentioning(&self, tree: Oid, word: &str) -> Result<BTreeSet<String>> {
        let (store, tree_id) = (self.store, tree.to_string());
        crate::util::git::check_configuration(&[store.to_path_buf()])?;
        let sh = shell::here()?;
        let out = cmd!(
            sh,
            "git --git-dir {store} grep -l -w -F -I -z -e {word} {tree_id}"
        )
        .ignore_status()
        .output()
        .context("cannot run git grep in the source store")?;
        // git grep: 0 found, 1 none found, anything else an error.
        match out.status.code() {
            Some(0) | Some(1) => {}
            _ => bail!(
                "git grep in {} failed: {}",
                self.store.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
        let prefix = format!("{tree}:");
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|path| !path.is_empty())
            .map(|path| {
                let path = String::from_utf8_lossy(path);
                path.strip_prefix(&prefix).unwrap_or(&path).to_string()
            })
            .collect())
    }
}

/// Whether `header`, changed from `old` to `new` by a switch that rewrites the files
/// `rewritten`, may keep its mtime (see the module docs for the rule).
pub(crate) fn keeps_mtime(
    trees: &Trees,
    header: &str,
    old: &str,
    new: &str,
    rewritten: &BTreeSet<String>,
) -> Result<HeaderVerdict> {
    let Some(declarations) = parse(old, new) else {
        return Ok(HeaderVerdict::Rebuild(
            "the change is not only whole declarations inserted or deleted".into(),
        ));
    };
    let mut names = Vec::new();
    for declaration in &declarations {
        // The tree without the declaration, and the one with it.
        let (without, with) = if declaration.inserted {
            (trees.old, trees.new)
        } else {
            (trees.new, trees.old)
        };
        let mut unknown = Vec::new();
        for word in &declaration.outer_words {
            if C_KEYWORDS.contains(&word.as_str()) || unknown.contains(word) {
                continue;
            }
            if trees.files_mentioning(without, word)?.is_empty() {
                unknown.push(word.clone());
            }
        }
        let name = match unknown.as_slice() {
            [name] if declaration.function.as_ref().is_none_or(|f| f == name) => name.clone(),
            _ => {
                return Ok(HeaderVerdict::Rebuild(format!(
                    "`{}` does not declare exactly one name new to the tree without it",
                    declaration.text
                )))
            }
        };
        let stray: Vec<String> = trees
            .files_mentioning(with, &name)?
            .into_iter()
            .filter(|path| path != header && !rewritten.contains(path))
            .collect();
        if !stray.is_empty() {
            return Ok(HeaderVerdict::Rebuild(format!(
                "`{name}` is also mentioned in {}, which this switch does not rewrite",
                stray.join(", ")
            )));
        }
        names.push(name);
    }
    Ok(HeaderVerdict::Keep(names))
}

/// Words that are known to every C tree (git grep would find them anyway; this saves a run).
const C_KEYWORDS: &[&str] = &[
    "extern", "void", "char", "short", "int", "long", "signed", "unsigned", "float", "double",
    "const", "volatile", "restrict", "struct", "union", "enum", "_Bool", "bool",
];

#[cfg(test)]
mod tests {
    use super::*;

    const LDSODEFS_OLD: &str = "\
extern void _dl_init_paths (const char *library_path, const char *source,
\t\t\t    const char *glibc_hwcaps_prepend,
\t\t\t    const char *glibc_hwcaps_mask)
  attribute_hidden;

/* Gather the information needed to install the profiling tables.  */
";

    /// The change 0001 makes to sysdeps/generic/ldsodefs.h on every release.
    const LDSODEFS_NEW: &str = "\
extern void _dl_init_paths (const char *library_path, const char *source,
\t\t\t    const char *glibc_hwcaps_prepend,
\t\t\t    const char *glibc_hwcaps_mask)
  attribute_hidden;

/* Initialize the LD_FALLBACK_PATH search path from FALLBACK_PATH, which
   may be NULL.  SOURCE is either \"LD_FALLBACK_PATH\" or \"--fallback-path\".  */
extern void _dl_init_fallback_paths (const char *fallback_path,
\t\t\t\t     const char *source)
  attribute_hidden;

/* Gather the information needed to install the profiling tables.  */
";

    #[test]
    fn the_series_header_changes_are_declarations() {
        let declarations = parse(LDSODEFS_OLD, LDSODEFS_NEW).unwrap();
        assert_eq!(declarations.len(), 1);
        let d = &declarations[0];
        assert!(d.inserted);
        assert_eq!(d.function.as_deref(), Some("_dl_init_fallback_paths"));
        assert_eq!(
            d.outer_words,
            [
                "extern",
                "void",
                "_dl_init_fallback_paths",
                "attribute_hidden"
            ]
        );
        // The other way round (patched -> unpatched) it is a deletion.
        assert!(!parse(LDSODEFS_NEW, LDSODEFS_OLD).unwrap()[0].inserted);

        let link_old =
            "extern struct r_search_path_struct __rtld_env_path_list attribute_hidden;\n";
        let link_new = format!(
            "{link_old}extern struct r_search_path_struct __rtld_fallback_path_list attribute_hidden;\n"
        );
        let d = &parse(link_old, &link_new).unwrap()[0];
        assert_eq!(d.function, None);
        assert_eq!(
            d.outer_words,
            [
                "extern",
                "struct",
                "r_search_path_struct",
                "__rtld_fallback_path_list",
                "attribute_hidden"
            ]
        );
    }

    #[test]
    fn anything_but_whole_declarations_is_refused() {
        let base = "extern int a;\n";
        for (what, new) in [
            ("a macro", "extern int a;\n#define X 1\n"),
            ("a definition", "extern int a;\nint b = 1;\n"),
            (
                "an inline function",
                "extern int a;\nstatic inline int f (void) { return 1; }\n",
            ),
            ("a typedef", "extern int a;\ntypedef int t;\n"),
            ("half a declaration", "extern int a;\nextern int\n"),
            ("a replaced line", "extern long a;\n"),
            ("an unended comment", "extern int a;\n/* open\n"),
            ("an array", "extern int a;\nextern int b[4];\n"),
            (
                "a UNSECURE_ENVVARS entry",
                "extern int a;\n  \"LD_FALLBACK_PATH\\0\"\t\t\t\t\\\n",
            ),
        ] {
            assert_eq!(parse(base, new), None, "{what}");
        }
        assert_eq!(parse(base, base), Some(vec![]), "no change");
        // A comment reworded: nothing declared, nothing else changed.
        let la_ser = "    LA_SER_ORIG = 0x01,\t\t/* Original name.  */\n    LA_SER_LIBPATH = 0x02,\t/* Directory from LD_LIBRARY_PATH.  */\n";
        let reworded = la_ser.replace(
            "Directory from LD_LIBRARY_PATH.",
            "LD_LIBRARY_PATH or\n\t\t\t\t   LD_FALLBACK_PATH.",
        );
        assert_eq!(parse(la_ser, &reworded), Some(vec![]), "a reworded comment");
        let in_enum = format!("enum\n  {{\n{la_ser}  }};\n");
        let reworded_in_enum = format!("enum\n  {{\n{reworded}  }};\n");
        assert_eq!(
            parse(&in_enum, &reworded_in_enum),
            Some(vec![]),
            "a reworded comment inside an enum, as in elf/link.h"
        );
        // Lines inside braces are never declarations of the file: a member changes the
        // struct's layout, a statement the inline function's code (dl-main.h's
        // call_init_paths gains a call of _dl_init_fallback_paths).
        let state = "struct s\n{\n  const char *a;\n};\n";
        let with_member = state.replace("a;\n", "a;\n  const char *fallback_path;\n");
        assert_eq!(parse(state, &with_member), None, "a struct member");
        let helper = "static inline void\nf (void)\n{\n  g (1);\n}\n";
        let with_call = helper.replace("  g (1);\n", "  g (1);\n  h (2);\n");
        assert_eq!(
            parse(helper, &with_call),
            None,
            "a statement of an inline function"
        );
        let after = format!("{helper}extern int b;\n");
        assert_eq!(
            parse(helper, &after).unwrap().len(),
            1,
            "after the function"
        );
        // Braces in literals are not scopes (ldsodefs.h has strings and braces before the
        // series' declaration).
        let literals = "#define A \"{\"\nstatic const char b = '}';\nextern int c;\n";
        let more = format!("{literals}extern int d;\n");
        assert_eq!(
            parse(literals, &more).unwrap().len(),
            1,
            "braces in literals"
        );
        let inside = "/* first\n   second */\n";
        for (what, old, new) in [
            (
                "a value beside the comment",
                la_ser,
                la_ser.replace("0x02", "0x03"),
            ),
            (
                "code moved into the comment",
                la_ser,
                la_ser.replace("0x02,\t/*", "/* 0x02,"),
            ),
            (
                "a line inside a comment",
                inside,
                inside.replace("second", "other"),
            ),
        ] {
            assert_eq!(parse(old, &new), None, "{what}");
        }
        let commented = "extern int a;\n/* b; */ extern int b; // c;\n";
        assert_eq!(
            parse(base, commented).unwrap()[0].outer_words,
            ["extern", "int", "b"]
        );
    }

    /// A store with a release tree and a patched one, as git repositories hold them.
    struct Store {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        repo: git2::Repository,
    }

    impl Store {
        fn new() -> Store {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("store.git");
            let repo = git2::Repository::init_bare(&path).unwrap();
            Store {
                _dir: dir,
                path,
                repo,
            }
        }

        /// What [`keeps_mtime`] says of HEADER switching from `old_header` (in the tree `old`)
        /// to `new_header` (in `new`), the switch rewriting the files `rewritten`.
        fn switch(
            &self,
            (old, old_header): (Oid, &str),
            (new, new_header): (Oid, &str),
            rewritten: &BTreeSet<String>,
        ) -> HeaderVerdict {
            let trees = Trees {
                store: &self.path,
                old,
                new,
            };
            keeps_mtime(&trees, HEADER, old_header, new_header, rewritten).unwrap()
        }

        fn tree(&self, files: &[(&str, &str)]) -> Oid {
            let empty = self.repo.treebuilder(None).unwrap().write().unwrap();
            let empty = self.repo.find_tree(empty).unwrap();
            let mut update = git2::build::TreeUpdateBuilder::new();
            for (path, text) in files {
                let blob = self.repo.blob(text.as_bytes()).unwrap();
                update.upsert(*path, blob, git2::FileMode::Blob);
            }
            update.create_updated(&self.repo, &empty).unwrap()
        }
    }

    const HEADER: &str = "sysdeps/generic/ldsodefs.h";

    #[test]
    fn a_new_name_used_only_in_rewritten_files_keeps_the_header() {
        let store = Store::new();
        let old = store.tree(&[
            (HEADER, LDSODEFS_OLD),
            (
                "elf/dl-load.c",
                "void f (void) { _dl_init_paths (0, 0, 0, 0); }\n",
            ),
            ("elf/rtld.c", "int attribute_hidden;\n"),
        ]);
        let new = store.tree(&[
            (HEADER, LDSODEFS_NEW),
            (
                "elf/dl-load.c",
                "void _dl_init_fallback_paths (const char *a, const char *b) {}\n",
            ),
            ("elf/rtld.c", "int attribute_hidden;\n"),
        ]);
        let rewritten: BTreeSet<String> = ["elf/dl-load.c".to_string()].into();
        let verdict = store.switch((old, LDSODEFS_OLD), (new, LDSODEFS_NEW), &rewritten);
        assert_eq!(
            verdict,
            HeaderVerdict::Keep(vec!["_dl_init_fallback_paths".into()])
        );
        // Switching back deletes the declaration: kept as well.
        let verdict = store.switch((new, LDSODEFS_NEW), (old, LDSODEFS_OLD), &rewritten);
        assert_eq!(
            verdict,
            HeaderVerdict::Keep(vec!["_dl_init_fallback_paths".into()])
        );

        // A file the switch does not rewrite mentions the name: its objects must rebuild.
        let nothing_else = BTreeSet::new();
        match store.switch((old, LDSODEFS_OLD), (new, LDSODEFS_NEW), &nothing_else) {
            HeaderVerdict::Rebuild(why) => assert!(why.contains("elf/dl-load.c"), "{why}"),
            keep => panic!("{keep:?}"),
        }
    }

    #[test]
    fn a_name_the_release_knows_already_rebuilds() {
        let store = Store::new();
        // Redeclaring an existing function (hidden, say) changes how its callers call it.
        let old_header = "extern int attribute_hidden;\n";
        let new_header =
            "extern int attribute_hidden;\nextern int existing (void) attribute_hidden;\n";
        let old = store.tree(&[(HEADER, old_header), ("x.c", "int existing (void);\n")]);
        let new = store.tree(&[(HEADER, new_header), ("x.c", "int existing (void);\n")]);
        let none = BTreeSet::new();
        let verdict = store.switch((old, old_header), (new, new_header), &none);
        assert!(matches!(verdict, HeaderVerdict::Rebuild(_)), "{verdict:?}");
        // So does a declaration with a second unknown word (a new attribute macro, a new type).
        let new_header = "extern int attribute_hidden;\nextern int fresh attribute_fresh;\n";
        let new = store.tree(&[(HEADER, new_header)]);
        let verdict = store.switch((old, old_header), (new, new_header), &none);
        assert!(matches!(verdict, HeaderVerdict::Rebuild(_)), "{verdict:?}");
    }
}
