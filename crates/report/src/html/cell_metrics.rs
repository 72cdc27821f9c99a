//! What the report's sections read of a cell: its headline metric, its
//! scheduling setting, a metric with its CPUs pooled.

use latscope_model::metric;
use latscope_stats::{CellResult, Histogram};

/// The metrics the matrix and the forecast summarize, per probe.
pub(crate) fn headline_metric(probe: &str) -> Option<&'static str> {
    match probe {
        "timer" => Some(metric::TIMER_LATENCY),
        "noise" => Some(metric::NOISE_GAP),
        _ => None,
    }
}

/// "fifo 95", "other": the scheduling setting of a cell.
pub(crate) fn setting(c: &CellResult) -> String {
    c.meta.settings.sched_label()
}

/// All CPUs of one metric in one cell merged.
pub(crate) fn pooled(c: &CellResult, name: &str) -> Histogram {
    let mut h = Histogram::new();
    for m in c.metrics.iter().filter(|m| m.name == name) {
        h.merge(&m.histogram);
    }
    h
}
