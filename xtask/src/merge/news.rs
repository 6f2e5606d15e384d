//! The series' NEWS entry as data: what a patch adds to NEWS, and where that entry goes in
//! another release's NEWS — first under the newest version's "Major new features:".
//!
//! NEWS is the one file every release rewrites around the entry, so a 3-way merge of the
//! entry conflicts on every rebase although nothing about it changed. Placing the entry by
//! rule instead reproduces the committed series exactly (the entry opens "Major new
//! features:" in each of them) and needs no human.

use anyhow::{bail, Result};

/// The file this module is about.
pub const PATH: &str = "NEWS";

const FEATURES: &str = "Major new features:";

/// The lines `after` adds to `before`, when they are one block inserted whole (and nothing
/// else changed): the entry. `None` when NEWS did not change; an error for any other edit,
/// which the caller must merge the usual way.
pub fn entry_added(before: &str, after: &str) -> Result<Option<String>> {
    if before == after {
        return Ok(None);
    }
    let (old, new): (Vec<&str>, Vec<&str>) = (
        before.split_inclusive('\n').collect(),
        after.split_inclusive('\n').collect(),
    );
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    if prefix + suffix != old.len() {
        bail!("the change to {PATH} is not one inserted block (lines were changed or removed)");
    }
    Ok(Some(new[prefix..new.len() - suffix].concat()))
}

/// `news` with `entry` first under the newest version's "Major new features:" heading (the
/// heading is added when that version has none yet). Unchanged if the entry is already there.
pub fn place(news: &str, entry: &str) -> Result<String> {
    if news.contains(entry.trim_end()) {
        return Ok(news.to_string());
    }
    let lines: Vec<&str> = news.split_inclusive('\n').collect();
    let Some(version) = lines.iter().position(|l| l.starts_with("Version ")) else {
        bail!("{PATH} has no `Version X.Y` section to put the entry in");
    };
    let next_version = lines[version + 1..]
        .iter()
        .position(|l| l.starts_with("Version "))
        .map_or(lines.len(), |i| version + 1 + i);
    let heading = lines[version..next_version]
        .iter()
        .position(|l| l.trim_end() == FEATURES)
        .map(|i| version + i);
    let mut out = String::with_capacity(news.len() + entry.len() + 32);
    match heading {
        // The heading, a blank line, then the entry (which ends in its own blank line).
        Some(at) => {
            let insert = if lines.get(at + 1).is_some_and(|l| l.trim().is_empty()) {
                at + 2
            } else {
                at + 1
            };
            out.extend(lines[..insert].iter().copied());
            out.push_str(entry);
            out.extend(lines[insert..].iter().copied());
        }
        None => {
            // "Version X.Y", a blank line, then the new heading and the entry.
            let insert = (version + 2).min(lines.len());
            out.extend(lines[..insert].iter().copied());
            out.push_str(FEATURES);
            out.push_str("\n\n");
            out.push_str(entry);
            out.extend(lines[insert..].iter().copied());
        }
    }
    Ok(out)
}

/// `news` with `entry` under the development version `version`: first under its "Major new
/// features:" where `news`'s newest section is `Version <version>` (a development branch has
/// it), else in a new newest section of its own (a release's NEWS ends at the release).
pub(crate) fn place_for_development(news: &str, version: &str, entry: &str) -> Result<String> {
    let newest = news
        .lines()
        .find(|l| l.starts_with("Version "))
        .map(|l| l.trim_end().trim_start_matches("Version "));
    if newest == Some(version) {
        place(news, entry)
    } else {
        place_in_new_version(news, version, entry)
    }
}

/// `news` with a new newest section `Version <version>` holding only the entry: where a
/// contribution to the development version puts it.
pub(crate) fn place_in_new_version(news: &str, version: &str, entry: &str) -> Result<String> {
    let Some(at) = news.find("\nVersion ") else {
        bail!("{PATH} has no `Version X.Y` section");
    };
    let (head, rest) = news.split_at(at + 1);
    Ok(format!(
        "{head}Version {version}\n\n{FEATURES}\n\n{entry}{rest}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEWS: &str = "GNU C Library NEWS\n\nVersion 2.44\n\nMajor new features:\n\n* Tunables.\n\n* THP.\n\nDeprecated and removed features:\n\n* None.\n\nVersion 2.43\n\nMajor new features:\n\n* Old.\n";
    const ENTRY: &str = "* LD_FALLBACK_PATH.\n  More text.\n\n";

    #[test]
    fn the_entry_a_patch_adds_is_recovered() {
        let after = place(NEWS, ENTRY).unwrap();
        assert_eq!(entry_added(NEWS, &after).unwrap().as_deref(), Some(ENTRY));
        assert_eq!(entry_added(NEWS, NEWS).unwrap(), None);
        let edited = NEWS.replace("* THP.", "* THP, edited.");
        assert!(entry_added(NEWS, &edited).is_err());
    }

    #[test]
    fn the_entry_opens_the_newest_features_section() {
        let after = place(NEWS, ENTRY).unwrap();
        assert!(
            after.contains("Version 2.44\n\nMajor new features:\n\n* LD_FALLBACK_PATH.\n  More text.\n\n* Tunables.\n"),
            "{after}"
        );
        assert!(after.ends_with("Version 2.43\n\nMajor new features:\n\n* Old.\n"));
        // Placing it again changes nothing.
        assert_eq!(place(&after, ENTRY).unwrap(), after);
    }

    #[test]
    fn a_version_without_new_features_gets_the_heading() {
        let news = "Intro\n\nVersion 2.45\n\nBug fixes:\n\n* Some.\n";
        let after = place(news, ENTRY).unwrap();
        assert_eq!(
            after,
            "Intro\n\nVersion 2.45\n\nMajor new features:\n\n* LD_FALLBACK_PATH.\n  More text.\n\nBug fixes:\n\n* Some.\n"
        );
    }

    #[test]
    fn a_development_branch_s_section_takes_the_entry_and_a_release_gets_one() {
        let dev = "GNU C Library NEWS\n\nVersion 2.45\n\nMajor new features:\n\n* New.\n\nVersion 2.44\n\nMajor new features:\n\n* Old.\n";
        let after = place_for_development(dev, "2.45", ENTRY).unwrap();
        assert!(
            after.starts_with("GNU C Library NEWS\n\nVersion 2.45\n\nMajor new features:\n\n* LD_FALLBACK_PATH.\n  More text.\n\n* New.\n\nVersion 2.44\n"),
            "{after}"
        );
        assert_eq!(after.matches("Version 2.45").count(), 1);
        let after = place_for_development(NEWS, "2.45", ENTRY).unwrap();
        assert!(after.starts_with(
            "GNU C Library NEWS\n\nVersion 2.45\n\nMajor new features:\n\n* LD_FALLBACK_PATH.\n  More text.\n\nVersion 2.44\n"
        ));
    }

    #[test]
    fn a_new_development_section_holds_only_the_entry() {
        let after = place_in_new_version(NEWS, "2.45", ENTRY).unwrap();
        assert!(after.starts_with(
            "GNU C Library NEWS\n\nVersion 2.45\n\nMajor new features:\n\n* LD_FALLBACK_PATH.\n  More text.\n\nVersion 2.44\n"
        ));
    }
}
