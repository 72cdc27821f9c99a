//! The four studies' published tables as data: every figure as printed, with
//! the table's number, caption, section and page, and the mapping of each
//! study's terms to latscope's metrics, micro benchmarks and settings.
//!
//! The data are the TOML files in `data/`, embedded at compile time;
//! `tests/papers.rs` checks every figure against the papers' text copies.
//! See docs/studies.md.

mod error;
mod figure;
mod schema;

use std::sync::LazyLock;

pub use error::{StudyError, TableProblem};
pub use figure::{Figure, FigureError, Value};
pub use schema::{Column, Row, Study, Table, Term, TermKind};

/// The embedded data files: (file name, text).
pub const FILES: [(&str, &str); 4] = [
    (
        "cota-robles-held.toml",
        include_str!("../data/cota-robles-held.toml"),
    ),
    (
        "jones-regehr.toml",
        include_str!("../data/jones-regehr.toml"),
    ),
    ("bernadat.toml", include_str!("../data/bernadat.toml")),
    ("chen-et-al.toml", include_str!("../data/chen-et-al.toml")),
];

static STUDIES: LazyLock<Result<Vec<Study>, StudyError>> = LazyLock::new(load);

/// Parses and checks the embedded files (each call parses them again; see
/// [`studies`] for the parsed copy).
pub fn load() -> Result<Vec<Study>, StudyError> {
    let mut studies = Vec::with_capacity(FILES.len());
    for (file, text) in FILES {
        studies.push(parse(file, text)?);
    }
    for (i, study) in studies.iter().enumerate() {
        if studies[..i].iter().any(|s| s.id == study.id) {
            return Err(StudyError::DuplicateId(study.id.clone()));
        }
    }
    Ok(studies)
}

/// The four studies, parsed once.
pub fn studies() -> Result<&'static [Study], &'static StudyError> {
    STUDIES.as_deref()
}

/// The study with this id, if there is one.
pub fn study(id: &str) -> Result<Option<&'static Study>, &'static StudyError> {
    Ok(studies()?.iter().find(|s| s.id == id))
}

/// Parses one data file and checks the shape of its tables.
pub fn parse(file: &str, text: &str) -> Result<Study, StudyError> {
    let study: Study = toml::from_str(text).map_err(|source| StudyError::Parse {
        file: file.to_string(),
        source: Box::new(source),
    })?;
    for (i, table) in study.tables.iter().enumerate() {
        let problem = |problem| StudyError::Table {
            study: study.id.clone(),
            table: table.number.clone(),
            problem,
        };
        if study.tables[..i].iter().any(|t| t.number == table.number) {
            return Err(problem(TableProblem::Duplicate));
        }
        error::check_table(table).map_err(problem)?;
    }
    Ok(study)
}

#[cfg(test)]
mod tests;
