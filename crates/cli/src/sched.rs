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
//!
//! Glue only: this module reads the task file and the arguments, loads the
//! run, and hands them to [`latscope_stats::sched::sched_report`]; the text
//! and the JSON are rendered by `latscope_report`.

use std::path::Path;

use anyhow::Context as _;
use latscope_model::Nanos;
use latscope_stats::sched::{sched_report, SchedReportError, Task, TaskSet};
use latscope_store::Store;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

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
    let report =
        sched_report(&run, tasks, cell, &args.miss_rate, miss_interval).map_err(|e| -> Exit {
            match e {
                SchedReportError::Tasks(e) => Exit::usage(format!("{file}: {e}")),
                SchedReportError::Analysis(e) => anyhow::anyhow!("{file}: {e}").into(),
                other => anyhow::anyhow!("{other}").into(),
            }
        })?;

    if args.json {
        let doc = latscope_report::sched_json(&report).map_err(anyhow::Error::from)?;
        let text = serde_json::to_string_pretty(&doc).map_err(anyhow::Error::from)?;
        println!("{text}");
    } else {
        print!("{}", latscope_report::sched_text(&file, &report));
    }
    Ok(if report.schedulable {
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
}
