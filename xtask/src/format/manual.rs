//! The manual's patch of the mail: docs/upstream/manual-dynlink.texi.patch, the text for
//! upstream's `manual/dynlink.texi`, which no `patches/<X.Y>/` series can carry (Debian's
//! tarballs, which the store imports, have no `manual/`). It goes out as a patch of its own
//! after the series', made against upstream's file as vendored in
//! docs/upstream/glibc-manual/ (its README says from where): applying it there, exactly, is
//! the check that it applies, and gives the mail real `index` lines, so that `git am -3` can
//! fall back to a three-way merge on a newer master.

use std::path::Path;

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository, Signature};

use super::Author;

/// The manual change, a diff of `manual/dynlink.texi`.
pub(crate) const PATCH: &str = "docs/upstream/manual-dynlink.texi.patch";
/// Upstream's file the change is made against.
pub(crate) const UPSTREAM: &str = "docs/upstream/glibc-manual/dynlink.texi";
/// Its git blob id, as docs/upstream/glibc-manual/README.md records it.
pub(crate) const UPSTREAM_BLOB: &str = "a388d7eeeb81252e0e2ce2dac71692a897b8725b";
/// Upstream's commit it is taken from (master, 2026-01-20).
pub(crate) const UPSTREAM_COMMIT: &str = "04e750e75b73";
/// Where the file lives in glibc's tree.
const PATH: &str = "manual/dynlink.texi";

const MESSAGE: &str = "\
manual: Document LD_FALLBACK_PATH and ld.so --fallback-path

Describe LD_FALLBACK_PATH among the dynamic linker's environment
variables and --fallback-path among the options of ld.so: where the
fallback directories come in the search order, that -z nodefaultlib
and --inhibit-cache do not switch them off (and that the places those
skip are then not searched before them), the syntax and where it
differs from LD_LIBRARY_PATH (an empty or relative entry is ignored),
secure mode, and the diagnostics that report the fallback directories.
";

/// The manual change as a commit by `author` (signed off, dated `when`) whose parent holds
/// upstream's `manual/dynlink.texi` alone; refused when the patch does not apply exactly.
pub(crate) fn commit(
    repo: &Repository,
    root: &Path,
    author: &Author,
    when: &git2::Time,
) -> Result<Oid> {
    let read = |path: &str| {
        std::fs::read(root.join(path))
            .with_context(|| format!("cannot read {}", root.join(path).display()))
    };
    let upstream = read(UPSTREAM)?;
    let blob = repo
        .blob(&upstream)
        .context("cannot store upstream's manual/dynlink.texi")?;
    if blob.to_string() != UPSTREAM_BLOB {
        bail!(
            "{UPSTREAM} is not upstream's manual/dynlink.texi the project records (blob {UPSTREAM_BLOB}, it is {blob}): restore it, or record the new one as docs/upstream/glibc-manual/README.md says"
        );
    }
    let patch = String::from_utf8(read(PATCH)?).with_context(|| format!("{PATCH} is not UTF-8"))?;
    let made_against = patch
        .lines()
        .find_map(|line| line.strip_prefix("index "))
        .and_then(|ids| ids.split("..").next())
        .with_context(|| format!("{PATCH} has no `index` line: make it with git diff"))?;
    if !UPSTREAM_BLOB.starts_with(made_against) {
        bail!(
            "{PATCH} was made against blob {made_against} of manual/dynlink.texi, not against {UPSTREAM} ({}): make it again against that file",
            &UPSTREAM_BLOB[..12]
        );
    }
    let mut tree = repo.treebuilder(None)?;
    let mut manual = repo.treebuilder(None)?;
    manual.insert("dynlink.texi", blob, git2::FileMode::Blob.into())?;
    tree.insert("manual", manual.write()?, git2::FileMode::Tree.into())?;
    let base_tree = repo.find_tree(tree.write()?)?;
    let diff = git2::Diff::from_buffer(patch.as_bytes())
        .with_context(|| format!("{PATCH} is not a diff"))?;
    let touched: Vec<String> = diff
        .deltas()
        .filter_map(|d| d.new_file().path().map(|p| p.display().to_string()))
        .collect();
    if touched != [PATH] {
        bail!(
            "{PATCH} must change {PATH} alone; it changes {}",
            touched.join(", ")
        );
    }
    let mut index = repo.apply_to_tree(&base_tree, &diff, None).map_err(|e| {
        anyhow::anyhow!(
            "{PATCH} does not apply to upstream's manual/dynlink.texi ({UPSTREAM}, master at {UPSTREAM_COMMIT}): {}",
            e.message()
        )
    })?;
    let new_tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let signature = Signature::new(&author.name, &author.email, when)?;
    let base = repo.commit(
        None,
        &signature,
        &signature,
        &format!("upstream's {PATH} at {UPSTREAM_COMMIT}\n"),
        &base_tree,
        &[],
    )?;
    let message = format!("{MESSAGE}\n{}\n", author.sign_off());
    let parent = repo.find_commit(base)?;
    Ok(repo.commit(
        None,
        &signature,
        &signature,
        &message,
        &new_tree,
        &[&parent],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> std::path::PathBuf {
        crate::util::paths::project_root()
    }

    /// The vendored file is upstream's, byte for byte: its blob id is the one recorded.
    #[test]
    fn the_vendored_file_is_upstream_s() {
        let text = std::fs::read(root().join(UPSTREAM)).unwrap();
        assert_eq!(
            git2::Oid::hash_object(git2::ObjectType::Blob, &text)
                .unwrap()
                .to_string(),
            UPSTREAM_BLOB
        );
        let readme =
            std::fs::read_to_string(root().join("docs/upstream/glibc-manual/README.md")).unwrap();
        assert!(readme.contains(UPSTREAM_BLOB) && readme.contains(UPSTREAM_COMMIT));
    }

    fn author() -> Author {
        Author::parse("Ada Lovelace <ada@gnu.org>").unwrap()
    }

    /// A project root holding `upstream` as the vendored file and `patch` as the change.
    fn project(upstream: &[u8], patch: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs/upstream/glibc-manual")).unwrap();
        std::fs::write(dir.path().join(UPSTREAM), upstream).unwrap();
        std::fs::write(dir.path().join(PATCH), patch).unwrap();
        dir
    }

    fn commit_in(root: &Path) -> Result<Oid> {
        let repo_dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(repo_dir.path()).unwrap();
        commit(&repo, root, &author(), &git2::Time::new(1_764_000_000, 0))
    }

    #[test]
    fn the_patch_applies_exactly_to_upstream_s_file() {
        let repo_dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(repo_dir.path()).unwrap();
        let id = commit(
            &repo,
            &root(),
            &author(),
            &git2::Time::new(1_764_000_000, 0),
        )
        .unwrap();
        let commit = repo.find_commit(id).unwrap();
        let parent = commit.parent(0).unwrap();
        let entry =
            |c: &git2::Commit<'_>| c.tree().unwrap().get_path(Path::new(PATH)).unwrap().id();
        assert_eq!(entry(&parent).to_string(), UPSTREAM_BLOB);
        let patched = repo.find_blob(entry(&commit)).unwrap();
        let text = std::str::from_utf8(patched.content()).unwrap();
        assert!(
            text.contains("@item --fallback-path @var{list}\n"),
            "the option is documented"
        );
        assert!(
            text.contains("@item LD_FALLBACK_PATH\n"),
            "the variable is documented"
        );
        assert!(commit
            .message()
            .unwrap()
            .ends_with("\n\nSigned-off-by: Ada Lovelace <ada@gnu.org>\n"));
    }

    /// What the manual says stays true to the contract: no claim that a fallback copy never
    /// wins over a system one (false where those are not searched), and the rule for empty
    /// and relative entries.
    #[test]
    fn the_manual_text_says_what_the_loader_does() {
        let patch = std::fs::read_to_string(root().join(PATCH)).unwrap();
        let added: String = patch
            .lines()
            .filter_map(|l| l.strip_prefix('+'))
            .map(|l| format!("{l} "))
            .collect();
        let added = added.split_whitespace().collect::<Vec<_>>().join(" ");
        for untrue in ["never shadows", "never replaces", "can only supply"] {
            assert!(!added.contains(untrue), "{untrue:?} in {PATCH}");
        }
        for said in [
            "only absolute directories are searched: an entry that is empty, or that is a relative path after the expansion of the dynamic string tokens, is ignored",
            "for a loading object linked with @option{-Wl,-z,nodefaultlib}, or with @samp{--inhibit-cache}, a shared object can be loaded from a fallback directory even if the default directories or @file{ld.so.cache} have a copy of it.",
            "@env{LD_FALLBACK_PATH} is ignored and removed from the environment.",
        ] {
            assert!(added.contains(said), "{PATCH} does not say {said:?}");
        }
    }

    #[test]
    fn a_patch_for_another_file_is_refused_with_its_cause() {
        let upstream = std::fs::read(root().join(UPSTREAM)).unwrap();
        let patch = std::fs::read_to_string(root().join(PATCH)).unwrap();
        // Upstream's file edited: not the recorded one.
        let mut edited = upstream.clone();
        edited.extend_from_slice(b"@c local edit\n");
        let err = format!(
            "{:#}",
            commit_in(project(&edited, &patch).path()).unwrap_err()
        );
        assert!(
            err.starts_with(&format!("{UPSTREAM} is not upstream's manual/dynlink.texi the project records (blob {UPSTREAM_BLOB}, it is ")),
            "{err}"
        );
        // A patch made against another version of the file.
        let other = patch.replacen(&UPSTREAM_BLOB[..12], "cd05107e6c7d", 1);
        let err = format!(
            "{:#}",
            commit_in(project(&upstream, &other).path()).unwrap_err()
        );
        assert_eq!(
            err,
            format!("{PATCH} was made against blob cd05107e6c7d of manual/dynlink.texi, not against {UPSTREAM} (a388d7eeeb81): make it again against that file")
        );
        // A hunk whose context is not upstream's.
        let broken = patch.replacen(
            " Some of the supported options are listed below.",
            " Some options.",
            1,
        );
        let err = format!(
            "{:#}",
            commit_in(project(&upstream, &broken).path()).unwrap_err()
        );
        assert!(
            err.starts_with(&format!("{PATCH} does not apply to upstream's manual/dynlink.texi ({UPSTREAM}, master at {UPSTREAM_COMMIT}): ")),
            "{err}"
        );
    }
}
