//! The workload characterization, after Table 3 of Bernadat's study: what
//! each cell's background load did to the machine (CPU shares, interrupts,
//! context switches, system calls, softirqs, disk and network traffic, page
//! faults, runnable tasks), as means over the cell.

use latscope_model::{CpuPercent, WorkloadSecond, WorkloadStats};
use latscope_stats::{CellResult, RunResult};

use crate::table::Table;

const HEADER: [&str; 22] = [
    "cell",
    "workload",
    "samples",
    "usr%",
    "sys%",
    "irq%",
    "sirq%",
    "steal%",
    "iow%",
    "idle%",
    "intr/s",
    "ctxsw/s",
    "syscall/s",
    "softirq/s",
    "rd/s",
    "wr/s",
    "rdB/s",
    "wrB/s",
    "pkt/s",
    "netB/s",
    "fault/s",
    "run",
];

/// A rate in at most six characters: one decimal below 10, whole numbers
/// below 10 000, then thousands (`k`), millions (`M`) and billions (`G`)
/// with one decimal.
pub(crate) fn rate(x: f64) -> String {
    let a = x.abs();
    if a < 9.95 {
        format!("{x:.1}")
    } else if a < 9_999.5 {
        format!("{x:.0}")
    } else if a < 999_950.0 {
        format!("{:.1}k", x / 1e3)
    } else if a < 999_950_000.0 {
        format!("{:.1}M", x / 1e6)
    } else {
        format!("{:.1}G", x / 1e9)
    }
}

/// A throughput given in KiB/s, in bytes per second with a binary suffix
/// (`512`, `6.7K`, `13.1M`, `1.5G`): unambiguous in a table, unlike a
/// thousand KiB.
pub(crate) fn bytes(kib: f64) -> String {
    let b = kib * 1024.0;
    if b.abs() < 999.5 {
        format!("{b:.0}")
    } else if kib.abs() < 999.95 {
        format!("{kib:.1}K")
    } else if kib.abs() < 999.95 * 1024.0 {
        format!("{:.1}M", kib / 1024.0)
    } else {
        format!("{:.1}G", kib / (1024.0 * 1024.0))
    }
}

fn opt_rate(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), rate)
}

fn pct(x: f64) -> String {
    format!("{x:.1}")
}

fn cpu_columns(c: Option<&CpuPercent>) -> [String; 7] {
    match c {
        Some(c) => [
            pct(c.user + c.nice),
            pct(c.sys),
            pct(c.irq),
            pct(c.softirq),
            pct(c.steal),
            pct(c.iowait),
            pct(c.idle),
        ],
        None => std::array::from_fn(|_| "-".to_string()),
    }
}

fn row(cell: &CellResult, stats: &WorkloadStats) -> Vec<String> {
    let m: &WorkloadSecond = &stats.mean;
    let mut out = vec![
        cell.meta.index.to_string(),
        stats.workload.clone(),
        stats.samples.to_string(),
    ];
    out.extend(cpu_columns(m.cpu_all.as_ref()));
    out.extend([
        opt_rate(m.interrupts_per_s),
        opt_rate(m.context_switches_per_s),
        opt_rate(m.syscalls_per_s),
        opt_rate(m.softirqs_per_s),
    ]);
    match &m.disk {
        Some(d) => out.extend([
            rate(d.reads_per_s),
            rate(d.writes_per_s),
            bytes(d.read_kb_per_s),
            bytes(d.write_kb_per_s),
        ]),
        None => out.extend(std::iter::repeat_n("-".to_string(), 4)),
    }
    // Every interface, loopback included: a loopback workload's traffic is
    // all on lo.
    let nets: Vec<_> = [&m.net_lo, &m.net].into_iter().flatten().collect();
    if nets.is_empty() {
        out.extend(["-".to_string(), "-".to_string()]);
    } else {
        out.push(rate(nets.iter().map(|n| n.packets_per_s()).sum()));
        out.push(bytes(nets.iter().map(|n| n.kb_per_s()).sum()));
    }
    out.push(opt_rate(m.page_faults_per_s));
    out.push(
        m.runnable
            .map_or_else(|| "-".to_string(), |r| format!("{r:.1}")),
    );
    out
}

/// The characterization table: one row per cell that has one, with the
/// means over the cell, then the notes on what could not be measured (each
/// once, with the cells it concerns). Empty when no cell has one.
pub fn workload_table(run: &RunResult) -> String {
    let cells: Vec<(&CellResult, &WorkloadStats)> = run
        .cells
        .iter()
        .filter_map(|c| Some((c, c.workload_stats.as_ref()?)))
        .collect();
    if cells.is_empty() {
        return String::new();
    }
    let mut t = Table::new(HEADER).left_aligned(2);
    let mut notes: Vec<(&str, Vec<u32>)> = Vec::new();
    for (cell, stats) in &cells {
        t.row(row(cell, stats));
        for n in &stats.notes {
            match notes.iter_mut().find(|(text, _)| text == n) {
                Some((_, idx)) => idx.push(cell.meta.index),
                None => notes.push((n, vec![cell.meta.index])),
            }
        }
    }
    let mut out = String::from("\nworkload characterization (means over each cell)\n");
    out.push_str(&t.render());
    out.push_str(
        "CPU % of all CPUs, usr including nice; B/s in powers of 1024 (K, M, G); \
         pkt/s and netB/s sent + received on every interface, loopback included\n",
    );
    for (text, idx) in notes {
        let list: Vec<String> = idx.iter().map(u32::to_string).collect();
        let which = if idx.len() == 1 { "cell" } else { "cells" };
        out.push_str(&format!("note: {text} ({which} {})\n", list.join(", ")));
    }
    out
}

/// Per cell with a characterization: its busiest interrupt sources and its
/// softirqs by vector (busiest first), a line each. Empty when no cell has
/// a characterization.
pub fn workload_sources(run: &RunResult) -> String {
    let mut out = String::new();
    for cell in &run.cells {
        let Some(stats) = &cell.workload_stats else {
            continue;
        };
        let irqs: Vec<String> = stats
            .top_interrupts
            .iter()
            .map(|s| format!("{} {} ({})", s.source, rate(s.per_s), s.short_description()))
            .collect();
        let mut vectors: Vec<(&String, &f64)> = stats
            .softirqs_per_s
            .iter()
            .filter(|(_, &v)| v > 0.0)
            .collect();
        vectors.sort_by(|a, b| b.1.total_cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let vectors: Vec<String> = vectors
            .into_iter()
            .map(|(n, &v)| format!("{n} {}", rate(v)))
            .collect();
        let none = || "none".to_string();
        out.push_str(&format!(
            "\ncell {} · {}: interrupts/s {}\n",
            cell.meta.index,
            stats.workload,
            if irqs.is_empty() {
                none()
            } else {
                irqs.join(", ")
            }
        ));
        out.push_str(&format!(
            "  softirqs/s {}\n",
            if vectors.is_empty() {
                none()
            } else {
                vectors.join(", ")
            }
        ));
        if let Some(c) = &stats.mean.cpu {
            out.push_str(&format!(
                "  measured CPUs {}: usr {}% sys {}% irq {}% sirq {}% idle {}%, interrupts/s {}\n",
                stats.cpus,
                pct(c.user + c.nice),
                pct(c.sys),
                pct(c.irq),
                pct(c.softirq),
                pct(c.idle + c.iowait),
                opt_rate(stats.mean.interrupts_measured_per_s)
            ));
        }
        if let Some(rt) = &stats.rt_load {
            out.push_str(&rt_line(rt));
        }
    }
    out
}

/// What an `rt:` load's threads achieved, per thread.
fn rt_line(rt: &latscope_model::RtLoadStats) -> String {
    format!(
        "  rt load: {} thread(s), each busy {}% of the time, {} bursts/s\n",
        rt.threads,
        pct(rt.busy_percent),
        rate(rt.bursts_per_s)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_carry_their_unit() {
        let cases = [
            (0.0, "0"),
            (0.5, "512"),
            (0.975, "998"),
            (0.98, "1.0K"),
            (6.7, "6.7K"),
            (999.9, "999.9K"),
            (1000.0, "1.0M"),
            (13_414.4, "13.1M"),
            (1_572_864.0, "1.5G"),
        ];
        for (kib, want) in cases {
            assert_eq!(bytes(kib), want, "{kib}");
        }
    }

    #[test]
    fn rt_load_line() {
        let rt = latscope_model::RtLoadStats {
            threads: 2,
            busy_percent: 19.94,
            bursts_per_s: 100.1,
        };
        let line = rt_line(&rt);
        assert!(
            line.starts_with("  rt load: 2 thread(s), each busy "),
            "{line}"
        );
        assert!(line.contains("bursts/s"), "{line}");
    }

    #[test]
    fn rates_stay_short() {
        let cases = [
            (0.0, "0.0"),
            (3.25, "3.2"),
            (9.94, "9.9"),
            (9.96, "10"),
            (1234.4, "1234"),
            (9999.6, "10.0k"),
            (12_345.0, "12.3k"),
            (999_949.0, "999.9k"),
            (999_951.0, "1.0M"),
            (6_346_167.4, "6.3M"),
            (2.5e9, "2.5G"),
        ];
        for (x, want) in cases {
            assert_eq!(rate(x), want, "{x}");
        }
    }
}
