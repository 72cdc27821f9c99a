//! Jones & Regehr's Tables 1-3: the times between the callbacks of a 1 ms
//! periodic timer, their statistics and their histogram in 100 µs bins;
//! here `timer.interval` of a periodic timer (timerfd) every 1 ms, one
//! column per measured CPU.

use latscope_model::metric;
use latscope_stats::Histogram;
use latscope_studies::{Study, Table};

use crate::figures::RunFigures;
use crate::paired::{in_unit, Measured, PairedRow, PairedTable, MISSING};

const BIN_NS: u64 = 100_000;

pub(crate) fn pair(study: &Study, f: &RunFigures) -> Vec<PairedTable> {
    let per_cpu: Vec<(String, &Histogram)> = f
        .cell(0)
        .map(|c| {
            let mut v: Vec<(Option<u32>, &Histogram)> = c
                .metrics
                .iter()
                .filter(|m| m.name == metric::TIMER_INTERVAL && !m.histogram.is_empty())
                .map(|m| (m.cpu, &m.histogram))
                .collect();
            v.sort_by_key(|(cpu, _)| *cpu);
            v.into_iter()
                .map(|(cpu, h)| (cpu.map_or("all CPUs".into(), |c| format!("cpu {c}")), h))
                .collect()
        })
        .unwrap_or_default();
    let columns: Vec<String> = per_cpu.iter().map(|(c, _)| c.clone()).collect();
    let hists: Vec<&Histogram> = per_cpu.iter().map(|(_, h)| *h).collect();
    study
        .tables
        .iter()
        .map(|table| {
            let mut t = match table.number.as_str() {
                "1" => statistics(table, &hists),
                _ => histogram(table, &hists),
            };
            t.measured_columns = columns.clone();
            t.notes.push("This machine: timer.interval, the time between consecutive wake-ups of a periodic timer (timerfd, FIFO 95) every 1 ms, one column per CPU measured.".to_string());
            if table.number == "3" {
                t.notes.push("The same measured histogram as Table 2: Linux's periodic timers have no rounding of the next expiry like the one the authors fixed.".to_string());
            }
            t
        })
        .collect()
}

fn statistics(table: &Table, hists: &[&Histogram]) -> PairedTable {
    let mut t = PairedTable::from_published(table, "µs", "");
    let stat = |h: &Histogram, row: usize| -> Option<String> {
        let ns = match row {
            0 => h.min()?.0,
            1 => h.max()?.0,
            2 => h.mean()?.0,
            _ => h.stddev()?.round() as u64,
        };
        Some(in_unit(ns, "µs"))
    };
    for row in 0..t.rows.len() {
        let cells = hists
            .iter()
            .map(|h| stat(h, row).unwrap_or_else(|| MISSING.to_string()))
            .collect();
        t.set(row, metric::TIMER_INTERVAL, Measured::Figures(cells));
    }
    t
}

/// `"900-1000 µs"` → the bin's start in ns.
fn bin_start(label: &str) -> Option<u64> {
    let (lo, _) = label.split_once('-')?;
    Some(lo.trim().parse::<u64>().ok()? * 1000)
}

fn histogram(table: &Table, hists: &[&Histogram]) -> PairedTable {
    let mut t = PairedTable::from_published(table, "callbacks", "");
    let counts: Vec<std::collections::BTreeMap<u64, u64>> = hists
        .iter()
        .map(|h| {
            let mut bins = std::collections::BTreeMap::new();
            // A bucket (about 0.1 % wide) that straddles a bin's edge
            // counts in the bin of its upper end.
            for (_, high, count) in h.buckets() {
                *bins.entry(high / BIN_NS * BIN_NS).or_insert(0) += count;
            }
            bins
        })
        .collect();
    let count_at = |start: u64| -> Vec<String> {
        counts
            .iter()
            .map(|bins| bins.get(&start).map(u64::to_string).unwrap_or_default())
            .collect()
    };
    let mut rows: Vec<(u64, PairedRow)> = Vec::new();
    for row in std::mem::take(&mut t.rows) {
        let start = bin_start(&row.label).unwrap_or(u64::MAX);
        let mut row = row;
        row.latscope = "timer.interval".to_string();
        row.measured = Measured::Figures(count_at(start));
        rows.push((start, row));
    }
    let published: Vec<u64> = rows.iter().map(|(s, _)| *s).collect();
    let mut extra: Vec<u64> = counts.iter().flat_map(|b| b.keys().copied()).collect();
    extra.sort_unstable();
    extra.dedup();
    for start in extra.into_iter().filter(|s| !published.contains(s)) {
        let us = start / 1000;
        rows.push((
            start,
            PairedRow {
                label: format!("{us}-{} µs (no row in the paper)", us + 100),
                latscope: "timer.interval".to_string(),
                published: vec![String::new(); t.published_columns.len()],
                measured: Measured::Figures(count_at(start)),
            },
        ));
    }
    rows.sort_by_key(|(s, _)| *s);
    t.rows = rows.into_iter().map(|(_, r)| r).collect();
    t.measured_unit = "callbacks (wake-ups)".to_string();
    t
}

#[cfg(test)]
mod tests {
    #[test]
    fn bins_read_with_or_without_a_space() {
        assert_eq!(super::bin_start("900-1000 µs"), Some(900_000));
        assert_eq!(super::bin_start("0-100µs"), Some(0));
        assert_eq!(super::bin_start("Total"), None);
    }
}
