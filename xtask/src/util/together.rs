//! Directories replaced together, or not at all: a series and its recorded resolutions are
//! one change (`patches/X.Y/` and `patches/resolutions/X.Y/`), and no failure, kill or full
//! disk may leave one new and the other old.
//!
//! Every new directory is staged whole beside its destination first (a full disk or a
//! read-only `patches/` fails there, before anything changed). Then a journal naming each
//! (staged, destination) pair and a digest of its new content is written and flushed, and
//! the pairs are swapped in one by one (`renameat2(RENAME_EXCHANGE)`, or three renames where
//! the filesystem cannot exchange). Removing the journal is the commit point. A swap that
//! fails rolls back the ones done; a kill leaves the journal, and the next run's
//! [`recover`] rolls every pair back to its old directory: the state of whatever was being
//! written (a stopped rebase) still says it was not, so the old is what is true.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::util::{durable, fault, paths};

/// A journal: a few lines per directory written together.
const JOURNAL_LIMIT: model::file::Limit = model::file::Limit {
    bytes: 1 << 20,
    what: "a journal of directories written together",
};

/// A file of a directory written together (a patch, a recorded resolution: see
/// `series::PATCH_LIMIT`).
const STAGED_LIMIT: model::file::Limit = model::file::Limit {
    bytes: 64 << 20,
    what: "a file of a series",
};

/// The journal's name prefix in the directory that holds it: `.publish-<pid>-<name>`.
const JOURNAL: &str = ".publish-";

/// One directory to replace: `staged` (complete, beside `dest`) becomes `dest`.
pub(crate) struct Pair {
    pub staged: PathBuf,
    pub dest: PathBuf,
}

/// What the journal knows of a pair.
struct Entry {
    staged: PathBuf,
    dest: PathBuf,
    /// Whether `dest` existed before (else rolling back removes it).
    existed: bool,
    /// The digest of the new content, which tells a swapped destination from one that is not.
    digest: String,
}

/// Replaces every `dest` with its `staged` directory, all or none (see the module docs). The
/// journal goes into `journal_dir`, named after `name`; the staged directories are consumed.
pub(crate) fn replace(journal_dir: &Path, name: &str, pairs: &[Pair]) -> Result<()> {
    let mut entries = Vec::new();
    for pair in pairs {
        durable::sync_dir(&pair.staged)?;
        entries.push(Entry {
            staged: pair.staged.clone(),
            dest: pair.dest.clone(),
            existed: pair.dest.exists(),
            digest: digest(&pair.staged)?
                .with_context(|| format!("{} is not staged", pair.staged.display()))?,
        });
    }
    let journal = journal_dir.join(format!("{JOURNAL}{}-{name}", std::process::id()));
    durable::write_synced(&journal, render(&entries).as_bytes())?;
    durable::sync_dir(journal_dir)?;
    fault::point("together:journal-written");
    for (i, entry) in entries.iter().enumerate() {
        if let Err(e) = swap_in(entry) {
            // Put back what was swapped: the error stands, and nothing changed.
            for done in entries[..=i].iter().rev() {
                roll_back(done).with_context(|| {
                    format!(
                        "and cannot put {} back (the journal {} says how)",
                        done.dest.display(),
                        journal.display()
                    )
                })?;
            }
            remove_journal(&journal)?;
            return Err(e.context("nothing was changed"));
        }
        fault::point("together:swapped");
    }
    remove_journal(&journal)?;
    fault::point("together:committed");
    // What the swaps left at the staged paths is the old content, referred to by nothing.
    for entry in &entries {
        durable::remove_tree(&entry.staged)?;
    }
    Ok(())
}

/// After a kill inside [`replace`]: rolls every pair of every journal in `dir` whose process
/// is gone back to its old directory, and removes what the run staged. Returns a sentence
/// per journal, for the user. Must run before the staging directories' own cleanup, which
/// would remove an old directory the rollback needs.
pub(crate) fn recover(dir: &Path) -> Result<Vec<String>> {
    let mut said = Vec::new();
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Ok(said);
    };
    let mut names: Vec<String> = listing
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(JOURNAL))
        .collect();
    names.sort();
    for name in names {
        let pid = name[JOURNAL.len()..].split('-').next().unwrap_or("");
        if pid.parse::<u32>().is_err() || Path::new("/proc").join(pid).exists() {
            continue;
        }
        let journal = dir.join(&name);
        let text = model::file::read_regular_text(&journal, JOURNAL_LIMIT)
            .with_context(|| format!("cannot read {}", journal.display()))?;
        let entries = parse(&text)
            .with_context(|| format!("cannot read the journal {}", journal.display()))?;
        for entry in entries.iter().rev() {
            roll_back(entry)?;
        }
        remove_journal(&journal)?;
        let dests: Vec<String> = entries
            .iter()
            .map(|e| e.dest.display().to_string())
            .collect();
        said.push(format!(
            "restored {} as they were: a run writing them together was interrupted before it finished",
            dests.join(" and ")
        ));
    }
    Ok(said)
}

/// Swaps `entry.staged` in at `entry.dest`; afterwards the staged path holds the old
/// directory (or nothing, when there was none).
fn swap_in(entry: &Entry) -> Result<()> {
    let (staged, dest) = (&entry.staged, &entry.dest);
    let parent = dest.parent().context("a destination has no parent")?;
    if !entry.existed {
        std::fs::rename(staged, dest)
            .with_context(|| format!("cannot move {} into place", dest.display()))?;
    } else if !durable::exchange(staged, dest)? {
        // No RENAME_EXCHANGE here: three renames, each state of which [`roll_back`] knows.
        let aside = durable::old_path(dest)?;
        std::fs::rename(dest, &aside)
            .with_context(|| format!("cannot move {} aside", dest.display()))?;
        std::fs::rename(staged, dest)
            .with_context(|| format!("cannot move {} into place", dest.display()))?;
        std::fs::rename(&aside, staged)
            .with_context(|| format!("cannot move the old {} away", dest.display()))?;
    }
    durable::sync_dir(parent)
}

/// Puts the old directory of `entry` back at its destination, whatever step of
/// [`swap_in`] (or of an earlier roll back) a kill stopped at; removes the new one. Idempotent.
fn roll_back(entry: &Entry) -> Result<()> {
    let dest = &entry.dest;
    let parent = dest.parent().context("a destination has no parent")?;
    let aside = durable::old_path(dest)?;
    let is_new =
        |dir: &Path| -> Result<bool> { Ok(digest(dir)?.as_deref() == Some(&entry.digest)) };
    // Where the old directory waits, if it is not at `dest`: beside it (a fallback swap
    // stopped halfway), or at the staged path (a swap that went through).
    let old = [&aside, &entry.staged]
        .into_iter()
        .find(|dir| dir.exists() && !is_new(dir).unwrap_or(true))
        .cloned();
    let dest_is_new = dest.exists() && is_new(dest)?;
    if dest_is_new && (old.is_some() || !entry.existed) {
        // The new one goes first (under a name the cleanup knows), then the old one back.
        let discard = discard_path(dest)?;
        std::fs::rename(dest, &discard)
            .with_context(|| format!("cannot move {} away", dest.display()))?;
        durable::sync_dir(parent)?;
    }
    if !dest.exists() {
        if let Some(old) = &old {
            std::fs::rename(old, dest)
                .with_context(|| format!("cannot move {} back", dest.display()))?;
        } else if entry.existed {
            bail!(
                "the old {} is neither at {} nor at {}",
                dest.display(),
                aside.display(),
                entry.staged.display()
            );
        }
    }
    // A destination whose directory is gone (the swap that failed) has nothing to flush.
    if parent.exists() {
        durable::sync_dir(parent)?;
    }
    for left in [entry.staged.clone(), aside, discard_path(dest)?] {
        durable::remove_tree(&left)?;
    }
    Ok(())
}

/// `<parent>/.discard-<name>`: a new directory on its way out during a roll back.
fn discard_path(dest: &Path) -> Result<PathBuf> {
    let parent = dest.parent().context("a destination has no parent")?;
    let name = dest.file_name().context("a destination has no name")?;
    Ok(parent.join(format!(".discard-{}", name.to_string_lossy())))
}

fn remove_journal(journal: &Path) -> Result<()> {
    std::fs::remove_file(journal)
        .with_context(|| format!("cannot remove the journal {}", journal.display()))?;
    durable::sync_dir(journal.parent().context("a journal has no directory")?)
}

/// A digest of a flat directory's files (names and bytes); `None` when it does not exist.
fn digest(dir: &Path) -> Result<Option<String>> {
    let Some(entries) = paths::entries_if_exists(dir)? else {
        return Ok(None);
    };
    let mut names: Vec<_> = entries.iter().map(|entry| entry.file_name()).collect();
    names.sort();
    let mut hash = sha1_smol::Sha1::new();
    for name in names {
        let path = dir.join(&name);
        let bytes = model::file::read_regular(&path, STAGED_LIMIT)
            .with_context(|| format!("cannot read {}", path.display()))?;
        hash.update(name.to_string_lossy().as_bytes());
        hash.update(&[0]);
        hash.update(&(bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(Some(hash.digest().to_string()))
}

/// One line per field, a blank line between pairs: paths may hold spaces.
fn render(entries: &[Entry]) -> String {
    let mut text = String::from("# cargo xtask: directories being replaced together\n");
    for e in entries {
        text.push_str(&format!(
            "\nstaged {}\ndest {}\nexisted {}\ndigest {}\n",
            e.staged.display(),
            e.dest.display(),
            if e.existed { "yes" } else { "no" },
            e.digest
        ));
    }
    text
}

fn parse(text: &str) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut fields: Vec<(&str, &str)> = Vec::new();
    let mut flush = |fields: &mut Vec<(&str, &str)>| -> Result<()> {
        if fields.is_empty() {
            return Ok(());
        }
        let get = |key: &str| {
            fields
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .with_context(|| format!("a pair has no `{key}` line"))
        };
        entries.push(Entry {
            staged: PathBuf::from(get("staged")?),
            dest: PathBuf::from(get("dest")?),
            existed: get("existed")? == "yes",
            digest: get("digest")?.to_string(),
        });
        fields.clear();
        Ok(())
    };
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            flush(&mut fields)?;
            continue;
        }
        let (key, value) = line
            .split_once(' ')
            .with_context(|| format!("malformed line `{line}`"))?;
        fields.push((key, value));
    }
    flush(&mut fields)?;
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(path: &Path, files: &[(&str, &str)]) {
        std::fs::create_dir_all(path).unwrap();
        for (name, text) in files {
            std::fs::write(path.join(name), text).unwrap();
        }
    }

    fn read(dir: &Path) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read_to_string(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    }

    #[test]
    fn both_are_replaced() {
        let tmp = tempfile::TempDir::new().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("sub/b"));
        dir_with(&a, &[("x", "old a")]);
        let (sa, sb) = (tmp.path().join(".sa"), tmp.path().join("sub/.sb"));
        dir_with(&sa, &[("x", "new a")]);
        dir_with(&sb, &[("y", "new b")]);
        let pairs = [
            Pair {
                staged: sa.clone(),
                dest: a.clone(),
            },
            Pair {
                staged: sb.clone(),
                dest: b.clone(),
            },
        ];
        replace(tmp.path(), "t", &pairs).unwrap();
        assert_eq!(read(&a), [("x".into(), "new a".into())]);
        assert_eq!(read(&b), [("y".into(), "new b".into())]);
        assert!(!sa.exists() && !sb.exists());
        assert!(recover(tmp.path()).unwrap().is_empty());
    }

    #[test]
    fn a_failed_second_swap_puts_the_first_back() {
        let tmp = tempfile::TempDir::new().unwrap();
        let a = tmp.path().join("a");
        dir_with(&a, &[("x", "old a")]);
        let sa = tmp.path().join(".sa");
        dir_with(&sa, &[("x", "new a")]);
        let sb = tmp.path().join(".sb");
        dir_with(&sb, &[("y", "new b")]);
        // A destination whose directory does not exist: its rename fails.
        let b = tmp.path().join("missing/b");
        let pairs = [
            Pair {
                staged: sa,
                dest: a.clone(),
            },
            Pair {
                staged: sb,
                dest: b.clone(),
            },
        ];
        let err = format!("{:#}", replace(tmp.path(), "t", &pairs).unwrap_err());
        assert!(err.starts_with("nothing was changed"), "{err}");
        assert_eq!(read(&a), [("x".into(), "old a".into())]);
        assert!(!b.exists());
    }

    #[test]
    fn every_state_a_kill_can_leave_rolls_back() {
        // (what the destination holds, what the staged path holds, what is aside)
        for (dest, staged, aside) in [
            (Some("old"), Some("new"), None), // killed before the swap
            (Some("new"), Some("old"), None), // after the exchange
            (None, Some("new"), Some("old")), // fallback, after the first rename
            (Some("new"), None, Some("old")), // fallback, after the second
        ] {
            let tmp = tempfile::TempDir::new().unwrap();
            let d = tmp.path().join("a");
            let s = tmp.path().join(".sa");
            let put = |path: &Path, what: Option<&str>| {
                if let Some(text) = what {
                    dir_with(path, &[("x", text)]);
                }
            };
            put(&d, dest);
            put(&s, staged);
            put(&durable::old_path(&d).unwrap(), aside);
            let new_dir = tmp.path().join("new");
            dir_with(&new_dir, &[("x", "new")]);
            let entry = Entry {
                staged: s.clone(),
                dest: d.clone(),
                existed: true,
                digest: digest(&new_dir).unwrap().unwrap(),
            };
            std::fs::write(
                tmp.path().join(format!("{JOURNAL}999999999-t")),
                render(&[entry]),
            )
            .unwrap();
            let said = recover(tmp.path()).unwrap();
            assert_eq!(said.len(), 1, "{dest:?} {staged:?} {aside:?}");
            assert_eq!(
                read(&d),
                [("x".into(), "old".into())],
                "{dest:?} {staged:?} {aside:?}"
            );
            let left: Vec<_> = std::fs::read_dir(tmp.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            let mut left: Vec<_> = left.into_iter().filter(|n| n != "new").collect();
            left.sort();
            assert_eq!(left, ["a"], "{dest:?} {staged:?} {aside:?}");
        }
    }
}
