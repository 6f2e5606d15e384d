//! `cargo xtask store import|list`: the local store of glibc releases.

use anyhow::Result;
use clap::Subcommand;

use crate::cli::{self, Env};
use crate::store::import::Source;
use crate::store::SourceStore;
use model::{supported, Release};

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Import a release into the store (deterministic: same tree, same commit id everywhere).
    Import {
        #[arg(value_name = "X.Y", value_parser = cli::release())]
        release: Release,
        /// `debian` (the orig tarball, through apt), `tarball:<path>` or `git:<url-or-path>`.
        #[arg(long, default_value = "debian", value_parser = Source::parse)]
        from: Source,
    },
    /// List the releases in the store.
    List,
}

impl Command {
    pub(crate) fn run(self, env: &Env) -> Result<()> {
        match self {
            Command::Import { release, from } => {
                let dir = &env.store;
                crate::store::import_into(dir, release, &from)?;
                Ok(())
            }
            Command::List => {
                let dir = &env.store;
                let store = SourceStore::open_read_only(dir)?;
                outln!("store: {}", store.dir().display());
                let stored = store.list()?;
                for release in supported() {
                    let row = stored.iter().find(|s| s.tag == release.tag());
                    let state = match row {
                        None => "not imported".to_string(),
                        Some(s) if s.tree.to_string() == release.pinned_tree() => {
                            format!("commit {}", s.commit)
                        }
                        Some(s) => format!(
                            "commit {} with UNEXPECTED tree {} (pinned {})",
                            s.commit,
                            s.tree,
                            release.pinned_tree()
                        ),
                    };
                    outln!("{:<11} {state}", release.tag());
                }
                for other in stored
                    .iter()
                    .filter(|s| !supported().iter().any(|r| r.tag() == s.tag))
                {
                    outln!(
                        "{:<11} commit {} (not a supported release)",
                        other.tag,
                        other.commit
                    );
                }
                Ok(())
            }
        }
    }
}
