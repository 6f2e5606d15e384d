//! Text from outside (a path, an environment value, a name read from a file) as the tools
//! print it: a control character in it would move the cursor, recolour the terminal or break
//! a line into two that mean something else, so each is shown escaped (`\n`, `\u{1b}`), as
//! Rust's `escape_debug` writes it; so are the invisible format characters that change what a
//! line shows (a byte order mark, zero-width and bidirectional ones). Printable text, UTF-8
//! included, is left as it is.

use std::borrow::Cow;

/// `text` with every control character escaped (newlines and tabs too): one value, on one line.
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |_| true)
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
            let arg = arg.to_string_lossy().into_owned();
            let shown = printable(&arg).into_owned();
            changed |= shown != arg;
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
        assert_eq!(
            printable_lines("line\tone\n\x1b[2Jtwo\r\n"),
            "line\tone\n\\u{1b}[2Jtwo\\r\n"
        );
    }
}
