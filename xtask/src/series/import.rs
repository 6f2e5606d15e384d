//! `cargo xtask series import`: take a series written elsewhere (`git format-patch` output,
//! say from a glibc checkout) as the series of one release, in the project's canonical form.
//!
//! The patches must apply exactly to the stored release, as `rebase-glibc --check` demands;
//! what changes is only the form: commit ids, diffstat, `index` abbreviation and the trailer.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::series::Workspace;
use crate::series::{is_defect, read_text, Head, PatchMail, Series, PATCH_LIMIT, TRAILER};
use model::Release;

/// Writes `patches/<release>/` from `files`, in order. An existing series is kept unless
/// `replace` is set, so that an import never overwrites work by accident.
pub fn import(
    ws: &Workspace,
    release: Release,
    files: &[PathBuf],
    replace: bool,
) -> Result<PathBuf> {
    let dir = ws.series_dir(release);
    if dir.exists() && !replace {
        bail!(
            "{} already holds a series: pass --replace to overwrite it, or rebase it with `cargo xtask rebase-glibc`",
            dir.display()
        );
    }
    if files.is_empty() {
        bail!("name the patch files to import, in order");
    }
    let repo = ws.store.repo();
    let mut head = ws.store.ensure_release(release)?;
    let mut commits = Vec::new();
    let mut named = Vec::new();
    for file in files {
        let text = read_text(file, PATCH_LIMIT, Head::Mail)?;
        let mail = PatchMail::parse(&with_project_trailer(&text)).with_context(|| {
            format!(
                "cannot parse {} as a `git format-patch` mail",
                file.display()
            )
        })?;
        let parent = repo
            .find_commit(head)
            .context("a commit just made is missing from the store")?;
        head = mail.commit_on(repo, &parent).map_err(|e| {
            if is_defect(&e) {
                e.context(format!(
                    "{} does not apply exactly to glibc {release}",
                    file.display()
                ))
            } else {
                e.context(format!(
                    "cannot commit {} on glibc {release} in the store",
                    file.display()
                ))
            }
        })?;
        commits.push(head);
        named.push((file.display().to_string(), head));
    }
    super::guard(&ws.scope()?, repo, &named).with_context(|| {
        format!(
            "refusing to import the series; {} is unchanged",
            dir.display()
        )
    })?;
    Series::from_commits(repo, release, &commits)?.write(&dir)?;
    Ok(dir)
}

/// `git format-patch` ends a mail with a signature naming the git version (`-- \n2.47.3\n\n`),
/// or none with `--no-signature`; the project's series end with the fixed [`TRAILER`].
fn with_project_trailer(text: &str) -> String {
    let body = match text.rfind("\n-- \n") {
        Some(at) => &text[..at + 1],
        None => text,
    };
    format!("{body}{TRAILER}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_signature_becomes_the_project_trailer() {
        let mail = "Subject: x\n\ndiff --git a/f b/f\n-- \n2.47.3\n\n";
        assert_eq!(
            with_project_trailer(mail),
            format!("Subject: x\n\ndiff --git a/f b/f\n{TRAILER}")
        );
    }

    #[test]
    fn a_mail_without_signature_gets_the_trailer() {
        assert_eq!(with_project_trailer("diff\n"), format!("diff\n{TRAILER}"));
    }
}
