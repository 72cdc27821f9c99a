//! Time as the housekeeping side sees it: the real clocks, or a scripted
//! clock that tests advance by hand so that the run lifecycle (checkpoints,
//! signals, the progress bar) is tested deterministically.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
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

/// Something to do when a [`ScriptedClock`] reaches a virtual time.
type Hook = Box<dyn FnOnce() + Send>;

/// A clock that only moves when told: [`ScriptedClock::advance`] or
/// [`Clock::sleep`] (which advances instead of waiting). Hooks registered
/// with [`ScriptedClock::at`] run when time passes their instant, with the
/// clock reading exactly that instant, so that a test can raise a stop flag
/// (or kill a store) in the middle of a cell deterministically.
///
/// Meant to be advanced by one thread at a time (the housekeeping thread or
/// the test); concurrent advances never move time backwards.
pub struct ScriptedClock {
    mono: AtomicU64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, fixed: a scripted clock never steps.
    realtime_offset: u64,
    hooks: Mutex<Vec<(u64, Hook)>>,
}

/// The realtime a [`ScriptedClock`] reads at monotonic 0: 2026-01-01 UTC.
const SCRIPTED_EPOCH_NS: u64 = 1_767_225_600_000_000_000;

impl ScriptedClock {
    /// A clock reading `monotonic_ns` now.
    pub fn new(monotonic_ns: u64) -> ScriptedClock {
        ScriptedClock {
            mono: AtomicU64::new(monotonic_ns),
            realtime_offset: SCRIPTED_EPOCH_NS,
            hooks: Mutex::new(Vec::new()),
        }
    }

    /// Moves time forward by `d`, running every hook whose instant is
    /// passed on the way, in order of their instants.
    pub fn advance(&self, d: Duration) {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let target = self.mono.load(Ordering::Acquire).saturating_add(d);
        while let Some((at, hook)) = self.next_hook(target) {
            self.mono.fetch_max(at, Ordering::AcqRel);
            // No lock is held here: a hook may read the clock or add hooks.
            hook();
        }
        self.mono.fetch_max(target, Ordering::AcqRel);
    }

    /// Runs `f` once time reaches `monotonic_ns` (at the next advance if
    /// that instant has already passed).
    pub fn at(&self, monotonic_ns: u64, f: impl FnOnce() + Send + 'static) {
        self.lock_hooks().push((monotonic_ns, Box::new(f)));
    }

    /// Takes the earliest hook due by `target`; hooks due at the same
    /// instant run in the order they were added.
    fn next_hook(&self, target: u64) -> Option<(u64, Hook)> {
        let mut hooks = self.lock_hooks();
        let (i, _) = hooks
            .iter()
            .enumerate()
            .filter(|(_, (at, _))| *at <= target)
            .min_by_key(|(i, (at, _))| (*at, *i))?;
        Some(hooks.remove(i))
    }

    fn lock_hooks(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Hook)>> {
        // A hook that panicked leaves the list as it was: still usable.
        self.hooks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for ScriptedClock {
    fn monotonic_ns(&self) -> u64 {
        self.mono.load(Ordering::Acquire)
    }

    fn realtime_ns(&self) -> u64 {
        self.monotonic_ns().saturating_add(self.realtime_offset)
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
    }
}

impl std::fmt::Debug for ScriptedClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedClock")
            .field("monotonic_ns", &self.monotonic_ns())
            .field("hooks", &self.lock_hooks().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sleeping_advances_time_and_nothing_else_does() {
        let c = ScriptedClock::new(1_000);
        assert_eq!(c.monotonic_ns(), 1_000);
        assert_eq!(c.monotonic_ns(), 1_000, "reading does not move it");
        c.sleep(Duration::from_millis(2));
        assert_eq!(c.monotonic_ns(), 2_001_000);
        c.advance(Duration::from_nanos(5));
        assert_eq!(c.monotonic_ns(), 2_001_005);
        assert_eq!(c.realtime_ns() - c.monotonic_ns(), SCRIPTED_EPOCH_NS);
    }

    #[test]
    fn hooks_run_at_their_instant_in_order() {
        let c = Arc::new(ScriptedClock::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        for (at, tag) in [(300, "c"), (100, "a"), (100, "b"), (5_000, "late")] {
            let (c2, seen) = (Arc::clone(&c), Arc::clone(&seen));
            c.at(at, move || {
                seen.lock().unwrap().push((tag, c2.monotonic_ns()))
            });
        }
        c.advance(Duration::from_nanos(1_000));
        assert_eq!(
            *seen.lock().unwrap(),
            vec![("a", 100), ("b", 100), ("c", 300)],
            "each hook sees the clock at its own instant"
        );
        assert_eq!(c.monotonic_ns(), 1_000);
        // A hook added in the past runs at the next advance.
        let seen2 = Arc::clone(&seen);
        c.at(10, move || seen2.lock().unwrap().push(("past", 0)));
        c.advance(Duration::from_nanos(4_000));
        let all = seen.lock().unwrap().clone();
        assert_eq!(&all[3..], &[("past", 0), ("late", 5_000)]);
    }
}
