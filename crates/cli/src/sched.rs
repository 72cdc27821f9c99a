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
use latscope_stats::sched::taskfile::{parse_miss_rate, parse_tasks};
use latscope_stats::sched::{sched_report, SchedReportError, Task, TaskSet};
use latscope_store::Store;

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
        crate::output::print(&format!("{text}\n"));
    } else {
        crate::output::print(&latscope_report::sched_text(&file, &report));
    }
    Ok(if report.schedulable {
        exit::OK
    } else {
        UNSCHEDULABLE
    })
}

/// Reads and parses the task file: an unreadable file is an error (1),
/// content that is not a valid task set is a usage error (2).
fn read_tasks(path: &Path) -> Result<Vec<Task>, Exit> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the task file {file}"))?;
    parse_tasks(&text).map_err(|e| match e.line {
        Some(line) => Exit::usage(format!("{file} line {line}: {}", e.message)),
        None => Exit::usage(format!("{file}: {}", e.message)),
    })
}
