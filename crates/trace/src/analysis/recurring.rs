//! Recurring culprits: for each cause, the times of the episodes it took a
//! real share of, and whether they recur with a period (Jones & Regehr's
//! driver work every 5 and 10 seconds, §4.4). The test itself is
//! `latscope_stats::find_period`; this module decides which episodes count
//! for a cause and keeps their times in bounded memory.
//!
//! Every episode is recorded here, those past the episode cap too (they
//! are counted into the cause totals the same way), so the test sees the
//! whole run up to the bounds below.

use std::cell::RefCell;
use std::collections::HashMap;

use latscope_model::{Breakdown, CauseKind, CpuId, Nanos, RecurringCause};
use latscope_stats::{find_period, PeriodSearch, Periodicity};

/// Causes followed at most (the first seen); the others are not tested.
/// With [`MAX_TIMES`] this bounds the memory at 2 MiB of times however long
/// the run, and the work of one summary at this many searches.
pub const MAX_CAUSES: usize = 128;
/// Episode times kept per cause (the first ones): 34 minutes of a culprit
/// that makes an episode every second.
pub const MAX_TIMES: usize = 2048;
/// A cause counts for an episode when it took at least this fraction of
/// its latency. Without the floor a 5 µs tick or RCU softirq that happens
/// to fall into most of a periodic culprit's 2 ms episodes would be
/// reported as recurring with the culprit's period.
const MIN_SHARE_DIVISOR: u64 = 10;

type Key = (CauseKind, String);

/// One cause's episode times, and per CPU the grid they lie on.
#[derive(Default)]
struct CauseTimes {
    times: Vec<u64>,
    /// (CPU, its first time, gcd of the later ones' distances from it).
    grids: Vec<(CpuId, u64, u64)>,
}

impl CauseTimes {
    fn push(&mut self, cpu: CpuId, t: u64) {
        self.times.push(t);
        match self.grids.iter_mut().find(|g| g.0 == cpu) {
            Some(g) => g.2 = gcd(g.2, t.abs_diff(g.1)),
            None => self.grids.push((cpu, t, 0)),
        }
    }

    /// The step of the grid the times lie on: a timer probe's episodes
    /// come at its expiries, whole periods apart on each CPU (the coarsest
    /// CPU's step, so that the chance is not understated; 0 when no CPU has
    /// two times).
    fn resolution(&self) -> u64 {
        self.grids.iter().map(|g| g.2).max().unwrap_or(0)
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The bounded record of each cause's episode times.
pub(crate) struct Recurrences {
    times: HashMap<Key, CauseTimes>,
    /// CLOCK_MONOTONIC ns of the cell's start, for offsets.
    cell_start_ns: u64,
    /// Causes seen beyond [`MAX_CAUSES`], and times beyond [`MAX_TIMES`].
    pub(crate) untracked_causes: u64,
    pub(crate) dropped_times: u64,
    /// The last answer per cause and the number of times it was computed
    /// from: a summary is taken every few seconds while the run goes on,
    /// and only causes with new episodes are searched again.
    cache: RefCell<HashMap<Key, (usize, Option<RecurringCause>)>>,
}

impl Recurrences {
    pub(crate) fn new(cell_start_ns: u64) -> Recurrences {
        Recurrences {
            times: HashMap::new(),
            cell_start_ns,
            untracked_causes: 0,
            dropped_times: 0,
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// The causes of one episode (intended expiry `expiry`, latency
    /// `latency`) that took a real share of it. Our own path (the timer
    /// interrupt that delivered us, our wake-up and return) is in every
    /// episode and names no culprit, so it is left out.
    pub(crate) fn record(&mut self, cpu: CpuId, expiry: u64, latency: u64, b: &Breakdown) {
        let counts = |kind: CauseKind, ns: Nanos| {
            !matches!(
                kind,
                CauseKind::TimerIrq | CauseKind::Wakeup | CauseKind::Return
            ) && ns.0.saturating_mul(MIN_SHARE_DIVISOR) >= latency
        };
        let mut keys: Vec<Key> = b
            .causes
            .iter()
            .chain(b.blocking.iter())
            .filter(|c| counts(c.kind, c.duration_ns))
            .map(|c| (c.kind, c.name.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            self.push(key, cpu, expiry);
        }
    }

    fn push(&mut self, key: Key, cpu: CpuId, t: u64) {
        let tracked = self.times.len();
        match self.times.get_mut(&key) {
            Some(c) if c.times.len() < MAX_TIMES => c.push(cpu, t),
            Some(_) => self.dropped_times += 1,
            None if tracked < MAX_CAUSES => {
                self.times.entry(key).or_default().push(cpu, t);
            }
            None => self.untracked_causes += 1,
        }
    }

    /// Every cause whose episodes recur with a period, strongest evidence
    /// first.
    pub(crate) fn recurring(&self) -> Vec<RecurringCause> {
        let mut cache = self.cache.borrow_mut();
        let mut out: Vec<RecurringCause> = Vec::new();
        for (key, c) in &self.times {
            let search = PeriodSearch {
                resolution_ns: c.resolution(),
                ..PeriodSearch::default()
            };
            if (c.times.len() as u64) < search.min_events {
                continue;
            }
            let fresh = cache.get(key).is_some_and(|(n, _)| *n == c.times.len());
            if !fresh {
                let found = find_period(&c.times, &search).map(|p| self.cause(key, &p));
                cache.insert(key.clone(), (c.times.len(), found));
            }
            if let Some((_, Some(r))) = cache.get(key) {
                out.push(r.clone());
            }
        }
        out.sort_by(|a, b| {
            a.log10_chance
                .cmp(&b.log10_chance)
                .then(b.episodes.cmp(&a.episodes))
                .then(a.kind.cmp(&b.kind))
                .then(a.name.cmp(&b.name))
        });
        out
    }

    fn cause(&self, key: &Key, p: &Periodicity) -> RecurringCause {
        RecurringCause {
            kind: key.0,
            name: key.1.clone(),
            period_ns: Nanos(p.period_ns),
            jitter_ns: Nanos(p.jitter_ns),
            episodes: p.events,
            cycles: p.cycles_spanned,
            missing: p.missing,
            first_offset_ns: Nanos(p.first_ns.saturating_sub(self.cell_start_ns)),
            last_offset_ns: Nanos(p.last_ns.saturating_sub(self.cell_start_ns)),
            log10_chance: p.log10_chance(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use latscope_model::Cause;

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    /// Through JSON, so that the fields this test does not need keep their
    /// defaults.
    fn cause(kind: CauseKind, name: &str, ns: u64) -> Cause {
        let v = serde_json::json!({"kind": kind, "name": name, "duration_ns": ns});
        serde_json::from_value(v).unwrap()
    }

    /// A 2 ms episode: `culprit` 1.9 ms of it, a 40 µs tick and our own
    /// 60 µs timer interrupt.
    fn episode(culprit: &str) -> Breakdown {
        Breakdown {
            causes: vec![
                cause(CauseKind::Thread, culprit, 1_900_000),
                cause(CauseKind::TimerIrq, "hrtimer", 60_000),
                cause(CauseKind::Irq, "local_timer", 40_000),
            ],
            blocking: Some(cause(CauseKind::Thread, culprit, 1_900_000)),
            ..Breakdown::default()
        }
    }

    #[test]
    fn a_periodic_thread_is_reported_and_small_shares_are_not() {
        let start = 50 * S;
        let mut r = Recurrences::new(start);
        for k in 0..12 {
            let t = start + 300 * MS + k * S;
            // Two episodes per burst: they count once.
            r.record(CpuId(0), t, 2 * MS, &episode("ka-periodic"));
            r.record(CpuId(0), t + MS, 2 * MS, &episode("ka-periodic"));
        }
        // Unrelated episodes of another thread, at no period.
        for t in [1_130, 2_950, 4_210, 7_777, 8_020, 11_500] {
            r.record(CpuId(0), start + t * MS, 2 * MS, &episode("cc1"));
        }
        let found = r.recurring();
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(
            (f.kind, f.name.as_str()),
            (CauseKind::Thread, "ka-periodic")
        );
        assert_eq!(f.period_ns, Nanos(S));
        assert_eq!((f.episodes, f.cycles, f.missing), (12, 11, 0));
        assert_eq!(f.first_offset_ns, Nanos(300 * MS));
        assert_eq!(f.last_offset_ns, Nanos(11_300 * MS));
        assert!(f.log10_chance <= -3, "{f:?}");
        // The tick was in every one of those episodes, but with 2 % of it.
        assert!(!r
            .times
            .contains_key(&(CauseKind::Irq, "local_timer".into())));
        assert!(!r
            .times
            .contains_key(&(CauseKind::TimerIrq, "hrtimer".into())));
        // The answer is kept until the cause has new episodes.
        assert_eq!(r.recurring(), found);
    }

    #[test]
    fn the_grid_is_per_cpu() {
        let mut c = CauseTimes::default();
        // CPU 0's expiries on a 1 ms grid, CPU 1's on another 1 ms grid
        // offset by 0.3 ms: each is a 1 ms grid, their union is not.
        for k in [3, 10, 12] {
            c.push(CpuId(0), 7 * S + k * MS);
            c.push(CpuId(1), 7 * S + 300_000 + k * MS);
        }
        assert_eq!(c.resolution(), MS);
        let mut one = CauseTimes::default();
        one.push(CpuId(0), S);
        assert_eq!(one.resolution(), 0);
    }

    #[test]
    fn causes_and_times_are_bounded() {
        let mut r = Recurrences::new(0);
        for i in 0..MAX_CAUSES + 3 {
            r.record(CpuId(1), S, 2 * MS, &episode(&format!("t{i}")));
        }
        assert_eq!(r.times.len(), MAX_CAUSES);
        assert_eq!(r.untracked_causes, 3);
        for k in 0..MAX_TIMES as u64 + 5 {
            r.record(CpuId(1), k * S, 2 * MS, &episode("t0"));
        }
        let key = (CauseKind::Thread, "t0".to_string());
        assert_eq!(r.times[&key].times.len(), MAX_TIMES);
        assert_eq!(r.dropped_times, 6);
    }
}
