//! What every measuring thread does before its loop: pin itself, keep stop
//! signals away, take the least timer slack and the chosen policy, and
//! touch the stack its loop will use. A refused real-time policy is not
//! fatal: the thread measures as SCHED_OTHER and the run records that the
//! result is not a real-time one.

use std::hint::black_box;

use latscope_model::CpuId;
use latscope_platform::SchedPolicy;

use crate::{ProbeError, ThreadSetup};

/// The priority actually applied: SCHED_OTHER has no real-time priority,
/// whatever was asked for.
pub fn effective_priority(policy: SchedPolicy, priority: u32) -> u32 {
    if policy == SchedPolicy::Other {
        0
    } else {
        priority
    }
}

pub(crate) fn set_up_thread(
    cpu: CpuId,
    policy: SchedPolicy,
    priority: u32,
) -> Result<ThreadSetup, ProbeError> {
    latscope_platform::set_affinity(cpu).map_err(|e| ProbeError::Affinity {
        cpu,
        reason: e.to_string(),
    })?;
    // Stop signals go to the housekeeping thread, never into a measurement.
    let _ = latscope_platform::block_signals_in_this_thread();
    let timer_slack = latscope_platform::set_timer_slack(1).is_ok();
    let priority = effective_priority(policy, priority);
    let scheduler = latscope_platform::set_scheduler(policy, priority).map_err(|e| e.to_string());
    if scheduler.is_err() && policy != SchedPolicy::Other {
        let _ = latscope_platform::set_scheduler(SchedPolicy::Other, 0);
    }
    Ok(ThreadSetup {
        cpu,
        tid: latscope_platform::current_tid(),
        scheduler,
        timer_slack,
    })
}

/// Touches the stack the loop will use, so that (with memory locked) no page
/// fault lands in a measurement.
#[inline(never)]
pub(crate) fn prefault_stack() {
    let mut buf = [0u8; 128 * 1024];
    for i in (0..buf.len()).step_by(4096) {
        buf[i] = 1;
    }
    black_box(&mut buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_has_no_real_time_priority() {
        assert_eq!(effective_priority(SchedPolicy::Other, 95), 0);
        assert_eq!(effective_priority(SchedPolicy::Fifo, 95), 95);
        assert_eq!(effective_priority(SchedPolicy::Rr, 10), 10);
    }
}
