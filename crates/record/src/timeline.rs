use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// What happened to one metric in one second of a run. Later analyses take
/// worst cases per hour, day and week from these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecondStats {
    /// Samples recorded in this second.
    pub count: u64,
    /// Largest sample in this second (0 when there were none).
    pub max: u64,
    /// Samples above the run's threshold (0 when no threshold was set).
    pub above: u64,
}

/// Seconds the ring holds. The housekeeping thread drains it every half
/// second, so this only has to cover a stalled reader; a run's memory stays
/// the same however long it lasts.
pub const TIMELINE_RING_SECONDS: usize = 256;

struct Slot {
    /// second + 1; 0 marks a slot never used.
    tag: AtomicU64,
    count: AtomicU64,
    max: AtomicU64,
    above: AtomicU64,
}

/// A per-second timeline written by one measuring thread and drained by one
/// reader, with constant memory.
///
/// The writer owns the slot of the current second; when a sample falls in a
/// new second it resets that second's slot and publishes the second with a
/// release store. Completed seconds (before the published one) are never
/// written again until the ring wraps, so the reader can copy them safely.
/// Seconds in which no sample was recorded read as empty.
pub struct TimelineRing {
    slots: Box<[Slot]>,
    /// The second the writer is in, + 1 (0: nothing recorded yet).
    current: AtomicU64,
    threshold: u64,
}

impl TimelineRing {
    /// `threshold`: samples strictly above it are counted in
    /// [`SecondStats::above`]; `None` counts nothing.
    pub fn new(threshold: Option<u64>) -> TimelineRing {
        let slots = (0..TIMELINE_RING_SECONDS)
            .map(|_| Slot {
                tag: AtomicU64::new(0),
                count: AtomicU64::new(0),
                max: AtomicU64::new(0),
                above: AtomicU64::new(0),
            })
            .collect();
        TimelineRing {
            slots,
            current: AtomicU64::new(0),
            threshold: threshold.unwrap_or(u64::MAX),
        }
    }

    /// Records a sample that fell in `second` (counted from the cell's
    /// start). Single writer only; seconds must not go backwards. Returns
    /// whether the value was above the threshold.
    #[inline]
    pub fn record(&self, second: u64, value: u64) -> bool {
        let slot = &self.slots[(second % TIMELINE_RING_SECONDS as u64) as usize];
        let tag = second + 1;
        if self.current.load(Ordering::Relaxed) != tag {
            slot.count.store(0, Ordering::Relaxed);
            slot.max.store(0, Ordering::Relaxed);
            slot.above.store(0, Ordering::Relaxed);
            slot.tag.store(tag, Ordering::Release);
            self.current.store(tag, Ordering::Release);
        }
        slot.count
            .store(slot.count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if value > slot.max.load(Ordering::Relaxed) {
            slot.max.store(value, Ordering::Relaxed);
        }
        let above = value > self.threshold;
        if above {
            slot.above
                .store(slot.above.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
        above
    }

    /// The second the writer is in, if it recorded anything.
    pub fn current_second(&self) -> Option<u64> {
        self.current.load(Ordering::Acquire).checked_sub(1)
    }

    /// Copies the seconds `from .. until` (exclusive) into `out`. Pass
    /// `until = current_second()` while the writer runs (only completed
    /// seconds are stable), and anything after it has stopped. Seconds that
    /// the ring no longer holds come back empty and are counted in the
    /// returned number of lost seconds.
    pub fn read(&self, from: u64, until: u64, out: &mut Vec<SecondStats>) -> u64 {
        let mut lost = 0;
        let newest = self.current_second();
        for second in from..until {
            let slot = &self.slots[(second % TIMELINE_RING_SECONDS as u64) as usize];
            let tag = slot.tag.load(Ordering::Acquire);
            let stats = SecondStats {
                count: slot.count.load(Ordering::Relaxed),
                max: slot.max.load(Ordering::Relaxed),
                above: slot.above.load(Ordering::Relaxed),
            };
            if tag == second + 1 && slot.tag.load(Ordering::Acquire) == tag {
                out.push(stats);
            } else {
                if let Some(n) = newest {
                    if n >= second + TIMELINE_RING_SECONDS as u64 {
                        lost += 1;
                    }
                }
                out.push(SecondStats::default());
            }
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_per_second_with_gaps() {
        let r = TimelineRing::new(Some(100));
        r.record(0, 50);
        r.record(0, 150);
        r.record(0, 120);
        r.record(3, 10);
        assert_eq!(r.current_second(), Some(3));
        let mut out = Vec::new();
        assert_eq!(r.read(0, 4, &mut out), 0);
        assert_eq!(
            out,
            vec![
                SecondStats {
                    count: 3,
                    max: 150,
                    above: 2
                },
                SecondStats::default(),
                SecondStats::default(),
                SecondStats {
                    count: 1,
                    max: 10,
                    above: 0
                },
            ]
        );
    }

    #[test]
    fn no_threshold_counts_nothing_above() {
        let r = TimelineRing::new(None);
        assert!(!r.record(0, u64::MAX - 1));
        let mut out = Vec::new();
        r.read(0, 1, &mut out);
        assert_eq!(out[0].above, 0);
    }

    #[test]
    fn wrapped_seconds_are_reported_lost() {
        let r = TimelineRing::new(None);
        r.record(0, 1);
        r.record(TIMELINE_RING_SECONDS as u64, 1);
        let mut out = Vec::new();
        // Second 0 was overwritten by second 256; second 1 merely had no samples.
        let lost = r.read(0, 2, &mut out);
        assert_eq!(lost, 1);
        assert_eq!(out, vec![SecondStats::default(); 2]);
    }

    #[test]
    fn memory_is_constant_over_a_long_run() {
        let r = TimelineRing::new(Some(5));
        let mut out = Vec::new();
        let mut next = 0;
        for second in 0..10_000u64 {
            for v in 0..3 {
                r.record(second, v * 4);
            }
            if second % 7 == 0 {
                r.read(next, second, &mut out);
                next = second;
            }
        }
        r.read(next, 10_000, &mut out);
        assert_eq!(out.len(), 10_000);
        assert!(out.iter().all(|s| *s
            == SecondStats {
                count: 3,
                max: 8,
                above: 1
            }));
    }
}
