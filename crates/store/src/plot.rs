//! A run's interval series whole ([`Store::load_run_intervals`], for the
//! HDR log), and what the report's "percentiles over time" plot reads
//! ([`Store::plot_intervals`]): each cell's
//! checkpoint intervals, the CPUs pooled, or, for a long monitor, its
//! minute windows over the same span.
//!
//! A monitor keeps its checkpoint intervals (one per `--persist`, 10 s)
//! for a day: 17,000 compressed histograms on two CPUs, which took half of
//! a 30-day monitor's report to inflate and merge, for a plot of 400
//! points. Where the intervals span at least 400 minutes, each point would
//! merge a minute or more of them anyway, and the minute windows the
//! monitor keeps for a week hold the same samples six times fewer and
//! uncompressed. They are read instead, from the first interval's minute
//! on, and the plot says so.

use latscope_model::{Nanos, RunId};
use latscope_record::{Interval, IntervalSeries};

use crate::{CellId, Span, Store};

impl Store {
    /// Interval series of every cell of run `id` (`(cell, its index)`, in
    /// order), for a plot of about `points` points; a cell whose intervals
    /// or windows cannot be read only lacks the plot.
    pub fn plot_intervals(
        &self,
        id: RunId,
        cells: &[(CellId, u32)],
        points: usize,
    ) -> Vec<IntervalSeries> {
        let mut out = Vec::new();
        for &(cell, index) in cells {
            let windows = match cells {
                [_] => minute_series(self, id, cell, index, points),
                _ => None,
            };
            match windows {
                Some(series) => out.extend(series),
                None => {
                    if let Ok(Some(series)) = self.load_intervals_pooled(cell, points) {
                        out.extend(series);
                    }
                }
            }
        }
        out
    }

    /// The checkpoint intervals kept for every cell of run `id`, in
    /// order (what an HdrHistogram interval log holds); `None` when none
    /// of its cells has them (a run stored before them, or imported).
    pub fn load_run_intervals(&self, id: RunId) -> crate::Result<Option<Vec<IntervalSeries>>> {
        let mut all = Vec::new();
        let mut any = false;
        for cell in self.cell_ids(id)? {
            if let Some(series) = self.load_intervals(cell)? {
                any = true;
                all.extend(series);
            }
        }
        Ok(any.then_some(all))
    }
}

/// The minute windows over the span of `cell`'s checkpoint intervals, as
/// interval series (CPUs pooled, as many minutes merged per point as keep
/// the plot at its number of points), when that span is long enough for
/// the plot to merge a minute per point; `None` otherwise (a run that is
/// not a monitor has no windows). A monitor's windows are per run, so only
/// a run of one cell (one epoch) reads them.
fn minute_series(
    store: &Store,
    id: RunId,
    cell: CellId,
    index: u32,
    points: usize,
) -> Option<Vec<IntervalSeries>> {
    let (names, start, start_unix) = store.interval_extent(cell).ok()??;
    let minute = Span::Minute.length().0;
    let since = Span::Minute.start_of(start_unix).0;
    let last = store.last_window_start(id, Span::Minute).ok()??.0;
    let points = points.max(1) as u64;
    let minutes = last.saturating_sub(since) / minute + 1;
    if minutes < points {
        return None;
    }
    let per_point = minutes.div_ceil(points);
    // Cell time of a window: its Unix start moved by the first interval's
    // offset between the two clocks.
    let offset = start_unix.0.saturating_sub(start.0);
    let mut out: Vec<IntervalSeries> = names
        .iter()
        .map(|name| IntervalSeries {
            cell: index,
            metric: name.clone(),
            cpu: None,
            intervals: Vec::new(),
            merged: per_point as usize,
            stored: 0,
            window: Some(Nanos(minute)),
        })
        .collect();
    // Per series, the start of the last minute counted in `stored`.
    let mut counted: Vec<Option<u64>> = vec![None; out.len()];
    store
        .visit_windows(id, Span::Minute, Nanos(since), |w| {
            let Some(k) = out.iter().position(|s| s.metric == w.metric) else {
                return;
            };
            let series = &mut out[k];
            if counted[k] != Some(w.start_unix.0) {
                counted[k] = Some(w.start_unix.0);
                series.stored += 1;
            }
            let point = (w.start_unix.0 - since) / (per_point * minute);
            let point_unix = since + point * per_point * minute;
            match series.intervals.last_mut() {
                Some(i) if i.start_unix.0 == point_unix => {
                    i.histogram.merge(&w.histogram);
                    i.end_unix = Nanos(i.end_unix.0.max(w.start_unix.0 + minute));
                    i.end = Nanos(i.end_unix.0.saturating_sub(offset));
                }
                _ => series.intervals.push(Interval {
                    start: Nanos(point_unix.saturating_sub(offset).max(start.0)),
                    end: Nanos((w.start_unix.0 + minute).saturating_sub(offset)),
                    start_unix: Nanos(point_unix),
                    end_unix: Nanos(w.start_unix.0 + minute),
                    histogram: w.histogram,
                }),
            }
        })
        .ok()?;
    out.retain(|s| !s.intervals.is_empty());
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{Checkpoint, Window};
    use latscope_model::{
        metric, Capabilities, CellMeta, CellSettings, CpuId, RunMeta, SystemInfo,
    };
    use latscope_record::{Histogram, MetricResult};

    const MINUTE: u64 = 60_000_000_000;
    /// Unix time of the first minute, and the cell's clock lagging it.
    const START: u64 = 1_800_000_000 * 1_000_000_000;
    const LAG: u64 = 7_000_000_000;
    /// The report's plot's number of points.
    const POINTS: usize = 400;

    fn minute(max: u64) -> Histogram {
        let mut h = Histogram::new();
        for i in 0..10 {
            h.record(5_000 + i);
        }
        h.record(max);
        h
    }

    /// `minutes` minutes of a monitor on CPUs 0 and 1: a window per CPU
    /// and a checkpoint a minute; minute 200's maximum 5 ms on CPU 1, every
    /// other 20 us.
    fn monitor(path: &std::path::Path, minutes: u64) -> (RunId, CellId) {
        let mut store = Store::open(path).unwrap();
        let meta = RunMeta {
            pid: 1,
            ..RunMeta::new(RunId(0), Nanos(START))
        };
        let run = store
            .create_run(&meta, &SystemInfo::default(), &Capabilities::default())
            .unwrap();
        let cell_meta = CellMeta {
            monotonic_start_ns: Nanos(1),
            ..CellMeta::new(
                0,
                "none",
                CellSettings::default_for("timer").unwrap(),
                Nanos(minutes * MINUTE),
            )
        };
        let cell = store.add_cell(run, &cell_meta).unwrap();
        let mut cumulative: Vec<MetricResult> = (0..2)
            .map(|c| MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(c))))
            .collect();
        for m in 0..minutes {
            for (cpu, c) in cumulative.iter_mut().enumerate() {
                let h = minute(if (m, cpu) == (200, 1) {
                    5_000_000
                } else {
                    20_000
                });
                c.histogram.merge(&h);
                let w = Window {
                    span: Span::Minute,
                    start_unix: Nanos(START + m * MINUTE),
                    metric: metric::TIMER_LATENCY.into(),
                    cpu: Some(CpuId(cpu as u32)),
                    histogram: h,
                };
                store.put_window(run, &w).unwrap();
            }
            let cp = Checkpoint {
                duration: Nanos((m + 1) * MINUTE - LAG),
                now_unix: Nanos(START + (m + 1) * MINUTE),
                metrics: cumulative.clone(),
                ..Default::default()
            };
            store.write_checkpoint(run, cell, &cp).unwrap();
        }
        (run, cell)
    }

    #[test]
    fn a_long_monitor_is_read_from_its_minute_windows_two_minutes_a_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let (run, cell) = monitor(&path, 420);
        let store = Store::open_existing(&path).unwrap();
        let series = store.plot_intervals(run, &[(cell, 0)], POINTS);
        assert_eq!(series.len(), 1);
        let s = &series[0];
        assert_eq!(
            (s.cpu, s.window, s.merged, s.stored),
            (None, Some(Nanos(MINUTE)), 2, 420)
        );
        assert_eq!(s.intervals.len(), 210);
        for (k, i) in s.intervals.iter().enumerate() {
            let k = k as u64;
            assert_eq!(i.start_unix, Nanos(START + 2 * k * MINUTE));
            assert_eq!(i.end_unix, Nanos(START + (2 * k + 2) * MINUTE));
            // On the cell's clock (the first interval's offset), never
            // before the first interval.
            assert_eq!(i.end, Nanos((2 * k + 2) * MINUTE - LAG));
            assert_eq!(i.start, Nanos((2 * k * MINUTE).saturating_sub(LAG)));
            assert_eq!(i.histogram.count(), 2 * 2 * 11);
            let max = if k == 100 { 5_000_000 } else { 20_000 };
            assert_eq!(i.histogram.max(), Some(Nanos(max)), "point {k}");
        }
        // A shorter monitor keeps its checkpoint intervals.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short.db");
        let (run, cell) = monitor(&path, 300);
        let store = Store::open_existing(&path).unwrap();
        let series = store.plot_intervals(run, &[(cell, 0)], POINTS);
        assert_eq!(series[0].window, None);
        assert_eq!(series[0].stored, 300);
    }
}
