//! The documented JSON form of a run (`docs/json.md`). Field names are
//! stable: later versions add fields, never rename these.

use std::collections::BTreeMap;

use latscope_model::{Capabilities, RunStatus, SystemInfo};
use latscope_stats::{Histogram, MetricResult, RunResult, Summary};
use serde::Serialize;

/// Names this document's layout; bumped only for incompatible changes.
pub const JSON_SCHEMA: &str = "latscope.run.v1";

#[derive(Serialize)]
pub struct RunJson<'a> {
    pub schema: &'static str,
    pub run_id: i64,
    pub status: RunStatus,
    pub started_unix_ns: u64,
    pub ended_unix_ns: Option<u64>,
    pub command_line: &'a [String],
    pub tool_version: &'a str,
    pub notes: &'a [String],
    pub system: &'a SystemInfo,
    pub capabilities: &'a Capabilities,
    pub cells: Vec<CellJson<'a>>,
}

#[derive(Serialize)]
pub struct CellJson<'a> {
    pub index: u32,
    pub probe: &'a str,
    pub workload: &'a str,
    pub settings: &'a BTreeMap<String, serde_json::Value>,
    pub duration_ns: u64,
    pub metrics: Vec<MetricJson>,
}

#[derive(Serialize)]
pub struct MetricJson {
    pub name: String,
    pub cpu: Option<u32>,
    /// `count`, `min_ns`, `mean_ns`, `max_ns`, `p50_ns` ... `p9999_ns`, at
    /// the metric's own level.
    #[serde(flatten)]
    pub summary: SummaryJson,
    pub stddev_ns: Option<f64>,
    pub overruns: u64,
    pub missed_deadlines: u64,
    pub threshold_ns: Option<u64>,
    pub above_threshold: Option<u64>,
    /// The coordinated-omission-corrected distribution (per deadline), where
    /// the metric has one.
    pub corrected: Option<SummaryJson>,
    /// Non-empty histogram buckets: `[low_ns, high_ns, count]`, `high_ns`
    /// inclusive.
    pub histogram: Vec<[u64; 3]>,
}

#[derive(Serialize)]
pub struct SummaryJson {
    pub count: u64,
    pub min_ns: Option<u64>,
    pub mean_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub p9999_ns: Option<u64>,
}

fn summary_json(h: &Histogram) -> SummaryJson {
    let s = Summary::of(h);
    SummaryJson {
        count: h.count(),
        min_ns: s.map(|s| s.min.0),
        mean_ns: s.map(|s| s.mean.0),
        max_ns: s.map(|s| s.max.0),
        p50_ns: s.map(|s| s.p50.0),
        p90_ns: s.map(|s| s.p90.0),
        p99_ns: s.map(|s| s.p99.0),
        p999_ns: s.map(|s| s.p999.0),
        p9999_ns: s.map(|s| s.p9999.0),
    }
}

fn metric_json(m: &MetricResult) -> MetricJson {
    MetricJson {
        name: m.name.clone(),
        cpu: m.cpu.map(|c| c.0),
        summary: summary_json(&m.histogram),
        stddev_ns: m.histogram.stddev().map(|v| (v * 10.0).round() / 10.0),
        overruns: m.overruns,
        missed_deadlines: m.missed_deadlines,
        threshold_ns: m.threshold.map(|t| t.0),
        above_threshold: m.above_threshold,
        corrected: m.corrected.as_ref().map(summary_json),
        histogram: m.histogram.buckets().map(|(l, h, c)| [l, h, c]).collect(),
    }
}

/// The JSON document of a run.
pub fn run_json(run: &RunResult) -> RunJson<'_> {
    RunJson {
        schema: JSON_SCHEMA,
        run_id: run.meta.id.0,
        status: run.meta.status,
        started_unix_ns: run.meta.started_unix_ns.0,
        ended_unix_ns: run.meta.ended_unix_ns.map(|t| t.0),
        command_line: &run.meta.command_line,
        tool_version: &run.meta.tool_version,
        notes: &run.meta.notes,
        system: &run.system,
        capabilities: &run.capabilities,
        cells: run
            .cells
            .iter()
            .map(|c| CellJson {
                index: c.meta.index,
                probe: &c.meta.probe,
                workload: &c.meta.workload,
                settings: &c.meta.settings,
                duration_ns: c.meta.duration_ns.0,
                metrics: c.metrics.iter().map(metric_json).collect(),
            })
            .collect(),
    }
}
