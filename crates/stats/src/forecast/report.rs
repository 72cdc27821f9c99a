//! The forecast of a stored run as one typed report: what `latscope
//! forecast` prints and writes as JSON, and what the HTML report plots.
//!
//! Both read the same [`ForecastReport`], so the terminal and the page show
//! the same pooled data, the same worst cases per hour, day and week and the
//! same MTTF grid. The two decisions that must never diverge live here once:
//!
//! * [`pool_cpus`]: the measured CPUs of a cell are pooled as one longer run
//!   of one CPU — samples and time add up, and the per-second timelines
//!   follow one another — so a rate or a worst case per hour is per CPU, the
//!   way an application pinned to one CPU sees it;
//! * [`mttf_grid`] over [`GridSpec::standard`]: the mean time to underrun
//!   over buffer sizes and counts (the study's Figures 6 and 7).
//!
//! The report serializes to the documented `latscope.forecast.v1` document
//! (docs/cli.md); the estimate, buffering and grid objects keep the shapes
//! the untyped document had, so the JSON did not change.

use latscope_model::{metric, CpuId, Nanos};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::diagnostics::{diagnose, CpuSeconds, Diagnostics};
use super::history::History;
use super::pseudo::PseudoWorstCases;
use super::{
    AppPreset, BufferScheme, Compute, ForecastError, Horizon, HorizonForecast, LatencyEstimate,
    Losses, Measured, Mttf, MttfGrid, Provenance, TailOptions, UsageModel, Verdict,
    PERMISSIBLE_MISS_INTERVALS,
};
use crate::Histogram;
use crate::SecondStats;
use crate::{CellResult, MetricResult, RunResult};

/// The schema name of the forecast document.
pub const FORECAST_SCHEMA: &str = "latscope.forecast.v1";

/// The probes' metrics a forecast is made for.
pub const FORECAST_METRICS: [&str; 2] = [metric::TIMER_LATENCY, metric::NOISE_GAP];

/// Whether a forecast is made for metric `name`: the probes' metrics
/// ([`FORECAST_METRICS`]) and, when the run was traced (or imported from
/// rtla), the interrupt level under the thread: `timer.irq` (intended
/// expiry → our timer's interrupt handler, the study's ISR latency) and
/// each softirq vector's `softirq.delay.<VEC>` (raise → run, the study's
/// DPC latency; cota-robles-held Table 3).
pub fn is_forecast_metric(name: &str) -> bool {
    FORECAST_METRICS.contains(&name)
        || name == metric::TIMER_IRQ
        || name.starts_with(metric::SOFTIRQ_DELAY_PREFIX)
}

/// The forecast metrics `cell` has, each once, in the order a reader
/// wants them: the thread's latency, then the interrupt level beneath it
/// (the timer's interrupt, the softirq vectors by name), then the noise
/// probe's gaps.
pub fn forecast_metrics_of(cell: &CellResult) -> Vec<&str> {
    let rank = |n: &str| match n {
        metric::TIMER_LATENCY => 0,
        metric::TIMER_IRQ => 1,
        metric::NOISE_GAP => 3,
        _ => 2,
    };
    let mut names: Vec<&str> = cell
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .filter(|n| is_forecast_metric(n))
        .collect();
    names.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    names.dedup();
    names
}

/// Points kept of an exceedance curve: a few hundred are enough for a curve.
const EXCEEDANCE_POINTS: usize = 200;

/// One metric's per-second timeline on one CPU of one cell, borrowed from
/// wherever the caller loaded it (second 0 = the cell's start).
#[derive(Clone, Copy, Debug)]
pub struct CpuTimeline<'a> {
    /// The cell's index in the run.
    pub cell: u32,
    pub metric: &'a str,
    pub cpu: Option<CpuId>,
    pub seconds: &'a [SecondStats],
}

/// The cumulative histograms of a cell's metrics at one of its checkpoints,
/// as the store kept them (see [`super::history`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CellSnapshot {
    /// The cell's index in the run.
    pub cell: u32,
    /// The cell's measured time at the checkpoint.
    pub at: Nanos,
    pub metrics: Vec<MetricResult>,
}

/// A metric of one cell with its CPUs pooled as one longer run.
#[derive(Clone, Debug, PartialEq)]
pub struct Pooled {
    /// The merged histograms (per wake-up, and per deadline where measured).
    pub metric: MetricResult,
    /// The CPUs pooled, in the order the cell lists them.
    pub cpus: Vec<u32>,
    /// The cell's duration times the number of CPUs.
    pub measured: Nanos,
    /// One CPU's seconds after another's.
    pub timeline: Vec<SecondStats>,
    /// Which CPU each stretch of `timeline` belongs to, and its length, in
    /// order.
    pub parts: Vec<(Option<u32>, usize)>,
    /// The pooled per-wake-up histogram at each stored checkpoint that
    /// holds every pooled CPU, ascending in cell time.
    pub snapshots: Vec<(Nanos, Histogram)>,
}

impl Pooled {
    /// The timeline cut back into its CPUs.
    pub fn per_cpu(&self) -> Vec<CpuSeconds<'_>> {
        let mut at = 0;
        self.parts
            .iter()
            .map(|&(cpu, len)| {
                let seconds = &self.timeline[at..at + len];
                at += len;
                CpuSeconds { cpu, seconds }
            })
            .collect()
    }
}

/// Pools the CPUs of metric `name` in `cell`: histograms merged, measured
/// time summed, timelines (from `timelines`, any subset) concatenated in the
/// order the cell lists its CPUs, and the checkpoints of `snapshots` (any
/// subset) that hold all of them pooled the same way. `None` when the cell
/// has no such metric.
pub fn pool_cpus(
    cell: &CellResult,
    name: &str,
    timelines: &[CpuTimeline<'_>],
    snapshots: &[CellSnapshot],
) -> Option<Pooled> {
    let parts: Vec<&MetricResult> = cell.metrics.iter().filter(|m| m.name == name).collect();
    if parts.is_empty() {
        return None;
    }
    let mut pooled = MetricResult::new(name, None);
    let mut corrected: Option<Histogram> = None;
    let mut cpus = Vec::new();
    let mut timeline: Vec<SecondStats> = Vec::new();
    let mut stretches = Vec::new();
    for m in &parts {
        pooled.histogram.merge(&m.histogram);
        if let Some(c) = &m.corrected {
            corrected.get_or_insert_with(Histogram::new).merge(c);
        }
        if let Some(c) = m.cpu {
            cpus.push(c.0);
        }
        if let Some(t) = timelines
            .iter()
            .find(|t| t.cell == cell.meta.index && t.metric == name && t.cpu == m.cpu)
        {
            timeline.extend_from_slice(t.seconds);
            stretches.push((m.cpu.map(|c| c.0), t.seconds.len()));
        }
    }
    pooled.corrected = corrected;
    let mut pooled_snapshots: Vec<(Nanos, Histogram)> = Vec::new();
    for s in snapshots.iter().filter(|s| s.cell == cell.meta.index) {
        let mut h = Histogram::new();
        let mut all = true;
        for m in &parts {
            match s.metrics.iter().find(|x| x.name == name && x.cpu == m.cpu) {
                Some(x) => h.merge(&x.histogram),
                None => all = false,
            }
        }
        if all && s.at < cell.meta.duration_ns {
            pooled_snapshots.push((s.at, h));
        }
    }
    pooled_snapshots.sort_by_key(|(at, _)| *at);
    // A system-wide metric (no CPU) still measured for the cell's duration.
    let ncpu = cpus.len().max(1) as u64;
    Some(Pooled {
        metric: pooled,
        measured: Nanos(cell.meta.duration_ns.0.saturating_mul(ncpu)),
        cpus,
        timeline,
        parts: stretches,
        snapshots: pooled_snapshots,
    })
}

/// The buffer sizes and counts of the MTTF grid, and the compute time of
/// each buffer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GridSpec {
    pub periods_ns: Vec<u64>,
    pub buffers: Vec<u32>,
    pub compute: Compute,
}

impl GridSpec {
    /// The grid `latscope forecast` and the HTML report both show: buffers
    /// of 0.25–64 ms, 2, 3, 4, 6 or 8 of them, computing a buffer taking
    /// 25 % of its length (the study's datapump). A fraction rather than a
    /// fixed time keeps every size feasible.
    pub fn standard() -> GridSpec {
        GridSpec {
            periods_ns: [
                250u64, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000,
            ]
            .iter()
            .map(|us| us * 1_000)
            .collect(),
            buffers: vec![2, 3, 4, 6, 8],
            compute: Compute::Fraction(0.25),
        }
    }
}

/// The MTTF grid of `spec` from a per-deadline distribution
/// ([`Measured::deadlines`]), extrapolated where no miss was seen.
pub fn mttf_grid(deadlines: &Measured<'_>, spec: &GridSpec) -> Result<MttfGrid, ForecastError> {
    deadlines.mttf_grid(&spec.periods_ns, &spec.buffers, spec.compute, true)
}

/// What a forecast is asked for.
#[derive(Clone, Debug)]
pub struct ForecastOptions {
    /// The usage model's name, as the user gave it.
    pub usage_name: String,
    pub usage: UsageModel,
    /// The buffering scheme whose MTTF is wanted, if any.
    pub scheme: Option<BufferScheme>,
    /// The application presets to give verdicts for.
    pub apps: Vec<&'static AppPreset>,
    /// Only these cells (by index); `None` for all.
    pub cells: Option<Vec<u32>>,
    pub grid: GridSpec,
    pub tail: TailOptions,
}

impl ForecastOptions {
    /// The continuous usage model, no scheme, no verdicts, every cell, the
    /// standard grid.
    pub fn new() -> ForecastOptions {
        ForecastOptions {
            usage_name: "continuous".to_string(),
            usage: UsageModel::CONTINUOUS,
            scheme: None,
            apps: Vec::new(),
            cells: None,
            grid: GridSpec::standard(),
            tail: TailOptions::default(),
        }
    }
}

impl Default for ForecastOptions {
    fn default() -> Self {
        ForecastOptions::new()
    }
}

/// The forecast of a run: per cell and metric.
#[derive(Clone, Debug, Serialize)]
pub struct ForecastReport {
    pub schema: &'static str,
    pub run_id: i64,
    pub usage: UsageReport,
    pub cells: Vec<CellForecast>,
}

impl ForecastReport {
    /// Whether an application's verdict on a wake-up latency
    /// (`timer.latency`) failed; noise gaps are no deadline, so their
    /// verdicts never count.
    pub fn wakeup_verdict_failed(&self) -> bool {
        self.cells.iter().any(|c| {
            c.metrics
                .iter()
                .any(|m| m.name == metric::TIMER_LATENCY && m.verdicts.iter().any(|v| !v.pass))
        })
    }
}

/// The usage model the day and week figures assume.
#[derive(Clone, Debug, Serialize)]
pub struct UsageReport {
    pub name: String,
    pub model: UsageModel,
}

/// One cell's forecasts.
#[derive(Clone, Debug, Serialize)]
pub struct CellForecast {
    pub index: u32,
    pub probe: String,
    pub workload: String,
    pub metrics: Vec<MetricForecast>,
}

/// The forecast of one metric of one cell, its CPUs pooled ([`pool_cpus`]).
#[derive(Clone, Debug, Serialize)]
pub struct MetricForecast {
    pub name: String,
    pub cpus: Vec<u32>,
    /// Wake-ups (uncorrected samples) measured.
    pub samples: u64,
    /// Deadlines of the distribution MTTF and verdicts use (the corrected
    /// one where measured, else `samples`).
    pub deadlines: u64,
    /// Measured time, summed over the pooled CPUs.
    pub measured_s: f64,
    /// Whether MTTF and verdicts use a coordinated-omission-corrected
    /// distribution.
    pub per_deadline: bool,
    /// `(x_ns, P(latency > x))`, thinned to about 200 points.
    pub exceedance: Vec<(u64, f64)>,
    pub worst_case: WorstCases,
    pub pseudo_worst_case: PseudoWorstCases,
    /// The MTTF of the scheme asked for.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_buffering"
    )]
    pub buffering: Option<Mttf>,
    pub verdicts: Vec<Verdict>,
    /// MTTF over buffer sizes (rows) × counts (columns): [`mttf_grid`].
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_grid"
    )]
    pub grid: Option<MttfGrid>,
    /// Why the tail could not be fitted, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<String>,
    /// The checks behind the wake-up forecasts (threshold ladder, clusters,
    /// independence, stationarity, block maxima, out-of-sample test).
    pub diagnostics: Diagnostics,
}

/// The worst case per hour, day and week.
#[derive(Clone, Debug)]
pub struct WorstCases {
    pub hour: HorizonForecast,
    pub day: HorizonForecast,
    pub week: HorizonForecast,
}

impl WorstCases {
    /// `(name, forecast)` in the order hour, day, week.
    pub fn iter(&self) -> [(&'static str, &HorizonForecast); 3] {
        [
            ("hour", &self.hour),
            ("day", &self.day),
            ("week", &self.week),
        ]
    }
}

/// Computes the forecast of `run`. `timelines` holds the per-second maxima
/// the caller has (any subset; without them the observed per-window maxima
/// are left out), `snapshots` the histograms stored at checkpoints (any
/// subset; without them the out-of-sample test uses the per-second maxima
/// and no part forecasts are made). Cells and metrics without samples are
/// skipped.
pub fn forecast_report(
    run: &RunResult,
    timelines: &[CpuTimeline<'_>],
    snapshots: &[CellSnapshot],
    options: &ForecastOptions,
) -> Result<ForecastReport, ForecastError> {
    let mut cells = Vec::new();
    for cell in &run.cells {
        if let Some(w) = &options.cells {
            if !w.contains(&cell.meta.index) {
                continue;
            }
        }
        let mut metrics = Vec::new();
        for name in forecast_metrics_of(cell) {
            let Some(p) = pool_cpus(cell, name, timelines, snapshots) else {
                continue;
            };
            if let Some(m) = metric_forecast(&p, name, options)? {
                metrics.push(m);
            }
        }
        cells.push(CellForecast {
            index: cell.meta.index,
            probe: cell.meta.probe.clone(),
            workload: cell.meta.workload.clone(),
            metrics,
        });
    }
    Ok(ForecastReport {
        schema: FORECAST_SCHEMA,
        run_id: run.meta.id.0,
        usage: UsageReport {
            name: options.usage_name.clone(),
            model: options.usage,
        },
        cells,
    })
}

fn metric_forecast(
    p: &Pooled,
    name: &str,
    options: &ForecastOptions,
) -> Result<Option<MetricForecast>, ForecastError> {
    if p.measured == Nanos::ZERO || p.metric.histogram.is_empty() {
        return Ok(None);
    }
    let cpus = p.per_cpu();
    let series: Vec<Vec<u64>> = cpus
        .iter()
        .map(|c| c.seconds.iter().map(|s| s.max).collect())
        .collect();
    let series: Vec<&[u64]> = series.iter().map(Vec::as_slice).collect();
    let wake = Measured::wakeups(&p.metric, p.measured, &options.tail)?.with_timeline(&series);
    let dl = Measured::deadlines(&p.metric, p.measured, &options.tail)?.with_timeline(&series);
    let usage = &options.usage;
    let worst_case = WorstCases {
        hour: wake.worst_case(Horizon::Hour, usage, &p.timeline),
        day: wake.worst_case(Horizon::Day, usage, &p.timeline),
        week: wake.worst_case(Horizon::Week, usage, &p.timeline),
    };
    let pseudo = PERMISSIBLE_MISS_INTERVALS
        .iter()
        .map(|&(label, secs)| (label, wake.exceeded_once_per(secs)))
        .collect();
    let ex = wake.exceedance();
    let step = (ex.len() / EXCEEDANCE_POINTS).max(1);
    // The checkpoints only help where the timeline places the change
    // points and the seconds tested.
    let cell_duration = Nanos(p.measured.0 / p.cpus.len().max(1) as u64);
    let history = History {
        snapshots: &p.snapshots,
        cell_duration,
        tail: &options.tail,
    };
    let history = (!p.snapshots.is_empty() && !p.timeline.is_empty()).then_some(&history);
    let diagnostics = diagnose(&wake, &cpus, history);
    Ok(Some(MetricForecast {
        name: name.to_string(),
        cpus: p.cpus.clone(),
        samples: wake.samples(),
        deadlines: dl.samples(),
        measured_s: wake.duration_s(),
        per_deadline: dl.per_deadline(),
        exceedance: ex.into_iter().step_by(step).collect(),
        worst_case,
        pseudo_worst_case: PseudoWorstCases(pseudo),
        buffering: options.scheme.as_ref().map(|s| dl.mttf_best(s)),
        verdicts: options
            .apps
            .iter()
            .map(|a| match a.losses {
                Losses::PerStall => wake.verdict(a),
                Losses::PerDeadline => dl.verdict(a),
            })
            .collect(),
        grid: mttf_grid(&dl, &options.grid).ok(),
        tail: wake.tail().err().map(|e| e.to_string()),
        diagnostics,
    }))
}

// ------------------------------------------------------------ serialization
//
// The document keeps the shapes of the untyped JSON it replaces: an
// estimate is `{latency_ns, observed, provenance, interval, events}` or
// `{latency_ns: null, error}`; a horizon adds `run_seconds` and
// `observed_windows`; the grid is matrices of `mttf_s` and `lower_bound`.

fn write_estimate<M: SerializeMap>(
    map: &mut M,
    e: &Result<LatencyEstimate, ForecastError>,
) -> Result<(), M::Error> {
    match e {
        Ok(est) => {
            map.serialize_entry("latency_ns", &est.latency_ns)?;
            map.serialize_entry("observed", &(est.provenance == Provenance::Observed))?;
            map.serialize_entry("provenance", est.provenance.as_str())?;
            map.serialize_entry("interval", &est.interval)?;
            map.serialize_entry("events", &est.events)?;
        }
        Err(why) => {
            map.serialize_entry("latency_ns", &Option::<u64>::None)?;
            map.serialize_entry("error", &why.to_string())?;
        }
    }
    Ok(())
}

struct EstimateJson<'a>(&'a Result<LatencyEstimate, ForecastError>);

impl Serialize for EstimateJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        write_estimate(&mut map, self.0)?;
        map.end()
    }
}

#[derive(Serialize)]
struct WindowsJson {
    windows: usize,
    median_ns: u64,
    worst_ns: u64,
}

/// A horizon's prediction interval: the [`super::PredictedMax`] fields, or
/// `{"error": why}`.
struct PredictionJson<'a>(&'a Result<super::PredictedMax, ForecastError>);

impl Serialize for PredictionJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Ok(p) => p.serialize(s),
            Err(why) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("error", &why.to_string())?;
                map.end()
            }
        }
    }
}

struct HorizonJson<'a>(&'a HorizonForecast);

impl Serialize for HorizonJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let h = self.0;
        let mut map = s.serialize_map(None)?;
        write_estimate(&mut map, &h.estimate)?;
        map.serialize_entry("run_seconds", &h.run_seconds)?;
        map.serialize_entry("prediction", &PredictionJson(&h.prediction))?;
        if let Some(w) = &h.windows {
            map.serialize_entry(
                "observed_windows",
                &WindowsJson {
                    windows: w.windows,
                    median_ns: w.median_ns,
                    worst_ns: w.worst_ns,
                },
            )?;
        }
        if let Some(b) = &h.monitor {
            map.serialize_entry("monitor_blocks", b)?;
        }
        map.end()
    }
}

impl Serialize for WorstCases {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        for (name, h) in self.iter() {
            map.serialize_entry(name, &HorizonJson(h))?;
        }
        map.end()
    }
}

// The JSON form of the pseudo worst cases, beside the other forms here.
impl Serialize for PseudoWorstCases {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (label, e) in &self.0 {
            map.serialize_entry(label, &EstimateJson(e))?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct BufferingJson<'a> {
    period_ns: u64,
    buffers: u32,
    slack_ns: i64,
    p_miss: f64,
    misses: u64,
    deadlines: u64,
    mttf_s: f64,
    lower_bound: bool,
    provenance: &'static str,
    interval_s: &'a super::Interval<f64>,
}

fn serialize_buffering<S: Serializer>(m: &Option<Mttf>, s: S) -> Result<S::Ok, S::Error> {
    match m {
        None => s.serialize_none(),
        Some(m) => BufferingJson {
            period_ns: m.scheme.period_ns,
            buffers: m.scheme.buffers,
            slack_ns: m.slack_ns,
            p_miss: m.p_miss,
            misses: m.misses,
            deadlines: m.deadlines,
            mttf_s: m.mttf_s,
            lower_bound: m.lower_bound,
            provenance: m.provenance.as_str(),
            interval_s: &m.interval_s,
        }
        .serialize(s),
    }
}

#[derive(Serialize)]
struct GridJson<'a> {
    periods_ns: &'a [u64],
    buffers: &'a [u32],
    compute: &'a Compute,
    mttf_s: Vec<Vec<f64>>,
    lower_bound: Vec<Vec<bool>>,
    provenance: Vec<Vec<&'static str>>,
}

fn serialize_grid<S: Serializer>(g: &Option<MttfGrid>, s: S) -> Result<S::Ok, S::Error> {
    match g {
        None => s.serialize_none(),
        Some(g) => GridJson {
            periods_ns: &g.periods_ns,
            buffers: &g.buffers,
            compute: &g.compute,
            mttf_s: g
                .cells
                .iter()
                .map(|r| r.iter().map(|m| m.mttf_s).collect())
                .collect(),
            lower_bound: g
                .cells
                .iter()
                .map(|r| r.iter().map(|m| m.lower_bound).collect())
                .collect(),
            provenance: g
                .cells
                .iter()
                .map(|r| r.iter().map(|m| m.provenance.as_str()).collect())
                .collect(),
        }
        .serialize(s),
    }
}

#[cfg(test)]
mod tests {

    use latscope_model::{CellMeta, RunId, RunMeta, RunStatus};

    use super::*;

    fn second(max: u64) -> SecondStats {
        SecondStats {
            count: 1000,
            max,
            above: 0,
        }
    }

    fn metric_on(cpu: u32, values: &[(u64, u64)], corrected: bool) -> MetricResult {
        let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(cpu)));
        let mut c = Histogram::new();
        for &(v, n) in values {
            for _ in 0..n {
                m.histogram.record(v);
                c.record(v);
            }
        }
        if corrected {
            m.corrected = Some(c);
        }
        m
    }

    fn cell(index: u32, duration: Nanos, metrics: Vec<MetricResult>) -> CellResult {
        CellResult::new(
            CellMeta::new(
                index,
                "none",
                latscope_model::CellSettings::default_for("timer").unwrap(),
                duration,
            ),
            metrics,
        )
    }

    fn run_of(cells: Vec<CellResult>) -> RunResult {
        RunResult {
            meta: RunMeta {
                status: RunStatus::Complete,
                pid: 1,
                ..RunMeta::new(RunId(3), Nanos(0))
            },
            system: Default::default(),
            capabilities: Default::default(),
            cells,
        }
    }

    #[test]
    fn pooling_sums_samples_and_time_and_chains_timelines_in_cpu_order() {
        // CPU 1 is listed first: its seconds must come first.
        let c = cell(
            4,
            Nanos::from_secs(10),
            vec![
                metric_on(1, &[(10_000, 100)], true),
                metric_on(0, &[(20_000, 50), (900_000, 1)], false),
            ],
        );
        let one: Vec<SecondStats> = (0..3).map(|_| second(11_000)).collect();
        let zero: Vec<SecondStats> = (0..2).map(|_| second(22_000)).collect();
        let other_cell: Vec<SecondStats> = vec![second(99_000_000)];
        let timelines = [
            CpuTimeline {
                cell: 4,
                metric: metric::TIMER_LATENCY,
                cpu: Some(CpuId(0)),
                seconds: &zero,
            },
            CpuTimeline {
                cell: 5,
                metric: metric::TIMER_LATENCY,
                cpu: Some(CpuId(1)),
                seconds: &other_cell,
            },
            CpuTimeline {
                cell: 4,
                metric: metric::NOISE_GAP,
                cpu: Some(CpuId(1)),
                seconds: &other_cell,
            },
            CpuTimeline {
                cell: 4,
                metric: metric::TIMER_LATENCY,
                cpu: Some(CpuId(1)),
                seconds: &one,
            },
        ];
        let p = pool_cpus(&c, metric::TIMER_LATENCY, &timelines, &[]).unwrap();
        assert_eq!(p.cpus, vec![1, 0]);
        assert_eq!(p.measured, Nanos::from_secs(20));
        assert_eq!(p.metric.histogram.count(), 151);
        assert_eq!(p.metric.histogram.max(), Some(Nanos(900_000)));
        // Only CPU 1 had a corrected histogram: the pooled one holds its
        // samples and no others.
        assert_eq!(p.metric.corrected.as_ref().map(Histogram::count), Some(100));
        let maxima: Vec<u64> = p.timeline.iter().map(|s| s.max).collect();
        assert_eq!(maxima, vec![11_000, 11_000, 11_000, 22_000, 22_000]);
        assert!(pool_cpus(&c, metric::NOISE_GAP, &timelines, &[]).is_none());
    }

    #[test]
    fn pooling_without_timelines_keeps_the_histograms() {
        let c = cell(0, Nanos::from_secs(2), vec![metric_on(0, &[(5, 3)], false)]);
        let p = pool_cpus(&c, metric::TIMER_LATENCY, &[], &[]).unwrap();
        assert!(p.timeline.is_empty());
        assert_eq!(p.metric.histogram.count(), 3);
        assert_eq!(p.measured, Nanos::from_secs(2));
        assert!(p.metric.corrected.is_none());
    }

    #[test]
    fn the_standard_grid_is_the_documented_one() {
        let g = GridSpec::standard();
        assert_eq!(g.periods_ns.first(), Some(&250_000));
        assert_eq!(g.periods_ns.last(), Some(&64_000_000));
        assert_eq!(g.periods_ns.len(), 9);
        assert!(g.periods_ns.windows(2).all(|w| w[1] == 2 * w[0]));
        assert_eq!(g.buffers, vec![2, 3, 4, 6, 8]);
        assert_eq!(g.compute, Compute::Fraction(0.25));
    }

    #[test]
    fn grid_entries_are_the_observed_mttf_where_misses_were_seen() {
        // 10 000 deadlines at 100 µs and 10 at 5 ms, over 10 s.
        let m = metric_on(0, &[(100_000, 10_000), (5_000_000, 10)], true);
        let dl = Measured::deadlines(&m, Nanos::from_secs(10), &TailOptions::default()).unwrap();
        let spec = GridSpec {
            periods_ns: vec![1_000_000, 2_000_000],
            buffers: vec![2, 3],
            compute: Compute::Fraction(0.25),
        };
        let g = mttf_grid(&dl, &spec).unwrap();
        assert_eq!(g.periods_ns, spec.periods_ns);
        assert_eq!(g.buffers, spec.buffers);
        for (r, &period) in spec.periods_ns.iter().enumerate() {
            for (c, &n) in spec.buffers.iter().enumerate() {
                let m = g.get(r, c).unwrap();
                // Every slack here (0.75 – 3.5 ms) lies below 5 ms: all 10
                // late deadlines miss, MTTF = N·t / 10.
                assert_eq!(m.misses, 10, "{period} x {n}");
                assert_eq!(m.provenance, Provenance::Observed);
                let want = 10_010.0 * period as f64 / 1e9 / 10.0;
                assert!((m.mttf_s - want).abs() < 1e-9, "{} vs {want}", m.mttf_s);
                assert_eq!(m.scheme.compute_ns(), period / 4);
            }
        }
        // A slack beyond every sample: no miss, so never an observed MTTF.
        let wide = GridSpec {
            periods_ns: vec![4_000_000],
            buffers: vec![3],
            compute: Compute::Fraction(0.25),
        };
        let w = mttf_grid(&dl, &wide).unwrap();
        let m = w.get(0, 0).unwrap();
        assert_eq!(m.misses, 0);
        assert!(m.lower_bound || m.provenance == Provenance::Extrapolated);
    }

    #[test]
    fn the_report_pools_cpus_into_whole_hours() {
        // Two CPUs of 30 minutes each: only pooled do they make one hour,
        // whose maximum is the larger CPU's.
        let half_hour = Nanos::from_secs(1800);
        let c = cell(
            0,
            half_hour,
            vec![
                metric_on(0, &[(10_000, 1_800_000)], true),
                metric_on(1, &[(10_000, 1_799_999), (700_000, 1)], true),
            ],
        );
        let t0: Vec<SecondStats> = (0..1800).map(|_| second(10_000)).collect();
        let mut t1 = t0.clone();
        t1[7] = second(700_000);
        let timelines = [
            CpuTimeline {
                cell: 0,
                metric: metric::TIMER_LATENCY,
                cpu: Some(CpuId(0)),
                seconds: &t0,
            },
            CpuTimeline {
                cell: 0,
                metric: metric::TIMER_LATENCY,
                cpu: Some(CpuId(1)),
                seconds: &t1,
            },
        ];
        let mut options = ForecastOptions::new();
        options.scheme = Some(BufferScheme::new(1_000_000, 2, Compute::Nanos(0)).unwrap());
        let r = forecast_report(&run_of(vec![c]), &timelines, &[], &options).unwrap();
        assert_eq!(r.run_id, 3);
        let m = &r.cells[0].metrics[0];
        assert_eq!(m.samples, 3_600_000);
        assert!((m.measured_s - 3600.0).abs() < 1e-9);
        let hour = &m.worst_case.hour;
        let w = hour.windows.as_ref().unwrap();
        assert_eq!((w.windows, w.worst_ns), (1, 700_000));
        // 3.6 M wake-ups in an hour at the measured rate: the hour is
        // observed, not extrapolated.
        let est = hour.estimate.as_ref().unwrap();
        assert_eq!(est.provenance, Provenance::Observed);
        let b = m.buffering.as_ref().unwrap();
        assert_eq!((b.misses, b.deadlines), (0, 3_600_000));
        // The grid is the standard one.
        let g = m.grid.as_ref().unwrap();
        assert_eq!(g.periods_ns, GridSpec::standard().periods_ns);
        assert_eq!(g.buffers, GridSpec::standard().buffers);
        // A cell left out is not in the report.
        options.cells = Some(vec![1]);
        let none = forecast_report(&run_of(Vec::new()), &[], &[], &options).unwrap();
        assert!(none.cells.is_empty());
    }

    /// `n` samples of a metric spread evenly over 1-100 us.
    fn spread(name: &str, cpu: Option<CpuId>, n: u64) -> MetricResult {
        let mut m = MetricResult::new(name, cpu);
        for i in 0..n {
            m.histogram.record(1_000 + (i * 7_919) % 99_000);
        }
        m
    }

    #[test]
    fn the_interrupt_level_is_forecast_beside_the_thread_in_the_readers_order() {
        let c = cell(
            0,
            Nanos::from_secs(60),
            vec![
                spread("softirq.delay.TIMER", None, 5_000),
                spread("softirq.exec.TIMER", None, 5_000),
                spread(metric::TIMER_SCHED, Some(CpuId(0)), 5_000),
                spread(metric::NOISE_GAP, Some(CpuId(0)), 5_000),
                spread("softirq.delay.NET_RX", None, 5_000),
                spread(metric::TIMER_IRQ, Some(CpuId(0)), 5_000),
                spread(metric::TIMER_LATENCY, Some(CpuId(0)), 5_000),
            ],
        );
        assert_eq!(
            forecast_metrics_of(&c),
            vec![
                metric::TIMER_LATENCY,
                metric::TIMER_IRQ,
                "softirq.delay.NET_RX",
                "softirq.delay.TIMER",
                metric::NOISE_GAP
            ]
        );
        // The timer's interrupt has its timeline, the softirq none: its
        // checks say why they are missing instead of asking for more data.
        let irq: Vec<SecondStats> = (0..60).map(|i| second(20_000 + i * 100)).collect();
        let timelines = [CpuTimeline {
            cell: 0,
            metric: metric::TIMER_IRQ,
            cpu: Some(CpuId(0)),
            seconds: &irq,
        }];
        let r =
            forecast_report(&run_of(vec![c]), &timelines, &[], &ForecastOptions::new()).unwrap();
        let m = &r.cells[0].metrics;
        assert_eq!(m.len(), 5);
        assert_eq!(m[1].name, metric::TIMER_IRQ);
        assert_eq!(m[1].diagnostics.checks.len(), 1);
        assert_ne!(
            m[1].diagnostics.validation_skipped.as_deref(),
            Some(super::super::diagnostics::NO_TIMELINE)
        );
        assert_eq!(m[3].name, "softirq.delay.TIMER");
        assert!(m[3].cpus.is_empty());
        assert!(m[3].diagnostics.checks.is_empty());
        assert_eq!(
            m[3].diagnostics.validation_skipped.as_deref(),
            Some(super::super::diagnostics::NO_TIMELINE)
        );
    }
}
