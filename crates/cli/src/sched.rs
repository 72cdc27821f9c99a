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
//! Glue only: this module reads the task file and the arguments
//! (`latscope_stats::sched::taskfile`), loads the run, and hands them to
//! [`latscope_stats::sched::sched_report`]; the text and the JSON are
//! rendered by `latscope_report`.

use latscope_stats::sched::taskfile::{
    parse_cell, parse_miss_rate, read_tasks, CellIndexError, ReadTasksError,
};
use latscope_stats::sched::{sched_report, SchedReportError};
use latscope_store::Store;

use crate::args::SchedArgs;
use crate::exit::{self, Exit};

/// Exit code when a task can miss its deadline.
const UNSCHEDULABLE: i32 = 3;

pub fn sched(args: &SchedArgs) -> Result<i32, Exit> {
    let miss_interval =
        parse_miss_rate(&args.miss_rate).map_err(|e| Exit::usage(e.line("--miss-rate")))?;
    let cell = args.cell.as_deref().map(parse_cell).transpose();
    let cell = cell.map_err(|CellIndexError(c)| {
        Exit::usage(format!("invalid --cell '{c}': expected a cell index"))
    })?;
    let file = args.tasks.display().to_string();
    // A bad task set is refused before the store is touched: an unreadable
    // file is an error (1), content that is not a task set a usage error (2).
    let tasks = read_tasks(&args.tasks).map_err(|e| match e {
        ReadTasksError::Read { .. } => Exit::from(anyhow::Error::from(e)),
        _ => Exit::usage(e),
    })?;

    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    let report =
        sched_report(&run, tasks, cell, &args.miss_rate, miss_interval).map_err(|e| -> Exit {
            match e {
                SchedReportError::Tasks(e) => Exit::usage(format!("{file}: {e}")),
                SchedReportError::Analysis(e) => anyhow::anyhow!("{file}: {e}").into(),
                SchedReportError::NoSuchCell { run, cells, cell } => {
                    anyhow::anyhow!("run {run} has {cells} cell(s); --cell {cell} does not exist")
                        .into()
                }
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
