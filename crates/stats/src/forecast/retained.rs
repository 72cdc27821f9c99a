//! The part of a cell from one of its checkpoints on: what the tail model
//! of a long monitor is fitted to.
//!
//! A monitor that ran for a month keeps its per-second timeline for the
//! last day only (`retain_seconds`), but its cumulative histograms cover
//! the month. The model's checks (extremal index, independence,
//! stationarity, the out-of-sample test) read the timeline, and they are
//! only right when the timeline and the histogram describe the same
//! seconds: a month of deleted seconds read as empty ones made the
//! extremal index 0.03 and the hours "observed" from the timeline
//! 0 ns. So the model is fitted to the part of the cell from the first
//! stored checkpoint at or after the oldest retained second: its histogram
//! is the difference of two cumulative ones (exact in every bucket), its
//! checkpoints are rebased to start there, and the worst cases the whole
//! month *observed* come from the monitor's hour windows instead
//! ([`crate::blocks`]). Reading one day instead of thirty is also what
//! keeps `latscope forecast` of a month-long monitor fast and small.

use latscope_model::Nanos;

use crate::{CellResult, MetricResult};

use super::report::{is_forecast_metric, CellSnapshot, FORECAST_METRICS};

/// A cell cut to its part from a checkpoint on.
#[derive(Clone, Debug, PartialEq)]
pub struct CellPart {
    /// The cell with the forecast metrics' histograms of the part only
    /// (per wake-up: the per-deadline histograms are not kept at
    /// checkpoints, so the part has none) and the part's duration.
    pub cell: CellResult,
    /// The checkpoints after the cut, rebased: times from the cut,
    /// histograms since it.
    pub snapshots: Vec<CellSnapshot>,
    /// Cell time of the cut.
    pub from: Nanos,
}

/// `cell` from its first checkpoint at or after cell second `from_second`
/// on, or `None` when no such checkpoint holds every forecast metric of
/// the cell (then the cell cannot be cut exactly).
pub fn cell_since(
    cell: &CellResult,
    snapshots: &[CellSnapshot],
    from_second: u64,
) -> Option<CellPart> {
    let from = Nanos::from_secs(from_second);
    let mut own: Vec<&CellSnapshot> = snapshots
        .iter()
        .filter(|s| s.cell == cell.meta.index && s.at < cell.meta.duration_ns)
        .collect();
    own.sort_by_key(|s| s.at);
    let base_index = own.iter().position(|s| s.at >= from)?;
    let base = own[base_index];
    let metrics = since(&cell.metrics, base)?;
    let mut snapshots_after = Vec::new();
    for s in &own[base_index + 1..] {
        snapshots_after.push(CellSnapshot {
            cell: s.cell,
            at: Nanos(s.at.0 - base.at.0),
            metrics: since(&s.metrics, base)?,
        });
    }
    let mut part = cell.clone();
    part.metrics = metrics;
    part.meta.duration_ns = Nanos(cell.meta.duration_ns.0 - base.at.0);
    Some(CellPart {
        cell: part,
        snapshots: snapshots_after,
        from: base.at,
    })
}

/// The forecast metrics of `metrics` since checkpoint `base`, or `None`
/// when `base` lacks one of the probes' metrics or is not an earlier state
/// of it. An interrupt-level metric the checkpoint lacks (a vector first
/// raised after it) is left out of the part: it cannot be cut exactly.
fn since(metrics: &[MetricResult], base: &CellSnapshot) -> Option<Vec<MetricResult>> {
    let mut out = Vec::new();
    for m in metrics.iter().filter(|m| is_forecast_metric(&m.name)) {
        let part = base
            .metrics
            .iter()
            .find(|b| b.name == m.name && b.cpu == m.cpu)
            .and_then(|earlier| m.histogram.since(&earlier.histogram));
        match part {
            Some(histogram) => out.push(MetricResult {
                histogram,
                corrected: None,
                ..m.clone()
            }),
            None if FORECAST_METRICS.contains(&m.name.as_str()) => return None,
            None => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::Histogram;
    use latscope_model::{metric, CpuId};

    fn metric_with(values: &[u64]) -> MetricResult {
        let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(0)));
        for &v in values {
            m.histogram.record(v);
        }
        m
    }

    fn cell_of(duration: Nanos, metrics: Vec<MetricResult>) -> CellResult {
        CellResult::new(
            latscope_model::CellMeta {
                index: 0,
                probe: "timer".into(),
                workload: "none".into(),
                settings: latscope_model::CellSettings::default_for("timer").unwrap(),
                duration_ns: duration,
                monotonic_start_ns: Nanos(0),
            },
            metrics,
        )
    }

    fn snapshot(at_s: u64, values: &[u64]) -> CellSnapshot {
        CellSnapshot {
            cell: 0,
            at: Nanos::from_secs(at_s),
            metrics: vec![metric_with(values)],
        }
    }

    #[test]
    fn the_part_holds_only_what_came_after_the_checkpoint() {
        let mut cell = cell_of(
            Nanos::from_secs(300),
            vec![metric_with(&[10, 20, 30, 40, 50_000])],
        );
        cell.metrics[0].corrected = Some(Histogram::new());
        let snaps = [snapshot(100, &[10]), snapshot(200, &[10, 20, 30])];
        let part = cell_since(&cell, &snaps, 150).unwrap();
        assert_eq!(part.from, Nanos::from_secs(200));
        assert_eq!(part.cell.meta.duration_ns, Nanos::from_secs(100));
        assert_eq!(part.cell.metrics[0].histogram.count(), 2);
        assert_eq!(part.cell.metrics[0].histogram.max(), Some(Nanos(50_000)));
        assert!(part.cell.metrics[0].corrected.is_none());
        assert!(part.snapshots.is_empty());
        let whole = cell_since(&cell, &snaps, 0).unwrap();
        assert_eq!(whole.cell.metrics[0].histogram.count(), 4);
        assert_eq!(whole.snapshots.len(), 1);
        assert_eq!(whole.snapshots[0].at, Nanos::from_secs(100));
        assert_eq!(whole.snapshots[0].metrics[0].histogram.count(), 2);
        assert!(
            cell_since(&cell, &snaps, 250).is_none(),
            "no checkpoint after"
        );
    }

    #[test]
    fn an_interrupt_metric_the_checkpoint_lacks_is_left_out_a_probe_metric_is_not() {
        let mut irq = metric_with(&[5, 6, 7]);
        irq.name = metric::TIMER_IRQ.into();
        let mut softirq = metric_with(&[8, 9]);
        softirq.name = "softirq.delay.TIMER".into();
        softirq.cpu = None;
        let cell = cell_of(
            Nanos::from_secs(300),
            vec![metric_with(&[10, 20, 30]), irq.clone(), softirq],
        );
        let mut base = snapshot(100, &[10]);
        let mut early_irq = metric_with(&[5]);
        early_irq.name = metric::TIMER_IRQ.into();
        base.metrics.push(early_irq);
        let part = cell_since(&cell, &[base], 50).unwrap();
        let names: Vec<&str> = part.cell.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec![metric::TIMER_LATENCY, metric::TIMER_IRQ]);
        assert_eq!(part.cell.metrics[1].histogram.count(), 2);
        // Without the thread's own histogram at the checkpoint, no part.
        let only_irq = CellSnapshot {
            cell: 0,
            at: Nanos::from_secs(100),
            metrics: vec![irq],
        };
        assert!(cell_since(&cell, &[only_irq], 50).is_none());
    }
}
