//! Names in a sentence: a refusal names what it refuses without flooding the terminal.

/// How many names a list shows before counting the rest.
const LISTED: usize = 10;

/// Up to ten names (paths, files), then how many more. A name is printed as
/// `model::printable` shows it: a newline in a file name cannot split the list.
pub(crate) fn listed(names: &[String]) -> String {
    let mut text = names
        .iter()
        .take(LISTED)
        .map(|name| model::printable(name).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > LISTED {
        text.push_str(&format!(" and {} more", names.len() - LISTED));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_names_then_a_count() {
        let names: Vec<String> = (0..12).map(|i| format!("f{i}")).collect();
        assert_eq!(listed(&names[..2]), "f0, f1");
        assert_eq!(
            listed(&names),
            "f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 and 2 more"
        );
        assert_eq!(listed(&["a\nb".to_string()]), "a\\nb");
    }
}
