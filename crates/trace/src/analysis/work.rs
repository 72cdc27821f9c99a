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

use crate::event::{softirq_name, EventKind, NameId, Names, TraceEvent};

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
}

#[derive(Clone, Debug, Default)]
struct CpuWork {
    irq: Option<(i32, NameId, u64)>,
    vector: Option<(NameId, u64)>,
    softirq: Option<(u32, u64)>,
    /// First raise time of each pending vector.
    raised: [Option<u64>; 16],
    work: Option<(u64, u64)>,
}

/// Running statistics over every traced CPU.
#[derive(Default)]
pub struct WorkStats {
    cpus: Vec<CpuWork>,
    hist: HashMap<WorkKey, Histogram>,
    work_functions: usize,
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
                let raised = c.raised.get_mut(vec as usize).and_then(Option::take);
                if let Some(r) = raised {
                    if t >= r {
                        self.record(WorkKey::SoftirqDelay { vec }, t - r);
                    }
                }
            }
            EventKind::SoftirqExit { vec } => {
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
            _ => {}
        }
    }

    /// The BPF backend: the kernel's histograms replace what events would
    /// have built.
    pub fn replace(&mut self, hist: HashMap<WorkKey, Histogram>) {
        self.work_functions = hist
            .keys()
            .filter(|k| matches!(k, WorkKey::Work { .. }))
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
