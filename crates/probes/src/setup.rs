//! What every measuring thread does before its loop: pin itself, keep stop
//! signals away, take its timer slack (the least, unless the timer probe's
//! `--timer-slack` says otherwise) and the chosen policy, and touch the
//! stack its loop will use. A refused real-time policy is not fatal: the
//! thread measures as SCHED_OTHER and the run records that the result is
//! not a real-time one. The slack is read back last, since taking a
//! real-time policy clears it: what is recorded is what was in force.

use std::hint::black_box;

use latscope_model::{CpuId, TimerSlack};
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

/// The scheduling every thread of one probe asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sched {
    pub policy: SchedPolicy,
    pub priority: u32,
    /// The timer slack each thread sets before taking its policy.
    pub slack: TimerSlack,
}

pub(crate) fn set_up_thread(cpu: CpuId, sched: Sched) -> Result<ThreadSetup, ProbeError> {
    let Sched {
        policy,
        priority,
        slack,
    } = sched;
    latscope_platform::set_affinity(cpu).map_err(|e| ProbeError::Affinity {
        cpu,
        reason: e.to_string(),
    })?;
    // Stop signals go to the housekeeping thread, never into a measurement.
    let _ = latscope_platform::block_signals_in_this_thread();
    // `default` leaves the slack this thread inherited alone.
    let slack_set = match slack {
        TimerSlack::Set(ns) => latscope_platform::set_timer_slack(ns.0).is_ok(),
        TimerSlack::KernelDefault => true,
    };
    let priority = effective_priority(policy, priority);
    let scheduler = latscope_platform::set_scheduler(policy, priority).map_err(|e| e.to_string());
    if scheduler.is_err() && policy != SchedPolicy::Other {
        let _ = latscope_platform::set_scheduler(SchedPolicy::Other, 0);
    }
    Ok(ThreadSetup {
        cpu,
        tid: latscope_platform::current_tid(),
        scheduler,
        timer_slack_ns: latscope_platform::timer_slack().ok().filter(|_| slack_set),
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use latscope_model::Nanos;

    /// Sets a thread up as a probe would, on the first online CPU, and
    /// returns the slack it read back.
    fn slack_after_setup(policy: SchedPolicy, slack: TimerSlack) -> Option<u64> {
        let cpu = latscope_platform::online_cpus()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let sched = Sched {
            policy,
            priority: effective_priority(policy, 10),
            slack,
        };
        std::thread::spawn(move || {
            let setup = set_up_thread(cpu, sched).unwrap();
            assert_eq!(setup.timer_slack_ns, latscope_platform::timer_slack().ok());
            (policy == SchedPolicy::Other || setup.scheduler.is_ok())
                .then_some(setup.timer_slack_ns)
        })
        .join()
        .unwrap()
        .flatten()
    }

    #[test]
    fn the_slack_read_back_is_the_one_in_force() {
        let other = SchedPolicy::Other;
        let fifty = TimerSlack::Set(Nanos::from_micros(50));
        assert_eq!(slack_after_setup(other, TimerSlack::MINIMUM), Some(1));
        assert_eq!(slack_after_setup(other, fifty), Some(50_000));
        // `default` keeps what a new thread inherits: this thread's slack.
        let inherited = latscope_platform::timer_slack().ok();
        assert_eq!(
            slack_after_setup(other, TimerSlack::KernelDefault),
            inherited
        );
        // A real-time thread gets no slack, whatever it set (when the
        // policy is granted at all: root or CAP_SYS_NICE).
        if let Some(rt) = slack_after_setup(SchedPolicy::Fifo, fifty) {
            assert_eq!(rt, 0);
        } else {
            println!("skipped: needs SCHED_FIFO (root or CAP_SYS_NICE)");
        }
    }

    #[test]
    fn other_has_no_real_time_priority() {
        assert_eq!(effective_priority(SchedPolicy::Other, 95), 0);
        assert_eq!(effective_priority(SchedPolicy::Fifo, 95), 95);
        assert_eq!(effective_priority(SchedPolicy::Rr, 10), 10);
    }
}
