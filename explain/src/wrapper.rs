//! Wrapper scripts: a program that is a shell script which sets variables and then `exec`s
//! the real program, as nixpkgs' `makeWrapper` and `wrapProgram` write them
//! (`pkgs/build-support/setup-hooks/make-wrapper.sh`, NixOS/nixpkgs at
//! c04b0dda66db7fd28390fcb7ccf47c944ac0ce64: `makeShellWrapper`). Its output, line by line:
//!
//! ```sh
//! #! /nix/store/...-bash-5.2/bin/bash -e
//! export NAME='value'                             # --set
//! export NAME=${NAME-'value'}                     # --set-default
//! unset NAME                                      # --unset
//! cd '/dir'                                       # --chdir
//! NAME=${NAME:+':'$NAME':'}                       # --prefix NAME : /x (and --suffix):
//! NAME=${NAME/':''/x'':'/':'}                     #   drop /x where it is,
//! NAME='/x'$NAME                                  #   put it first,
//! NAME=${NAME#':'}                                #   trim the separators,
//! NAME=${NAME%':'}
//! export NAME
//! if [[ $NAME != *':''/x'':'* ]]; then            # --suffix: append /x unless it is there
//!     NAME=$NAME'/x'
//! fi
//! exec -a "$0" "/nix/store/...-app/bin/.app-wrapped"  "$@"
//! ```
//!
//! and the older forms (`export NAME='/x'${NAME:+':'$NAME}`, `export NAME+=${NAME:+':'}'/x'`,
//! `"${extraFlagsArray[@]}"`). The values are bash's `${value@Q}` quoting: `'...'`, or
//! `$'...'` for a value with control characters. This module evaluates exactly that subset
//! of bash, as bash would (the `wrapper` test runs the same scripts under bash and compares);
//! a line outside it (a `--run` command) is said, not guessed at, and a script whose `exec`
//! is not of this form is refused with the line that is not. The `exec` may start glibc's
//! loader with its options (`exec /nix/store/...-glibc/lib/ld-linux-x86-64.so.2
//! --fallback-path DIR ./app "$@"`, docs/nix.md's wrapper): the program is then the one
//! the loader runs.

use loader_model::Bytes;

use crate::environment::{Environment, Var};

/// What a wrapper script does before it hands over.
#[derive(Debug, Clone)]
pub struct Followed {
    /// What it `exec`s: the words after `exec` (and its `-a NAME`), `"$@"` and the other
    /// arguments the wrapper was given left out.
    pub exec: Vec<Bytes>,
    /// The working directory it `exec`s from (`cd`).
    pub cwd: Bytes,
    /// Lines it runs that are not followed (said in the explanation).
    pub not_followed: Vec<String>,
    /// What it changed, in words: `LD_LIBRARY_PATH (prefixed)`.
    pub changed: Vec<String>,
}

/// Why a script cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFollowed(pub String);

/// Runs the wrapper `script` (named `name`, in the tree: said in the sources of the values
/// it sets) on `env`, from `cwd`: the variables it exports are set in `env`, and what it
/// `exec`s is returned.
pub fn follow(
    script: &[u8],
    name: &Bytes,
    env: &mut Environment,
    cwd: &Bytes,
) -> Result<Followed, NotFollowed> {
    let from = format!("the wrapper {name}");
    let mut followed = Followed {
        exec: Vec::new(),
        cwd: cwd.clone(),
        not_followed: Vec::new(),
        changed: Vec::new(),
    };
    let mut lines = logical_lines(script).into_iter().peekable();
    while let Some((number, line)) = lines.next() {
        let line = line.trim_ascii();
        let said = |line: &[u8]| format!("line {number}: `{}`", Bytes::from(line));
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let words = words(line).map_err(|why| NotFollowed(format!("{}: {why}", said(line))))?;
        let first = words.first().map(|w| w.text.as_slice()).unwrap_or(b"");
        match first {
            b"exec" => {
                followed.exec = exec(&words[1..], env)
                    .map_err(|why| NotFollowed(format!("{}: {why}", said(line))))?;
                return Ok(followed);
            }
            b"export" => {
                for word in &words[1..] {
                    assign(word, env, &from, true, &mut followed.changed)
                        .map_err(|why| NotFollowed(format!("{}: {why}", said(line))))?;
                }
            }
            b"unset" => {
                for word in &words[1..] {
                    env.unset(&word.text);
                    followed
                        .changed
                        .push(format!("{} (unset)", Bytes::from(&word.text[..])));
                }
            }
            b"cd" if words.len() == 2 => {
                let dir = expand(&words[1], env)
                    .map_err(|why| NotFollowed(format!("{}: {why}", said(line))))?;
                followed.cwd = if dir.starts_with(b"/") {
                    dir
                } else {
                    followed.cwd.join(&[b"/", &dir])
                };
            }
            // `set -e`, `set +u`: no variable changes; the array makeWrapper declares for
            // `--run` commands to add flags to.
            b"set" => {}
            b"declare" if line == b"declare -a extraFlagsArray=()" => {}
            b"if" => {
                let body: Vec<Vec<u8>> = lines
                    .by_ref()
                    .map(|(_, l)| l.trim_ascii().to_vec())
                    .take_while(|l| l != b"fi")
                    .collect();
                let body: Vec<&[u8]> = body.iter().map(Vec::as_slice).collect();
                suffix_unless_there(line, &body, env, &from, &mut followed.changed)
                    .map_err(|why| NotFollowed(format!("{}: {why}", said(line))))?;
            }
            _ if words.len() == 1 && is_assignment(&words[0]) => {
                assign(&words[0], env, &from, false, &mut followed.changed)
                    .map_err(|why| NotFollowed(format!("{}: {why}", said(line))))?;
            }
            _ => followed.not_followed.push(said(line)),
        }
    }
    Err(NotFollowed(
        "it never `exec`s a program (makeWrapper's last line is `exec ... \"$@\"`)".into(),
    ))
}

/// The script's lines, numbered from 1, each joined with the next where it ends in a
/// backslash (a line continued, as docs/nix.md's wrapper writes its `exec`).
fn logical_lines(script: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let mut out: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut continued = false;
    for (number, line) in script.split(|&b| b == b'\n').enumerate() {
        let (text, continues) = match line.strip_suffix(b"\\") {
            Some(text) => (text, true),
            None => (line, false),
        };
        match out.last_mut() {
            Some((_, last)) if continued => last.extend_from_slice(text),
            _ => out.push((number + 1, text.to_vec())),
        }
        continued = continues;
    }
    out
}

/// One shell word as written, quotes and all (expanded by [`expand`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: Vec<u8>,
}

/// `line` split into words at unquoted blanks; quotes and `${...}` are kept in each word, to
/// be expanded by [`expand`].
fn words(line: &[u8]) -> Result<Vec<Word>, String> {
    let mut words = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut started = false;
    while i < line.len() {
        let b = line[i];
        match b {
            b' ' | b'\t' => {
                if started {
                    words.push(Word {
                        text: std::mem::take(&mut current),
                    });
                    started = false;
                }
                i += 1;
                continue;
            }
            b';' if line[i..].starts_with(b"; then") || i + 1 == line.len() => {
                // `if [[ ... ]]; then`: the `;` ends the test.
                if started {
                    words.push(Word {
                        text: std::mem::take(&mut current),
                    });
                    started = false;
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        started = true;
        let end = token_end(line, i)?;
        current.extend_from_slice(&line[i..end]);
        i = end;
    }
    if started {
        words.push(Word { text: current });
    }
    Ok(words)
}

/// The end of the quoted string, `${...}` or single character that starts at `at`.
fn token_end(line: &[u8], at: usize) -> Result<usize, String> {
    let rest = &line[at..];
    let closing = |open: usize, close: u8, escapes: bool| -> Result<usize, String> {
        let mut i = open;
        while i < rest.len() {
            if escapes && rest[i] == b'\\' {
                i += 2;
                continue;
            }
            if rest[i] == close {
                return Ok(at + i + 1);
            }
            i += 1;
        }
        Err("a quote that is not closed".into())
    };
    match rest {
        [b'\'', ..] => closing(1, b'\'', false),
        [b'$', b'\'', ..] => closing(2, b'\'', true),
        [b'"', ..] => {
            // A double-quoted string may hold `${...}`, whose own quotes do not end it.
            let mut i = 1;
            while i < rest.len() {
                match rest[i] {
                    b'\\' => i += 2,
                    b'"' => return Ok(at + i + 1),
                    b'$' if rest.get(i + 1) == Some(&b'{') => i = token_end(line, at + i)? - at,
                    _ => i += 1,
                }
            }
            Err("a quote that is not closed".into())
        }
        [b'$', b'{', ..] => {
            let mut depth = 0;
            let mut i = 0;
            while i < rest.len() {
                match rest[i] {
                    b'\'' | b'"' if depth > 0 => i = token_end(line, at + i)? - at,
                    b'$' if rest.get(i + 1) == Some(&b'\'') => i = token_end(line, at + i)? - at,
                    b'{' => {
                        depth += 1;
                        i += 1;
                    }
                    b'}' => {
                        depth -= 1;
                        i += 1;
                        if depth == 0 {
                            return Ok(at + i);
                        }
                    }
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
            Err("a `${` that is not closed".into())
        }
        [b'\\', _, ..] => Ok(at + 2),
        _ => Ok(at + 1),
    }
}

/// Whether `word` is `NAME=...` or `NAME+=...`.
fn is_assignment(word: &Word) -> bool {
    split_assignment(&word.text).is_some()
}

/// `NAME=value` as (`NAME`, appends, `value`).
fn split_assignment(text: &[u8]) -> Option<(&[u8], bool, &[u8])> {
    let eq = text.iter().position(|&b| b == b'=')?;
    let (name, append) = match text[..eq].strip_suffix(b"+") {
        Some(name) => (name, true),
        None => (&text[..eq], false),
    };
    let valid = !name.is_empty()
        && !name[0].is_ascii_digit()
        && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    valid.then_some((name, append, &text[eq + 1..]))
}

/// `NAME=value`, `NAME+=value` or a bare `NAME` (after `export`).
fn assign(
    word: &Word,
    env: &mut Environment,
    from: &str,
    export: bool,
    changed: &mut Vec<String>,
) -> Result<(), String> {
    let Some((name, append, value)) = split_assignment(&word.text) else {
        // `export NAME`: the variable as it is, now exported.
        if let Some(var) = env.var_mut(&word.text) {
            var.exported = true;
        }
        return Ok(());
    };
    let value = expand(
        &Word {
            text: value.to_vec(),
        },
        env,
    )?;
    let old = env.lookup(name).cloned();
    let value = match (&old, append) {
        (Some(old), true) => old.value.join(&[&value]),
        _ => value,
    };
    if old.as_ref().map(|o| &o.value) != Some(&value) {
        let said = Bytes::from(name).to_string();
        if !changed.contains(&said) {
            changed.push(said);
        }
    }
    let exported = export || old.as_ref().is_some_and(|o| o.exported);
    // A value built on the one before keeps its origin: "the environment, then the
    // wrapper X"; one that replaces it is the wrapper's alone.
    let from = match &old {
        Some(old) if old.from == from || old.from.ends_with(&format!(", then {from}")) => {
            old.from.clone()
        }
        Some(old) if !old.value.is_empty() && value.contains_bytes(&old.value) => {
            format!("{}, then {from}", old.from)
        }
        _ => from.to_string(),
    };
    env.insert(
        name,
        Var {
            value,
            from,
            exported,
        },
    );
    Ok(())
}

/// makeWrapper's `--suffix`: `if [[ $NAME != *'SEP''VALUE''SEP'* ]]; then NAME=$NAME'VALUE';
/// fi`.
fn suffix_unless_there(
    test: &[u8],
    body: &[&[u8]],
    env: &mut Environment,
    from: &str,
    changed: &mut Vec<String>,
) -> Result<(), String> {
    let test_words = words(test)?;
    let [if_, open, left, op, right, close, then] = &test_words[..] else {
        return Err("an `if` that is not makeWrapper's `if [[ $NAME != *...* ]]; then`".into());
    };
    let shape = if_.text == b"if"
        && open.text == b"[["
        && op.text == b"!="
        && close.text == b"]]"
        && then.text == b"then";
    let pattern = right
        .text
        .strip_prefix(b"*")
        .and_then(|p| p.strip_suffix(b"*"));
    let (true, Some(pattern)) = (shape, pattern) else {
        return Err("an `if` that is not makeWrapper's `if [[ $NAME != *...* ]]; then`".into());
    };
    let haystack = expand(left, env)?;
    let needle = expand(
        &Word {
            text: pattern.to_vec(),
        },
        env,
    )?;
    if haystack.contains_bytes(&needle) {
        return Ok(());
    }
    for line in body {
        let words = words(line)?;
        match &words[..] {
            [word] if is_assignment(word) => assign(word, env, from, false, changed)?,
            _ => {
                return Err(format!(
                    "the `if` runs `{}`, not an assignment",
                    Bytes::from(*line)
                ))
            }
        }
    }
    Ok(())
}

/// The words after `exec`: `-a NAME` dropped, `"$@"` and `"${extraFlagsArray[@]}"` (the
/// wrapper's own arguments, and flags `--run` commands may add) left out.
fn exec(words: &[Word], env: &Environment) -> Result<Vec<Bytes>, String> {
    let mut words = words;
    if words.first().is_some_and(|w| w.text == b"-a") {
        words = words.get(2..).ok_or("`exec -a` without a name")?;
    }
    let mut out = Vec::new();
    for word in words {
        if word.text == b"\"$@\"" || word.text == b"\"${extraFlagsArray[@]}\"" {
            continue;
        }
        if word.text.starts_with(b"-") && out.is_empty() {
            return Err(format!(
                "`exec {}` is an option of exec that explain does not follow",
                Bytes::from(&word.text[..])
            ));
        }
        out.push(expand(word, env)?);
    }
    match out.first() {
        None => Err("`exec` names no program".into()),
        Some(program) if !program.contains(&b'/') => Err(format!(
            "`exec {program}` looks the program up on PATH, which explain does not follow"
        )),
        Some(_) => Ok(out),
    }
}

/// A word expanded as bash expands an assignment's value (no field splitting, no globs):
/// quotes removed, `$NAME` and `${...}` replaced.
fn expand(word: &Word, env: &Environment) -> Result<Bytes, String> {
    let text = &word.text;
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'\'' => {
                let end = find_from(text, i + 1, b'\'').ok_or("a quote that is not closed")?;
                out.extend_from_slice(&text[i + 1..end]);
                i = end + 1;
            }
            b'$' if text.get(i + 1) == Some(&b'\'') => {
                let (value, end) = ansi_c(text, i + 2)?;
                out.extend_from_slice(&value);
                i = end;
            }
            b'"' => {
                let end = token_end(text, i)? - 1;
                out.extend_from_slice(&double_quoted(&text[i + 1..end], env)?);
                i = end + 1;
            }
            b'$' => {
                let (value, end) = parameter(text, i, env)?;
                out.extend_from_slice(&value);
                i = end;
            }
            b'\\' if i + 1 < text.len() => {
                out.push(text[i + 1]);
                i += 2;
            }
            b'*' | b'?' | b'[' | b'`' | b'(' | b')' | b'|' | b'&' | b'<' | b'>' => {
                return Err(format!(
                    "`{}` unquoted: a glob, a subshell or a redirection, which explain does not follow",
                    text[i] as char
                ))
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(Bytes::from(out))
}

fn find_from(text: &[u8], from: usize, byte: u8) -> Option<usize> {
    text[from..]
        .iter()
        .position(|&b| b == byte)
        .map(|p| from + p)
}

/// The inside of `"..."`: `$NAME`, `${...}`, and `\` before `$`, `` ` ``, `"`, `\`.
fn double_quoted(inside: &[u8], env: &Environment) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < inside.len() {
        match inside[i] {
            b'\\' if matches!(inside.get(i + 1), Some(b'$' | b'`' | b'"' | b'\\')) => {
                out.push(inside[i + 1]);
                i += 2;
            }
            b'$' => {
                let (value, end) = parameter(inside, i, env)?;
                out.extend_from_slice(&value);
                i = end;
            }
            b'`' => return Err("a command substitution, which explain does not follow".into()),
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `$'...'` from `at` (after the quote): bash's escapes, as `${value@Q}` writes them.
fn ansi_c(text: &[u8], at: usize) -> Result<(Vec<u8>, usize), String> {
    let mut out = Vec::new();
    let mut i = at;
    while i < text.len() {
        match text[i] {
            b'\'' => return Ok((out, i + 1)),
            b'\\' => {
                let next = *text.get(i + 1).ok_or("a quote that is not closed")?;
                i += 2;
                let simple = match next {
                    b'a' => Some(7),
                    b'b' => Some(8),
                    b'e' | b'E' => Some(27),
                    b'f' => Some(12),
                    b'n' => Some(b'\n'),
                    b'r' => Some(b'\r'),
                    b't' => Some(b'\t'),
                    b'v' => Some(11),
                    b'\\' | b'\'' | b'"' | b'?' => Some(next),
                    _ => None,
                };
                if let Some(byte) = simple {
                    out.push(byte);
                    continue;
                }
                let (radix, max, start) = match next {
                    b'x' => (16, 2, i),
                    b'0'..=b'7' => (8, 3, i - 1),
                    _ => {
                        return Err(format!(
                            "the escape `\\{}` in $'...', which explain does not follow",
                            next as char
                        ))
                    }
                };
                let digits = text[start..]
                    .iter()
                    .take(max)
                    .take_while(|b| (**b as char).is_digit(radix))
                    .count();
                if digits == 0 {
                    return Err("`\\x` without a hex digit in $'...'".into());
                }
                let value = std::str::from_utf8(&text[start..start + digits])
                    .ok()
                    .and_then(|d| u32::from_str_radix(d, radix).ok())
                    .ok_or("a bad escape in $'...'")?;
                out.push(value as u8);
                i = start + digits;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Err("a quote that is not closed".into())
}

/// `$NAME` or `${...}` at `at`: its value, and where it ends.
fn parameter(text: &[u8], at: usize, env: &Environment) -> Result<(Vec<u8>, usize), String> {
    let value_of = |name: &[u8]| env.lookup(name).map(|var| var.value.as_bytes().to_vec());
    if text.get(at + 1) != Some(&b'{') {
        let name_end = text[at + 1..]
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .map_or(text.len(), |p| at + 1 + p);
        if name_end == at + 1 {
            return match text.get(at + 1) {
                None => Ok((b"$".to_vec(), at + 1)),
                Some(other) => Err(format!(
                    "`${}`, which explain does not follow",
                    *other as char
                )),
            };
        }
        let name = &text[at + 1..name_end];
        return Ok((value_of(name).unwrap_or_default(), name_end));
    }
    let end = token_end(text, at)?;
    let inside = &text[at + 2..end - 1];
    let name_len = inside
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .unwrap_or(inside.len());
    let (name, op) = inside.split_at(name_len);
    if name.is_empty() {
        return Err("a `${...}` without a variable name".into());
    }
    let value = value_of(name);
    let word = |rest: &[u8]| {
        expand(
            &Word {
                text: rest.to_vec(),
            },
            env,
        )
    };
    let result = match op {
        b"" => value.unwrap_or_default(),
        [b':', b'+', rest @ ..] => match &value {
            Some(v) if !v.is_empty() => word(rest)?.into_vec(),
            _ => Vec::new(),
        },
        [b'+', rest @ ..] => match value {
            Some(_) => word(rest)?.into_vec(),
            None => Vec::new(),
        },
        [b':', b'-', rest @ ..] => match value {
            Some(v) if !v.is_empty() => v,
            _ => word(rest)?.into_vec(),
        },
        [b'-', rest @ ..] => match value {
            Some(v) => v,
            None => word(rest)?.into_vec(),
        },
        [b'#', rest @ ..] if !rest.starts_with(b"#") => {
            let prefix = literal_pattern(rest, env)?;
            let v = value.unwrap_or_default();
            v.strip_prefix(prefix.as_slice()).unwrap_or(&v).to_vec()
        }
        [b'%', rest @ ..] if !rest.starts_with(b"%") => {
            let suffix = literal_pattern(rest, env)?;
            let v = value.unwrap_or_default();
            v.strip_suffix(suffix.as_slice()).unwrap_or(&v).to_vec()
        }
        [b'/', rest @ ..] if !rest.starts_with(b"/") => {
            // `${NAME/PATTERN/REPLACEMENT}`: the first match replaced. The separating `/`
            // is the first one outside quotes.
            let mut i = 0;
            let mut cut = None;
            while i < rest.len() {
                match rest[i] {
                    b'/' => {
                        cut = Some(i);
                        break;
                    }
                    b'\'' | b'"' | b'$' | b'\\' => i = token_end(rest, i)?,
                    _ => i += 1,
                }
            }
            let (pattern, replacement) = match cut {
                Some(cut) => (&rest[..cut], &rest[cut + 1..]),
                None => (rest, &b""[..]),
            };
            let pattern = literal_pattern(pattern, env)?;
            let replacement = word(replacement)?;
            let v = value.unwrap_or_default();
            match Bytes::from(&v[..]).find(&pattern) {
                Some(at) if !pattern.is_empty() => {
                    [&v[..at], replacement.as_bytes(), &v[at + pattern.len()..]].concat()
                }
                _ => v,
            }
        }
        _ => {
            return Err(format!(
                "`${{{}}}`, an expansion explain does not follow",
                Bytes::from(inside)
            ))
        }
    };
    Ok((result, end))
}

/// A pattern of `${NAME#...}`, `%` or `/` that matches itself only: every glob character
/// in it quoted (makeWrapper quotes them all).
fn literal_pattern(pattern: &[u8], env: &Environment) -> Result<Vec<u8>, String> {
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'\'' | b'"' | b'\\' => i = token_end(pattern, i)?,
            b'$' => i = token_end(pattern, i).map(|end| end.max(i + 1))?,
            b'*' | b'?' | b'[' => {
                return Err("a pattern with an unquoted glob, which explain does not follow".into())
            }
            _ => i += 1,
        }
    }
    Ok(expand(
        &Word {
            text: pattern.to_vec(),
        },
        env,
    )?
    .into_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Environment {
        Environment::from_vars(vars.iter().map(|(n, v)| (n.into(), v.into())))
    }

    fn value(env: &Environment, name: &str) -> Option<String> {
        env.get(name)
            .map(|var| String::from_utf8_lossy(&var.value).into_owned())
    }

    /// A wrapper as `makeWrapper --prefix LD_LIBRARY_PATH : /x --set FOO 'a b'` writes it.
    const PREFIX: &str = r#"#! /nix/store/x-bash/bin/bash -e
export FOO='a b'
LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+':'$LD_LIBRARY_PATH':'}
LD_LIBRARY_PATH=${LD_LIBRARY_PATH/':''/x'':'/':'}
LD_LIBRARY_PATH='/x'$LD_LIBRARY_PATH
LD_LIBRARY_PATH=${LD_LIBRARY_PATH#':'}
LD_LIBRARY_PATH=${LD_LIBRARY_PATH%':'}
export LD_LIBRARY_PATH
exec -a "$0" "/nix/store/y-app/bin/.app-wrapped"  "$@"
"#;

    fn run(script: &str, start: &[(&str, &str)]) -> (Environment, Followed) {
        let mut e = env(start);
        let followed = follow(
            script.as_bytes(),
            &Bytes::from("/bin/app"),
            &mut e,
            &Bytes::from("/"),
        )
        .unwrap();
        (e, followed)
    }

    #[test]
    fn a_prefix_goes_first_once() {
        let (e, f) = run(PREFIX, &[]);
        assert_eq!(value(&e, "LD_LIBRARY_PATH").as_deref(), Some("/x"));
        assert_eq!(value(&e, "FOO").as_deref(), Some("a b"));
        assert_eq!(f.exec, [Bytes::from("/nix/store/y-app/bin/.app-wrapped")]);
        let (e, _) = run(PREFIX, &[("LD_LIBRARY_PATH", "/a:/x:/b")]);
        assert_eq!(value(&e, "LD_LIBRARY_PATH").as_deref(), Some("/x:/a:/b"));
        assert!(e.get("LD_LIBRARY_PATH").unwrap().exported);
    }

    #[test]
    fn old_forms_and_ansi_c_quotes_expand_as_bash_does() {
        let script = "#! /bin/bash -e\nexport A='/x'${A:+':'$A}\nexport B+=${B:+':'}'/y'\nexport C=$'a\\tb\\x41'\nexport D=${D-'dflt'}\nexec \"/p\" \"${extraFlagsArray[@]}\" \"$@\"\n";
        let (e, f) = run(script, &[("A", "/a"), ("D", "")]);
        assert_eq!(value(&e, "A").as_deref(), Some("/x:/a"));
        assert_eq!(value(&e, "B").as_deref(), Some("/y"));
        assert_eq!(value(&e, "C").as_deref(), Some("a\tbA"));
        assert_eq!(value(&e, "D").as_deref(), Some(""));
        assert_eq!(f.exec, [Bytes::from("/p")]);
    }

    #[test]
    fn a_suffix_is_added_unless_there() {
        let script = "#! /bin/bash -e\nP=${P:+':'$P':'}\nif [[ $P != *':''/s'':'* ]]; then\n    P=$P'/s'\nfi\nP=${P#':'}\nP=${P%':'}\nexport P\nexec \"/p\"\n";
        let (e, _) = run(script, &[("P", "/a")]);
        assert_eq!(value(&e, "P").as_deref(), Some("/a:/s"));
        let (e, _) = run(script, &[("P", "/s:/a")]);
        assert_eq!(value(&e, "P").as_deref(), Some("/s:/a"));
        let (e, _) = run(script, &[]);
        assert_eq!(value(&e, "P").as_deref(), Some("/s"));
    }

    #[test]
    fn what_is_not_followed_is_said_or_refused() {
        let script = "#! /bin/sh\nsource /etc/profile\nexec /p --flag \"$@\"\n";
        let (_, f) = run(script, &[]);
        assert_eq!(f.not_followed, ["line 2: `source /etc/profile`"]);
        assert_eq!(f.exec, [Bytes::from("/p"), Bytes::from("--flag")]);
        let mut e = env(&[]);
        let err = follow(
            b"#! /bin/sh\necho hi\n",
            &Bytes::from("/w"),
            &mut e,
            &Bytes::from("/"),
        )
        .unwrap_err();
        assert!(err.0.contains("never `exec`s"), "{err:?}");
        let err = follow(
            b"#! /bin/sh\nexport A=$(date)\nexec /p\n",
            &Bytes::from("/w"),
            &mut e,
            &Bytes::from("/"),
        )
        .unwrap_err();
        assert!(err.0.starts_with("line 2: `export A=$(date)`"), "{err:?}");
        let err = follow(
            b"#! /bin/sh\nexec app\n",
            &Bytes::from("/w"),
            &mut e,
            &Bytes::from("/"),
        )
        .unwrap_err();
        assert!(err.0.contains("looks the program up on PATH"), "{err:?}");
    }
}
