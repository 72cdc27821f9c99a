//! The time stamp counter, for loops that read the time every iteration and
//! cannot afford a vDSO call (the noise probe): a raw `rdtsc` costs a few
//! nanoseconds. It is only trusted when the CPU says it is constant-rate and
//! keeps counting in idle states (`constant_tsc` and `nonstop_tsc`), and is
//! converted to nanoseconds by calibrating it against CLOCK_MONOTONIC.

use crate::clock::monotonic_ns;

/// Reads the time stamp counter (CLOCK_MONOTONIC nanoseconds on targets
/// without one).
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no memory operands and no side effects beyond
        // reading the counter; every x86_64 CPU implements it, and the
        // kernel leaves it enabled for user space (CR4.TSD clear) on every
        // Linux configuration latscope runs on.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// Whether the TSC can be used as a clock: x86_64 and /proc/cpuinfo lists
/// both `constant_tsc` and `nonstop_tsc`.
pub fn tsc_reliable() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string("/proc/cpuinfo")
            .map(|s| flags_say_reliable(&s))
            .unwrap_or(false)
}

/// The decision on a /proc/cpuinfo text (pure, for tests).
pub fn flags_say_reliable(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.contains(&"constant_tsc") && f.contains(&"nonstop_tsc")
        })
}

/// A simultaneous reading of the TSC and CLOCK_MONOTONIC: the TSC read
/// between two clock reads, keeping the tightest of a few tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockPair {
    pub tsc: u64,
    pub mono_ns: u64,
}

impl ClockPair {
    pub fn now() -> ClockPair {
        let mut best = ClockPair { tsc: 0, mono_ns: 0 };
        let mut best_width = u64::MAX;
        for _ in 0..8 {
            let a = monotonic_ns();
            let t = rdtsc();
            let b = monotonic_ns();
            if b.saturating_sub(a) < best_width {
                best_width = b.saturating_sub(a);
                best = ClockPair {
                    tsc: t,
                    mono_ns: a + (b - a) / 2,
                };
            }
        }
        best
    }
}

/// TSC ticks per second between two pairs (0 if they are not ordered).
pub fn tsc_hz(a: ClockPair, b: ClockPair) -> u64 {
    let dt = b.mono_ns.saturating_sub(a.mono_ns);
    let dtsc = b.tsc.saturating_sub(a.tsc);
    if dt == 0 {
        return 0;
    }
    u64::try_from(u128::from(dtsc) * 1_000_000_000 / u128::from(dt)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reliability_needs_both_flags() {
        assert!(flags_say_reliable(
            "processor: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n"
        ));
        assert!(!flags_say_reliable("flags\t\t: fpu tsc constant_tsc\n"));
        assert!(!flags_say_reliable("no flags here\n"));
    }

    #[test]
    fn calibration_is_close_to_the_monotonic_rate() {
        let a = ClockPair::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = ClockPair::now();
        let hz = tsc_hz(a, b);
        if cfg!(target_arch = "x86_64") {
            // Any real TSC runs between 100 MHz and 10 GHz.
            assert!((100_000_000..10_000_000_000).contains(&hz), "{hz}");
        } else {
            assert!((999_000_000..1_001_000_000).contains(&hz), "{hz}");
        }
        assert_eq!(tsc_hz(b, a), 0);
    }
}
