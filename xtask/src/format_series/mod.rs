//! `cargo xtask format-series`: the series as a patch set to mail to libc-alpha
//! (docs/upstream.md says how to send it).
//!
//! What changes from `patches/<X.Y>/`: the author is a real person someone can reply to
//! (author.rs), every message ends in the author's `Signed-off-by` (glibc takes DCO
//! contributions; the files the series adds carry the DCO copyright line already, as
//! `series::copyright` requires of every series), the subjects carry
//! `[PATCH vN m/n]`, the series moves onto the sender's upstream commit (base.rs) and the
//! NEWS entry goes under the version in development there (its section, or a new one where
//! the base is a release: a contribution targets the next release), the manual's
//! change follows as a patch of its own (manual.rs: checked against upstream's file in the
//! sender's checkout, `--upstream`, without which nothing is written), and a cover letter
//! (cover.rs) says
//! what and why, how it was tested (testing.rs, from docs/support.json), and, from v2 on,
//! what changed since the previous version. Where the mails go is outdir.rs's.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use git2::{Oid, Repository, Signature};
use loader_tests::host::non_empty_env;

use crate::cli::{self, Env};
use crate::merge::news;
use crate::series::mail::{format_patch_tagged, split_message};
use crate::series::{slug, Workspace};
use crate::util::paths;
use crate::verify::support::SupportDoc;
use model::Release;

mod author;
pub mod base;
mod cover;
mod manual;
mod outdir;
mod testing;

pub use author::Author;
pub use base::{Base, BaseRun};
pub use manual::{Checkout, Manual};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The series to format: X.Y [default: with a git checkout as --upstream, the release
    /// nearest the base (the fewest lines differ in the files the series changes); else the
    /// newest].
    #[arg(long, value_name = "X.Y", value_parser = cli::release_or_newest())]
    pub release: Option<Release>,
    /// The commit of the --upstream checkout the mails apply to: a branch, tag or commit
    /// [default: its HEAD]. The series is moved onto it with the project's 3-way merge, the
    /// NEWS entry goes under the base's development version, and the cover letter names it.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Build the base for x86_64 with and without the series and run glibc's elf tests in
    /// both (a cold glibc build, twice the suite), so that the cover letter says what ran on
    /// the commit the mails apply to. Without it, a run recorded for the same series on the
    /// same base is said; else that nothing ran there.
    #[arg(long)]
    pub test_base: bool,
    /// The version of the patch set: 1 for the first mail, 2 after the first review, ...
    #[arg(long, default_value_t = 1, value_parser = cli::at_least_one::<u32>)]
    pub version: u32,
    /// Write a cover letter (`0000-cover-letter.patch`) too; its testing statement is made
    /// from docs/support.json.
    #[arg(long)]
    pub cover_letter: bool,
    /// Who sends it, `Name <email>` [default: git's user.name and user.email].
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,
    /// For v2 and later: the directory of the previous version's patches, for the cover
    /// letter's "Changes since" list and range diff.
    #[arg(long, value_name = "DIR")]
    pub previous: Option<PathBuf>,
    /// Your checkout of upstream glibc (`git clone git://sourceware.org/git/glibc.git`, on
    /// master): the manual's patch, the last mail, must apply exactly to its
    /// manual/dynlink.texi, which this project does not carry. Required [default:
    /// $LD_FALLBACK_GLIBC_UPSTREAM].
    #[arg(long, value_name = "DIR")]
    pub upstream: Option<PathBuf>,
    /// Where to write the patches [default: target/format-series/v<N>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl Args {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        let ws = Workspace::open(env)?;
        let author = match &self.author {
            Some(text) => Author::parse(text)?,
            None => Author::from_git_config()?,
        };
        let checkout =
            manual::checkout(self.upstream.clone(), non_empty_env(manual::UPSTREAM_ENV))?;
        let base = Base::resolve(checkout.dir(), self.base.as_deref())?;
        if self.cover_letter && base.is_none() {
            bail!(
                "--cover-letter needs a git base: {} is no git checkout, so the mails would apply to the glibc release the series is kept on, and a cover letter must name the upstream commit a reviewer applies them to (its base-commit); name a git checkout of upstream glibc with --upstream (and --base REV), or leave --cover-letter out; nothing was written",
                checkout.dir().display()
            );
        }
        let manual = match &base {
            Some(base) => Manual::at_base(&manual::patch_path(), checkout.dir(), base)?,
            None => Manual::read(&manual::patch_path(), &checkout)?,
        };
        let release = match (self.release, &base) {
            (Some(release), _) => release,
            (None, Some(base)) => base::nearest_release(&ws, base)?,
            (None, None) => Release::newest(),
        };
        let base_run = match &base {
            None if self.test_base => bail!(
                "--test-base builds the commit the mails apply to, and {} is no git checkout: name one with --upstream",
                checkout.dir().display()
            ),
            None => None,
            Some(base) => {
                let moved = base::move_series(&ws, base, release)?;
                let tests = crate::verify::cell::series_tests(&ws.load_series(release)?);
                match self.test_base {
                    true => Some(base::test_on_base(env, base, &moved, &tests)?),
                    false => base::recorded_run(&env.cache, base, &moved)?,
                }
            }
        };
        let previous = match (&self.previous, self.version) {
            (Some(dir), _) => Some(read_patches(dir)?),
            (None, 1) => None,
            (None, v) => bail!(
                "v{v} needs the previous version's patches for the range diff: pass --previous DIR"
            ),
        };
        let testing = match self.cover_letter {
            true => Some(
                match SupportDoc::read(&paths::project_root())
                    .context("cannot read the support record for the cover letter's testing statement")?
                {
                    Some(doc) => testing::statement(&doc),
                    None => bail!(
                        "the cover letter's testing statement is made from {}, which does not exist: write it with `{}`",
                        crate::verify::support::RECORD,
                        crate::verify::support::REGENERATE
                    ),
                },
            ),
            false => None,
        };
        let request = Request {
            release,
            base,
            base_run,
            version: self.version,
            cover_letter: self.cover_letter,
            author,
            previous,
            testing,
            manual,
        };
        let out = self.out.unwrap_or_else(|| {
            paths::project_root()
                .join("target/format-series")
                .join(format!("v{}", self.version))
        });
        // Before any work: a directory that cannot take the mails is refused first.
        let target = outdir::OutDir::examine(&out, self.version, self.previous.as_deref())?;
        let mails = format(&ws, &request)?;
        target.write(self.version, release, &mails)?;
        for (name, _) in &mails {
            outln!("{}", out.join(name).display());
        }
        Ok(())
    }
}

/// Everything one `format-series` run needs.
pub struct Request {
    /// The series to format.
    pub release: Release,
    /// The upstream commit the mails apply to; `None`: the series' own release.
    pub base: Option<Base>,
    /// What ran on that commit, where something did.
    pub base_run: Option<BaseRun>,
    pub version: u32,
    pub cover_letter: bool,
    pub author: Author,
    /// The previous version's mails (file name, text), for the range diff.
    pub previous: Option<Vec<(String, String)>>,
    /// The cover letter's testing statement (made from docs/support.json by the command).
    pub testing: Option<String>,
    /// The manual's change, checked against upstream's file of the sender's checkout.
    pub manual: Manual,
}

/// The mails, in order: (file name, text).
pub fn format(ws: &Workspace, request: &Request) -> Result<Vec<(String, String)>> {
    let release = request.release;
    // A series --check refuses is not mailed (a patch cut short would go out short).
    let repo = ws.store.repo();
    let (base, commits, development, moved) = match &request.base {
        None => {
            let series = crate::rebase::series_check::passing_series(ws, release)?;
            let (base, commits) = ws.commit_series(&series)?;
            (base, commits, next_version(release), None)
        }
        Some(upstream) => {
            let moved = base::move_series(ws, upstream, release)?;
            let commits = moved.commits.clone();
            (
                upstream.commit,
                commits,
                upstream.development.clone(),
                Some(moved),
            )
        }
    };
    let rewritten = rewrite(repo, base, &commits, &request.author, &development)?;
    // The manual's patch goes last, dated as the series' last patch. On a base it applies on
    // top of the series (the base has manual/); without one, to upstream's file alone: the
    // others are then the series as distributions carry it, and apply to the release.
    let last = repo.find_commit(*rewritten.last().context("an empty series")?)?;
    let last_time = last.author().when();
    let manual = match &request.base {
        Some(_) => request
            .manual
            .commit_on(repo, &last, &request.author, &last_time)?,
        None => request.manual.commit(repo, &request.author, &last_time)?,
    };
    let patches: Vec<Oid> = rewritten.iter().copied().chain([manual]).collect();
    let total = patches.len();
    let tag = |n: usize| match request.version {
        1 => format!("PATCH {n}/{total}"),
        v => format!("PATCH v{v} {n}/{total}"),
    };
    let prefix = match request.version {
        1 => String::new(),
        v => format!("v{v}-"),
    };
    let mut mails = Vec::new();
    for (i, id) in patches.iter().enumerate() {
        let commit = repo.find_commit(*id)?;
        let text = format_patch_tagged(repo, &commit, &tag(i + 1))?;
        let name = format!(
            "{prefix}{:04}-{}.patch",
            i + 1,
            slug(commit.summary().unwrap_or("patch"))
        );
        mails.push((name, text));
    }
    if request.cover_letter {
        let letter = cover::Letter {
            request,
            base,
            development: &development,
            moved: moved.as_ref(),
            patches: &patches,
            tag: tag(0),
        };
        let text = letter.write(repo, &mails)?;
        mails.insert(0, (format!("{prefix}0000-cover-letter.patch"), text));
    }
    Ok(mails)
}

/// `2.44` -> `2.45`: the version under development after a release.
fn next_version(release: Release) -> String {
    let (major, minor) = release.version().split_once('.').expect("releases are X.Y");
    format!(
        "{major}.{}",
        minor.parse::<u32>().expect("a numeric minor") + 1
    )
}

/// The series' commits again, by `author`, signed off, with NEWS's entry under the
/// development version (`news::place_for_development`).
fn rewrite(
    repo: &Repository,
    base: Oid,
    commits: &[Oid],
    author: &Author,
    development: &str,
) -> Result<Vec<Oid>> {
    let mut parent = repo.find_commit(base)?;
    let mut out = Vec::new();
    for id in commits {
        let commit = repo.find_commit(*id)?;
        let mut tree = commit.tree()?;
        let old_parent_tree = commit.parent(0)?.tree()?;
        let news_of = |tree: &git2::Tree<'_>| -> Result<Option<String>> {
            let Ok(entry) = tree.get_path(Path::new(news::PATH)) else {
                return Ok(None);
            };
            let blob = repo.find_blob(entry.id())?;
            Ok(Some(
                String::from_utf8(blob.content().to_vec()).context("NEWS is not UTF-8")?,
            ))
        };
        // NEWS as the rewritten parent has it, plus this commit's entry (if it adds one) under
        // the development version (its section, where the base has one; else a new one); a
        // commit that leaves NEWS alone keeps the parent's, or the original NEWS would come
        // back in its diff.
        if let (Some(before), Some(after)) = (news_of(&old_parent_tree)?, news_of(&tree)?) {
            let parent_news = news_of(&parent.tree()?)?.unwrap_or_default();
            let news = match news::entry_added(&before, &after)? {
                Some(entry) => news::place_for_development(&parent_news, development, &entry)?,
                None => parent_news,
            };
            let mut update = git2::build::TreeUpdateBuilder::new();
            update.upsert(
                news::PATH,
                repo.blob(news.as_bytes())?,
                git2::FileMode::Blob,
            );
            tree = repo.find_tree(update.create_updated(repo, &tree)?)?;
        }
        let message = commit.message().context("a commit message is not UTF-8")?;
        let (subject, body) = split_message(message);
        let sign_off = author.sign_off();
        let message = if body.contains(&sign_off) {
            message.to_string()
        } else if body.is_empty() {
            format!("{subject}\n\n{sign_off}\n")
        } else {
            format!("{subject}\n\n{body}\n{sign_off}\n")
        };
        let signature = Signature::new(&author.name, &author.email, &commit.author().when())?;
        let new = repo.commit(None, &signature, &signature, &message, &tree, &[&parent])?;
        parent = repo.find_commit(new)?;
        out.push(new);
    }
    Ok(out)
}

/// The previous version's mails, `*.patch` of `dir`: each a regular file of at most a
/// patch's size that starts as a mail (judged from its first bytes, before the rest is read)
/// and has a subject, which is what tells its patch in the new version.
fn read_patches(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut patches = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "patch") {
            // Found in the directory, not named by the user: a newline in its name is said
            // escaped.
            let text = read_previous_mail(&path).with_context(|| {
                format!(
                    "cannot read {}",
                    model::printable(&path.display().to_string())
                )
            })?;
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            patches.push((name, text));
        }
    }
    patches.sort();
    if patches.is_empty() {
        bail!("{} holds no .patch files", dir.display());
    }
    Ok(patches)
}

/// One mail of the previous version (see [`read_patches`]).
fn read_previous_mail(path: &Path) -> Result<String> {
    let bytes = crate::series::Head::Mail.read(path, crate::series::PATCH_LIMIT)?;
    let text = String::from_utf8(bytes).context("it is not UTF-8 text")?;
    if cover::subject(&text).is_empty() {
        bail!("it has no `Subject:` line, which tells which patch of the new version it was");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_development_version_follows_the_release() {
        assert_eq!(next_version(Release::parse("2.44").unwrap()), "2.45");
        assert_eq!(next_version(Release::parse("2.36").unwrap()), "2.37");
    }
}
