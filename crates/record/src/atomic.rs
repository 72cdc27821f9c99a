use std::sync::atomic::{AtomicU64, Ordering};

use crate::histogram::Histogram;
use crate::layout::{highest_of, index_of, COUNTS_LEN};

/// The recording side of a histogram: one measuring thread writes, any other
/// thread may read a snapshot at any time.
///
/// All memory is allocated by [`AtomicHistogram::new`]; [`record`] performs
/// no allocation, takes no lock and makes no system call. Because there is
/// exactly one writer, an update is a relaxed load and store (a plain `add`
/// on x86), not a locked read-modify-write, so it costs what a plain
/// `counts[i] += 1` costs; readers may see a snapshot that is a few samples
/// behind, which is what a checkpoint needs.
///
/// [`record`]: AtomicHistogram::record
pub struct AtomicHistogram {
    counts: Box<[AtomicU64]>,
    sum_lo: AtomicU64,
    sum_hi: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        AtomicHistogram::new()
    }
}

impl AtomicHistogram {
    pub fn new() -> AtomicHistogram {
        let counts: Box<[AtomicU64]> = (0..COUNTS_LEN).map(|_| AtomicU64::new(0)).collect();
        let h = AtomicHistogram {
            counts,
            sum_lo: AtomicU64::new(0),
            sum_hi: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        };
        h.prefault();
        h
    }

    /// Writes every counter once so the pages are resident before the
    /// measuring loop starts; with `mlockall(MCL_FUTURE)` they then stay so,
    /// and the first sample in a new bucket never takes a page fault.
    fn prefault(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// Records one value. Must only be called from the single writer thread.
    #[inline]
    pub fn record(&self, value: u64) {
        self.record_n(value, 1);
    }

    /// Records `n` copies of a value. Single writer only.
    #[inline]
    pub fn record_n(&self, value: u64, n: u64) {
        let c = &self.counts[index_of(value)];
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        self.add_sum(u128::from(value) * u128::from(n));
        if value < self.min.load(Ordering::Relaxed) {
            self.min.store(value, Ordering::Relaxed);
        }
        if value > self.max.load(Ordering::Relaxed) {
            self.max.store(value, Ordering::Relaxed);
        }
    }

    /// Records the `n` values `first`, `first + step`, …, `first + (n−1)·step`
    /// (saturating at `u64::MAX`) as `n` calls of [`record`] would, but in
    /// O(buckets the sequence spans) rather than O(n): the values falling into
    /// one bucket are counted with one division, and the sum is computed in
    /// closed form. The buckets are logarithmic, so however large `n` is the
    /// work is bounded by the number of counters (a stall of 100,000 periods
    /// at 100 µs spans about 7,700). This keeps the coordinated-omission
    /// correction of a long stall cheap on the measuring thread.
    /// Single writer only.
    ///
    /// [`record`]: AtomicHistogram::record
    #[inline]
    pub fn record_arithmetic(&self, first: u64, step: u64, n: u64) {
        if n == 0 {
            return;
        }
        if step == 0 {
            self.record_n(first, n);
            return;
        }
        let term = |i: u64| -> u64 {
            u64::try_from(u128::from(first) + u128::from(i) * u128::from(step)).unwrap_or(u64::MAX)
        };
        let mut i = 0u64;
        while i < n {
            let v = term(i);
            let idx = index_of(v);
            // Terms from i on that stay within this counter's range; the top
            // counter also holds everything beyond the trackable range.
            let in_bucket = if idx == COUNTS_LEN - 1 || v == u64::MAX {
                n - i
            } else {
                ((highest_of(idx) - v) / step + 1).min(n - i)
            };
            let c = &self.counts[idx];
            c.store(c.load(Ordering::Relaxed) + in_bucket, Ordering::Relaxed);
            i += in_bucket;
        }
        // Σ first + i·step = m·first + step·m(m−1)/2 over the m terms that do
        // not saturate, then u64::MAX for each that does (as `record` would).
        let m = n.min(((u64::MAX - first) / step).saturating_add(1));
        let m128 = u128::from(m);
        // m < 2^64, so m(m−1) < 2^128 cannot overflow.
        let tri = m128 * m128.saturating_sub(1) / 2;
        let add = m128
            .saturating_mul(u128::from(first))
            .saturating_add(tri.saturating_mul(u128::from(step)))
            .saturating_add(u128::from(n - m) * u128::from(u64::MAX));
        self.add_sum(add);
        let (lo, hi) = (first, term(n - 1));
        if lo < self.min.load(Ordering::Relaxed) {
            self.min.store(lo, Ordering::Relaxed);
        }
        if hi > self.max.load(Ordering::Relaxed) {
            self.max.store(hi, Ordering::Relaxed);
        }
    }

    #[inline]
    fn add_sum(&self, add: u128) {
        let lo = self.sum_lo.load(Ordering::Relaxed);
        let (new_lo, carry) = lo.overflowing_add(add as u64);
        self.sum_lo.store(new_lo, Ordering::Relaxed);
        let hi_add = ((add >> 64) as u64).wrapping_add(u64::from(carry));
        if hi_add != 0 {
            let hi = self.sum_hi.load(Ordering::Relaxed);
            self.sum_hi
                .store(hi.wrapping_add(hi_add), Ordering::Relaxed);
        }
    }

    /// Copies the current state into an owned histogram. Allocates: never
    /// call it on a measuring thread. While the writer is active the copy may
    /// be a few samples behind and its sum may not match its counts exactly;
    /// after the writer has stopped it is exact.
    pub fn snapshot(&self) -> Histogram {
        // Read straight into the histogram's sparse chunks, with no dense
        // copy; the counters first, then the sum, minimum and maximum.
        Histogram::from_counters(
            |i| self.counts.get(i).map_or(0, |c| c.load(Ordering::Relaxed)),
            || {
                let sum = (u128::from(self.sum_hi.load(Ordering::Relaxed)) << 64)
                    | u128::from(self.sum_lo.load(Ordering::Relaxed));
                let min = self.min.load(Ordering::Relaxed);
                (sum, min, self.max.load(Ordering::Relaxed))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::Nanos;
    use std::sync::Arc;

    #[test]
    fn snapshot_matches_owned_histogram() {
        let a = AtomicHistogram::new();
        let mut h = Histogram::new();
        for v in [3u64, 5_000, 77_777, 1_000_000_000, 200_000_000_000] {
            a.record(v);
            h.record(v);
        }
        a.record_n(42, 3);
        h.record_n(42, 3);
        assert_eq!(a.snapshot(), h);
    }

    #[test]
    fn sum_carries_into_high_word() {
        let a = AtomicHistogram::new();
        a.record_n(u64::MAX / 2, 4);
        let s = a.snapshot();
        assert_eq!(s.sum(), u128::from(u64::MAX / 2) * 4);
        assert_eq!(s.mean(), Some(Nanos(u64::MAX / 2)));
    }

    /// The naive loop the closed form replaces.
    fn naive(first: u64, step: u64, n: u64) -> Histogram {
        let mut h = Histogram::new();
        for i in 0..n {
            h.record(first.saturating_add(i.saturating_mul(step)));
        }
        h
    }

    #[test]
    fn arithmetic_sequence_equals_the_naive_loop() {
        for (first, step, n) in [
            (0u64, 1u64, 0u64),
            (5, 0, 7),
            (0, 1, 5_000),
            (1_000, 3, 4_000),
            (500_000, 1_000_000, 3),
            // A 10 s stall at a 100 µs period: 100,000 skipped deadlines.
            (37, 100_000, 100_000),
            // Beyond the trackable range: clamped into the top counter.
            (60_000_000_000, 1_000_000_000, 30),
            (u64::MAX - 10, 4, 5),
        ] {
            let a = AtomicHistogram::new();
            a.record(17);
            a.record_arithmetic(first, step, n);
            let mut want = naive(first, step, n);
            want.record(17);
            assert_eq!(a.snapshot(), want, "first {first} step {step} n {n}");
            assert_eq!(a.snapshot().sum(), want.sum(), "sum of {first}+{step}·i");
        }
    }

    proptest::proptest! {
        #[test]
        fn arithmetic_sequence_matches_naive(first in 0u64..20_000_000_000,
                                             step in 0u64..50_000_000,
                                             n in 0u64..3_000) {
            let a = AtomicHistogram::new();
            a.record_arithmetic(first, step, n);
            proptest::prop_assert_eq!(a.snapshot(), naive(first, step, n));
        }
    }

    #[test]
    fn reader_sees_progress_while_writer_runs() {
        let a = Arc::new(AtomicHistogram::new());
        let w = Arc::clone(&a);
        let writer = std::thread::spawn(move || {
            for i in 0..200_000u64 {
                w.record(i % 5000 + 1);
            }
        });
        let mut last = 0;
        while !writer.is_finished() {
            let n = a.snapshot().count();
            assert!(n >= last, "counts never go backwards");
            last = n;
        }
        writer.join().unwrap();
        assert_eq!(a.snapshot().count(), 200_000);
    }
}
