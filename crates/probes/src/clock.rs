//! Time as the housekeeping side sees it: the real clocks, or a scripted
//! clock that tests advance by hand so that the run lifecycle (checkpoints,
//! signals, the progress bar) is tested deterministically.

use std::time::Duration;

/// The clocks the run lifecycle reads and the sleep it waits with.
/// Measuring threads never use this: they read the clocks directly.
pub trait Clock: Send + Sync {
    /// CLOCK_MONOTONIC, in ns.
    fn monotonic_ns(&self) -> u64;
    /// CLOCK_REALTIME, in ns since the epoch.
    fn realtime_ns(&self) -> u64;
    /// Waits (or, for a scripted clock, advances time by) `d`.
    fn sleep(&self, d: Duration);
}

/// The machine's clocks.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn monotonic_ns(&self) -> u64 {
        latscope_platform::monotonic_ns()
    }

    fn realtime_ns(&self) -> u64 {
        latscope_platform::realtime_ns()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}
