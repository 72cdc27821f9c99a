//! `latscope compare`: the side-by-side table, its JSON form and an HTML
//! page of overlaid CCDFs (inline SVG, no external resources).

use std::fmt::Write as _;

use latscope_model::{Nanos, RunId};
use latscope_stats::compare::{
    DistStats, MetricComparison, MetricRow, RunComparison, Verdict, ALPHA, BOOTSTRAP_RESAMPLES,
    CI_LEVEL,
};
use latscope_stats::Histogram;
use serde::Serialize;

use crate::table::Table;

/// Names the layout of `compare --json`.
pub const COMPARE_JSON_SCHEMA: &str = "latscope.compare.v1";

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[0m";

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("×{r:.2}"))
}

fn p_value(p: f64) -> String {
    if p < 1e-4 {
        format!("{p:.0e}")
    } else {
        format!("{p:.4}")
    }
}

fn verdict_cell(c: &MetricComparison) -> String {
    match c.tail.verdict {
        Verdict::Worse => format!("WORSE p={}", p_value(c.tail.p_worse)),
        Verdict::Better => format!("better p={}", p_value(c.tail.p_better)),
        Verdict::NoDifference => format!("same p={}", p_value(c.tail.p_worse)),
    }
}

fn stats_cells(s: &DistStats) -> [String; 5] {
    [
        s.count.to_string(),
        s.p50.to_string(),
        s.p99.to_string(),
        s.p999.to_string(),
        s.max.to_string(),
    ]
}

/// The terminal table: one line for the baseline and one per compared run,
/// for every matched cell and metric. `color` marks significant verdicts.
pub fn compare_text(cmp: &RunComparison, color: bool) -> String {
    let mut t = Table::new([
        "cell",
        "metric",
        "run",
        "samples",
        "p50",
        "p99",
        "p99.9",
        "max",
        "p99.9 B/A",
        "95% CI",
        "max B/A",
        ">A p99.9 (exp.)",
        "tail",
    ])
    .left_aligned(3);
    let base = cmp.runs.first().map_or(0, |r| r.0);
    for row in &cmp.rows {
        let mut cells = vec![
            row.cell.to_string(),
            row.metric.clone(),
            format!("{base} (A)"),
        ];
        cells.extend(stats_cells(&row.baseline));
        t.row(cells);
        for (i, v) in row.versus.iter().enumerate() {
            let run = cmp.runs.get(i + 1).map_or(0, |r| r.0);
            let mut cells = vec![String::new(), String::new(), run.to_string()];
            match v {
                Some(c) => {
                    cells.extend(stats_cells(&c.b));
                    cells.push(ratio(c.ratio_p999));
                    cells.push(c.p999_ratio_ci.map_or_else(
                        || "-".to_string(),
                        |ci| format!("{:.2}–{:.2}", ci.low, ci.high),
                    ));
                    cells.push(ratio(c.ratio_max));
                    cells.push(format!("{} ({:.0})", c.tail.above_b, c.tail.expected_b));
                    cells.push(verdict_cell(c));
                }
                None => cells.push("(no such cell or metric)".into()),
            }
            t.row(cells);
        }
    }
    let mut out = String::new();
    if t.is_empty() {
        out.push_str("no cell and metric in common with the baseline\n");
    } else {
        let rendered = t.render();
        if color {
            // Colour after alignment so escape codes do not count as width.
            for line in rendered.lines() {
                let line = if let Some(i) = line.find("WORSE p=") {
                    format!("{}{RED}{}{RESET}", &line[..i], &line[i..])
                } else if let Some(i) = line.find("better p=") {
                    format!("{}{GREEN}{}{RESET}", &line[..i], &line[i..])
                } else {
                    line.to_string()
                };
                out.push_str(&line);
                out.push('\n');
            }
        } else {
            out.push_str(&rendered);
        }
    }
    for u in &cmp.unmatched {
        let _ = writeln!(out, "not in the baseline: {u}");
    }
    let _ = writeln!(
        out,
        "tail: samples above A's p99.9, exact conditional binomial test, WORSE/better at p < {ALPHA}; \
         CI: {:.0}% bootstrap ({BOOTSTRAP_RESAMPLES} resamples, fixed seed)",
        CI_LEVEL * 100.0
    );
    out
}

#[derive(Serialize)]
struct TrippedJson<'a> {
    run_id: i64,
    cell: String,
    metric: &'a str,
    ratio_p999: Option<f64>,
    p_worse: f64,
}

#[derive(Serialize)]
struct CompareJson<'a> {
    schema: &'static str,
    alpha: f64,
    fail_if_worse_pct: Option<f64>,
    #[serde(flatten)]
    comparison: &'a RunComparison,
    tripped: Vec<TrippedJson<'a>>,
}

/// The JSON document of `compare --json`.
pub fn compare_json(
    cmp: &RunComparison,
    fail_if_worse: Option<f64>,
) -> Result<String, serde_json::Error> {
    let tripped = fail_if_worse
        .map(|pct| {
            cmp.worse_by(pct)
                .into_iter()
                .map(|(run, row, c)| TrippedJson {
                    run_id: run.0,
                    cell: row.cell.to_string(),
                    metric: &row.metric,
                    ratio_p999: c.ratio_p999,
                    p_worse: c.tail.p_worse,
                })
                .collect()
        })
        .unwrap_or_default();
    serde_json::to_string_pretty(&CompareJson {
        schema: COMPARE_JSON_SCHEMA,
        alpha: ALPHA,
        fail_if_worse_pct: fail_if_worse,
        comparison: cmp,
        tripped,
    })
}

/// One line per compared metric that trips `--fail-if-worse pct`: its
/// p99.9 against the baseline's, the ratio and the limit, and the tail
/// test's p-value.
pub fn compare_tripped(cmp: &RunComparison, pct: f64) -> Vec<String> {
    cmp.worse_by(pct)
        .into_iter()
        .map(|(run, row, c)| {
            format!(
                "run {run} {} {}: p99.9 {} vs {} (×{:.2}, limit ×{:.2}), tail worse (p={:.1e})",
                row.cell,
                row.metric,
                c.b.p999,
                c.a.p999,
                c.ratio_p999.unwrap_or(f64::INFINITY),
                1.0 + pct / 100.0,
                c.tail.p_worse
            )
        })
        .collect()
}

const PALETTE: [&str; 6] = [
    "#1f4e9c", "#c0392b", "#1e8449", "#8e44ad", "#d68910", "#117a8b",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// CCDF points (value, P(X > value)) at every non-empty bucket's top.
fn ccdf(h: &Histogram) -> Vec<(f64, f64)> {
    let n = h.count() as f64;
    let max = h.max().map_or(0, |m| m.0);
    let mut seen = 0u64;
    let mut pts = Vec::new();
    for (low, high, c) in h.buckets() {
        let above_before = (h.count() - seen) as f64 / n;
        pts.push((low.max(1) as f64, above_before));
        seen += c;
        let above = (h.count() - seen) as f64 / n;
        pts.push((high.min(max).max(1) as f64, above));
    }
    pts
}

/// (run position, CCDF points, sample count).
type Curve = (usize, Vec<(f64, f64)>, f64);

/// One log-log CCDF plot of a row, every run overlaid.
fn ccdf_svg(row: &MetricRow, runs: &[RunId]) -> String {
    let (w, h, ml, mr, mt, mb) = (640.0, 360.0, 70.0, 20.0, 16.0, 46.0);
    let curves: Vec<Curve> = row
        .histograms
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            h.as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| (i, ccdf(h), h.count() as f64))
        })
        .collect();
    let xmin = curves
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|q| q.0))
        .fold(f64::INFINITY, f64::min)
        .max(1.0);
    let xmax = curves
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|q| q.0))
        .fold(1.0, f64::max);
    let ymin_n = curves.iter().map(|c| c.2).fold(1.0, f64::max);
    let (lx0, lx1) = (
        xmin.log10().floor(),
        xmax.log10().ceil().max(xmin.log10().floor() + 1.0),
    );
    let (ly0, ly1) = (-(ymin_n.log10().ceil()).max(1.0), 0.0);
    let px = |x: f64| ml + (x.log10() - lx0) / (lx1 - lx0) * (w - ml - mr);
    let py = |y: f64| mt + (ly1 - y.log10()) / (ly1 - ly0) * (h - mt - mb);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="100%" role="img" aria-label="CCDF of {}">"#,
        escape(&row.metric)
    );
    let _ = write!(
        s,
        "<rect x=\"{ml}\" y=\"{mt}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        w - ml - mr,
        h - mt - mb
    );
    let mut d = lx0;
    while d <= lx1 {
        let x = ml + (d - lx0) / (lx1 - lx0) * (w - ml - mr);
        let label = Nanos(10f64.powf(d).round() as u64).to_string();
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{mt}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            h - mb,
            h - mb + 14.0,
            escape(&label)
        );
        d += 1.0;
    }
    let mut e = ly0;
    while e <= ly1 {
        let y = mt + (ly1 - e) / (ly1 - ly0) * (h - mt - mb);
        let _ = write!(
            s,
            "<line x1=\"{ml}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">1e{e}</text>",
            w - mr,
            ml - 4.0,
            y + 4.0
        );
        e += 1.0;
    }
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">latency (log scale)</text>",
        ml + (w - ml - mr) / 2.0,
        h - 8.0
    );
    let _ = write!(
        s,
        "<text x=\"14\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">P(latency &gt; x)</text>",
        mt + (h - mt - mb) / 2.0,
        mt + (h - mt - mb) / 2.0
    );
    for (i, pts, _) in &curves {
        let color = PALETTE[i % PALETTE.len()];
        let floor = 10f64.powf(ly0);
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y.max(floor))))
            .collect();
        let _ = write!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
            path.join(" ")
        );
    }
    for (k, (i, _, _)) in curves.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let run = runs.get(*i).map_or(0, |r| r.0);
        let y = mt + 14.0 + k as f64 * 16.0;
        let _ = write!(
            s,
            "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"3\"/><text x=\"{}\" y=\"{}\" font-size=\"12\">run {run}{}</text>",
            w - mr - 110.0,
            w - mr - 90.0,
            w - mr - 84.0,
            y + 4.0,
            if *i == 0 { " (A)" } else { "" }
        );
    }
    s.push_str("</svg>");
    s
}

/// A self-contained HTML page: the table, then one CCDF plot per row.
pub fn compare_html(cmp: &RunComparison) -> String {
    let ids: Vec<String> = cmp.runs.iter().map(|r| r.0.to_string()).collect();
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>latscope compare {}</title><style>body{{font-family:sans-serif;max-width:60rem;margin:auto;padding:1rem}}pre{{overflow-x:auto;font-size:12px}}figure{{margin:1rem 0}}</style></head><body><h1>latscope compare: runs {}</h1>",
        escape(&ids.join(" ")),
        escape(&ids.join(", "))
    );
    let _ = write!(
        s,
        "<h2>Summary</h2><pre>{}</pre>",
        escape(&compare_text(cmp, false))
    );
    s.push_str("<h2>Exceedance (CCDF) plots</h2>");
    for row in &cmp.rows {
        let _ = write!(
            s,
            "<figure><figcaption>{} — {}</figcaption>{}</figure>",
            escape(&row.cell.to_string()),
            escape(&row.metric),
            ccdf_svg(row, &cmp.runs)
        );
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use latscope_stats::compare::{compare_runs, CellKey};
    use latscope_stats::{CellResult, MetricResult, RunResult};

    fn run(id: i64, tail: u64) -> RunResult {
        let mut m = MetricResult::new("timer.latency", None);
        for i in 0..10_000u64 {
            m.histogram.record(10_000 + i % 1_000);
        }
        m.histogram.record_n(300_000, tail);
        RunResult {
            meta: latscope_model::RunMeta {
                id: RunId(id),
                started_unix_ns: Nanos(0),
                ended_unix_ns: None,
                checkpoint_unix_ns: None,
                status: latscope_model::RunStatus::Complete,
                command_line: vec![],
                pid: 0,
                boot_id: String::new(),
                hostname: String::new(),
                tool_version: String::new(),
                notes: vec![],
                source: None,
            },
            system: Default::default(),
            capabilities: Default::default(),
            cells: vec![CellResult::new(
                latscope_model::CellMeta {
                    index: 0,
                    probe: "timer".into(),
                    workload: "idle".into(),
                    settings: latscope_model::CellSettings::default_for("timer").unwrap(),
                    duration_ns: Nanos(0),
                    monotonic_start_ns: Nanos(0),
                },
                vec![m],
            )],
        }
    }

    #[test]
    fn text_json_and_html_render() {
        let (a, b) = (run(1, 5), run(2, 200));
        let cmp = compare_runs(&a, &[&b]);
        assert_eq!(cmp.rows[0].cell.to_string(), "timer/idle/fifo:95");
        let text = compare_text(&cmp, false);
        assert!(text.contains("WORSE"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(compare_text(&cmp, true).contains(RED));
        let json: serde_json::Value =
            serde_json::from_str(&compare_json(&cmp, Some(10.0)).unwrap()).unwrap();
        assert_eq!(json["schema"], COMPARE_JSON_SCHEMA);
        assert_eq!(json["tripped"][0]["metric"], "timer.latency");
        let html = compare_html(&cmp);
        assert!(html.contains("<svg") && html.contains("<polyline"));
        assert!(!html.contains("src=") && !html.contains("href=") && !html.contains("https:"));
        let _ = CellKey::of(&a.cells[0]);
    }
}
