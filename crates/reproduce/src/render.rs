//! A reproduction as text: per table, the paper's columns, a bar, this
//! machine's columns and what latscope measures for each row.

use std::fmt::Write;

use crate::paired::{Measured, PairedTable, Reproduction};

/// The whole reproduction: heading, design, each table, the terms.
pub fn render(r: &Reproduction) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {} ({})", r.authors, r.title, r.published);
    let run = r
        .run_id
        .map_or("not stored".to_string(), |id| format!("run {id}"));
    let _ = writeln!(out, "This machine: {} ({run})", r.design);
    for t in &r.tables {
        out.push('\n');
        out.push_str(&table(t));
    }
    if !r.terms.is_empty() {
        out.push_str("\nTerms: the study's → latscope's\n");
        for (term, latscope) in &r.terms {
            let _ = writeln!(out, "  {term} → {latscope}");
        }
    }
    out
}

/// `"group: label"` split in two (no group: empty).
fn split(column: &str) -> (&str, &str) {
    column.split_once(": ").unwrap_or(("", column))
}

/// One table: a heading, two heading lines (groups, labels) over the
/// published and the measured columns, one line per row, the notes.
pub fn table(t: &PairedTable) -> String {
    let mut out = String::new();
    let name = if t.number.starts_with("Fig") {
        ""
    } else {
        "Table "
    };
    let _ = writeln!(out, "{name}{}: {}", t.number, t.caption);
    let _ = writeln!(out, "  ({})", t.source);
    let _ = writeln!(
        out,
        "  published: {} | this machine: {}",
        t.published_unit, t.measured_unit
    );
    let np = t.published_columns.len();
    let columns: Vec<&String> = t
        .published_columns
        .iter()
        .chain(&t.measured_columns)
        .collect();
    let mut widths: Vec<usize> = columns.iter().map(|c| width(split(c).1)).collect();
    for row in &t.rows {
        for (i, cell) in row.published.iter().enumerate() {
            widths[i] = widths[i].max(width(cell));
        }
        if let Measured::Figures(cells) = &row.measured {
            for (i, cell) in cells.iter().enumerate().take(t.measured_columns.len()) {
                widths[np + i] = widths[np + i].max(width(cell));
            }
        }
    }
    // The published columns at least as wide as their title.
    let title_w = "published (paper)".len();
    let wide: usize = widths[..np].iter().map(|w| w + 2).sum();
    if np > 0 && wide < title_w + 2 {
        widths[np - 1] += title_w + 2 - wide;
    }
    let label_w = t
        .rows
        .iter()
        .map(|r| width(&r.label))
        .max()
        .unwrap_or(0)
        .max(5);
    let line = |first: &str, cells: &[String], tail: &str| -> String {
        let mut s = format!("  {first}{}", pad(label_w, first));
        for (i, c) in cells.iter().enumerate() {
            if i == np {
                s.push_str("  ‖");
            }
            let _ = write!(s, "  {}{c}", pad(widths[i], c));
        }
        if cells.len() == np {
            s.push_str("  ‖");
        }
        if !tail.is_empty() {
            let _ = write!(s, "  {tail}");
        }
        s.trim_end().to_string()
    };
    let published_w: usize = widths[..np].iter().map(|w| w + 2).sum();
    let mut title = format!("  {}  published (paper)", " ".repeat(label_w));
    let bar_at = 2 + label_w + published_w;
    title.push_str(&" ".repeat(bar_at.saturating_sub(width(&title))));
    let _ = writeln!(out, "{title}  ‖  this machine");
    if columns.iter().any(|c| !split(c).0.is_empty()) {
        let _ = writeln!(
            out,
            "  {}{}",
            " ".repeat(label_w),
            group_line(&columns, &widths, np)
        );
    }
    let labels: Vec<String> = columns.iter().map(|c| split(c).1.to_string()).collect();
    let _ = writeln!(out, "{}", line("", &labels, "latscope"));
    let mut previous: Option<&String> = None;
    for row in &t.rows {
        let mut cells = row.published.clone();
        let tail = match &row.measured {
            Measured::Figures(m) => {
                cells.extend(m.iter().cloned());
                row.latscope.clone()
            }
            Measured::NoCounterpart(why) if previous == Some(why) => {
                "no counterpart (as above)".to_string()
            }
            Measured::NoCounterpart(why) => format!("no counterpart: {why}"),
        };
        previous = match &row.measured {
            Measured::NoCounterpart(why) => Some(why),
            Measured::Figures(_) => None,
        };
        cells.resize(
            match row.measured {
                Measured::Figures(_) => columns.len(),
                Measured::NoCounterpart(_) => np,
            },
            String::new(),
        );
        let _ = writeln!(out, "{}", line(&row.label, &cells, &tail));
    }
    for note in &t.notes {
        let _ = writeln!(out, "  Note: {note}");
    }
    out
}

/// The line of column groups: each group's text over its span of
/// consecutive columns (cut to the span's width), the bar after the
/// published columns.
fn group_line(columns: &[&String], widths: &[usize], np: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < columns.len() {
        if i == np {
            out.push_str("  ‖");
        }
        let g = split(columns[i]).0;
        let mut j = i + 1;
        while j < columns.len() && j != np && split(columns[j]).0 == g {
            j += 1;
        }
        let span: usize = widths[i..j].iter().sum::<usize>() + 2 * (j - i - 1);
        let text: String = g.chars().take(span).collect();
        out.push_str("  ");
        out.push_str(&text);
        out.push_str(&pad(span, &text));
        i = j;
    }
    out.trim_end().to_string()
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(w: usize, s: &str) -> String {
    " ".repeat(w.saturating_sub(width(s)))
}
