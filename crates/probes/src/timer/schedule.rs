//! The deadline bookkeeping of a periodic measuring loop, kept apart from
//! clocks and timers so it can be tested with scripted times.

/// Deadlines lie on a fixed grid `start + k × period`. A wake-up later than
/// the next deadline is an overrun: the deadlines it passed are skipped, not
/// served late one after another, so the schedule never drifts (as
/// cyclictest does). Each skipped deadline is reported so the recorder can
/// give it the latency it would have had (the coordinated-omission
/// correction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    period: u64,
    next: u64,
}

/// What one wake-up amounted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    /// The deadline this wake-up served.
    pub deadline: u64,
    /// now − deadline (0 if the clock read came out before the deadline).
    pub latency: u64,
    /// deadline − now when the clock read came out before the deadline (a
    /// timer that fired early), else 0. Kept apart from `latency` so that an
    /// early wake-up is seen rather than passing for a perfect one.
    pub early: u64,
    /// Later deadlines that had also passed and are skipped.
    pub skipped: u64,
}

impl Schedule {
    /// The first deadline is `first`.
    pub fn new(first: u64, period: u64) -> Schedule {
        Schedule {
            period: period.max(1),
            next: first,
        }
    }

    /// The deadline the loop is waiting for.
    pub fn next_deadline(&self) -> u64 {
        self.next
    }

    pub fn period(&self) -> u64 {
        self.period
    }

    /// A wake-up at `now` from a service that schedules itself (absolute or
    /// relative sleeps, epoll): every later deadline at or before `now` is
    /// skipped.
    pub fn woke(&mut self, now: u64) -> Wake {
        let deadline = self.next;
        let latency = now.saturating_sub(deadline);
        let skipped = latency / self.period;
        self.next = deadline + (skipped + 1) * self.period;
        Wake {
            deadline,
            latency,
            early: deadline.saturating_sub(now),
            skipped,
        }
    }

    /// A wake-up at `now` from a periodic kernel timer that reported
    /// `expirations` (≥ 1) since it was last read: the kernel has already
    /// moved its own schedule past them, so follow its count, not the clock.
    pub fn woke_periodic(&mut self, now: u64, expirations: u64) -> Wake {
        let deadline = self.next;
        let n = expirations.max(1);
        self.next = deadline + n * self.period;
        Wake {
            deadline,
            latency: now.saturating_sub(deadline),
            early: deadline.saturating_sub(now),
            skipped: n - 1,
        }
    }

    /// After a pause (the noise duty cycle): the next deadline becomes the
    /// first one of the grid after `now`; the deadlines the pause covered
    /// are neither served nor overruns.
    pub fn resume(&mut self, now: u64) {
        if self.next <= now {
            self.next += ((now - self.next) / self.period + 1) * self.period;
        }
    }

    /// Re-anchors the schedule: the next deadline becomes `deadline` (random
    /// phase, where each relative sleep starts from a random point).
    pub fn set_next(&mut self, deadline: u64) {
        self.next = deadline;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_time_wakeups_follow_the_grid() {
        let mut s = Schedule::new(1_000, 1_000);
        let w = s.woke(1_010);
        assert_eq!(
            w,
            Wake {
                deadline: 1_000,
                latency: 10,
                early: 0,
                skipped: 0
            }
        );
        assert_eq!(s.next_deadline(), 2_000);
        let w = s.woke(2_999);
        assert_eq!(
            w,
            Wake {
                deadline: 2_000,
                latency: 999,
                early: 0,
                skipped: 0
            }
        );
        assert_eq!(s.next_deadline(), 3_000);
    }

    #[test]
    fn resume_after_a_pause_keeps_the_grid() {
        let mut s = Schedule::new(1_000, 1_000);
        s.woke(1_005);
        s.resume(7_500);
        assert_eq!(s.next_deadline(), 8_000);
        // On a grid point: that one has passed, the next is due.
        s.resume(8_000);
        assert_eq!(s.next_deadline(), 9_000);
        // Not yet due: unchanged.
        s.resume(8_500);
        assert_eq!(s.next_deadline(), 9_000);
    }

    #[test]
    fn overrun_skips_without_drift() {
        let mut s = Schedule::new(1_000, 1_000);
        // 3.5 periods late: deadlines 2000, 3000 and 4000 have passed too.
        let w = s.woke(4_500);
        assert_eq!(
            w,
            Wake {
                deadline: 1_000,
                latency: 3_500,
                early: 0,
                skipped: 3
            }
        );
        assert_eq!(s.next_deadline(), 5_000);
        // Exactly on the next deadline counts as passing it.
        let mut s = Schedule::new(1_000, 1_000);
        assert_eq!(s.woke(2_000).skipped, 1);
        assert_eq!(s.next_deadline(), 3_000);
    }

    #[test]
    fn early_wakeups_are_zero_latency_and_reported_as_early() {
        // A scripted clock: the timer fires 1 ns, then 250 ns, before its
        // deadlines, then on time.
        let mut s = Schedule::new(1_000, 1_000);
        let w = s.woke(999);
        assert_eq!(
            w,
            Wake {
                deadline: 1_000,
                latency: 0,
                early: 1,
                skipped: 0
            }
        );
        assert_eq!(
            s.next_deadline(),
            2_000,
            "an early wake-up serves its deadline"
        );
        let w = s.woke(1_750);
        assert_eq!((w.deadline, w.latency, w.early), (2_000, 0, 250));
        let w = s.woke(3_000);
        assert_eq!(
            (w.deadline, w.latency, w.early),
            (3_000, 0, 0),
            "on time is not early"
        );
        // Kernel-periodic timers too.
        let mut s = Schedule::new(1_000, 1_000);
        let w = s.woke_periodic(990, 1);
        assert_eq!((w.latency, w.early, w.skipped), (0, 10, 0));
        assert_eq!(s.next_deadline(), 2_000);
    }

    #[test]
    fn periodic_timers_follow_the_kernel_count() {
        let mut s = Schedule::new(1_000, 1_000);
        let w = s.woke_periodic(1_020, 1);
        assert_eq!(
            w,
            Wake {
                deadline: 1_000,
                latency: 20,
                early: 0,
                skipped: 0
            }
        );
        // The kernel reports 3 expirations (2000, 3000, 4000) although our
        // clock read at 3999 would only have passed two.
        let w = s.woke_periodic(3_999, 3);
        assert_eq!(
            w,
            Wake {
                deadline: 2_000,
                latency: 1_999,
                early: 0,
                skipped: 2
            }
        );
        assert_eq!(s.next_deadline(), 5_000);
    }
}
