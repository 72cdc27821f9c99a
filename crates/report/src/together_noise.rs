//! Noise threads measured together (`run --probe noise --priorities
//! rr:50,rr:50`), side by side as Bernadat's Table 6 sets two instances of
//! his preemption test: per thread the time it ran (its active time less
//! its preemptions), its preemptions (the
//! `noise.gap` interruptions), how many were of 10 ms or more (a quantum,
//! RT throttling, a thread of the same priority), the longest, and the
//! round-robin quantum the kernel reported; then the preemption lengths in
//! the study's power-of-two bins, one column per thread.

use latscope_model::{metric, Nanos};
use latscope_stats::{CellResult, Histogram};

use crate::table::Table;

/// Preemptions at least this long are counted apart: no interrupt or
/// kernel thread takes the CPU that long; another thread's quantum, RT
/// throttling or a thread at the same FIFO priority does.
const LONG_NS: u64 = 10_000_000;

fn pooled(cell: &CellResult) -> Histogram {
    let mut h = Histogram::new();
    for m in cell.metrics.iter().filter(|m| m.name == metric::NOISE_GAP) {
        h.merge(&m.histogram);
    }
    h
}

/// The tables of one group of noise cells.
pub(crate) fn group_tables(group: &[&CellResult]) -> String {
    let Some(first) = group.first() else {
        return String::new();
    };
    let hists: Vec<Histogram> = group.iter().map(|c| pooled(c)).collect();
    let mut t = Table::new(
        [
            "cell",
            "priority",
            "quantum",
            "ran",
            "preemptions",
            "≥ 10ms",
            "longest",
        ]
        .map(String::from)
        .to_vec(),
    );
    for (c, h) in group.iter().zip(&hists) {
        let active: u64 = c.noise.iter().map(|n| n.active_ns.0).sum();
        let ran: u64 = c
            .noise
            .iter()
            .map(|n| n.active_ns.0.saturating_sub(n.noise_ns.0))
            .sum();
        let quantum = c.meta.settings.common().rr_interval_ns;
        t.row(vec![
            c.meta.index.to_string(),
            c.meta.settings.sched_label(),
            quantum.map_or_else(|| "-".to_string(), |q| q.to_string()),
            match active {
                0 => "never ran".to_string(),
                _ => Nanos(ran).to_string(),
            },
            h.count().to_string(),
            h.count_above(LONG_NS - 1).to_string(),
            h.max().map_or_else(|| "-".to_string(), |m| m.to_string()),
        ]);
    }
    format!(
        "\nnoise.gap of the threads measured together (same CPUs from the same instant, workload {}; all measured CPUs pooled)\n{}\npreemption lengths (µs), occurrences, in Bernadat's Table 6 bins\n{}",
        first.meta.workload,
        t.render(),
        bins_table(group, &hists)
    )
}

/// Rows of power-of-two microsecond bins (1-2, 2-4, ... µs) up to the
/// longest preemption of the group, one column per cell. Each bin's low
/// end minus 1 ns ends a histogram bucket, so the counts are exact.
fn bins_table(group: &[&CellResult], hists: &[Histogram]) -> String {
    let longest = hists
        .iter()
        .filter_map(Histogram::max)
        .max()
        .unwrap_or(Nanos(0));
    let mut header = vec!["µs".to_string()];
    header.extend(
        group
            .iter()
            .map(|c| format!("{} {}", c.meta.index, c.meta.settings.sched_label())),
    );
    let mut t = Table::new(header);
    let above = |h: &Histogram, us: u64| h.count_above((us * 1_000).saturating_sub(1));
    let mut below = vec!["< 1".to_string()];
    below.extend(hists.iter().map(|h| (h.count() - above(h, 1)).to_string()));
    t.row(below);
    let mut low = 1u64;
    while low * 1_000 <= longest.0.max(1_000) {
        let mut row = vec![format!("{low} - {}", low * 2)];
        row.extend(
            hists
                .iter()
                .map(|h| (above(h, low) - above(h, low * 2)).to_string()),
        );
        t.row(row);
        low *= 2;
    }
    t.render()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use latscope_model::{CellMeta, CellSettings, CpuId, NoiseClock, NoiseCpuStats, NoiseSettings};
    use latscope_stats::MetricResult;

    fn cell(index: u32, instance: Option<u32>, gaps: &[u64], active_ns: u64) -> CellResult {
        let mut settings = CellSettings::Noise(NoiseSettings::default());
        let c = settings.common_mut();
        c.policy = latscope_model::Policy::Rr;
        c.priority = 50;
        c.instance = instance;
        c.rr_interval_ns = Some(Nanos::from_millis(100));
        c.together = Some(vec![0, 1]);
        let mut h = Histogram::new();
        for &g in gaps {
            h.record(g);
        }
        let meta = CellMeta {
            index,
            probe: "noise".into(),
            workload: "none".into(),
            settings,
            duration_ns: Nanos::from_secs(1),
            monotonic_start_ns: Nanos(0),
        };
        let m = MetricResult {
            histogram: h,
            ..MetricResult::new(metric::NOISE_GAP, Some(CpuId(1)))
        };
        CellResult {
            noise: vec![NoiseCpuStats {
                cpu: CpuId(1),
                clock: NoiseClock::Tsc,
                tsc_hz: 0,
                calibration_drift_ppb: 0,
                active_ns: Nanos(active_ns),
                iterations: 0,
                base_iteration_ps: 0,
                gap_threshold_ns: Nanos(0),
                interruptions: gaps.len() as u64,
                noise_ns: Nanos(gaps.iter().sum()),
                max_gap_ns: Nanos(gaps.iter().copied().max().unwrap_or(0)),
                classes: Default::default(),
                steal_ns: None,
                findings: Vec::new(),
            }],
            ..CellResult::new(meta, vec![m])
        }
    }

    #[test]
    fn the_threads_of_a_shared_priority_are_told_apart_and_binned_like_table_6() {
        let a = cell(
            0,
            None,
            &[1_500, 3_000, 100_000_000, 101_000_000],
            500_000_000,
        );
        let b = cell(1, Some(2), &[], 0);
        let out = group_tables(&[&a, &b]);
        assert!(out.contains("rr 50 #2"), "{out}");
        assert!(out.contains("never ran"), "{out}");
        let line = |start: &str| {
            out.lines()
                .find(|l| l.trim_start().starts_with(start))
                .unwrap_or_else(|| panic!("no '{start}' row in {out}"))
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        // 1.5 µs in 1-2, 3 µs in 2-4, both 100 ms gaps in 65536-131072.
        assert_eq!(line("1 - 2")[3..], ["1", "0"]);
        assert_eq!(line("2 - 4")[3..], ["1", "0"]);
        assert_eq!(line("65536 - 131072")[3..], ["2", "0"]);
        // The summary row of cell 0: 4 preemptions, 2 of 10 ms or more.
        let row = line("0 ");
        assert!(
            row.contains(&"4".to_string()) && row.contains(&"2".to_string()),
            "{row:?}"
        );
    }
}
