//! Terminal text: the run header, summary tables per metric and CPU, and
//! the log-scale count tables.

use std::collections::BTreeMap;

use latscope_model::{metric, CellSettings, Nanos, PhaseName};
use latscope_stats::{CellResult, Histogram, MetricResult, RunResult, Summary};

use crate::deferred::{deferred_work_tables, is_deferred_work, tracer_line};
use crate::granularity::{granularity_line, late_mode_lines};
use crate::hazards::hazards_block;
use crate::noise::{log_rows, noise_tables};
use crate::table::Table;
use crate::time::format_utc;
use crate::udp::udp_block;
use crate::workload::{workload_sources, workload_table};

const METRIC_ORDER: [&str; 13] = [
    metric::TIMER_LATENCY,
    metric::TIMER_INTERVAL,
    metric::TIMER_IRQ,
    metric::TIMER_SCHED,
    metric::TIMER_RETURN,
    metric::NOISE_GAP,
    // The UDP probe's whole path first, then its stages in the order a
    // datagram goes through them.
    metric::UDP_PATH,
    metric::UDP_SEND,
    metric::UDP_SEND_SCHED,
    metric::UDP_RECV,
    metric::UDP_RECV_DELIVER,
    metric::UDP_RECV_SCHED,
    metric::UDP_RECV_RETURN,
];

fn describe(name: &str) -> &'static str {
    match name {
        metric::TIMER_LATENCY => "intended expiry → user code runs",
        metric::TIMER_INTERVAL => "spacing between consecutive wake-ups",
        metric::TIMER_IRQ => "intended expiry → our timer's interrupt handler",
        metric::TIMER_SCHED => "timer interrupt → our thread switched in",
        metric::TIMER_RETURN => "switched in → user code runs",
        metric::NOISE_GAP => "length of each interruption of the CPU-bound loop",
        metric::UDP_PATH => "sender's clock before sendto → receiver's user code has the datagram",
        metric::UDP_SEND => "sender's clock before sendto → driver's transmit time stamp",
        metric::UDP_SEND_SCHED => {
            "sender's clock before sendto → time stamp before the packet scheduler"
        }
        metric::UDP_RECV => "receive time stamp → receiver's user code has the datagram",
        metric::UDP_RECV_DELIVER => "receive time stamp → our receiver woken",
        metric::UDP_RECV_SCHED => "receiver woken → switched in",
        metric::UDP_RECV_RETURN => "switched in → user code has the datagram",
        _ => "",
    }
}

fn opt(n: Option<Nanos>) -> String {
    n.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The summary `latscope run` prints and `show` repeats: the header, the
/// summary tables and, with `histogram`, the log-scale count tables.
pub fn run_summary(run: &RunResult, histogram: bool) -> String {
    let mut out = run_header(run);
    out.push_str(&summary_tables(run));
    out.push_str(&crate::together::together_tables(&run.cells));
    if histogram {
        out.push_str(&histogram_tables(run));
    }
    out
}

/// Two or three lines naming the run, the machine and what was missing,
/// then the latency hazards stored with the run, if any.
pub fn run_header(run: &RunResult) -> String {
    let m = &run.meta;
    let s = &run.system;
    let mut out = format!(
        "latscope run {} · {} · started {} UTC",
        m.id,
        m.status,
        format_utc(m.started_unix_ns)
    );
    if let Some(end) = m.ended_unix_ns {
        out.push_str(&format!(
            " · {} long",
            end.saturating_sub(m.started_unix_ns)
        ));
    }
    out.push('\n');
    if let Some(source) = &m.source {
        out.push_str(&format!("{source}\n"));
    }
    // An imported file may not name its host or kernel.
    let mut sys = vec![format!("{} {}", s.hostname, s.kernel_release)
        .trim()
        .to_string()];
    sys.retain(|p| !p.is_empty());
    if let Some(p) = &s.preemption_model {
        sys.push(format!("preempt {p}"));
    }
    if let Some(hz) = s.hz {
        sys.push(format!("HZ {hz}"));
    }
    if let Some(cs) = &s.clocksource {
        sys.push(format!("clocksource {cs}"));
    }
    if s.cpu_count > 0 {
        sys.push(format!("{} CPUs", s.cpu_count));
    }
    if s.hypervisor {
        sys.push("virtual machine".into());
    }
    if sys.is_empty() {
        sys.push("system not recorded".to_string());
    }
    out.push_str(&sys.join(" · "));
    out.push('\n');
    if let Some(line) = granularity_line(run) {
        out.push_str(&line);
        out.push('\n');
    }
    for line in &run.capabilities.missing {
        out.push_str(&format!("note: {line}\n"));
    }
    for line in &m.notes {
        out.push_str(&format!("note: {line}\n"));
    }
    out.push_str(&hazards_block(&s.hazards));
    out
}

fn cell_title(cell: &CellResult) -> String {
    let s = &cell.meta.settings;
    let mut parts = vec![format!("{} probe", cell.meta.probe)];
    let mut inner = Vec::new();
    if let CellSettings::Timer(t) = s {
        inner.push(t.timer_api.to_string());
        if !t.timer_slack.is_minimum() {
            inner.push(format!("timer slack {}", t.timer_slack));
        }
    }
    if let Some(p) = s.period() {
        inner.push(format!("{p} period"));
    }
    inner.push(sched_part(s));
    match s {
        CellSettings::Timer(t) if t.phase == PhaseName::Random => {
            inner.push("random phase".to_string());
        }
        // The noise probe's active periods and the sleeps between them.
        CellSettings::Noise(n) => {
            inner.push(format!("{} runtime", n.runtime_ns));
            inner.push(if n.pause_ns.0 == 0 {
                "no pause".to_string()
            } else {
                format!("{} pause", n.pause_ns)
            });
        }
        _ => {}
    }
    parts[0] = format!("{} ({})", parts[0], inner.join(", "));
    parts.push(format!("workload {}", cell.meta.workload));
    if let Some(list) = s.common().together.as_ref().filter(|l| l.len() > 1) {
        let others: Vec<String> = list
            .iter()
            .filter(|&&i| i != cell.meta.index)
            .map(u32::to_string)
            .collect();
        let with = match cell.meta.probe.as_str() {
            "noise" => "spinning at once with cell",
            _ => "same expiries as cell",
        };
        parts.push(format!("{with} {}", others.join(", ")));
    }
    parts.push(format!("{} measured", cell.meta.duration_ns));
    format!("cell {}: {}", cell.meta.index, parts.join(" · "))
}

/// The scheduling of a cell's threads: "fifo 95", "rr 20, quantum
/// 100ms" (the quantum the kernel reported), "other", "batch nice 5",
/// "deadline runtime 100us deadline 500us period 1.00ms".
fn sched_part(s: &CellSettings) -> String {
    let c = s.common();
    if let (latscope_model::Policy::Deadline, Some(d)) = (s.policy(), c.deadline) {
        return format!(
            "deadline runtime {} deadline {} period {}",
            d.runtime_ns, d.deadline_ns, d.period_ns
        );
    }
    let mut text = match s.priority() {
        0 => s.policy().to_string(),
        p => format!("{} {p}", s.policy()),
    };
    if let Some(n) = c.nice {
        text.push_str(&format!(" nice {n}"));
    }
    if let Some(n) = c.instance {
        text.push_str(&format!(" #{n}"));
    }
    if let Some(q) = c.rr_interval_ns {
        text.push_str(&format!(", quantum {q}"));
    }
    text
}

/// Metrics of a cell grouped by name, in the order they first appear. The
/// system-wide interrupt and deferred-work metrics are left out: they have
/// tables of their own (`deferred.rs`).
fn by_name(cell: &CellResult) -> Vec<(&str, Vec<&MetricResult>)> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<&str, Vec<&MetricResult>> = BTreeMap::new();
    for m in cell.metrics.iter().filter(|m| !is_deferred_work(&m.name)) {
        if !groups.contains_key(m.name.as_str()) {
            order.push(&m.name);
        }
        groups.entry(&m.name).or_default().push(m);
    }
    // The headline metric first, then the rest as stored.
    order.sort_by_key(|n| {
        METRIC_ORDER
            .iter()
            .position(|m| m == n)
            .unwrap_or(usize::MAX)
    });
    order
        .into_iter()
        .map(|n| (n, groups.remove(n).unwrap_or_default()))
        .collect()
}

fn summary_row(t: &mut Table, label: String, h: &Histogram, extra: &[String]) {
    let s = Summary::of(h);
    let mut row = vec![label, h.count().to_string()];
    let cols = [
        s.map(|s| s.min),
        s.map(|s| s.mean),
        s.map(|s| s.p50),
        s.map(|s| s.p90),
        s.map(|s| s.p99),
        s.map(|s| s.p999),
        s.map(|s| s.p9999),
        s.map(|s| s.max),
    ];
    row.extend(cols.into_iter().map(opt));
    row.extend(extra.iter().cloned());
    t.row(row);
}

const SUMMARY_HEADER: [&str; 10] = [
    "CPU", "samples", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max",
];

/// A summary table per metric for every cell, then, for a traced cell, its
/// interrupts and deferred work and a line on the tracer. A noise cell
/// starts with the noise probe's per-CPU figures; a UDP cell has the UDP
/// probe's counts after its metric tables. Cells with a workload
/// characterization end the text with its table and sources.
pub fn summary_tables(run: &RunResult) -> String {
    let mut out = String::new();
    for cell in &run.cells {
        out.push('\n');
        out.push_str(&cell_title(cell));
        out.push('\n');
        out.push_str(&noise_tables(cell, run.meta.source.is_some()));
        for (name, metrics) in by_name(cell) {
            let has_threshold = metrics.iter().any(|m| m.threshold.is_some());
            // Overruns belong to deadline-driven metrics, which are the ones
            // with a per-deadline (corrected) distribution.
            let deadlines = metrics.iter().any(|m| m.corrected.is_some());
            let mut header: Vec<String> = SUMMARY_HEADER.iter().map(|s| s.to_string()).collect();
            if deadlines {
                header.push("overruns".into());
            }
            if has_threshold {
                let t = metrics.iter().find_map(|m| m.threshold).unwrap_or_default();
                header.push(format!(">{t}"));
            }
            let mut t = Table::new(header);
            for m in &metrics {
                let mut extra = Vec::new();
                if deadlines {
                    extra.push(m.overruns.to_string());
                }
                if has_threshold {
                    extra.push(m.above_threshold.map_or("-".into(), |a| a.to_string()));
                }
                summary_row(&mut t, cpu_label(m), &m.histogram, &extra);
            }
            out.push_str(&format!("\n{name} — {}\n", describe(name)));
            out.push_str(&t.render());
            if name == metric::TIMER_INTERVAL {
                out.push_str(&late_mode_lines(run, cell));
            }
            let overrun = metrics.iter().any(|m| m.overruns > 0);
            if overrun {
                let mut c = Table::new(SUMMARY_HEADER.iter().copied().chain(["missed"]));
                for m in &metrics {
                    if let Some(h) = &m.corrected {
                        summary_row(&mut c, cpu_label(m), h, &[m.missed_deadlines.to_string()]);
                    }
                }
                out.push_str(&format!(
                    "\n{name}, per deadline (coordinated-omission corrected: each deadline skipped by an overrun counted with the latency it would have had)\n"
                ));
                out.push_str(&c.render());
            }
        }
        out.push_str(&early_wakeups_line(cell));
        out.push_str(&udp_block(cell));
        out.push_str(&deferred_work_tables(cell));
        if let Some(trace) = &cell.trace {
            out.push('\n');
            out.push_str(&tracer_line(trace, cell.meta.duration_ns));
            out.push_str(&crate::recurring::recurring_text(trace));
        }
    }
    out.push_str(&workload_table(run));
    out.push_str(&workload_sources(run));
    out
}

/// One line naming the CPUs whose timer fired before its deadline, or
/// nothing when none did: such a wake-up is a 0 ns sample in
/// `timer.latency`, and would otherwise pass for a perfect one.
fn early_wakeups_line(cell: &CellResult) -> String {
    let early: Vec<String> = cell
        .timer
        .iter()
        .filter(|s| s.early_wakeups > 0)
        .map(|s| {
            format!(
                "CPU {} {}× (up to {} early)",
                s.cpu, s.early_wakeups, s.max_early_ns
            )
        })
        .collect();
    if early.is_empty() {
        return String::new();
    }
    format!(
        "
warning: the timer woke before its deadline (counted as 0 ns in timer.latency): {}
",
        early.join(", ")
    )
}

fn cpu_label(m: &MetricResult) -> String {
    m.cpu.map_or_else(|| "all".to_string(), |c| c.to_string())
}

fn range_label(low: Nanos, high: Nanos) -> String {
    // Whole microseconds throughout, as in the studies' tables: every
    // boundary is exact. Only noise.gap splits the first microsecond, into
    // whole nanoseconds.
    if low.0 == 0 && high.0 == 1_000 {
        "< 1 µs".to_string()
    } else if high.0 <= 1_000 && low.0 == 0 {
        format!("< {} ns", high.0)
    } else if high.0 <= 1_000 {
        format!("{}–{} ns", low.0, high.0)
    } else {
        format!("{}–{} µs", low.0 / 1_000, high.0 / 1_000)
    }
}

/// Log-scale count tables (power-of-two microsecond ranges), one per metric
/// with a column per CPU: the form of Bernadat's Tables 6 and 7. For
/// `noise.gap` the first microsecond is split into halving nanosecond ranges
/// down to the shortest interruption.
pub fn histogram_tables(run: &RunResult) -> String {
    let mut out = String::new();
    for cell in &run.cells {
        for (name, metrics) in by_name(cell) {
            let floor = metrics.iter().filter_map(|m| m.histogram.min()).min();
            let tables: Vec<_> = metrics
                .iter()
                .map(|m| log_rows(name, &m.histogram, floor.map(|f| f.0)))
                .collect();
            let rows = tables.iter().map(Vec::len).max().unwrap_or(0);
            if rows == 0 {
                continue;
            }
            let mut header = vec!["range".to_string()];
            header.extend(metrics.iter().map(|m| format!("CPU {}", cpu_label(m))));
            let mut t = Table::new(header);
            for i in 0..rows {
                let bin = tables.iter().find_map(|tb| tb.get(i)).copied();
                let Some(bin) = bin else { continue };
                let mut row = vec![range_label(bin.low, bin.high)];
                for tb in &tables {
                    row.push(tb.get(i).map_or(0, |b| b.count).to_string());
                }
                t.row(row);
            }
            out.push_str(&format!(
                "\ncell {}: {name}, samples per range\n",
                cell.meta.index
            ));
            out.push_str(&t.render());
        }
    }
    out
}
