//! Two CSV tables: per-metric summaries and histogram buckets. Values in
//! nanoseconds; a header row; RFC 4180 quoting where a field needs it.

use std::fmt::Write as _;

use latscope_stats::{RunResult, Summary};

use super::cpu_label;

/// Quotes a field when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row per cell × metric × CPU:
/// `cell,probe,workload,metric,cpu,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,overruns`.
/// A metric with no samples has count 0 and empty value fields; `cpu` is
/// `all` for system-wide metrics.
pub fn summaries_csv(run: &RunResult) -> String {
    let mut out = String::from(
        "cell,probe,workload,metric,cpu,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,overruns\n",
    );
    for cell in &run.cells {
        for m in &cell.metrics {
            let _ = write!(
                out,
                "{},{},{},{},{},",
                cell.meta.index,
                field(&cell.meta.probe),
                field(&cell.meta.workload),
                field(&m.name),
                cpu_label(m.cpu)
            );
            match Summary::of(&m.histogram) {
                Some(s) => {
                    let _ = write!(
                        out,
                        "{},{},{},{},{},{},{},{},{}",
                        s.count,
                        s.min.as_u64(),
                        s.mean.as_u64(),
                        s.p50.as_u64(),
                        s.p90.as_u64(),
                        s.p99.as_u64(),
                        s.p999.as_u64(),
                        s.p9999.as_u64(),
                        s.max.as_u64()
                    );
                }
                None => out.push_str("0,,,,,,,,"),
            }
            let _ = writeln!(out, ",{}", m.overruns);
        }
    }
    out
}

/// One row per non-empty histogram bucket:
/// `cell,metric,cpu,low_ns,high_ns,count` (`high_ns` inclusive), ascending.
pub fn buckets_csv(run: &RunResult) -> String {
    let mut out = String::from("cell,metric,cpu,low_ns,high_ns,count\n");
    for cell in &run.cells {
        for m in &cell.metrics {
            let name = field(&m.name);
            let cpu = cpu_label(m.cpu);
            for (low, high, count) in m.histogram.buckets() {
                let _ = writeln!(out, "{},{name},{cpu},{low},{high},{count}", cell.meta.index);
            }
        }
    }
    out
}
