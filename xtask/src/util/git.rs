//! Git repositories opened, and git's configuration read, without waiting forever.
//!
//! libgit2 reads git's configuration to open any repository (the system, global and XDG
//! files, the repository's own, and what they include), as the git command does, with a
//! blocking `open` and a read to the end: a FIFO as `~/.gitconfig` (or as a checkout's
//! `.git/config`) would hang every command that opens the store, and `/dev/zero` would fill
//! the memory. Every file git would read is looked at first ([`check_configuration`]): each
//! must be a regular file of at most [`CONFIG_LIMIT`] (or `/dev/null`, which reads as empty),
//! and one that is not refuses the command at once, naming it. Every repository and
//! configuration of git the commands open goes through this module (the tidy test
//! `git_opens_through_util_git` holds them to it).

use std::path::{Path, PathBuf};

use anyhow::Result;
use git2::{Config, ConfigLevel, Repository};
use model::file::Limit;

/// A git configuration file: a few lines a person or git writes.
pub(crate) const CONFIG_LIMIT: Limit = Limit {
    bytes: 1 << 20,
    what: "a git configuration file",
};

/// git's include depth, after which it stops with an error (git's `MAX_INCLUDE_DEPTH`).
const INCLUDE_DEPTH: usize = 10;

/// A configuration file of git that cannot be read as one: a FIFO, a device, a directory, a
/// file larger than [`CONFIG_LIMIT`], or one that cannot be read at all. Callers tell it from
/// what the repository itself is ([`is_configuration_error`]).
#[derive(Debug)]
pub(crate) struct UnreadableConfiguration(String);

impl std::fmt::Display for UnreadableConfiguration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnreadableConfiguration {}

/// Whether `err` says git's configuration could not be read (here, or by libgit2), rather
/// than anything about the repository.
pub(crate) fn is_configuration_error(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.downcast_ref::<UnreadableConfiguration>().is_some()
            || cause
                .downcast_ref::<git2::Error>()
                .is_some_and(|e| e.class() == git2::ErrorClass::Config)
    })
}

/// The git2 error code of `err`, when a libgit2 call is what failed.
pub(crate) fn error_code(err: &anyhow::Error) -> Option<git2::ErrorCode> {
    err.chain()
        .find_map(|cause| cause.downcast_ref::<git2::Error>())
        .map(git2::Error::code)
}

/// `Repository::open` of `dir` (a work tree or a git directory), git's configuration checked
/// first. A libgit2 error is kept as the cause ([`error_code`]).
pub(crate) fn open(dir: &Path) -> Result<Repository> {
    check_configuration(&git_dirs_of(dir))?;
    Ok(Repository::open(dir)?)
}

/// `Repository::open_bare` of `dir`, git's configuration checked first.
pub(crate) fn open_bare(dir: &Path) -> Result<Repository> {
    check_configuration(&[dir.to_path_buf()])?;
    Ok(Repository::open_bare(dir)?)
}

/// `Repository::init` of `dir` (a work tree, which reads the user's configuration for its
/// defaults), git's configuration checked first.
pub(crate) fn init(dir: &Path) -> Result<Repository> {
    check_configuration(&[])?;
    Ok(Repository::init(dir)?)
}

/// `Repository::init_bare` of `dir` (which reads the user's configuration for its defaults),
/// git's configuration checked first.
pub(crate) fn init_bare(dir: &Path) -> Result<Repository> {
    check_configuration(&[])?;
    Ok(Repository::init_bare(dir)?)
}

/// The repository that holds `dir` (`Repository::discover`), git's configuration checked
/// first.
pub(crate) fn discover(dir: &Path) -> Result<Repository> {
    let holder = dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir);
    check_configuration(&git_dirs_of(holder))?;
    Ok(Repository::discover(dir)?)
}

/// The user's configuration (system, global, XDG), as `git config` without a repository
/// reads it: `Config::open_default`, each file checked first.
pub(crate) fn user_configuration() -> Result<Config> {
    check_configuration(&[])?;
    Ok(Config::open_default()?)
}

/// Checks every configuration file git reads for a repository whose git directory is one of
/// `git_dirs` (none: the user's configuration alone), and for the git command
/// (`$GIT_CONFIG_GLOBAL`, `$GIT_CONFIG_SYSTEM`), following their includes; see the module
/// docs. Before a `git` command runs, too.
pub(crate) fn check_configuration(git_dirs: &[PathBuf]) -> Result<()> {
    let mut files = user_files();
    for dir in git_dirs {
        files.push(dir.join("config"));
        files.push(dir.join("config.worktree"));
    }
    for file in files {
        check_file(&file, None, 0)?;
    }
    Ok(())
}

/// The configuration files of the user and the system that libgit2 reads, where its search
/// paths say (each directory of each list: a superset of what it opens), and those the git
/// command is told of by the environment.
fn user_files() -> Vec<PathBuf> {
    let levels = [
        (ConfigLevel::System, "gitconfig"),
        (ConfigLevel::Global, ".gitconfig"),
        (ConfigLevel::XDG, "config"),
        (ConfigLevel::ProgramData, "config"),
    ];
    let mut files = Vec::new();
    for (level, name) in levels {
        // SAFETY: reads libgit2's global search path, which nothing in this program sets.
        let Ok(dirs) = (unsafe { git2::opts::get_search_path(level) }) else {
            continue;
        };
        let dirs = dirs.to_string_lossy().into_owned();
        files.extend(
            dirs.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| Path::new(d).join(name)),
        );
    }
    for variable in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
        if let Some(file) = std::env::var_os(variable).filter(|v| !v.is_empty()) {
            files.push(PathBuf::from(file));
        }
    }
    files
}

/// The git directories whose configuration opening `dir` reads: `dir` itself (a bare
/// repository), `dir/.git`, or, where `dir/.git` is a file (a linked work tree, a
/// submodule), the directory it names and that directory's common directory.
fn git_dirs_of(dir: &Path) -> Vec<PathBuf> {
    let dot_git = dir.join(".git");
    let mut dirs = vec![dir.to_path_buf()];
    match std::fs::symlink_metadata(&dot_git) {
        Ok(meta) if meta.is_dir() => dirs.push(dot_git),
        Ok(_) => {
            // `gitdir: <path>`, relative to `dir`; read bounded (it could be a FIFO too).
            if let Ok(text) = model::file::read_regular_text(&dot_git, CONFIG_LIMIT) {
                if let Some(linked) = text.lines().find_map(|l| l.strip_prefix("gitdir: ")) {
                    let linked = dir.join(linked.trim());
                    if let Ok(common) =
                        model::file::read_regular_text(&linked.join("commondir"), CONFIG_LIMIT)
                    {
                        dirs.push(linked.join(common.trim()));
                    }
                    dirs.push(linked);
                }
            }
        }
        Err(_) => {}
    }
    dirs
}

/// One configuration file (`included_by` another, `depth` includes deep), and what it
/// includes: absent, `/dev/null` or a regular file within the limit.
fn check_file(file: &Path, included_by: Option<&Path>, depth: usize) -> Result<()> {
    let refused = |why: String| {
        let by = included_by
            .map(|by| format!(" (included by {})", by.display()))
            .unwrap_or_default();
        anyhow::Error::new(UnreadableConfiguration(format!(
            "cannot read git's configuration file {}{by}: {why}",
            file.display()
        )))
    };
    if depth > INCLUDE_DEPTH {
        return Err(refused(format!(
            "it is included more than {INCLUDE_DEPTH} deep (git stops there too)"
        )));
    }
    if is_dev_null(file) {
        return Ok(());
    }
    let text = match model::file::read_regular(file, CONFIG_LIMIT) {
        Ok(bytes) => bytes,
        // Absent (or under a file, as `$HOME/.config` being one): git reads nothing there.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(())
        }
        Err(e) => return Err(refused(e.to_string())),
    };
    let text = String::from_utf8_lossy(&text);
    for included in included_paths(&text) {
        check_file(&resolved(&included, file), Some(file), depth + 1)?;
    }
    Ok(())
}

/// Whether `file` is `/dev/null` (or a link to it): a configuration some set to read none.
fn is_dev_null(file: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(file), std::fs::metadata("/dev/null")) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The `path` values of the `[include]` and `[includeIf "..."]` sections of a configuration
/// file's `text`: every one, whatever its condition (a file git might read is checked).
fn included_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut in_include = false;
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .split(|c: char| c == ']' || c == '"' || c.is_whitespace())
                .next()
                .unwrap_or("");
            // `[include.path]`-less forms aside, a section name is case-insensitive.
            in_include =
                name.eq_ignore_ascii_case("include") || name.eq_ignore_ascii_case("includeIf");
            continue;
        }
        if !in_include {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("path") {
            let value = value.trim().trim_matches('"');
            if !value.is_empty() {
                paths.push(value.to_string());
            }
        }
    }
    paths
}

/// An include's path as git resolves it: `~/` under `$HOME`, a relative one beside the file
/// that includes it.
fn resolved(included: &str, from: &Path) -> PathBuf {
    if let Some(rest) = included.strip_prefix("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return Path::new(&home).join(rest);
        }
    }
    let path = Path::new(included);
    match from.parent() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_found_in_both_kinds_of_section() {
        let text = "[user]\n\tname = A\n[include]\n\tpath = one\n[includeIf \"gitdir:~/x/\"]\n\tPath = \"~/two\"\n[core]\n\tpath = not-an-include\n";
        assert_eq!(included_paths(text), ["one", "~/two"]);
        assert_eq!(
            resolved("one", Path::new("/home/a/.gitconfig")),
            Path::new("/home/a/one")
        );
        assert_eq!(
            resolved("/etc/x", Path::new("/home/a/.gitconfig")),
            Path::new("/etc/x")
        );
    }

    #[test]
    fn a_fifo_included_is_refused_and_dev_null_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let config = dir.path().join("config");
        std::fs::write(&config, "[include]\n\tpath = fifo\n").unwrap();
        let err = check_file(&config, None, 0).unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "cannot read git's configuration file {} (included by {}): it is a FIFO",
                fifo.display(),
                config.display()
            )),
            "{err:#}"
        );
        std::fs::write(&config, "[include]\n\tpath = /dev/null\n").unwrap();
        check_file(&config, None, 0).unwrap();
        std::fs::write(&config, "[include]\n\tpath = config\n").unwrap();
        let err = check_file(&config, None, 0).unwrap_err();
        assert!(format!("{err:#}").contains("more than 10 deep"), "{err:#}");
    }
}
