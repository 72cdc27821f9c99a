use latscope_model::{
    Capabilities, CellMeta, CpuId, Episode, Nanos, NoiseCpuStats, RunMeta, SystemInfo,
    TimerCpuStats, TraceSummary, UdpStats, WorkloadStats,
};

use crate::histogram::Histogram;
use crate::timeline::SecondStats;

/// Everything measured for one metric on one CPU in one cell.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricResult {
    /// A stable metric name (`latscope_model::metric`).
    pub name: String,
    /// The CPU measured; `None` for system-wide metrics.
    pub cpu: Option<CpuId>,
    /// One value per observed event (per wake-up for timer metrics): the
    /// uncorrected distribution, comparable with cyclictest.
    pub histogram: Histogram,
    /// The coordinated-omission-corrected distribution, where it applies:
    /// every deadline skipped by an overrun is recorded with the latency it
    /// would have had, so that P(latency > x) is per deadline.
    pub corrected: Option<Histogram>,
    /// Wake-ups later than the next deadline (periods skipped, not drifted).
    pub overruns: u64,
    /// Deadlines skipped because of overruns.
    pub missed_deadlines: u64,
    /// The threshold samples were compared with, when one was given.
    pub threshold: Option<Nanos>,
    /// Exact count of samples strictly above `threshold`.
    pub above_threshold: Option<u64>,
}

impl MetricResult {
    pub fn new(name: &str, cpu: Option<CpuId>) -> MetricResult {
        MetricResult {
            name: name.to_string(),
            cpu,
            histogram: Histogram::new(),
            corrected: None,
            overruns: 0,
            missed_deadlines: 0,
            threshold: None,
            above_threshold: None,
        }
    }
}

/// A run of consecutive seconds of one metric's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineChunk {
    pub metric: String,
    pub cpu: Option<CpuId>,
    /// The first second's offset from the cell's start.
    pub first_second: u64,
    pub seconds: Vec<SecondStats>,
}

/// One cell with its measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct CellResult {
    pub meta: CellMeta,
    pub metrics: Vec<MetricResult>,
    /// What the tracer did (runs with `--trace` only).
    pub trace: Option<TraceSummary>,
    /// The episodes kept in full, in order (runs with `--trace` only).
    pub episodes: Vec<Episode>,
    /// Per-CPU figures of the noise probe (noise cells only).
    pub noise: Vec<NoiseCpuStats>,
    /// Per-CPU early wake-ups of the timer probe (timer cells only; empty
    /// for a timer cell stored before schema version 6).
    pub timer: Vec<TimerCpuStats>,
    /// The UDP probe's counts (UDP cells only).
    pub udp: Option<UdpStats>,
    /// What the background workload did to the machine while the cell ran
    /// (sampled once a second); `None` when the cell was not characterized.
    pub workload_stats: Option<WorkloadStats>,
}

impl CellResult {
    /// A cell holding `metrics` and nothing else: no trace, episodes or
    /// probe figures (set those with struct update syntax).
    pub fn new(meta: CellMeta, metrics: Vec<MetricResult>) -> CellResult {
        CellResult {
            meta,
            metrics,
            trace: None,
            episodes: Vec::new(),
            noise: Vec::new(),
            timer: Vec::new(),
            udp: None,
            workload_stats: None,
        }
    }
}

/// A whole run as stored: what renderers and analyses take.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub meta: RunMeta,
    pub system: SystemInfo,
    pub capabilities: Capabilities,
    pub cells: Vec<CellResult>,
}
