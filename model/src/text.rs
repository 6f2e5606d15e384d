//! Text from outside (a path, an environment value, a name read from a file) as the tools
//! print it: a control character in it would move the cursor, recolour the terminal or break
//! a line into two that mean something else, so each is shown escaped (`\n`, `\u{1b}`), as
//! Rust's `escape_debug` writes it; so are the invisible format characters that change what a
//! line shows (a byte order mark, zero-width and bidirectional ones). Printable text, UTF-8
//! included, is left as it is. A value that is bytes rather than text (a path, a name read
//! from an ELF file) shows each byte that is not part of UTF-8 as `\xHH`
//! ([`printable_bytes`]): never replaced, so two different names never print the same.

use std::borrow::Cow;

/// `text` with every control character escaped (newlines and tabs too): one value, on one line.
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |_| true)
}

/// `bytes` as [`printable`] shows text, with each byte that is not part of a UTF-8 character
/// written `\xHH` (a Latin-1 `é` in a file name, `\xe9`): one value, on one line, whatever
/// its encoding.
pub fn printable_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return printable(text);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(&printable(chunk.valid()));
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    Cow::Owned(out)
}

/// `text` with every control character but the newline and the tab escaped: for whole
/// reports, whose lines the program wrote itself.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c != '\n' && c != '\t')
}

/// The command line `args` with every control character escaped ([`printable`]), when one
/// has any: a parser's message quotes the values it refuses, and parsed again from these it
/// quotes them escaped (a newline or an escape sequence in `--release` cannot break a line of
/// the message or reach the terminal). `None` when every argument is printable as it is.
pub fn printable_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<Vec<String>> {
    let mut changed = false;
    let escaped = args
        .into_iter()
        .map(|arg| {
            let shown = printable_bytes(arg.as_encoded_bytes()).into_owned();
            changed |= shown.as_bytes() != arg.as_encoded_bytes();
            shown
        })
        .collect();
    changed.then_some(escaped)
}

/// Characters that are no control characters but change what a line shows without showing
/// themselves (Unicode's format characters, Cf): a byte order mark, zero-width characters,
/// and the bidirectional overrides that make text read in another order than it is.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
    )
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    let needs = |c: char| (c.is_control() && escape(c)) || invisible(c);
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(printable("/opt/tegra"), "/opt/tegra");
        assert_eq!(
            printable("/a\nb\x1b[31mred\t\u{9b}"),
            "/a\\nb\\u{1b}[31mred\\t\\u{9b}"
        );
        assert_eq!(printable("José\x7f"), "José\\u{7f}");
        assert_eq!(
            printable("\u{feff}# base\u{202e}txt"),
            "\\u{feff}# base\\u{202e}txt"
        );
        assert_eq!(
            printable_args(["a".into(), "2.4\x1b\n".into()]),
            Some(vec!["a".to_string(), "2.4\\u{1b}\\n".to_string()])
        );
        assert_eq!(printable_args(["a".into()]), None);
        assert_eq!(printable_bytes(b"/x/lib\xff"), "/x/lib\\xff");
        assert_eq!(printable_bytes(b"lib\xe9\nfoo.so"), "lib\\xe9\\nfoo.so");
        assert_eq!(printable_bytes("José".as_bytes()), "José");
        use std::os::unix::ffi::OsStringExt;
        assert_eq!(
            printable_args([std::ffi::OsString::from_vec(b"/x\xff".to_vec())]),
            Some(vec!["/x\\xff".to_string()])
        );
        assert_eq!(
            printable_lines("line\tone\n\x1b[2Jtwo\r\n"),
            "line\tone\n\\u{1b}[2Jtwo\\r\n"
        );
    }
}
