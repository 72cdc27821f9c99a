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

/// The priority actually applied: only FIFO and RR have a real-time
/// priority, whatever was asked for.
pub fn effective_priority(policy: SchedPolicy, priority: u32) -> u32 {
    if policy.has_priority() {
        priority
    } else {
        0
    }
}

/// The scheduling every thread of one probe asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sched {
    pub policy: SchedPolicy,
    pub priority: u32,
    /// Under OTHER or BATCH: the nice value each thread takes.
    pub nice: Option<i32>,
    /// The timer slack each thread sets before taking its policy.
    pub slack: TimerSlack,
}

pub(crate) fn set_up_thread(cpu: CpuId, sched: Sched) -> Result<ThreadSetup, ProbeError> {
    let Sched {
        policy,
        priority,
        nice,
        slack,
    } = sched;
    // The kernel refuses SCHED_DEADLINE to a thread that cannot run on
    // every CPU of its root domain: a DEADLINE thread stays unpinned.
    let deadline = matches!(policy, SchedPolicy::Deadline(_));
    if !deadline {
        latscope_platform::set_affinity(cpu).map_err(|e| ProbeError::Affinity {
            cpu,
            reason: e.to_string(),
        })?;
    }
    // Stop signals go to the housekeeping thread, never into a measurement.
    let _ = latscope_platform::block_signals_in_this_thread();
    // `default` leaves the slack this thread inherited alone.
    let slack_set = match slack {
        TimerSlack::Set(ns) => latscope_platform::set_timer_slack(ns.0).is_ok(),
        TimerSlack::KernelDefault => true,
    };
    let priority = effective_priority(policy, priority);
    let scheduler = latscope_platform::set_scheduler(policy, priority).map_err(|e| e.to_string());
    match &scheduler {
        // A DEADLINE reservation refused (admission control above all) is
        // the answer the user asked for: the probe does not start.
        Err(reason) if deadline => return Err(ProbeError::Scheduler(reason.clone())),
        Err(_) if policy != SchedPolicy::Other => {
            let _ = latscope_platform::set_scheduler(SchedPolicy::Other, 0);
        }
        _ => {}
    }
    // A refused nice value (a negative one needs CAP_SYS_NICE) leaves the
    // policy and the inherited nice value: reported, not fatal.
    let scheduler = match (scheduler, nice) {
        (Ok(()), Some(n)) => latscope_platform::set_nice(n).map_err(|e| e.to_string()),
        (s, _) => s,
    };
    let rr = policy == SchedPolicy::Rr && scheduler.is_ok();
    Ok(ThreadSetup {
        cpu,
        tid: latscope_platform::current_tid(),
        scheduler,
        timer_slack_ns: latscope_platform::timer_slack().ok().filter(|_| slack_set),
        rr_interval_ns: rr
            .then(|| latscope_platform::rr_interval().ok())
            .flatten()
            .map(|n| n.0),
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
            nice: None,
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
        assert_eq!(effective_priority(SchedPolicy::Batch, 10), 0);
        assert_eq!(effective_priority(SchedPolicy::Idle, 10), 0);
    }

    /// Under RR the thread records the quantum the kernel reports; a
    /// refused DEADLINE reservation stops the set-up with the kernel's
    /// reason instead of falling back to SCHED_OTHER.
    #[test]
    fn rr_records_its_quantum_and_a_refused_deadline_is_an_error() {
        let cpu = latscope_platform::online_cpus()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let sched = |policy| Sched {
            policy,
            priority: 10,
            nice: None,
            slack: TimerSlack::MINIMUM,
        };
        let rr = sched(SchedPolicy::Rr);
        let setup = std::thread::spawn(move || set_up_thread(cpu, rr).unwrap())
            .join()
            .unwrap();
        match setup.scheduler {
            Ok(()) => assert!(setup.rr_interval_ns.is_some_and(|ns| ns > 0)),
            Err(_) => println!("skipped: needs SCHED_RR (root or CAP_SYS_NICE)"),
        }
        // EINVAL whatever the privileges: runtime above the period.
        let bad = sched(SchedPolicy::Deadline(latscope_platform::DeadlineParams {
            runtime: Nanos::from_millis(2),
            deadline: Nanos::from_millis(1),
            period: Nanos::from_millis(1),
        }));
        let err = std::thread::spawn(move || set_up_thread(cpu, bad))
            .join()
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, ProbeError::Scheduler(_)), "{err}");
        assert!(err.to_string().contains("SCHED_DEADLINE"), "{err}");
    }
}
