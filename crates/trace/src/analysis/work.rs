//! System-wide interrupt and deferred-work statistics: how long each hard
//! IRQ handler, interrupt vector, softirq vector, NMI handler and workqueue
//! function ran, and how long each softirq waited between being raised and
//! running (the Linux counterpart of the studies' DPC latency).
//!
//! Entry/exit pairs are matched per CPU. An exit without its entry (the
//! trace started inside a handler) is ignored; so is an entry whose exit
//! was lost, which the next entry of the same kind replaces.

use std::collections::HashMap;

use latscope_model::metric;
use latscope_stats::{Histogram, MetricResult};

use crate::event::{
    context_name, softirq_name, DeferredKind, EventKind, NameId, Names, TraceEvent, HARDIRQ_CONTEXT,
};

/// Distinct workqueue functions tracked one by one; the rest share one
/// histogram, so a system with unusual churn cannot grow memory unbounded.
pub const MAX_WORK_FUNCTIONS: usize = 256;

/// What a histogram measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkKey {
    IrqExec {
        irq: i32,
        name: NameId,
    },
    VectorExec {
        name: NameId,
    },
    SoftirqDelay {
        vec: u32,
    },
    SoftirqExec {
        vec: u32,
    },
    Nmi,
    /// Work item run time by function address (0: the overflow bucket).
    Work {
        function: u64,
    },
    /// Deferred work by what ran: `vec` is the softirq it ran in
    /// ([`HARDIRQ_CONTEXT`] for a hard interrupt), `source` the function's
    /// address, or for a NAPI poll 1 + the device name's [`NameId`]; 0 is the
    /// overflow bucket ("(other)") once [`MAX_DEFERRED_SOURCES`] are kept.
    Deferred {
        vec: u32,
        kind: DeferredKind,
        source: u64,
    },
}

/// Distinct (context, kind, function or device) sources of deferred work
/// tracked one by one; the rest share one histogram per context and kind.
pub const MAX_DEFERRED_SOURCES: usize = 256;

#[derive(Clone, Debug, Default)]
struct CpuWork {
    irq: Option<(i32, NameId, u64)>,
    vector: Option<(NameId, u64)>,
    softirq: Option<(u32, u64)>,
    /// First raise time of each pending vector.
    raised: [Option<u64>; 16],
    work: Option<(u64, u64)>,
    /// Deferred work running: (context, function, start) per kind that
    /// has an entry event.
    timer: Option<(u32, u64, u64)>,
    hrtimer: Option<(u32, u64, u64)>,
    tasklet: Option<(u32, u64, u64)>,
    /// Inside a NET_RX softirq: when it started or the last poll returned.
    napi_mark: Option<u64>,
}

impl CpuWork {
    /// Where deferred work starting now runs: a hard interrupt when one is
    /// open (hrtimer callbacks in the timer interrupt, also when that
    /// interrupted a softirq), else the softirq running, else a hard
    /// interrupt whose vector is not traced.
    fn context(&self) -> u32 {
        if self.irq.is_some() || self.vector.is_some() {
            return HARDIRQ_CONTEXT;
        }
        self.softirq.map_or(HARDIRQ_CONTEXT, |(vec, _)| vec)
    }
}

/// The NET_RX softirq's number.
const NET_RX: u32 = 3;

/// Running statistics over every traced CPU.
#[derive(Default)]
pub struct WorkStats {
    cpus: Vec<CpuWork>,
    hist: HashMap<WorkKey, Histogram>,
    work_functions: usize,
    deferred_sources: usize,
}

impl WorkStats {
    pub fn new() -> WorkStats {
        WorkStats::default()
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuWork {
        let i = cpu as usize;
        if self.cpus.len() <= i {
            self.cpus.resize_with(i + 1, CpuWork::default);
        }
        &mut self.cpus[i]
    }

    fn record(&mut self, key: WorkKey, value: u64) {
        self.hist.entry(key).or_default().record(value);
    }

    pub fn on_event(&mut self, ev: &TraceEvent) {
        let t = ev.time;
        match ev.kind {
            EventKind::IrqEntry { irq, name } => self.cpu(ev.cpu).irq = Some((irq, name, t)),
            EventKind::IrqExit { irq, .. } => {
                if let Some((i, name, start)) = self.cpu(ev.cpu).irq.take() {
                    if i == irq && t >= start {
                        self.record(WorkKey::IrqExec { irq, name }, t - start);
                    }
                }
            }
            EventKind::VectorEntry { name, .. } => self.cpu(ev.cpu).vector = Some((name, t)),
            EventKind::VectorExit { name, .. } => {
                if let Some((n, start)) = self.cpu(ev.cpu).vector.take() {
                    if n == name && t >= start {
                        self.record(WorkKey::VectorExec { name }, t - start);
                    }
                }
            }
            EventKind::SoftirqRaise { vec } => {
                if let Some(slot) = self.cpu(ev.cpu).raised.get_mut(vec as usize) {
                    slot.get_or_insert(t);
                }
            }
            EventKind::SoftirqEntry { vec } => {
                let c = self.cpu(ev.cpu);
                c.softirq = Some((vec, t));
                c.napi_mark = (vec == NET_RX).then_some(t);
                let raised = c.raised.get_mut(vec as usize).and_then(Option::take);
                if let Some(r) = raised {
                    if t >= r {
                        self.record(WorkKey::SoftirqDelay { vec }, t - r);
                    }
                }
            }
            EventKind::SoftirqExit { vec } => {
                self.cpu(ev.cpu).napi_mark = None;
                if let Some((v, start)) = self.cpu(ev.cpu).softirq.take() {
                    if v == vec && t >= start {
                        self.record(WorkKey::SoftirqExec { vec }, t - start);
                    }
                }
            }
            EventKind::Nmi { delta_ns, .. } if delta_ns >= 0 => {
                self.record(WorkKey::Nmi, delta_ns as u64);
            }
            EventKind::WorkStart { function, .. } => {
                self.cpu(ev.cpu).work = Some((function, t));
            }
            EventKind::WorkEnd { function, .. } => {
                if let Some((f, start)) = self.cpu(ev.cpu).work.take() {
                    if f == function && t >= start {
                        let key = WorkKey::Work { function };
                        let key = if self.hist.contains_key(&key) {
                            key
                        } else if self.work_functions < MAX_WORK_FUNCTIONS {
                            self.work_functions += 1;
                            key
                        } else {
                            WorkKey::Work { function: 0 }
                        };
                        self.record(key, t - start);
                    }
                }
            }
            _ => self.on_deferred(ev),
        }
    }

    /// Timer-wheel and hrtimer callbacks, tasklets and NAPI polls.
    fn on_deferred(&mut self, ev: &TraceEvent) {
        let t = ev.time;
        let c = self.cpu(ev.cpu);
        let ctx = c.context();
        let done = match ev.kind {
            EventKind::TimerExpireEntry { function, .. } => {
                c.timer = Some((ctx, function, t));
                None
            }
            EventKind::HrtimerExpireEntry { function, .. } => {
                c.hrtimer = Some((ctx, function, t));
                None
            }
            EventKind::TaskletEntry { function, .. } => {
                c.tasklet = Some((ctx, function, t));
                None
            }
            EventKind::TimerExpireExit { .. } => c.timer.take().map(|o| (DeferredKind::Timer, o)),
            EventKind::HrtimerExpireExit { .. } => {
                c.hrtimer.take().map(|o| (DeferredKind::Hrtimer, o))
            }
            EventKind::TaskletExit { function, .. } => c
                .tasklet
                .take()
                .filter(|o| o.1 == function)
                .map(|o| (DeferredKind::Tasklet, o)),
            EventKind::NapiPoll { dev, .. } => c
                .napi_mark
                .replace(t)
                .map(|mark| (DeferredKind::Napi, (NET_RX, u64::from(dev.0) + 1, mark))),
            _ => None,
        };
        if let Some((kind, (vec, source, start))) = done {
            if t >= start {
                self.record_deferred(vec, kind, source, t - start);
            }
        }
    }

    /// One run of deferred work, under its own key while fewer than
    /// [`MAX_DEFERRED_SOURCES`] are kept, else under "(other)".
    fn record_deferred(&mut self, vec: u32, kind: DeferredKind, source: u64, ns: u64) {
        let key = WorkKey::Deferred { vec, kind, source };
        let key = if self.hist.contains_key(&key) {
            key
        } else if self.deferred_sources < MAX_DEFERRED_SOURCES {
            self.deferred_sources += 1;
            key
        } else {
            WorkKey::Deferred {
                vec,
                kind,
                source: 0,
            }
        };
        self.record(key, ns);
    }

    /// The BPF backend: the kernel's histograms replace what events would
    /// have built.
    pub fn replace(&mut self, hist: HashMap<WorkKey, Histogram>) {
        self.work_functions = hist
            .keys()
            .filter(|k| matches!(k, WorkKey::Work { .. }))
            .count();
        self.deferred_sources = hist
            .keys()
            .filter(|k| matches!(k, WorkKey::Deferred { .. }))
            .count();
        self.hist = hist;
    }

    /// Forget half-open entries (after lost records: they can no longer be
    /// matched reliably).
    pub fn reset_cpu(&mut self, cpu: u32) {
        *self.cpu(cpu) = CpuWork::default();
    }

    /// The histograms as system-wide metrics, named as in DESIGN.md.
    /// `symbol` names workqueue functions.
    pub fn metrics(
        &self,
        names: &Names,
        symbol: &dyn Fn(u64) -> Option<String>,
    ) -> Vec<MetricResult> {
        let mut keys: Vec<&WorkKey> = self.hist.keys().collect();
        keys.sort();
        let mut out: Vec<MetricResult> = Vec::with_capacity(keys.len());
        for key in keys {
            let name = match *key {
                WorkKey::IrqExec { irq, name } => {
                    format!("{}{irq}:{}", metric::IRQ_EXEC_PREFIX, names.get(name))
                }
                WorkKey::VectorExec { name } => {
                    format!("{}vector:{}", metric::IRQ_EXEC_PREFIX, names.get(name))
                }
                WorkKey::SoftirqDelay { vec } => {
                    format!("{}{}", metric::SOFTIRQ_DELAY_PREFIX, softirq_name(vec))
                }
                WorkKey::SoftirqExec { vec } => {
                    format!("{}{}", metric::SOFTIRQ_EXEC_PREFIX, softirq_name(vec))
                }
                WorkKey::Nmi => metric::NMI_EXEC.to_string(),
                WorkKey::Work { function: 0 } => {
                    format!("{}(other)", metric::WORKQUEUE_EXEC_PREFIX)
                }
                WorkKey::Work { function } => format!(
                    "{}{}",
                    metric::WORKQUEUE_EXEC_PREFIX,
                    symbol(function).unwrap_or_else(|| format!("{function:#x}"))
                ),
                WorkKey::Deferred { vec, kind, source } => format!(
                    "{}{}.{}",
                    metric::DEFERRED_EXEC_PREFIX,
                    context_name(vec),
                    deferred_name(kind, source, names, symbol)
                ),
            };
            let Some(h) = self.hist.get(key) else {
                continue;
            };
            // Two addresses can resolve to one symbol name: merge them.
            if let Some(existing) = out.iter_mut().find(|m| m.name == name) {
                existing.histogram.merge(h);
                continue;
            }
            let mut m = MetricResult::new(&name, None);
            m.histogram = h.clone();
            out.push(m);
        }
        out
    }
}

/// "timer:delayed_work_timer_fn", "napi:eth0", "tasklet:(other)": the
/// kind, then the function or device.
pub fn deferred_name(
    kind: DeferredKind,
    source: u64,
    names: &Names,
    symbol: &dyn Fn(u64) -> Option<String>,
) -> String {
    let what = match (kind, source) {
        (_, 0) => "(other)".to_string(),
        // 1 + the device name's id: 0 is the overflow bucket.
        (DeferredKind::Napi, id) => names
            .get(NameId(u32::try_from(id - 1).unwrap_or(u32::MAX)))
            .to_string(),
        (_, f) => symbol(f).unwrap_or_else(|| format!("{f:#x}")),
    };
    format!("{}:{what}", kind.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, cpu: u32, kind: EventKind) -> TraceEvent {
        TraceEvent {
            time,
            cpu,
            tid: 0,
            kind,
        }
    }

    #[test]
    fn pairs_entries_with_exits_per_cpu_and_measures_softirq_delay() {
        let mut names = Names::default();
        let eth = names.intern("eth0");
        let lt = names.intern("local_timer");
        let mut w = WorkStats::new();
        for e in [
            ev(100, 0, EventKind::IrqEntry { irq: 24, name: eth }),
            ev(
                105,
                1,
                EventKind::VectorEntry {
                    name: lt,
                    vector: 236,
                },
            ),
            ev(110, 0, EventKind::SoftirqRaise { vec: 3 }),
            ev(115, 0, EventKind::SoftirqRaise { vec: 3 }),
            ev(130, 0, EventKind::IrqExit { irq: 24, ret: 1 }),
            ev(
                131,
                1,
                EventKind::VectorExit {
                    name: lt,
                    vector: 236,
                },
            ),
            ev(140, 0, EventKind::SoftirqEntry { vec: 3 }),
            ev(190, 0, EventKind::SoftirqExit { vec: 3 }),
            // An exit whose entry came before the trace: ignored.
            ev(200, 1, EventKind::SoftirqExit { vec: 1 }),
            ev(
                300,
                1,
                EventKind::WorkStart {
                    work: 1,
                    function: 0xabc,
                },
            ),
            ev(
                350,
                1,
                EventKind::WorkEnd {
                    work: 1,
                    function: 0xabc,
                },
            ),
            ev(
                400,
                0,
                EventKind::Nmi {
                    handler: 1,
                    delta_ns: 7,
                    handled: 1,
                },
            ),
        ] {
            w.on_event(&e);
        }
        let sym = |a: u64| (a == 0xabc).then(|| "vmstat_update".to_string());
        let m = w.metrics(&names, &sym);
        let get = |n: &str| {
            m.iter().find(|x| x.name == n).unwrap_or_else(|| {
                panic!(
                    "no {n} in {:?}",
                    m.iter().map(|x| &x.name).collect::<Vec<_>>()
                )
            })
        };
        assert_eq!(
            get("irq.exec.24:eth0").histogram.max().map(|n| n.0),
            Some(30)
        );
        assert_eq!(
            get("irq.exec.vector:local_timer")
                .histogram
                .max()
                .map(|n| n.0),
            Some(26)
        );
        // Delay from the first raise, not the repeated one.
        assert_eq!(
            get("softirq.delay.NET_RX").histogram.max().map(|n| n.0),
            Some(30)
        );
        assert_eq!(
            get("softirq.exec.NET_RX").histogram.max().map(|n| n.0),
            Some(50)
        );
        assert_eq!(get("workqueue.exec.vmstat_update").histogram.count(), 1);
        assert_eq!(get("nmi.exec").histogram.max().map(|n| n.0), Some(7));
        assert!(m.iter().all(|x| x.name != "softirq.exec.TIMER"));
        assert!(m.iter().all(|x| x.cpu.is_none()));
    }
}
