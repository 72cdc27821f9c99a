//! The pipeline as the device sees it: pure arithmetic on time stamps, so
//! the same code counts underruns on the real kernel and in the scripted
//! tests.
//!
//! `n` buffers of one period `t` each. The device plays one buffer per
//! period on its own clock grid (`t0 + k·t`); buffers 0 to `n − 1` are
//! filled before the start (as a player primes its ring), buffer 0 plays
//! from `t0`. A buffer's slot is free once the buffer `n` before it has
//! finished playing; the buffer filled into it is needed `n − 1` periods
//! later. A buffer ready after it was needed is an **underrun**: the device
//! found no buffer at a period boundary, played silence until the next
//! boundary after the buffer arrived, and plays it from there (the grid
//! stays: a device clock does not move). Its length is the time from the
//! deadline to the buffer being ready.

/// One underrun: the device found no buffer at `deadline`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Underrun {
    /// The buffer that was late (counted from 0, the first primed one).
    pub buffer: u64,
    /// When the device needed it.
    pub deadline: u64,
    /// Deadline → ready.
    pub length: u64,
    /// Periods the device played silence.
    pub periods: u64,
}

/// The device's view of a ring of buffers.
#[derive(Clone, Debug)]
pub struct Pipeline {
    period: u64,
    /// When the last `n` buffers started playing, by buffer index mod `n`.
    starts: Vec<u64>,
    /// The next buffer the producer fills.
    next: u64,
    /// When the device needs buffer `next`.
    need: u64,
}

impl Pipeline {
    /// A ring of `buffers` (at least 1) primed buffers of `period` (> 0),
    /// the first playing from `t0`.
    pub fn new(t0: u64, period: u64, buffers: u32) -> Pipeline {
        let n = u64::from(buffers.max(1));
        let period = period.max(1);
        Pipeline {
            period,
            starts: (0..n).map(|i| t0 + i * period).collect(),
            next: n,
            need: t0 + n * period,
        }
    }

    fn slot(&self) -> usize {
        (self.next % self.starts.len() as u64) as usize
    }

    /// When the slot of the next buffer frees: the buffer `n` before it has
    /// finished playing.
    pub fn free_at(&self) -> u64 {
        self.starts[self.slot()] + self.period
    }

    /// When the device needs the next buffer.
    pub fn deadline(&self) -> u64 {
        self.need
    }

    /// Buffers filled by the producer so far (the primed ones not counted).
    pub fn produced(&self) -> u64 {
        self.next - self.starts.len() as u64
    }

    /// The producer filled the next buffer at `ready`; the underrun, if the
    /// device needed it earlier.
    pub fn publish(&mut self, ready: u64) -> Option<Underrun> {
        let buffer = self.next;
        let deadline = self.need;
        let (start, underrun) = if ready <= deadline {
            (deadline, None)
        } else {
            let length = ready - deadline;
            let periods = length.div_ceil(self.period);
            let u = Underrun {
                buffer,
                deadline,
                length,
                periods,
            };
            (deadline + periods * self.period, Some(u))
        };
        let slot = self.slot();
        self.starts[slot] = start;
        self.need = start + self.period;
        self.next += 1;
        underrun
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_slot_frees_n_minus_1_periods_before_its_deadline() {
        // 3 buffers of 1 ms: buffer 3 fills once buffer 0 has played (1 ms)
        // and is needed at 3 ms: 2 ms = (n − 1)·t of slack for wake-up and
        // compute.
        let mut p = Pipeline::new(0, MS, 3);
        assert_eq!(p.free_at(), MS);
        assert_eq!(p.deadline(), 3 * MS);
        assert_eq!(p.publish(2 * MS), None);
        assert_eq!((p.free_at(), p.deadline()), (2 * MS, 4 * MS));
        // Exactly on the deadline is in time.
        assert_eq!(p.publish(4 * MS), None);
        assert_eq!(p.produced(), 2);
    }

    #[test]
    fn a_late_buffer_is_one_underrun_and_the_grid_stays() {
        let mut p = Pipeline::new(0, MS, 2);
        // Buffer 2: free at 1 ms, needed at 2 ms, ready at 4.5 ms.
        let u = p.publish(4 * MS + MS / 2).unwrap();
        assert_eq!(
            u,
            Underrun {
                buffer: 2,
                deadline: 2 * MS,
                length: 2 * MS + MS / 2,
                periods: 3
            }
        );
        // It plays from 5 ms (the next boundary); buffer 3's slot (buffer
        // 1's, played 1-2 ms) is long free, and buffer 3 is needed at 6 ms.
        assert_eq!((p.free_at(), p.deadline()), (2 * MS, 6 * MS));
        // The producer catches up at once: no second underrun.
        assert_eq!(p.publish(4 * MS + 700_000), None);
        assert_eq!(p.free_at(), 6 * MS);
    }

    #[test]
    fn one_buffer_underruns_whenever_there_is_any_compute() {
        let mut p = Pipeline::new(0, MS, 1);
        assert_eq!(p.free_at(), p.deadline());
        assert!(p.publish(MS + 1).is_some());
    }
}
