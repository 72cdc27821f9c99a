//! Percentiles over time: for a metric whose checkpoint intervals the store
//! kept, p50, p99, p99.9 and the largest sample of each interval (the
//! cell's CPUs pooled), as a plot and, when there are few intervals, a
//! table.

use latscope_model::Nanos;
use latscope_stats::intervals::{coarsen, pooled};
use latscope_stats::{CellResult, IntervalPercentiles, IntervalSeries};

use super::page::{figure, opt_ns, para, table, us};
use super::svg::{Mark, Plot, Scale, Series};

/// Which figure of an interval a line shows.
type Pick = fn(&IntervalPercentiles) -> Option<Nanos>;

/// Points per line: as the other plots over time. Also what the store is
/// asked to merge a long series down to (`Store::load_intervals_merged`).
pub const MAX_POINTS: usize = 400;
/// Up to this many intervals also get a table.
const MAX_TABLE_ROWS: usize = 24;

/// Seconds of the cell's measured time, for an axis or a table.
fn secs(n: Nanos) -> f64 {
    n.0 as f64 / 1e9
}

/// The figure (and table) of `name` in cell `c`; empty when the store kept
/// fewer than two intervals of it (one is the cell's summary again), or
/// they hold no sample.
pub(super) fn percentiles_over_time(
    c: &CellResult,
    name: &str,
    intervals: &[IntervalSeries],
) -> String {
    let series: Vec<&IntervalSeries> = intervals
        .iter()
        .filter(|s| s.cell == c.meta.index && s.metric == name)
        .collect();
    let all = pooled(&series);
    // The store may have merged a long series already; `stored` counts the
    // checkpoint intervals it holds.
    let merged = series.iter().map(|s| s.merged).max().unwrap_or(1).max(1);
    let stored = series
        .iter()
        .map(|s| s.stored)
        .max()
        .unwrap_or(0)
        .max(all.len());
    if stored < 2 || all.iter().all(|i| i.histogram.is_empty()) {
        return String::new();
    }
    // The store may have pooled the CPUs already (`cpu` None): the cell
    // says how many there are.
    let cell_cpus: Vec<u32> = c
        .metrics
        .iter()
        .filter(|m| m.name == name)
        .filter_map(|m| m.cpu.map(|c| c.0))
        .collect();
    let cpus = match (series.as_slice(), cell_cpus.as_slice()) {
        ([one], _) if one.cpu.is_some() => {
            one.cpu.map_or_else(String::new, |c| format!("CPU {}", c.0))
        }
        ([_], []) => "system-wide".to_string(),
        ([_], [only]) => format!("CPU {only}"),
        ([_], all) => format!("the cell's {} CPUs pooled", all.len()),
        (many, _) => format!("the cell's {} CPUs pooled", many.len()),
    };
    // A monitor's minute windows stand in for its checkpoint intervals.
    let (one, many) = match series.iter().find_map(|s| s.window) {
        Some(w) if w == Nanos::from_secs(60) => ("minute window", "minute windows"),
        Some(_) => ("window", "windows"),
        None => ("checkpoint interval", "checkpoint intervals"),
    };
    let between = if one == "checkpoint interval" {
        "between consecutive checkpoints"
    } else {
        "in each of the monitor's windows"
    };
    let (points, group) = coarsen(&all, MAX_POINTS);
    let group = group * merged;
    let lines: [(&str, Pick); 4] = [
        ("p50", |p| p.p50),
        ("p99", |p| p.p99),
        ("p99.9", |p| p.p999),
        ("max", |p| p.max),
    ];
    let stats: Vec<_> = points.iter().map(|i| i.percentiles()).collect();
    let plotted: Vec<Series> = lines
        .iter()
        .map(|(label, pick)| {
            // An interval without samples breaks the line.
            let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for p in &stats {
                match pick(p) {
                    Some(v) if v.0 > 0 => {
                        if let Some(seg) = segments.last_mut() {
                            seg.push((secs(p.end), us(v.0)));
                        }
                    }
                    _ => {
                        if segments.last().is_some_and(|s| !s.is_empty()) {
                            segments.push(Vec::new());
                        }
                    }
                }
            }
            segments.retain(|s| !s.is_empty());
            Series {
                name: (*label).to_string(),
                mark: Mark::LineDots,
                segments,
                hollow: Vec::new(),
            }
        })
        .collect();
    let title = format!("{name}, cell {}: percentiles over time", c.meta.index);
    let mut out = String::from("<h4>Percentiles over time</h4>");
    let per = if group > 1 {
        format!("each point {group} {many} merged")
    } else {
        format!("each point one {one}")
    };
    if let Some(p) = Plot::fit(
        &title,
        (
            "time since the cell started (s), at the interval's end",
            Scale::Linear,
        ),
        ("latency (µs, log scale)", Scale::Log),
        plotted,
    ) {
        out.push_str(&figure(
            &p.render(),
            &format!(
                "{name}, {cpus}: p50, p99, p99.9 and the largest sample of the samples recorded {between} ({stored} {many}; {per}). The maximum is exact when it was its CPU's largest so far in the cell, else the top of its 0.1 % bucket.",
            ),
        ));
    }
    if stored <= MAX_TABLE_ROWS && merged == 1 {
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|i| {
                let p = i.percentiles();
                vec![
                    format!("{:.1}–{:.1} s", secs(i.start), secs(i.end)),
                    p.samples.to_string(),
                    opt_ns(p.p50),
                    opt_ns(p.p99),
                    opt_ns(p.p999),
                    opt_ns(p.max),
                ]
            })
            .collect();
        out.push_str(&table(
            &["interval", "samples", "p50", "p99", "p99.9", "max"],
            &rows,
            1,
        ));
    } else {
        out.push_str(&para(
            &format!(
                "{stored} {many} (too many for a table): latscope export --format hdr writes each checkpoint interval as an HdrHistogram interval.",
            ),
            Some("note"),
        ));
    }
    out
}
