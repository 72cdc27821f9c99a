//! Episodes: the samples that crossed the threshold, each with the cause
//! breakdown the trace analysis computed for it, and the tracer's own
//! account of a run (events read, records lost, episodes past the cap).
//!
//! These are values: the analysis produces them, the store keeps them and
//! the renderers print them. Nothing here is printed from the analysis.

use serde::{Deserialize, Serialize};

use crate::{CpuId, Nanos};

/// What took a share of one long latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// A device interrupt handler (`name` = "N:handler"), or an interrupt
    /// vector other than the one that delivered our timer (`name` = the
    /// vector, e.g. "reschedule").
    Irq,
    /// A softirq (`name` = the vector: NET_RX, TIMER, RCU, ...).
    Softirq,
    /// An NMI handler.
    Nmi,
    /// Another thread ran on the CPU (`name` = comm, with pid, policy and
    /// priority).
    Thread,
    /// The CPU was idle while our timer was due: the timer interrupt came
    /// late out of idle (idle exit or delivery by the hypervisor).
    Idle,
    /// The timer interrupt that delivered our expiry: its handling up to our
    /// callback and back (other hrtimer callbacks in it included).
    TimerIrq,
    /// Our own wake-up path after the callback: scheduler and context switch
    /// to our thread, when nothing else ran.
    Wakeup,
    /// Our thread switched in, returning to user code.
    Return,
    /// The hypervisor kept the vCPU from running (steal time, read per
    /// wake-up from the kernel's steal counter), taken from what would
    /// otherwise be unexplained or a late interrupt out of idle.
    Hypervisor,
    /// Time no OS event accounts for: the timer interrupt was late while the
    /// CPU was busy with no interrupt handler running (interrupts disabled
    /// or the hypervisor), or the event window did not cover the time.
    Unexplained,
}

impl CauseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::Irq => "irq",
            CauseKind::Softirq => "softirq",
            CauseKind::Nmi => "nmi",
            CauseKind::Thread => "thread",
            CauseKind::Idle => "idle",
            CauseKind::TimerIrq => "timer_irq",
            CauseKind::Wakeup => "wakeup",
            CauseKind::Return => "return",
            CauseKind::Hypervisor => "hypervisor",
            CauseKind::Unexplained => "unexplained",
        }
    }
}

impl std::fmt::Display for CauseKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One share of an episode's latency. The causes of a breakdown partition
/// the latency: their durations add up to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    pub kind: CauseKind,
    pub name: String,
    /// The thread's pid for [`CauseKind::Thread`] (and our own thread for
    /// [`CauseKind::Return`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Scheduling policy of a thread: "fifo", "rr", "other", "batch",
    /// "idle", "deadline", or "rt" when only the priority is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Real-time priority (1..99) for fifo/rr/rt, nice value otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    pub duration_ns: Nanos,
    /// What ran inside this share, for a softirq or an interrupt: deferred
    /// work by function or device ("timer:delayed_work_timer_fn",
    /// "napi:eth0", "hrtimer:tick_nohz_handler"), longest first. Their sum
    /// is at most the share; the rest is the vector's own handling. Empty
    /// when the trace recorded nothing finer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<CausePart>,
}

/// Deferred work that ran inside a [`Cause`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CausePart {
    /// `kind:function` or `napi:device`.
    pub name: String,
    /// Runs of it inside the share.
    pub count: u32,
    pub duration_ns: Nanos,
}

/// Where one long latency went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Intended expiry → our hrtimer callback (`timer.irq` of this sample).
    /// For a `udp.recv` episode the three phases are deliver (receive stamp
    /// → our receiver woken, `udp.recv.deliver`), sched and return.
    pub irq_ns: Nanos,
    /// Callback → our thread switched in (`timer.sched`).
    pub sched_ns: Nanos,
    /// Switched in → user code (`timer.return`).
    pub return_ns: Nanos,
    /// The CPU was idle at the intended expiry.
    pub idle_at_expiry: bool,
    /// Every share of the latency, longest first; they add up to it.
    pub causes: Vec<Cause>,
    /// The thread that ran longest while ours was runnable (after our
    /// callback, before we were switched in), if any other thread did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<Cause>,
    /// Sum of the [`CauseKind::Unexplained`] shares.
    pub unexplained_ns: Nanos,
    /// Steal time the hypervisor reported for this CPU around the episode;
    /// `steal_source` says from where. BPF backend: the steal counter from
    /// our thread's arming of its timer to its switch-in (`steal_irq_ns` +
    /// `steal_sched_ns`). Perf backend: /proc/stat over the housekeeping
    /// interval that held the episode; coarse (ticks), not split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<Nanos>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_source: Option<StealSource>,
    /// Steal from arming to our callback: an upper bound of the
    /// hypervisor's time before our interrupt (it includes the sleep
    /// before the expiry). The `hypervisor` share is this, capped by the
    /// irq phase's unexplained and late-out-of-idle shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_irq_ns: Option<Nanos>,
    /// Steal from our callback to our switch-in. Not a share of its own:
    /// it is inside the shares of the sched phase (the blocking thread's
    /// included), which no event can split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_sched_ns: Option<Nanos>,
    /// False when the event window did not reach back to the expiry or the
    /// kernel lost records on this CPU around it; the shares are then a
    /// lower bound and the rest is counted as unexplained.
    pub complete: bool,
    /// The code that held the CPU: kernel stacks at the expiry and where
    /// the task our thread replaced yielded (BPF backend; absent in runs
    /// stored before, and without stacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<crate::HeldCpu>,
}

/// Where an episode's steal time was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StealSource {
    /// The paravirtual steal clock (KVM's `steal_time`), per wake-up in
    /// the kernel (BPF backend).
    StealClock,
    /// The kernel's per-CPU steal accounting (`kernel_cpustat`), per
    /// wake-up in the kernel but updated at ticks (BPF backend).
    Cpustat,
    /// /proc/stat over the housekeeping interval around the episode.
    ProcStat,
}

impl StealSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StealSource::StealClock => "steal_clock",
            StealSource::Cpustat => "cpustat",
            StealSource::ProcStat => "proc_stat",
        }
    }

    /// Read per wake-up, so that the hypervisor's share can be split off.
    pub fn per_wakeup(self) -> bool {
        self != StealSource::ProcStat
    }
}

/// How often a kernel function was sampled (`cpu-clock`, `--stacks`) while
/// an episode went on: "N samples in module function", as in the latency
/// cause tool of Cota-Robles & Held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackCount {
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    pub samples: u32,
}

/// A sample above the threshold, explained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Episode {
    /// 1-based number within the run, in order of expiry per run.
    pub seq: u32,
    pub cpu: CpuId,
    /// The metric that crossed the threshold ("timer.latency").
    pub metric: String,
    /// Intended expiry, CLOCK_MONOTONIC ns.
    pub expiry_ns: Nanos,
    /// Intended expiry relative to the cell's start.
    pub offset_ns: Nanos,
    pub latency_ns: Nanos,
    pub breakdown: Breakdown,
    /// Kernel functions sampled on this CPU during the episode, most
    /// sampled first (empty without `--stacks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<StackCount>,
}

/// One kernel event of an episode's window, kept for export to a trace
/// viewer. `event` is the tracepoint name; the other fields carry what the
/// viewer needs (see each event in `docs/json.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowEvent {
    /// CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    pub cpu: u32,
    /// The task current when the event was recorded (0 = idle).
    pub tid: i32,
    pub event: String,
    /// comm of the next task (sched_switch), the woken task (sched_waking),
    /// the handler (irq), the vector (softirq, irq_vectors), the function
    /// (hrtimer, workqueue, nmi).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// next_pid (sched_switch), woken pid (sched_waking), irq number,
    /// softirq vector.
    #[serde(default)]
    pub pid: i32,
    /// next_prio (sched_switch), woken prio (sched_waking).
    #[serde(default)]
    pub prio: i32,
    /// hrtimer expires (hrtimer_start), now (hrtimer_expire_entry),
    /// delta_ns (nmi_handler), prev_pid (sched_switch).
    #[serde(default)]
    pub value: i64,
    /// The hrtimer / work pointer, to pair starts with expiries.
    #[serde(default)]
    pub object: u64,
}

/// The events around one episode: from shortly before its expiry to its
/// wake-up, on its CPU, capped in length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeWindow {
    pub seq: u32,
    pub cpu: CpuId,
    pub events: Vec<WindowEvent>,
    /// Events that did not fit under the cap (the oldest are dropped).
    pub truncated: u64,
}

/// Time one cause took over all episodes of a run (kept or not).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CauseTotal {
    pub kind: CauseKind,
    pub name: String,
    /// Episodes it appeared in.
    pub episodes: u64,
    pub total_ns: Nanos,
    pub max_ns: Nanos,
}

/// A cause that recurred with a period over a run's episodes, as Jones &
/// Regehr's driver work every 5 and 10 seconds (§4.4): the times of the
/// episodes it took a share of fall on a lattice `first + k × period`, some
/// cycles missing (a culprit only makes an episode when it collides with a
/// sample). Found by `latscope_stats::find_period`; see docs/tracing.md
/// ("Recurring culprits") for the test and its bounds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecurringCause {
    pub kind: CauseKind,
    pub name: String,
    pub period_ns: Nanos,
    /// Root mean square distance of the episodes from the lattice.
    pub jitter_ns: Nanos,
    /// Cycles with an episode of this cause on the lattice (the episodes of
    /// one burst count once).
    pub episodes: u64,
    /// Periods from the first to the last of them, and those with none.
    pub cycles: u64,
    pub missing: u64,
    /// The first and the last of them, from the cell's start.
    pub first_offset_ns: Nanos,
    pub last_offset_ns: Nanos,
    /// The evidence: the chance that as many episodes would fall as close
    /// to some lattice were their times random is at most
    /// 10^`log10_chance` (a decimal exponent, so that the summary stays
    /// exact and comparable; always ≤ -3, weaker evidence is not reported).
    pub log10_chance: i32,
}

/// What the tracer did during a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// The tracing backend that served the cell: "bpf" or "perf" (empty in
    /// runs stored before there was a choice: those used perf).
    #[serde(default)]
    pub backend: String,
    /// CPU time the kernel spent in latscope's BPF programs, ns (BPF
    /// backend, when the kernel's `bpf_stats_enabled` counted it).
    #[serde(default)]
    pub bpf_prog_ns: u64,
    /// Records decoded (perf), or events copied out of the BPF flight
    /// recorder plus the kernel's per-wake-up records (BPF).
    pub events: u64,
    /// Records the kernel dropped (ring full), total and per CPU.
    pub lost_records: u64,
    #[serde(default)]
    pub lost_per_cpu: std::collections::BTreeMap<u32, u64>,
    /// Tracepoints that do not exist on this kernel and were not traced.
    #[serde(default)]
    pub missing_events: Vec<String>,
    /// Timer samples decomposed into irq / sched / return, and those that
    /// could not be (their events were lost or out of the window).
    pub samples_decomposed: u64,
    pub samples_undecomposed: u64,
    /// The same per measured CPU. A CPU with many undecomposed samples and
    /// no lost records is one whose kernel did not emit the wake-up's
    /// events (see docs/tracing.md).
    #[serde(default)]
    pub decomposed_per_cpu: std::collections::BTreeMap<u32, u64>,
    #[serde(default)]
    pub undecomposed_per_cpu: std::collections::BTreeMap<u32, u64>,
    /// Episodes seen, and kept in full (the rest only counted and summed
    /// into `cause_totals`).
    pub episodes_total: u64,
    pub episodes_kept: u64,
    pub episode_cap: u64,
    pub threshold_ns: Nanos,
    /// Every cause over all episodes, largest total first.
    #[serde(default)]
    pub cause_totals: Vec<CauseTotal>,
    /// CPU time of the tracer thread (reading and analysis), ns.
    pub tracer_cpu_ns: u64,
    /// `cpu-clock` stack samples taken (0 without `--stacks`).
    #[serde(default)]
    pub stack_samples: u64,
    /// CLOCK_MONOTONIC ns from the tracer's enabling to its last read (its
    /// disabling, once the cell ended): the span the interrupt and
    /// deferred-work statistics cover, a little longer than the cell's
    /// measurement (0 in runs stored before it was kept).
    #[serde(default)]
    pub traced_from_ns: u64,
    #[serde(default)]
    pub traced_to_ns: u64,
    /// The code that held the CPU, identical stacks folded over every
    /// episode, most episode time first (at most 20; BPF backend).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_top: Vec<crate::HeldStack>,
    /// Episode stacks the kernel could not take because its stack map was
    /// full (its slot for the stack held another), and for other reasons.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stacks_map_full: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stacks_failed: u64,
    /// Causes that recurred with a period, strongest evidence first (empty
    /// when none did, and in runs stored before the test existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recurring: Vec<RecurringCause>,
    /// Where the episodes' steal time came from (None in runs stored
    /// before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_source: Option<StealSource>,
    /// The `hypervisor` shares summed over every episode (0 when the
    /// steal time was not read per wake-up).
    #[serde(default)]
    pub hypervisor_ns: Nanos,
    /// Steal time /proc/stat reported for the measured CPUs over the cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_stat_steal_ns: Option<Nanos>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cause_kinds_serialize_as_their_names() {
        for k in [
            CauseKind::Irq,
            CauseKind::Softirq,
            CauseKind::Nmi,
            CauseKind::Thread,
            CauseKind::Idle,
            CauseKind::TimerIrq,
            CauseKind::Wakeup,
            CauseKind::Return,
            CauseKind::Hypervisor,
            CauseKind::Unexplained,
        ] {
            let j = serde_json::to_string(&k).unwrap_or_default();
            assert_eq!(j, format!("\"{}\"", k.as_str()));
        }
    }

    #[test]
    fn episode_round_trips_through_json() {
        let e = Episode {
            seq: 1,
            cpu: CpuId(1),
            metric: "timer.latency".into(),
            expiry_ns: Nanos(5_000),
            offset_ns: Nanos(1_000),
            latency_ns: Nanos(600_000),
            breakdown: Breakdown {
                irq_ns: Nanos(5_000),
                sched_ns: Nanos(590_000),
                return_ns: Nanos(5_000),
                idle_at_expiry: false,
                causes: vec![Cause {
                    kind: CauseKind::Thread,
                    name: "burner".into(),
                    pid: Some(42),
                    policy: Some("fifo".into()),
                    priority: Some(90),
                    duration_ns: Nanos(580_000),
                    parts: Vec::new(),
                }],
                blocking: None,
                unexplained_ns: Nanos(0),
                steal_ns: None,
                steal_source: None,
                steal_irq_ns: None,
                steal_sched_ns: None,
                complete: true,
                held: None,
            },
            stacks: vec![],
        };
        let j = serde_json::to_string(&e).unwrap_or_default();
        let back: Episode = serde_json::from_str(&j).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(back, e);
    }

    #[test]
    fn recurring_causes_round_trip_and_old_summaries_still_read() {
        let old = serde_json::to_string(&TraceSummary::default()).unwrap_or_default();
        assert!(!old.contains("recurring"), "{old}");
        let back: TraceSummary = serde_json::from_str(&old).unwrap_or_else(|err| panic!("{err}"));
        assert!(back.recurring.is_empty());
        let s = TraceSummary {
            recurring: vec![RecurringCause {
                kind: CauseKind::Thread,
                name: "kworker/0:1".into(),
                period_ns: Nanos(2_000_000_000),
                jitter_ns: Nanos(3_000_000),
                episodes: 41,
                cycles: 50,
                missing: 9,
                first_offset_ns: Nanos(1_500_000_000),
                last_offset_ns: Nanos(101_500_000_000),
                log10_chance: -9,
            }],
            ..TraceSummary::default()
        };
        let j = serde_json::to_string(&s).unwrap_or_default();
        let back: TraceSummary = serde_json::from_str(&j).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(back, s);
    }
}
