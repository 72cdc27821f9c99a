//! cyclictest's `-h` histogram text for `timer.latency`, so scripts written
//! for cyclictest output (OSADL's latency plots, for one) read it unchanged.

use std::fmt::Write as _;

use latscope_stats::{Histogram, RunResult};

use super::{cpu_label, ExportError};

/// cyclictest's usual `-h` size: buckets 0 .. 999 µs.
pub const DEFAULT_MAX_US: u32 = 1000;

/// The metric cyclictest measures.
const METRIC: &str = "timer.latency";

/// One column: counts per whole microsecond below `max_us`, and the figures
/// of the trailer lines.
struct Column {
    counts: Vec<u64>,
    in_range: u64,
    overflows: u64,
    min_us: u64,
    avg_us: u64,
    max_us: u64,
}

fn column(h: &Histogram, max_us: u32) -> Column {
    let mut counts = vec![0u64; max_us as usize];
    let mut overflows = 0;
    for (low, _high, count) in h.buckets() {
        // cyclictest truncates to whole microseconds; a recording bucket
        // goes to the microsecond of its lowest value.
        let us = low / 1000;
        match usize::try_from(us).ok().and_then(|i| counts.get_mut(i)) {
            Some(slot) => *slot += count,
            None => overflows += count,
        }
    }
    let us = |v: Option<latscope_model::Nanos>| v.map_or(0, |n| n.as_u64() / 1000);
    let avg_us = if h.count() == 0 {
        0
    } else {
        u64::try_from(h.sum() / u128::from(h.count()) / 1000).unwrap_or(u64::MAX)
    };
    Column {
        in_range: h.count() - overflows,
        counts,
        overflows,
        min_us: us(h.min()),
        avg_us,
        max_us: us(h.max()),
    }
}

/// The `timer.latency` histograms of a run as cyclictest `-h MAX_US` prints
/// them: one column per timer thread (cell × CPU, in run order), a line
/// per microsecond `0 .. max_us-1` (`%06d` then the `%06d` counts separated
/// by tabs), then `# Total:` (samples inside the histogram, `%09d`),
/// `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:` and
/// `# Histogram Overflows:` (`%05d` µs / counts). Values are truncated to
/// whole microseconds as cyclictest does; above 2 µs latscope's buckets are
/// up to 0.1 % wide, so a sample within that of a microsecond boundary may
/// land one line lower than cyclictest would put it. The comment lines
/// before `# Histogram` say which cell and CPU each column is;
/// cyclictest's `# Histogram Overflow at cycle number:` lines are left
/// out (latscope does not keep cycle numbers).
pub fn cyclictest_histogram(run: &RunResult, max_us: u32) -> Result<String, ExportError> {
    if max_us == 0 {
        return Err(ExportError::NoData(
            "the cyclictest histogram needs at least 1 µs of buckets".to_string(),
        ));
    }
    let mut columns = Vec::new();
    let mut out = format!(
        "# latscope run {}: {METRIC} as cyclictest -h {max_us}\n",
        run.meta.id
    );
    for cell in &run.cells {
        for m in cell.metrics.iter().filter(|m| m.name == METRIC) {
            let _ = writeln!(
                out,
                "# column {}: cell {} ({}, {}), cpu {}",
                columns.len(),
                cell.meta.index,
                cell.meta.probe,
                cell.meta.workload,
                cpu_label(m.cpu)
            );
            columns.push(column(&m.histogram, max_us));
        }
    }
    if columns.is_empty() {
        return Err(ExportError::NoData(format!(
            "run {} has no {METRIC} measurements, so there is no cyclictest histogram to export",
            run.meta.id
        )));
    }
    out.push_str("# Histogram\n");
    for i in 0..max_us as usize {
        let _ = write!(out, "{i:06} ");
        let row: Vec<String> = columns
            .iter()
            .map(|c| format!("{:06}", c.counts[i]))
            .collect();
        out.push_str(&row.join("\t"));
        out.push('\n');
    }
    let trailer = |out: &mut String, title: &str, width: usize, f: &dyn Fn(&Column) -> u64| {
        out.push_str(title);
        for c in &columns {
            let _ = write!(out, " {:0width$}", f(c));
        }
        out.push('\n');
    };
    trailer(&mut out, "# Total:", 9, &|c| c.in_range);
    trailer(&mut out, "# Min Latencies:", 5, &|c| c.min_us);
    trailer(&mut out, "# Avg Latencies:", 5, &|c| c.avg_us);
    trailer(&mut out, "# Max Latencies:", 5, &|c| c.max_us);
    trailer(&mut out, "# Histogram Overflows:", 5, &|c| c.overflows);
    Ok(out)
}
