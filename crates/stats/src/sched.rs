//! Fixed-priority schedulability: response-time analysis, the Liu & Layland
//! and hyperbolic utilization bounds, and the pseudo worst case latency that
//! links a measured run to the analysis.
//!
//! # Model
//!
//! Periodic (or sporadic) tasks on one CPU under preemptive fixed-priority
//! scheduling (`SCHED_FIFO` with one priority per task). Task *i* has a
//! period (minimum inter-arrival time) `T`, a worst-case execution time `C`,
//! a relative deadline `D ≤ T` (constrained deadlines; `D = T` by default),
//! a release jitter `J` (how late after its nominal release a job can become
//! ready to run) and a blocking term `B` (the longest the CPU can be held by
//! something of lower priority, once per job). All times are integer
//! nanoseconds.
//!
//! # Priorities
//!
//! Either every task has a priority, where a higher number is a higher
//! priority (as with `SCHED_FIFO`), or none has, and the set is ordered
//! rate-monotonically: shorter period first, then shorter deadline, then the
//! order given. Tasks sharing an explicit priority are each counted as
//! interfering with the other (FIFO order within a level is not known in
//! advance, so this is the safe reading).
//!
//! # Response-time analysis
//!
//! For task *i* with the set `hp(i)` of tasks of higher (or, for explicit
//! ties, equal) priority, the level-*i* busy window is the least fixed point
//! of
//!
//! ```text
//! w = C_i + B_i + Σ_{j ∈ hp(i)} ceil((w + J_j) / T_j) · C_j
//! ```
//!
//! found by iterating from `w = C_i + B_i`, and the worst-case response time,
//! measured from the nominal release, is `R_i = J_i + w` (Audsley, Burns,
//! Richardson, Tindell & Wellings' formulation with release jitter). The task
//! meets its deadline when `R_i ≤ D_i`; its slack is `D_i − R_i`.
//!
//! This analysis holds while `R_i ≤ T_i` (no job of the task is still running
//! when its next one arrives). The iteration therefore stops as soon as
//! `J_i + w` exceeds the period: the task is then unschedulable and the value
//! reached is reported as a lower bound of its response time
//! ([`Response::AbovePeriod`]). This also ends the iteration when the higher
//! priority tasks alone use the whole CPU, where `w` grows without bound.
//!
//! # Utilization bounds
//!
//! `U = Σ C_i / T_i`. Liu & Layland's bound `U ≤ n(2^{1/n} − 1)` and the
//! hyperbolic bound `Π (U_i + 1) ≤ 2` (Bini, Buttazzo & Buttazzo) are
//! sufficient, not necessary, tests for rate-monotonic priorities with
//! `D = T` and no jitter or blocking. They are reported for reference (and
//! [`Analysis::bounds_apply`] says whether their assumptions hold); the
//! verdict comes from the response-time analysis, which is exact for the
//! model above.

use latscope_model::Nanos;

use crate::Histogram;

pub mod report;
pub mod taskfile;

pub use report::{
    sched_report, LatencySource, PseudoSource, ResponseKind, SchedReport, SchedReportError,
    TaskReport,
};

/// Iterations of the fixed-point search for one task before giving up.
/// Each iteration that does not converge adds at least one job of a higher
/// priority task, so this is only reached by sets with millions of
/// higher-priority releases in one period (e.g. a 1 µs task under a 1 s one).
pub const MAX_ITERATIONS: u32 = 1_000_000;

/// One periodic task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub name: String,
    /// `T`: period, or minimum time between releases.
    pub period: Nanos,
    /// `C`: worst-case execution time.
    pub wcet: Nanos,
    /// `D`: relative deadline, at most the period.
    pub deadline: Nanos,
    /// Higher number, higher priority; `None` for rate-monotonic order
    /// (all or none of a set's tasks have one).
    pub priority: Option<u32>,
    /// `J`: release jitter, from the nominal release to ready.
    pub jitter: Nanos,
    /// `B`: blocking by lower-priority activity, once per job.
    pub blocking: Nanos,
}

impl Task {
    /// A task with `D = T`, no explicit priority, no jitter and no blocking.
    pub fn new(name: &str, period: Nanos, wcet: Nanos) -> Task {
        Task {
            name: name.to_string(),
            period,
            wcet,
            deadline: period,
            priority: None,
            jitter: Nanos::ZERO,
            blocking: Nanos::ZERO,
        }
    }
    pub fn with_deadline(mut self, deadline: Nanos) -> Task {
        self.deadline = deadline;
        self
    }
    pub fn with_priority(mut self, priority: u32) -> Task {
        self.priority = Some(priority);
        self
    }
    pub fn with_jitter(mut self, jitter: Nanos) -> Task {
        self.jitter = jitter;
        self
    }
    pub fn with_blocking(mut self, blocking: Nanos) -> Task {
        self.blocking = blocking;
        self
    }
    /// `C / T`.
    pub fn utilization(&self) -> f64 {
        self.wcet.0 as f64 / self.period.0 as f64
    }
}

/// Where a task set's priority order comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityOrder {
    /// Every task gave a priority (higher number, higher priority).
    Explicit,
    /// No task gave one: shorter period first (then shorter deadline, then
    /// the order given).
    RateMonotonic,
}

impl PriorityOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            PriorityOrder::Explicit => "explicit",
            PriorityOrder::RateMonotonic => "rate-monotonic",
        }
    }
}

/// A task set that cannot be analyzed as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedError {
    #[error("the task set is empty")]
    Empty,
    #[error("task '{task}': {field} must be greater than 0")]
    Zero { task: String, field: &'static str },
    #[error(
        "task '{task}': deadline {deadline} is longer than its period {period} \
         (only deadlines up to the period are analyzed)"
    )]
    DeadlineAfterPeriod {
        task: String,
        deadline: Nanos,
        period: Nanos,
    },
    #[error("two tasks are named '{0}'")]
    DuplicateName(String),
    #[error("a task needs a name")]
    EmptyName,
    #[error(
        "task '{without}' has no priority but '{with}' has one: give every task a \
         priority, or none for rate-monotonic order"
    )]
    MixedPriorities { with: String, without: String },
    #[error("task '{0}': the response-time iteration did not settle in {MAX_ITERATIONS} steps")]
    NoConvergence(String),
}

/// A validated task set with its priority order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSet {
    tasks: Vec<Task>,
    order: PriorityOrder,
    /// Per task, a level where larger is higher priority.
    levels: Vec<u64>,
}

impl TaskSet {
    /// Checks the tasks: at least one; unique, non-empty names; periods,
    /// execution times and deadlines above zero; deadlines no longer than
    /// periods; priorities on all tasks or on none. `C > D` is allowed: such
    /// a task is simply unschedulable.
    pub fn new(tasks: Vec<Task>) -> Result<TaskSet, SchedError> {
        if tasks.is_empty() {
            return Err(SchedError::Empty);
        }
        for (i, t) in tasks.iter().enumerate() {
            if t.name.trim().is_empty() {
                return Err(SchedError::EmptyName);
            }
            if tasks[..i].iter().any(|o| o.name == t.name) {
                return Err(SchedError::DuplicateName(t.name.clone()));
            }
            for (field, v) in [
                ("period", t.period),
                ("wcet", t.wcet),
                ("deadline", t.deadline),
            ] {
                if v == Nanos::ZERO {
                    return Err(SchedError::Zero {
                        task: t.name.clone(),
                        field,
                    });
                }
            }
            if t.deadline > t.period {
                return Err(SchedError::DeadlineAfterPeriod {
                    task: t.name.clone(),
                    deadline: t.deadline,
                    period: t.period,
                });
            }
        }
        let with = tasks.iter().find(|t| t.priority.is_some());
        let without = tasks.iter().find(|t| t.priority.is_none());
        let (order, levels) = match (with, without) {
            (Some(w), Some(wo)) => {
                return Err(SchedError::MixedPriorities {
                    with: w.name.clone(),
                    without: wo.name.clone(),
                })
            }
            (Some(_), None) => (
                PriorityOrder::Explicit,
                tasks
                    .iter()
                    .map(|t| u64::from(t.priority.unwrap_or(0)))
                    .collect(),
            ),
            (None, _) => {
                let mut idx: Vec<usize> = (0..tasks.len()).collect();
                idx.sort_by_key(|&i| (tasks[i].period, tasks[i].deadline, i));
                let mut levels = vec![0u64; tasks.len()];
                let n = tasks.len() as u64;
                for (pos, &i) in idx.iter().enumerate() {
                    levels[i] = n - pos as u64;
                }
                (PriorityOrder::RateMonotonic, levels)
            }
        };
        Ok(TaskSet {
            tasks,
            order,
            levels,
        })
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    pub fn order(&self) -> PriorityOrder {
        self.order
    }

    /// Task `i`'s rank: 1 for the highest priority; tasks sharing a priority
    /// share a rank.
    pub fn rank(&self, i: usize) -> usize {
        let mine = self.levels[i];
        1 + self
            .levels
            .iter()
            .filter(|&&l| l > mine)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }

    /// The tasks that can preempt or delay task `i`: every other task of
    /// higher or equal priority.
    pub fn interferers(&self, i: usize) -> Vec<&Task> {
        let mine = self.levels[i];
        self.tasks
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i && self.levels[j] >= mine)
            .map(|(_, t)| t)
            .collect()
    }

    /// `Σ C_i / T_i`.
    pub fn utilization(&self) -> f64 {
        self.tasks.iter().map(Task::utilization).sum()
    }

    /// Response-time analysis of every task, and the utilization bounds.
    pub fn analyze(&self) -> Result<Analysis, SchedError> {
        let mut results = Vec::with_capacity(self.tasks.len());
        for (i, task) in self.tasks.iter().enumerate() {
            let response = response_time(task, &self.interferers(i))?;
            let slack_ns = match response {
                Response::Bounded(r) => Some(signed_diff(task.deadline, r)),
                Response::AbovePeriod(_) | Response::Unbounded => None,
            };
            results.push(TaskResult {
                name: task.name.clone(),
                rank: self.rank(i),
                response,
                slack_ns,
                schedulable: matches!(response, Response::Bounded(r) if r <= task.deadline),
            });
        }
        let n = self.tasks.len();
        let utilization = self.utilization();
        let ll_bound = liu_layland_bound(n);
        let hyperbolic_product = hyperbolic_product(&self.tasks);
        let rate_monotonic = self.is_rate_monotonic();
        let bounds_apply = rate_monotonic
            && self.tasks.iter().all(|t| {
                t.deadline == t.period && t.jitter == Nanos::ZERO && t.blocking == Nanos::ZERO
            });
        Ok(Analysis {
            order: self.order,
            schedulable: results.iter().all(|r| r.schedulable),
            tasks: results,
            utilization,
            ll_bound,
            // A tolerance for the rounding of the sum and of the root: a set
            // built to sit exactly on the bound must not fail by 1e-16.
            ll_pass: utilization <= ll_bound + 1e-12,
            hyperbolic_product,
            hyperbolic_pass: hyperbolic_product <= 2.0 + 1e-12,
            bounds_apply,
        })
    }

    /// Whether every shorter-period task has at least the priority of every
    /// longer-period one (always true for [`PriorityOrder::RateMonotonic`]).
    fn is_rate_monotonic(&self) -> bool {
        self.tasks.iter().enumerate().all(|(i, a)| {
            self.tasks
                .iter()
                .enumerate()
                .all(|(j, b)| a.period >= b.period || self.levels[i] >= self.levels[j])
        })
    }
}

/// `a − b` in signed nanoseconds, clamped to `i64`.
fn signed_diff(a: Nanos, b: Nanos) -> i64 {
    let d = i128::from(a.0) - i128::from(b.0);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

/// A task's worst-case response time, from its nominal release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// The least fixed point: the exact worst case under the model.
    Bounded(Nanos),
    /// The iteration passed the task's period at this value; the worst case
    /// is at least this (and may be unbounded). Always a deadline miss.
    AbovePeriod(Nanos),
    /// The higher-priority tasks alone need the whole CPU: the task may
    /// never run. Always a deadline miss.
    Unbounded,
}

impl Response {
    /// The response time, or the lower bound reached (`None` when unbounded).
    pub fn value(self) -> Option<Nanos> {
        match self {
            Response::Bounded(r) | Response::AbovePeriod(r) => Some(r),
            Response::Unbounded => None,
        }
    }
}

/// One task's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskResult {
    pub name: String,
    /// 1 for the highest priority.
    pub rank: usize,
    pub response: Response,
    /// `D − R`, negative when the deadline is missed; `None` when the
    /// response is only known to exceed the period, or is unbounded.
    pub slack_ns: Option<i64>,
    /// `R ≤ D`.
    pub schedulable: bool,
}

/// The analysis of a whole task set. Tasks are in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub order: PriorityOrder,
    pub tasks: Vec<TaskResult>,
    /// Every task meets its deadline (response-time analysis).
    pub schedulable: bool,
    /// `Σ C_i / T_i`.
    pub utilization: f64,
    /// `n(2^{1/n} − 1)`.
    pub ll_bound: f64,
    pub ll_pass: bool,
    /// `Π (C_i / T_i + 1)`.
    pub hyperbolic_product: f64,
    /// `Π (U_i + 1) ≤ 2`.
    pub hyperbolic_pass: bool,
    /// The bounds' assumptions hold: rate-monotonic priorities, `D = T`, no
    /// jitter and no blocking. When they do not, a pass of a bound proves
    /// nothing.
    pub bounds_apply: bool,
}

/// Liu & Layland's least upper bound of the utilization of `n` tasks
/// under rate-monotonic priorities: `n(2^{1/n} − 1)` (1 for one task, about
/// 0.828 for two, tending to ln 2 ≈ 0.693).
pub fn liu_layland_bound(n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let n = n as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

/// `Π (C_i / T_i + 1)`: at most 2 is sufficient for rate-monotonic
/// schedulability (the hyperbolic bound).
pub fn hyperbolic_product(tasks: &[Task]) -> f64 {
    tasks.iter().map(|t| t.utilization() + 1.0).product()
}

/// The worst-case response time of `task` preempted by `interferers` (see
/// the module documentation).
///
/// When the interferers' utilization `U_hp` reaches 1 (to double
/// precision) the busy window has no end: [`Response::Unbounded`].
/// Otherwise the iteration starts from the largest of `C + B` and
/// `⌊(C + B + Σ J_j·U_j) / (1 − U_hp)⌋`, the fixed point of the same
/// equation without the ceilings, which is no larger than the least fixed
/// point (checked in integers before it is used): the result is the same as
/// from `C + B`, without thousands of small steps when a short-period task
/// interferes with a long one.
pub fn response_time(task: &Task, interferers: &[&Task]) -> Result<Response, SchedError> {
    let c = u128::from(task.wcet.0);
    let b = u128::from(task.blocking.0);
    let j = u128::from(task.jitter.0);
    let limit = u128::from(task.period.0);
    let u_hp: f64 = interferers.iter().map(|t| t.utilization()).sum();
    if u_hp >= 1.0 {
        return Ok(Response::Unbounded);
    }
    let demand = |w: u128| -> u128 {
        let mut next = c + b;
        for hp in interferers {
            let period = u128::from(hp.period.0.max(1));
            let releases = (w + u128::from(hp.jitter.0)).div_ceil(period);
            next = next.saturating_add(releases.saturating_mul(u128::from(hp.wcet.0)));
        }
        next
    };
    let mut w = linear_lower_bound(c + b, interferers, u_hp).unwrap_or(c + b);
    for _ in 0..MAX_ITERATIONS {
        let r = j + w;
        if r > limit {
            return Ok(Response::AbovePeriod(to_nanos(r)));
        }
        let next = demand(w);
        if next == w {
            return Ok(Response::Bounded(to_nanos(r)));
        }
        w = next;
    }
    Err(SchedError::NoConvergence(task.name.clone()))
}

/// A starting point `x > base` for the fixed-point search with
/// `x ≤ base + Σ (x + J_j)·C_j / T_j`, which makes `x` no larger than the
/// least fixed point of the response-time equation; `None` when there is
/// none better than `base` or the check would overflow.
fn linear_lower_bound(base: u128, interferers: &[&Task], u_hp: f64) -> Option<u128> {
    let jitter_load: f64 = interferers
        .iter()
        .map(|t| t.jitter.0 as f64 * t.utilization())
        .sum();
    // Shrunk a little so that float rounding errs low; the integer check
    // below is what makes it safe.
    let estimate = (base as f64 + jitter_load) / (1.0 - u_hp) * (1.0 - 1e-9);
    if !estimate.is_finite() || estimate >= 1e30 {
        return None;
    }
    let x = estimate.floor() as u128;
    if x <= base {
        return None;
    }
    let mut bound = base;
    for t in interferers {
        let work = (x + u128::from(t.jitter.0)).checked_mul(u128::from(t.wcet.0))?;
        bound = bound.checked_add(work / u128::from(t.period.0.max(1)))?;
    }
    (x <= bound).then_some(x)
}

fn to_nanos(v: u128) -> Nanos {
    Nanos(u64::try_from(v).unwrap_or(u64::MAX))
}

/// How a pseudo worst case was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PseudoBasis {
    /// The run lasted at least one miss interval: the figure is a latency the
    /// run actually saw exceeded no more often than allowed.
    Observed,
    /// The run was shorter than one miss interval, so no sample may exceed
    /// the figure and it is the run's maximum: a lower bound of the latency
    /// exceeded once per interval, which a longer run (or an extrapolation)
    /// may raise.
    RunMax,
    /// The run was shorter than one miss interval, and the forecasts'
    /// checked tail model (within ten times the run) gave the latency
    /// exceeded once per interval; never below the run's maximum.
    Extrapolated,
}

impl PseudoBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            PseudoBasis::Observed => "observed",
            PseudoBasis::RunMax => "bounded by the run's max",
            PseudoBasis::Extrapolated => "extrapolated",
        }
    }
}

/// The latency exceeded at most once per miss interval, from a histogram.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PseudoWorstCase {
    pub latency: Nanos,
    pub basis: PseudoBasis,
    /// Samples above `latency`.
    pub exceedances: u64,
    /// Exceedances the miss rate allows in the measured time
    /// (`measured / miss_interval`).
    pub allowed: f64,
    /// The samples' rate: `count / measured`, per second.
    pub wakeups_per_second: f64,
}

/// The pseudo worst case of a latency distribution for a permissible miss
/// rate of one per `miss_interval`: the latency exceeded on average at most
/// once per interval at the rate the samples were taken.
///
/// With `N` samples taken over `measured` (so `N / measured` wake-ups per
/// second), the fraction of wake-ups allowed to exceed the figure is
/// `(1 / miss_interval) / (N / measured)`, and the number of samples allowed
/// above it is `a = measured / miss_interval`. The result is the smallest
/// histogram bucket upper edge `x` (capped at the exact maximum) with
/// `count_above(x) ≤ a`, compared in integers as
/// `count_above(x) · miss_interval ≤ measured`. It carries the histogram's
/// 0.1 % bucket resolution, rounded up.
///
/// When `a < 1` (the run was shorter than one interval) no sample may exceed
/// `x`, so `x` is the run's maximum and the basis is
/// [`PseudoBasis::RunMax`]; otherwise it is [`PseudoBasis::Observed`]. When
/// `a ≥ N` (an interval shorter than the sampling period) every sample may
/// exceed it and the result is 0.
///
/// `None` for an empty histogram or a zero interval.
pub fn pseudo_worst_case(
    h: &Histogram,
    measured: Nanos,
    miss_interval: Nanos,
) -> Option<PseudoWorstCase> {
    let max = h.max()?;
    if miss_interval == Nanos::ZERO {
        return None;
    }
    let interval = u128::from(miss_interval.0);
    let budget = u128::from(measured.0);
    let allowed = |above: u64| u128::from(above) * interval <= budget;
    let buckets: Vec<(u64, u64, u64)> = h.buckets().collect();
    let mut above = 0u64;
    let mut latency = Nanos::ZERO;
    for &(_, high, count) in buckets.iter().rev() {
        if !allowed(above + count) {
            latency = Nanos(high.min(max.0));
            break;
        }
        above += count;
    }
    let basis = if measured >= miss_interval {
        PseudoBasis::Observed
    } else {
        PseudoBasis::RunMax
    };
    let wakeups_per_second = if measured == Nanos::ZERO {
        0.0
    } else {
        h.count() as f64 / measured.as_secs_f64()
    };
    Some(PseudoWorstCase {
        latency,
        basis,
        exceedances: above,
        allowed: measured.0 as f64 / miss_interval.0 as f64,
        wakeups_per_second,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, c: u64, p: u64) -> Task {
        Task::new(name, Nanos(p), Nanos(c))
    }

    fn responses(a: &Analysis) -> Vec<Response> {
        a.tasks.iter().map(|r| r.response).collect()
    }

    use Response::{AbovePeriod, Bounded, Unbounded};

    /// Buttazzo, Hard Real-Time Computing Systems, the response-time
    /// analysis example: (C, T) = (1, 4), (2, 6), (3, 10), D = T, RM.
    ///
    /// By hand (iterating w from C + B, no jitter, no blocking):
    /// - τ1: no interference, R1 = 1.
    /// - τ2: w = 2 → 2 + ⌈2/4⌉·1 = 3 → 2 + ⌈3/4⌉·1 = 3: R2 = 3.
    /// - τ3: w = 3 → 3 + ⌈3/4⌉·1 + ⌈3/6⌉·2 = 6
    ///   → 3 + ⌈6/4⌉·1 + ⌈6/6⌉·2 = 3 + 2 + 2 = 7
    ///   → 3 + ⌈7/4⌉·1 + ⌈7/6⌉·2 = 3 + 2 + 4 = 9
    ///   → 3 + ⌈9/4⌉·1 + ⌈9/6⌉·2 = 3 + 3 + 4 = 10
    ///   → 3 + ⌈10/4⌉·1 + ⌈10/6⌉·2 = 3 + 3 + 4 = 10: R3 = 10 = D3.
    ///
    /// U = 1/4 + 2/6 + 3/10 = 0.8833 > 3(2^{1/3} − 1) = 0.7798 and
    /// Π(U_i + 1) = 1.25 · 1.3333 · 1.3 = 2.1667 > 2: both bounds fail while
    /// RTA proves the set schedulable (with zero slack for τ3).
    #[test]
    fn buttazzo_rta_example_passes_rta_but_fails_both_bounds() {
        let set = TaskSet::new(vec![t("t1", 1, 4), t("t2", 2, 6), t("t3", 3, 10)]).unwrap();
        let a = set.analyze().unwrap();
        assert_eq!(
            responses(&a),
            vec![Bounded(Nanos(1)), Bounded(Nanos(3)), Bounded(Nanos(10))]
        );
        assert_eq!(
            a.tasks.iter().map(|r| r.slack_ns).collect::<Vec<_>>(),
            vec![Some(3), Some(3), Some(0)]
        );
        assert!(a.schedulable);
        assert!((a.utilization - 0.883_333).abs() < 1e-5);
        assert!((a.ll_bound - 0.779_763).abs() < 1e-5);
        assert!(!a.ll_pass);
        assert!((a.hyperbolic_product - 2.166_667).abs() < 1e-5);
        assert!(!a.hyperbolic_pass);
        assert!(a.bounds_apply);
        assert_eq!(a.order, PriorityOrder::RateMonotonic);
    }

    /// The same set given in reverse order: rate-monotonic order does not
    /// depend on the order in the file.
    #[test]
    fn rate_monotonic_order_follows_periods_not_file_order() {
        let set = TaskSet::new(vec![t("t3", 3, 10), t("t2", 2, 6), t("t1", 1, 4)]).unwrap();
        let a = set.analyze().unwrap();
        assert_eq!(
            responses(&a),
            vec![Bounded(Nanos(10)), Bounded(Nanos(3)), Bounded(Nanos(1))]
        );
        assert_eq!(
            a.tasks.iter().map(|r| r.rank).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
    }

    /// Liu & Layland (1973), §4: T1 = 2, T2 = 5, C1 = 1, C2 = 1, τ1 at the
    /// higher priority. "C2 can be increased at most to 2".
    ///
    /// By hand, τ2 with C2 = 2: w = 2 → 2 + ⌈2/2⌉·1 = 3 → 2 + ⌈3/2⌉·1 = 4
    /// → 2 + ⌈4/2⌉·1 = 4: R2 = 4 ≤ 5. With C2 = 3: w = 3 → 3 + 2 = 5
    /// → 3 + ⌈5/2⌉ = 6 > T2 = 5: unschedulable. With C2 = 1: w = 1 → 2
    /// → 1 + ⌈2/2⌉ = 2: R2 = 2.
    ///
    /// With the priorities reversed (τ2 higher): R1 = 1 + ⌈2/5⌉·1 = 2 ≤ 2,
    /// but any C2 > 1 makes τ1 miss: C2 = 2 gives R1 = 1 + 2 = 3 > 2.
    #[test]
    fn liu_layland_two_task_example() {
        let a = TaskSet::new(vec![t("t1", 1, 2), t("t2", 1, 5)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(responses(&a), vec![Bounded(Nanos(1)), Bounded(Nanos(2))]);

        let a = TaskSet::new(vec![t("t1", 1, 2), t("t2", 2, 5)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(responses(&a), vec![Bounded(Nanos(1)), Bounded(Nanos(4))]);
        assert!(a.schedulable);
        // U = 0.5 + 0.4 = 0.9 > 0.828: the bound cannot tell, RTA can.
        assert!(!a.ll_pass);

        let a = TaskSet::new(vec![t("t1", 1, 2), t("t2", 3, 5)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(a.tasks[1].response, AbovePeriod(Nanos(6)));
        assert_eq!(a.tasks[1].slack_ns, None);
        assert!(!a.schedulable);

        // Reversed priorities.
        let a = TaskSet::new(vec![
            t("t1", 1, 2).with_priority(1),
            t("t2", 1, 5).with_priority(2),
        ])
        .unwrap()
        .analyze()
        .unwrap();
        assert_eq!(responses(&a), vec![Bounded(Nanos(2)), Bounded(Nanos(1))]);
        assert!(a.schedulable);
        assert!(!a.bounds_apply, "not rate-monotonic");
        let a = TaskSet::new(vec![
            t("t1", 1, 2).with_priority(1),
            t("t2", 2, 5).with_priority(2),
        ])
        .unwrap()
        .analyze()
        .unwrap();
        assert_eq!(a.tasks[0].response, AbovePeriod(Nanos(3)));
        assert!(!a.tasks[0].schedulable);
        assert!(a.tasks[1].schedulable);
        assert!(!a.schedulable);
    }

    /// Liu & Layland's worst case for two tasks, which makes their bound
    /// tight: T2 = √2·T1, C1 = T2 − T1, C2 = T1 − C1 (then
    /// U = 2(√2 − 1) ≈ 0.8284). In integers: T1 = 1000, T2 = 1414,
    /// C1 = 414, C2 = 586; U = 0.414 + 586/1414 = 0.828427 ≈ the bound.
    ///
    /// By hand, τ2: w = 586 → 586 + ⌈586/1000⌉·414 = 1000
    /// → 586 + ⌈1000/1000⌉·414 = 1000: R2 = 1000 ≤ 1414. One more
    /// nanosecond of C2: w = 587 → 1001 → 587 + ⌈1001/1000⌉·414 = 1415
    /// > 1414: the set "fully utilizes" the CPU, as the bound says.
    #[test]
    fn liu_layland_bound_is_tight_for_two_tasks() {
        let a = TaskSet::new(vec![t("t1", 414, 1000), t("t2", 586, 1414)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(
            responses(&a),
            vec![Bounded(Nanos(414)), Bounded(Nanos(1000))]
        );
        assert!(a.schedulable);
        assert!((a.utilization - 2.0 * (2f64.sqrt() - 1.0)).abs() < 1e-5);
        assert!((a.ll_bound - 0.828_427).abs() < 1e-6);

        let a = TaskSet::new(vec![t("t1", 414, 1000), t("t2", 587, 1414)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(a.tasks[1].response, AbovePeriod(Nanos(1415)));
        assert!(!a.schedulable);
        assert!(!a.ll_pass);
    }

    /// A set well under the bound passes all three tests.
    #[test]
    fn a_light_set_passes_everything() {
        // U = 0.1 + 0.2 + 0.1 = 0.4 ≤ 0.7798; Π = 1.1·1.2·1.1 = 1.452.
        // R: 1; 2 + ⌈2/10⌉ = 3 → 3; 4 + ⌈4/10⌉ + ⌈4/10⌉·2 = 7
        // → 4 + 1 + 2 = 7.
        let a = TaskSet::new(vec![t("a", 1, 10), t("b", 2, 10), t("c", 4, 40)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(
            responses(&a),
            vec![Bounded(Nanos(1)), Bounded(Nanos(3)), Bounded(Nanos(7))]
        );
        assert!(a.schedulable && a.ll_pass && a.hyperbolic_pass);
    }

    /// Constrained deadlines with explicit (deadline-monotonic) priorities:
    /// (C, T, D) = (1, 4, 3), (1, 5, 4), (2, 6, 5), (1, 11, 10).
    ///
    /// By hand: R1 = 1; R2: 1 + ⌈1/4⌉ = 2 → 1 + ⌈2/4⌉ = 2;
    /// R3: 2 → 2 + 1 + 1 = 4 → 2 + ⌈4/4⌉ + ⌈4/5⌉ = 4;
    /// R4: 1 → 1 + 1 + 1 + 2 = 5 → 1 + 2 + 1 + 2 = 6 → 1 + 2 + 2 + 2 = 7
    /// → 1 + 2 + 2 + 4 = 9 → 1 + 3 + 2 + 4 = 10 → 1 + ⌈10/4⌉ + ⌈10/5⌉
    /// + ⌈10/6⌉·2 = 1 + 3 + 2 + 4 = 10: R4 = 10 = D4.
    #[test]
    fn constrained_deadlines() {
        let a = TaskSet::new(vec![
            t("t1", 1, 4).with_deadline(Nanos(3)).with_priority(4),
            t("t2", 1, 5).with_deadline(Nanos(4)).with_priority(3),
            t("t3", 2, 6).with_deadline(Nanos(5)).with_priority(2),
            t("t4", 1, 11).with_deadline(Nanos(10)).with_priority(1),
        ])
        .unwrap()
        .analyze()
        .unwrap();
        assert_eq!(
            responses(&a),
            vec![
                Bounded(Nanos(1)),
                Bounded(Nanos(2)),
                Bounded(Nanos(4)),
                Bounded(Nanos(10))
            ]
        );
        assert!(a.schedulable);
        assert!(!a.bounds_apply, "D < T");
    }

    /// A response between the deadline and the period is reported exactly,
    /// with negative slack.
    #[test]
    fn a_miss_before_the_period_has_negative_slack() {
        // τ2: w = 2 → 2 + ⌈2/4⌉·1 = 3 → 3: R2 = 3 > D2 = 2, ≤ T2 = 6.
        let a = TaskSet::new(vec![t("t1", 1, 4), t("t2", 2, 6).with_deadline(Nanos(2))])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(a.tasks[1].response, Bounded(Nanos(3)));
        assert_eq!(a.tasks[1].slack_ns, Some(-1));
        assert!(!a.tasks[1].schedulable);
        assert!(!a.schedulable);
    }

    /// Release jitter and blocking, by hand: (C, T) = (1, 4), (2, 6), (3, 10)
    /// as in Buttazzo's example, with J = 1 and B = 1 on every task.
    ///
    /// - τ1: w = 1 + 1 = 2 (no interferers): R1 = J + w = 3 ≤ 4.
    /// - τ2: w = 2 + 1 = 3 → 3 + ⌈(3 + 1)/4⌉·1 = 4 → 3 + ⌈5/4⌉ = 5
    ///   → 3 + ⌈6/4⌉ = 5: R2 = 1 + 5 = 6 ≤ 6.
    /// - τ3: w = 4 → 4 + ⌈5/4⌉·1 + ⌈5/6⌉·2 = 8 → 4 + ⌈9/4⌉ + ⌈9/6⌉·2 = 11:
    ///   R = 12 > T3 = 10: a miss, the response at least 12.
    #[test]
    fn jitter_and_blocking() {
        let j = Nanos(1);
        let set = TaskSet::new(
            [t("t1", 1, 4), t("t2", 2, 6), t("t3", 3, 10)]
                .into_iter()
                .map(|t| t.with_jitter(j).with_blocking(j))
                .collect(),
        )
        .unwrap();
        let a = set.analyze().unwrap();
        assert_eq!(
            responses(&a),
            vec![Bounded(Nanos(3)), Bounded(Nanos(6)), AbovePeriod(Nanos(12))]
        );
        assert!(!a.schedulable);
        assert!(!a.bounds_apply, "jitter and blocking");
    }

    /// Tasks sharing a priority delay each other both ways.
    #[test]
    fn equal_priorities_interfere_both_ways() {
        let a = TaskSet::new(vec![
            t("a", 2, 10).with_priority(5),
            t("b", 3, 10).with_priority(5),
        ])
        .unwrap()
        .analyze()
        .unwrap();
        assert_eq!(responses(&a), vec![Bounded(Nanos(5)), Bounded(Nanos(5))]);
        assert_eq!(a.tasks[0].rank, 1);
        assert_eq!(a.tasks[1].rank, 1);
    }

    /// Overload ends the iteration, it does not loop: U > 1, and the higher
    /// priority task alone at 100 %.
    #[test]
    fn overload_is_unschedulable_not_a_hang() {
        let a = TaskSet::new(vec![t("a", 3, 4), t("b", 3, 6)])
            .unwrap()
            .analyze()
            .unwrap();
        assert!(a.utilization > 1.0);
        assert!(!a.schedulable);
        assert!(matches!(a.tasks[1].response, AbovePeriod(r) if r > Nanos(6)));

        let a = TaskSet::new(vec![t("full", 5, 5), t("starved", 1, 1_000_000_000)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(a.tasks[0].response, Bounded(Nanos(5)));
        assert_eq!(a.tasks[1].response, Unbounded);
        assert_eq!(a.tasks[1].slack_ns, None);

        // Just below full: a 1 ms task using 99.9999 % of the CPU over a
        // 2000 s one of 1 ms. By hand: w = 10^6 + 999 999·⌈w/10^6⌉; with
        // k = ⌈w/10^6⌉ that needs 10^6 + 999 999k ≤ 10^6·k, so k ≥ 10^6 and
        // w = 10^6 + 999 999·10^6 = 10^12 (1000 s), where ⌈w/10^6⌉ = 10^6
        // holds. Iterating from C alone would add about 1 ms a step and need
        // about 10^6 steps; the linear starting point makes it a few.
        let a = TaskSet::new(vec![
            t("fast", 999_999, 1_000_000),
            t("slow", 1_000_000, 2_000_000_000_000),
        ])
        .unwrap()
        .analyze()
        .unwrap();
        assert_eq!(a.tasks[1].response, Bounded(Nanos(1_000_000_000_000)));

        // C > D.
        let a = TaskSet::new(vec![t("long", 7, 5)])
            .unwrap()
            .analyze()
            .unwrap();
        assert_eq!(a.tasks[0].response, AbovePeriod(Nanos(7)));
    }

    /// Nanosecond-scale sets with large numbers do not overflow.
    #[test]
    fn large_values_do_not_overflow() {
        let big = u64::MAX / 2;
        let a = TaskSet::new(vec![
            Task::new("a", Nanos(big), Nanos(big / 2)),
            Task::new("b", Nanos(u64::MAX), Nanos(big)).with_jitter(Nanos(u64::MAX)),
        ])
        .unwrap()
        .analyze()
        .unwrap();
        assert!(matches!(a.tasks[1].response, AbovePeriod(_)));
    }

    /// The plain iteration from `C + B`, for comparison.
    fn plain_response(task: &Task, hp: &[&Task]) -> Response {
        let base = task.wcet.0 + task.blocking.0;
        let mut w = base;
        loop {
            let r = task.jitter.0 + w;
            if r > task.period.0 {
                return AbovePeriod(Nanos(r));
            }
            let next = base
                + hp.iter()
                    .map(|t| (w + t.jitter.0).div_ceil(t.period.0) * t.wcet.0)
                    .sum::<u64>();
            if next == w {
                return Bounded(Nanos(r));
            }
            w = next;
        }
    }

    proptest::proptest! {
        /// The accelerated search finds the same least fixed point as the
        /// plain iteration, and the same verdict.
        #[test]
        fn accelerated_search_matches_plain_iteration(
            specs in proptest::collection::vec((1u64..50, 1u64..200, 0u64..20, 0u64..20), 1..6)
        ) {
            let tasks: Vec<Task> = specs
                .iter()
                .enumerate()
                .map(|(i, &(c, p, j, b))| {
                    Task::new(&format!("t{i}"), Nanos(p), Nanos(c))
                        .with_jitter(Nanos(j))
                        .with_blocking(Nanos(b))
                })
                .collect();
            let set = TaskSet::new(tasks).unwrap();
            for i in 0..set.tasks().len() {
                let hp = set.interferers(i);
                let got = response_time(&set.tasks()[i], &hp).unwrap();
                if hp.iter().map(|t| t.utilization()).sum::<f64>() >= 1.0 {
                    proptest::prop_assert_eq!(got, Unbounded);
                    continue;
                }
                match (got, plain_response(&set.tasks()[i], &hp)) {
                    (Bounded(a), Bounded(b)) => proptest::prop_assert_eq!(a, b),
                    (AbovePeriod(_), AbovePeriod(_)) => {}
                    (a, b) => proptest::prop_assert!(false, "{:?} vs {:?}", a, b),
                }
            }
        }
    }

    #[test]
    fn invalid_sets_are_refused() {
        assert_eq!(TaskSet::new(vec![]), Err(SchedError::Empty));
        assert!(matches!(
            TaskSet::new(vec![t("a", 1, 0)]),
            Err(SchedError::Zero {
                field: "period",
                ..
            })
        ));
        assert!(matches!(
            TaskSet::new(vec![t("a", 0, 5)]),
            Err(SchedError::Zero { field: "wcet", .. })
        ));
        assert!(matches!(
            TaskSet::new(vec![t("a", 1, 5).with_deadline(Nanos(6))]),
            Err(SchedError::DeadlineAfterPeriod { .. })
        ));
        assert_eq!(
            TaskSet::new(vec![t("a", 1, 5), t("a", 1, 6)]),
            Err(SchedError::DuplicateName("a".into()))
        );
        let e = TaskSet::new(vec![t("a", 1, 5).with_priority(3), t("b", 1, 6)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "task 'b' has no priority but 'a' has one: give every task a priority, \
             or none for rate-monotonic order"
        );
        assert_eq!(TaskSet::new(vec![t(" ", 1, 5)]), Err(SchedError::EmptyName));
    }

    #[test]
    fn liu_layland_bound_values() {
        assert!((liu_layland_bound(1) - 1.0).abs() < 1e-12);
        assert!((liu_layland_bound(2) - 0.828_427_1).abs() < 1e-6);
        assert!((liu_layland_bound(3) - 0.779_763_2).abs() < 1e-6);
        assert!((liu_layland_bound(1000) - std::f64::consts::LN_2).abs() < 1e-3);
    }

    fn histogram(values: &[(u64, u64)]) -> Histogram {
        let mut h = Histogram::new();
        for &(v, n) in values {
            h.record_n(v, n);
        }
        h
    }

    /// 1000 wake-ups per second for 2 hours, four of them above 500 µs:
    /// two at 950 µs, one at 600 µs, one at 501 µs. Once per hour allows
    /// 2 h / 1 h = 2 exceedances: walking down from the top, the 950 µs
    /// bucket (2 samples) fits, the 600 µs one would make 3, so the figure
    /// is the top of the 600 µs bucket, with the two 950 µs samples above.
    #[test]
    fn pseudo_worst_case_observed() {
        let n = 7_200_000u64;
        let h = histogram(&[(20_000, n - 4), (501_000, 1), (600_000, 1), (950_000, 2)]);
        let two_hours = Nanos::from_secs(7_200);
        let p = pseudo_worst_case(&h, two_hours, Nanos::from_secs(3_600)).unwrap();
        assert_eq!(p.exceedances, 2);
        assert!(p.latency >= Nanos(600_000) && p.latency <= Nanos(600_600));
        assert_eq!(h.count_above(p.latency.0), 2);
        assert_eq!(p.basis, PseudoBasis::Observed);
        assert!((p.allowed - 2.0).abs() < 1e-12);
        assert!((p.wakeups_per_second - 1000.0).abs() < 1e-9);

        // Once per 10 minutes allows 12: everything above 20 µs may exceed.
        let p = pseudo_worst_case(&h, two_hours, Nanos::from_secs(600)).unwrap();
        assert_eq!(p.exceedances, 4);
        assert!(p.latency >= Nanos(20_000) && p.latency <= Nanos(20_020));
    }

    /// A run shorter than the interval: the max, labelled as such.
    #[test]
    fn pseudo_worst_case_bounded_by_run_max() {
        let h = histogram(&[(20_000, 29_990), (300_000, 9), (812_345, 1)]);
        let p = pseudo_worst_case(&h, Nanos::from_secs(30), Nanos::from_secs(3_600)).unwrap();
        assert_eq!(p.latency, Nanos(812_345), "capped at the exact max");
        assert_eq!(p.basis, PseudoBasis::RunMax);
        assert_eq!(p.exceedances, 0);
    }

    #[test]
    fn pseudo_worst_case_edge_cases() {
        assert_eq!(
            pseudo_worst_case(&Histogram::new(), Nanos::from_secs(1), Nanos::from_secs(1)),
            None
        );
        let h = histogram(&[(1_000, 10)]);
        assert_eq!(
            pseudo_worst_case(&h, Nanos::from_secs(1), Nanos::ZERO),
            None
        );
        // An interval shorter than the sampling period: all may exceed.
        let p = pseudo_worst_case(&h, Nanos::from_secs(1), Nanos(1)).unwrap();
        assert_eq!(p.latency, Nanos::ZERO);
        assert_eq!(p.exceedances, 10);
        // Exactly one interval measured: one exceedance allowed, observed.
        let h = histogram(&[(1_000, 10), (5_000, 1)]);
        let p = pseudo_worst_case(&h, Nanos::from_secs(60), Nanos::from_secs(60)).unwrap();
        assert_eq!(p.latency, Nanos(1_000));
        assert_eq!(p.basis, PseudoBasis::Observed);
    }
}
