//! The suite's summary matrix, after Table 15 of Cota-Robles & Held: one
//! row per probe metric and setting, one column per workload, each entry
//! the worst case with the 99.9th percentile beside it, pooled over the
//! measured CPUs.

use std::collections::BTreeMap;

use latscope_model::{metric, Nanos};
use latscope_stats::{CellResult, Histogram, RunResult};

use crate::table::Table;

/// The row a cell's metric belongs to: "timer.latency · fifo 95".
fn row_key(cell: &CellResult, metric_name: &str) -> String {
    format!("{metric_name} · {}", cell.meta.settings.sched_label())
}

/// The metrics each probe contributes to the matrix.
fn matrix_metrics(probe: &str) -> &'static [&'static str] {
    match probe {
        "timer" => &[metric::TIMER_LATENCY],
        "noise" => &[metric::NOISE_GAP],
        // The study's UDP rows: receive and send stack latency, and the
        // whole one-way path.
        "udp" => &[metric::UDP_RECV, metric::UDP_SEND, metric::UDP_PATH],
        _ => &[],
    }
}

/// What `suite` prints at its end: the run's header, the matrix, the
/// workload table (when there is one) and the command that shows every
/// cell's tables (`store` as the user should type it, without a password).
pub fn suite_summary(run: &RunResult, store: &str) -> String {
    let mut out = crate::text::run_header(run);
    out.push_str(&suite_matrix(&run.cells));
    let workloads = crate::workload::workload_table(run);
    if !workloads.is_empty() {
        out.push('\n');
        out.push_str(&workloads);
    }
    out.push_str(&format!(
        "\nEvery cell's tables: latscope show {} --store {store}\n",
        run.meta.id
    ));
    out
}

/// Worst case (p99.9) per probe metric and workload; then, for noise cells,
/// the noise share per workload. Empty when the run has no cells.
pub fn suite_matrix(cells: &[CellResult]) -> String {
    let mut workloads: Vec<String> = Vec::new();
    for c in cells {
        if !workloads.contains(&c.meta.workload) {
            workloads.push(c.meta.workload.clone());
        }
    }
    if workloads.is_empty() {
        return String::new();
    }
    // row -> workload -> pooled histogram
    let mut rows: BTreeMap<String, BTreeMap<String, Histogram>> = BTreeMap::new();
    let mut noise_rows: BTreeMap<String, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    for c in cells {
        for name in matrix_metrics(&c.meta.probe) {
            let mut pooled = Histogram::new();
            for m in c.metrics.iter().filter(|m| m.name == *name) {
                pooled.merge(&m.histogram);
            }
            if pooled.is_empty() {
                continue;
            }
            rows.entry(row_key(c, name))
                .or_default()
                .entry(c.meta.workload.clone())
                .or_default()
                .merge(&pooled);
        }
        if !c.noise.is_empty() {
            let e = noise_rows
                .entry(row_key(c, "noise %"))
                .or_default()
                .entry(c.meta.workload.clone())
                .or_default();
            for n in &c.noise {
                e.0 += n.noise_ns.0;
                e.1 += n.active_ns.0;
            }
        }
    }
    let mut header = vec!["max (p99.9)".to_string()];
    header.extend(workloads.iter().cloned());
    let mut t = Table::new(header);
    for (row, by_workload) in &rows {
        let mut cells = vec![row.clone()];
        for w in &workloads {
            cells.push(match by_workload.get(w) {
                Some(h) => format!(
                    "{} ({})",
                    h.max().unwrap_or(Nanos(0)),
                    h.quantile(0.999).unwrap_or(Nanos(0))
                ),
                None => "-".to_string(),
            });
        }
        t.row(cells);
    }
    for (row, by_workload) in &noise_rows {
        let mut cells = vec![row.clone()];
        for w in &workloads {
            cells.push(match by_workload.get(w) {
                Some((noise, active)) if *active > 0 => {
                    format!("{:.3}%", 100.0 * *noise as f64 / *active as f64)
                }
                _ => "-".to_string(),
            });
        }
        t.row(cells);
    }
    if t.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nsuite: worst case per workload, 99.9th percentile in brackets (all measured CPUs pooled)\n",
    );
    out.push_str(&t.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CellMeta, CellSettings, CpuId, Policy};
    use latscope_stats::MetricResult;

    fn cell(probe: &str, workload: &str, values: &[u64]) -> CellResult {
        // FIFO 95 is what settings without a policy and priority read as.
        let Some(mut settings) = CellSettings::default_for(probe) else {
            panic!("no probe {probe}")
        };
        settings.common_mut().policy = Policy::Fifo;
        settings.common_mut().priority = 95;
        let name = if probe == "timer" {
            metric::TIMER_LATENCY
        } else {
            metric::NOISE_GAP
        };
        let mut m = MetricResult::new(name, Some(CpuId(0)));
        for v in values {
            m.histogram.record(*v);
        }
        CellResult::new(
            CellMeta::new(0, workload, settings, Nanos::from_secs(1)),
            vec![m],
        )
    }

    #[test]
    fn one_row_per_metric_and_setting_one_column_per_workload() {
        let cells = vec![
            cell("timer", "idle", &[10_000, 20_000]),
            cell("timer", "cpu", &[10_000, 900_000]),
            cell("noise", "idle", &[100]),
        ];
        let text = suite_matrix(&cells);
        assert!(text.contains("max (p99.9)"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let timer = lines
            .iter()
            .find(|l| l.starts_with("timer.latency · fifo 95"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(timer.contains("20.0µs"), "{timer}");
        assert!(timer.contains("900µs"), "{timer}");
        let noise = lines
            .iter()
            .find(|l| l.starts_with("noise.gap · fifo 95"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            noise.trim_end().ends_with('-'),
            "no noise cell under cpu: {noise}"
        );
    }
}
