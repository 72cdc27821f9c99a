//! Where one long latency went: a sweep over the CPU's events from the
//! intended expiry to the wake-up that charges every nanosecond to exactly
//! one context — the innermost of NMI, softirq, interrupt handler or vector,
//! or the running thread — and then names each share by the phase it fell
//! in (timer interrupt not yet taken, our thread runnable, our thread
//! running). The shares therefore add up to the latency by construction.
//!
//! A datagram of the UDP probe goes through the same phases with other fixed
//! points: receive time stamp → receiver woken (deliver, in `Phase::Irq`),
//! woken → switched in, switched in → user code (`Marks::udp`).

use std::collections::HashMap;

use latscope_model::{Breakdown, Cause, CauseKind, Nanos};

use super::parts::{PartSource, PartTally};
use crate::event::{softirq_name, Comm, DeferredKind, EventKind, NameId, Names, TraceEvent};

/// The NET_RX softirq's number: NAPI polls run in it.
const NET_RX: u32 = 3;

/// What was running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    Thread(i32),
    Irq {
        irq: i32,
        name: NameId,
    },
    Vector {
        name: NameId,
        ours: bool,
    },
    Softirq(u32),
    Nmi,
    /// Deferred work inside `parent` (a softirq or interrupt frame): its
    /// time is the parent's cause, and a part of it.
    Deferred {
        source: PartSource,
        parent: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    /// Expiry → our timer's callback: the interrupt is not yet taken.
    /// UDP: receive time stamp → receiver woken (the protocol work).
    Irq,
    /// Callback → switched in: our thread is runnable.
    Sched,
    /// Switched in → user code.
    Return,
}

/// The fixed points of one sample, CLOCK_MONOTONIC ns. For an interruption
/// of the noise probe's loop, `deadline` is its start and the other three
/// its end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Marks {
    pub deadline: u64,
    /// Perf time of our `hrtimer_expire_entry`.
    pub callback: u64,
    pub switch_in: u64,
    pub wake: u64,
    pub tid: i32,
    /// An interruption of the noise probe rather than a timer sample: our
    /// own thread "running" through it means nothing the OS recorded took
    /// the CPU (hardware or hypervisor), and every interrupt is noise.
    pub noise: bool,
    /// A datagram of the UDP probe: `deadline` is its receive time stamp and
    /// `callback` the `sched_waking` of the receiver. Before it (the deliver
    /// phase) no timer interrupt is awaited: an idle CPU is just idle and
    /// another thread is named as itself; no vector is "ours".
    pub udp: bool,
    /// Our timer's callback and switch-in were found. Without them the
    /// phases are unknown (the kernel did not record those events, or the
    /// window lost them): a thread that ran is then not said to have run
    /// "while the interrupt was late", which is only known with them.
    pub phases_known: bool,
}

/// What the analysis knows about threads it has seen switch.
#[derive(Default)]
pub(crate) struct ThreadNames {
    pub comm: HashMap<i32, Comm>,
    pub prio: HashMap<i32, i32>,
}

impl ThreadNames {
    pub fn note(&mut self, ev: &TraceEvent) {
        match ev.kind {
            EventKind::SchedSwitch {
                prev_pid,
                prev_prio,
                prev_comm,
                next_pid,
                next_prio,
                next_comm,
                ..
            } => {
                self.comm.insert(prev_pid, prev_comm);
                self.prio.insert(prev_pid, prev_prio);
                self.comm.insert(next_pid, next_comm);
                self.prio.insert(next_pid, next_prio);
            }
            EventKind::SchedWaking {
                pid, prio, comm, ..
            } => {
                self.comm.insert(pid, comm);
                self.prio.insert(pid, prio);
            }
            _ => {}
        }
    }

    /// Keeps the tables from growing without bound on systems that create
    /// threads all the time: past `cap` entries they start over (the next
    /// switches refill them).
    pub fn trim(&mut self, cap: usize) {
        if self.comm.len() > cap {
            self.comm.clear();
            self.prio.clear();
        }
    }
}

/// Looks up what the trace cannot say: a thread's scheduling policy.
pub trait Environment {
    /// "fifo", "rr", "other", "batch", "idle" or "deadline", if known.
    fn policy(&self, pid: i32) -> Option<String>;
}

/// An environment that knows nothing (tests, replays on another machine).
pub struct NoEnvironment;

impl Environment for NoEnvironment {
    fn policy(&self, _pid: i32) -> Option<String> {
        None
    }
}

struct Slice {
    frame: usize,
    phase: Phase,
    ns: u64,
}

/// Charges `[marks.deadline, marks.wake]` to contexts. `events` are the
/// CPU's events in time order; `start` is the index to replay from (early
/// enough to know what was running at the deadline). Returns the breakdown
/// and whether the events covered the whole interval.
pub(crate) fn attribute(
    events: &[&TraceEvent],
    marks: &Marks,
    window_complete: bool,
    names: &Names,
    threads: &ThreadNames,
    env: &dyn Environment,
) -> Breakdown {
    let d = marks.deadline;
    let u = marks.wake.max(d);
    let mut frames: Vec<Frame> = Vec::new();
    // Stack of indices into `frames`: [thread, nested contexts...].
    let mut stack: Vec<usize> = Vec::new();
    let mut slices: Vec<Slice> = Vec::new();
    let mut complete = window_complete;

    let phase_at = |t: u64| {
        if t < marks.callback {
            Phase::Irq
        } else if t < marks.switch_in {
            Phase::Sched
        } else {
            Phase::Return
        }
    };

    // The first event tells who was running; until an event says so,
    // nothing is known.
    let mut cursor = d;
    let mut unknown_ns = 0u64;
    let charge =
        |from: u64, to: u64, stack: &Vec<usize>, slices: &mut Vec<Slice>, unknown: &mut u64| {
            let (from, to) = (from.max(d), to.min(u));
            if to <= from {
                return;
            }
            let Some(&top) = stack.last() else {
                *unknown += to - from;
                return;
            };
            // Split at the phase boundaries.
            let mut a = from;
            for b in [marks.callback, marks.switch_in, to] {
                if b > a && b <= to {
                    slices.push(Slice {
                        frame: top,
                        phase: phase_at(a),
                        ns: b - a,
                    });
                    a = b;
                }
            }
            if a < to {
                slices.push(Slice {
                    frame: top,
                    phase: phase_at(a),
                    ns: to - a,
                });
            }
        };

    let mut seen_any = false;
    let mut missed_ns = 0u64;
    // NAPI polls have no entry event: each one ran from the NET_RX
    // softirq's entry or the previous poll's return to its own.
    let mut napi_mark: Option<u64> = None;
    let mut napi: Vec<(usize, NameId, u64)> = Vec::new();
    for ev in events {
        if ev.time > u {
            break;
        }
        // The event's task is the running thread (the switch changes it
        // after the event).
        if !seen_any || stack.is_empty() {
            let f = frames.len();
            frames.push(Frame::Thread(ev.tid));
            stack.clear();
            stack.push(f);
            if ev.time > d && !seen_any {
                // Nothing recorded between the deadline and this event: the
                // events before it were not in the window.
                if !window_complete {
                    unknown_ns += ev.time - d;
                    cursor = ev.time;
                }
            }
            seen_any = true;
        }
        // Every event names the task that was current: if that is not the
        // thread the sweep believes runs, a switch was not recorded (the
        // kernel did not emit it, or it was lost). The time since the last
        // event cannot be given to either thread.
        let running = match ev.kind {
            EventKind::SchedSwitch { prev_pid, .. } => prev_pid,
            _ => ev.tid,
        };
        let believed = stack.first().map(|&i| frames[i]);
        if seen_any && believed.is_some_and(|f| f != Frame::Thread(running)) {
            if ev.time > cursor {
                let (a, b) = (cursor.max(d), ev.time.min(u));
                if b > a {
                    missed_ns += b - a;
                }
                cursor = ev.time;
            }
            let f = frames.len();
            frames.push(Frame::Thread(running));
            stack.clear();
            stack.push(f);
        }
        if ev.time > cursor {
            charge(cursor, ev.time, &stack, &mut slices, &mut unknown_ns);
            cursor = ev.time;
        }
        match ev.kind {
            EventKind::SchedSwitch { next_pid, .. } => {
                // Only the thread at the bottom changes; interrupt frames
                // cannot be open across a switch.
                let f = frames.len();
                frames.push(Frame::Thread(next_pid));
                stack.clear();
                stack.push(f);
            }
            EventKind::IrqEntry { irq, name } => {
                frames.push(Frame::Irq { irq, name });
                stack.push(frames.len() - 1);
            }
            EventKind::VectorEntry { name, .. } => {
                frames.push(Frame::Vector { name, ours: false });
                stack.push(frames.len() - 1);
            }
            EventKind::SoftirqEntry { vec } => {
                frames.push(Frame::Softirq(vec));
                stack.push(frames.len() - 1);
                napi_mark = (vec == NET_RX).then_some(ev.time);
            }
            EventKind::TimerExpireEntry { function, .. } => {
                push_deferred(&mut frames, &mut stack, DeferredKind::Timer, function);
            }
            EventKind::TaskletEntry { function, .. } => {
                push_deferred(&mut frames, &mut stack, DeferredKind::Tasklet, function);
            }
            EventKind::HrtimerExpireEntry { function, .. }
                if marks.udp || ev.time != marks.callback =>
            {
                push_deferred(&mut frames, &mut stack, DeferredKind::Hrtimer, function);
            }
            EventKind::TimerExpireExit { .. } => {
                pop_deferred(&mut stack, &frames, DeferredKind::Timer);
            }
            EventKind::TaskletExit { .. } => {
                pop_deferred(&mut stack, &frames, DeferredKind::Tasklet);
            }
            EventKind::HrtimerExpireExit { .. } => {
                pop_deferred(&mut stack, &frames, DeferredKind::Hrtimer);
            }
            EventKind::NapiPoll { dev, .. } => {
                if let (Some(mark), Some(&top)) = (napi_mark, stack.last()) {
                    let (a, b) = (mark.max(d), ev.time.min(u));
                    if b > a && frames[top] == Frame::Softirq(NET_RX) {
                        napi.push((top, dev, b - a));
                    }
                }
                napi_mark = Some(ev.time);
            }
            EventKind::IrqExit { irq, .. } => pop_to(
                &mut stack,
                &frames,
                |f| matches!(f, Frame::Irq { irq: i, .. } if *i == irq),
            ),
            EventKind::VectorExit { name, .. } => pop_to(
                &mut stack,
                &frames,
                |f| matches!(f, Frame::Vector { name: n, .. } if *n == name),
            ),
            EventKind::SoftirqExit { vec } => {
                napi_mark = None;
                pop_to(
                    &mut stack,
                    &frames,
                    |f| matches!(f, Frame::Softirq(v) if *v == vec),
                );
            }
            EventKind::HrtimerExpireEntry { .. } if !marks.udp && ev.time == marks.callback => {
                // Our callback: the vector it runs in is our timer interrupt.
                if let Some(&i) = stack
                    .iter()
                    .rev()
                    .find(|&&i| matches!(frames[i], Frame::Vector { .. }))
                {
                    if let Frame::Vector { ours, .. } = &mut frames[i] {
                        *ours = true;
                    }
                }
            }
            EventKind::Nmi { delta_ns, .. } if ev.time > d => {
                // Reported when the handler returns: take its time back from
                // whatever the sweep charged just before.
                let mut left = (delta_ns.max(0) as u64).min(ev.time - d);
                let taken = left;
                let mut k = slices.len();
                while left > 0 && k > 0 {
                    k -= 1;
                    let take = slices[k].ns.min(left);
                    slices[k].ns -= take;
                    left -= take;
                }
                let got = taken - left;
                if got > 0 {
                    frames.push(Frame::Nmi);
                    slices.push(Slice {
                        frame: frames.len() - 1,
                        phase: phase_at(ev.time.saturating_sub(got)),
                        ns: got,
                    });
                }
            }
            _ => {}
        }
    }
    if !seen_any {
        complete = false;
    }
    charge(cursor, u, &stack, &mut slices, &mut unknown_ns);

    // Name the shares.
    let mut causes: HashMap<(CauseKind, String, Option<i32>), u64> = HashMap::new();
    let mut blocking: HashMap<i32, u64> = HashMap::new();
    // Noise probe: did anything but our own loop run in the interruption?
    let other_context = slices
        .iter()
        .any(|s| s.ns > 0 && frames[s.frame] != Frame::Thread(marks.tid));
    let mut parts: PartTally<(CauseKind, String, Option<i32>)> = PartTally::default();
    let mut part_runs: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for s in &slices {
        if s.ns == 0 {
            continue;
        }
        let (owner, part) = match frames[s.frame] {
            Frame::Deferred { source, parent } => (parent, Some(source)),
            _ => (s.frame, None),
        };
        let (kind, name, pid) = match frames[owner] {
            Frame::Nmi => (CauseKind::Nmi, "NMI".to_string(), None),
            Frame::Vector { name, .. } if marks.noise => (
                CauseKind::Irq,
                format!("{} (vector)", names.get(name)),
                None,
            ),
            Frame::Thread(pid) if marks.noise && pid == marks.tid && other_context => (
                CauseKind::Return,
                "kernel entry and exit around the interruption".to_string(),
                Some(pid),
            ),
            Frame::Thread(pid) if marks.noise && pid == marks.tid => (
                CauseKind::Unexplained,
                "no OS event: hardware or hypervisor".to_string(),
                None,
            ),
            Frame::Thread(0) if marks.noise => (CauseKind::Idle, "CPU idle".to_string(), None),
            Frame::Thread(pid) if marks.noise => {
                *blocking.entry(pid).or_default() += s.ns;
                (CauseKind::Thread, comm_of(threads, pid), Some(pid))
            }
            Frame::Irq { irq, name } => {
                (CauseKind::Irq, format!("{irq}:{}", names.get(name)), None)
            }
            Frame::Vector { name, ours: true } => {
                (CauseKind::TimerIrq, names.get(name).to_string(), None)
            }
            Frame::Vector { name, ours: false } => (
                CauseKind::Irq,
                format!("{} (vector)", names.get(name)),
                None,
            ),
            Frame::Softirq(v) => (CauseKind::Softirq, softirq_name(v), None),
            // Never an owner: a deferred frame is charged to its parent.
            Frame::Deferred { .. } => continue,
            // UDP deliver phase: the datagram is in the stack, nobody waits
            // for an interrupt; the receiver is not runnable yet, so no
            // thread here is blocking it.
            Frame::Thread(0) if marks.udp && s.phase == Phase::Irq => {
                (CauseKind::Idle, "CPU idle".to_string(), None)
            }
            Frame::Thread(pid) if marks.udp && s.phase == Phase::Irq => {
                (CauseKind::Thread, comm_of(threads, pid), Some(pid))
            }
            Frame::Thread(0) if !marks.phases_known && !marks.udp => (
                CauseKind::Idle,
                "CPU idle; our timer's interrupt was not recorded".to_string(),
                None,
            ),
            // Our own thread, switched in (or still running from before
            // its sleep) without its events: its own time, not a culprit.
            Frame::Thread(pid) if !marks.phases_known && !marks.udp && pid == marks.tid => (
                CauseKind::Return,
                format!(
                    "{} itself ran; its switch-in was not recorded",
                    comm_of(threads, pid)
                ),
                Some(pid),
            ),
            Frame::Thread(pid) if !marks.phases_known && !marks.udp => (
                CauseKind::Unexplained,
                format!(
                    "{} ran; our timer's interrupt was not recorded",
                    comm_of(threads, pid)
                ),
                Some(pid),
            ),
            Frame::Thread(0) => match s.phase {
                Phase::Irq => (
                    CauseKind::Idle,
                    "CPU idle, timer interrupt late".to_string(),
                    None,
                ),
                _ => (CauseKind::Wakeup, "switch from idle".to_string(), None),
            },
            Frame::Thread(pid) if pid == marks.tid => match s.phase {
                Phase::Return => (CauseKind::Return, comm_of(threads, pid), Some(pid)),
                _ => (CauseKind::Thread, comm_of(threads, pid), Some(pid)),
            },
            Frame::Thread(pid) => match s.phase {
                Phase::Irq => (
                    CauseKind::Unexplained,
                    format!("timer interrupt late while {} ran", comm_of(threads, pid)),
                    Some(pid),
                ),
                Phase::Sched => {
                    *blocking.entry(pid).or_default() += s.ns;
                    (CauseKind::Thread, comm_of(threads, pid), Some(pid))
                }
                Phase::Return => (CauseKind::Thread, comm_of(threads, pid), Some(pid)),
            },
        };
        let key = (kind, name, pid);
        if let Some(source) = part {
            parts.add(&key, source, s.ns, part_runs.insert(s.frame));
        }
        *causes.entry(key).or_default() += s.ns;
    }
    for (frame, dev, ns) in napi {
        let key = (CauseKind::Softirq, frame_softirq_name(&frames[frame]), None);
        if causes.contains_key(&key) {
            parts.add(&key, PartSource::Device(dev), ns, true);
        }
    }
    if missed_ns > 0 {
        complete = false;
        *causes
            .entry((
                CauseKind::Unexplained,
                "events missing (a context switch was not recorded)".to_string(),
                None,
            ))
            .or_default() += missed_ns;
    }
    if unknown_ns > 0 {
        complete = false;
        *causes
            .entry((
                CauseKind::Unexplained,
                "no events recorded".to_string(),
                None,
            ))
            .or_default() += unknown_ns;
    }

    let mut thread_cause = |kind: CauseKind, name: String, pid: Option<i32>, ns: u64| {
        let (policy, priority) = match pid {
            Some(p) if kind == CauseKind::Thread || kind == CauseKind::Return => {
                policy_of(threads, env, p)
            }
            _ => (None, None),
        };
        let parts = parts.take(&(kind, name.clone(), pid), names);
        Cause {
            kind,
            name,
            pid,
            policy,
            priority,
            duration_ns: Nanos(ns),
            parts,
        }
    };
    let mut list: Vec<Cause> = causes
        .into_iter()
        .map(|((kind, name, pid), ns)| thread_cause(kind, name, pid, ns))
        .collect();
    sort_causes(&mut list);
    let blocking = blocking
        .into_iter()
        .max_by_key(|&(pid, ns)| (ns, -pid))
        .map(|(pid, ns)| thread_cause(CauseKind::Thread, comm_of(threads, pid), Some(pid), ns));
    let unexplained: u64 = list
        .iter()
        .filter(|c| c.kind == CauseKind::Unexplained)
        .map(|c| c.duration_ns.0)
        .sum();
    Breakdown {
        irq_ns: Nanos(marks.callback.saturating_sub(d).min(u - d)),
        sched_ns: Nanos(marks.switch_in.saturating_sub(marks.callback.max(d))),
        return_ns: Nanos(u.saturating_sub(marks.switch_in.max(d))),
        idle_at_expiry: idle_at(events, d),
        causes: list,
        blocking,
        unexplained_ns: Nanos(unexplained),
        steal_ns: None,
        steal_source: None,
        steal_irq_ns: None,
        steal_sched_ns: None,
        complete,
        held: None,
    }
}

/// Longest first, then by kind and name (a stable order for equal shares).
pub(crate) fn sort_causes(list: &mut [Cause]) {
    list.sort_by(|a, b| {
        b.duration_ns
            .cmp(&a.duration_ns)
            .then(a.kind.cmp(&b.kind))
            .then(a.name.cmp(&b.name))
    });
}

/// Opens deferred work inside whatever runs now (its parent); with
/// nothing open but the thread, the work has no interrupt context to
/// belong to (its entry came before the window) and is not opened.
fn push_deferred(frames: &mut Vec<Frame>, stack: &mut Vec<usize>, kind: DeferredKind, f: u64) {
    let Some(&top) = stack.last() else {
        return;
    };
    let parent = match frames[top] {
        Frame::Deferred { parent, .. } => parent,
        Frame::Thread(_) => return,
        _ => top,
    };
    frames.push(Frame::Deferred {
        source: PartSource::Function(kind, f),
        parent,
    });
    stack.push(frames.len() - 1);
}

/// Closes the innermost open deferred work of `kind`.
fn pop_deferred(stack: &mut Vec<usize>, frames: &[Frame], kind: DeferredKind) {
    pop_to(
        stack,
        frames,
        |f| matches!(f, Frame::Deferred { source: PartSource::Function(k, _), .. } if *k == kind),
    );
}

fn frame_softirq_name(f: &Frame) -> String {
    match f {
        Frame::Softirq(v) => softirq_name(*v),
        _ => String::new(),
    }
}

fn pop_to(stack: &mut Vec<usize>, frames: &[Frame], is: impl Fn(&Frame) -> bool) {
    // Never pop the thread at the bottom.
    if let Some(pos) = stack.iter().skip(1).rposition(|&i| is(&frames[i])) {
        stack.truncate(pos + 1);
    }
}

fn comm_of(threads: &ThreadNames, pid: i32) -> String {
    threads
        .comm
        .get(&pid)
        .map_or_else(|| format!("pid {pid}"), |c| c.to_string())
}

/// Policy and priority from the kernel priority seen in the trace (0..99
/// real-time, 100..139 normal) and, when it can tell, the environment.
fn policy_of(
    threads: &ThreadNames,
    env: &dyn Environment,
    pid: i32,
) -> (Option<String>, Option<i32>) {
    let prio = threads.prio.get(&pid).copied();
    let known = env.policy(pid);
    match prio {
        Some(p) if p < 100 => {
            let policy = match known.as_deref() {
                Some("fifo") | Some("rr") | Some("deadline") => known,
                _ => Some("rt".to_string()),
            };
            (policy, Some(99 - p))
        }
        Some(p) => {
            let policy = match known.as_deref() {
                Some("other") | Some("batch") | Some("idle") => known,
                _ => Some("other".to_string()),
            };
            (policy, Some(p - 120))
        }
        None => (known, None),
    }
}

/// Whether the idle task was running at `t`: the task current at the
/// first event after it (which does not depend on having seen the switch
/// before it), or the last one known when nothing followed.
pub(crate) fn idle_at(events: &[&TraceEvent], t: u64) -> bool {
    let mut last: Option<i32> = None;
    for ev in events {
        let running = match ev.kind {
            EventKind::SchedSwitch { prev_pid, .. } => prev_pid,
            _ => ev.tid,
        };
        if ev.time > t {
            return running == 0;
        }
        last = Some(match ev.kind {
            EventKind::SchedSwitch { next_pid, .. } => next_pid,
            _ => ev.tid,
        });
    }
    last == Some(0)
}
