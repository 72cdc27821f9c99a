//! The per-datagram check that `udp.path` ≥ `udp.send`. The sender learns a
//! datagram's send time (from its transmit stamp) and the receiver its path
//! time, on different threads and in either order; each writes its value
//! into the datagram's slot and marks it, and whichever arrives second
//! compares. Lock-free: one compare-and-swap per side and datagram.

use std::sync::atomic::{AtomicU64, Ordering};

pub const SLOTS: usize = 1024;
const SENDER: u64 = 1;
const RECEIVER: u64 = 2;

pub struct PairCheck {
    /// `(seq << 2) | marks` per slot.
    state: Box<[AtomicU64]>,
    send: Box<[AtomicU64]>,
    path: Box<[AtomicU64]>,
    checked: AtomicU64,
    inconsistent: AtomicU64,
}

impl Default for PairCheck {
    fn default() -> Self {
        let v = || (0..SLOTS).map(|_| AtomicU64::new(0)).collect();
        PairCheck {
            state: v(),
            send: v(),
            path: v(),
            checked: AtomicU64::new(0),
            inconsistent: AtomicU64::new(0),
        }
    }
}

impl PairCheck {
    /// The sender's side: datagram `seq` took `send_ns` to its stamp.
    #[inline]
    pub fn sent(&self, seq: u64, send_ns: u64) {
        self.arrive(seq, SENDER, send_ns);
    }

    /// The receiver's side: datagram `seq` took `path_ns` end to end.
    #[inline]
    pub fn received(&self, seq: u64, path_ns: u64) {
        self.arrive(seq, RECEIVER, path_ns);
    }

    fn arrive(&self, seq: u64, me: u64, value: u64) {
        let i = (seq % SLOTS as u64) as usize;
        let tag = seq & (u64::MAX >> 2);
        let mine = if me == SENDER { &self.send } else { &self.path };
        mine[i].store(value, Ordering::Relaxed);
        let mut cur = self.state[i].load(Ordering::Acquire);
        loop {
            let same = cur >> 2 == tag;
            let next = if same { cur | me } else { (tag << 2) | me };
            match self.state[i].compare_exchange_weak(
                cur,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if same && cur & (SENDER | RECEIVER) & !me != 0 {
                        let send = self.send[i].load(Ordering::Relaxed);
                        let path = self.path[i].load(Ordering::Relaxed);
                        // Counters written by both threads: atomic adds.
                        self.checked.fetch_add(1, Ordering::Relaxed);
                        if path < send {
                            self.inconsistent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    return;
                }
                Err(now) => cur = now,
            }
        }
    }

    /// (datagrams compared, of which path < send).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.checked.load(Ordering::Relaxed),
            self.inconsistent.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_once_whichever_side_comes_second() {
        let p = PairCheck::default();
        p.sent(0, 5_000);
        p.received(0, 20_000);
        p.received(1, 20_000);
        p.sent(1, 4_000);
        // Only one side: nothing to compare.
        p.sent(2, 4_000);
        // A path shorter than its send.
        p.sent(3, 9_000);
        p.received(3, 8_000);
        assert_eq!(p.counts(), (3, 1));
    }

    #[test]
    fn a_reused_slot_starts_over() {
        let p = PairCheck::default();
        p.sent(7, 1_000);
        // The receiver never saw 7; the slot comes round again.
        p.received(7 + SLOTS as u64, 30_000);
        assert_eq!(p.counts(), (0, 0));
        p.sent(7 + SLOTS as u64, 2_000);
        assert_eq!(p.counts(), (1, 0));
    }

    #[test]
    fn two_threads_pair_every_datagram() {
        let p = std::sync::Arc::new(PairCheck::default());
        let q = std::sync::Arc::clone(&p);
        let n = 100_000u64;
        let t = std::thread::spawn(move || {
            for s in 0..n {
                q.sent(s, 1);
            }
        });
        for s in 0..n {
            p.received(s, 2);
        }
        t.join().unwrap();
        // Slots are reused every SLOTS datagrams: a side that laps the other
        // by a whole ring loses pairs, but never counts one wrongly.
        let (checked, bad) = p.counts();
        assert_eq!(bad, 0);
        assert!(checked <= n);
    }
}
