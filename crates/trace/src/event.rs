//! Typed kernel events: what the decoder produces from raw tracepoint
//! records (live rings or saved streams) and what the analysis consumes.
//!
//! Events are small `Copy` values so a per-CPU window of recent events is a
//! fixed array: constant memory however long the run. Strings that repeat
//! (IRQ handler names, `irq_vectors` names) are interned in [`Names`] and
//! carried as a [`NameId`]; task names are the kernel's fixed 16-byte comm.

use std::collections::HashMap;

/// A task name as the kernel stores it: up to 15 bytes and a NUL.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    pub fn from_bytes(raw: &[u8]) -> Comm {
        let mut c = [0u8; 16];
        let n = raw
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(raw.len())
            .min(15);
        c[..n].copy_from_slice(&raw[..n]);
        Comm(c)
    }

    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..n])
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl std::fmt::Display for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str())
    }
}

/// Index of an interned string in [`Names`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameId(pub u32);

/// Interned strings (IRQ handler names, vector names). Grows only with the
/// number of distinct names, which the kernel bounds.
#[derive(Clone, Debug, Default)]
pub struct Names {
    list: Vec<String>,
    index: HashMap<String, NameId>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> NameId {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = NameId(self.list.len() as u32);
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), id);
        id
    }

    pub fn get(&self, id: NameId) -> &str {
        self.list.get(id.0 as usize).map_or("?", String::as_str)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Softirq vectors, numbered as in the kernel's `softirq_raise` format.
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The name of softirq vector `vec` ("VEC<n>" for numbers the kernel may add).
pub fn softirq_name(vec: u32) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map_or_else(|| format!("VEC{vec}"), |s| (*s).to_string())
}

/// One decoded tracepoint record. `time` is CLOCK_MONOTONIC nanoseconds
/// (perf `use_clockid`), `cpu` the CPU it was recorded on, `tid` the task
/// that was current (0 for the idle task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub time: u64,
    pub cpu: u32,
    pub tid: i32,
    pub kind: EventKind,
}

/// The events latscope reads, with the fields it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `timer:hrtimer_start`: `expires`/`softexpires` are CLOCK_MONOTONIC ns
    /// for timers on the monotonic base.
    HrtimerStart {
        hrtimer: u64,
        function: u64,
        expires: i64,
        softexpires: i64,
    },
    /// `timer:hrtimer_expire_entry`: `now` is the hrtimer base's time when
    /// the callback is about to run.
    HrtimerExpireEntry {
        hrtimer: u64,
        now: i64,
        function: u64,
    },
    /// `timer:hrtimer_expire_exit`.
    HrtimerExpireExit { hrtimer: u64 },
    /// `sched:sched_waking`: task `pid` is being woken, to run on `target_cpu`.
    SchedWaking {
        pid: i32,
        prio: i32,
        target_cpu: i32,
        comm: Comm,
    },
    /// `sched:sched_switch`. Priorities are the kernel's (0..99 real-time,
    /// highest first: 99 - rt_priority; 100..139 normal, 120 = nice 0).
    SchedSwitch {
        prev_pid: i32,
        prev_prio: i32,
        prev_state: i64,
        prev_comm: Comm,
        next_pid: i32,
        next_prio: i32,
        next_comm: Comm,
    },
    /// `irq:irq_handler_entry`.
    IrqEntry { irq: i32, name: NameId },
    /// `irq:irq_handler_exit`.
    IrqExit { irq: i32, ret: i32 },
    /// `irq:softirq_raise`.
    SoftirqRaise { vec: u32 },
    /// `irq:softirq_entry`.
    SoftirqEntry { vec: u32 },
    /// `irq:softirq_exit`.
    SoftirqExit { vec: u32 },
    /// `irq_vectors:<name>_entry` (local_timer, reschedule, call_function, ...);
    /// `name` is the part before `_entry`.
    VectorEntry { name: NameId, vector: i32 },
    /// `irq_vectors:<name>_exit`.
    VectorExit { name: NameId, vector: i32 },
    /// `nmi:nmi_handler`, recorded when a handler returns; it ran for
    /// `delta_ns` before `time`.
    Nmi {
        handler: u64,
        delta_ns: i64,
        handled: i32,
    },
    /// `workqueue:workqueue_execute_start`.
    WorkStart { work: u64, function: u64 },
    /// `workqueue:workqueue_execute_end`.
    WorkEnd { work: u64, function: u64 },
    /// `timer:timer_expire_entry`: a timer-wheel callback starts (in the
    /// TIMER softirq, or a timer's own thread on PREEMPT_RT).
    TimerExpireEntry { timer: u64, function: u64 },
    /// `timer:timer_expire_exit`.
    TimerExpireExit { timer: u64 },
    /// `irq:tasklet_entry`: a tasklet starts (in the TASKLET or HI softirq).
    TaskletEntry { tasklet: u64, function: u64 },
    /// `irq:tasklet_exit`.
    TaskletExit { tasklet: u64, function: u64 },
    /// `napi:napi_poll`, recorded when one NAPI instance's poll returns
    /// (in the NET_RX softirq): it has no entry event, so its run time is
    /// the time since the softirq started or the previous poll returned.
    /// `dev` is the device's name (`(no_device)` for the per-CPU backlog
    /// that loopback and `netif_rx` traffic goes through).
    NapiPoll {
        napi: u64,
        dev: NameId,
        work: i32,
        budget: i32,
    },
}

/// Deferred work by what ran inside a softirq or interrupt: the unit
/// [`EventKind::TimerExpireEntry`], hrtimer callbacks, tasklets and NAPI
/// polls are counted and timed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeferredKind {
    /// A timer-wheel callback, by function.
    Timer,
    /// An hrtimer callback, by function: every one in the histograms (the
    /// measuring threads' own `hrtimer_wakeup` included), every one but
    /// our own timer's in an episode's parts.
    Hrtimer,
    /// A tasklet, by function.
    Tasklet,
    /// A NAPI poll, by device.
    Napi,
}

impl DeferredKind {
    /// The word used in metric names and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DeferredKind::Timer => "timer",
            DeferredKind::Hrtimer => "hrtimer",
            DeferredKind::Tasklet => "tasklet",
            DeferredKind::Napi => "napi",
        }
    }
}

/// The "vector" of deferred work that ran in a hard interrupt rather than
/// a softirq (hrtimer callbacks expired in the timer interrupt).
pub const HARDIRQ_CONTEXT: u32 = 16;

/// Where deferred work ran: the softirq vector's name, or `hardirq`.
pub fn context_name(vec: u32) -> String {
    if vec == HARDIRQ_CONTEXT {
        "hardirq".to_string()
    } else {
        softirq_name(vec)
    }
}

/// A `cpu-clock` sample with its kernel call chain (innermost first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackSample {
    pub time: u64,
    pub cpu: u32,
    pub tid: i32,
    pub ips: Vec<u64>,
}

/// What the decoder hands to its consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    Event(TraceEvent),
    Stack(StackSample),
    /// The kernel call chain of the [`Decoded::Event`] just before it
    /// (same time, CPU and task): `sched_switch` and `hrtimer_expire_entry`
    /// opened with `TracerConfig::event_chains`. Empty when the kernel
    /// could not walk the stack.
    EventChain(StackSample),
    /// The kernel dropped `count` records on `cpu` (PERF_RECORD_LOST or
    /// PERF_RECORD_LOST_SAMPLES): the ring was full.
    Lost {
        cpu: u32,
        count: u64,
    },
}
