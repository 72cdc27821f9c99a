//! A study's published tables with this machine's figures beside them.

use latscope_studies::Table;
use serde::Serialize;

/// A study reproduced: its tables, published and measured side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Reproduction {
    pub study: String,
    pub title: String,
    pub authors: String,
    pub published: String,
    /// The stored run holding what was measured.
    pub run_id: Option<i64>,
    /// The design that ran, in words.
    pub design: String,
    pub tables: Vec<PairedTable>,
    /// The study's terms and latscope's equivalents: `(term, latscope)`.
    pub terms: Vec<(String, String)>,
}

/// One table: the paper's columns, then this machine's.
#[derive(Clone, Debug, Serialize)]
pub struct PairedTable {
    /// `"3"`, `"VII"`, or `"Figures 1-3"` for what the paper prints as bar charts.
    pub number: String,
    pub caption: String,
    /// Section and page of the text copy.
    pub source: String,
    /// The unit of the published figures, and of the measured ones.
    pub published_unit: String,
    pub measured_unit: String,
    pub published_columns: Vec<String>,
    pub measured_columns: Vec<String>,
    pub rows: Vec<PairedRow>,
    pub notes: Vec<String>,
}

/// One row: the paper's figures as printed and this machine's.
#[derive(Clone, Debug, Serialize)]
pub struct PairedRow {
    pub label: String,
    /// What latscope measures for the row (a metric, a benchmark), or empty.
    pub latscope: String,
    /// One per published column, as printed (`""` blank).
    pub published: Vec<String>,
    pub measured: Measured,
}

/// This machine's side of a row.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Measured {
    /// One per measured column (`"—"` where the run has no figure).
    Figures(Vec<String>),
    /// The row has no counterpart in latscope (or in this design): why.
    NoCounterpart(String),
}

impl PairedTable {
    /// The published side of `table`, rows and figures as printed; every
    /// row measured as `NoCounterpart(why)` until the study's pairing
    /// fills it.
    pub fn from_published(table: &Table, measured_unit: &str, why: &str) -> PairedTable {
        PairedTable {
            number: table.number.clone(),
            caption: table.caption.clone(),
            source: format!("section {}; page {}", table.section, table.page),
            published_unit: table.unit.clone(),
            measured_unit: measured_unit.to_string(),
            published_columns: table
                .columns
                .iter()
                .map(|c| match &c.group {
                    Some(g) => format!("{g}: {}", c.label),
                    None => c.label.clone(),
                })
                .collect(),
            measured_columns: Vec::new(),
            rows: table
                .rows
                .iter()
                .map(|r| PairedRow {
                    label: match (&r.group, &r.label) {
                        (Some(g), Some(l)) => format!("{g}: {l}"),
                        (None, Some(l)) => l.clone(),
                        (Some(g), None) => g.clone(),
                        (None, None) => "(all)".to_string(),
                    },
                    latscope: String::new(),
                    published: r.figures.iter().map(|f| f.printed.clone()).collect(),
                    measured: Measured::NoCounterpart(why.to_string()),
                })
                .collect(),
            notes: table.notes.clone(),
        }
    }

    /// Sets row `i`'s measured figures and what latscope measures for it.
    pub fn set(&mut self, i: usize, latscope: &str, measured: Measured) {
        if let Some(r) = self.rows.get_mut(i) {
            r.latscope = latscope.to_string();
            r.measured = measured;
        }
    }
}

/// A latency in `unit` (`ms`, `µs`, `s`; anything else: µs), to three
/// significant places where it is small.
pub fn in_unit(ns: u64, unit: &str) -> String {
    let v = match unit {
        "ms" => ns as f64 / 1e6,
        "s" => ns as f64 / 1e9,
        _ => ns as f64 / 1e3,
    };
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The cell of a measured figure the run does not have.
pub const MISSING: &str = "—";
