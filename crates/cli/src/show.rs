//! `latscope list` and `latscope show`: read the store, never write it.

use latscope_report::RunListRow;
use latscope_store::Store;
use serde_json::json;

use crate::args::{ListArgs, ShowArgs};
use crate::exit::{self, Exit};
use crate::output;

pub fn list(args: &ListArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let runs = store.list_runs()?;
    if args.json {
        let doc: Vec<_> = runs
            .iter()
            .map(|r| {
                json!({
                    "run_id": r.meta.id.0,
                    "status": r.meta.status,
                    "started_unix_ns": r.meta.started_unix_ns.0,
                    "ended_unix_ns": r.meta.ended_unix_ns.map(|t| t.0),
                    "probes": r.cells.iter().map(|c| c.probe.as_str()).collect::<Vec<_>>(),
                    "workloads": r.cells.iter().map(|c| c.workload.as_str()).collect::<Vec<_>>(),
                    "kernel_release": r.system_kernel,
                    "max_timer_latency_ns": r.max_timer_latency.map(|t| t.0),
                    "command_line": r.meta.command_line,
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&doc).map_err(anyhow::Error::from)?;
        println!("{text}");
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        println!("no runs in {}", args.store.store.display());
        return Ok(exit::OK);
    }
    let rows: Vec<RunListRow<'_>> = runs
        .iter()
        .map(|r| RunListRow {
            meta: &r.meta,
            probes: dedup(r.cells.iter().map(|c| c.probe.clone())),
            workloads: dedup(r.cells.iter().map(|c| c.workload.clone())),
            kernel: &r.system_kernel,
            max_timer_latency: r.max_timer_latency,
        })
        .collect();
    print!("{}", latscope_report::list_table(&rows));
    Ok(exit::OK)
}

fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for i in items {
        if !v.contains(&i) {
            v.push(i);
        }
    }
    v
}

pub fn show(args: &ShowArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    if args.json {
        output::write_json(&run, std::path::Path::new("-"))?;
    } else {
        let mut text = output::summary(&run, args.histogram);
        if args.episodes {
            text.push_str(&latscope_report::episodes_text(&run));
        }
        print!("{text}");
    }
    Ok(exit::OK)
}
