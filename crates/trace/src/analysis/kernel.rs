//! Timer samples decomposed in the kernel (the BPF backend).
//!
//! With perf the analysis sees every event of a measured CPU and finds a
//! sample's hrtimer callback and switch-in in its window ([`Analyzer::find`]).
//! With BPF the kernel pairs them itself and hands over one record per
//! wake-up; the CPU's events reach user space only for a sample above the
//! threshold, copied from the BPF flight recorder. Both paths end in the
//! same decomposition and the same attribution, so the two backends give
//! the same answers from the same kernel events.

use latscope_model::CpuId;

use super::{Analyzer, Found, REPLAY_NS};
use crate::event::{EventKind, Names, TraceEvent};

/// What the kernel computed for one wake-up of a measuring thread, all
/// CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSample {
    /// The hrtimer's expiry as armed.
    pub expires: i64,
    /// The `now` the kernel handed the callback.
    pub callback_now: u64,
    /// The clock when the callback ran.
    pub callback_time: u64,
    /// The clock when the thread was switched in.
    pub switch_in: u64,
    /// Steal the kernel read from arming to the callback and on to the
    /// switch-in (`None` without a steal counter).
    pub steal: Option<super::KernelSteal>,
}

impl Analyzer {
    /// How far before a sample's expiry its episode's events must reach:
    /// the caller copies a window from `deadline - replay_ns()`.
    pub fn replay_ns() -> u64 {
        REPLAY_NS
    }

    /// The kernel's stacks for the sample handed over next (BPF backend):
    /// its episode, if it makes one, carries them.
    pub fn set_held(&mut self, raw: Option<super::held::RawHeld>) {
        self.held_next = raw;
    }

    /// Stacks the kernel could not take (map full, other), for the summary.
    pub fn set_stack_failures(&mut self, map_full: u64, failed: u64) {
        self.summary.stacks_map_full = map_full;
        self.summary.stacks_failed = failed;
    }

    /// Whether a sample with this latency becomes an episode (and so needs
    /// its window of events).
    pub fn above_threshold(&self, latency_ns: u64) -> bool {
        latency_ns > self.config.threshold.0
    }

    /// The interrupt and deferred-work histograms the kernel aggregated
    /// (BPF backend), in place of those built from events.
    pub fn set_work_histograms(
        &mut self,
        hist: std::collections::HashMap<super::work::WorkKey, latscope_stats::Histogram>,
    ) {
        self.work.replace(hist);
    }

    /// One timer sample whose parts the kernel found (`None`: it sent no
    /// record for this wake-up). `window`, for a sample above the threshold,
    /// holds the CPU's events from `deadline - replay_ns()` to at least the
    /// wake-up, oldest first, and whether nothing in that range is missing.
    pub fn on_kernel_sample(
        &mut self,
        cpu: CpuId,
        deadline: u64,
        wake: u64,
        found: Option<KernelSample>,
        window: Option<(&[TraceEvent], bool)>,
        names: &Names,
    ) {
        let Some(m) = self.index(cpu.0) else {
            return;
        };
        if let Some((events, complete)) = window {
            self.summary.events += events.len() as u64;
            for ev in events {
                self.threads.note(ev);
            }
            let mc = &mut self.measured[m];
            mc.window.clear();
            mc.window.extend(events.iter().copied());
            mc.lost_at = None;
            mc.evicted_at = if complete {
                None
            } else {
                Some(deadline.saturating_sub(REPLAY_NS))
            };
        }
        let tid = self.measured[m].tid;
        let found = found.map(|k| {
            let mut f = Found {
                callback_time: k.callback_time,
                callback_now: k.callback_now,
                switch_in: k.switch_in,
                expires: k.expires,
                steal: k.steal,
            };
            if let Some((events, _)) = window {
                align(&mut f, events, tid, wake);
            }
            f
        });
        self.decompose(m, deadline, wake, found, names);
        if window.is_some() {
            // The window served this sample only; the next one brings its own.
            let mc = &mut self.measured[m];
            mc.window.clear();
            mc.evicted_at = None;
        }
    }
}

/// The kernel's record and the flight recorder read the clock separately
/// (two programs on one tracepoint). The attribution places the phases
/// among the window's events, so the callback and the switch-in are taken
/// from the window itself where it holds them: the callback by its `now`
/// (the same kernel value in both), the switch-in as perf's analysis takes
/// it, our thread's last `sched_switch` in before the wake-up. (The
/// kernel's record has the first one after the callback: they differ when
/// the thread was preempted again before it read the clock, which an
/// episode must then show as the time it waited for the CPU.)
fn align(f: &mut Found, events: &[TraceEvent], tid: i32, wake: u64) {
    let Some(i) = events.iter().position(|e| {
        matches!(e.kind, EventKind::HrtimerExpireEntry { now, .. } if now >= 0 && now as u64 == f.callback_now)
    }) else {
        return;
    };
    let Some(s) = events[i..].iter().rev().find(|e| {
        e.time <= wake
            && matches!(e.kind, EventKind::SchedSwitch { next_pid, .. } if next_pid == tid)
    }) else {
        return;
    };
    f.callback_time = events[i].time;
    f.switch_in = s.time;
}
