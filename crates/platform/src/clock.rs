use std::hint;

/// Reads CLOCK_MONOTONIC in nanoseconds. Through the vDSO this is a user-space
/// read (~20–30 ns here), not a system call.
#[inline]
pub fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Reads CLOCK_REALTIME in nanoseconds since the Unix epoch (for wall-clock
/// stamps of runs, never for intervals).
pub fn realtime_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// CPU time the calling thread has used (user + system), in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[inline]
fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used exist on every
    // Linux kernel, so clock_gettime cannot fail here (it only fails with
    // EINVAL/EFAULT, neither possible).
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Busy-waits until CLOCK_MONOTONIC reaches `deadline_ns`, reading the clock
/// in a loop. Used for the random phase before relative sleeps: a busy delay
/// cannot itself lock onto the tick the way a sleep would.
#[inline]
pub fn spin_until(deadline_ns: u64) {
    while monotonic_ns() < deadline_ns {
        hint::spin_loop();
    }
}

/// The cost of one CLOCK_MONOTONIC read: the smallest difference between two
/// back-to-back reads over `rounds` tries. Every probe reports it, since it
/// bounds the resolution of what the probe can see.
pub fn clock_read_cost(rounds: u32) -> u64 {
    let mut best = u64::MAX;
    for _ in 0..rounds.max(1) {
        let a = monotonic_ns();
        let b = monotonic_ns();
        best = best.min(b.saturating_sub(a));
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_advances_and_realtime_is_recent() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(b >= a);
        // After 2020-01-01.
        assert!(realtime_ns() > 1_577_836_800_000_000_000);
    }

    #[test]
    fn spin_until_waits() {
        let start = monotonic_ns();
        spin_until(start + 200_000);
        assert!(monotonic_ns() >= start + 200_000);
    }

    #[test]
    fn clock_cost_is_small() {
        // A clock read through the vDSO costs well under 10 µs on any machine
        // latscope supports; a system-call clock would still pass this.
        assert!(clock_read_cost(1000) < 10_000);
    }
}
