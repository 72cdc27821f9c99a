//! `latscope sched` for people and programs: the text the terminal shows
//! and the JSON document `--json` writes, from one [`SchedReport`]
//! (computed in `latscope_stats::sched`).

use std::fmt::Write as _;

use latscope_model::Nanos;
use latscope_stats::sched::{PseudoBasis, ResponseKind, SchedReport, TaskReport};

use crate::Table;

/// The analysis as the JSON document `--json` writes.
pub fn sched_json(report: &SchedReport) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::to_value(report)
}

/// An interval for reading: `1h`, `10min`, `1d`, `1w`, `1.5h`, `250ms`.
pub fn interval_text(n: Nanos) -> String {
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

fn signed(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", Nanos(ns.unsigned_abs()))
    } else {
        Nanos(ns.unsigned_abs()).to_string()
    }
}

fn response_text(t: &TaskReport) -> String {
    match (t.response, t.response_time) {
        (ResponseKind::Exact, Some(v)) => v.to_string(),
        (ResponseKind::LowerBound, Some(v)) => format!("≥ {v}"),
        _ => "unbounded".to_string(),
    }
}

/// The analysis for people; `file` names the task file.
pub fn sched_text(file: &str, r: &SchedReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "schedulability of {file} ({} tasks, {} priorities) with run {}",
        r.tasks.len(),
        r.priorities.as_str(),
        r.run_id
    );
    let _ = writeln!(
        out,
        "pseudo worst case of timer.latency for a miss rate of {} \
         (exceeded at most once per {}):",
        r.miss_rate,
        interval_text(r.miss_interval)
    );
    // One line per level used, in the order the tasks first use it.
    let mut levels: Vec<&TaskReport> = Vec::new();
    for t in &r.tasks {
        if !levels
            .iter()
            .any(|l| l.latency_source.priority == t.latency_source.priority)
        {
            levels.push(t);
        }
    }
    for t in levels {
        let l = &t.latency_source;
        let Some(s) = l.source.and_then(|i| r.pseudo_worst_case.get(i)) else {
            continue;
        };
        let cpu = s.cpu.map(|c| format!(", CPU {c}")).unwrap_or_default();
        let how = if l.basis == PseudoBasis::RunMax {
            let why = s
                .no_extrapolation
                .as_ref()
                .map(|w| format!("; not extrapolated: {w}"))
                .unwrap_or_default();
            format!(
                "bounded by the run's max ({} measured, less than {}: a longer run may raise it{why})",
                s.measured,
                interval_text(r.miss_interval)
            )
        } else if s.basis == PseudoBasis::Extrapolated {
            let high = s
                .interval_high
                .map_or("unbounded".to_string(), |h| h.to_string());
            format!(
                "extrapolated from the tail model ({} measured, less than {}; interval up to {high})",
                s.measured,
                interval_text(r.miss_interval)
            )
        } else {
            format!(
                "observed ({} of {} wake-ups above it in {}, {:.0}/s)",
                s.exceedances, s.samples, s.measured, s.wakeups_per_second
            )
        };
        let per = if s.corrected { ", per deadline" } else { "" };
        let _ = writeln!(
            out,
            "  {:<9} {:>7}  {how}; cell {}, workload {}{cpu}{per}",
            l.level,
            t.jitter.to_string(),
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
    for t in &r.tasks {
        let prio = match t.priority {
            Some(p) => p.to_string(),
            None => format!("RM {}", t.rank),
        };
        table.row([
            t.name.clone(),
            t.period.to_string(),
            t.wcet.to_string(),
            t.deadline.to_string(),
            prio,
            format!(
                "{}{}",
                t.jitter,
                if t.latency_source.optimistic { "*" } else { "" }
            ),
            response_text(t),
            t.slack_ns.map(signed).unwrap_or_else(|| "-".to_string()),
            if t.schedulable { "ok" } else { "MISS" }.to_string(),
        ]);
    }
    out.push_str(&table.render());
    if r.tasks.iter().any(|t| t.latency_source.optimistic) {
        let _ = writeln!(
            out,
            "* the task's priority is below every measured one: its J and B come from a \
             higher priority and may be optimistic"
        );
    }
    out.push('\n');

    let n = r.tasks.len();
    let _ = writeln!(
        out,
        "utilization {:.3}; Liu & Layland bound for {n} task{}: {:.3} ({}); hyperbolic \
         Π(U+1) = {:.3} ({})",
        r.utilization,
        if n == 1 { "" } else { "s" },
        r.ll_bound,
        if r.ll_pass { "within" } else { "above" },
        r.hyperbolic_product,
        if r.hyperbolic_pass { "≤ 2" } else { "> 2" },
    );
    if !r.bounds_apply {
        let _ = writeln!(
            out,
            "  (the bounds assume rate-monotonic priorities, D = T and no jitter or blocking: \
             here they are indicative only)"
        );
    }
    let missed = r.tasks.iter().filter(|t| !t.schedulable).count();
    if r.schedulable {
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

#[cfg(test)]
mod tests {

    use latscope_model::{
        metric, Capabilities, CellMeta, CpuId, RunId, RunMeta, RunStatus, SystemInfo,
    };
    use latscope_stats::sched::{sched_report, Task};
    use latscope_stats::{CellResult, Histogram, MetricResult, RunResult};

    use super::*;

    /// A 3 s run at FIFO 95 on CPU 0 whose worst deadline was 52.6 µs late.
    fn run() -> RunResult {
        let settings = latscope_model::CellSettings::from_json(
            "timer",
            serde_json::json!({ "policy": "fifo", "priority": 95 }),
        )
        .unwrap();
        let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(0)));
        let mut c = Histogram::new();
        for i in 0..3000u64 {
            m.histogram.record(8_000 + i);
            c.record(8_000 + i);
        }
        m.histogram.record(52_600);
        c.record(52_600);
        m.corrected = Some(c);
        RunResult {
            meta: RunMeta {
                status: RunStatus::Complete,
                pid: 1,
                ..RunMeta::new(RunId(1), Nanos(0))
            },
            system: SystemInfo::default(),
            capabilities: Capabilities::default(),
            cells: vec![CellResult::new(
                CellMeta::new(0, "none", settings, Nanos::from_secs(3)),
                vec![m],
            )],
        }
    }

    fn tasks() -> Vec<Task> {
        vec![
            Task::new("control", Nanos::from_millis(1), Nanos::from_micros(200)).with_priority(90),
            Task::new("fusion", Nanos::from_millis(10), Nanos::from_millis(2)).with_priority(80),
            Task::new("logger", Nanos::from_millis(100), Nanos::from_millis(10))
                .with_deadline(Nanos::from_millis(50))
                .with_priority(10),
        ]
    }

    /// The example of docs/cli.md, byte for byte.
    #[test]
    fn text_of_the_documented_example() {
        let r = sched_report(&run(), tasks(), None, "1/hour", Nanos::from_secs(3600)).unwrap();
        let want = "schedulability of control.toml (3 tasks, explicit priorities) with run 1
pseudo worst case of timer.latency for a miss rate of 1/hour (exceeded at most once per 1h):
  FIFO 95    52.6µs  bounded by the run's max (3.00s measured, less than 1h: a longer run may raise it; not extrapolated: needs 6 more CPU-minutes of data); cell 0, workload none, CPU 0, per deadline
every task's release jitter J and blocking B = the pseudo worst case at its priority

task     period    WCET  deadline  prio    J = B  response   slack  verdict
control  1.00ms   200µs    1.00ms    90  52.6µs*     305µs   695µs       ok
fusion   10.0ms  2.00ms    10.0ms    80  52.6µs*    2.71ms  7.29ms       ok
logger    100ms  10.0ms    50.0ms    10  52.6µs*    17.7ms  32.3ms       ok
* the task's priority is below every measured one: its J and B come from a higher priority and may be optimistic

utilization 0.500; Liu & Layland bound for 3 tasks: 0.780 (within); hyperbolic Π(U+1) = 1.584 (≤ 2)
  (the bounds assume rate-monotonic priorities, D = T and no jitter or blocking: here they are indicative only)
schedulable: every task meets its deadline (response-time analysis)
";
        let text = sched_text("control.toml", &r);
        assert_eq!(text, want, "got:\n{text}");
    }

    #[test]
    fn json_keeps_the_documented_keys() {
        let r = sched_report(&run(), tasks(), None, "1/hour", Nanos::from_secs(3600)).unwrap();
        let v = sched_json(&r).unwrap();
        assert_eq!(v["run_id"], 1);
        assert_eq!(v["metric"], "timer.latency");
        assert_eq!(v["miss_interval_ns"], 3_600_000_000_000u64);
        assert_eq!(v["priorities"], "explicit");
        assert_eq!(v["schedulable"], true);
        let p = &v["pseudo_worst_case"][0];
        assert_eq!(p["latency_ns"], 52_600);
        assert_eq!(p["basis"], "run_max");
        assert_eq!(p["measured_ns"], 3_000_000_000u64);
        assert_eq!(p["corrected"], true);
        let t = &v["tasks"][2];
        assert_eq!(t["name"], "logger");
        assert_eq!(t["deadline_ns"], 50_000_000);
        assert_eq!(t["jitter_ns"], 52_600);
        assert_eq!(t["blocking_ns"], 52_600);
        assert_eq!(t["response"], "exact");
        assert_eq!(t["rank"], 3);
        assert_eq!(t["latency_source"]["level"], "FIFO 95");
        assert_eq!(t["latency_source"]["basis"], "run_max");
        assert_eq!(t["latency_source"]["optimistic"], true);
        assert!(t["latency_source"].get("source").is_none());
        for key in [
            "utilization",
            "ll_bound",
            "ll_pass",
            "hyperbolic_product",
            "hyperbolic_pass",
            "bounds_apply",
            "miss_rate",
        ] {
            assert!(v.get(key).is_some(), "no {key}");
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
