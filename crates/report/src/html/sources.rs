//! The busiest interrupt and deferred-work sources of a traced cell: hard
//! IRQ handlers and vectors, softirqs, workqueue items and NMIs ranked by
//! their longest single execution, with their total time, and the softirq
//! delays (raise → handler).

use latscope_model::metric::{
    IRQ_EXEC_PREFIX, NMI_EXEC, SOFTIRQ_DELAY_PREFIX, SOFTIRQ_EXEC_PREFIX, WORKQUEUE_EXEC_PREFIX,
};
use latscope_model::Nanos;
use latscope_stats::{CellResult, Histogram};

use super::bars::{stacked_bars, StackedBar};
use super::page::{figure, opt_ns, para, table, us};

/// Rows of the ranking.
const TOP: usize = crate::TOP_SOURCES;
/// Sub-rows under a softirq or the timer interrupt: its deferred work by
/// function or device.
const PARTS: usize = 5;

/// Whether a metric is one of the sources' (they have no plots of their
/// own).
pub(super) fn is_source_metric(name: &str) -> bool {
    name.starts_with(SOFTIRQ_DELAY_PREFIX) || kind_of(name).is_some()
}

/// The kind of an execution-time metric and the source's name.
fn kind_of(name: &str) -> Option<(&'static str, &str)> {
    if let Some(irq) = name.strip_prefix(IRQ_EXEC_PREFIX) {
        Some(match irq.strip_prefix("vector:") {
            Some(v) => ("vector", v),
            None => ("irq", irq),
        })
    } else if let Some(v) = name.strip_prefix(SOFTIRQ_EXEC_PREFIX) {
        Some(("softirq", v))
    } else if let Some(f) = name.strip_prefix(WORKQUEUE_EXEC_PREFIX) {
        Some(("workqueue", f))
    } else if name == NMI_EXEC {
        Some(("nmi", "NMI"))
    } else {
        None
    }
}

fn total(h: &Histogram) -> Nanos {
    Nanos(u64::try_from(h.sum()).unwrap_or(u64::MAX))
}

pub(super) fn sources_section(c: &CellResult) -> String {
    let mut exec: Vec<(&'static str, &str, Histogram)> = Vec::new();
    let mut delays: Vec<(&str, Histogram)> = Vec::new();
    for m in &c.metrics {
        if m.histogram.is_empty() {
            continue;
        }
        if let Some(v) = m.name.strip_prefix(SOFTIRQ_DELAY_PREFIX) {
            match delays.iter_mut().find(|(n, _)| *n == v) {
                Some((_, h)) => h.merge(&m.histogram),
                None => delays.push((v, m.histogram.clone())),
            }
        } else if let Some((kind, name)) = kind_of(&m.name) {
            match exec.iter_mut().find(|(k, n, _)| *k == kind && *n == name) {
                Some((_, _, h)) => h.merge(&m.histogram),
                None => exec.push((kind, name, m.histogram.clone())),
            }
        }
    }
    if exec.is_empty() && delays.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Interrupts and deferred work</h3>");
    if !exec.is_empty() {
        exec.sort_by(|a, b| {
            b.2.max()
                .cmp(&a.2.max())
                .then_with(|| (a.0, a.1).cmp(&(b.0, b.1)))
        });
        let header = ["source", "kind", "count", "total", "max", "mean", "p99"];
        let parts = crate::deferred::collect_parts(c);
        let row = |name: String, kind: &str, h: &Histogram| {
            vec![
                name,
                kind.to_string(),
                h.count().to_string(),
                total(h).to_string(),
                opt_ns(h.max()),
                opt_ns(h.mean()),
                opt_ns(h.quantile(0.99)),
            ]
        };
        let mut rows: Vec<Vec<String>> = Vec::new();
        for (kind, name, h) in exec.iter().take(TOP) {
            rows.push(row(name.to_string(), kind, h));
            // What ran inside a softirq or the timer interrupt, under it.
            for (part, ph) in crate::deferred::parts_by_max(&parts, kind, name)
                .into_iter()
                .take(PARTS)
            {
                let (pk, what) = part.split_once(':').unwrap_or(("", part));
                rows.push(row(format!("↳ {what}"), pk, ph));
            }
        }
        out.push_str(&para(
            &format!(
                "The top {} of {} sources by longest single execution, all CPUs; under a softirq or the timer interrupt (↳), the timer and hrtimer callbacks, tasklets and NAPI devices that ran inside it.",
                exec.len().min(TOP),
                exec.len()
            ),
            Some("note"),
        ));
        out.push_str(&table(&header, &rows, 2));
        let mut by_total: Vec<&(&str, &str, Histogram)> = exec.iter().collect();
        by_total.sort_by_key(|e| std::cmp::Reverse(total(&e.2)));
        let categories = vec!["total execution time".to_string()];
        let bars: Vec<StackedBar> = by_total
            .iter()
            .take(TOP)
            .map(|(kind, name, h)| StackedBar {
                label: short(&format!("{kind} {name}")),
                parts: vec![(categories[0].clone(), us(total(h).0))],
            })
            .collect();
        let svg = stacked_bars(
            &format!("cell {}: time in each source", c.meta.index),
            "total execution time over the cell (µs)",
            &categories,
            &bars,
        );
        if !svg.is_empty() {
            out.push_str(&figure(
                &svg,
                "Total time each source ran, largest first (all CPUs).",
            ));
        }
    }
    if !delays.is_empty() {
        let header = ["vector", "count", "mean", "p99", "max"];
        let rows: Vec<Vec<String>> = delays
            .iter()
            .map(|(v, h)| {
                vec![
                    v.to_string(),
                    h.count().to_string(),
                    opt_ns(h.mean()),
                    opt_ns(h.quantile(0.99)),
                    opt_ns(h.max()),
                ]
            })
            .collect();
        out.push_str(
            "<h4>Softirq delays (raise → handler start, the Linux counterpart of DPC latency)</h4>",
        );
        out.push_str(&table(&header, &rows, 1));
    }
    out
}

/// A bar label that fits beside the bar.
fn short(s: &str) -> String {
    if s.chars().count() <= 24 {
        s.to_string()
    } else {
        let head: String = s.chars().take(23).collect();
        format!("{head}…")
    }
}
