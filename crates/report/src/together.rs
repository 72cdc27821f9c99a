//! Priorities measured together (`run --priorities`), side by side: for
//! each group of cells that shared one expiry grid and one workload, one
//! row per priority with its timer latency (all measured CPUs pooled) and
//! how much later than the group's first priority it ran, as Cota-Robles
//! & Held's Figure 4 sets the latencies of two priorities on the same
//! interrupts; a group of noise threads has its own tables
//! ([`crate::together_noise`]).

use latscope_model::{metric, Nanos};
use latscope_stats::{CellResult, Histogram};

use crate::table::Table;

/// One table per group of cells measured together; empty without any.
pub fn together_tables(cells: &[CellResult]) -> String {
    let mut out = String::new();
    let mut seen: Vec<&Vec<u32>> = Vec::new();
    for c in cells {
        let Some(list) = c.meta.settings.common().together.as_ref() else {
            continue;
        };
        if list.len() < 2 || seen.contains(&list) {
            continue;
        }
        seen.push(list);
        let group: Vec<&CellResult> = cells
            .iter()
            .filter(|o| list.contains(&o.meta.index))
            .filter(|o| o.meta.settings.common().together.as_ref() == Some(list))
            .collect();
        match group.first().map(|c| c.meta.probe.as_str()) {
            Some("noise") => out.push_str(&crate::together_noise::group_tables(&group)),
            _ => out.push_str(&group_table(&group)),
        }
    }
    out
}

fn pooled(cell: &CellResult) -> Histogram {
    let mut h = Histogram::new();
    for m in cell
        .metrics
        .iter()
        .filter(|m| m.name == metric::TIMER_LATENCY)
    {
        h.merge(&m.histogram);
    }
    h
}

fn group_table(group: &[&CellResult]) -> String {
    let Some(first) = group.first() else {
        return String::new();
    };
    let q = |h: &Histogram, p: f64| h.quantile(p).unwrap_or(Nanos(0));
    let top = pooled(first);
    let mut t = Table::new(
        [
            "cell",
            "priority",
            "samples",
            "p50",
            "p99",
            "p99.9",
            "max",
            "p50 − first",
        ]
        .map(String::from)
        .to_vec(),
    );
    for c in group {
        let h = pooled(c);
        let behind = q(&h, 0.5).0 as i128 - q(&top, 0.5).0 as i128;
        let behind = match behind < 0 {
            true => format!("−{}", Nanos(behind.unsigned_abs() as u64)),
            false => format!("+{}", Nanos(behind as u64)),
        };
        t.row(vec![
            c.meta.index.to_string(),
            c.meta.settings.sched_label(),
            h.count().to_string(),
            q(&h, 0.5).to_string(),
            q(&h, 0.99).to_string(),
            q(&h, 0.999).to_string(),
            h.max().unwrap_or(Nanos(0)).to_string(),
            behind,
        ]);
    }
    format!(
        "\ntimer.latency of the priorities measured together (same expiries, workload {}; all measured CPUs pooled)\n{}",
        first.meta.workload,
        t.render()
    )
}
