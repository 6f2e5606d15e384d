//! The checkout's data/releases.json (`model::Table`): read into the process before the
//! command line is, so that every command knows the releases the file holds (a row added or
//! removed since this binary was built included), and written whole or not at all by the
//! commands that add, pin or retire a release, which make the written table the process's
//! too (`model::install`): the steps after the write see the release as the file says.

use std::path::PathBuf;

use anyhow::{Context, Result};
use model::Table;

use crate::util::{durable, paths};

/// The releases' file is read like every file of the checkout someone may edit: bounded.
const LIMIT: model::file::Limit = model::file::Limit {
    bytes: 1 << 20,
    what: "the releases' table",
};

/// data/releases.json of the checkout.
pub(crate) fn path() -> PathBuf {
    paths::project_root().join(model::TABLE_PATH)
}

/// The checkout's table.
pub(crate) fn read() -> Result<Table> {
    let path = path();
    let text = model::file::read_regular_text(&path, LIMIT)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Table::parse(&text).with_context(|| format!("{} is not a table of releases", path.display()))
}

/// Reads the checkout's table and makes it the process's.
pub(crate) fn load() -> Result<()> {
    model::install(&read()?);
    Ok(())
}

/// Writes `table` as the checkout's (whole or not at all) and makes it the process's.
pub(crate) fn write(table: &Table) -> Result<()> {
    durable::replace_file(&path(), table.render().as_bytes())?;
    model::install(table);
    Ok(())
}
