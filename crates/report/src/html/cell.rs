//! One cell's section: per metric a summary table, the log-log histogram,
//! the exceedance curve, the per-second maxima, the percentiles over time
//! of the checkpoint intervals and the per-hour maxima;
//! then the decomposition, the noise figures, the UDP counts, the interrupt
//! and deferred-work sources and the episodes.

use std::fmt::Write as _;

use latscope_model::{metric, Nanos};
use latscope_stats::forecast::{exceedance, window_maxima};
use latscope_stats::{CellResult, Histogram, IntervalSeries, MetricResult, SecondStats};

use super::escape::escape;
use super::page::{anchor, figure, opt_ns, para, table, us};
use super::svg::{Mark, Plot, Scale, Series};
use super::timeline::Timeline;
use super::{episodes, sources};

/// Bins per decade of the log-log histogram.
const BINS_PER_DECADE: f64 = 10.0;
/// Points per curve: enough for the eye, small enough for the page.
const MAX_POINTS: usize = 400;
const HOUR_S: u64 = 3600;

/// Components of a traced wake-up, in the order they happen.
const DECOMPOSITION: [(&str, &str); 3] = [
    (
        metric::TIMER_IRQ,
        "expiry → our hrtimer's interrupt handler",
    ),
    (metric::TIMER_SCHED, "handler → our thread switched in"),
    (metric::TIMER_RETURN, "switched in → user code runs"),
];

/// Whether a metric has its own plots, and so wants its per-second
/// timeline (the decomposition and the interrupt and deferred-work metrics,
/// one per handler, have their own sections without time plots).
pub fn is_plotted(name: &str) -> bool {
    !sources::is_source_metric(name) && !DECOMPOSITION.iter().any(|(d, _)| *d == name)
}

fn cpu_name(m: &MetricResult) -> String {
    m.cpu
        .map_or_else(|| "all CPUs".to_string(), |c| format!("CPU {}", c.0))
}

pub(super) fn cell_section(
    c: &CellResult,
    timelines: &[Timeline],
    intervals: &[IntervalSeries],
    interval_notes: &[String],
) -> String {
    let mut out = String::new();
    let settings: Vec<String> = c
        .meta
        .settings
        .to_map()
        .iter()
        .map(
            |(k, v)| match (k.strip_suffix("_ns"), v.as_u64(), v.as_str()) {
                (Some(name), Some(ns), _) => format!("{name} {}", Nanos(ns)),
                (_, _, Some(s)) => format!("{k} {s}"),
                (Some(name), _, _) if v.is_null() => format!("{name} default"),
                _ => format!("{k} {v}"),
            },
        )
        .collect();
    out.push_str(&para(
        &format!(
            "Measured for {}; settings: {}.",
            c.meta.duration_ns,
            if settings.is_empty() {
                "none recorded".to_string()
            } else {
                settings.join(", ")
            }
        ),
        Some("note"),
    ));
    let mut names: Vec<&str> = Vec::new();
    for m in &c.metrics {
        if is_plotted(&m.name) && !names.contains(&m.name.as_str()) {
            names.push(&m.name);
        }
    }
    // The cell's headline metric first, the others as stored.
    let headline = super::cell_metrics::headline_metric(&c.meta.probe);
    names.sort_by_key(|n| Some(*n) != headline);
    for name in names {
        let parts: Vec<&MetricResult> = c
            .metrics
            .iter()
            .filter(|m| m.name == name && !m.histogram.is_empty())
            .collect();
        if parts.is_empty() {
            continue;
        }
        let id = anchor(&["cell", &c.meta.index.to_string(), name]);
        let _ = write!(out, "<h3 id=\"{id}\">{}</h3>", escape(name));
        out.push_str(&summary_table(&parts));
        if name == metric::TIMER_INTERVAL {
            out.extend(interval_notes.iter().map(|n| para(n, Some("fail"))));
        }
        out.push_str(&histogram_figure(c, name, &parts));
        out.push_str(&ccdf_figure(c, name, &parts));
        let lines: Vec<&Timeline> = timelines
            .iter()
            .filter(|t| t.cell == c.meta.index && t.metric == name && !t.seconds.is_empty())
            .collect();
        out.push_str(&timeline_figure(c, name, &lines));
        out.push_str(&super::intervals::percentiles_over_time(c, name, intervals));
        out.push_str(&hourly_table(c, &lines));
    }
    out.push_str(&decomposition(c));
    out.push_str(&noise(c));
    out.push_str(&udp(c));
    out.push_str(&sources::sources_section(c));
    out.push_str(&episodes::episodes_section(c));
    out
}

fn summary_table(parts: &[&MetricResult]) -> String {
    let header = [
        "CPU",
        "samples",
        "min",
        "p50",
        "p99",
        "p99.9",
        "max",
        "overruns",
        "missed deadlines",
    ];
    let mut rows: Vec<Vec<String>> = parts
        .iter()
        .map(|m| summary_row(&cpu_name(m), &m.histogram, m.overruns, m.missed_deadlines))
        .collect();
    if parts.len() > 1 {
        let mut all = Histogram::new();
        for m in parts {
            all.merge(&m.histogram);
        }
        rows.push(summary_row(
            "pooled",
            &all,
            parts.iter().map(|m| m.overruns).sum(),
            parts.iter().map(|m| m.missed_deadlines).sum(),
        ));
    }
    table(&header, &rows, 1)
}

fn summary_row(label: &str, h: &Histogram, overruns: u64, missed: u64) -> Vec<String> {
    vec![
        label.to_string(),
        h.count().to_string(),
        opt_ns(h.min()),
        opt_ns(h.quantile(0.5)),
        opt_ns(h.quantile(0.99)),
        opt_ns(h.quantile(0.999)),
        opt_ns(h.max()),
        overruns.to_string(),
        missed.to_string(),
    ]
}

/// A histogram re-binned into `BINS_PER_DECADE` logarithmic bins, drawn
/// as a step outline in µs: `(bin start, count), (bin end, count)` per
/// bin; an empty bin breaks the line (a log axis has no 0).
pub(super) fn log_bins(h: &Histogram) -> Vec<Vec<(f64, f64)>> {
    let mut bins: Vec<(i64, u64)> = Vec::new();
    for (low, high, count) in h.buckets() {
        let mid = (low as f64 + high as f64) / 2.0;
        let k = (mid.max(1.0).log10() * BINS_PER_DECADE).floor() as i64;
        match bins.last_mut() {
            Some((last, n)) if *last == k => *n += count,
            _ => bins.push((k, count)),
        }
    }
    let edge = |k: i64| 10f64.powf(k as f64 / BINS_PER_DECADE) / 1e3;
    let mut segments: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut prev: Option<i64> = None;
    for (k, n) in bins {
        if prev != Some(k - 1) || segments.is_empty() {
            segments.push(Vec::new());
        }
        if let Some(seg) = segments.last_mut() {
            seg.push((edge(k), n as f64));
            seg.push((edge(k + 1), n as f64));
        }
        prev = Some(k);
    }
    segments
}

fn histogram_figure(c: &CellResult, name: &str, parts: &[&MetricResult]) -> String {
    let series: Vec<Series> = parts
        .iter()
        .map(|m| Series {
            name: cpu_name(m),
            mark: Mark::Line,
            segments: log_bins(&m.histogram),
            hollow: Vec::new(),
        })
        .collect();
    let title = format!("{name}, cell {}: log-log histogram", c.meta.index);
    match Plot::fit(
        &title,
        ("latency (µs, log scale)", Scale::Log),
        ("samples per bin (log scale)", Scale::Log),
        series,
    ) {
        Some(p) => figure(
            &p.render(),
            &format!(
                "{name} under workload {}: samples per logarithmic bin ({} bins per decade), both axes logarithmic, as in Cota-Robles & Held's Figure 4.",
                c.meta.workload, BINS_PER_DECADE
            ),
        ),
        None => String::new(),
    }
}

/// Keeps at most `MAX_POINTS` points of a curve, always the last.
fn thin<T: Copy>(points: &[T]) -> Vec<T> {
    let step = points.len().div_ceil(MAX_POINTS).max(1);
    let mut out: Vec<T> = points.iter().step_by(step).copied().collect();
    if let Some(&last) = points.last() {
        if (points.len() - 1) / step * step != points.len() - 1 {
            out.push(last);
        }
    }
    out
}

/// The exceedance curve in µs, without its final point at probability 0.
pub(super) fn ccdf_points(h: &Histogram) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = exceedance(h)
        .into_iter()
        .filter(|&(_, p)| p > 0.0)
        .map(|(x, p)| (us(x), p))
        .collect();
    thin(&pts)
}

fn ccdf_figure(c: &CellResult, name: &str, parts: &[&MetricResult]) -> String {
    let series: Vec<Series> = parts
        .iter()
        .map(|m| Series::new(&cpu_name(m), Mark::Line, ccdf_points(&m.histogram)))
        .collect();
    let title = format!("{name}, cell {}: exceedance", c.meta.index);
    match Plot::fit(
        &title,
        ("latency x (µs, log scale)", Scale::Log),
        ("P(latency > x) (log scale)", Scale::Log),
        series,
    ) {
        Some(p) => figure(
            &p.render(),
            &format!(
                "{name} under workload {}: the share of samples above each latency (CCDF); the curve ends at the largest sample but one bucket.",
                c.meta.workload
            ),
        ),
        None => String::new(),
    }
}

/// One CPU's per-second maxima in µs, merged into groups of seconds (the
/// maximum of each group) when the run is longer than `MAX_POINTS` s; a
/// second without samples breaks the line.
fn timeline_series(first_second: u64, seconds: &[SecondStats]) -> Vec<Vec<(f64, f64)>> {
    let group = seconds.len().div_ceil(MAX_POINTS).max(1);
    let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (i, chunk) in seconds.chunks(group).enumerate() {
        let max = chunk.iter().map(|s| s.max).max().unwrap_or(0);
        let has = chunk.iter().any(|s| s.count > 0);
        if has && max > 0 {
            if let Some(seg) = segments.last_mut() {
                seg.push(((first_second + (i * group) as u64) as f64, us(max)));
            }
        } else if segments.last().is_some_and(|s| !s.is_empty()) {
            segments.push(Vec::new());
        }
    }
    segments.retain(|s| !s.is_empty());
    segments
}

fn timeline_figure(c: &CellResult, name: &str, lines: &[&Timeline]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let series: Vec<Series> = lines
        .iter()
        .map(|t| Series {
            name: t
                .cpu
                .map_or_else(|| "all CPUs".to_string(), |c| format!("CPU {}", c.0)),
            mark: Mark::LineDots,
            segments: timeline_series(t.first_second, &t.seconds),
            hollow: Vec::new(),
        })
        .collect();
    let longest = lines.iter().map(|t| t.seconds.len()).max().unwrap_or(0);
    let group = longest.div_ceil(MAX_POINTS).max(1);
    let title = format!("{name}, cell {}: maxima over time", c.meta.index);
    match Plot::fit(
        &title,
        ("time since the cell started (s)", Scale::Linear),
        ("largest sample (µs, log scale)", Scale::Log),
        series,
    ) {
        Some(p) => figure(
            &p.render(),
            &if group > 1 {
                format!("{name}: the largest sample of each {group} s, per CPU.")
            } else {
                format!("{name}: the largest sample of each second, per CPU.")
            },
        ),
        None => String::new(),
    }
}

/// The worst case of each whole hour, per CPU, with the median and worst
/// hour (Cota-Robles & Held's worst case per hour).
fn hourly_table(c: &CellResult, lines: &[&Timeline]) -> String {
    // A timeline whose oldest seconds were deleted (a long monitor) has
    // no first hour to count from; its hours come from the monitor's
    // windows (the observed section).
    if c.meta.duration_ns < Nanos::from_secs(HOUR_S) || lines.iter().any(|t| t.first_second > 0) {
        return String::new();
    }
    let per_cpu: Vec<(String, latscope_stats::forecast::WindowMaxima)> = lines
        .iter()
        .filter_map(|t| {
            let label = t
                .cpu
                .map_or_else(|| "all CPUs".to_string(), |c| format!("CPU {}", c.0));
            Some((label, window_maxima(&t.seconds, HOUR_S)?))
        })
        .collect();
    if per_cpu.is_empty() {
        return String::new();
    }
    let mut header = vec!["hour".to_string()];
    header.extend(per_cpu.iter().map(|(l, _)| l.clone()));
    let hours = per_cpu.iter().map(|(_, w)| w.windows).max().unwrap_or(0);
    let mut rows: Vec<Vec<String>> = (0..hours)
        .map(|h| {
            let mut r = vec![(h + 1).to_string()];
            for (_, w) in &per_cpu {
                r.push(opt_ns(w.maxima_ns.get(h).map(|&n| Nanos(n))));
            }
            r
        })
        .collect();
    let mut median = vec!["median hour".to_string()];
    let mut worst = vec!["worst hour".to_string()];
    for (_, w) in &per_cpu {
        median.push(Nanos(w.median_ns).to_string());
        worst.push(Nanos(w.worst_ns).to_string());
    }
    rows.push(median);
    rows.push(worst);
    let mut out = String::from("<h4>Worst case per hour</h4>");
    out.push_str(&table(&header, &rows, 1));
    let empty: u64 = per_cpu.iter().map(|(_, w)| w.empty_seconds).sum();
    if empty > 0 {
        out.push_str(&para(
            &format!("{empty} second(s) in these hours recorded no sample (counted as 0)."),
            Some("note"),
        ));
    }
    out
}

fn decomposition(c: &CellResult) -> String {
    let comps: Vec<(&str, &str, Histogram)> = DECOMPOSITION
        .iter()
        .map(|&(n, what)| (n, what, super::cell_metrics::pooled(c, n)))
        .filter(|(_, _, h)| !h.is_empty())
        .collect();
    if comps.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Decomposition of the wake-up (traced)</h3>");
    let header = ["part", "what", "samples", "p50", "p99", "p99.9", "max"];
    let mut rows: Vec<Vec<String>> = Vec::new();
    let total = super::cell_metrics::pooled(c, metric::TIMER_LATENCY);
    let row = |name: &str, what: &str, h: &Histogram| {
        vec![
            name.to_string(),
            what.to_string(),
            h.count().to_string(),
            opt_ns(h.quantile(0.5)),
            opt_ns(h.quantile(0.99)),
            opt_ns(h.quantile(0.999)),
            opt_ns(h.max()),
        ]
    };
    for (n, what, h) in &comps {
        rows.push(row(n, what, h));
    }
    if !total.is_empty() {
        rows.push(row(
            metric::TIMER_LATENCY,
            "the whole: expiry → user code",
            &total,
        ));
    }
    out.push_str(&table(&header, &rows, 2));
    let mut series: Vec<Series> = comps
        .iter()
        .map(|(n, _, h)| Series::new(n, Mark::Line, ccdf_points(h)))
        .collect();
    if !total.is_empty() {
        series.push(Series::new(
            metric::TIMER_LATENCY,
            Mark::Line,
            ccdf_points(&total),
        ));
    }
    if let Some(p) = Plot::fit(
        &format!("cell {}: decomposition exceedance", c.meta.index),
        ("latency x (µs, log scale)", Scale::Log),
        ("P(part > x) (log scale)", Scale::Log),
        series,
    ) {
        out.push_str(&figure(
            &p.render(),
            "Exceedance of each part of the wake-up (all measured CPUs pooled): where the tail of timer.latency comes from.",
        ));
    }
    if let Some(t) = &c.trace {
        out.push_str(&para(
            crate::tracer_line(t, c.meta.duration_ns).trim(),
            Some("note"),
        ));
    }
    out
}

fn noise(c: &CellResult) -> String {
    if c.noise.is_empty() {
        return String::new();
    }
    let header = [
        "CPU",
        "active",
        "interruptions",
        "per second",
        "noise %",
        "longest gap",
        "gap threshold",
        "steal",
        "by class",
    ];
    let rows: Vec<Vec<String>> = c
        .noise
        .iter()
        .map(|n| {
            let classes: Vec<String> = n
                .classes
                .iter()
                .map(|(k, v)| format!("{k}: {} × (max {})", v.count, v.max_ns))
                .collect();
            vec![
                n.cpu.0.to_string(),
                n.active_ns.to_string(),
                n.interruptions.to_string(),
                format!("{:.1}", n.interruptions_per_second()),
                format!("{:.4}", n.noise_percent()),
                n.max_gap_ns.to_string(),
                n.gap_threshold_ns.to_string(),
                opt_ns(n.steal_ns),
                classes.join(", "),
            ]
        })
        .collect();
    let mut out = String::from("<h3>Noise on the CPU-bound loop</h3>");
    out.push_str(&table(&header, &rows, 1));
    for n in &c.noise {
        for f in &n.findings {
            out.push_str(&para(&format!("CPU {}: {f}", n.cpu.0), Some("fail")));
        }
    }
    out
}

/// The UDP probe's counts: one row each, the anomalies included when zero
/// (a reader looking for loss should see "0", not nothing).
fn udp(c: &CellResult) -> String {
    let Some(s) = &c.udp else {
        return String::new();
    };
    let count = |label: &str, n: u64| vec![label.to_string(), n.to_string()];
    let mut lost = count("lost", s.lost);
    if let Some(p) = crate::udp::loss_percent(s) {
        lost[1] = format!("{} ({p:.4}%)", s.lost);
    }
    let rows = vec![
        count("sent", s.sent),
        count("received", s.received),
        lost,
        count("reordered", s.reordered),
        count("duplicates", s.duplicates),
        count("send errors", s.send_errors),
        count("overruns", s.overruns),
        count("skipped sends", s.skipped_sends),
        count("missing TX_SCHED time stamp", s.missing_tx_sched),
        count("missing TX_SOFTWARE time stamp", s.missing_tx_software),
        count("missing RX_SOFTWARE time stamp", s.missing_rx_software),
        vec![
            "path shorter than send".to_string(),
            format!("{} of {} checked", s.inconsistent, s.checked),
        ],
    ];
    let mut out = String::from("<h3>UDP datagrams</h3>");
    out.push_str(&para(
        &format!("{}.", crate::udp::udp_title(s)),
        Some("note"),
    ));
    out.push_str(&table(&["datagrams", "count"], &rows, 1));
    if s.inconsistent > 0 {
        out.push_str(&para(
            "Some paths were shorter than their send, which a consistent clock cannot give: did the clock step?",
            Some("fail"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_bins_step_through_each_decade_and_break_at_gaps() {
        let mut h = Histogram::new();
        for _ in 0..10 {
            h.record(10_000);
        }
        h.record(11_000);
        h.record(5_000_000);
        let segs = log_bins(&h);
        // 10 µs and 11 µs share a bin; 5 ms is far away.
        assert_eq!(segs.len(), 2, "{segs:?}");
        assert_eq!(segs[0].len(), 2);
        assert_eq!(segs[0][0].1, 11.0);
        assert!((segs[0][0].0 - 10.0).abs() < 1e-6, "{segs:?}");
        assert_eq!(segs[1][0].1, 1.0);
    }

    #[test]
    fn ccdf_points_drop_probability_zero_and_stay_few() {
        let mut h = Histogram::new();
        for v in 1..5000u64 {
            h.record(v * 97);
        }
        let pts = ccdf_points(&h);
        assert!(pts.len() <= MAX_POINTS + 1, "{}", pts.len());
        assert!(pts.iter().all(|&(_, p)| p > 0.0 && p <= 1.0));
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn timelines_merge_long_runs_and_break_at_empty_seconds() {
        let mut secs = vec![
            SecondStats {
                count: 5,
                max: 20_000,
                above: 0
            };
            10
        ];
        secs[4] = SecondStats::default();
        let segs = timeline_series(0, &secs);
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[0].len(), 4);
        let long = vec![
            SecondStats {
                count: 1,
                max: 1_000,
                above: 0
            };
            4000
        ];
        let segs = timeline_series(0, &long);
        assert!(segs[0].len() <= MAX_POINTS);
    }
}
