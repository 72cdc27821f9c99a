//! What can be wrong with a data file.

use thiserror::Error;

use crate::figure::Value;
use crate::schema::Table;

#[derive(Debug, Error)]
pub enum StudyError {
    #[error("studies data {file}: {source}")]
    Parse {
        file: String,
        #[source]
        source: Box<toml::de::Error>,
    },
    #[error("two studies have the id '{0}'")]
    DuplicateId(String),
    #[error("study {study}, table {table}: {problem}")]
    Table {
        study: String,
        table: String,
        problem: TableProblem,
    },
}

/// A table whose shape is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TableProblem {
    #[error("the number is used by another table")]
    Duplicate,
    #[error("no columns")]
    NoColumns,
    #[error("no rows")]
    NoRows,
    #[error("every figure is blank")]
    AllBlank,
    #[error("row {row} has {found} figures for {expected} columns")]
    RowWidth {
        row: usize,
        expected: usize,
        found: usize,
    },
}

/// Checks that the table has columns, rows, a figure per column in every
/// row, and at least one figure that is not blank.
pub(crate) fn check_table(table: &Table) -> Result<(), TableProblem> {
    if table.columns.is_empty() {
        return Err(TableProblem::NoColumns);
    }
    if table.rows.is_empty() {
        return Err(TableProblem::NoRows);
    }
    let expected = table.columns.len();
    for (row, r) in table.rows.iter().enumerate() {
        if r.figures.len() != expected {
            return Err(TableProblem::RowWidth {
                row: row + 1,
                expected,
                found: r.figures.len(),
            });
        }
    }
    let blank = |v: Value| v == Value::Blank;
    if table
        .rows
        .iter()
        .flat_map(|r| &r.figures)
        .all(|f| blank(f.value))
    {
        return Err(TableProblem::AllBlank);
    }
    Ok(())
}
