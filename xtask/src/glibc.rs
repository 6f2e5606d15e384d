//! `cargo xtask glibc import|list`: the local store of glibc releases.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use crate::import::Source;
use crate::release::{Release, SUPPORTED};
use crate::store::SourceStore;

#[derive(Subcommand)]
pub enum Command {
    /// Import a release into the store (deterministic: same tree, same commit id everywhere).
    Import {
        /// `X.Y`, one of the supported releases.
        version: String,
        /// `debian` (the orig tarball, through apt), `tarball:<path>` or `git:<url-or-path>`.
        #[arg(long, default_value = "debian")]
        from: String,
        /// The store (default: `$LD_FALLBACK_STORE`, else `<cache>/glibc.git`).
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// List the releases in the store.
    List {
        #[arg(long)]
        store: Option<PathBuf>,
    },
}

impl Command {
    pub fn run(self) -> Result<()> {
        match self {
            Command::Import {
                version,
                from,
                store,
            } => {
                let release = Release::parse(&version)?;
                let source = Source::parse(&from)?;
                let store = SourceStore::open_default(store.as_deref())?;
                store.import(release, &source)?;
                Ok(())
            }
            Command::List { store } => {
                let store = SourceStore::open_default(store.as_deref())?;
                println!("store: {}", store.dir().display());
                let stored = store.list()?;
                for release in SUPPORTED {
                    let row = stored.iter().find(|s| s.tag == release.tag());
                    let state = match row {
                        None => "not imported".to_string(),
                        Some(s) if s.tree.to_string() == release.tree => {
                            format!("commit {}", s.commit)
                        }
                        Some(s) => format!(
                            "commit {} with UNEXPECTED tree {} (pinned {})",
                            s.commit, s.tree, release.tree
                        ),
                    };
                    println!("{:<11} {state}", release.tag());
                }
                for other in stored
                    .iter()
                    .filter(|s| !SUPPORTED.iter().any(|r| r.tag() == s.tag))
                {
                    println!(
                        "{:<11} commit {} (not a supported release)",
                        other.tag, other.commit
                    );
                }
                Ok(())
            }
        }
    }
}
