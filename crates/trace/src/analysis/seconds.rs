//! Per-second maxima of a decomposed metric (`timer.irq`), on the cell's
//! seconds, so that the forecast of the interrupt level has the same
//! checks as the thread's: clusters, independence, stationarity.
//!
//! Second `s` is `[origin + s·1 s, origin + (s+1)·1 s)` with `origin` the
//! probe's start, the timeline's convention. Samples arrive in time order
//! per CPU only up to the tracer's delay, so a second is handed out once
//! it lies [`SETTLE_NS`] behind the newest sample; a sample for a second
//! already handed out is counted in the histogram but not the timeline
//! ([`SecondMaxima::late`]).

use std::collections::BTreeMap;

use latscope_stats::SecondStats;

/// How far behind the newest sample a second must lie to be complete: the
/// tracers deliver within a read interval (tens of milliseconds), the
/// margin is two seconds.
pub const SETTLE_NS: u64 = 2_000_000_000;

const SECOND: u64 = 1_000_000_000;

#[derive(Debug)]
pub struct SecondMaxima {
    origin: u64,
    /// The first second not yet handed out.
    next: u64,
    newest: u64,
    open: BTreeMap<u64, SecondStats>,
    late: u64,
}

impl SecondMaxima {
    pub fn new(origin: u64) -> SecondMaxima {
        SecondMaxima {
            origin,
            next: 0,
            newest: origin,
            open: BTreeMap::new(),
            late: 0,
        }
    }

    /// Records `value` for the sample taken at monotonic time `at`
    /// (samples before the origin are the warm-up's: not in the timeline).
    pub fn record(&mut self, at: u64, value: u64) {
        let Some(since) = at.checked_sub(self.origin) else {
            return;
        };
        let second = since / SECOND;
        if second < self.next {
            self.late += 1;
            return;
        }
        self.newest = self.newest.max(at);
        let s = self.open.entry(second).or_default();
        s.count += 1;
        s.max = s.max.max(value);
    }

    /// The complete seconds not handed out yet, from the first of them on
    /// (seconds without samples are empty ones); `all` hands out every
    /// second with a sample (at the end of the cell).
    pub fn drain(&mut self, all: bool) -> Option<(u64, Vec<SecondStats>)> {
        let end = if all {
            self.open.keys().next_back().map_or(self.next, |&s| s + 1)
        } else {
            (self.newest.saturating_sub(self.origin + SETTLE_NS)) / SECOND
        };
        if end <= self.next {
            return None;
        }
        let first = self.next;
        let rest = self.open.split_off(&end);
        let done = std::mem::replace(&mut self.open, rest);
        let mut seconds = vec![SecondStats::default(); (end - first) as usize];
        for (s, stats) in done {
            seconds[(s - first) as usize] = stats;
        }
        self.next = end;
        Some((first, seconds))
    }

    /// Samples that came after their second was handed out.
    #[cfg(test)]
    pub fn late(&self) -> u64 {
        self.late
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const O: u64 = 5 * SECOND + 123;

    #[test]
    fn seconds_are_counted_from_the_origin_and_handed_out_once_settled() {
        let mut m = SecondMaxima::new(O);
        m.record(O - 1, 99); // warm-up: not in the timeline
        m.record(O, 10);
        m.record(O + SECOND - 1, 30);
        m.record(O + 2 * SECOND + 5, 7);
        // Newest at 2 s: nothing has settled yet.
        assert_eq!(m.drain(false), None);
        m.record(O + 4 * SECOND + 1, 4);
        let (first, s) = m.drain(false).unwrap();
        assert_eq!(first, 0);
        assert_eq!(
            s.iter().map(|s| (s.count, s.max)).collect::<Vec<_>>(),
            vec![(2, 30), (0, 0)]
        );
        // A sample for a second already handed out is late.
        m.record(O + 1, 1_000);
        assert_eq!(m.late(), 1);
        let (first, s) = m.drain(true).unwrap();
        assert_eq!(first, 2);
        assert_eq!(
            s.iter().map(|s| (s.count, s.max)).collect::<Vec<_>>(),
            vec![(1, 7), (0, 0), (1, 4)]
        );
        assert_eq!(m.drain(true), None);
    }
}
