//! `latscope sched` as one typed report: every CPU's pseudo worst case of
//! `timer.latency` in a stored run, the level each task is given as its
//! release jitter and blocking, and the response-time analysis of the set.
//!
//! The report serializes to the JSON document `latscope sched --json`
//! writes (docs/cli.md); the text form is rendered by `latscope_report`.
//! Pure: the caller parses the task file and loads the run.

use latscope_model::{metric, CellMeta, Nanos, RunId};
use serde::{Serialize, Serializer};

use super::{
    pseudo_worst_case, Analysis, PriorityOrder, PseudoBasis, PseudoWorstCase, Response, SchedError,
    Task, TaskSet,
};
use crate::forecast::{ForecastError, LatencyEstimate, Measured, Provenance, TailOptions};
use crate::RunResult;

/// Why a sched report could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchedReportError {
    /// The front end names the cell option in its own words.
    #[error("run {run} has {cells} cell(s); cell {cell} does not exist")]
    NoSuchCell { run: RunId, cells: usize, cell: u32 },
    /// `what` names the run or the cell.
    #[error(
        "{what} has no timer.latency samples: measure with `latscope run` (timer probe) first"
    )]
    NoSamples { what: String },
    /// The task set with its jitter and blocking is not valid.
    #[error("{0}")]
    Tasks(SchedError),
    /// The response-time analysis failed.
    #[error("{0}")]
    Analysis(SchedError),
}

/// The pseudo worst case of one CPU in one cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PseudoSource {
    pub cell: u32,
    pub workload: String,
    pub cpu: Option<u32>,
    /// `fifo`, `rr`, `deadline`, `other`.
    pub policy: String,
    /// 0 for `SCHED_OTHER`.
    pub priority: u32,
    #[serde(rename = "latency_ns")]
    pub latency: Nanos,
    #[serde(serialize_with = "basis_key")]
    pub basis: PseudoBasis,
    /// Samples above the figure.
    pub exceedances: u64,
    /// Exceedances the miss rate allows in the measured time.
    pub allowed: f64,
    pub samples: u64,
    /// How long the cell measured.
    #[serde(rename = "measured_ns")]
    pub measured: Nanos,
    pub wakeups_per_second: f64,
    /// Whether the per-deadline (coordinated-omission corrected) histogram
    /// was used.
    pub corrected: bool,
    /// The upper end of the extrapolated figure's interval (`None`: not
    /// extrapolated, or unbounded).
    #[serde(rename = "interval_high_ns", skip_serializing_if = "Option::is_none")]
    pub interval_high: Option<Nanos>,
    /// Why a figure bounded by the run's max was not extrapolated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_extrapolation: Option<String>,
}

impl PseudoSource {
    /// `FIFO 95`, `other`.
    pub fn level(&self) -> String {
        policy_label(&self.policy, self.priority)
    }
}

fn policy_label(policy: &str, priority: u32) -> String {
    match policy {
        "fifo" | "rr" => format!("{} {priority}", policy.to_uppercase()),
        // other, batch, idle, deadline: no real-time priority.
        p => p.to_string(),
    }
}

/// Where a task's J and B come from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySource {
    /// The measured level used (`FIFO 95`).
    pub level: String,
    /// Its numeric priority.
    pub priority: u32,
    pub cell: Option<u32>,
    pub cpu: Option<u32>,
    pub workload: Option<String>,
    /// `run_max` when some figure at the level is only the run's max.
    #[serde(serialize_with = "basis_key")]
    pub basis: PseudoBasis,
    /// The level is above the task's own priority (none at or below it was
    /// measured), so the figure may be optimistic.
    pub optimistic: bool,
    /// Index of the largest figure at the level in
    /// [`SchedReport::pseudo_worst_case`].
    #[serde(skip)]
    pub source: Option<usize>,
}

/// How a response time is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseKind {
    /// The exact worst case under the model.
    Exact,
    /// The search passed the period: at least this (a miss).
    LowerBound,
    /// Higher-priority tasks alone need the whole CPU.
    Unbounded,
}

/// One task of the analysis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskReport {
    pub name: String,
    #[serde(rename = "period_ns")]
    pub period: Nanos,
    #[serde(rename = "wcet_ns")]
    pub wcet: Nanos,
    #[serde(rename = "deadline_ns")]
    pub deadline: Nanos,
    pub priority: Option<u32>,
    /// 1 for the highest priority.
    pub rank: usize,
    #[serde(rename = "jitter_ns")]
    pub jitter: Nanos,
    #[serde(rename = "blocking_ns")]
    pub blocking: Nanos,
    #[serde(rename = "response_ns")]
    pub response_time: Option<Nanos>,
    pub response: ResponseKind,
    pub slack_ns: Option<i64>,
    pub schedulable: bool,
    pub latency_source: LatencySource,
}

/// The schedulability of a task set with a run's measured latency.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedReport {
    pub run_id: i64,
    pub metric: &'static str,
    /// The miss rate as the user wrote it (`1/hour`).
    pub miss_rate: String,
    #[serde(rename = "miss_interval_ns")]
    pub miss_interval: Nanos,
    #[serde(serialize_with = "order_key")]
    pub priorities: PriorityOrder,
    pub pseudo_worst_case: Vec<PseudoSource>,
    pub tasks: Vec<TaskReport>,
    pub utilization: f64,
    pub ll_bound: f64,
    pub ll_pass: bool,
    pub hyperbolic_product: f64,
    pub hyperbolic_pass: bool,
    pub bounds_apply: bool,
    pub schedulable: bool,
}

fn basis_key<S: Serializer>(b: &PseudoBasis, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match b {
        PseudoBasis::Observed => "observed",
        PseudoBasis::RunMax => "run_max",
        PseudoBasis::Extrapolated => "extrapolated",
    })
}

fn order_key<S: Serializer>(o: &PriorityOrder, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match o {
        PriorityOrder::Explicit => "explicit",
        PriorityOrder::RateMonotonic => "rate_monotonic",
    })
}

/// The scheduling policy and priority a cell measured at: the one place
/// that reads them from the cell's settings. `SCHED_OTHER` counts as
/// priority 0; a cell that does not say is `fifo`.
pub fn cell_policy(meta: &CellMeta) -> (String, u32) {
    let policy = meta.settings.policy().as_str().to_string();
    // `priority()` is 0 under `other` already.
    (policy, meta.settings.priority())
}

/// Every CPU's pseudo worst case of `timer.latency` for one miss per
/// `miss_interval`, from every cell of `run` (or the one asked for): the
/// per-deadline histogram where the run had one.
pub fn pseudo_sources(
    run: &RunResult,
    only: Option<u32>,
    miss_interval: Nanos,
) -> Result<Vec<PseudoSource>, SchedReportError> {
    let id = run.meta.id;
    if let Some(c) = only {
        if !run.cells.iter().any(|cell| cell.meta.index == c) {
            return Err(SchedReportError::NoSuchCell {
                run: id,
                cells: run.cells.len(),
                cell: c,
            });
        }
    }
    let mut out = Vec::new();
    for cell in &run.cells {
        if only.is_some_and(|c| c != cell.meta.index) {
            continue;
        }
        let (policy, priority) = cell_policy(&cell.meta);
        for m in &cell.metrics {
            if m.name != metric::TIMER_LATENCY {
                continue;
            }
            let (h, corrected) = match &m.corrected {
                Some(c) if !c.is_empty() => (c, true),
                _ => (&m.histogram, false),
            };
            let Some(pwc) = pseudo_worst_case(h, cell.meta.duration_ns, miss_interval) else {
                continue;
            };
            let checked = if pwc.basis == PseudoBasis::RunMax {
                Some(checked_pseudo(
                    h,
                    cell.meta.duration_ns,
                    corrected,
                    miss_interval,
                ))
            } else {
                None
            };
            out.push(source(
                cell.meta.index,
                &cell.meta.workload,
                m.cpu.map(|c| c.0),
                (&policy, priority),
                corrected,
                cell.meta.duration_ns,
                h.count(),
                pwc,
                checked,
            ));
        }
    }
    if out.is_empty() {
        let what = match only {
            Some(c) => format!("cell {c} of run {id}"),
            None => format!("run {id}"),
        };
        return Err(SchedReportError::NoSamples { what });
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn source(
    cell: u32,
    workload: &str,
    cpu: Option<u32>,
    (policy, priority): (&str, u32),
    corrected: bool,
    measured: Nanos,
    samples: u64,
    pwc: PseudoWorstCase,
    checked: Option<Result<LatencyEstimate, ForecastError>>,
) -> PseudoSource {
    let (mut latency, mut basis, mut interval_high, mut no_extrapolation) =
        (pwc.latency, pwc.basis, None, None);
    match checked {
        Some(Ok(e)) if e.provenance == Provenance::Extrapolated => {
            latency = Nanos(e.latency_ns.max(pwc.latency.0));
            basis = PseudoBasis::Extrapolated;
            interval_high = e.interval.high.map(|h| Nanos(h.max(latency.0)));
        }
        Some(Err(why)) => no_extrapolation = Some(why.to_string()),
        _ => {}
    }
    PseudoSource {
        cell,
        workload: workload.to_string(),
        cpu,
        policy: policy.to_string(),
        priority,
        latency,
        basis,
        exceedances: pwc.exceedances,
        allowed: pwc.allowed,
        samples,
        measured,
        wakeups_per_second: pwc.wakeups_per_second,
        corrected,
        interval_high,
        no_extrapolation,
    }
}

/// The latency exceeded once per `miss_interval` from the forecasts'
/// checked tail model (threshold by stability, at most ten times the run,
/// no figure from a shape that may reach 1): the same model `latscope
/// forecast` uses, for a run shorter than the interval.
fn checked_pseudo(
    h: &crate::Histogram,
    measured: Nanos,
    per_deadline: bool,
    miss_interval: Nanos,
) -> Result<LatencyEstimate, ForecastError> {
    let m = Measured::new(h, measured, per_deadline, &TailOptions::default())?;
    m.exceeded_once_per(miss_interval.0 as f64 / 1e9)
}

/// The measured level for a task, and its figure: the highest measured
/// priority at or below the task's (a thread of lower priority sees at least
/// the latency the task would); failing that, the lowest measured one,
/// flagged as optimistic. Rate-monotonic sets (no priorities) are assumed
/// to run at the highest priority measured. At a level, the largest figure
/// over cells and CPUs is taken.
pub fn assign(sources: &[PseudoSource], priority: Option<u32>) -> (Nanos, LatencySource) {
    let highest = sources.iter().map(|s| s.priority).max().unwrap_or(0);
    let lowest = sources.iter().map(|s| s.priority).min().unwrap_or(0);
    let (level, optimistic) = match priority {
        None => (highest, false),
        Some(p) => match sources.iter().map(|s| s.priority).filter(|&q| q <= p).max() {
            Some(q) => (q, false),
            None => (lowest, true),
        },
    };
    let mut worst = 0usize;
    let mut latency = Nanos::ZERO;
    let mut bounded_by_max = false;
    let mut extrapolated = false;
    let mut first = true;
    for (i, s) in sources.iter().enumerate() {
        if s.priority != level {
            continue;
        }
        bounded_by_max |= s.basis == PseudoBasis::RunMax;
        extrapolated |= s.basis == PseudoBasis::Extrapolated;
        if first || s.latency > latency {
            latency = s.latency;
            worst = i;
            first = false;
        }
    }
    let src = sources.get(worst);
    let source = LatencySource {
        level: src
            .map(PseudoSource::level)
            .unwrap_or_else(|| level.to_string()),
        priority: level,
        cell: src.map(|s| s.cell),
        cpu: src.and_then(|s| s.cpu),
        workload: src.map(|s| s.workload.clone()),
        basis: if bounded_by_max {
            PseudoBasis::RunMax
        } else if extrapolated {
            PseudoBasis::Extrapolated
        } else {
            PseudoBasis::Observed
        },
        optimistic,
        source: src.map(|_| worst),
    };
    (latency, source)
}

/// The schedulability of `tasks` (as read, without jitter or blocking) with
/// every task's J and B set to the pseudo worst case at its priority in
/// `run` (or its cell `only`), for one miss per `miss_interval`
/// (`miss_rate` is that rate as the user wrote it, for the report).
pub fn sched_report(
    run: &RunResult,
    tasks: Vec<Task>,
    only: Option<u32>,
    miss_rate: &str,
    miss_interval: Nanos,
) -> Result<SchedReport, SchedReportError> {
    let sources = pseudo_sources(run, only, miss_interval)?;
    let mut assigned = Vec::with_capacity(tasks.len());
    let mut jittered = Vec::with_capacity(tasks.len());
    for task in tasks {
        let (latency, src) = assign(&sources, task.priority);
        jittered.push(task.with_jitter(latency).with_blocking(latency));
        assigned.push(src);
    }
    let set = TaskSet::new(jittered).map_err(SchedReportError::Tasks)?;
    let a = set.analyze().map_err(SchedReportError::Analysis)?;
    Ok(report_of(
        run.meta.id,
        &set,
        &a,
        assigned,
        sources,
        miss_rate,
        miss_interval,
    ))
}

fn report_of(
    run: RunId,
    set: &TaskSet,
    a: &Analysis,
    assigned: Vec<LatencySource>,
    sources: Vec<PseudoSource>,
    miss_rate: &str,
    miss_interval: Nanos,
) -> SchedReport {
    let tasks = set
        .tasks()
        .iter()
        .zip(&a.tasks)
        .zip(assigned)
        .enumerate()
        .map(|(i, ((t, r), latency_source))| TaskReport {
            name: t.name.clone(),
            period: t.period,
            wcet: t.wcet,
            deadline: t.deadline,
            priority: t.priority,
            rank: set.rank(i),
            jitter: t.jitter,
            blocking: t.blocking,
            response_time: r.response.value(),
            response: match r.response {
                Response::Bounded(_) => ResponseKind::Exact,
                Response::AbovePeriod(_) => ResponseKind::LowerBound,
                Response::Unbounded => ResponseKind::Unbounded,
            },
            slack_ns: r.slack_ns,
            schedulable: r.schedulable,
            latency_source,
        })
        .collect();
    SchedReport {
        run_id: run.0,
        metric: metric::TIMER_LATENCY,
        miss_rate: miss_rate.to_string(),
        miss_interval,
        priorities: a.order,
        pseudo_worst_case: sources,
        tasks,
        utilization: a.utilization,
        ll_bound: a.ll_bound,
        ll_pass: a.ll_pass,
        hyperbolic_product: a.hyperbolic_product,
        hyperbolic_pass: a.hyperbolic_pass,
        bounds_apply: a.bounds_apply,
        schedulable: a.schedulable,
    }
}

#[cfg(test)]
mod tests {

    use latscope_model::{CpuId, RunMeta, RunStatus};

    use super::*;
    use crate::{CellResult, MetricResult};

    fn src(
        cell: u32,
        policy: &str,
        priority: u32,
        latency_us: u64,
        basis: PseudoBasis,
    ) -> PseudoSource {
        PseudoSource {
            cell,
            workload: format!("w{cell}"),
            cpu: Some(cell),
            policy: policy.to_string(),
            priority,
            latency: Nanos::from_micros(latency_us),
            basis,
            exceedances: 0,
            allowed: 0.0,
            samples: 1000,
            measured: Nanos::from_secs(1),
            wakeups_per_second: 1000.0,
            corrected: false,
            interval_high: None,
            no_extrapolation: None,
        }
    }

    #[test]
    fn a_task_gets_the_largest_figure_of_the_highest_level_at_or_below_it() {
        let s = vec![
            src(0, "fifo", 95, 40, PseudoBasis::Observed),
            src(1, "fifo", 95, 60, PseudoBasis::RunMax),
            src(2, "fifo", 50, 90, PseudoBasis::Observed),
            src(3, "other", 0, 900, PseudoBasis::Observed),
        ];
        let (l, a) = assign(&s, Some(97));
        assert_eq!(l, Nanos::from_micros(60));
        assert_eq!(
            (a.level.as_str(), a.priority, a.source),
            ("FIFO 95", 95, Some(1))
        );
        // One figure at the level was only the run's max.
        assert_eq!(a.basis, PseudoBasis::RunMax);
        assert!(!a.optimistic);
        let (l, a) = assign(&s, Some(60));
        assert_eq!(
            (l, a.level.as_str(), a.basis),
            (Nanos::from_micros(90), "FIFO 50", PseudoBasis::Observed)
        );
        let (l, a) = assign(&s, None);
        assert_eq!((l, a.priority), (Nanos::from_micros(60), 95));
        let high: Vec<PseudoSource> = s[..3].to_vec();
        let (l, a) = assign(&high, Some(10));
        assert_eq!(
            (l, a.priority, a.optimistic),
            (Nanos::from_micros(90), 50, true)
        );
        let (_, a) = assign(&s, Some(0));
        assert_eq!((a.level.as_str(), a.optimistic), ("other", false));
    }

    fn run_with(policy: &str, priority: u64) -> RunResult {
        use latscope_model::{CellSettings, CommonSettings, Policy, TimerSettings};
        let settings = CellSettings::Timer(TimerSettings {
            common: CommonSettings {
                policy: match policy {
                    "other" => Policy::Other,
                    "rr" => Policy::Rr,
                    _ => Policy::Fifo,
                },
                priority: u32::try_from(priority).unwrap(),
                ..CommonSettings::default()
            },
            ..TimerSettings::default()
        });
        let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(1)));
        for i in 0..3000u64 {
            m.histogram.record(10_000 + i);
        }
        RunResult {
            meta: RunMeta {
                status: RunStatus::Complete,
                pid: 1,
                ..RunMeta::new(RunId(9), Nanos(0))
            },
            system: Default::default(),
            capabilities: Default::default(),
            cells: vec![CellResult::new(
                CellMeta::new(0, "none", settings, Nanos::from_secs(3)),
                vec![m],
            )],
        }
    }

    #[test]
    fn settings_are_read_in_one_place() {
        let r = run_with("other", 50);
        assert_eq!(cell_policy(&r.cells[0].meta), ("other".to_string(), 0));
        let r = run_with("fifo", 80);
        assert_eq!(cell_policy(&r.cells[0].meta), ("fifo".to_string(), 80));
    }

    #[test]
    fn a_run_shorter_than_the_interval_is_extrapolated_within_ten_times() {
        // Ten minutes at 1 kHz, latencies spread over 10-110 µs: one miss
        // per hour lies within ten times the run, so the checked tail model
        // answers, and never below the run's maximum.
        let mut r = run_with("fifo", 95);
        let cell = &mut r.cells[0];
        cell.meta.duration_ns = Nanos::from_secs(600);
        let m = &mut cell.metrics[0];
        m.histogram = crate::Histogram::new();
        for i in 0..600_000u64 {
            m.histogram.record(10_000 + (i * 7919) % 100_000);
        }
        let max = m.histogram.max().unwrap();
        let s = pseudo_sources(&r, None, Nanos::from_secs(3600)).unwrap();
        assert_eq!(s[0].basis, PseudoBasis::Extrapolated, "{:?}", s[0]);
        assert!(s[0].latency >= max, "{:?} below {max}", s[0].latency);
        assert!(s[0].no_extrapolation.is_none());
        let (_, src) = assign(&s, Some(95));
        assert_eq!(src.basis, PseudoBasis::Extrapolated);
        // One miss per day is beyond ten times ten minutes: the run's max,
        // and why it was not extrapolated.
        let day = pseudo_sources(&r, None, Nanos::from_secs(86_400)).unwrap();
        assert_eq!(day[0].basis, PseudoBasis::RunMax);
        assert_eq!(day[0].latency, max);
        let why = day[0].no_extrapolation.as_deref().unwrap();
        assert!(why.contains("more CPU-minutes"), "{why}");
    }

    #[test]
    fn the_report_gives_each_task_the_run_max_of_a_short_run() {
        let r = run_with("fifo", 95);
        let tasks = vec![
            Task::new("fast", Nanos::from_millis(1), Nanos::from_micros(200)).with_priority(90),
            Task::new("slow", Nanos::from_millis(10), Nanos::from_millis(9)).with_priority(80),
        ];
        let rep = sched_report(&r, tasks, None, "1/hour", Nanos::from_secs(3600)).unwrap();
        assert_eq!(rep.run_id, 9);
        assert_eq!(rep.pseudo_worst_case.len(), 1);
        let s = &rep.pseudo_worst_case[0];
        // 3 s is shorter than an hour: the figure is the run's max.
        assert_eq!(s.basis, PseudoBasis::RunMax);
        assert_eq!((s.cpu, s.samples, s.corrected), (Some(1), 3000, false));
        for t in &rep.tasks {
            assert_eq!(t.jitter, s.latency);
            assert_eq!(t.blocking, s.latency);
            // Every measured level (95) is above both tasks.
            assert!(t.latency_source.optimistic);
        }
        // slow: 9 ms + J + B + one 200 µs job of fast per ms… misses.
        assert!(!rep.schedulable);
        assert!(!rep.tasks[1].schedulable);
        assert_ne!(rep.tasks[1].response, ResponseKind::Exact);
        assert_eq!(
            sched_report(&r, Vec::new(), Some(4), "1/hour", Nanos::from_secs(1)),
            Err(SchedReportError::NoSuchCell {
                run: RunId(9),
                cells: 1,
                cell: 4
            })
        );
        let e = sched_report(
            &run_with("fifo", 1),
            Vec::new(),
            Some(0),
            "1/h",
            Nanos::from_secs(1),
        );
        assert!(matches!(e, Err(SchedReportError::Tasks(_))), "{e:?}");
    }
}
