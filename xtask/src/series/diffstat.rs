//! The `git format-patch` diffstat, written by hand.
//!
//! libgit2's `DiffStats::to_buf` draws the graph differently from git (a `-` for files with no
//! deletion, no `create mode` summary), so patches it formats read wrong to a reviewer used to
//! git's. This follows git's `show_stats` for a 72-column mail (`MAIL_DEFAULT_WRAP`).

/// One file's line counts and its `--summary` line, if any (`create mode 100644 path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStat {
    pub path: String,
    pub insertions: usize,
    pub deletions: usize,
    pub summary: Option<String>,
}

/// The stat block of a format-patch mail, each line ending in `\n`.
pub(crate) fn render(files: &[FileStat], width: usize) -> String {
    let max_len = files.iter().map(|f| f.path.len()).max().unwrap_or(0);
    let max_change = files
        .iter()
        .map(|f| f.insertions + f.deletions)
        .max()
        .unwrap_or(0);
    let number_width = max_change.to_string().len();
    let width = width.max(16 + 6 + number_width);

    let mut graph_width = max_change;
    let mut name_width = max_len;
    if name_width + number_width + 6 + graph_width > width {
        if graph_width > (width * 3 / 8).saturating_sub(number_width + 6) {
            graph_width = (width * 3 / 8).saturating_sub(number_width + 6).max(6);
        }
        if name_width > width - number_width - 6 - graph_width {
            name_width = width - number_width - 6 - graph_width;
        } else {
            graph_width = width - number_width - 6 - name_width;
        }
    }

    let mut out = String::new();
    for file in files {
        let name = shorten(&file.path, name_width);
        let (mut add, mut del) = (file.insertions, file.deletions);
        if graph_width <= max_change {
            let mut total = scale(add + del, graph_width, max_change);
            if total < 2 && add > 0 && del > 0 {
                total = 2;
            }
            if add < del {
                add = scale(add, graph_width, max_change);
                del = total - add;
            } else {
                del = scale(del, graph_width, max_change);
                add = total - del;
            }
        }
        let changes = file.insertions + file.deletions;
        let space = if changes > 0 { " " } else { "" };
        out.push_str(&format!(
            " {name:<name_width$} | {changes:>number_width$}{space}{}{}\n",
            "+".repeat(add),
            "-".repeat(del)
        ));
    }
    out.push_str(&summary_line(files));
    for file in files {
        if let Some(line) = &file.summary {
            out.push_str(&format!(" {line}\n"));
        }
    }
    out
}

fn scale(it: usize, width: usize, max_change: usize) -> usize {
    if it == 0 {
        0
    } else {
        1 + it * (width - 1) / max_change
    }
}

/// Like git, keeps the tail of a long path from a directory boundary: `.../name`.
fn shorten(path: &str, width: usize) -> String {
    if path.len() <= width {
        return path.to_string();
    }
    let keep = width.saturating_sub(3);
    let tail = &path[path.len() - keep..];
    let tail = tail.find('/').map_or(tail, |i| &tail[i..]);
    format!("...{tail}")
}

fn summary_line(files: &[FileStat]) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let insertions: usize = files.iter().map(|f| f.insertions).sum();
    let deletions: usize = files.iter().map(|f| f.deletions).sum();
    let mut line = format!(" {}", plural(files.len(), "file changed", "files changed"));
    if insertions > 0 || deletions == 0 {
        line.push_str(&format!(
            ", {}(+)",
            plural(insertions, "insertion", "insertions")
        ));
    }
    if deletions > 0 || insertions == 0 {
        line.push_str(&format!(
            ", {}(-)",
            plural(deletions, "deletion", "deletions")
        ));
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(path: &str, insertions: usize, deletions: usize) -> FileStat {
        FileStat {
            path: path.into(),
            insertions,
            deletions,
            summary: None,
        }
    }

    // Each file line as git 2.47 `format-patch` wrote it for the 2.44 series.
    #[test]
    fn matches_git_for_a_scaled_graph() {
        let files = [
            stat("NEWS", 12, 0),
            stat("elf/dl-load.c", 100, 5),
            stat("elf/dl-main.h", 11, 2),
            stat("include/link.h", 1, 0),
            stat("sysdeps/generic/unsecvars.h", 1, 0),
        ];
        assert_eq!(
            render(&files, 72),
            " NEWS                        |  12 +++++\n \
             elf/dl-load.c               | 105 ++++++++++++++++++++++++++++++++++--\n \
             elf/dl-main.h               |  13 ++++-\n \
             include/link.h              |   1 +\n \
             sysdeps/generic/unsecvars.h |   1 +\n \
             5 files changed, 125 insertions(+), 7 deletions(-)\n"
        );
    }

    #[test]
    fn matches_git_for_long_names_and_new_files() {
        let mut empty = stat("elf/tst-fallback-path-container.root/postclean.req", 0, 0);
        empty.summary =
            Some("create mode 100644 elf/tst-fallback-path-container.root/postclean.req".into());
        let files = [
            stat("elf/Makefile", 83, 0),
            empty,
            stat("elf/tst-fallback-path.c", 160, 0),
        ];
        assert_eq!(
            render(&files, 72),
            " elf/Makefile                                  |  83 +++++++++\n \
             .../postclean.req                             |   0\n \
             elf/tst-fallback-path.c                       | 160 ++++++++++++++++++\n \
             3 files changed, 243 insertions(+)\n \
             create mode 100644 elf/tst-fallback-path-container.root/postclean.req\n"
        );
    }
}
