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
/// A search's answer and what it was computed from: (number of times,
/// grid).
type Searched = ((usize, u64), Option<Periodicity>);

/// One cause's episode times and the CPUs they were on.
#[derive(Default)]
struct CauseTimes {
    times: Vec<u64>,
    cpus: Vec<CpuId>,
}

impl CauseTimes {
    fn push(&mut self, cpu: CpuId, t: u64) {
        self.times.push(t);
        if !self.cpus.contains(&cpu) {
            self.cpus.push(cpu);
        }
    }
}

/// The grid a CPU's samples lie on: a timer probe's expiries are whole
/// periods apart, so its episodes are too, and a lattice of a whole number
/// of periods fits them better than it would fit continuous times. Taken
/// from every sample, not from a cause's episodes: a culprit that hits the
/// same phase of the probe's period each time (the stroboscopic effect)
/// makes episodes exactly one of its periods apart, and their own spacing
/// would pass for the grid.
#[derive(Clone, Copy)]
struct SampleGrid {
    cpu: CpuId,
    first: u64,
    /// gcd of the later samples' distances from the first (0 while there
    /// is only one); falls to a few ns for samples at arbitrary times.
    step: u64,
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
    grids: Vec<SampleGrid>,
    /// CLOCK_MONOTONIC ns of the cell's start, for offsets.
    cell_start_ns: u64,
    /// Causes seen beyond [`MAX_CAUSES`], and times beyond [`MAX_TIMES`].
    pub(crate) untracked_causes: u64,
    pub(crate) dropped_times: u64,
    /// The last answer per cause and the number of times it was computed
    /// from: a summary is taken every few seconds while the run goes on,
    /// and only causes with new episodes are searched again.
    /// Keyed by the number of times and the grid it was computed from.
    cache: RefCell<HashMap<Key, Searched>>,
}

impl Recurrences {
    pub(crate) fn new(cell_start_ns: u64) -> Recurrences {
        Recurrences {
            times: HashMap::new(),
            grids: Vec::new(),
            cell_start_ns,
            untracked_causes: 0,
            dropped_times: 0,
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// Every sample's intended time (expiry, or start of a gap) on `cpu`,
    /// for the grid of [`SampleGrid`]: one gcd step per sample, a few
    /// divisions once the step is found.
    pub(crate) fn on_sample(&mut self, cpu: CpuId, t: u64) {
        match self.grids.iter_mut().find(|g| g.cpu == cpu) {
            Some(g) => g.step = gcd(g.step, t.abs_diff(g.first)),
            None => self.grids.push(SampleGrid {
                cpu,
                first: t,
                step: 0,
            }),
        }
    }

    /// The coarsest grid of the CPUs a cause's episodes were on (so that
    /// the chance is not understated); 0 when unknown.
    fn resolution(&self, c: &CauseTimes) -> u64 {
        self.grids
            .iter()
            .filter(|g| c.cpus.contains(&g.cpu))
            .map(|g| g.step)
            .max()
            .unwrap_or(0)
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
        let gate = PeriodSearch::default();
        // Every cause tested is one more chance for a coincidence: the
        // chance of each is multiplied by their number (Bonferroni), so
        // that the run as a whole, not each cause, is held to the gate.
        let tested = self
            .times
            .values()
            .filter(|c| c.times.len() as u64 >= gate.min_events)
            .count()
            .max(1);
        let ln_tested = (tested as f64).ln();
        let mut cache = self.cache.borrow_mut();
        let mut out: Vec<RecurringCause> = Vec::new();
        for (key, c) in &self.times {
            if (c.times.len() as u64) < gate.min_events {
                continue;
            }
            let search = PeriodSearch {
                resolution_ns: self.resolution(c),
                ..gate.clone()
            };
            let stamp = (c.times.len(), search.resolution_ns);
            if cache.get(key).map(|(s, _)| *s) != Some(stamp) {
                cache.insert(key.clone(), (stamp, find_period(&c.times, &search)));
            }
            if let Some((_, Some(p))) = cache.get(key) {
                let ln_chance = p.ln_chance + ln_tested;
                if ln_chance <= gate.max_chance.ln() {
                    out.push(self.cause(key, p, ln_chance));
                }
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

    /// `ln_chance`: the search's chance for this cause, corrected for the
    /// number of causes tested.
    fn cause(&self, key: &Key, p: &Periodicity, ln_chance: f64) -> RecurringCause {
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
            log10_chance: (ln_chance / std::f64::consts::LN_10).ceil().max(-999.0) as i32,
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
    fn the_grid_is_the_samples_per_cpu() {
        let mut r = Recurrences::new(0);
        // CPU 0's expiries on a 1 ms grid, CPU 1's on a 2 ms grid offset by
        // 0.3 ms: each is a grid, their union is not.
        for k in 0..50 {
            r.on_sample(CpuId(0), 7 * S + k * MS);
            r.on_sample(CpuId(1), 7 * S + 300_000 + 2 * k * MS);
        }
        let mut c = CauseTimes::default();
        // Episodes exactly a second apart: their own spacing is no grid.
        c.push(CpuId(0), 8 * S);
        c.push(CpuId(0), 9 * S);
        assert_eq!(r.resolution(&c), MS);
        c.push(CpuId(1), 9 * S + 300_000);
        assert_eq!(r.resolution(&c), 2 * MS);
        // Samples at arbitrary times (the noise probe's gaps): no grid.
        r.on_sample(CpuId(2), 5 * S + 123_457);
        r.on_sample(CpuId(2), 6 * S + 7_919);
        r.on_sample(CpuId(2), 7 * S + 31);
        let mut d = CauseTimes::default();
        d.push(CpuId(2), 6 * S);
        assert_eq!(r.resolution(&d), 2);
        assert_eq!(r.resolution(&CauseTimes::default()), 0);
    }

    #[test]
    fn a_culprit_in_step_with_the_probe_is_still_found() {
        // Every burst hits the same phase of the 1 ms probe: its episodes
        // are exactly 1 s apart, on the probe's 1 ms grid.
        let start = 50 * S;
        let mut r = Recurrences::new(start);
        for k in 0..12_000 {
            r.on_sample(CpuId(0), start + k * MS);
        }
        for k in 0..12 {
            r.record(
                CpuId(0),
                start + 336 * MS + k * S,
                2 * MS,
                &episode("ka-periodic"),
            );
        }
        let found = r.recurring();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].period_ns, Nanos(S));
        assert_eq!(found[0].jitter_ns, Nanos(0));
    }

    #[test]
    fn each_cause_tested_weakens_the_evidence_of_all() {
        let mut r = Recurrences::new(0);
        for k in 0..8 {
            r.record(CpuId(0), 3 * S + k * S, 2 * MS, &episode("ka-periodic"));
        }
        let alone = r.recurring()[0].log10_chance;
        // 99 other causes with 5 episodes each, at no period.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for i in 0..99 {
            for _ in 0..5 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let t = seed % (12 * S);
                r.record(CpuId(0), t, 2 * MS, &episode(&format!("t{i}")));
            }
        }
        let found = r.recurring();
        assert_eq!(found.len(), 1, "{found:?}");
        // 100 causes tested: two decades weaker (give or take the rounding).
        assert!(
            (1..=3).contains(&(found[0].log10_chance - alone)),
            "{alone} alone, {} among 100",
            found[0].log10_chance
        );
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
