//! Why a run stops early: a signal (Ctrl-C, SIGTERM, SIGHUP) or a request
//! from the program that drives the engine (a test, the monitor daemon).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use latscope_platform::StopSignals;

/// A stop request shared by the housekeeping thread and the measuring
/// loops (which only poll the flag).
#[derive(Clone, Debug, Default)]
pub struct Stop {
    flag: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

impl Stop {
    /// A stop that only [`Stop::request`] sets.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// The stop that SIGINT, SIGTERM and SIGHUP set (a second signal exits
    /// at once with 130).
    pub fn from_signals(signals: &StopSignals) -> Stop {
        let (flag, which) = signals.handles();
        Stop { flag, which }
    }

    /// Asks the run to stop as if `signal` had arrived.
    pub fn request(&self, signal: i32) {
        self.which
            .store(usize::try_from(signal).unwrap_or(0), Ordering::Relaxed);
        self.flag.store(true, Ordering::Release);
    }

    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// The signal that stopped the run, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.which.load(Ordering::Relaxed) {
            0 => None,
            s => i32::try_from(s).ok(),
        }
    }

    /// The flag measuring loops poll.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}
