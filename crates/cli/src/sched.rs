//! `latscope sched`: fixed-priority response-time analysis of a task set
//! read from TOML, with a stored run's measured pseudo worst case latency as
//! every task's release jitter and blocking term. Exits 0 when every task
//! meets its deadline, 3 when one does not.
//!
//! The pseudo worst case comes from the run's `timer.latency` histograms
//! (per deadline, i.e. coordinated-omission corrected, where the run had
//! overruns): per CPU, the latency exceeded at most once per miss interval at
//! the rate that CPU woke up ([`latscope_stats::sched::pseudo_worst_case`]);
//! the largest over the CPUs and cells measured at the priority that matches
//! the task is its `J` and its `B`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use latscope_model::{metric, Nanos};
use latscope_report::Table;
use latscope_stats::sched::{
    pseudo_worst_case, Analysis, PriorityOrder, PseudoBasis, PseudoWorstCase, Response, Task,
    TaskSet,
};
use latscope_stats::RunResult;
use latscope_store::Store;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::json;

use crate::args::SchedArgs;
use crate::exit::{self, Exit};

/// Exit code when a task can miss its deadline.
const UNSCHEDULABLE: i32 = 3;

pub fn sched(args: &SchedArgs) -> Result<i32, Exit> {
    let miss_interval = parse_miss_rate(&args.miss_rate).map_err(Exit::usage)?;
    let cell = args
        .cell
        .as_deref()
        .map(|c| {
            c.trim()
                .parse::<u32>()
                .map_err(|_| Exit::usage(format!("invalid --cell '{c}': expected a cell index")))
        })
        .transpose()?;
    let file = args.tasks.display().to_string();
    let tasks = read_tasks(&args.tasks)?;
    // Refuse a bad task set before touching the store.
    TaskSet::new(tasks.clone()).map_err(|e| Exit::usage(format!("{file}: {e}")))?;

    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    let sources = measurements(&run, cell, miss_interval)?;

    let mut assigned = Vec::with_capacity(tasks.len());
    let mut jittered = Vec::with_capacity(tasks.len());
    for task in tasks {
        let a = assign(&sources, task.priority);
        jittered.push(task.with_jitter(a.latency).with_blocking(a.latency));
        assigned.push(a);
    }
    let set = TaskSet::new(jittered).map_err(|e| Exit::usage(format!("{file}: {e}")))?;
    let analysis = set.analyze().map_err(|e| anyhow::anyhow!("{file}: {e}"))?;

    if args.json {
        let doc = json_doc(
            &set,
            &analysis,
            &assigned,
            &sources,
            id.0,
            &args.miss_rate,
            miss_interval,
        );
        let text = serde_json::to_string_pretty(&doc).map_err(anyhow::Error::from)?;
        println!("{text}");
    } else {
        print!(
            "{}",
            text(
                &file,
                &set,
                &analysis,
                &assigned,
                &sources,
                id.0,
                &args.miss_rate,
                miss_interval
            )
        );
    }
    Ok(if analysis.schedulable {
        exit::OK
    } else {
        UNSCHEDULABLE
    })
}

/// `N/PERIOD` → the interval between permitted misses: `1/hour` is one
/// hour, `2/hour` half an hour, `1/10min` ten minutes. PERIOD is a word
/// (`second`, `minute`, `hour`, `day`, `week`, or `s`, `min`, `h`, `d`, `w`)
/// or a duration (`10min`, `30s`, `2h`).
pub fn parse_miss_rate(text: &str) -> Result<Nanos, String> {
    let bad = || {
        format!(
            "invalid --miss-rate '{text}': write it as N/PERIOD with N > 0, \
             e.g. 1/hour, 1/10min, 1/day"
        )
    };
    let (count, period) = text.trim().split_once('/').ok_or_else(bad)?;
    let count: u64 = count.trim().parse().map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    let period = period.trim();
    let unit = match period {
        "second" | "sec" | "s" => Some(Nanos::from_secs(1)),
        "minute" | "min" | "m" => Some(Nanos::from_secs(60)),
        "hour" | "h" => Some(Nanos::from_secs(3_600)),
        "day" | "d" => Some(Nanos::from_secs(86_400)),
        "week" | "w" => Some(Nanos::from_secs(7 * 86_400)),
        _ => None,
    };
    let period = match unit {
        Some(u) => u,
        None => Nanos::parse_duration(period).map_err(|_| bad())?,
    };
    let interval = Nanos(period.0 / count);
    if interval == Nanos::ZERO {
        return Err(bad());
    }
    Ok(interval)
}

/// An interval for reading: `1h`, `10min`, `1d`, `1w`, `1.5h`, `250ms`.
fn interval_text(n: Nanos) -> String {
    const UNITS: [(u64, &str); 5] = [
        (7 * 86_400, "w"),
        (86_400, "d"),
        (3_600, "h"),
        (60, "min"),
        (1, "s"),
    ];
    for (secs, name) in UNITS {
        let unit = secs * 1_000_000_000;
        if n.0 >= unit {
            return if n.0.checked_rem(unit) == Some(0) {
                format!("{}{name}", n.0 / unit)
            } else {
                let v = format!("{:.2}", n.0 as f64 / unit as f64);
                format!("{}{name}", v.trim_end_matches('0').trim_end_matches('.'))
            };
        }
    }
    n.to_string()
}

// ---------------------------------------------------------------- the file

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    #[serde(default)]
    task: Vec<TaskEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskEntry {
    name: String,
    #[serde(deserialize_with = "duration")]
    period: Nanos,
    #[serde(deserialize_with = "duration")]
    wcet: Nanos,
    #[serde(default, deserialize_with = "optional_duration")]
    deadline: Option<Nanos>,
    #[serde(default, deserialize_with = "priority")]
    priority: Option<u32>,
}

struct PriorityVisitor;

impl Visitor<'_> for PriorityVisitor {
    type Value = u32;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a priority: a whole number, higher for higher priority")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u32, E> {
        u32::try_from(v).map_err(|_| {
            E::custom(format!(
                "priority {v} is out of range: use 0 or more (higher number, higher priority, \
                 as with SCHED_FIFO 1-99)"
            ))
        })
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u32, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

fn priority<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_any(PriorityVisitor).map(Some)
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Nanos;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a duration with a unit, e.g. \"1ms\"")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Nanos, E> {
        Nanos::parse_duration(v).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Nanos, E> {
        Err(E::custom(format!(
            "a bare number ({v}) is not a duration: write it as a string with a unit, \
             e.g. \"{v}us\""
        )))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Nanos, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Nanos, E> {
        Err(E::custom(format!(
            "a bare number ({v}) is not a duration: write it as a string with a unit, \
             e.g. \"{v}ms\""
        )))
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Nanos, D::Error> {
    d.deserialize_any(DurationVisitor)
}

fn optional_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Nanos>, D::Error> {
    d.deserialize_any(DurationVisitor).map(Some)
}

/// Reads and parses the task file: an unreadable file is an error (1),
/// content that is not a valid task set is a usage error (2).
fn read_tasks(path: &Path) -> Result<Vec<Task>, Exit> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the task file {file}"))?;
    let parsed: TaskFile = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!(" line {}", line_of(&text, s.start)))
            .unwrap_or_default();
        Exit::usage(format!("{file}{at}: {}", one_line(e.message())))
    })?;
    if parsed.task.is_empty() {
        return Err(Exit::usage(format!(
            "{file}: no tasks: describe each as a [[task]] table with name, period and wcet"
        )));
    }
    Ok(parsed
        .task
        .into_iter()
        .map(|t| Task {
            name: t.name,
            period: t.period,
            wcet: t.wcet,
            deadline: t.deadline.unwrap_or(t.period),
            priority: t.priority,
            jitter: Nanos::ZERO,
            blocking: Nanos::ZERO,
        })
        .collect())
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    1 + text
        .as_bytes()
        .iter()
        .take(end)
        .filter(|&&b| b == b'\n')
        .count()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ------------------------------------------------------- the measurements

/// The pseudo worst case of one CPU in one cell.
struct Source {
    cell: u32,
    workload: String,
    cpu: Option<u32>,
    policy: String,
    /// 0 for `SCHED_OTHER`.
    priority: u32,
    /// Whether the per-deadline (coordinated-omission corrected) histogram
    /// was used.
    corrected: bool,
    /// How long the cell measured.
    measured: Nanos,
    samples: u64,
    pwc: PseudoWorstCase,
}

impl Source {
    fn level(&self) -> String {
        policy_label(&self.policy, self.priority)
    }
}

fn policy_label(policy: &str, priority: u32) -> String {
    match policy {
        "other" => "other".to_string(),
        p => format!("{} {priority}", p.to_uppercase()),
    }
}

/// Every CPU's pseudo worst case of `timer.latency`, from every cell (or
/// the one asked for).
fn measurements(
    run: &RunResult,
    only: Option<u32>,
    miss_interval: Nanos,
) -> Result<Vec<Source>, Exit> {
    let id = run.meta.id;
    if let Some(c) = only {
        if !run.cells.iter().any(|cell| cell.meta.index == c) {
            return Err(anyhow::anyhow!(
                "run {id} has {} cell(s); --cell {c} does not exist",
                run.cells.len()
            )
            .into());
        }
    }
    let mut out = Vec::new();
    for cell in &run.cells {
        if only.is_some_and(|c| c != cell.meta.index) {
            continue;
        }
        let policy = cell.meta.settings.policy().as_str().to_string();
        let priority = cell.meta.settings.priority();
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
            out.push(Source {
                cell: cell.meta.index,
                workload: cell.meta.workload.clone(),
                cpu: m.cpu.map(|c| c.0),
                policy: policy.clone(),
                priority,
                corrected,
                measured: cell.meta.duration_ns,
                samples: h.count(),
                pwc,
            });
        }
    }
    if out.is_empty() {
        let what = match only {
            Some(c) => format!("cell {c} of run {id}"),
            None => format!("run {id}"),
        };
        return Err(anyhow::anyhow!(
            "{what} has no timer.latency samples: measure with `latscope run` (timer probe) first"
        )
        .into());
    }
    Ok(out)
}

/// What a task was given as its release jitter and blocking.
struct Assigned {
    latency: Nanos,
    /// The measured level used (`FIFO 95`), and its numeric priority.
    level: String,
    level_priority: u32,
    /// The source of the largest figure at that level.
    worst: usize,
    /// Some figure at the level is only the run's max.
    bounded_by_max: bool,
    /// The level is above the task's own priority (none at or below it was
    /// measured), so the figure may be optimistic.
    optimistic: bool,
}

/// The measured level for a task: the highest measured priority at or
/// below the task's (a thread of lower priority sees at least the latency
/// the task would); failing that, the lowest measured one, flagged as
/// optimistic. Rate-monotonic sets (no priorities) are assumed to run at
/// the highest priority measured.
fn assign(sources: &[Source], priority: Option<u32>) -> Assigned {
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
    let mut first = true;
    for (i, s) in sources.iter().enumerate() {
        if s.priority != level {
            continue;
        }
        bounded_by_max |= s.pwc.basis == PseudoBasis::RunMax;
        if first || s.pwc.latency > latency {
            latency = s.pwc.latency;
            worst = i;
            first = false;
        }
    }
    let label = sources
        .get(worst)
        .map(Source::level)
        .unwrap_or_else(|| level.to_string());
    Assigned {
        latency,
        level: label,
        level_priority: level,
        worst,
        bounded_by_max,
        optimistic,
    }
}

// --------------------------------------------------------------- rendering

fn signed(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", Nanos(ns.unsigned_abs()))
    } else {
        Nanos(ns.unsigned_abs()).to_string()
    }
}

fn response_text(r: Response) -> String {
    match r {
        Response::Bounded(v) => v.to_string(),
        Response::AbovePeriod(v) => format!("≥ {v}"),
        Response::Unbounded => "unbounded".to_string(),
    }
}

#[allow(clippy::too_many_arguments)]
fn text(
    file: &str,
    set: &TaskSet,
    a: &Analysis,
    assigned: &[Assigned],
    sources: &[Source],
    run: i64,
    miss_rate: &str,
    interval: Nanos,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "schedulability of {file} ({} tasks, {} priorities) with run {run}",
        set.tasks().len(),
        a.order.as_str()
    );
    let _ = writeln!(
        out,
        "pseudo worst case of timer.latency for a miss rate of {miss_rate} \
         (exceeded at most once per {}):",
        interval_text(interval)
    );
    let mut levels: Vec<&Assigned> = Vec::new();
    for x in assigned {
        if !levels.iter().any(|l| l.level_priority == x.level_priority) {
            levels.push(x);
        }
    }
    for l in levels {
        let Some(s) = sources.get(l.worst) else {
            continue;
        };
        let cpu = s.cpu.map(|c| format!(", CPU {c}")).unwrap_or_default();
        let how = if l.bounded_by_max {
            format!(
                "bounded by the run's max ({} measured, less than {}: a longer run may raise it)",
                s.measured,
                interval_text(interval)
            )
        } else {
            format!(
                "observed ({} of {} wake-ups above it in {}, {:.0}/s)",
                s.pwc.exceedances, s.samples, s.measured, s.pwc.wakeups_per_second
            )
        };
        let per = if s.corrected { ", per deadline" } else { "" };
        let _ = writeln!(
            out,
            "  {:<9} {:>7}  {how}; cell {}, workload {}{cpu}{per}",
            l.level,
            l.latency.to_string(),
            s.cell,
            s.workload
        );
    }
    let _ = writeln!(
        out,
        "every task's release jitter J and blocking B = the pseudo worst case at its priority"
    );
    out.push('\n');

    let mut table = Table::new([
        "task", "period", "WCET", "deadline", "prio", "J = B", "response", "slack", "verdict",
    ]);
    for (i, ((t, r), x)) in set.tasks().iter().zip(&a.tasks).zip(assigned).enumerate() {
        let prio = match t.priority {
            Some(p) => p.to_string(),
            None => format!("RM {}", set.rank(i)),
        };
        table.row([
            t.name.clone(),
            t.period.to_string(),
            t.wcet.to_string(),
            t.deadline.to_string(),
            prio,
            format!("{}{}", t.jitter, if x.optimistic { "*" } else { "" }),
            response_text(r.response),
            r.slack_ns.map(signed).unwrap_or_else(|| "-".to_string()),
            if r.schedulable { "ok" } else { "MISS" }.to_string(),
        ]);
    }
    out.push_str(&table.render());
    if assigned.iter().any(|x| x.optimistic) {
        let _ = writeln!(
            out,
            "* the task's priority is below every measured one: its J and B come from a \
             higher priority and may be optimistic"
        );
    }
    out.push('\n');

    let n = set.tasks().len();
    let _ = writeln!(
        out,
        "utilization {:.3}; Liu & Layland bound for {n} task{}: {:.3} ({}); hyperbolic \
         Π(U+1) = {:.3} ({})",
        a.utilization,
        if n == 1 { "" } else { "s" },
        a.ll_bound,
        if a.ll_pass { "within" } else { "above" },
        a.hyperbolic_product,
        if a.hyperbolic_pass { "≤ 2" } else { "> 2" },
    );
    if !a.bounds_apply {
        let _ = writeln!(
            out,
            "  (the bounds assume rate-monotonic priorities, D = T and no jitter or blocking: \
             here they are indicative only)"
        );
    }
    let missed = a.tasks.iter().filter(|r| !r.schedulable).count();
    if a.schedulable {
        let _ = writeln!(
            out,
            "schedulable: every task meets its deadline (response-time analysis)"
        );
    } else {
        let _ = writeln!(
            out,
            "NOT schedulable: {missed} of {n} task{} can miss {} deadline (response-time analysis)",
            if n == 1 { "" } else { "s" },
            if missed == 1 { "its" } else { "their" }
        );
    }
    out
}

fn json_doc(
    set: &TaskSet,
    a: &Analysis,
    assigned: &[Assigned],
    sources: &[Source],
    run: i64,
    miss_rate: &str,
    interval: Nanos,
) -> serde_json::Value {
    let tasks: Vec<serde_json::Value> = set
        .tasks()
        .iter()
        .zip(&a.tasks)
        .zip(assigned)
        .enumerate()
        .map(|(i, ((t, r), x))| {
            let src = sources.get(x.worst);
            json!({
                "name": t.name,
                "period_ns": t.period.0,
                "wcet_ns": t.wcet.0,
                "deadline_ns": t.deadline.0,
                "priority": t.priority,
                "rank": set.rank(i),
                "jitter_ns": t.jitter.0,
                "blocking_ns": t.blocking.0,
                "response_ns": r.response.value().map(|v| v.0),
                "response": match r.response {
                    Response::Bounded(_) => "exact",
                    Response::AbovePeriod(_) => "lower_bound",
                    Response::Unbounded => "unbounded",
                },
                "slack_ns": r.slack_ns,
                "schedulable": r.schedulable,
                "latency_source": {
                    "level": x.level,
                    "priority": x.level_priority,
                    "cell": src.map(|s| s.cell),
                    "cpu": src.and_then(|s| s.cpu),
                    "workload": src.map(|s| s.workload.as_str()),
                    "basis": if x.bounded_by_max { "run_max" } else { "observed" },
                    "optimistic": x.optimistic,
                },
            })
        })
        .collect();
    let pwc: Vec<serde_json::Value> = sources
        .iter()
        .map(|s| {
            json!({
                "cell": s.cell,
                "workload": s.workload,
                "cpu": s.cpu,
                "policy": s.policy,
                "priority": s.priority,
                "latency_ns": s.pwc.latency.0,
                "basis": match s.pwc.basis {
                    PseudoBasis::Observed => "observed",
                    PseudoBasis::RunMax => "run_max",
                },
                "exceedances": s.pwc.exceedances,
                "allowed": s.pwc.allowed,
                "samples": s.samples,
                "measured_ns": s.measured.0,
                "wakeups_per_second": s.pwc.wakeups_per_second,
                "corrected": s.corrected,
            })
        })
        .collect();
    json!({
        "run_id": run,
        "metric": metric::TIMER_LATENCY,
        "miss_rate": miss_rate,
        "miss_interval_ns": interval.0,
        "priorities": match a.order {
            PriorityOrder::Explicit => "explicit",
            PriorityOrder::RateMonotonic => "rate_monotonic",
        },
        "pseudo_worst_case": pwc,
        "tasks": tasks,
        "utilization": a.utilization,
        "ll_bound": a.ll_bound,
        "ll_pass": a.ll_pass,
        "hyperbolic_product": a.hyperbolic_product,
        "hyperbolic_pass": a.hyperbolic_pass,
        "bounds_apply": a.bounds_apply,
        "schedulable": a.schedulable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miss_rates() {
        assert_eq!(parse_miss_rate("1/hour"), Ok(Nanos::from_secs(3_600)));
        assert_eq!(parse_miss_rate("2/hour"), Ok(Nanos::from_secs(1_800)));
        assert_eq!(parse_miss_rate("1/10min"), Ok(Nanos::from_secs(600)));
        assert_eq!(parse_miss_rate(" 1 / day "), Ok(Nanos::from_secs(86_400)));
        assert_eq!(parse_miss_rate("1/w"), Ok(Nanos::from_secs(604_800)));
        assert_eq!(parse_miss_rate("1/30s"), Ok(Nanos::from_secs(30)));
        for bad in [
            "",
            "hour",
            "0/hour",
            "-1/hour",
            "1/",
            "1/fortnight",
            "1/0s",
            "x/h",
        ] {
            assert!(parse_miss_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn intervals_read_well() {
        assert_eq!(interval_text(Nanos::from_secs(3_600)), "1h");
        assert_eq!(interval_text(Nanos::from_secs(600)), "10min");
        assert_eq!(interval_text(Nanos::from_secs(86_400)), "1d");
        assert_eq!(interval_text(Nanos::from_secs(5_400)), "1.5h");
        assert_eq!(interval_text(Nanos::from_millis(250)), "250ms");
    }
}
