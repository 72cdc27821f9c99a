//! The timer slack the measuring threads ended up with, and what a run
//! says about it. The threads read their slack back after taking their
//! policy, because the kernel clears the slack of a real-time thread: a
//! SCHED_FIFO run that set 1 ns measures with 0, and `--timer-slack` cannot
//! change that.

use latscope_model::TimerSlack;
use latscope_probes::ThreadSetup;

use crate::config::ProbeSpec;

/// The slack in force, ns: the largest the threads read back (the one
/// that can delay a wake-up most), or `None` when any thread could not set
/// or read its own.
pub(crate) fn in_force(setups: &[ThreadSetup]) -> Option<u64> {
    setups
        .iter()
        .map(|s| s.timer_slack_ns)
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .max()
}

/// A note for the run when the timer probe asked for a slack other than
/// the least under a real-time policy that every thread obtained: the
/// kernel gives such threads no slack, so the setting changed nothing.
pub(crate) fn note(probe: &ProbeSpec, setups: &[ThreadSetup]) -> Option<String> {
    let ProbeSpec::Timer(t) = probe else {
        return None;
    };
    let real_time = t.policy.is_real_time();
    let granted = setups.iter().all(|s| s.scheduler.is_ok());
    if t.timer_slack == TimerSlack::MINIMUM || !real_time || !granted {
        return None;
    }
    let read_back = in_force(setups).map_or("unknown".to_string(), |ns| format!("{ns} ns"));
    Some(format!(
        "timer slack {} has no effect under SCHED_{}: the kernel gives real-time threads no slack (read back: {read_back}); measure with policy other to see what slack does",
        t.timer_slack,
        t.policy.as_str().to_uppercase()
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, Nanos};
    use latscope_platform::SchedPolicy;
    use latscope_probes::timer::{Phase, TimerApi, TimerConfig};

    fn setup(slack: Option<u64>, granted: bool) -> ThreadSetup {
        ThreadSetup {
            cpu: CpuId(0),
            tid: 1,
            scheduler: if granted { Ok(()) } else { Err("EPERM".into()) },
            timer_slack_ns: slack,
            rr_interval_ns: None,
        }
    }

    fn timer(policy: SchedPolicy, slack: TimerSlack) -> ProbeSpec {
        ProbeSpec::Timer(TimerConfig {
            cpus: vec![CpuId(0)],
            period: Nanos::from_millis(1),
            policy,
            priority: 95,
            nice: None,
            api: TimerApi::ClockNanosleep,
            phase: Phase::Fixed,
            threshold: None,
            duration: Some(Nanos::from_secs(1)),
            handoff: 0,
            noise_duty: None,
            timer_slack: slack,
        })
    }

    #[test]
    fn the_largest_slack_read_back_or_none() {
        assert_eq!(
            in_force(&[setup(Some(1), true), setup(Some(0), true)]),
            Some(1)
        );
        assert_eq!(in_force(&[setup(Some(1), true), setup(None, true)]), None);
        assert_eq!(in_force(&[]), None);
    }

    #[test]
    fn a_note_only_when_a_real_time_policy_makes_the_slack_moot() {
        let fifty = TimerSlack::Set(Nanos::from_micros(50));
        let ok = [setup(Some(0), true)];
        let note = note(&timer(SchedPolicy::Fifo, fifty), &ok).unwrap();
        assert!(
            note.starts_with("timer slack 50.0µs has no effect under SCHED_FIFO"),
            "{note}"
        );
        assert!(note.contains("read back: 0 ns"), "{note}");
        let default = note_of(SchedPolicy::Rr, TimerSlack::KernelDefault, &ok);
        assert!(default.unwrap().contains("timer slack default"));
        assert_eq!(note_of(SchedPolicy::Fifo, TimerSlack::MINIMUM, &ok), None);
        assert_eq!(
            note_of(SchedPolicy::Other, fifty, &[setup(Some(50_000), true)]),
            None
        );
        // Refused: the threads run as SCHED_OTHER, where the slack applies.
        assert_eq!(
            note_of(SchedPolicy::Fifo, fifty, &[setup(Some(50_000), false)]),
            None
        );
    }

    fn note_of(policy: SchedPolicy, slack: TimerSlack, setups: &[ThreadSetup]) -> Option<String> {
        note(&timer(policy, slack), setups)
    }
}
