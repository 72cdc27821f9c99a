//! "Interrupts and deferred work": the system-wide run times of hard IRQ
//! handlers, interrupt vectors, softirqs, workqueue items and NMIs that a
//! traced run records, ranked the way LatencyMon ranks drivers (by the
//! longest single execution, and by total time), plus the softirq delays
//! (raise → entry, the Linux counterpart of DPC latency) and one line on
//! what the tracer itself did.
//!
//! These metrics would flood the per-CPU summary (one table per handler),
//! so the summary leaves them to this module.

use std::collections::BTreeMap;

use latscope_model::metric::{
    deferred_name, IRQ_EXEC_PREFIX, NMI_EXEC, SOFTIRQ_DELAY_PREFIX, SOFTIRQ_EXEC_PREFIX,
    WORKQUEUE_EXEC_PREFIX,
};
use latscope_model::{Nanos, TraceSummary};
use latscope_stats::{CellResult, Histogram};

use crate::table::Table;

/// Rows per ranking.
pub const TOP_SOURCES: usize = 15;

/// After [`IRQ_EXEC_PREFIX`]: an interrupt vector rather than an IRQ line.
const VECTOR: &str = "vector:";

/// Softirq vectors in the kernel's order.
const SOFTIRQ_ORDER: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// What a deferred-work metric measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Irq,
    Vector,
    Softirq,
    Workqueue,
    Nmi,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Irq => "irq",
            Kind::Vector => "vector",
            Kind::Softirq => "softirq",
            Kind::Workqueue => "workqueue",
            Kind::Nmi => "nmi",
        }
    }
}

/// One execution-time metric: its kind and the source's name as shown.
fn execution(name: &str) -> Option<(Kind, &str)> {
    if let Some(irq) = name.strip_prefix(IRQ_EXEC_PREFIX) {
        Some(match irq.strip_prefix(VECTOR) {
            Some(v) => (Kind::Vector, v),
            None => (Kind::Irq, irq),
        })
    } else if let Some(v) = name.strip_prefix(SOFTIRQ_EXEC_PREFIX) {
        Some((Kind::Softirq, v))
    } else if let Some(f) = name.strip_prefix(WORKQUEUE_EXEC_PREFIX) {
        Some((Kind::Workqueue, f))
    } else if name == NMI_EXEC {
        Some((Kind::Nmi, "NMI"))
    } else {
        None
    }
}

/// Whether a metric belongs to the deferred-work tables rather than the
/// per-CPU summary.
pub(crate) fn is_deferred_work(name: &str) -> bool {
    name.starts_with(SOFTIRQ_DELAY_PREFIX)
        || execution(name).is_some()
        || deferred_name(name).is_some()
}

/// Sub-rows shown under a softirq or vector row; the rest are counted.
const TOP_PARTS: usize = 3;

/// Deferred work by function or device, per context (softirq vector, or
/// `hardirq`), merged over CPUs: `(kind:name, histogram)`.
pub(crate) type Parts<'a> = BTreeMap<&'a str, BTreeMap<String, Histogram>>;

pub(crate) fn collect_parts(cell: &CellResult) -> Parts<'_> {
    let mut parts: Parts<'_> = BTreeMap::new();
    for m in &cell.metrics {
        if let Some(d) = deferred_name(&m.name) {
            parts
                .entry(d.context)
                .or_default()
                .entry(format!("{}:{}", d.kind, d.what))
                .or_default()
                .merge(&m.histogram);
        }
    }
    parts
}

/// The parts of a ranked row: a softirq's by its vector, the local timer
/// vector's as the hard-interrupt context (hrtimer callbacks run there).
fn parts_of<'p>(parts: &'p Parts<'_>, s: &Source<'_>) -> Option<&'p BTreeMap<String, Histogram>> {
    match s.kind {
        Kind::Softirq => parts.get(s.name),
        Kind::Vector if s.name == "local_timer" => parts.get("hardirq"),
        _ => None,
    }
}

/// Which figure a ranking orders by.
#[derive(Clone, Copy)]
enum By {
    Max,
    Total,
}

fn hist_total(h: &Histogram) -> Nanos {
    Nanos(u64::try_from(h.sum()).unwrap_or(u64::MAX))
}

/// The parts inside the row of `kind` ("softirq", "vector") `name`, by
/// longest single run: `(kind:source, histogram)`, for the HTML report.
pub(crate) fn parts_by_max<'p>(
    parts: &'p Parts<'_>,
    kind: &str,
    name: &str,
) -> Vec<(&'p String, &'p Histogram)> {
    let inside = match kind {
        "softirq" => parts.get(name),
        "vector" if name == "local_timer" => parts.get("hardirq"),
        _ => None,
    };
    inside.map_or_else(Vec::new, |p| ordered(p, By::Max))
}

fn ordered(parts: &BTreeMap<String, Histogram>, by: By) -> Vec<(&String, &Histogram)> {
    let mut list: Vec<(&String, &Histogram)> =
        parts.iter().filter(|(_, h)| !h.is_empty()).collect();
    list.sort_by(|a, b| {
        let key = |h: &Histogram| match by {
            By::Max => h.max().unwrap_or_default(),
            By::Total => hist_total(h),
        };
        key(b.1).cmp(&key(a.1)).then_with(|| a.0.cmp(b.0))
    });
    list
}

/// The sub-rows under one ranked row, in the ranking's order.
fn part_rows(t: &mut Table, parts: &BTreeMap<String, Histogram>, by: By) {
    let list = ordered(parts, by);
    for (name, h) in list.iter().take(TOP_PARTS) {
        let (kind, what) = name.split_once(':').unwrap_or(("", name));
        t.row([
            format!("  {what}"),
            kind.to_string(),
            h.count().to_string(),
            hist_total(h).to_string(),
            opt(h.max()),
            opt(h.mean()),
            opt(h.quantile(0.99)),
        ]);
    }
    if list.len() > TOP_PARTS {
        t.row([
            format!("  ({} more)", list.len() - TOP_PARTS),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
}

struct Source<'a> {
    kind: Kind,
    name: &'a str,
    histogram: Histogram,
}

impl Source<'_> {
    fn total(&self) -> Nanos {
        Nanos(u64::try_from(self.histogram.sum()).unwrap_or(u64::MAX))
    }

    fn max(&self) -> Nanos {
        self.histogram.max().unwrap_or_default()
    }
}

fn opt(n: Option<Nanos>) -> String {
    n.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn ranking(sources: &[&Source<'_>], parts: &Parts<'_>, by: By) -> String {
    let mut t =
        Table::new(["source", "kind", "count", "total", "max", "mean", "p99"]).left_aligned(2);
    for s in sources.iter().take(TOP_SOURCES) {
        let h = &s.histogram;
        t.row([
            s.name.to_string(),
            s.kind.as_str().to_string(),
            h.count().to_string(),
            s.total().to_string(),
            opt(h.max()),
            opt(h.mean()),
            opt(h.quantile(0.99)),
        ]);
        if let Some(p) = parts_of(parts, s) {
            part_rows(&mut t, p, by);
        }
    }
    let mut out = t.render();
    if sources.len() > TOP_SOURCES {
        out.push_str(&format!(
            "({} more sources; all are in `show --json`)\n",
            sources.len() - TOP_SOURCES
        ));
    }
    out
}

/// The deferred-work tables of one cell; empty when the cell has none of
/// these metrics. Metrics recorded per CPU are merged per source.
pub fn deferred_work_tables(cell: &CellResult) -> String {
    let mut exec: BTreeMap<(Kind, &str), Histogram> = BTreeMap::new();
    let mut delays: BTreeMap<&str, Histogram> = BTreeMap::new();
    for m in &cell.metrics {
        if let Some(v) = m.name.strip_prefix(SOFTIRQ_DELAY_PREFIX) {
            delays.entry(v).or_default().merge(&m.histogram);
        } else if let Some(key) = execution(&m.name) {
            exec.entry(key).or_default().merge(&m.histogram);
        }
    }
    let sources: Vec<Source<'_>> = exec
        .into_iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|((kind, name), histogram)| Source {
            kind,
            name,
            histogram,
        })
        .collect();
    let delays: Vec<(&str, Histogram)> = {
        let mut d: Vec<_> = delays.into_iter().filter(|(_, h)| !h.is_empty()).collect();
        d.sort_by_key(|(v, _)| {
            (
                SOFTIRQ_ORDER
                    .iter()
                    .position(|o| o == v)
                    .unwrap_or(usize::MAX),
                *v,
            )
        });
        d
    };
    if sources.is_empty() && delays.is_empty() {
        return String::new();
    }
    let parts = collect_parts(cell);

    let mut out = String::new();
    if !sources.is_empty() {
        let mut by_max: Vec<&Source<'_>> = sources.iter().collect();
        by_max.sort_by(|a, b| {
            b.max()
                .cmp(&a.max())
                .then_with(|| (a.kind, a.name).cmp(&(b.kind, b.name)))
        });
        out.push_str(&format!(
            "\nInterrupts and deferred work — top {TOP_SOURCES} by longest single execution (all CPUs)\n"
        ));
        out.push_str(&ranking(&by_max, &parts, By::Max));

        let mut by_total: Vec<&Source<'_>> = sources.iter().collect();
        by_total.sort_by(|a, b| {
            b.total()
                .cmp(&a.total())
                .then_with(|| (a.kind, a.name).cmp(&(b.kind, b.name)))
        });
        out.push_str(&format!(
            "\nInterrupts and deferred work — top {TOP_SOURCES} by total execution time\n"
        ));
        out.push_str(&ranking(&by_total, &parts, By::Total));
    }
    if !delays.is_empty() {
        out.push_str(
            "\nSoftirq delays — raise → start of the handler (the Linux counterpart of DPC latency)\n",
        );
        let mut t =
            Table::new(["vector", "busiest inside", "count", "mean", "p99", "max"]).left_aligned(2);
        for (v, h) in &delays {
            t.row([
                v.to_string(),
                busiest(parts.get(v)),
                h.count().to_string(),
                opt(h.mean()),
                opt(h.quantile(0.99)),
                opt(h.max()),
            ]);
        }
        out.push_str(&t.render());
    }
    out
}

/// The function or device that took the most time inside a vector:
/// "timer:delayed_work_timer_fn (62 %)"; empty without parts.
fn busiest(parts: Option<&BTreeMap<String, Histogram>>) -> String {
    let Some(parts) = parts else {
        return String::new();
    };
    let all: u128 = parts.values().map(Histogram::sum).sum();
    parts
        .iter()
        .max_by_key(|(_, h)| h.sum())
        .filter(|_| all > 0)
        .map(|(name, h)| format!("{name} ({:.0} %)", h.sum() as f64 * 100.0 / all as f64))
        .unwrap_or_default()
}

fn cpu_list(lost: &BTreeMap<u32, u64>) -> String {
    lost.iter()
        .filter(|(_, &n)| n > 0)
        .map(|(cpu, n)| format!("{cpu} ({n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line on what the tracer did over a cell of length `duration`.
pub fn tracer_line(t: &TraceSummary, duration: Nanos) -> String {
    let mut parts = Vec::new();
    if !t.backend.is_empty() {
        parts.push(format!("{} backend", t.backend));
    }
    parts.push(format!("{} events read", t.events));
    if t.lost_records == 0 {
        parts.push("0 records lost".to_string());
    } else {
        let cpus = cpu_list(&t.lost_per_cpu);
        let on = match t.lost_per_cpu.values().filter(|&&n| n > 0).count() {
            0 => String::new(),
            1 => format!(" on CPU {cpus}"),
            _ => format!(" on CPUs {cpus}"),
        };
        parts.push(format!(
            "{} records LOST{on} (episodes there may be incomplete)",
            t.lost_records
        ));
    }
    if t.missing_events.is_empty() {
        parts.push("no tracepoint missing".to_string());
    } else {
        parts.push(format!(
            "missing tracepoints: {}",
            t.missing_events.join(", ")
        ));
    }
    parts.push(format!(
        "episodes above {}: {} seen, {} kept (cap {})",
        t.threshold_ns, t.episodes_total, t.episodes_kept, t.episode_cap
    ));
    if let Some(line) = crate::steal::hypervisor_line(t) {
        parts.push(line);
    }
    if t.samples_undecomposed > 0 {
        let per_cpu: Vec<String> = t
            .undecomposed_per_cpu
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(cpu, n)| format!("CPU {cpu}: {n}"))
            .collect();
        let mut part = format!("{} samples not decomposed", t.samples_undecomposed);
        if !per_cpu.is_empty() {
            part.push_str(&format!(" ({})", per_cpu.join(", ")));
        }
        parts.push(part);
    }
    if t.stack_samples > 0 {
        parts.push(format!("{} stack samples", t.stack_samples));
    }
    let cpu = Nanos(t.tracer_cpu_ns);
    if duration.0 > 0 {
        let pct = t.tracer_cpu_ns as f64 * 100.0 / duration.0 as f64;
        parts.push(format!("tracer CPU time {cpu} ({pct:.1}% of one CPU)"));
    } else {
        parts.push(format!("tracer CPU time {cpu}"));
    }
    if t.bpf_prog_ns > 0 {
        let prog = Nanos(t.bpf_prog_ns);
        if duration.0 > 0 {
            let pct = t.bpf_prog_ns as f64 * 100.0 / duration.0 as f64;
            parts.push(format!("BPF programs {prog} ({pct:.2}% of one CPU)"));
        } else {
            parts.push(format!("BPF programs {prog}"));
        }
    }
    format!("tracer: {}\n", parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_metric_names() {
        assert_eq!(
            execution("irq.exec.24:virtio0-input.0"),
            Some((Kind::Irq, "24:virtio0-input.0"))
        );
        assert_eq!(
            execution("irq.exec.vector:local_timer"),
            Some((Kind::Vector, "local_timer"))
        );
        assert_eq!(
            execution("softirq.exec.NET_RX"),
            Some((Kind::Softirq, "NET_RX"))
        );
        assert_eq!(
            execution("workqueue.exec.vmstat_update"),
            Some((Kind::Workqueue, "vmstat_update"))
        );
        assert_eq!(execution("nmi.exec"), Some((Kind::Nmi, "NMI")));
        assert_eq!(execution("timer.irq"), None);
        assert!(is_deferred_work("softirq.delay.TIMER"));
        for m in [
            "timer.latency",
            "timer.interval",
            "timer.irq",
            "timer.sched",
            "timer.return",
            "noise.gap",
        ] {
            assert!(!is_deferred_work(m), "{m}");
        }
    }

    #[test]
    fn tracer_line_says_what_was_lost() {
        let mut t = TraceSummary {
            events: 1000,
            threshold_ns: Nanos(100_000),
            episodes_total: 5,
            episodes_kept: 5,
            episode_cap: 32,
            tracer_cpu_ns: 30_000_000,
            ..TraceSummary::default()
        };
        let line = tracer_line(&t, Nanos::from_secs(3));
        assert!(line.contains("0 records lost"), "{line}");
        assert!(line.contains("1.0% of one CPU"), "{line}");
        t.lost_records = 12;
        t.lost_per_cpu = BTreeMap::from([(0, 5), (1, 7)]);
        let line = tracer_line(&t, Nanos::ZERO);
        assert!(
            line.contains("12 records LOST on CPUs 0 (5), 1 (7)"),
            "{line}"
        );
        t.lost_per_cpu = BTreeMap::from([(1, 12)]);
        assert!(tracer_line(&t, Nanos::ZERO).contains("LOST on CPU 1 (12)"));
        assert_eq!(tracer_line(&t, Nanos::ZERO).lines().count(), 1);
    }
}
