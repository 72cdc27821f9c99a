//! The documented JSON form of a run (`docs/json.md`). Field names are
//! stable: later versions add fields, never rename these.

use std::collections::BTreeMap;

use latscope_model::{
    metric, Capabilities, Cause, CellSettings, Episode, NoiseClass, NoiseClock, NoiseCpuStats,
    RunSource, RunStatus, StackCount, StealSource, SystemInfo, TimerCpuStats, TraceSummary,
    UdpPath, UdpStats, WorkloadStats,
};
use latscope_stats::{late_mode, Histogram, MetricResult, RunResult, Spacing, Summary};
use serde::Serialize;

use crate::granularity::{cell_spacing, late_mode_json, LateModeJson};
use crate::noise::{
    base_iteration_ns, cpu_available_percent, interruptions_per_second, noise_percent,
};

/// Names this document's layout; bumped only for incompatible changes.
pub const JSON_SCHEMA: &str = "latscope.run.v1";

#[derive(Serialize)]
pub struct RunJson<'a> {
    pub schema: &'static str,
    pub run_id: i64,
    pub status: RunStatus,
    pub started_unix_ns: u64,
    pub ended_unix_ns: Option<u64>,
    pub command_line: &'a [String],
    pub tool_version: &'a str,
    pub notes: &'a [String],
    /// The tool and file the run was imported from (`latscope import`);
    /// absent for a run latscope measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'a RunSource>,
    pub system: &'a SystemInfo,
    pub capabilities: &'a Capabilities,
    pub cells: Vec<CellJson<'a>>,
    /// The episodes kept in full, over all cells (`run --trace`); empty
    /// otherwise.
    pub episodes: Vec<EpisodeJson<'a>>,
}

#[derive(Serialize)]
pub struct CellJson<'a> {
    pub index: u32,
    pub probe: &'a str,
    pub workload: &'a str,
    pub settings: &'a CellSettings,
    pub duration_ns: u64,
    pub metrics: Vec<MetricJson>,
    /// What the tracer did; `null` when the cell was not traced. The
    /// model's own form: fields the model adds appear here too.
    pub trace: Option<&'a TraceSummary>,
    /// The noise probe's figures, one per measured CPU, by CPU; `[]` for a
    /// cell of another probe.
    pub noise: Vec<NoiseJson<'a>>,
    /// The timer probe's early wake-ups, one per measured CPU, by CPU;
    /// absent for a cell of another probe and for a timer cell stored
    /// before they were counted (schema version 6).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timer_stats: Vec<TimerStatsJson>,
    /// The UDP probe's counts beside its `udp.*` metrics; absent (not
    /// `null`) for a cell of another probe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpJson>,
    /// What the background workload did to the machine while the cell ran
    /// (`docs/json.md`); `null` when the cell was not characterized. The
    /// model's own form.
    pub workload_stats: Option<&'a WorkloadStats>,
}

/// `cells[].noise[]`: what the noise probe measured on one CPU beside its
/// `noise.gap` metric, with the shares derived from it. Every field is
/// always present (`classes` empty, `steal_ns` null, `findings` empty when
/// there is nothing to say).
#[derive(Serialize)]
pub struct NoiseJson<'a> {
    pub cpu: u32,
    pub clock: NoiseClock,
    pub tsc_hz: u64,
    pub calibration_drift_ppb: i64,
    pub active_ns: u64,
    pub iterations: u64,
    pub base_iteration_ps: u64,
    pub gap_threshold_ns: u64,
    pub interruptions: u64,
    pub noise_ns: u64,
    pub max_gap_ns: u64,
    pub classes: &'a BTreeMap<String, NoiseClass>,
    pub steal_ns: Option<u64>,
    pub findings: &'a [String],
    /// `base_iteration_ps` in nanoseconds; null before the first iteration
    /// and when not known (0: a run imported from oslat).
    pub base_iteration_ns: Option<f64>,
    /// `noise_ns` as a percentage of `active_ns`; null without active time.
    pub noise_percent: Option<f64>,
    /// 100 − `noise_percent` (never below 0).
    pub cpu_available_percent: Option<f64>,
    /// `interruptions` per second of `active_ns`.
    pub interruptions_per_second: Option<f64>,
}

fn noise_json(s: &NoiseCpuStats) -> NoiseJson<'_> {
    NoiseJson {
        cpu: s.cpu.0,
        clock: s.clock,
        tsc_hz: s.tsc_hz,
        calibration_drift_ppb: s.calibration_drift_ppb,
        active_ns: s.active_ns.0,
        iterations: s.iterations,
        base_iteration_ps: s.base_iteration_ps,
        gap_threshold_ns: s.gap_threshold_ns.0,
        interruptions: s.interruptions,
        noise_ns: s.noise_ns.0,
        max_gap_ns: s.max_gap_ns.0,
        classes: &s.classes,
        steal_ns: s.steal_ns.map(|n| n.0),
        findings: &s.findings,
        base_iteration_ns: base_iteration_ns(s),
        noise_percent: noise_percent(s),
        cpu_available_percent: cpu_available_percent(s),
        interruptions_per_second: interruptions_per_second(s),
    }
}

/// `cells[].timer_stats[]`: wake-ups of the timer probe that came before
/// their deadline on one CPU. Such a wake-up is in `timer.latency` as 0 ns.
#[derive(Serialize)]
pub struct TimerStatsJson {
    pub cpu: u32,
    pub early_wakeups: u64,
    /// The largest earliness: deadline − wake-up time; 0 when none was early.
    pub max_early_ns: u64,
}

fn timer_stats_json(s: &TimerCpuStats) -> TimerStatsJson {
    TimerStatsJson {
        cpu: s.cpu.0,
        early_wakeups: s.early_wakeups,
        max_early_ns: s.max_early_ns.0,
    }
}

/// `cells[].udp`: what the UDP probe counted beside its histograms. Every
/// field is always present.
#[derive(Serialize)]
pub struct UdpJson {
    pub path: UdpPath,
    pub sender_cpu: u32,
    pub receiver_cpu: u32,
    pub payload_bytes: u32,
    pub period_ns: u64,
    pub sent: u64,
    pub send_errors: u64,
    pub received: u64,
    pub lost: u64,
    pub reordered: u64,
    pub duplicates: u64,
    pub overruns: u64,
    pub skipped_sends: u64,
    pub missing_tx_sched: u64,
    pub missing_tx_software: u64,
    pub missing_rx_software: u64,
    pub checked: u64,
    pub inconsistent: u64,
    /// `lost` as a percentage of `sent`; null when nothing was sent.
    pub loss_percent: Option<f64>,
}

fn udp_json(s: &UdpStats) -> UdpJson {
    UdpJson {
        path: s.path,
        sender_cpu: s.sender_cpu.0,
        receiver_cpu: s.receiver_cpu.0,
        payload_bytes: s.payload_bytes,
        period_ns: s.period_ns.0,
        sent: s.sent,
        send_errors: s.send_errors,
        received: s.received,
        lost: s.lost,
        reordered: s.reordered,
        duplicates: s.duplicates,
        overruns: s.overruns,
        skipped_sends: s.skipped_sends,
        missing_tx_sched: s.missing_tx_sched,
        missing_tx_software: s.missing_tx_software,
        missing_rx_software: s.missing_rx_software,
        checked: s.checked,
        inconsistent: s.inconsistent,
        loss_percent: crate::udp::loss_percent(s),
    }
}

/// `episodes[]`: one sample above the threshold, explained.
#[derive(Serialize)]
pub struct EpisodeJson<'a> {
    pub seq: u32,
    /// The cell's index.
    pub cell: u32,
    pub cpu: u32,
    /// Intended expiry relative to the cell's start.
    pub time_ns: u64,
    /// Intended expiry, CLOCK_MONOTONIC.
    pub expiry_ns: u64,
    pub metric: &'a str,
    pub latency_ns: u64,
    pub breakdown: BreakdownJson<'a>,
    pub stacks: Vec<StackJson<'a>>,
}

#[derive(Serialize)]
pub struct BreakdownJson<'a> {
    pub irq_ns: u64,
    pub sched_ns: u64,
    pub return_ns: u64,
    pub idle_at_expiry: bool,
    pub causes: Vec<CauseJson<'a>>,
    pub blocking: Option<CauseJson<'a>>,
    pub unexplained_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal_source: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal_irq_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal_sched_ns: Option<u64>,
    pub complete: bool,
    /// The code that held the CPU (BPF backend; docs/tracing.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<&'a latscope_model::HeldCpu>,
}

#[derive(Serialize)]
pub struct CauseJson<'a> {
    pub kind: &'static str,
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    pub duration_ns: u64,
    /// Deferred work inside the share, by function or device.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<CausePartJson<'a>>,
}

#[derive(Serialize)]
pub struct CausePartJson<'a> {
    pub name: &'a str,
    pub count: u32,
    pub duration_ns: u64,
}

#[derive(Serialize)]
pub struct StackJson<'a> {
    pub function: &'a str,
    pub module: Option<&'a str>,
    pub samples: u32,
}

fn cause_json(c: &Cause) -> CauseJson<'_> {
    CauseJson {
        kind: c.kind.as_str(),
        name: &c.name,
        pid: c.pid,
        policy: c.policy.as_deref(),
        priority: c.priority,
        duration_ns: c.duration_ns.0,
        parts: c
            .parts
            .iter()
            .map(|p| CausePartJson {
                name: &p.name,
                count: p.count,
                duration_ns: p.duration_ns.0,
            })
            .collect(),
    }
}

fn stack_json(s: &StackCount) -> StackJson<'_> {
    StackJson {
        function: &s.function,
        module: s.module.as_deref(),
        samples: s.samples,
    }
}

fn episode_json(cell: u32, e: &Episode) -> EpisodeJson<'_> {
    let b = &e.breakdown;
    EpisodeJson {
        seq: e.seq,
        cell,
        cpu: e.cpu.0,
        time_ns: e.offset_ns.0,
        expiry_ns: e.expiry_ns.0,
        metric: &e.metric,
        latency_ns: e.latency_ns.0,
        breakdown: BreakdownJson {
            irq_ns: b.irq_ns.0,
            sched_ns: b.sched_ns.0,
            return_ns: b.return_ns.0,
            idle_at_expiry: b.idle_at_expiry,
            causes: b.causes.iter().map(cause_json).collect(),
            blocking: b.blocking.as_ref().map(cause_json),
            unexplained_ns: b.unexplained_ns.0,
            steal_ns: b.steal_ns.map(|s| s.0),
            steal_source: b.steal_source.map(StealSource::as_str),
            steal_irq_ns: b.steal_irq_ns.map(|s| s.0),
            steal_sched_ns: b.steal_sched_ns.map(|s| s.0),
            complete: b.complete,
            held: b.held.as_ref(),
        },
        stacks: e.stacks.iter().map(stack_json).collect(),
    }
}

#[derive(Serialize)]
pub struct MetricJson {
    pub name: String,
    pub cpu: Option<u32>,
    /// `count`, `min_ns`, `mean_ns`, `max_ns`, `p50_ns` ... `p9999_ns`, at
    /// the metric's own level.
    #[serde(flatten)]
    pub summary: SummaryJson,
    pub stddev_ns: Option<f64>,
    pub overruns: u64,
    pub missed_deadlines: u64,
    pub threshold_ns: Option<u64>,
    pub above_threshold: Option<u64>,
    /// The coordinated-omission-corrected distribution (per deadline), where
    /// the metric has one.
    pub corrected: Option<SummaryJson>,
    /// Non-empty histogram buckets: `[low_ns, high_ns, count]`, `high_ns`
    /// inclusive.
    pub histogram: Vec<[u64; 3]>,
    /// `timer.interval` only: a second mode a tick or the timer slack
    /// after the period; absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_mode: Option<LateModeJson>,
}

#[derive(Serialize)]
pub struct SummaryJson {
    pub count: u64,
    pub min_ns: Option<u64>,
    pub mean_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub p9999_ns: Option<u64>,
}

fn summary_json(h: &Histogram) -> SummaryJson {
    let s = Summary::of(h);
    SummaryJson {
        count: h.count(),
        min_ns: s.map(|s| s.min.0),
        mean_ns: s.map(|s| s.mean.0),
        max_ns: s.map(|s| s.max.0),
        p50_ns: s.map(|s| s.p50.0),
        p90_ns: s.map(|s| s.p90.0),
        p99_ns: s.map(|s| s.p99.0),
        p999_ns: s.map(|s| s.p999.0),
        p9999_ns: s.map(|s| s.p9999.0),
    }
}

fn metric_json(m: &MetricResult, spacing: Option<Spacing>) -> MetricJson {
    let late_mode = spacing
        .filter(|_| m.name == metric::TIMER_INTERVAL)
        .and_then(|s| late_mode(&m.histogram, s));
    MetricJson {
        name: m.name.clone(),
        cpu: m.cpu.map(|c| c.0),
        summary: summary_json(&m.histogram),
        stddev_ns: m.histogram.stddev().map(|v| (v * 10.0).round() / 10.0),
        overruns: m.overruns,
        missed_deadlines: m.missed_deadlines,
        threshold_ns: m.threshold.map(|t| t.0),
        above_threshold: m.above_threshold,
        corrected: m.corrected.as_ref().map(summary_json),
        histogram: m.histogram.buckets().map(|(l, h, c)| [l, h, c]).collect(),
        late_mode: late_mode.as_ref().map(late_mode_json),
    }
}

/// The JSON document of a run.
pub fn run_json(run: &RunResult) -> RunJson<'_> {
    RunJson {
        schema: JSON_SCHEMA,
        run_id: run.meta.id.0,
        status: run.meta.status,
        started_unix_ns: run.meta.started_unix_ns.0,
        ended_unix_ns: run.meta.ended_unix_ns.map(|t| t.0),
        command_line: &run.meta.command_line,
        tool_version: &run.meta.tool_version,
        notes: &run.meta.notes,
        source: run.meta.source.as_ref(),
        system: &run.system,
        capabilities: &run.capabilities,
        cells: run
            .cells
            .iter()
            .map(|c| CellJson {
                index: c.meta.index,
                probe: &c.meta.probe,
                workload: &c.meta.workload,
                settings: &c.meta.settings,
                duration_ns: c.meta.duration_ns.0,
                metrics: {
                    let spacing = cell_spacing(&run.system, run.capabilities.rt_priority, c);
                    c.metrics.iter().map(|m| metric_json(m, spacing)).collect()
                },
                trace: c.trace.as_ref(),
                noise: c.noise.iter().map(noise_json).collect(),
                timer_stats: c.timer.iter().map(timer_stats_json).collect(),
                udp: c.udp.as_ref().map(udp_json),
                workload_stats: c.workload_stats.as_ref(),
            })
            .collect(),
        episodes: run
            .cells
            .iter()
            .flat_map(|c| c.episodes.iter().map(|e| episode_json(c.meta.index, e)))
            .collect(),
    }
}
