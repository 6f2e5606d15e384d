//! Text from outside (a path, an environment value, a name read from a file) as the tools
//! print it: a control character in it would move the cursor, recolour the terminal or break
//! a line into two that mean something else, so each is shown escaped (`\n`, `\u{1b}`), as
//! Rust's `escape_debug` writes it. Printable text, UTF-8 included, is left as it is.

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

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    let needs = |c: char| c.is_control() && escape(c);
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
            printable_lines("line\tone\n\x1b[2Jtwo\r\n"),
            "line\tone\n\\u{1b}[2Jtwo\\r\n"
        );
    }
}
