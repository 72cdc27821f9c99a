//! `latscope list`: the runs of a store, as a table and as JSON.

use latscope_model::{CellMeta, Nanos, RunMeta};
use serde_json::{json, Value};

use crate::table::Table;
use crate::time::format_utc;

/// One run of `latscope list`.
pub struct RunListRow<'a> {
    pub meta: &'a RunMeta,
    /// The run's cells, in order.
    pub cells: &'a [CellMeta],
    /// `uname -r` of the measured machine.
    pub kernel: &'a str,
    /// The largest `timer.latency` sample of the run.
    pub max_timer_latency: Option<Nanos>,
}

/// Each item once, in the order first seen.
fn dedup<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for i in items {
        if !v.contains(&i) {
            v.push(i);
        }
    }
    v
}

/// The table `latscope list` prints: one line per run, each probe and
/// workload named once.
pub fn list_table(rows: &[RunListRow<'_>]) -> String {
    // A source column only when some run was imported from another tool.
    let imported = rows.iter().any(|r| r.meta.source.is_some());
    let mut header = vec![
        "id",
        "host",
        "started (UTC)",
        "status",
        "length",
        "probes",
        "workloads",
        "max latency",
        "kernel",
    ];
    if imported {
        header.push("source");
    }
    let mut t = Table::new(header).left_aligned(0);
    for r in rows {
        let length = r
            .meta
            .ended_unix_ns
            .or(r.meta.checkpoint_unix_ns)
            .map(|e| e.saturating_sub(r.meta.started_unix_ns).to_string())
            .unwrap_or_else(|| "-".into());
        let mut row = vec![
            r.meta.id.to_string(),
            r.meta.hostname.clone(),
            format_utc(r.meta.started_unix_ns),
            r.meta.status.to_string(),
            length,
            dedup(r.cells.iter().map(|c| c.probe.as_str())).join(","),
            dedup(r.cells.iter().map(|c| c.workload.as_str())).join(","),
            r.max_timer_latency
                .map_or_else(|| "-".to_string(), |v| v.to_string()),
            r.kernel.to_string(),
        ];
        if imported {
            row.push(r.meta.source.as_ref().map_or_else(
                || "latscope".to_string(),
                |s| match &s.label {
                    Some(label) => format!("{} · {label}", s.tool_and_version()),
                    None => s.tool_and_version(),
                },
            ));
        }
        t.row(row);
    }
    t.render()
}

/// What `latscope list --json` prints: one object per run, with every
/// cell's probe and workload in order.
pub fn list_json(rows: &[RunListRow<'_>]) -> Value {
    rows.iter()
        .map(|r| {
            json!({
                "run_id": r.meta.id.0,
                "host": r.meta.hostname,
                "status": r.meta.status,
                "started_unix_ns": r.meta.started_unix_ns.0,
                "ended_unix_ns": r.meta.ended_unix_ns.map(|t| t.0),
                "probes": r.cells.iter().map(|c| c.probe.as_str()).collect::<Vec<_>>(),
                "workloads": r.cells.iter().map(|c| c.workload.as_str()).collect::<Vec<_>>(),
                "kernel_release": r.kernel,
                "max_timer_latency_ns": r.max_timer_latency.map(|t| t.0),
                "command_line": r.meta.command_line,
                "source": r.meta.source,
            })
        })
        .collect()
}

/// The rows of a store's listing.
pub fn list_rows(runs: &[latscope_store::RunListing]) -> Vec<RunListRow<'_>> {
    runs.iter()
        .map(|r| RunListRow {
            meta: &r.meta,
            cells: &r.cells,
            kernel: &r.system_kernel,
            max_timer_latency: r.max_timer_latency,
        })
        .collect()
}

/// `latscope list` as text: the table, or the line saying the store
/// (`store`, as shown) has no run, or none that `filtered` kept.
pub fn list_text(rows: &[RunListRow<'_>], filtered: bool, store: &str) -> String {
    match (rows.is_empty(), filtered) {
        (false, _) => list_table(rows),
        (true, true) => format!("no runs match in {store}\n"),
        (true, false) => format!("no runs in {store}\n"),
    }
}
