//! UDP mode: one sample is one datagram, from the kernel's receive time
//! stamp to the moment the receiver's user code has it. On loopback and
//! veth the stamp is taken in `netif_rx` on the *sender's* CPU; the `NET_RX`
//! softirq (there, in the sender's context or `ksoftirqd`) runs the protocol
//! stack and wakes the receiver (`sched_waking`, recorded on the waker's
//! CPU); the receiver is switched in on its own CPU and returns to user code.
//! So a sample is split at two events that may lie on different CPUs:
//!
//! - `udp.recv.deliver`: stamp → the latest `sched_waking` of the receiver
//!   in `[stamp - tolerance, wake]`, on any followed CPU;
//! - `udp.recv.sched`: waking → the latest switch to the receiver on its
//!   CPU after the waking (the waking itself when the receiver was still
//!   running and was not switched out);
//! - `udp.recv.return`: switched in → user code.
//!
//! Events are read CPU ring by CPU ring, so when the receiver's CPU has gone
//! past a sample the sender's CPU may not have been fed yet: samples wait
//! for [`Analyzer::flush`], which the caller calls after a whole read.

use latscope_model::{metric, Breakdown, Cause, CauseKind, Nanos};

use super::attribute::{self, Marks};
use super::state::{Analyzer, AnalyzerConfig, Decomposition, MeasuredCpu, REPLAY_NS};
use crate::event::{EventKind, Names, TraceEvent};

/// Where the receiver was woken and switched in for one datagram.
struct Wakeup {
    /// Index into `measured` of the CPU that recorded the waking.
    waker: usize,
    waking: u64,
    switch_in: u64,
}

/// The index of the receiver's CPU in `measured`, adding it if `measured`
/// lacks that CPU; its tid becomes the receiver's.
pub(super) fn receiver(
    config: &AnalyzerConfig,
    by_cpu: &mut Vec<Option<usize>>,
    measured: &mut Vec<MeasuredCpu>,
) -> Option<usize> {
    let rx = config
        .udp_receiver
        .or_else(|| config.measured.first().copied())?;
    let c = rx.cpu.0 as usize;
    if by_cpu.len() <= c {
        by_cpu.resize(c + 1, None);
    }
    let i = match by_cpu[c] {
        Some(i) => i,
        None => {
            measured.push(MeasuredCpu::new(
                rx,
                config.window_events,
                config.cell_start_ns,
            ));
            by_cpu[c] = Some(measured.len() - 1);
            measured.len() - 1
        }
    };
    measured[i].tid = rx.tid;
    Some(i)
}

impl MeasuredCpu {
    /// The window's events in `[from, to]` (the window is in time order).
    pub(super) fn events_between(&self, from: u64, to: u64) -> Vec<&TraceEvent> {
        let lo = self.window.partition_point(|e| e.time < from);
        let hi = self.window.partition_point(|e| e.time <= to);
        self.window.range(lo..hi.max(lo)).collect()
    }

    /// Whether the window holds every event of this CPU since `floor`.
    fn complete_since(&self, floor: u64) -> bool {
        self.evicted_at.map_or(true, |t| t < floor) && self.lost_at.map_or(true, |t| t < floor)
    }
}

impl Analyzer {
    /// One datagram on the receiver's CPU (`m`): decomposed into
    /// deliver / sched / return, and an episode above the threshold.
    pub(super) fn process_udp(&mut self, m: usize, stamp: u64, wake: u64, names: &Names) {
        let cpu = self.measured[m].cpu;
        let Some(w) = self.find_wakeup(m, stamp, wake) else {
            // Delivered on a CPU not followed, or its events were lost.
            self.add_undecomposed(cpu, 1);
            self.udp_episode(m, stamp, wake, None, names);
            return;
        };
        // The search bounds are the order checks: stamp - tolerance ≤
        // waking ≤ switch-in ≤ wake. Clamped into [stamp, wake] (the stamp
        // is converted from CLOCK_REALTIME by the probe), the parts add up
        // to the latency exactly.
        let end = wake.max(stamp);
        let waking = w.waking.clamp(stamp, end);
        let switch_in = w.switch_in.clamp(waking, end);
        let (deliver, sched, ret) = (waking - stamp, switch_in - waking, end - switch_in);
        let mc = &mut self.measured[m];
        mc.irq.record(deliver);
        mc.sched.record(sched);
        mc.ret.record(ret);
        self.summary.samples_decomposed += 1;
        *self.summary.decomposed_per_cpu.entry(cpu.0).or_default() += 1;
        if self.keep_decompositions {
            self.decompositions.push(Decomposition {
                cpu,
                deadline: stamp,
                wake,
                irq: deliver,
                sched,
                ret,
                expires: 0,
            });
        }
        self.udp_episode(m, stamp, wake, Some(&w), names);
    }

    /// The latest `sched_waking` of the receiver in `[stamp - tolerance,
    /// wake]` on any followed CPU, and the latest switch to it on its own
    /// CPU in `[waking, wake]`.
    fn find_wakeup(&self, rx: usize, stamp: u64, wake: u64) -> Option<Wakeup> {
        let tid = self.measured[rx].tid;
        let floor = stamp.saturating_sub(self.config.tolerance_ns);
        let mut best: Option<(u64, usize)> = None;
        for (i, mc) in self.measured.iter().enumerate() {
            let latest = mc
                .events_between(floor, wake)
                .into_iter()
                .rev()
                .find(|e| matches!(e.kind, EventKind::SchedWaking { pid, .. } if pid == tid));
            if let Some(e) = latest {
                // On a tie the CPU listed first keeps it.
                if best.map_or(true, |(t, _)| e.time > t) {
                    best = Some((e.time, i));
                }
            }
        }
        let (waking, waker) = best?;
        let switch_in = self.measured[rx]
            .events_between(waking, wake)
            .into_iter()
            .rev()
            .find(|e| matches!(e.kind, EventKind::SchedSwitch { next_pid, .. } if next_pid == tid))
            .map_or(waking, |e| e.time);
        Some(Wakeup {
            waker,
            waking,
            switch_in,
        })
    }

    /// The episode of a datagram above the threshold: the deliver phase is
    /// charged over the waker's CPU, the rest over the receiver's, and the
    /// two lists are merged, so the shares add up to the latency.
    fn udp_episode(
        &mut self,
        rx: usize,
        stamp: u64,
        wake: u64,
        found: Option<&Wakeup>,
        names: &Names,
    ) {
        let latency = wake.saturating_sub(stamp);
        if latency <= self.config.threshold.0 {
            return;
        }
        let end = wake.max(stamp);
        let floor = stamp.saturating_sub(REPLAY_NS);
        let rxc = &self.measured[rx];
        let rx_evs = rxc.events_between(floor, end);
        let rx_complete = rxc.complete_since(floor);
        let threads = &self.threads;
        let env = self.env.as_ref();
        let marks = |deadline, callback, switch_in, wake, tid| Marks {
            deadline,
            callback,
            switch_in,
            wake,
            tid,
            noise: false,
            udp: true,
            phases_known: true,
        };
        let breakdown = match found {
            None => {
                // Where the receiver was woken is unknown: all of it is
                // charged as if it were runnable on its CPU.
                let m = marks(stamp, stamp, end, end, rxc.tid);
                let mut b = attribute::attribute(&rx_evs, &m, rx_complete, names, threads, env);
                b.complete = false;
                b
            }
            Some(w) => {
                let waking = w.waking.clamp(stamp, end);
                let switch_in = w.switch_in.clamp(waking, end);
                let mut b = if w.waker == rx {
                    let m = marks(stamp, waking, switch_in, end, rxc.tid);
                    attribute::attribute(&rx_evs, &m, rx_complete, names, threads, env)
                } else {
                    let wc = &self.measured[w.waker];
                    let m = marks(stamp, waking, waking, waking, wc.tid);
                    let deliver = attribute::attribute(
                        &wc.events_between(floor, waking),
                        &m,
                        wc.complete_since(floor),
                        names,
                        threads,
                        env,
                    );
                    let m = marks(waking, waking, switch_in, end, rxc.tid);
                    let rest = attribute::attribute(&rx_evs, &m, rx_complete, names, threads, env);
                    let mut b = merge(deliver, rest);
                    b.idle_at_expiry = attribute::idle_at(&rx_evs, stamp);
                    b
                };
                // For UDP the three fields are deliver / sched / return.
                b.irq_ns = Nanos(waking - stamp);
                b.sched_ns = Nanos(switch_in - waking);
                b.return_ns = Nanos(end - switch_in);
                b
            }
        };
        self.episode_from(rx, stamp, wake, breakdown, metric::UDP_RECV, names);
    }
}

/// The breakdown of the deliver phase (`a`, on the waker's CPU) and of the
/// rest (`b`, on the receiver's): shares of the same cause are summed.
fn merge(a: Breakdown, b: Breakdown) -> Breakdown {
    let mut causes: Vec<Cause> = Vec::with_capacity(a.causes.len() + b.causes.len());
    for c in a.causes.into_iter().chain(b.causes) {
        match causes
            .iter_mut()
            .find(|x| x.kind == c.kind && x.name == c.name && x.pid == c.pid)
        {
            Some(x) => x.duration_ns = Nanos(x.duration_ns.0.saturating_add(c.duration_ns.0)),
            None => causes.push(c),
        }
    }
    attribute::sort_causes(&mut causes);
    let unexplained = causes
        .iter()
        .filter(|c| c.kind == CauseKind::Unexplained)
        .map(|c| c.duration_ns.0)
        .sum();
    // Only the receiver can be blocked (the deliver phase names no
    // blocking thread).
    let blocking = match (a.blocking, b.blocking) {
        (Some(x), Some(y)) => Some(if x.duration_ns > y.duration_ns { x } else { y }),
        (x, y) => y.or(x),
    };
    Breakdown {
        irq_ns: a.irq_ns,
        sched_ns: b.sched_ns,
        return_ns: b.return_ns,
        idle_at_expiry: b.idle_at_expiry,
        causes,
        blocking,
        unexplained_ns: Nanos(unexplained),
        steal_ns: None,
        steal_source: None,
        steal_irq_ns: None,
        steal_sched_ns: None,
        complete: a.complete && b.complete,
        held: None,
    }
}
