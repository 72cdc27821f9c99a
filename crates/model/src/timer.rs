//! What the timer probe counted beside its histograms.

use serde::{Deserialize, Serialize};

use crate::{CpuId, Nanos};

/// Per CPU figures of the timer probe that a histogram of lateness cannot
/// hold: wake-ups that came *before* their deadline. A timer that fires
/// early is a bug (of the timer service, the clock, or the hypervisor), so
/// these are counted and shown, never folded into a 0 ns sample.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerCpuStats {
    pub cpu: CpuId,
    /// Wake-ups observed before their intended expiry.
    pub early_wakeups: u64,
    /// The largest earliness seen: deadline − wake-up time.
    pub max_early_ns: Nanos,
}
