//! What every measuring thread does before its loop: pin itself, keep stop
//! signals away, take the least timer slack and the chosen policy. A refused
//! real-time policy is not fatal: the thread measures as SCHED_OTHER and the
//! run records that the result is not a real-time one.

use latscope_model::CpuId;
use latscope_platform::SchedPolicy;

use crate::timer::{ProbeError, ThreadSetup};

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
