//! A single-producer, single-consumer ring of (deadline, wake-up) pairs: how
//! a measuring thread hands each sample to the trace analysis without a
//! lock, an allocation or a system call. The writer never waits: when the
//! reader has fallen a whole ring behind, the sample is counted as dropped
//! and the analysis reports it as not decomposed.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct SampleRing {
    /// Two words per slot: deadline, wake-up (CLOCK_MONOTONIC ns).
    slots: Box<[AtomicU64]>,
    mask: u64,
    /// Next slot the writer fills; only the writer stores it.
    head: AtomicU64,
    /// Next slot the reader takes; only the reader stores it.
    tail: AtomicU64,
    dropped: AtomicU64,
}

impl SampleRing {
    /// A ring of at least `capacity` samples (rounded up to a power of two).
    pub fn new(capacity: usize) -> SampleRing {
        let cap = capacity.max(2).next_power_of_two();
        SampleRing {
            slots: (0..cap * 2).map(|_| AtomicU64::new(0)).collect(),
            mask: cap as u64 - 1,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    pub fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Writer only.
    #[inline]
    pub fn push(&self, deadline: u64, wake: u64) {
        let h = self.head.load(Ordering::Relaxed);
        if h.wrapping_sub(self.tail.load(Ordering::Acquire)) > self.mask {
            self.dropped
                .store(self.dropped.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            return;
        }
        let i = ((h & self.mask) * 2) as usize;
        self.slots[i].store(deadline, Ordering::Relaxed);
        self.slots[i + 1].store(wake, Ordering::Relaxed);
        self.head.store(h.wrapping_add(1), Ordering::Release);
    }

    /// Reader only: hands every sample written so far to `f`, oldest first.
    pub fn drain(&self, mut f: impl FnMut(u64, u64)) -> u64 {
        let t = self.tail.load(Ordering::Relaxed);
        let h = self.head.load(Ordering::Acquire);
        let mut n = 0;
        let mut i = t;
        while i != h {
            let k = ((i & self.mask) * 2) as usize;
            f(
                self.slots[k].load(Ordering::Relaxed),
                self.slots[k + 1].load(Ordering::Relaxed),
            );
            i = i.wrapping_add(1);
            n += 1;
        }
        self.tail.store(h, Ordering::Release);
        n
    }

    /// Samples the writer could not store because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_over_in_order_and_counts_overflow() {
        let r = SampleRing::new(3);
        assert_eq!(r.capacity(), 4);
        for k in 0..6 {
            r.push(k, k + 100);
        }
        assert_eq!(r.dropped(), 2);
        let mut got = Vec::new();
        assert_eq!(r.drain(|d, w| got.push((d, w))), 4);
        assert_eq!(got, vec![(0, 100), (1, 101), (2, 102), (3, 103)]);
        r.push(9, 109);
        got.clear();
        r.drain(|d, w| got.push((d, w)));
        assert_eq!(got, vec![(9, 109)]);
    }

    #[test]
    fn concurrent_writer_and_reader_lose_nothing_that_fits() {
        let r = std::sync::Arc::new(SampleRing::new(1 << 16));
        let w = std::sync::Arc::clone(&r);
        let n = 50_000u64;
        let writer = std::thread::spawn(move || {
            for k in 0..n {
                w.push(k, 2 * k);
            }
        });
        let mut next = 0u64;
        while next < n {
            r.drain(|d, wk| {
                assert_eq!(d, next);
                assert_eq!(wk, 2 * d);
                next += 1;
            });
        }
        writer.join().unwrap_or_else(|_| panic!("writer"));
        assert_eq!(r.dropped(), 0);
    }
}
