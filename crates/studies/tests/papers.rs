//! Every stored figure against the papers' text copies in ../shared/papers:
//! each table is found by its caption, and each stored row must be a line of
//! the table's text with the same label and the same figures, column by
//! column, in the stored order, with no line of figures left out.

use std::path::PathBuf;

use latscope_studies::{load, Study, Table};

fn papers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/papers")
}

/// Text compared without layout: no HTML tags, LaTeX or Markdown markup,
/// or white space, and one micro sign.
fn normalize(text: &str) -> String {
    let text = text.replace("\\mu", "µ").replace('μ', "µ");
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let tag = c == '<'
            && chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '/');
        if tag {
            chars.by_ref().find(|&n| n == '>');
        } else if !c.is_whitespace() && !"${}^\\*".contains(c) {
            out.push(c);
        }
    }
    out
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The caption's line: "Table N: caption" or "Table N. caption".
fn caption_line(lines: &[&str], table: &Table) -> Result<usize, String> {
    let caption = normalize(&table.caption);
    let wanted: Vec<String> = [':', '.']
        .iter()
        .map(|sep| format!("Table{}{sep}{caption}", table.number))
        .collect();
    let found: Vec<usize> = (0..lines.len())
        .filter(|&i| wanted.contains(&normalize(lines[i])))
        .collect();
    match found[..] {
        [one] => Ok(one),
        [] => Err(format!(
            "no caption line 'Table {}: {}'",
            table.number, table.caption
        )),
        _ => Err(format!(
            "caption of table {} on lines {found:?}",
            table.number
        )),
    }
}

/// The table's lines: the block of tab-separated lines (blank lines
/// between them allowed) next to the caption, before it or after it.
fn table_lines<'a>(lines: &[&'a str], caption: usize) -> Vec<&'a str> {
    let in_table = |l: &str| l.contains('\t') || is_blank(l);
    let before = lines[..caption].iter().rev().find(|l| !is_blank(l));
    let mut block: Vec<&str> = if before.is_some_and(|l| l.contains('\t')) {
        let mut b: Vec<&str> = lines[..caption]
            .iter()
            .rev()
            .take_while(|l| in_table(l))
            .copied()
            .collect();
        b.reverse();
        b
    } else {
        lines[caption + 1..]
            .iter()
            .take_while(|l| in_table(l))
            .copied()
            .collect()
    };
    block.retain(|l| !is_blank(l));
    block
}

/// How many leading cells of a line are row labels.
fn label_columns(table: &Table) -> usize {
    if table.rows.iter().any(|r| r.group.is_some()) {
        2
    } else if table.rows.iter().any(|r| r.label.is_some()) {
        1
    } else {
        0
    }
}

/// Checks one table against its text; returns the count of figures checked.
fn check_table(lines: &[&str], table: &Table) -> Result<usize, String> {
    let caption = caption_line(lines, table)?;
    let block = table_lines(lines, caption);
    if block.is_empty() {
        return Err(format!(
            "no tab-separated lines next to line {}",
            caption + 1
        ));
    }
    let labels = label_columns(table);
    let mut next = 0;
    let mut carried_group = String::new();
    let mut header = String::new();
    let mut checked = 0;
    for line in &block {
        let mut cells: Vec<String> = line.split('\t').map(normalize).collect();
        if cells.len() < labels {
            cells.resize(labels, String::new());
        }
        if labels == 2 {
            if cells[0].is_empty() {
                cells[0] = carried_group.clone();
            } else {
                carried_group = cells[0].clone();
            }
        }
        let text_label: Vec<&String> = cells[..labels].iter().filter(|c| !c.is_empty()).collect();
        let row = table.rows.get(next);
        let stored_label: Vec<String> = row
            .map(|r| {
                [&r.group, &r.label]
                    .into_iter()
                    .flatten()
                    .map(|s| normalize(s))
                    .collect()
            })
            .unwrap_or_default();
        let label_matches = row.is_some()
            && text_label.len() == stored_label.len()
            && text_label.iter().zip(&stored_label).all(|(a, b)| *a == b);
        let figures = {
            let mut f: Vec<String> = cells[labels..].to_vec();
            let width = row.map_or(0, |r| r.figures.len());
            while f.len() > width && f.last().is_some_and(|c| c.is_empty()) {
                f.pop();
            }
            f.resize(width.max(f.len()), String::new());
            f
        };
        let stored: Vec<String> = row
            .map(|r| r.figures.iter().map(|f| normalize(&f.printed)).collect())
            .unwrap_or_default();
        let figures_match = figures == stored;
        match (label_matches, figures_match) {
            (true, true) if labels > 0 || row.is_some() => {
                checked += stored.len();
                next += 1;
            }
            (true, false) if labels > 0 => {
                return Err(format!(
                    "row {} ({:?}): stored {:?}, the paper prints {:?}",
                    next + 1,
                    stored_label,
                    stored,
                    figures
                ));
            }
            _ if next == 0 => header.push_str(&line.split('\t').map(normalize).collect::<String>()),
            _ => {
                return Err(format!(
                    "the paper's line {line:?} is not stored (or out of order)"
                ))
            }
        }
    }
    if next < table.rows.len() {
        let row = &table.rows[next];
        let printed: Vec<&str> = row.figures.iter().map(|f| f.printed.as_str()).collect();
        return Err(format!(
            "stored row {} ({:?}, {printed:?}) not found in the table's text {block:#?}",
            next + 1,
            row.label,
        ));
    }
    check_headings(table, &header)?;
    Ok(checked)
}

/// The column labels, the heading and the stub are in the header lines.
fn check_headings(table: &Table, header: &str) -> Result<(), String> {
    let names = table.columns.iter().map(|c| &c.label);
    let more = [&table.heading, &table.stub].into_iter().flatten();
    for name in names.chain(more) {
        if !header.contains(&normalize(name)) {
            return Err(format!("'{name}' is not in the table's header {header:?}"));
        }
    }
    Ok(())
}

fn check_study(study: &Study, text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    for table in &study.tables {
        match check_table(&lines, table) {
            Ok(n) => println!(
                "{} table {}: {} rows, {} figures as in the paper",
                study.id,
                table.number,
                table.rows.len(),
                n
            ),
            Err(e) => failures.push(format!("{} table {}: {e}", study.id, table.number)),
        }
    }
    failures
}

#[test]
fn stored_figures_match_the_papers() {
    let dir = papers_dir();
    if !dir.is_dir() {
        println!("skipped: needs the papers in ../shared/papers");
        return;
    }
    let mut failures = Vec::new();
    for study in load().unwrap_or_else(|e| panic!("{e}")) {
        let path = dir.join(&study.paper);
        match std::fs::read_to_string(&path) {
            Ok(text) => failures.extend(check_study(&study, &text)),
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn normalizing_keeps_figures_and_drops_markup() {
    assert_eq!(normalize("<u>+0.1</u>"), "+0.1");
    assert_eq!(normalize("<1.0"), "<1.0");
    assert_eq!(normalize("<b>Minimum <math>\\mu</math>s</b>"), "Minimumµs");
    assert_eq!(normalize("0-100 $\\mu$ s"), normalize("0-100µs"));
    assert_eq!(normalize("**Table 1:** Statistics"), "Table1:Statistics");
    assert_eq!(normalize("RT audio ^{**}"), normalize("RT audio **"));
}
