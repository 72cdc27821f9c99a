//! The Prometheus text exposition format (version 0.0.4) of a run's
//! histograms: one histogram family per metric, in seconds, with
//! cumulative buckets at powers of two microseconds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use latscope_stats::{MetricResult, RunResult};

use super::cpu_label;

/// Bucket bounds: 2^0 .. 2^20 µs (1 µs .. about 1.05 s), then `+Inf`.
const LE_POWERS: u32 = 20;

/// `latscope_` + the metric name with every character outside
/// `[A-Za-z0-9_]` replaced by `_` + `_seconds`.
fn family_name(metric: &str) -> String {
    let body: String = metric
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("latscope_{body}_seconds")
}

/// A label value with `\`, `"` and line feeds escaped.
fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Seconds as a Prometheus float, from nanoseconds: exact decimal digits.
fn seconds(ns: u128) -> String {
    let whole = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// The whole run as Prometheus text: for each metric a `# HELP` and
/// `# TYPE ... histogram` line, then per cell and CPU the cumulative
/// `_bucket{...,le="..."}` series, `_sum` (seconds) and `_count`. Labels:
/// `cell`, `probe`, `workload`, `cpu` (`all` for system-wide metrics).
/// Bucket counts are at the histogram's resolution (0.1 %): a sample in
/// the recording bucket that holds a bound counts as at or below it.
pub fn prometheus_text(run: &RunResult) -> String {
    // metric name → (cell, metric) in run order
    let mut families: BTreeMap<&str, Vec<(&latscope_model::CellMeta, &MetricResult)>> =
        BTreeMap::new();
    for cell in &run.cells {
        for m in &cell.metrics {
            families.entry(&m.name).or_default().push((&cell.meta, m));
        }
    }
    let mut out = String::new();
    for (metric, series) in families {
        let family = family_name(metric);
        let _ = writeln!(
            out,
            "# HELP {family} latscope metric {metric} of run {} (seconds).",
            run.meta.id
        );
        let _ = writeln!(out, "# TYPE {family} histogram");
        for (cell, m) in series {
            let labels = format!(
                "cell=\"{}\",probe=\"{}\",workload=\"{}\",cpu=\"{}\"",
                cell.index,
                label_value(&cell.probe),
                label_value(&cell.workload),
                cpu_label(m.cpu)
            );
            let h = &m.histogram;
            let total = h.count();
            for k in 0..=LE_POWERS {
                let le_ns = (1u64 << k) * 1000;
                let at_or_below = total - h.count_above(le_ns);
                let _ = writeln!(
                    out,
                    "{family}_bucket{{{labels},le=\"{}\"}} {at_or_below}",
                    seconds(u128::from(le_ns))
                );
            }
            let _ = writeln!(out, "{family}_bucket{{{labels},le=\"+Inf\"}} {total}");
            let _ = writeln!(out, "{family}_sum{{{labels}}} {}", seconds(h.sum()));
            let _ = writeln!(out, "{family}_count{{{labels}}} {total}");
        }
    }
    out
}
