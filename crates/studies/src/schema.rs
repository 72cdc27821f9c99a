//! The data files' form: a study, its terms and its tables.

use serde::Deserialize;

use crate::figure::Figure;

/// One study: where it was published, how its terms map onto latscope, and
/// its tables with every figure as printed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// Short stable id (`cota-robles-held`, `jones-regehr`, `bernadat`,
    /// `chen-et-al`).
    pub id: String,
    pub title: String,
    pub authors: String,
    /// Where and when it was published.
    pub published: String,
    /// The text copy's file name in the papers directory.
    pub paper: String,
    /// The study's terms and latscope's nearest equivalents.
    pub terms: Vec<Term>,
    pub tables: Vec<Table>,
}

impl Study {
    /// The table numbered `number` as the paper numbers it (`"3"`, `"VII"`).
    pub fn table(&self, number: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.number == number)
    }
}

/// A term of the study and what latscope measures for it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// The study's term, in its words.
    pub term: String,
    pub kind: TermKind,
    /// The metric, the `latscope micro` benchmark, or the setting; empty for
    /// [`TermKind::None`].
    pub latscope: String,
    #[serde(default)]
    pub note: Option<String>,
}

/// What a term maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TermKind {
    /// A metric name (`timer.irq`) or a family (`softirq.delay.<VEC>`).
    Metric,
    /// A `latscope micro` benchmark (`syscall.dup_close`).
    Micro,
    /// A command, option or part of a run.
    Setting,
    /// Nothing latscope measures.
    None,
}

/// One table of the paper.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// The number as printed (`"3"`, `"VII"`).
    pub number: String,
    /// The caption as printed, without "Table N".
    pub caption: String,
    /// A title printed above the table's columns, if any.
    #[serde(default)]
    pub heading: Option<String>,
    /// The section of the text copy the table stands in.
    pub section: String,
    /// The page, or why it is not known ("not in the text copy").
    pub page: String,
    /// The unit of the figures, unless a column or row says otherwise.
    pub unit: String,
    /// The heading of the row labels' column, if printed.
    #[serde(default)]
    pub stub: Option<String>,
    #[serde(default)]
    pub notes: Vec<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    /// The unit of the figure at `row`, `column`: the row's, else the
    /// column's, else the table's.
    pub fn unit_of(&self, row: usize, column: usize) -> &str {
        let row_unit = self.rows.get(row).and_then(|r| r.unit.as_deref());
        let column_unit = self.columns.get(column).and_then(|c| c.unit.as_deref());
        row_unit.or(column_unit).unwrap_or(&self.unit)
    }

    /// Every figure in the table, blank cells included.
    pub fn figure_count(&self) -> usize {
        self.rows.iter().map(|r| r.figures.len()).sum()
    }
}

/// A column's heading: its label and the heading spanning it, if any.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    #[serde(default)]
    pub group: Option<String>,
    pub label: String,
    #[serde(default)]
    pub unit: Option<String>,
}

/// A row: its label (none where the paper prints none), the heading of the
/// rows it belongs to, and one figure per column.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub unit: Option<String>,
    pub figures: Vec<Figure>,
}
