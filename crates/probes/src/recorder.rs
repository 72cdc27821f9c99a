use std::sync::atomic::{AtomicU64, Ordering};

use latscope_model::{CpuId, Nanos};
use latscope_record::{AtomicHistogram, MetricResult, SecondStats, TimelineChunk, TimelineRing};

/// Where one measuring thread records one metric: an HDR histogram, the
/// per-second timeline, and the exact count above the threshold. Written by
/// exactly one thread; read by the housekeeping thread.
pub struct MetricRecorder {
    name: &'static str,
    cpu: Option<CpuId>,
    hist: AtomicHistogram,
    timeline: TimelineRing,
    threshold: Option<Nanos>,
    above: AtomicU64,
    /// Next timeline second the reader has not taken yet.
    drained: AtomicU64,
    /// Seconds the ring had overwritten before the reader took them.
    lost_seconds: AtomicU64,
}

impl MetricRecorder {
    pub fn new(name: &'static str, cpu: Option<CpuId>, threshold: Option<Nanos>) -> MetricRecorder {
        MetricRecorder {
            name,
            cpu,
            hist: AtomicHistogram::new(),
            timeline: TimelineRing::new(threshold.map(|t| t.0)),
            threshold,
            above: AtomicU64::new(0),
            drained: AtomicU64::new(0),
            lost_seconds: AtomicU64::new(0),
        }
    }

    /// Records one sample that fell in `second` of the cell. Writer only.
    #[inline]
    pub fn record(&self, second: u64, value: u64) {
        self.hist.record(value);
        if self.timeline.record(second, value) {
            self.above
                .store(self.above.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }

    /// A snapshot for a checkpoint or the final result.
    pub fn result(&self) -> MetricResult {
        let mut r = MetricResult::new(self.name, self.cpu);
        r.histogram = self.hist.snapshot();
        r.threshold = self.threshold;
        r.above_threshold = self.threshold.map(|_| self.above.load(Ordering::Relaxed));
        r
    }

    /// Timeline seconds that were overwritten before they could be stored
    /// (the reader stalled for longer than the ring holds); they are stored
    /// as empty seconds and must be reported, not hidden.
    pub fn lost_seconds(&self) -> u64 {
        self.lost_seconds.load(Ordering::Relaxed)
    }

    /// Takes the timeline seconds not yet taken: while the writer runs only
    /// completed seconds; with `finished`, the current one too. Reader only.
    pub fn drain_timeline(&self, finished: bool) -> Option<TimelineChunk> {
        let from = self.drained.load(Ordering::Relaxed);
        let current = self.timeline.current_second()?;
        let until = if finished { current + 1 } else { current };
        if until <= from {
            return None;
        }
        let mut seconds: Vec<SecondStats> = Vec::with_capacity((until - from) as usize);
        let lost = self.timeline.read(from, until, &mut seconds);
        self.lost_seconds.fetch_add(lost, Ordering::Relaxed);
        self.drained.store(until, Ordering::Relaxed);
        Some(TimelineChunk {
            metric: self.name.to_string(),
            cpu: self.cpu,
            first_second: from,
            seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_histogram_timeline_and_threshold() {
        let r = MetricRecorder::new("timer.latency", Some(CpuId(1)), Some(Nanos(100)));
        r.record(0, 50);
        r.record(0, 150);
        r.record(1, 250);
        let res = r.result();
        assert_eq!(res.histogram.count(), 3);
        assert_eq!(res.above_threshold, Some(2));
        let chunk = r.drain_timeline(false).unwrap();
        assert_eq!(chunk.first_second, 0);
        assert_eq!(chunk.seconds.len(), 1);
        assert!(r.drain_timeline(false).is_none());
        let last = r.drain_timeline(true).unwrap();
        assert_eq!(last.first_second, 1);
        assert_eq!(
            last.seconds[0],
            SecondStats {
                count: 1,
                max: 250,
                above: 1
            }
        );
        assert_eq!(r.lost_seconds(), 0);
    }

    #[test]
    fn seconds_overwritten_before_a_drain_are_counted() {
        let ring = latscope_record::TIMELINE_RING_SECONDS as u64;
        let r = MetricRecorder::new("timer.latency", Some(CpuId(0)), None);
        r.record(0, 10);
        // The writer laps the ring before the reader comes: second `ring`
        // takes second 0's slot.
        r.record(ring, 10);
        let chunk = r.drain_timeline(false).unwrap();
        assert_eq!(chunk.seconds.len() as u64, ring);
        assert_eq!(chunk.seconds[0], SecondStats::default());
        assert_eq!(r.lost_seconds(), 1, "second 0 was overwritten");
    }
}
