//! Rate limiting for the helpers' light levels.

use std::thread;
use std::time::{Duration, Instant};

/// Keeps a sender at `per_sec` units (bytes, packets, processes) a second
/// on average. A late wake-up is caught up by sending without sleeping, so
/// the long-run rate holds; 0 means no limit.
pub(crate) struct Pacer {
    per_sec: u64,
    start: Instant,
    sent: u64,
}

impl Pacer {
    pub(crate) fn new(per_sec: u64) -> Pacer {
        Pacer {
            per_sec,
            start: Instant::now(),
            sent: 0,
        }
    }

    /// Accounts for `units` just sent and sleeps until the next may go.
    pub(crate) fn sent(&mut self, units: u64) {
        if self.per_sec == 0 {
            return;
        }
        self.sent = self.sent.saturating_add(units);
        let due_ns = (u128::from(self.sent) * 1_000_000_000) / u128::from(self.per_sec);
        let due = self.start + Duration::from_nanos(u64::try_from(due_ns).unwrap_or(u64::MAX));
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        } else if now.duration_since(due) > Duration::from_secs(1) {
            // Far behind (the machine was stalled): don't burst a whole
            // second's worth to catch up.
            self.start = now;
            self.sent = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_to_the_rate() {
        let mut p = Pacer::new(1000);
        let t0 = Instant::now();
        for _ in 0..20 {
            p.sent(10);
        }
        // 200 units at 1000/s: 200 ms.
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(195), "{took:?}");
        let mut free = Pacer::new(0);
        let t0 = Instant::now();
        for _ in 0..1000 {
            free.sent(1_000_000);
        }
        assert!(t0.elapsed() < Duration::from_millis(100));
    }
}
