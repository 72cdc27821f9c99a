//! Loss, reordering and duplicates from sequence numbers, in constant
//! memory: a bitmap of the last [`WINDOW`] sequence numbers below the
//! highest one seen. A datagram older than the window is counted as
//! reordered but cannot be checked for duplication (at the default 10 ms
//! period the window spans 40 s).

/// Sequence numbers remembered below the highest seen.
pub const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

#[derive(Clone, Debug)]
pub struct SeqTracker {
    /// Bit `s % WINDOW` set: `s` was received (for `s` in the window).
    seen: [u64; WORDS],
    /// One past the highest sequence number received.
    next: u64,
    pub received: u64,
    pub reordered: u64,
    pub duplicates: u64,
}

impl Default for SeqTracker {
    fn default() -> Self {
        SeqTracker {
            seen: [0; WORDS],
            next: 0,
            received: 0,
            reordered: 0,
            duplicates: 0,
        }
    }
}

/// What one arrival was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    InOrder,
    /// After a higher sequence number.
    Late,
    Duplicate,
}

impl SeqTracker {
    fn bit(s: u64) -> (usize, u64) {
        let i = s % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Notes datagram `s`.
    #[inline]
    pub fn arrive(&mut self, s: u64) -> Arrival {
        if s >= self.next {
            // Clear the bits of the numbers skipped over (and of `s`): their
            // slots held numbers a whole window older.
            let from = if s - self.next >= WINDOW {
                s + 1 - WINDOW
            } else {
                self.next
            };
            for k in from..=s {
                let (w, b) = Self::bit(k);
                self.seen[w] &= !b;
            }
            let (w, b) = Self::bit(s);
            self.seen[w] |= b;
            self.next = s + 1;
            self.received += 1;
            return Arrival::InOrder;
        }
        if self.next - s > WINDOW {
            self.received += 1;
            self.reordered += 1;
            return Arrival::Late;
        }
        let (w, b) = Self::bit(s);
        if self.seen[w] & b != 0 {
            self.duplicates += 1;
            return Arrival::Duplicate;
        }
        self.seen[w] |= b;
        self.received += 1;
        self.reordered += 1;
        Arrival::Late
    }

    /// One past the highest sequence number received.
    pub fn next(&self) -> u64 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_late_duplicate_and_lost() {
        let mut t = SeqTracker::default();
        for s in [0, 1, 2, 4, 3, 3, 5, 7] {
            t.arrive(s);
        }
        // 6 never came; 3 came late, then again.
        assert_eq!(t.received, 7);
        assert_eq!(t.reordered, 1);
        assert_eq!(t.duplicates, 1);
        assert_eq!(t.next() - t.received, 1, "6 is missing");
    }

    #[test]
    fn the_window_forgets_old_numbers_but_still_counts_them() {
        let mut t = SeqTracker::default();
        t.arrive(0);
        t.arrive(1);
        // A jump beyond the window clears every slot.
        t.arrive(2 + WINDOW * 3);
        assert_eq!(t.arrive(1 + WINDOW * 3), Arrival::Late);
        assert_eq!(t.arrive(1 + WINDOW * 3), Arrival::Duplicate);
        // Older than the window: late, not checkable for duplication.
        assert_eq!(t.arrive(5), Arrival::Late);
        assert_eq!(t.received, 5);
        assert_eq!(t.reordered, 2);
        assert_eq!(t.duplicates, 1);
    }

    #[test]
    fn reuse_of_a_slot_does_not_look_like_a_duplicate() {
        let mut t = SeqTracker::default();
        for s in 0..(3 * WINDOW) {
            assert_eq!(t.arrive(s), Arrival::InOrder);
        }
        assert_eq!(t.received, 3 * WINDOW);
        assert_eq!(t.duplicates + t.reordered, 0);
    }
}
