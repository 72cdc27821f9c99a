//! Rolling windows in constant memory: per metric and CPU, the histogram of
//! everything since the daemon started (what `/metrics` serves), of the
//! current minute and of the current hour (what the store keeps).
//!
//! The engine hands the monitor cumulative histograms at each checkpoint
//! (every persistence interval, 10 s by default). The difference from the
//! previous checkpoint ([`Histogram::since`], exact bucket by bucket) is
//! added to the window that holds the checkpoint's time, so a window's
//! edges are accurate to one persistence interval; a minute holds six
//! checkpoints' samples at the default.
//!
//! Memory is one histogram per metric and CPU for each of the three spans,
//! plus the last cumulative histogram of the current epoch: fixed by the
//! number of metrics and CPUs, not by how long the monitor runs. A new
//! epoch (SIGHUP with new settings starts a new cell) forgets the previous
//! one's cumulative histograms; its totals stay in the running sums.

use std::collections::BTreeMap;

use latscope_model::{CpuId, Nanos};
use latscope_record::{Histogram, MetricResult};
use latscope_store::{Span, Window};

/// A metric on a CPU (`None`: system-wide).
pub type SeriesKey = (String, Option<CpuId>);

/// What the monitor keeps of one metric on one CPU.
#[derive(Clone, Debug)]
pub struct Series {
    /// Every sample since the daemon started, across epochs.
    pub total: Histogram,
    /// Overruns (wake-ups past the next deadline) since the daemon started.
    pub overruns: u64,
    /// The current minute: its start and histogram.
    pub minute: (Nanos, Histogram),
    /// The current hour.
    pub hour: (Nanos, Histogram),
}

impl Series {
    fn new(now: Nanos) -> Series {
        Series {
            total: Histogram::new(),
            overruns: 0,
            minute: (Span::Minute.start_of(now), Histogram::new()),
            hour: (Span::Hour.start_of(now), Histogram::new()),
        }
    }
}

/// The windows of every series.
#[derive(Debug, Default)]
pub struct Windows {
    series: BTreeMap<SeriesKey, Series>,
    /// The current epoch and, per series, its last cumulative histogram and
    /// overrun count.
    epoch: Option<u32>,
    last: BTreeMap<SeriesKey, (Histogram, u64)>,
}

/// Adds `delta` to the window of `span` that holds `now`, opening a new one
/// when `now` is past the current window. Returns whether it opened one.
fn add(window: &mut (Nanos, Histogram), span: Span, now: Nanos, delta: &Histogram) -> bool {
    let start = span.start_of(now);
    let opened = start > window.0;
    if opened {
        *window = (start, Histogram::new());
    }
    window.1.merge(delta);
    opened
}

impl Windows {
    pub fn new() -> Windows {
        Windows::default()
    }

    /// A checkpoint of epoch `epoch` taken at Unix time `now`, with the
    /// epoch's cumulative metrics. Returns the windows to write to the
    /// store: the current minute and hour of every series that has one
    /// (a window is written again until it closes; its last write is its
    /// final content). A metric whose histogram went backwards (it cannot,
    /// within one epoch) is taken as starting over.
    pub fn checkpoint(&mut self, epoch: u32, now: Nanos, metrics: &[MetricResult]) -> Vec<Window> {
        if self.epoch != Some(epoch) {
            self.epoch = Some(epoch);
            self.last.clear();
        }
        let mut out = Vec::new();
        for m in metrics {
            let key: SeriesKey = (m.name.clone(), m.cpu);
            let (delta, overruns) = match self.last.get(&key) {
                Some((prev, prev_overruns)) => (
                    m.histogram
                        .since(prev)
                        .unwrap_or_else(|| m.histogram.clone()),
                    m.overruns.saturating_sub(*prev_overruns),
                ),
                None => (m.histogram.clone(), m.overruns),
            };
            self.last
                .insert(key.clone(), (m.histogram.clone(), m.overruns));
            let s = self
                .series
                .entry(key.clone())
                .or_insert_with(|| Series::new(now));
            s.total.merge(&delta);
            s.overruns += overruns;
            add(&mut s.minute, Span::Minute, now, &delta);
            add(&mut s.hour, Span::Hour, now, &delta);
            for (span, (start, h)) in [(Span::Minute, &s.minute), (Span::Hour, &s.hour)] {
                out.push(Window {
                    span,
                    start_unix: *start,
                    metric: key.0.clone(),
                    cpu: key.1,
                    histogram: h.clone(),
                });
            }
        }
        out
    }

    /// Every series, in name and CPU order.
    pub fn series(&self) -> impl Iterator<Item = (&SeriesKey, &Series)> {
        self.series.iter()
    }

    /// How many series are kept (the memory bound's factor).
    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const S: u64 = 1_000_000_000;
    /// 2023-11-14 22:00:00 UTC, the start of an hour.
    const T0: u64 = (1_700_000_000 - 1_700_000_000 % 3600) * S;

    fn metric(name: &str, cpu: u32, values: &[u64], overruns: u64) -> MetricResult {
        let mut m = MetricResult::new(name, Some(CpuId(cpu)));
        for &v in values {
            m.histogram.record(v);
        }
        m.overruns = overruns;
        m
    }

    fn minute_of(w: &[Window], cpu: u32) -> &Window {
        w.iter()
            .find(|w| w.span == Span::Minute && w.cpu == Some(CpuId(cpu)))
            .unwrap()
    }

    #[test]
    fn each_window_holds_the_samples_of_the_checkpoints_in_it() {
        let mut w = Windows::new();
        // Cumulative: 2 samples by 0:10, 3 by 0:50, 5 by 1:10.
        let out = w.checkpoint(
            0,
            Nanos(T0 + 10 * S),
            &[metric("timer.latency", 1, &[5_000, 6_000], 0)],
        );
        assert_eq!(out.len(), 2, "a minute and an hour");
        assert_eq!(minute_of(&out, 1).histogram.count(), 2);
        let out = w.checkpoint(
            0,
            Nanos(T0 + 50 * S),
            &[metric("timer.latency", 1, &[5_000, 6_000, 90_000], 1)],
        );
        assert_eq!(minute_of(&out, 1).histogram.count(), 3);
        assert_eq!(minute_of(&out, 1).start_unix, Nanos(T0));
        let out = w.checkpoint(
            0,
            Nanos(T0 + 70 * S),
            &[metric(
                "timer.latency",
                1,
                &[5_000, 6_000, 90_000, 7_000, 8_000],
                1,
            )],
        );
        // The second minute has only the two new samples; its maximum is
        // theirs, not the first minute's 90 µs.
        let m = minute_of(&out, 1);
        assert_eq!(m.start_unix, Nanos(T0 + 60 * S));
        assert_eq!(m.histogram.count(), 2);
        assert!(
            m.histogram.max().unwrap() < Nanos(9_000),
            "{:?}",
            m.histogram.max()
        );
        // The hour has all five; the total too.
        let h = out.iter().find(|w| w.span == Span::Hour).unwrap();
        assert_eq!(h.histogram.count(), 5);
        let (_, s) = w.series().next().unwrap();
        assert_eq!(s.total.count(), 5);
        assert_eq!(s.overruns, 1);
    }

    #[test]
    fn a_new_epoch_starts_its_cumulative_counts_over_without_losing_totals() {
        let mut w = Windows::new();
        w.checkpoint(
            0,
            Nanos(T0 + S),
            &[metric("timer.latency", 0, &[1_000; 10], 2)],
        );
        // SIGHUP: a new cell whose histograms start from zero.
        let out = w.checkpoint(
            1,
            Nanos(T0 + 20 * S),
            &[metric("timer.latency", 0, &[2_000; 4], 1)],
        );
        assert_eq!(minute_of(&out, 0).histogram.count(), 14);
        let (_, s) = w.series().next().unwrap();
        assert_eq!(s.total.count(), 14);
        assert_eq!(s.overruns, 3);
    }

    #[test]
    fn memory_is_bounded_by_the_series_not_the_time() {
        let mut w = Windows::new();
        let mut values = Vec::new();
        for minute in 0..600u64 {
            values.push(1_000 + minute);
            let ms = [
                metric("timer.latency", 0, &values, 0),
                metric("timer.latency", 1, &values, 0),
            ];
            let out = w.checkpoint(0, Nanos(T0 + minute * 60 * S + 5 * S), &ms);
            assert_eq!(out.len(), 4);
        }
        assert_eq!(w.len(), 2);
        let (_, s) = w.series().next().unwrap();
        assert_eq!(s.total.count(), 600);
        // Ten hours later the hour window holds the last hour's 60 samples.
        assert_eq!(s.hour.1.count(), 60);
        assert_eq!(s.minute.1.count(), 1);
    }
}
