//! What `GET /metrics` and `GET /healthz` answer, built from the shared
//! state under a short lock (the copy is encoded after the lock is
//! released, so a scrape never holds up a checkpoint for longer than the
//! copy takes).
//!
//! Families (names from `latscope_report`'s Prometheus mapping, the same
//! as `latscope export --format prometheus`):
//!
//! * per metric kind, a histogram of every sample since the daemon started
//!   (`latscope_timer_latency_seconds{cpu="1"}`, with `--trace` also
//!   `latscope_timer_irq_seconds`, `latscope_irq_exec_seconds{irq,handler}`,
//!   `latscope_softirq_delay_seconds{vector}`, ...);
//! * per metric kind, a `_max` gauge per window:
//!   `latscope_timer_latency_max_seconds{window="minute"|"hour"}`, the
//!   largest value of the current minute and hour so far;
//! * `latscope_timer_measuring{cpu}` (1 while measured, 0 for a CPU a
//!   reload took out), `latscope_timer_overruns_total{cpu}`, `latscope_episodes_total{cause}`
//!   (with `--trace`), `latscope_episodes_not_stored_total`,
//!   `latscope_trace_lost_records_total`;
//! * with `--noise`, `latscope_noise_gap_seconds{cpu}` (a histogram as
//!   above) and `latscope_noise_active_seconds_total{cpu}`,
//!   `latscope_noise_interruptions_total{cpu}`,
//!   `latscope_noise_seconds_total{cpu}` (time lost to interruptions);
//! * the machine's activity, as the suite's workload characterization
//!   counts it ([`crate::system`]): `latscope_workload_interrupts_total`,
//!   `latscope_workload_context_switches_total`,
//!   `latscope_workload_processes_total`,
//!   `latscope_workload_softirqs_total{vector}`,
//!   `latscope_workload_cpu_seconds_total{cpu,mode}` (measured CPUs),
//!   `latscope_workload_procs_running`;
//! * `latscope_info{version,kernel,preemption} 1`, `latscope_monitor_epoch`,
//!   `latscope_last_checkpoint_timestamp_seconds`.

use std::sync::{Arc, Mutex};

use crate::exposition::{self, Exposition, Kind, Value};
use latscope_model::{metric, Nanos};
use latscope_record::Histogram;
use latscope_report::exports::{prometheus_family, prometheus_help};

use crate::http::Source;
use crate::sink::{lock, NoiseTotals, Shared};
use crate::system::{SystemCounters, USER_HZ};

/// The endpoint's view of the daemon.
pub struct Endpoint {
    shared: Arc<Mutex<Shared>>,
}

impl Endpoint {
    pub fn new(shared: Arc<Mutex<Shared>>) -> Endpoint {
        Endpoint { shared }
    }
}

/// `latscope_x_seconds` → `latscope_x_max_seconds`.
fn max_name(family: &str) -> String {
    match family.strip_suffix("_seconds") {
        Some(stem) => format!("{stem}_max_seconds"),
        None => format!("{family}_max"),
    }
}

fn cpu_label(cpu: Option<latscope_model::CpuId>) -> String {
    cpu.map_or_else(|| "all".to_string(), |c| c.0.to_string())
}

/// One series as copied for a scrape.
struct SeriesCopy {
    name: String,
    labels: Vec<(String, String)>,
    total: Histogram,
    minute_max: Option<Nanos>,
    hour_max: Option<Nanos>,
    overruns: u64,
}

/// What is copied out of the shared state for one scrape.
struct Copy {
    series: Vec<SeriesCopy>,
    episodes: Vec<(&'static str, u64)>,
    not_stored: u64,
    reloads_refused: u64,
    store_dropped: [u64; 2],
    lost: u64,
    epoch: u32,
    last_checkpoint: Option<Nanos>,
    kernel: String,
    preemption: String,
    /// ok, failed, suppressed, dropped, abandoned.
    actions: Option<[u64; 5]>,
    noise: std::collections::BTreeMap<u32, NoiseTotals>,
    /// The measured CPUs (`None`: all).
    measured: Option<Vec<u32>>,
    /// Read after the lock is released.
    system: SystemCounters,
}

impl Endpoint {
    fn copy(&self) -> Copy {
        let s = lock(&self.shared);
        let series = s
            .windows
            .series()
            .map(|((name, cpu), v)| {
                let mut labels = vec![("cpu".to_string(), cpu_label(*cpu))];
                let (_, source) = prometheus_family(name);
                labels.extend(source.into_iter().map(|(k, v)| (k.to_string(), v)));
                SeriesCopy {
                    name: name.clone(),
                    labels,
                    total: v.total.clone(),
                    minute_max: v.minute.1.max(),
                    hour_max: v.hour.1.max(),
                    overruns: v.overruns,
                }
            })
            .collect();
        Copy {
            series,
            episodes: s.episodes.iter().map(|(k, v)| (*k, *v)).collect(),
            not_stored: s.episodes_not_stored,
            reloads_refused: s.reloads_refused,
            store_dropped: [s.store_dropped_seconds, s.store_dropped_episodes],
            lost: s.lost_records,
            epoch: s.epoch,
            last_checkpoint: s.last_checkpoint,
            kernel: s.kernel.clone(),
            preemption: s.preemption.clone(),
            actions: s.actions.as_ref().map(|a| {
                use std::sync::atomic::Ordering::Relaxed;
                [
                    a.ok.load(Relaxed),
                    a.failed.load(Relaxed),
                    a.suppressed.load(Relaxed),
                    a.dropped.load(Relaxed),
                    a.abandoned.load(Relaxed),
                ]
            }),
            noise: s.noise(),
            measured: s.measured.clone(),
            system: SystemCounters::default(),
        }
    }
}

fn seconds(ns: Nanos) -> f64 {
    ns.0 as f64 / 1e9
}

/// The exposition of a copy of the state.
fn exposition(c: &Copy) -> Exposition<'_> {
    let mut e = Exposition::default();
    series_families(&mut e, c);
    monitor_counters(&mut e, c);
    noise_counters(&mut e, c);
    system_counters(&mut e, c);
    info_gauges(&mut e, c);
    e
}

/// Per measured series: its histogram, its window maxima, and for the
/// timer its overruns and whether it is still measured.
fn series_families<'a>(e: &mut Exposition<'a>, c: &'a Copy) {
    for x in &c.series {
        let (family, _) = prometheus_family(&x.name);
        e.add(
            &family,
            prometheus_help(&family),
            Kind::Histogram,
            x.labels.clone(),
            Value::Histogram(&x.total),
        );
    }
    for x in &c.series {
        let (family, _) = prometheus_family(&x.name);
        let max = max_name(&family);
        for (window, value) in [("minute", x.minute_max), ("hour", x.hour_max)] {
            let Some(v) = value else { continue };
            let mut l = x.labels.clone();
            l.push(("window".to_string(), window.to_string()));
            e.add(
                &max,
                "The largest value of the current window (minute or hour) so far.",
                Kind::Gauge,
                l,
                Value::Gauge(seconds(v)),
            );
        }
    }
    for x in c.series.iter().filter(|x| x.name == metric::TIMER_LATENCY) {
        e.add(
            "latscope_timer_overruns_total",
            "Wake-ups later than the next deadline (periods skipped).",
            Kind::Counter,
            x.labels.clone(),
            Value::Counter(x.overruns as f64),
        );
    }
    for x in c.series.iter().filter(|x| x.name == metric::TIMER_LATENCY) {
        let cpu = x.labels.iter().find(|(k, _)| k == "cpu");
        let on = match (&c.measured, cpu) {
            (Some(m), Some((_, v))) => v.parse().is_ok_and(|n: u32| m.contains(&n)),
            _ => true,
        };
        e.add(
            "latscope_timer_measuring",
            "1 while the timer measures this CPU; 0 for a CPU a reload took out (its series stay, constant).",
            Kind::Gauge,
            x.labels.clone(),
            Value::Gauge(if on { 1.0 } else { 0.0 }),
        );
    }
}

/// The monitor's own counters: episodes, what the store dropped, refused
/// reloads, lost trace records, threshold actions.
fn monitor_counters(e: &mut Exposition<'_>, c: &Copy) {
    for (cause, n) in &c.episodes {
        e.add(
            "latscope_episodes_total",
            "Samples above the threshold explained by the tracer, by the class of their longest cause.",
            Kind::Counter,
            vec![("cause".to_string(), (*cause).to_string())],
            Value::Counter(*n as f64),
        );
    }
    e.add(
        "latscope_store_dropped_seconds_total",
        "Timeline seconds dropped, oldest first, because the store failed for longer than the buffer holds (a day of one series).",
        Kind::Counter,
        Vec::new(),
        Value::Counter(c.store_dropped[0] as f64),
    );
    e.add(
        "latscope_store_dropped_episodes_total",
        "Episodes dropped, oldest first, because the store failed for longer than the buffer holds (1000).",
        Kind::Counter,
        Vec::new(),
        Value::Counter(c.store_dropped[1] as f64),
    );
    e.add(
        "latscope_config_reloads_refused_total",
        "SIGHUP reloads whose settings could not be applied (an offline CPU, an address in use): the running settings stayed.",
        Kind::Counter,
        Vec::new(),
        Value::Counter(c.reloads_refused as f64),
    );
    e.add(
        "latscope_episodes_not_stored_total",
        "Episodes counted but not stored because the day's cap was reached.",
        Kind::Counter,
        Vec::new(),
        Value::Counter(c.not_stored as f64),
    );
    e.add(
        "latscope_trace_lost_records_total",
        "Trace records the kernel lost (its ring was full).",
        Kind::Counter,
        Vec::new(),
        Value::Counter(c.lost as f64),
    );
    if let Some(counts) = c.actions {
        for (result, n) in ["ok", "failed", "suppressed", "dropped", "abandoned"]
            .iter()
            .zip(counts)
        {
            e.add(
                "latscope_actions_total",
                "Threshold actions by result: ok, failed, suppressed (over --action-limit), dropped (queue full), abandoned (still queued at shutdown or when the actions changed).",
                Kind::Counter,
                vec![("result".to_string(), (*result).to_string())],
                Value::Counter(n as f64),
            );
        }
    }
}

/// The noise duty cycle's counters per CPU (`--noise`).
fn noise_counters(e: &mut Exposition<'_>, c: &Copy) {
    for (cpu, n) in &c.noise {
        let l = vec![("cpu".to_string(), cpu.to_string())];
        for (name, help, v) in [
            (
                "latscope_noise_active_seconds_total",
                "Time the noise duty cycle spun (--noise).",
                seconds(Nanos(n.active_ns)),
            ),
            (
                "latscope_noise_interruptions_total",
                "Interruptions of the noise duty cycle's spinning loop.",
                n.interruptions as f64,
            ),
            (
                "latscope_noise_seconds_total",
                "Time the noise duty cycle's loop lost to interruptions.",
                seconds(Nanos(n.noise_ns)),
            ),
        ] {
            e.add(name, help, Kind::Counter, l.clone(), Value::Counter(v));
        }
    }
}

/// The monitor's version and kernel, its epoch, its last checkpoint.
fn info_gauges(e: &mut Exposition<'_>, c: &Copy) {
    e.add(
        "latscope_info",
        "The monitor's version and the kernel it measures.",
        Kind::Gauge,
        vec![
            ("version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
            ("kernel".to_string(), c.kernel.clone()),
            ("preemption".to_string(), c.preemption.clone()),
        ],
        Value::Gauge(1.0),
    );
    e.add(
        "latscope_monitor_epoch",
        "The current epoch: it grows by one each time SIGHUP changes how the monitor measures.",
        Kind::Gauge,
        Vec::new(),
        Value::Gauge(f64::from(c.epoch)),
    );
    if let Some(t) = c.last_checkpoint {
        e.add(
            "latscope_last_checkpoint_timestamp_seconds",
            "When the monitor last stored what it measured (Unix time).",
            Kind::Gauge,
            Vec::new(),
            Value::Gauge(seconds(t)),
        );
    }
}

/// The machine's activity counters ([`crate::system`]).
fn system_counters(e: &mut Exposition<'_>, c: &Copy) {
    let sys = &c.system;
    for (name, help, v) in [
        (
            "latscope_workload_interrupts_total",
            "Interrupts since boot, all sources and CPUs (/proc/stat intr).",
            sys.interrupts,
        ),
        (
            "latscope_workload_context_switches_total",
            "Context switches since boot, all CPUs.",
            sys.context_switches,
        ),
        (
            "latscope_workload_processes_total",
            "Tasks created since boot (every fork and clone).",
            sys.processes,
        ),
    ] {
        if let Some(v) = v {
            e.add(
                name,
                help,
                Kind::Counter,
                Vec::new(),
                Value::Counter(v as f64),
            );
        }
    }
    if let Some(v) = sys.procs_running {
        e.add(
            "latscope_workload_procs_running",
            "Runnable tasks now.",
            Kind::Gauge,
            Vec::new(),
            Value::Gauge(v as f64),
        );
    }
    for (vector, n) in &sys.softirqs {
        e.add(
            "latscope_workload_softirqs_total",
            "Softirqs run since boot, all CPUs, per vector.",
            Kind::Counter,
            vec![("vector".to_string(), vector.clone())],
            Value::Counter(*n as f64),
        );
    }
    for (cpu, ticks) in &sys.cpu_ticks {
        if c.measured.as_ref().is_some_and(|m| !m.contains(cpu)) {
            continue;
        }
        for (mode, t) in SystemCounters::modes(ticks) {
            e.add(
                "latscope_workload_cpu_seconds_total",
                "Time each measured CPU spent per mode since boot (steal: the hypervisor ran something else).",
                Kind::Counter,
                vec![
                    ("cpu".to_string(), cpu.to_string()),
                    ("mode".to_string(), mode.to_string()),
                ],
                Value::Counter(t as f64 / USER_HZ),
            );
        }
    }
}

impl Source for Endpoint {
    fn metrics(&self, accept: Option<&str>) -> (String, Vec<u8>) {
        let mut copy = self.copy();
        copy.system = SystemCounters::read(std::path::Path::new("/proc"));
        let e = exposition(&copy);
        let format = exposition::negotiate(accept);
        let body = match format {
            exposition::Format::Protobuf => exposition::encode_protobuf(&e),
            exposition::Format::Text => exposition::encode_text(&e).into_bytes(),
        };
        (format.content_type().to_string(), body)
    }

    fn health(&self) -> (bool, String) {
        let s = lock(&self.shared);
        let now = latscope_engine::system::monotonic_ns();
        let persist = s.settings.as_ref().map_or(10_000_000_000, |x| x.persist.0);
        if let Some(e) = &s.store_error {
            return (false, format!("the store is failing: {e}"));
        }
        match s.progress_at {
            Some(t) if now.saturating_sub(t.0) <= 5_000_000_000 => (
                true,
                format!("ok: epoch {}, {} samples in it", s.epoch, s.samples),
            ),
            Some(t) => (
                false,
                format!(
                    "the measuring threads have not reported for {}",
                    Nanos(now.saturating_sub(t.0))
                ),
            ),
            // Starting: healthy for one persistence interval's grace.
            None if now.saturating_sub(s.started.0) < persist => (true, "starting".into()),
            None => (false, "the measuring threads have not started".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(cpu: u32) -> SeriesCopy {
        let mut total = Histogram::new();
        total.record(1_000);
        SeriesCopy {
            name: metric::TIMER_LATENCY.to_string(),
            labels: vec![("cpu".to_string(), cpu.to_string())],
            total,
            minute_max: None,
            hour_max: None,
            overruns: 0,
        }
    }

    fn text(measured: Option<Vec<u32>>) -> String {
        let c = Copy {
            series: vec![series(0), series(1)],
            episodes: Vec::new(),
            not_stored: 0,
            reloads_refused: 0,
            store_dropped: [0, 0],
            lost: 0,
            epoch: 2,
            last_checkpoint: None,
            kernel: String::new(),
            preemption: String::new(),
            actions: None,
            noise: Default::default(),
            measured,
            system: SystemCounters::default(),
        };
        exposition::encode_text(&exposition(&c))
    }

    #[test]
    fn a_cpu_a_reload_took_out_is_not_measuring() {
        let t = text(Some(vec![1]));
        assert!(t.contains("latscope_timer_measuring{cpu=\"0\"} 0\n"), "{t}");
        assert!(t.contains("latscope_timer_measuring{cpu=\"1\"} 1\n"), "{t}");
        let t = text(None);
        assert!(t.contains("latscope_timer_measuring{cpu=\"0\"} 1\n"), "{t}");
    }
}
