use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::PlatformError;

/// Turns SIGINT, SIGTERM and SIGHUP into a flag the run polls, so that an
/// interrupted run still stores everything it measured. A second signal
/// while the first is being handled ends the process at once with 130, for
/// a user who really wants out.
pub struct StopSignals {
    flag: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

impl StopSignals {
    pub fn install() -> Result<StopSignals, PlatformError> {
        let flag = Arc::new(AtomicBool::new(false));
        let which = Arc::new(AtomicUsize::new(0));
        let err = |source| PlatformError::Os {
            what: "cannot install signal handler".into(),
            source,
        };
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // Registration order is execution order: the conditional exit
            // looks at the flag before this signal sets it, so only a second
            // signal exits.
            signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag))
                .map_err(err)?;
            signal_hook::flag::register(sig, Arc::clone(&flag)).map_err(err)?;
            signal_hook::flag::register_usize(sig, Arc::clone(&which), sig as usize)
                .map_err(err)?;
        }
        Ok(StopSignals { flag, which })
    }

    /// The flag measuring loops poll: set once a stop signal arrived.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// The flag and the number of the signal that set it, for a stop
    /// request that other code (the engine) shares.
    pub fn handles(&self) -> (Arc<AtomicBool>, Arc<AtomicUsize>) {
        (Arc::clone(&self.flag), Arc::clone(&self.which))
    }

    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The signal that stopped the run, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.which.load(Ordering::Relaxed) {
            0 => None,
            s => i32::try_from(s).ok(),
        }
    }
}
