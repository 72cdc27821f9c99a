//! The trace analysis: it takes the decoded kernel events of every traced
//! CPU and the timer probe's samples (intended expiry, wake-up) and
//!
//! 1. decomposes every sample into `timer.irq` (expiry → our hrtimer's
//!    callback, `hrtimer_expire_entry.now`), `timer.sched` (callback → our
//!    thread switched in) and `timer.return` (switched in → user code);
//! 2. keeps system-wide interrupt and deferred-work statistics
//!    ([`work::WorkStats`]);
//! 3. turns every sample above the threshold into an [`Episode`] with a
//!    cause breakdown ([`attribute`]), computed from a bounded window of the
//!    CPU's recent events, so memory stays constant however long the run.
//!
//! With [`AnalyzerConfig::udp`] the samples are instead datagrams of the UDP
//! probe (receive time stamp, receiver has it), split into
//! `udp.recv.deliver`, `udp.recv.sched` and `udp.recv.return` over the
//! windows of the receiver's and the sender's CPUs (module `udp`,
//! docs/tracing.md).
//!
//! Samples are matched to events on the same clock (perf `use_clockid` =
//! CLOCK_MONOTONIC, the probe's vDSO clock). A sample is processed once the
//! CPU's event stream has passed its wake-up, so its events are all in the
//! window; the caller hands samples over *before* it reads the rings, which
//! keeps that wait short.
//!
//! Nothing here prints or does I/O (the [`Environment`] and [`Symbolize`]
//! callbacks are the caller's): results are values the caller stores.

pub mod attribute;
pub mod held;
mod held_perf;
mod kernel;
mod parts;
mod recurring;
mod seconds;
mod steal;
mod symbols;
mod udp;
mod window;
pub mod work;

use std::collections::{HashMap, VecDeque};

use latscope_model::{
    metric, CauseKind, CauseTotal, CpuId, Episode, EpisodeWindow, Nanos, NoiseClass, StackCount,
    TraceSummary,
};
use latscope_stats::{Histogram, MetricResult, TimelineChunk};

pub use attribute::{Environment, NoEnvironment};
use attribute::{Marks, ThreadNames};
pub use kernel::KernelSample;
pub use steal::{KernelSteal, HYPERVISOR};
pub use symbols::{NoSymbols, Symbolize};
use window::window_event;
use work::WorkStats;

use crate::event::{Decoded, EventKind, Names, StackSample, TraceEvent};

/// A measuring thread the analysis follows.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub cpu: CpuId,
    pub tid: i32,
}

/// Documented defaults; see docs/tracing.md.
pub const DEFAULT_EPISODE_CAP: usize = 1000;
pub const DEFAULT_WINDOW_EVENTS: usize = 16_384;
pub const DEFAULT_EXPORT_EVENTS: usize = 2_000;
/// How far before the expiry the attribution replays events, to know what
/// was running (and nested) at the expiry.
pub const REPLAY_NS: u64 = 2_000_000;
/// How far before the expiry an episode's exported window starts.
pub const EXPORT_BEFORE_NS: u64 = 500_000;

#[derive(Clone, Debug)]
pub struct AnalyzerConfig {
    pub measured: Vec<Measured>,
    /// Samples above this become episodes.
    pub threshold: Nanos,
    /// Episodes kept in full per run; the rest are counted and summed.
    pub episode_cap: usize,
    /// Events kept per measured CPU (the bounded window).
    pub window_events: usize,
    /// Events kept with each episode for export.
    pub export_events: usize,
    /// CLOCK_MONOTONIC of the cell's start (episode offsets count from it).
    pub cell_start_ns: u64,
    /// How far the parts of a sample may disagree with the clock reads
    /// (clock-read error) before the sample counts as not decomposed.
    pub tolerance_ns: u64,
    /// The samples are interruptions of the noise probe's loop (start,
    /// end), not timer wake-ups: classify them instead of decomposing.
    pub noise: bool,
    /// The samples are datagrams of the UDP probe (kernel receive time
    /// stamp, receiver's user code has it) on the receiver's CPU, split into
    /// `udp.recv.deliver` / `.sched` / `.return` (docs/tracing.md). `measured`
    /// then holds the receiver and, on another CPU, the sender (its CPU's
    /// events are needed; it gets no samples). Samples are processed only
    /// in [`Analyzer::flush`] and [`Analyzer::finish`]. Ignored with `noise`.
    pub udp: bool,
    /// The receiving thread in UDP mode; `None` means the first of
    /// `measured`. It is added to the followed threads if `measured` lacks
    /// its CPU, and its tid is the one followed on that CPU.
    pub udp_receiver: Option<Measured>,
}

impl AnalyzerConfig {
    pub fn new(measured: Vec<Measured>, threshold: Nanos, cell_start_ns: u64) -> AnalyzerConfig {
        AnalyzerConfig {
            measured,
            threshold,
            episode_cap: DEFAULT_EPISODE_CAP,
            window_events: DEFAULT_WINDOW_EVENTS,
            export_events: DEFAULT_EXPORT_EVENTS,
            cell_start_ns,
            tolerance_ns: 1_000,
            noise: false,
            udp: false,
            udp_receiver: None,
        }
    }
}

/// One sample split into its parts (exposed for tests and fixtures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decomposition {
    pub cpu: CpuId,
    pub deadline: u64,
    pub wake: u64,
    pub irq: u64,
    pub sched: u64,
    pub ret: u64,
    /// `expires` of the matching `hrtimer_start` (the kernel's view of the
    /// intended expiry). UDP mode: `deadline` is the receive time stamp,
    /// `irq`/`sched`/`ret` are deliver/sched/return and `expires` is 0.
    pub expires: i64,
}

struct MeasuredCpu {
    cpu: CpuId,
    tid: i32,
    pending: VecDeque<(u64, u64)>,
    irq: Histogram,
    /// `irq`'s per-second maxima, by wake-up time.
    irq_seconds: seconds::SecondMaxima,
    sched: Histogram,
    ret: Histogram,
    stacks: VecDeque<(u64, u64)>,
    window: VecDeque<TraceEvent>,
    /// Time of the last event before records were lost on this CPU.
    lost_at: Option<u64>,
    /// Time of the newest event the bounded window has let go of.
    evicted_at: Option<u64>,
    steal: VecDeque<(u64, u64)>,
    /// Call chains of the measured thread's callbacks and switch-ins
    /// (perf backend with `--stacks`).
    chains: held_perf::ChainRing,
}

impl MeasuredCpu {
    fn new(m: Measured, window_events: usize, origin: u64) -> MeasuredCpu {
        MeasuredCpu {
            cpu: m.cpu,
            tid: m.tid,
            pending: VecDeque::with_capacity(1024),
            irq: Histogram::new(),
            irq_seconds: seconds::SecondMaxima::new(origin),
            sched: Histogram::new(),
            ret: Histogram::new(),
            stacks: VecDeque::with_capacity(STACK_RING),
            window: VecDeque::with_capacity(window_events),
            lost_at: None,
            evicted_at: None,
            steal: VecDeque::with_capacity(STEAL_READINGS),
            chains: held_perf::ChainRing::default(),
        }
    }
}

pub(crate) struct Found {
    callback_time: u64,
    callback_now: u64,
    switch_in: u64,
    expires: i64,
    /// The kernel's steal figures (BPF backend with a steal counter).
    steal: Option<KernelSteal>,
}

const STACK_RING: usize = 8_192;
const STEAL_READINGS: usize = 128;
const THREAD_TABLE_CAP: usize = 65_536;

pub struct Analyzer {
    config: AnalyzerConfig,
    env: Box<dyn Environment + Send>,
    symbols: Box<dyn Symbolize + Send>,
    /// Index into `measured` per CPU number.
    by_cpu: Vec<Option<usize>>,
    measured: Vec<MeasuredCpu>,
    work: WorkStats,
    threads: ThreadNames,
    ready: Vec<(Episode, Option<EpisodeWindow>)>,
    awaiting_steal: Vec<(Episode, Option<EpisodeWindow>)>,
    totals: HashMap<(CauseKind, String), CauseTotal>,
    /// Each cause's episode times, for the periodicity test.
    recurring: recurring::Recurrences,
    summary: TraceSummary,
    /// Per measured CPU number: interruptions by class (noise probe).
    noise_classes: std::collections::BTreeMap<u32, std::collections::BTreeMap<String, NoiseClass>>,
    /// Every decomposition, when a test asks for them.
    keep_decompositions: bool,
    decompositions: Vec<Decomposition>,
    /// UDP mode: index into `measured` of the receiver's CPU.
    udp_rx: Option<usize>,
    /// The kernel's stacks for the next sample's episode (BPF backend).
    held_next: Option<held::RawHeld>,
    held_fold: held::HeldFold,
    /// Whether events came with call chains (perf backend with `--stacks`):
    /// episodes then take their held stacks from them.
    chains_seen: bool,
}

impl Analyzer {
    pub fn new(
        config: AnalyzerConfig,
        env: Box<dyn Environment + Send>,
        symbols: Box<dyn Symbolize + Send>,
    ) -> Analyzer {
        let mut by_cpu = Vec::new();
        let mut measured = Vec::new();
        for (i, m) in config.measured.iter().enumerate() {
            let c = m.cpu.0 as usize;
            if by_cpu.len() <= c {
                by_cpu.resize(c + 1, None);
            }
            by_cpu[c] = Some(i);
            measured.push(MeasuredCpu::new(
                *m,
                config.window_events,
                config.cell_start_ns,
            ));
        }
        let udp_rx = if config.udp && !config.noise {
            udp::receiver(&config, &mut by_cpu, &mut measured)
        } else {
            None
        };
        let summary = TraceSummary {
            episode_cap: config.episode_cap as u64,
            threshold_ns: config.threshold,
            ..TraceSummary::default()
        };
        let recurring = recurring::Recurrences::new(config.cell_start_ns);
        Analyzer {
            config,
            env,
            symbols,
            by_cpu,
            measured,
            work: WorkStats::new(),
            threads: ThreadNames::default(),
            ready: Vec::new(),
            awaiting_steal: Vec::new(),
            totals: HashMap::new(),
            recurring,
            summary,
            noise_classes: Default::default(),
            keep_decompositions: false,
            decompositions: Vec::new(),
            udp_rx,
            held_next: None,
            held_fold: held::HeldFold::default(),
            chains_seen: false,
        }
    }

    /// Keep every decomposition for [`Analyzer::decompositions`] (tests).
    pub fn keep_decompositions(&mut self) {
        self.keep_decompositions = true;
    }

    pub fn decompositions(&self) -> &[Decomposition] {
        &self.decompositions
    }

    fn index(&self, cpu: u32) -> Option<usize> {
        self.by_cpu.get(cpu as usize).copied().flatten()
    }

    /// One decoded record, in per-CPU time order.
    pub fn on_decoded(&mut self, d: &Decoded, names: &Names) {
        match d {
            Decoded::Event(ev) => self.on_event(ev, names),
            Decoded::Stack(s) => self.on_stack(s),
            Decoded::EventChain(s) => self.on_chain(s),
            Decoded::Lost { cpu, count } => {
                self.summary.lost_records += count;
                *self.summary.lost_per_cpu.entry(*cpu).or_default() += count;
                self.work.reset_cpu(*cpu);
                if let Some(m) = self.index(*cpu) {
                    let mc = &mut self.measured[m];
                    mc.lost_at = Some(mc.window.back().map_or(0, |e| e.time));
                }
            }
        }
    }

    fn on_event(&mut self, ev: &TraceEvent, names: &Names) {
        self.summary.events += 1;
        self.work.on_event(ev);
        self.threads.note(ev);
        let Some(m) = self.index(ev.cpu) else {
            return;
        };
        // Samples whose wake-up this event passes have all their events
        // (UDP mode: not those of the sender's CPU, which may come later in
        // the same read; its samples wait for `flush`).
        while let Some(&(d, u)) = self.measured[m].pending.front() {
            if u > ev.time || self.udp_rx.is_some() {
                break;
            }
            self.measured[m].pending.pop_front();
            self.process(m, d, u, names);
        }
        let mc = &mut self.measured[m];
        if mc.window.len() == self.config.window_events {
            mc.evicted_at = mc.window.pop_front().map(|e| e.time);
        }
        mc.chains.note(ev, mc.tid);
        mc.window.push_back(*ev);
    }

    /// The call chain of the event just handed over (perf backend with
    /// `--stacks`): kept when it is the measured thread's switch-in or its
    /// hrtimer's callback.
    fn on_chain(&mut self, s: &StackSample) {
        self.chains_seen = true;
        let Some(m) = self.index(s.cpu) else {
            return;
        };
        let mc = &mut self.measured[m];
        if let Some(ev) = mc.window.back().filter(|e| e.time == s.time) {
            let ev = *ev;
            mc.chains.offer(&ev, mc.tid, &s.ips);
        }
    }

    fn on_stack(&mut self, s: &StackSample) {
        self.summary.stack_samples += 1;
        let Some(m) = self.index(s.cpu) else {
            return;
        };
        let Some(&ip) = s.ips.first() else {
            return;
        };
        let ring = &mut self.measured[m].stacks;
        if ring.len() == STACK_RING {
            ring.pop_front();
        }
        ring.push_back((s.time, ip));
    }

    /// A sample of the measuring thread on `cpu`.
    pub fn on_sample(&mut self, cpu: CpuId, deadline: u64, wake: u64, names: &Names) {
        let Some(m) = self.index(cpu.0) else {
            return;
        };
        if let Some(rx) = self.udp_rx {
            // Only the receiver has samples; the events of every CPU are
            // known to be in only at `flush`.
            if m == rx {
                self.measured[m].pending.push_back((deadline, wake));
            } else {
                self.add_undecomposed(cpu, 1);
            }
            return;
        }
        let newest = self.measured[m].window.back().map(|e| e.time);
        if self.measured[m].pending.is_empty() && newest.is_some_and(|t| t >= wake) {
            // The events already went past it: look back in the window.
            self.process(m, deadline, wake, names);
        } else {
            self.measured[m].pending.push_back((deadline, wake));
        }
    }

    /// Processes the samples that woke at or before `until`: the caller read
    /// the rings after `until`, so their events are all in.
    pub fn flush(&mut self, until: u64, names: &Names) {
        for m in 0..self.measured.len() {
            while let Some(&(d, u)) = self.measured[m].pending.front() {
                if u > until {
                    break;
                }
                self.measured[m].pending.pop_front();
                self.process(m, d, u, names);
            }
        }
    }

    /// Cumulative steal time of `cpu` (from /proc/stat) read at `time`.
    pub fn on_steal(&mut self, cpu: CpuId, time: u64, cumulative_ns: u64) {
        if let Some(m) = self.index(cpu.0) {
            let r = &mut self.measured[m].steal;
            if r.len() == STEAL_READINGS {
                r.pop_front();
            }
            r.push_back((time, cumulative_ns));
        }
        let mut i = 0;
        while i < self.awaiting_steal.len() {
            let e = &self.awaiting_steal[i].0;
            if e.cpu == cpu && e.expiry_ns.0.saturating_add(e.latency_ns.0) <= time {
                let (mut ep, w) = self.awaiting_steal.swap_remove(i);
                let st = self.steal_between(&ep);
                steal::proc_stat(&mut ep.breakdown, st);
                self.ready.push((ep, w));
            } else {
                i += 1;
            }
        }
    }

    fn steal_between(&self, e: &Episode) -> Option<Nanos> {
        let m = self.index(e.cpu.0)?;
        let r = &self.measured[m].steal;
        let start = e.expiry_ns.0;
        let end = start.saturating_add(e.latency_ns.0);
        let before = r.iter().rev().find(|(t, _)| *t <= start)?;
        let after = r.iter().find(|(t, _)| *t >= end)?;
        Some(Nanos(after.1.saturating_sub(before.1)))
    }

    /// Processes everything still pending (end of the run).
    pub fn finish(&mut self, names: &Names) {
        self.flush(u64::MAX, names);
        for (ep, w) in std::mem::take(&mut self.awaiting_steal) {
            self.ready.push((ep, w));
        }
    }

    /// Episodes completed since the last call (with their windows when
    /// kept), in the order they were found.
    pub fn take_episodes(&mut self) -> Vec<(Episode, Option<EpisodeWindow>)> {
        let mut v = std::mem::take(&mut self.ready);
        v.sort_by_key(|(e, _)| e.seq);
        v
    }

    fn process(&mut self, m: usize, deadline: u64, wake: u64, names: &Names) {
        self.recurring.on_sample(self.measured[m].cpu, deadline);
        if self.config.noise {
            self.process_gap(m, deadline, wake, names);
            return;
        }
        if self.udp_rx.is_some() {
            self.process_udp(m, deadline, wake, names);
            return;
        }
        let found = self.find(m, deadline, wake);
        self.decompose(m, deadline, wake, found, names);
    }

    /// Records the parts of one timer sample from what was found (perf: by
    /// [`Self::find`] in the window; BPF: computed by the kernel), and its
    /// episode when it is above the threshold.
    fn decompose(
        &mut self,
        m: usize,
        deadline: u64,
        wake: u64,
        found: Option<Found>,
        names: &Names,
    ) {
        let tol = self.config.tolerance_ns;
        let cpu = self.measured[m].cpu.0;
        let Some(f) = found else {
            self.summary.samples_undecomposed += 1;
            *self.summary.undecomposed_per_cpu.entry(cpu).or_default() += 1;
            self.maybe_episode(m, deadline, wake, None, names);
            return;
        };
        let cb = f.callback_now;
        // Consistent order: expiry ≤ callback ≤ switch-in ≤ wake-up, within
        // the clock-read error; otherwise the events were not this sample's.
        if cb + tol < deadline || f.switch_in + tol < cb || wake + tol < f.switch_in {
            self.summary.samples_undecomposed += 1;
            *self.summary.undecomposed_per_cpu.entry(cpu).or_default() += 1;
            self.maybe_episode(m, deadline, wake, None, names);
            return;
        }
        let irq = cb.saturating_sub(deadline);
        let sched = f.switch_in.saturating_sub(cb.max(deadline));
        let ret = wake.saturating_sub(f.switch_in.max(deadline));
        let mc = &mut self.measured[m];
        mc.irq.record(irq);
        mc.irq_seconds.record(wake, irq);
        mc.sched.record(sched);
        mc.ret.record(ret);
        self.summary.samples_decomposed += 1;
        *self.summary.decomposed_per_cpu.entry(cpu).or_default() += 1;
        if self.keep_decompositions {
            self.decompositions.push(Decomposition {
                cpu: mc.cpu,
                deadline,
                wake,
                irq,
                sched,
                ret,
                expires: f.expires,
            });
        }
        self.maybe_episode(m, deadline, wake, Some(f), names);
    }

    /// One interruption of the noise probe's loop: its time split among what
    /// ran, counted per class (osnoise's HW, NMI, IRQ, SIRQ, THREAD), and an
    /// episode when it is above the threshold.
    fn process_gap(&mut self, m: usize, start: u64, end: u64, names: &Names) {
        let mc = &self.measured[m];
        let floor = start.saturating_sub(REPLAY_NS);
        let complete_window =
            mc.evicted_at.map_or(true, |t| t < floor) && mc.lost_at.map_or(true, |t| t < floor);
        let evs: Vec<&TraceEvent> = mc
            .window
            .iter()
            .filter(|e| e.time >= floor && e.time <= end)
            .collect();
        let marks = Marks {
            deadline: start,
            callback: end,
            switch_in: end,
            wake: end,
            tid: mc.tid,
            noise: true,
            udp: false,
            phases_known: true,
        };
        let mut b = attribute::attribute(
            &evs,
            &marks,
            complete_window,
            names,
            &self.threads,
            self.env.as_ref(),
        );
        b.irq_ns = Nanos(0);
        let classes = self.noise_classes.entry(mc.cpu.0).or_default();
        for c in &b.causes {
            let class = match c.kind {
                CauseKind::Nmi => "nmi",
                CauseKind::Irq | CauseKind::TimerIrq => "irq",
                CauseKind::Softirq => "softirq",
                CauseKind::Thread | CauseKind::Idle | CauseKind::Wakeup => "thread",
                CauseKind::Unexplained | CauseKind::Hypervisor => "hw",
                // The kernel's entry and exit around another cause: part of
                // that interruption's cost, not a class of its own.
                CauseKind::Return => continue,
            };
            let e = classes.entry(class.to_string()).or_default();
            e.count += 1;
            e.total_ns = Nanos(e.total_ns.0.saturating_add(c.duration_ns.0));
            e.max_ns = e.max_ns.max(c.duration_ns);
        }
        self.summary.samples_decomposed += 1;
        *self.summary.decomposed_per_cpu.entry(mc.cpu.0).or_default() += 1;
        self.episode_from(m, start, end, b, metric::NOISE_GAP, names);
    }

    /// Per CPU: interruptions by class, with `--trace` (noise probe).
    pub fn noise_classes(
        &self,
    ) -> &std::collections::BTreeMap<u32, std::collections::BTreeMap<String, NoiseClass>> {
        &self.noise_classes
    }

    /// Looks back in the window for our switch-in before `wake`, then our
    /// hrtimer's callback before it, paired with the `hrtimer_start` our
    /// thread issued by the `hrtimer` pointer.
    fn find(&self, m: usize, deadline: u64, wake: u64) -> Option<Found> {
        let mc = &self.measured[m];
        let tid = mc.tid;
        let floor = deadline.saturating_sub(REPLAY_NS);
        let mut switch_in = None;
        // Expire entries seen (newest first) after the switch was found.
        let mut callbacks: Vec<(u64, u64, i64)> = Vec::new();
        for ev in mc.window.iter().rev() {
            if ev.time > wake {
                continue;
            }
            if ev.time < floor {
                break;
            }
            match (switch_in, ev.kind) {
                (None, EventKind::SchedSwitch { next_pid, .. }) if next_pid == tid => {
                    switch_in = Some(ev.time);
                }
                (Some(_), EventKind::HrtimerExpireEntry { hrtimer, now, .. }) => {
                    callbacks.push((hrtimer, ev.time, now));
                }
                (
                    Some(s),
                    EventKind::HrtimerStart {
                        hrtimer, expires, ..
                    },
                ) if ev.tid == tid => {
                    let (_, time, now) = callbacks.iter().find(|c| c.0 == hrtimer)?;
                    return Some(Found {
                        callback_time: *time,
                        callback_now: u64::try_from(*now).ok()?,
                        switch_in: s,
                        expires,
                        steal: None,
                    });
                }
                _ => {}
            }
        }
        None
    }

    fn maybe_episode(
        &mut self,
        m: usize,
        deadline: u64,
        wake: u64,
        f: Option<Found>,
        names: &Names,
    ) {
        let latency = wake.saturating_sub(deadline);
        if latency <= self.config.threshold.0 {
            return;
        }
        let mc = &self.measured[m];
        let floor = deadline.saturating_sub(REPLAY_NS);
        let complete_window =
            mc.evicted_at.map_or(true, |t| t < floor) && mc.lost_at.map_or(true, |t| t < floor);
        let evs: Vec<&TraceEvent> = mc
            .window
            .iter()
            .filter(|e| e.time >= floor && e.time <= wake)
            .collect();
        let marks = match &f {
            Some(f) => Marks {
                deadline,
                callback: f.callback_time,
                switch_in: f.switch_in,
                wake,
                tid: mc.tid,
                noise: false,
                udp: false,
                phases_known: true,
            },
            // Without our events the phases are unknown: the contexts that
            // ran are named, but no thread is called blocking and none is
            // said to have run while the interrupt was late.
            None => Marks {
                deadline,
                callback: wake,
                switch_in: wake,
                wake,
                tid: mc.tid,
                noise: false,
                udp: false,
                phases_known: false,
            },
        };
        let mut breakdown = attribute::attribute(
            &evs,
            &marks,
            complete_window && f.is_some(),
            names,
            &self.threads,
            self.env.as_ref(),
        );
        if let (Some(f), true, None) = (&f, self.chains_seen, &self.held_next) {
            let w = held_perf::Wakeup {
                tid: mc.tid,
                expires: f.expires,
                callback_time: f.callback_time,
                switch_in: f.switch_in,
                threshold: self.config.threshold.0,
            };
            self.held_next = held_perf::raw_held(&w, &evs, &mc.chains, &self.threads);
        }
        if let Some(f) = &f {
            // The decomposition uses the callback's own `now`, the sweep the
            // perf time of the same event; report the former.
            breakdown.irq_ns = Nanos(f.callback_now.saturating_sub(deadline).min(latency));
            breakdown.sched_ns = Nanos(f.switch_in.saturating_sub(f.callback_now.max(deadline)));
            if let Some(k) = f.steal {
                steal::split(&mut breakdown, k);
            }
        }
        self.episode_from(m, deadline, wake, breakdown, metric::TIMER_LATENCY, names);
    }

    /// Counts an episode into the totals and keeps it in full under the cap.
    fn episode_from(
        &mut self,
        m: usize,
        deadline: u64,
        wake: u64,
        breakdown: latscope_model::Breakdown,
        metric_name: &str,
        names: &Names,
    ) {
        let latency = wake.saturating_sub(deadline);
        if latency <= self.config.threshold.0 {
            return;
        }
        let mut breakdown = breakdown;
        parts::symbolize(&mut breakdown.causes, self.symbols.as_ref());
        if let Some(raw) = self.held_next.take() {
            let h = held::symbolize(&raw, self.symbols.as_ref());
            self.held_fold.add(&h, latency);
            breakdown.held = Some(h);
        }
        self.summary.episodes_total += 1;
        self.recurring
            .record(self.measured[m].cpu, deadline, latency, &breakdown);
        for c in &breakdown.causes {
            let t = self
                .totals
                .entry((c.kind, c.name.clone()))
                .or_insert_with(|| CauseTotal {
                    kind: c.kind,
                    name: c.name.clone(),
                    episodes: 0,
                    total_ns: Nanos(0),
                    max_ns: Nanos(0),
                });
            t.episodes += 1;
            t.total_ns = Nanos(t.total_ns.0.saturating_add(c.duration_ns.0));
            t.max_ns = t.max_ns.max(c.duration_ns);
        }
        if self.summary.episodes_kept >= self.config.episode_cap as u64 {
            return;
        }
        self.summary.episodes_kept += 1;
        let seq = self.summary.episodes_kept as u32;
        let stacks = self.stacks_between(m, deadline, wake);
        let window = self.export_window(m, seq, deadline, wake, names);
        let episode = Episode {
            seq,
            cpu: self.measured[m].cpu,
            metric: metric_name.to_string(),
            expiry_ns: Nanos(deadline),
            offset_ns: Nanos(deadline.saturating_sub(self.config.cell_start_ns)),
            latency_ns: Nanos(latency),
            breakdown,
            stacks,
        };
        let steal = &self.measured[m].steal;
        if steal.back().is_some_and(|(t, _)| *t >= wake) {
            let mut e = episode;
            let st = self.steal_between(&e);
            steal::proc_stat(&mut e.breakdown, st);
            self.ready.push((e, Some(window)));
        } else {
            self.awaiting_steal.push((episode, Some(window)));
        }
    }

    fn stacks_between(&self, m: usize, from: u64, to: u64) -> Vec<StackCount> {
        let mut counts: HashMap<(String, Option<String>), u32> = HashMap::new();
        for &(t, ip) in &self.measured[m].stacks {
            if t < from || t > to {
                continue;
            }
            let key = self
                .symbols
                .symbol(ip)
                .unwrap_or_else(|| (format!("{ip:#x}"), None));
            *counts.entry(key).or_default() += 1;
        }
        let mut v: Vec<StackCount> = counts
            .into_iter()
            .map(|((function, module), samples)| StackCount {
                function,
                module,
                samples,
            })
            .collect();
        v.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
        v
    }

    fn export_window(
        &self,
        m: usize,
        seq: u32,
        deadline: u64,
        wake: u64,
        names: &Names,
    ) -> EpisodeWindow {
        let mc = &self.measured[m];
        let from = deadline.saturating_sub(EXPORT_BEFORE_NS);
        let inside: Vec<&TraceEvent> = if self.udp_rx.is_some() {
            // The datagram crosses CPUs: the sender's events too.
            let mut v: Vec<&TraceEvent> = self
                .measured
                .iter()
                .flat_map(|c| c.events_between(from, wake))
                .collect();
            v.sort_by_key(|e| e.time);
            v
        } else {
            mc.window
                .iter()
                .filter(|e| e.time >= from && e.time <= wake)
                .collect()
        };
        let cap = self.config.export_events;
        let skip = inside.len().saturating_sub(cap);
        EpisodeWindow {
            seq,
            cpu: mc.cpu,
            events: inside[skip..]
                .iter()
                .map(|e| window_event(e, names, self.symbols.as_ref()))
                .collect(),
            truncated: skip as u64,
        }
    }

    /// Per-CPU decomposition metrics (UDP mode: the receiver's CPU only)
    /// and the system-wide work metrics.
    pub fn metrics(&self, names: &Names) -> Vec<MetricResult> {
        let mut out = Vec::new();
        for (i, mc) in self.measured.iter().enumerate() {
            let parts = match self.udp_rx {
                None => [metric::TIMER_IRQ, metric::TIMER_SCHED, metric::TIMER_RETURN],
                Some(rx) if rx == i => [
                    metric::UDP_RECV_DELIVER,
                    metric::UDP_RECV_SCHED,
                    metric::UDP_RECV_RETURN,
                ],
                // The sender's CPU has no samples.
                Some(_) => continue,
            };
            for (name, h) in [
                (parts[0], &mc.irq),
                (parts[1], &mc.sched),
                (parts[2], &mc.ret),
            ] {
                let mut r = MetricResult::new(name, Some(mc.cpu));
                r.histogram = h.clone();
                out.push(r);
            }
        }
        let sym = |a: u64| self.symbols.symbol(a).map(|(f, _)| f);
        out.extend(self.work.metrics(names, &sym));
        out
    }

    /// The per-second maxima of the timer's interrupt part (`timer.irq`) on
    /// each measured CPU for the seconds complete since the last call
    /// (`all`: every second, at the end). The UDP probe's parts have none.
    pub fn drain_timeline(&mut self, all: bool) -> Vec<TimelineChunk> {
        if self.udp_rx.is_some() {
            return Vec::new();
        }
        self.measured
            .iter_mut()
            .filter_map(|mc| {
                let (first_second, seconds) = mc.irq_seconds.drain(all)?;
                Some(TimelineChunk {
                    metric: metric::TIMER_IRQ.to_string(),
                    cpu: Some(mc.cpu),
                    first_second,
                    seconds,
                })
            })
            .collect()
    }

    /// The tracer's account so far (the caller adds the tracer's CPU time
    /// and the events the kernel lacks).
    pub fn summary(&self) -> TraceSummary {
        let mut s = self.summary.clone();
        let mut totals: Vec<CauseTotal> = self.totals.values().cloned().collect();
        totals.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then(a.kind.cmp(&b.kind))
                .then(a.name.cmp(&b.name))
        });
        s.cause_totals = totals;
        s.recurring = self.recurring.recurring();
        s.held_top = self.held_fold.top(held::HELD_TOP);
        s.hypervisor_ns = steal::hypervisor_total(&s.cause_totals);
        s
    }

    /// Samples the analysis could not take because a hand-over ring was
    /// full are counted by the caller; add them here.
    pub fn add_undecomposed(&mut self, cpu: CpuId, n: u64) {
        if n > 0 {
            self.summary.samples_undecomposed += n;
            *self.summary.undecomposed_per_cpu.entry(cpu.0).or_default() += n;
        }
    }

    /// Bounded bookkeeping: call now and then (each housekeeping tick).
    pub fn trim(&mut self) {
        self.threads.trim(THREAD_TABLE_CAP);
    }
}

#[cfg(test)]
mod tests;
