//! The code that held the CPU from perf call chains (perf backend with
//! `--stacks`): the same [`RawHeld`] the BPF backend's kernel records give,
//! built from the call chains of our hrtimer's callback and of our
//! thread's switch-in (docs/tracing.md, "The code that held the CPU").
//!
//! perf cannot take a stack only when a wake-up is late: every hit of the
//! two tracepoints walks its stack in the kernel. User space keeps only the
//! chains of the measured threads' own callbacks and switch-ins, and uses
//! them only for a sample that is an episode, under the same thresholds as
//! the BPF programs, so both backends answer the same question.

use std::collections::VecDeque;

use super::attribute::ThreadNames;
use super::held::RawHeld;
use crate::event::{EventKind, TraceEvent};
use crate::tracer::CHAIN_DEPTH;

/// Chains kept per measured CPU: at a 1 ms period two a wake-up, so about
/// 250 ms of wake-ups, well past how late a sample reaches the analysis.
const CHAIN_RING: usize = 512;

/// The kept call chains of one measured CPU, oldest first.
#[derive(Debug, Default)]
pub(crate) struct ChainRing {
    chains: VecDeque<(u64, Vec<u64>)>,
    /// The measured thread's hrtimer (from its last `hrtimer_start`).
    timer: Option<u64>,
}

impl ChainRing {
    /// Follows the measured thread's hrtimer through the CPU's events.
    pub fn note(&mut self, ev: &TraceEvent, tid: i32) {
        if let EventKind::HrtimerStart { hrtimer, .. } = ev.kind {
            if ev.tid == tid {
                self.timer = Some(hrtimer);
            }
        }
    }

    /// Keeps `ips`, the chain of `ev`, when `ev` is the measured thread's
    /// switch-in or its hrtimer's callback.
    pub fn offer(&mut self, ev: &TraceEvent, tid: i32, ips: &[u64]) {
        let ours = match ev.kind {
            EventKind::SchedSwitch { next_pid, .. } => next_pid == tid,
            EventKind::HrtimerExpireEntry { hrtimer, .. } => self.timer == Some(hrtimer),
            _ => false,
        };
        if !ours {
            return;
        }
        if self.chains.len() == CHAIN_RING {
            self.chains.pop_front();
        }
        self.chains.push_back((ev.time, ips.to_vec()));
    }

    /// Chains kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.chains.len()
    }

    fn at(&self, time: u64) -> Option<&[u64]> {
        self.chains
            .iter()
            .rev()
            .find(|(t, _)| *t == time)
            .map(|(_, ips)| ips.as_slice())
            .filter(|ips| !ips.is_empty())
    }
}

/// One late wake-up as the analysis found it.
pub(crate) struct Wakeup {
    pub tid: i32,
    pub expires: i64,
    pub callback_time: u64,
    pub switch_in: u64,
    pub threshold: u64,
}

fn later_than(t: u64, expires: i64, threshold: u64) -> bool {
    u64::try_from(expires).is_ok_and(|e| t > e && t - e > threshold)
}

/// What the BPF programs would have recorded for this wake-up: nothing
/// unless the switch-in is later than the threshold; the interrupted
/// task always, its stack when the callback was late too; the replaced
/// task and its stack unless it was idle.
pub(crate) fn raw_held(
    w: &Wakeup,
    events: &[&TraceEvent],
    ring: &ChainRing,
    threads: &ThreadNames,
) -> Option<RawHeld> {
    if !later_than(w.switch_in, w.expires, w.threshold) {
        return None;
    }
    let callback = events.iter().find(|e| {
        e.time == w.callback_time && matches!(e.kind, EventKind::HrtimerExpireEntry { .. })
    });
    let switch = events.iter().find_map(|e| match e.kind {
        EventKind::SchedSwitch {
            prev_pid,
            prev_comm,
            next_pid,
            ..
        } if e.time == w.switch_in && next_pid == w.tid => Some((prev_pid, prev_comm)),
        _ => None,
    })?;
    let mut missing = false;
    let irq_pid = callback.map(|e| e.tid);
    let irq_ips = match callback {
        Some(e) if later_than(e.time, w.expires, w.threshold) => {
            let ips = ring.at(e.time).map(<[u64]>::to_vec);
            missing |= ips.is_none();
            ips
        }
        _ => None,
    };
    let (prev_pid, prev_comm) = switch;
    let yield_ips = (prev_pid != 0)
        .then(|| ring.at(w.switch_in).map(<[u64]>::to_vec))
        .flatten();
    missing |= prev_pid != 0 && yield_ips.is_none();
    let irq_comm = irq_pid
        .filter(|&p| p != 0 && p != prev_pid)
        .and_then(|p| threads.comm.get(&p))
        .map(|c| c.to_string())
        .unwrap_or_default();
    Some(RawHeld {
        irq_pid,
        irq_comm,
        irq_ips,
        prev_pid,
        prev_comm: prev_comm.to_string(),
        yield_ips,
        note: missing.then(|| "stack not recorded (perf call chain missing)".to_string()),
        depth: usize::from(CHAIN_DEPTH),
    })
}
