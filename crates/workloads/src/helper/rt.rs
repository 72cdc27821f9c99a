//! `rt-load PRIO BUSY_NS PERIOD_NS`: one SCHED_FIFO thread of the `rt:`
//! workload, busy (spinning) for BUSY_NS of CLOCK_MONOTONIC at the start
//! of every PERIOD_NS, asleep the rest. The spawner pins it.

use latscope_platform::timers::sleep_until;
use latscope_platform::{monotonic_ns, set_scheduler, spin_until, SchedPolicy};

/// The `i`th argument as a number, or a one-line complaint. (Its own, not
/// the helper module's: this file must not use its parent's items.)
fn num(args: &[String], i: usize, what: &str) -> Result<u64, String> {
    let text = args.get(i).ok_or_else(|| format!("missing {what}"))?;
    text.parse().map_err(|_| format!("bad {what} '{text}'"))
}

pub(super) fn main(args: &[String]) -> Result<i32, String> {
    let priority = num(args, 0, "priority")?;
    let busy = num(args, 1, "busy nanoseconds")?;
    let period = num(args, 2, "period nanoseconds")?;
    let priority = u32::try_from(priority)
        .ok()
        .filter(|p| (1..=99).contains(p))
        .ok_or_else(|| format!("priority {priority} not in 1..=99"))?;
    if busy == 0 || busy >= period {
        return Err(format!("busy {busy} ns not in 1..{period} ns"));
    }
    set_scheduler(SchedPolicy::Fifo, priority).map_err(|e| {
        format!("{e} (SCHED_FIFO needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= {priority})")
    })?;
    // A phase of its own per thread, so that several threads (and the
    // probes' periods) do not start their bursts in step.
    let phase = u64::from(std::process::id()) * 7919 % period;
    let mut next = monotonic_ns() + phase;
    loop {
        sleep_until(next).map_err(|e| format!("clock_nanosleep: {}", e.to_io()))?;
        spin_until(next + busy);
        next += period;
        let now = monotonic_ns();
        if next < now {
            // Late by more than a period (preempted, or throttled by the
            // kernel's real-time bandwidth limit): skip the missed bursts
            // rather than run them back to back.
            next = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn bad_arguments_are_refused_before_anything_runs() {
        for words in [
            &["0", "1", "2"][..],
            &["100", "1", "2"],
            &["90", "0", "2"],
            &["90", "2", "2"],
            &["90", "x", "2"],
            &["90", "1"],
        ] {
            assert!(main(&argv(words)).is_err(), "{words:?}");
        }
    }
}
