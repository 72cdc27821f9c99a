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
    let mut sweep = Sweep::new(marks);
    sweep.run(events, window_complete);
    let (d, u) = (sweep.d, sweep.u);
    let complete =
        window_complete && sweep.seen_any && sweep.missed_ns == 0 && sweep.unknown_ns == 0;
    let mut named = Named::of(&sweep, names, threads);
    let (list, blocking) = named.causes(threads, env, names);
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

/// The sweep from the deadline `d` to the wake-up `u`: what ran, as a stack
/// of frames, and the time charged to each.
struct Sweep<'m> {
    marks: &'m Marks,
    d: u64,
    u: u64,
    frames: Vec<Frame>,
    /// Indices into `frames`: [thread, nested contexts...].
    stack: Vec<usize>,
    slices: Vec<Slice>,
    /// Charged up to here.
    cursor: u64,
    /// Time no event covers (before the first, or with nothing running).
    unknown_ns: u64,
    /// Time lost to a context switch that was not recorded.
    missed_ns: u64,
    seen_any: bool,
    /// NAPI polls have no entry event: each one ran from the NET_RX
    /// softirq's entry or the previous poll's return to its own.
    napi_mark: Option<u64>,
    napi: Vec<(usize, NameId, u64)>,
}

impl<'m> Sweep<'m> {
    fn new(marks: &'m Marks) -> Sweep<'m> {
        let d = marks.deadline;
        Sweep {
            marks,
            d,
            u: marks.wake.max(d),
            frames: Vec::new(),
            stack: Vec::new(),
            slices: Vec::new(),
            // The first event tells who was running; until an event says
            // so, nothing is known.
            cursor: d,
            unknown_ns: 0,
            missed_ns: 0,
            seen_any: false,
            napi_mark: None,
            napi: Vec::new(),
        }
    }

    fn phase_at(&self, t: u64) -> Phase {
        if t < self.marks.callback {
            Phase::Irq
        } else if t < self.marks.switch_in {
            Phase::Sched
        } else {
            Phase::Return
        }
    }

    /// Charges `[from, to]` (clipped to the sweep) to the innermost frame,
    /// split at the phase boundaries.
    fn charge(&mut self, from: u64, to: u64) {
        let (from, to) = (from.max(self.d), to.min(self.u));
        if to <= from {
            return;
        }
        let Some(&top) = self.stack.last() else {
            self.unknown_ns += to - from;
            return;
        };
        let mut a = from;
        for b in [self.marks.callback, self.marks.switch_in, to] {
            if b > a && b <= to {
                let phase = self.phase_at(a);
                self.slices.push(Slice {
                    frame: top,
                    phase,
                    ns: b - a,
                });
                a = b;
            }
        }
        if a < to {
            let phase = self.phase_at(a);
            self.slices.push(Slice {
                frame: top,
                phase,
                ns: to - a,
            });
        }
    }

    fn run(&mut self, events: &[&TraceEvent], window_complete: bool) {
        for ev in events {
            if ev.time > self.u {
                break;
            }
            self.follow_thread(ev, window_complete);
            if ev.time > self.cursor {
                self.charge(self.cursor, ev.time);
                self.cursor = ev.time;
            }
            self.apply(ev);
        }
        self.charge(self.cursor, self.u);
    }

    /// Only the thread at the bottom changes; interrupt frames cannot be
    /// open across a switch.
    fn set_thread(&mut self, tid: i32) {
        self.frames.push(Frame::Thread(tid));
        self.stack.clear();
        self.stack.push(self.frames.len() - 1);
    }

    fn push(&mut self, frame: Frame) {
        self.frames.push(frame);
        self.stack.push(self.frames.len() - 1);
    }

    /// The thread an event says runs: the event's task (the switch changes
    /// it after the event).
    fn follow_thread(&mut self, ev: &TraceEvent, window_complete: bool) {
        if !self.seen_any || self.stack.is_empty() {
            self.set_thread(ev.tid);
            if ev.time > self.d && !self.seen_any && !window_complete {
                // Nothing recorded between the deadline and this event: the
                // events before it were not in the window.
                self.unknown_ns += ev.time - self.d;
                self.cursor = ev.time;
            }
            self.seen_any = true;
        }
        // Every event names the task that was current: if that is not the
        // thread the sweep believes runs, a switch was not recorded (the
        // kernel did not emit it, or it was lost). The time since the last
        // event cannot be given to either thread.
        let running = match ev.kind {
            EventKind::SchedSwitch { prev_pid, .. } => prev_pid,
            _ => ev.tid,
        };
        let believed = self.stack.first().map(|&i| self.frames[i]);
        if believed.is_some_and(|f| f != Frame::Thread(running)) {
            if ev.time > self.cursor {
                let (a, b) = (self.cursor.max(self.d), ev.time.min(self.u));
                if b > a {
                    self.missed_ns += b - a;
                }
                self.cursor = ev.time;
            }
            self.set_thread(running);
        }
    }

    /// What an event opens or closes.
    fn apply(&mut self, ev: &TraceEvent) {
        let marks = self.marks;
        match ev.kind {
            EventKind::SchedSwitch { next_pid, .. } => self.set_thread(next_pid),
            EventKind::IrqEntry { irq, name } => self.push(Frame::Irq { irq, name }),
            EventKind::VectorEntry { name, .. } => self.push(Frame::Vector { name, ours: false }),
            EventKind::SoftirqEntry { vec } => {
                self.push(Frame::Softirq(vec));
                self.napi_mark = (vec == NET_RX).then_some(ev.time);
            }
            EventKind::TimerExpireEntry { function, .. } => {
                push_deferred(
                    &mut self.frames,
                    &mut self.stack,
                    DeferredKind::Timer,
                    function,
                );
            }
            EventKind::TaskletEntry { function, .. } => {
                push_deferred(
                    &mut self.frames,
                    &mut self.stack,
                    DeferredKind::Tasklet,
                    function,
                );
            }
            EventKind::HrtimerExpireEntry { function, .. }
                if marks.udp || ev.time != marks.callback =>
            {
                push_deferred(
                    &mut self.frames,
                    &mut self.stack,
                    DeferredKind::Hrtimer,
                    function,
                );
            }
            EventKind::TimerExpireExit { .. } => {
                pop_deferred(&mut self.stack, &self.frames, DeferredKind::Timer);
            }
            EventKind::TaskletExit { .. } => {
                pop_deferred(&mut self.stack, &self.frames, DeferredKind::Tasklet);
            }
            EventKind::HrtimerExpireExit { .. } => {
                pop_deferred(&mut self.stack, &self.frames, DeferredKind::Hrtimer);
            }
            EventKind::NapiPoll { dev, .. } => self.napi_poll(ev.time, dev),
            EventKind::IrqExit { irq, .. } => pop_to(
                &mut self.stack,
                &self.frames,
                |f| matches!(f, Frame::Irq { irq: i, .. } if *i == irq),
            ),
            EventKind::VectorExit { name, .. } => pop_to(
                &mut self.stack,
                &self.frames,
                |f| matches!(f, Frame::Vector { name: n, .. } if *n == name),
            ),
            EventKind::SoftirqExit { vec } => {
                self.napi_mark = None;
                pop_to(
                    &mut self.stack,
                    &self.frames,
                    |f| matches!(f, Frame::Softirq(v) if *v == vec),
                );
            }
            EventKind::HrtimerExpireEntry { .. } if !marks.udp && ev.time == marks.callback => {
                self.mark_our_vector();
            }
            EventKind::Nmi { delta_ns, .. } if ev.time > self.d => self.nmi(ev.time, delta_ns),
            _ => {}
        }
    }

    fn napi_poll(&mut self, time: u64, dev: NameId) {
        if let (Some(mark), Some(&top)) = (self.napi_mark, self.stack.last()) {
            let (a, b) = (mark.max(self.d), time.min(self.u));
            if b > a && self.frames[top] == Frame::Softirq(NET_RX) {
                self.napi.push((top, dev, b - a));
            }
        }
        self.napi_mark = Some(time);
    }

    /// Our callback: the vector it runs in is our timer interrupt.
    fn mark_our_vector(&mut self) {
        let frames = &mut self.frames;
        if let Some(&i) = self
            .stack
            .iter()
            .rev()
            .find(|&&i| matches!(frames[i], Frame::Vector { .. }))
        {
            if let Frame::Vector { ours, .. } = &mut frames[i] {
                *ours = true;
            }
        }
    }

    /// An NMI is reported when the handler returns: take its time back from
    /// whatever the sweep charged just before.
    fn nmi(&mut self, time: u64, delta_ns: i64) {
        let mut left = (delta_ns.max(0) as u64).min(time - self.d);
        let taken = left;
        let mut k = self.slices.len();
        while left > 0 && k > 0 {
            k -= 1;
            let take = self.slices[k].ns.min(left);
            self.slices[k].ns -= take;
            left -= take;
        }
        let got = taken - left;
        if got > 0 {
            self.frames.push(Frame::Nmi);
            let phase = self.phase_at(time.saturating_sub(got));
            self.slices.push(Slice {
                frame: self.frames.len() - 1,
                phase,
                ns: got,
            });
        }
    }
}

/// A cause before its policy and parts are looked up: kind, name, thread.
type CauseKey = (CauseKind, String, Option<i32>);

/// The shares of a sweep, named.
struct Named {
    causes: HashMap<CauseKey, u64>,
    /// Time each thread kept ours from running.
    blocking: HashMap<i32, u64>,
    parts: PartTally<CauseKey>,
}

impl Named {
    fn of(sweep: &Sweep<'_>, names: &Names, threads: &ThreadNames) -> Named {
        let (marks, frames) = (sweep.marks, &sweep.frames);
        let mut named = Named {
            causes: HashMap::new(),
            blocking: HashMap::new(),
            parts: PartTally::default(),
        };
        // Noise probe: did anything but our own loop run in the interruption?
        let other_context = sweep
            .slices
            .iter()
            .any(|s| s.ns > 0 && frames[s.frame] != Frame::Thread(marks.tid));
        let mut part_runs: std::collections::HashSet<usize> = std::collections::HashSet::new();
        for s in &sweep.slices {
            if s.ns == 0 {
                continue;
            }
            let (owner, part) = match frames[s.frame] {
                Frame::Deferred { source, parent } => (parent, Some(source)),
                _ => (s.frame, None),
            };
            let context = Context {
                marks,
                names,
                threads,
                other_context,
            };
            let Some(key) = context.cause(frames[owner], s, &mut named.blocking) else {
                continue;
            };
            if let Some(source) = part {
                named
                    .parts
                    .add(&key, source, s.ns, part_runs.insert(s.frame));
            }
            *named.causes.entry(key).or_default() += s.ns;
        }
        for &(frame, dev, ns) in &sweep.napi {
            let key = (CauseKind::Softirq, frame_softirq_name(&frames[frame]), None);
            if named.causes.contains_key(&key) {
                named.parts.add(&key, PartSource::Device(dev), ns, true);
            }
        }
        let mut add = |name: &str, ns: u64| {
            if ns > 0 {
                let key = (CauseKind::Unexplained, name.to_string(), None);
                *named.causes.entry(key).or_default() += ns;
            }
        };
        add(
            "events missing (a context switch was not recorded)",
            sweep.missed_ns,
        );
        add("no events recorded", sweep.unknown_ns);
        named
    }

    /// The causes, longest first, and the thread that blocked ours longest.
    fn causes(
        &mut self,
        threads: &ThreadNames,
        env: &dyn Environment,
        names: &Names,
    ) -> (Vec<Cause>, Option<Cause>) {
        let parts = &mut self.parts;
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
        let mut list: Vec<Cause> = std::mem::take(&mut self.causes)
            .into_iter()
            .map(|((kind, name, pid), ns)| thread_cause(kind, name, pid, ns))
            .collect();
        sort_causes(&mut list);
        let blocking = std::mem::take(&mut self.blocking)
            .into_iter()
            .max_by_key(|&(pid, ns)| (ns, -pid))
            .map(|(pid, ns)| thread_cause(CauseKind::Thread, comm_of(threads, pid), Some(pid), ns));
        (list, blocking)
    }
}

/// What naming a share needs to know.
struct Context<'a> {
    marks: &'a Marks,
    names: &'a Names,
    threads: &'a ThreadNames,
    /// Noise probe: something but our own loop ran in the interruption.
    other_context: bool,
}

impl Context<'_> {
    /// The cause a share of `owner` is charged to (`None` for a deferred
    /// frame, never an owner: it is charged to its parent). Time a thread
    /// kept ours from running is added to `blocking`.
    fn cause(&self, owner: Frame, s: &Slice, blocking: &mut HashMap<i32, u64>) -> Option<CauseKey> {
        let (marks, names) = (self.marks, self.names);
        let comm = |pid: i32| comm_of(self.threads, pid);
        Some(match owner {
            Frame::Nmi => (CauseKind::Nmi, "NMI".to_string(), None),
            Frame::Vector { name, .. } if marks.noise => (
                CauseKind::Irq,
                format!("{} (vector)", names.get(name)),
                None,
            ),
            Frame::Thread(pid) if marks.noise => return Some(self.noise_thread(pid, s, blocking)),
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
            Frame::Deferred { .. } => return None,
            // UDP deliver phase: the datagram is in the stack, nobody waits
            // for an interrupt; the receiver is not runnable yet, so no
            // thread here is blocking it.
            Frame::Thread(0) if marks.udp && s.phase == Phase::Irq => {
                (CauseKind::Idle, "CPU idle".to_string(), None)
            }
            Frame::Thread(pid) if marks.udp && s.phase == Phase::Irq => {
                (CauseKind::Thread, comm(pid), Some(pid))
            }
            Frame::Thread(pid) if !marks.phases_known && !marks.udp => self.unknown_phases(pid),
            Frame::Thread(0) => match s.phase {
                Phase::Irq => (
                    CauseKind::Idle,
                    "CPU idle, timer interrupt late".to_string(),
                    None,
                ),
                _ => (CauseKind::Wakeup, "switch from idle".to_string(), None),
            },
            Frame::Thread(pid) if pid == marks.tid => match s.phase {
                Phase::Return => (CauseKind::Return, comm(pid), Some(pid)),
                _ => (CauseKind::Thread, comm(pid), Some(pid)),
            },
            Frame::Thread(pid) => match s.phase {
                Phase::Irq => (
                    CauseKind::Unexplained,
                    format!("timer interrupt late while {} ran", comm(pid)),
                    Some(pid),
                ),
                Phase::Sched => {
                    *blocking.entry(pid).or_default() += s.ns;
                    (CauseKind::Thread, comm(pid), Some(pid))
                }
                Phase::Return => (CauseKind::Thread, comm(pid), Some(pid)),
            },
        })
    }

    /// A thread in an interruption of the noise probe's loop.
    fn noise_thread(&self, pid: i32, s: &Slice, blocking: &mut HashMap<i32, u64>) -> CauseKey {
        let marks = self.marks;
        if pid == marks.tid && self.other_context {
            (
                CauseKind::Return,
                "kernel entry and exit around the interruption".to_string(),
                Some(pid),
            )
        } else if pid == marks.tid {
            (
                CauseKind::Unexplained,
                "no OS event: hardware or hypervisor".to_string(),
                None,
            )
        } else if pid == 0 {
            (CauseKind::Idle, "CPU idle".to_string(), None)
        } else {
            *blocking.entry(pid).or_default() += s.ns;
            (CauseKind::Thread, comm_of(self.threads, pid), Some(pid))
        }
    }

    /// A thread when our timer's callback or switch-in was not recorded.
    fn unknown_phases(&self, pid: i32) -> CauseKey {
        let comm = comm_of(self.threads, pid);
        if pid == 0 {
            (
                CauseKind::Idle,
                "CPU idle; our timer's interrupt was not recorded".to_string(),
                None,
            )
        } else if pid == self.marks.tid {
            // Our own thread, switched in (or still running from before
            // its sleep) without its events: its own time, not a culprit.
            (
                CauseKind::Return,
                format!("{comm} itself ran; its switch-in was not recorded"),
                Some(pid),
            )
        } else {
            (
                CauseKind::Unexplained,
                format!("{comm} ran; our timer's interrupt was not recorded"),
                Some(pid),
            )
        }
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
