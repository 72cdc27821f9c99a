//! The BPF tracing backend, user-space half: it turns what latscope's BPF
//! programs hand over (one record per wake-up of a measuring thread, the
//! per-CPU flight recorder, the in-kernel histograms) into what the
//! analysis takes from perf: [`KernelSample`]s, [`TraceEvent`] windows and
//! [`WorkKey`] histograms. The kernel half is `latscope_platform::bpf`.
//!
//! Timer samples: the kernel pairs each wake-up with its hrtimer's callback
//! and switch-in; user space copies a CPU's recent events out of the flight
//! recorder only for a sample above the threshold. Noise and UDP samples
//! need the events of every interruption or datagram, so in those modes the
//! recorder is followed continuously ([`BpfTracer::follow`]) and its events
//! go to the analysis as perf's would, still recorded in the kernel without
//! a perf record or a wake-up per event.

mod feed;
mod keys;

use std::collections::HashMap;

use latscope_model::StealSource;
use latscope_platform::bpf::{
    BpfConfig, BpfHistBucket, BpfHistTotal, RecordedEvent, RecordedKind, StealCounter, TimerRecord,
    TraceBpf,
};
use latscope_stats::Histogram;

use crate::analysis::held::RawHeld;
use crate::analysis::work::WorkKey;
use crate::analysis::{KernelSample, KernelSteal};
use crate::error::TraceError;
use crate::event::{Comm, Decoded, EventKind, NameId, Names, TraceEvent};

pub use feed::KernelFeed;

/// Flight recorder slots per CPU (the platform's default: 8192 events of
/// 64 bytes hold a few hundred milliseconds of a busy CPU, far more than
/// the 2 ms before an expiry an episode needs).
pub use latscope_platform::bpf::DEFAULT_RECORDER_SLOTS;

/// What to trace with BPF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfTracerConfig {
    /// CPUs whose events go to the flight recorder.
    pub cpus: Vec<u32>,
    /// Flight recorder slots per CPU (a power of two).
    pub recorder_slots: u32,
    /// Aggregate interrupt and deferred-work times in the kernel (timer
    /// mode); off when the recorder is followed and the analysis sees every
    /// event anyway.
    pub histograms: bool,
    /// Kernel stacks for wake-ups later than this, ns: the episode
    /// threshold (0: none). See [`BpfTracer::held`].
    pub stack_threshold_ns: u64,
}

/// A wake-up the kernel decomposed, with whose it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelRecord {
    pub tid: i32,
    pub cpu: u32,
    pub sample: KernelSample,
}

/// The BPF backend (see the module docs).
pub struct BpfTracer {
    bpf: TraceBpf,
    names: Names,
    records: Vec<TimerRecord>,
    raw: Vec<RecordedEvent>,
    window: Vec<TraceEvent>,
    /// Continuous mode: the next sequence number to read, per CPU.
    next_seq: HashMap<u32, u64>,
    cpus: Vec<u32>,
    /// Events lost to the recorder's wrap before they were read.
    lost: u64,
    buckets: Vec<BpfHistBucket>,
    totals: Vec<BpfHistTotal>,
    keys: keys::WorkKeys,
    /// The interrupt and work histograms so far (sums of the drains).
    work: HashMap<WorkKey, Histogram>,
    /// Drains of the kernel's histogram maps that failed.
    drain_errors: u64,
}

impl std::fmt::Debug for BpfTracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfTracer")
            .field("cpus", &self.cpus)
            .finish()
    }
}

fn invalid(e: impl std::fmt::Display) -> TraceError {
    TraceError::Invalid(e.to_string())
}

impl BpfTracer {
    /// Loads and attaches the programs. The measuring threads are added
    /// with [`BpfTracer::watch`] once they exist.
    pub fn open(config: &BpfTracerConfig) -> Result<BpfTracer, TraceError> {
        let bpf = TraceBpf::open(&BpfConfig {
            tids: Vec::new(),
            cpus: config.cpus.clone(),
            recorder_slots: config.recorder_slots,
            histograms: config.histograms,
            stack_threshold_ns: config.stack_threshold_ns,
            ..BpfConfig::default()
        })
        .map_err(invalid)?;
        let mut names = Names::default();
        // NameId(0) is a NAPI histogram's overflow source.
        names.intern(keys::OTHER);
        Ok(BpfTracer {
            bpf,
            names,
            records: Vec::with_capacity(4096),
            raw: Vec::with_capacity(config.recorder_slots as usize),
            window: Vec::with_capacity(config.recorder_slots as usize),
            next_seq: HashMap::new(),
            cpus: config.cpus.clone(),
            lost: 0,
            buckets: Vec::new(),
            totals: Vec::new(),
            keys: keys::WorkKeys::default(),
            work: HashMap::new(),
            drain_errors: 0,
        })
    }

    /// Follows these threads' wake-ups from now on.
    pub fn watch(&mut self, tids: &[i32]) -> Result<(), TraceError> {
        let tids: Vec<u32> = tids.iter().filter_map(|&t| u32::try_from(t).ok()).collect();
        self.bpf.watch(&tids).map_err(invalid)
    }

    /// Interned IRQ handler and vector names of the events handed out.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// Tracepoints this kernel lacks (not attached).
    pub fn missing_events(&self) -> &[String] {
        self.bpf.missing()
    }

    /// Waits `timeout` before the next read. A plain sleep: the programs
    /// submit their records without waking the reader (a wake-up costs an
    /// interrupt on the measured CPU), so polling the ring's descriptor
    /// would only ever time out, at the price of a poll system call and its
    /// wait-queue setup each time.
    pub fn wait(&self, timeout: std::time::Duration) {
        std::thread::sleep(timeout);
    }

    /// The largest share of one of the kernel's rings written since the
    /// previous call (see `TraceBpf::fill_since_last`): a reader calling
    /// it after each read learns how far it can stretch its pauses.
    pub fn fill_since_last(&mut self) -> f64 {
        self.bpf.fill_since_last()
    }

    /// Every wake-up record the kernel sent since the last call.
    pub fn drain(&mut self, out: &mut Vec<KernelRecord>) {
        self.records.clear();
        self.bpf.drain_samples(&mut self.records);
        let source = self.steal_source();
        out.extend(self.records.iter().map(|r| KernelRecord {
            tid: r.tid as i32,
            cpu: r.cpu,
            sample: KernelSample {
                expires: r.expires as i64,
                callback_now: r.callback_now,
                callback_time: r.callback_time,
                switch_in: r.switch_in,
                steal: source.map(|source| KernelSteal {
                    source,
                    irq_ns: u64::from(r.steal_irq),
                    sched_ns: u64::from(r.steal_sched),
                }),
            },
        }));
    }

    /// Where the records' steal figures come from: the paravirtual steal
    /// clock or the kernel's per-CPU accounting (`None`: the kernel has
    /// neither where the programs can read it).
    pub fn steal_source(&self) -> Option<StealSource> {
        self.bpf.steal_counter().map(|c| match c {
            StealCounter::StealClock => StealSource::StealClock,
            StealCounter::Cpustat => StealSource::Cpustat,
        })
    }

    /// The kernel's stacks for the wake-up of `cpu`'s measuring thread
    /// `tid` from the hrtimer expiry `expires`, when it was later than the
    /// stack threshold: taken out of the kernel's map (a second call finds
    /// nothing).
    pub fn held(&mut self, cpu: u32, tid: i32, expires: u64) -> Option<RawHeld> {
        let r = self.bpf.take_held(cpu, u32::try_from(tid).ok()?, expires)?;
        let irq_ips = r.irq_stack.and_then(|id| self.bpf.stack(id));
        let yield_ips = r.yield_stack.and_then(|id| self.bpf.stack(id));
        // The kernel takes prev's stack for every task but idle: none means
        // it could not (counted in its counters).
        let note = (r.prev_pid != 0 && yield_ips.is_none())
            .then(|| "stack not captured (stack map full)".to_string());
        Some(RawHeld {
            irq_pid: r.irq_pid,
            irq_comm: comm_string(&r.irq_comm),
            irq_ips,
            prev_pid: r.prev_pid,
            prev_comm: comm_string(&r.prev_comm),
            yield_ips,
            note,
            depth: latscope_platform::bpf::HELD_DEPTH,
        })
    }

    /// Episode stacks the kernel could not take: (stack map full, other).
    pub fn stack_failures(&self) -> (u64, u64) {
        self.bpf
            .counters()
            .map_or((0, 0), |c| (c.stacks_full, c.stacks_failed))
    }

    /// `cpu`'s recorded events from `from` to `to`, oldest first, whether
    /// the recorder still held all of them, and the names they use.
    pub fn window(&mut self, cpu: u32, from: u64, to: u64) -> (&[TraceEvent], bool, &Names) {
        self.raw.clear();
        let read = self.bpf.recorder_window(cpu, from, to, &mut self.raw);
        self.window.clear();
        for r in &self.raw {
            if let Some(ev) = convert(r, &mut self.names) {
                self.window.push(ev);
            }
        }
        (&self.window, read.complete, &self.names)
    }

    /// Continuous mode: every event recorded since the last call, per CPU
    /// in time order, as the perf tracer hands them out (with a
    /// [`Decoded::Lost`] where the recorder wrapped before it was read).
    pub fn follow(&mut self, sink: &mut dyn FnMut(Decoded)) {
        for &cpu in &self.cpus {
            self.raw.clear();
            let after = self.next_seq.get(&cpu).copied().unwrap_or(0);
            let (next, lost) = self.bpf.recorder_since(cpu, after, &mut self.raw);
            self.next_seq.insert(cpu, next);
            if lost > 0 && after > 0 {
                self.lost += lost;
                sink(Decoded::Lost { cpu, count: lost });
            }
            for r in &self.raw {
                if let Some(ev) = convert(r, &mut self.names) {
                    sink(Decoded::Event(ev));
                }
            }
        }
    }

    /// The kernel's interrupt and deferred-work histograms so far, keyed
    /// as the perf analysis keys them.
    pub fn work_histograms(&mut self) -> HashMap<WorkKey, Histogram> {
        self.drain_work();
        self.work.clone()
    }

    /// [`BpfTracer::work_histograms`] at the end: both sets of the kernel's
    /// maps drained (the one the programs were writing too, after a pause
    /// that lets any program still in it finish).
    pub fn final_work_histograms(&mut self) -> HashMap<WorkKey, Histogram> {
        self.drain_work();
        std::thread::sleep(std::time::Duration::from_millis(5));
        self.drain_work();
        self.work.clone()
    }

    /// Adds what the kernel counted since the last drain to the running
    /// histograms (the kernel's maps hold one interval only).
    fn drain_work(&mut self) {
        self.buckets.clear();
        self.totals.clear();
        // On an error what was read is still added; the rest stays in the
        // kernel's maps for the next drain.
        if self
            .bpf
            .drain_histograms(&mut self.buckets, &mut self.totals)
            .is_err()
        {
            self.drain_errors += 1;
        }
        let mut counts: HashMap<WorkKey, Vec<(usize, u64)>> = HashMap::new();
        for b in &self.buckets {
            let key = self.keys.key(&self.bpf, &mut self.names, b.kind, b.source);
            counts
                .entry(key)
                .or_default()
                .push((b.index as usize, b.count));
        }
        // Several kernel sources may share a key (deferred work past the
        // bound, NAPI instances of one device): their totals are summed
        // before the key's histogram is built from all its counts.
        let mut sums: HashMap<WorkKey, BpfHistTotal> = HashMap::new();
        for t in &self.totals {
            let key = self.keys.key(&self.bpf, &mut self.names, t.kind, t.source);
            sums.entry(key)
                .or_insert_with(|| BpfHistTotal::empty(t.kind, t.source))
                .add(t.count, t.sum, t.min, t.max);
        }
        for (key, t) in sums {
            let Some(c) = counts.get(&key) else {
                continue;
            };
            if let Some(h) = Histogram::from_index_counts(c, u128::from(t.sum), t.min, t.max) {
                self.work.entry(key).or_default().merge(&h);
            }
        }
    }

    /// What was lost: events the recorder overwrote before they were read
    /// (continuous mode), per-wake-up records the ring could not take,
    /// histogram updates a full map refused. (The analysis counts the
    /// events it is handed.)
    pub fn lost(&self) -> u64 {
        let dropped = self
            .bpf
            .counters()
            .map_or(0, |c| c.samples_dropped + c.hist_dropped);
        self.lost + dropped
    }

    /// Drains of the kernel's histogram maps that failed (their counts
    /// stayed in the kernel for the next drain).
    pub fn drain_errors(&self) -> u64 {
        self.drain_errors
    }

    /// Run time of the programs in the kernel, ns (0 unless the kernel's
    /// BPF statistics are on).
    pub fn prog_ns(&self) -> u64 {
        self.bpf.prog_stats().iter().map(|(_, ns, _)| ns).sum()
    }
}

/// A recorded event as the perf decoder would have produced it.
pub fn convert(r: &RecordedEvent, names: &mut Names) -> Option<TraceEvent> {
    let kind = match r.kind {
        RecordedKind::Switch {
            prev_pid,
            prev_prio,
            prev_state,
            prev_comm,
            next_pid,
            next_prio,
            next_comm,
        } => EventKind::SchedSwitch {
            prev_pid,
            prev_prio,
            prev_state,
            prev_comm: Comm::from_bytes(&prev_comm),
            next_pid,
            next_prio,
            next_comm: Comm::from_bytes(&next_comm),
        },
        RecordedKind::Waking {
            pid,
            prio,
            target_cpu,
            comm,
        } => EventKind::SchedWaking {
            pid,
            prio,
            target_cpu,
            comm: Comm::from_bytes(&comm),
        },
        RecordedKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            softexpires,
        } => EventKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            softexpires,
        },
        RecordedKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        },
        RecordedKind::HrtimerExpireExit { hrtimer } => EventKind::HrtimerExpireExit { hrtimer },
        RecordedKind::IrqEntry { irq, name } => EventKind::IrqEntry {
            irq,
            name: intern_bytes(names, &name),
        },
        RecordedKind::IrqExit { irq, ret } => EventKind::IrqExit { irq, ret },
        RecordedKind::SoftirqRaise { vec } => EventKind::SoftirqRaise { vec },
        RecordedKind::SoftirqEntry { vec } => EventKind::SoftirqEntry { vec },
        RecordedKind::SoftirqExit { vec } => EventKind::SoftirqExit { vec },
        RecordedKind::VectorEntry { name, vector } => EventKind::VectorEntry {
            name: names.intern(name),
            vector,
        },
        RecordedKind::VectorExit { name, vector } => EventKind::VectorExit {
            name: names.intern(name),
            vector,
        },
        RecordedKind::Nmi {
            handler,
            delta_ns,
            handled,
        } => EventKind::Nmi {
            handler,
            delta_ns,
            handled,
        },
        RecordedKind::WorkStart { work, function } => EventKind::WorkStart { work, function },
        RecordedKind::WorkEnd { work, function } => EventKind::WorkEnd { work, function },
        RecordedKind::TimerEntry { timer, function } => {
            EventKind::TimerExpireEntry { timer, function }
        }
        RecordedKind::TimerExit { timer } => EventKind::TimerExpireExit { timer },
        RecordedKind::TaskletEntry { tasklet, function } => {
            EventKind::TaskletEntry { tasklet, function }
        }
        RecordedKind::TaskletExit { tasklet, function } => {
            EventKind::TaskletExit { tasklet, function }
        }
        RecordedKind::NapiPoll {
            napi,
            work,
            budget,
            dev,
        } => EventKind::NapiPoll {
            napi,
            dev: intern_bytes(names, &dev),
            work,
            budget,
        },
    };
    Some(TraceEvent {
        time: r.time,
        cpu: r.cpu,
        tid: r.tid,
        kind,
    })
}

fn intern_bytes(names: &mut Names, raw: &[u8]) -> NameId {
    let n = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    names.intern(&String::from_utf8_lossy(&raw[..n]))
}

/// A kernel comm (NUL-padded) as text.
fn comm_string(raw: &[u8; 16]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: RecordedKind) -> RecordedEvent {
        RecordedEvent {
            time: 10,
            cpu: 1,
            tid: 7,
            kind,
        }
    }

    #[test]
    fn deferred_work_records_become_the_perf_decoders_events() {
        let mut names = Names::default();
        let mut dev = [0u8; 16];
        dev[..11].copy_from_slice(b"(no_device)");
        let napi = convert(
            &ev(RecordedKind::NapiPoll {
                napi: 0xabc,
                work: 3,
                budget: 64,
                dev,
            }),
            &mut names,
        )
        .map(|e| e.kind);
        let Some(EventKind::NapiPoll {
            napi: 0xabc,
            dev,
            work: 3,
            budget: 64,
        }) = napi
        else {
            panic!("{napi:?}");
        };
        assert_eq!(names.get(dev), "(no_device)");
        let kinds = [
            (
                RecordedKind::TimerEntry {
                    timer: 1,
                    function: 2,
                },
                EventKind::TimerExpireEntry {
                    timer: 1,
                    function: 2,
                },
            ),
            (
                RecordedKind::TimerExit { timer: 1 },
                EventKind::TimerExpireExit { timer: 1 },
            ),
            (
                RecordedKind::TaskletEntry {
                    tasklet: 3,
                    function: 4,
                },
                EventKind::TaskletEntry {
                    tasklet: 3,
                    function: 4,
                },
            ),
            (
                RecordedKind::TaskletExit {
                    tasklet: 3,
                    function: 4,
                },
                EventKind::TaskletExit {
                    tasklet: 3,
                    function: 4,
                },
            ),
        ];
        for (r, want) in kinds {
            let got = convert(&ev(r), &mut names);
            assert_eq!(
                got.map(|e| (e.time, e.cpu, e.tid, e.kind)),
                Some((10, 1, 7, want))
            );
        }
    }
}
