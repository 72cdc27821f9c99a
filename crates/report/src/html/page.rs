//! The page's building blocks: tables, sections, figures, and the style
//! sheet that makes them readable on a phone and on paper.

use std::fmt::Write as _;

use latscope_model::Nanos;

use super::escape::escape;

/// Styles: system fonts only (nothing to fetch), tables that scroll
/// sideways on narrow screens, plots that scale, and page breaks that keep
/// a figure with its caption when printed.
pub const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1100px; padding: 0 12px 48px; color: #111; background: #fff; line-height: 1.45; }
h1 { font-size: 1.6em; margin: 0.8em 0 0.2em; }
h2 { font-size: 1.3em; border-bottom: 2px solid #0072B2; padding-bottom: 2px; margin-top: 2em; }
h3 { font-size: 1.1em; margin-top: 1.6em; }
h4 { font-size: 1em; margin: 1.2em 0 0.3em; }
nav ul { columns: 2 14em; padding-left: 1.2em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.4em 0 1em; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef3f8; }
td { max-width: 30em; overflow-wrap: anywhere; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 0.6em 0 1.2em; break-inside: avoid; page-break-inside: avoid; }
figcaption { font-size: 0.85em; color: #333; }
svg.plot { width: 100%; height: auto; max-width: 760px; display: block; background: #fff; }
svg .frame { fill: none; stroke: #444; stroke-width: 1; }
svg .grid { stroke: #ddd; stroke-width: 0.8; }
svg .tick { font-size: 11px; fill: #222; }
svg .axis-label { font-size: 13px; fill: #111; }
svg .legend-box { fill: #fff; fill-opacity: 0.9; stroke: #bbb; }
.sev-hazard { color: #b00; font-weight: bold; }
.sev-warning { color: #a60; font-weight: bold; }
.note { color: #444; font-size: 0.9em; }
.pass { color: #070; font-weight: bold; }
.fail { color: #b00; font-weight: bold; }
.unsure { color: #a60; font-weight: bold; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; }
dl.kv dt { font-weight: 600; }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
@media print {
  body { max-width: none; font-size: 10pt; }
  nav { display: none; }
  h2 { break-before: auto; break-after: avoid; }
  h3, h4 { break-after: avoid; }
  .scroll { overflow: visible; }
}
"#;

/// A table of plain-text cells (escaped here). Columns from `left` on are
/// numbers, aligned right.
pub fn table<H: AsRef<str>>(header: &[H], rows: &[Vec<String>], left: usize) -> String {
    table_with(header, rows, |i| i >= left)
}

/// A table whose numeric columns (aligned right, not wrapped) are those
/// `is_num` accepts.
pub fn table_with<H: AsRef<str>>(
    header: &[H],
    rows: &[Vec<String>],
    is_num: impl Fn(usize) -> bool,
) -> String {
    let class = |i: usize| if is_num(i) { " class=\"num\"" } else { "" };
    let mut out = String::from("<div class=\"scroll\"><table><thead><tr>");
    for (i, h) in header.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", class(i), escape(h.as_ref()));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let _ = write!(out, "<td{}>{}</td>", class(i), escape(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// A figure: the plot's markup and a caption (escaped here).
pub fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        escape(caption)
    )
}

/// A paragraph of plain text.
pub fn para(text: &str, class: Option<&str>) -> String {
    match class {
        Some(c) => format!("<p class=\"{c}\">{}</p>", escape(text)),
        None => format!("<p>{}</p>", escape(text)),
    }
}

/// A duration for a table, `-` when absent.
pub fn opt_ns(n: Option<Nanos>) -> String {
    n.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Nanoseconds in microseconds, the unit of every latency axis.
pub fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Seconds for people: `950 ms`, `12.0 s`, `3.2 min`, `1.5 h`, `2.0 d`,
/// `never` for an infinite time.
pub fn seconds_text(s: f64) -> String {
    if !s.is_finite() {
        return "never".to_string();
    }
    if s >= 86_400.0 {
        format!("{:.1} d", s / 86_400.0)
    } else if s >= 3_600.0 {
        format!("{:.1} h", s / 3_600.0)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.0} ms", s * 1e3)
    }
}

/// A fragment id from arbitrary text: ASCII letters and digits, the rest
/// as `-`.
pub fn anchor(parts: &[&str]) -> String {
    let joined = parts.join("-");
    joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_escape_cells_and_align_numbers() {
        let t = table(&["name", "max"], &[vec!["<irq>".into(), "5µs".into()]], 1);
        assert!(t.contains("<td>&lt;irq&gt;</td>"), "{t}");
        assert!(t.contains("<td class=\"num\">5µs</td>"), "{t}");
        assert!(t.contains("<th class=\"num\">max</th>"), "{t}");
    }

    #[test]
    fn seconds_read_in_the_largest_sensible_unit() {
        assert_eq!(seconds_text(0.25), "250 ms");
        assert_eq!(seconds_text(12.0), "12.0 s");
        assert_eq!(seconds_text(7200.0), "2.0 h");
        assert_eq!(seconds_text(f64::INFINITY), "never");
        assert_eq!(
            anchor(&["cell", "0", "timer.latency"]),
            "cell-0-timer-latency"
        );
    }
}
