//! Checkpoint intervals: what one metric on one CPU recorded between two
//! consecutive stored checkpoints of a cell, as the store keeps it for the
//! HdrHistogram interval log and the percentiles over time of the report.

use latscope_model::{CpuId, Nanos};

use crate::histogram::Histogram;

/// The samples of one metric on one CPU between two checkpoints. `start`
/// and `end` are the cell's measured time (from its first sample's time
/// zero), `start_unix` and `end_unix` the wall clock (the first interval's
/// start is its end less its length; the later ones start at the
/// checkpoint before).
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    pub start: Nanos,
    pub end: Nanos,
    pub start_unix: Nanos,
    pub end_unix: Nanos,
    pub histogram: Histogram,
}

impl Interval {
    /// The interval's length in the cell's measured time.
    pub fn length(&self) -> Nanos {
        Nanos(self.end.0.saturating_sub(self.start.0))
    }

    /// The interval's median, p99, p99.9 and maximum.
    pub fn percentiles(&self) -> IntervalPercentiles {
        let h = &self.histogram;
        IntervalPercentiles {
            start: self.start,
            end: self.end,
            samples: h.count(),
            p50: h.quantile(0.5),
            p99: h.quantile(0.99),
            p999: h.quantile(0.999),
            max: h.max(),
        }
    }
}

/// The checkpoint intervals of one metric on one CPU of one cell, in time
/// order.
#[derive(Clone, Debug, PartialEq)]
pub struct IntervalSeries {
    /// The cell's index in the run.
    pub cell: u32,
    pub metric: String,
    /// `None` for a system-wide metric.
    pub cpu: Option<CpuId>,
    pub intervals: Vec<Interval>,
    /// Checkpoint intervals merged into each of `intervals`: 1 as stored;
    /// more when the series was read coarsened for a plot (the last may
    /// hold fewer).
    pub merged: usize,
    /// Checkpoint intervals the store holds for the series.
    pub stored: usize,
    /// `Some(length)` when the intervals are fixed windows of that length
    /// (a monitor's minute windows, read instead of its checkpoint
    /// intervals for a long plot), `None` for checkpoint intervals.
    pub window: Option<Nanos>,
}

impl IntervalSeries {
    /// The samples of every interval together.
    pub fn total(&self) -> Histogram {
        let mut all = Histogram::new();
        for i in &self.intervals {
            all.merge(&i.histogram);
        }
        all
    }
}

/// One interval's figures for a table or a plot over time: p50, p99 and
/// p99.9 within the histogram's 0.1 %; the maximum exact when it is the
/// largest sample of the cell so far, else its bucket's upper bound (an
/// interval is the difference of two cumulative histograms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalPercentiles {
    pub start: Nanos,
    pub end: Nanos,
    pub samples: u64,
    pub p50: Option<Nanos>,
    pub p99: Option<Nanos>,
    pub p999: Option<Nanos>,
    pub max: Option<Nanos>,
}

/// The intervals of several series of one cell (its CPUs) merged interval
/// by interval: the series of a cell share their checkpoints, so intervals
/// with the same bounds are the same stretch of time. Intervals only some
/// series have are kept as they are; the result is in time order.
pub fn pooled(series: &[&IntervalSeries]) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for s in series {
        for i in &s.intervals {
            match out
                .iter_mut()
                .find(|o| o.start == i.start && o.end == i.end)
            {
                Some(o) => {
                    o.histogram.merge(&i.histogram);
                    o.start_unix = o.start_unix.min(i.start_unix);
                    o.end_unix = o.end_unix.max(i.end_unix);
                }
                None => out.push(i.clone()),
            }
        }
    }
    out.sort_by_key(|i| (i.end, i.start));
    out
}

/// At most `max` intervals: consecutive groups of `group` intervals merged
/// (the first group's start, the last one's end), `group` the smallest
/// that fits; returns the intervals and `group`. For a plot of a run with
/// more checkpoints than points.
pub fn coarsen(intervals: &[Interval], max: usize) -> (Vec<Interval>, usize) {
    let group = intervals.len().div_ceil(max.max(1)).max(1);
    if group == 1 {
        return (intervals.to_vec(), 1);
    }
    let merged = intervals
        .chunks(group)
        .filter_map(|chunk| {
            let (first, last) = (chunk.first()?, chunk.last()?);
            let mut histogram = Histogram::new();
            for i in chunk {
                histogram.merge(&i.histogram);
            }
            Some(Interval {
                start: first.start,
                end: last.end,
                start_unix: first.start_unix,
                end_unix: last.end_unix,
                histogram,
            })
        })
        .collect();
    (merged, group)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start_s: u64, end_s: u64, values: &[u64]) -> Interval {
        let mut h = Histogram::new();
        for &v in values {
            h.record(v);
        }
        Interval {
            start: Nanos::from_secs(start_s),
            end: Nanos::from_secs(end_s),
            start_unix: Nanos::from_secs(1_000 + start_s),
            end_unix: Nanos::from_secs(1_000 + end_s),
            histogram: h,
        }
    }

    fn series(cpu: u32, intervals: Vec<Interval>) -> IntervalSeries {
        IntervalSeries {
            cell: 0,
            metric: "timer.latency".into(),
            cpu: Some(CpuId(cpu)),
            stored: intervals.len(),
            intervals,
            merged: 1,
            window: None,
        }
    }

    #[test]
    fn percentiles_of_an_interval() {
        let values: Vec<u64> = (1..=1000).collect();
        let p = interval(0, 1, &values).percentiles();
        assert_eq!(p.samples, 1000);
        assert_eq!(p.p50, Some(Nanos(500)));
        assert_eq!(p.p99, Some(Nanos(990)));
        assert_eq!(p.p999, Some(Nanos(999)));
        assert_eq!(p.max, Some(Nanos(1000)));
        let empty = interval(1, 2, &[]).percentiles();
        assert_eq!((empty.samples, empty.p50, empty.max), (0, None, None));
    }

    #[test]
    fn pooling_merges_the_same_stretch_of_time() {
        let a = series(0, vec![interval(0, 1, &[10, 20]), interval(1, 2, &[30])]);
        let b = series(
            1,
            vec![
                interval(0, 1, &[5]),
                interval(1, 2, &[]),
                interval(2, 3, &[7]),
            ],
        );
        let p = pooled(&[&a, &b]);
        let counts: Vec<u64> = p.iter().map(|i| i.histogram.count()).collect();
        assert_eq!(counts, vec![3, 1, 1]);
        assert_eq!(p[0].histogram.max(), Some(Nanos(20)));
        assert_eq!(p[2].end, Nanos::from_secs(3));
        assert_eq!(a.total().count() + b.total().count(), 5);
    }

    #[test]
    fn coarsening_merges_consecutive_intervals() {
        let all: Vec<Interval> = (0..10).map(|k| interval(k, k + 1, &[k + 1])).collect();
        let (same, group) = coarsen(&all, 10);
        assert_eq!((same.len(), group), (10, 1));
        let (fewer, group) = coarsen(&all, 4);
        assert_eq!(group, 3);
        let bounds: Vec<(u64, u64, u64)> = fewer
            .iter()
            .map(|i| {
                (
                    i.start.0 / 1_000_000_000,
                    i.end.0 / 1_000_000_000,
                    i.histogram.count(),
                )
            })
            .collect();
        assert_eq!(bounds, vec![(0, 3, 3), (3, 6, 3), (6, 9, 3), (9, 10, 1)]);
        assert_eq!(fewer[1].histogram.max(), Some(Nanos(6)));
    }
}
