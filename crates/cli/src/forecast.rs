//! `latscope forecast RUN`: turn a stored run's distributions into answers
//! an application designer can use — the exceedance curve, the worst case
//! per hour, day and week, pseudo worst cases for permissible miss rates,
//! the mean time to underrun of a buffering scheme (and its grid over
//! buffer sizes and counts), and verdicts for application presets.
//!
//! The measured CPUs of a cell are pooled as one longer run of one CPU:
//! their samples are summed and so is their time, so a rate or a worst case
//! per hour is per CPU, the way an application pinned to one CPU sees it.

use std::io::Write;

use anyhow::Context;
use latscope_model::{metric, Nanos};
use latscope_stats::forecast::{
    BufferScheme, Compute, Horizon, HorizonForecast, LatencyEstimate, Measured, Mttf, Provenance,
    TailOptions, UsageModel, Verdict, APP_PRESETS, PERMISSIBLE_MISS_INTERVALS, USAGE_PRESETS,
};
use latscope_stats::{CellResult, Histogram, MetricResult, SecondStats};
use latscope_store::Store;
use serde::Serialize;
use serde_json::json;

use crate::args::ForecastArgs;
use crate::exit::{self, Exit};

/// Metrics a forecast is made for.
const FORECAST_METRICS: [&str; 2] = [metric::TIMER_LATENCY, metric::NOISE_GAP];

#[derive(Serialize)]
struct MetricForecast {
    name: String,
    cpus: Vec<u32>,
    samples: u64,
    /// Measured time, summed over the pooled CPUs.
    measured_s: f64,
    per_deadline: bool,
    exceedance: Vec<(u64, f64)>,
    worst_case: serde_json::Value,
    pseudo_worst_case: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    buffering: Option<serde_json::Value>,
    verdicts: Vec<Verdict>,
    /// MTTF over buffer sizes (rows, ns) x counts (columns), with
    /// `--grid-csv`.
    #[serde(skip_serializing_if = "Option::is_none")]
    grid: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tail: Option<String>,
}

fn estimate_json(
    e: &Result<LatencyEstimate, latscope_stats::forecast::ForecastError>,
) -> serde_json::Value {
    match e {
        Ok(est) => json!({
            "latency_ns": est.latency_ns,
            "observed": est.provenance == Provenance::Observed,
            "provenance": est.provenance.as_str(),
            "interval": est.interval,
            "events": est.events,
        }),
        Err(why) => json!({ "latency_ns": null, "error": why.to_string() }),
    }
}

fn horizon_json(h: &HorizonForecast) -> serde_json::Value {
    let mut v = estimate_json(&h.estimate);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("run_seconds".into(), json!(h.run_seconds));
        if let Some(w) = &h.windows {
            obj.insert(
                "observed_windows".into(),
                json!({"windows": w.windows, "median_ns": w.median_ns, "worst_ns": w.worst_ns}),
            );
        }
    }
    v
}

fn mttf_json(m: &Mttf) -> serde_json::Value {
    json!({
        "period_ns": m.scheme.period_ns,
        "buffers": m.scheme.buffers,
        "slack_ns": m.slack_ns,
        "p_miss": m.p_miss,
        "misses": m.misses,
        "deadlines": m.deadlines,
        "mttf_s": m.mttf_s,
        "lower_bound": m.lower_bound,
        "provenance": m.provenance.as_str(),
        "interval_s": m.interval_s,
    })
}

/// The pooled histograms (per wake-up and per deadline) and per-second
/// maxima of one metric in one cell.
struct Pooled {
    wakeups: MetricResult,
    cpus: Vec<u32>,
    timeline: Vec<SecondStats>,
}

fn pool(
    store: &Store,
    cell_id: latscope_store::CellId,
    cell: &CellResult,
    name: &str,
) -> Option<Pooled> {
    let parts: Vec<&MetricResult> = cell.metrics.iter().filter(|m| m.name == name).collect();
    if parts.is_empty() {
        return None;
    }
    let mut pooled = MetricResult::new(name, None);
    let mut corrected: Option<Histogram> = None;
    let mut cpus = Vec::new();
    let mut timeline: Vec<SecondStats> = Vec::new();
    for m in &parts {
        pooled.histogram.merge(&m.histogram);
        if let Some(c) = &m.corrected {
            corrected.get_or_insert_with(Histogram::new).merge(c);
        }
        if let Some(c) = m.cpu {
            cpus.push(c.0);
        }
        // One CPU's seconds after another's: the pooled run is one longer
        // run of one CPU.
        if let Ok(t) = store.load_timeline(cell_id, name, m.cpu) {
            timeline.extend(t);
        }
    }
    pooled.corrected = corrected;
    Some(Pooled {
        wakeups: pooled,
        cpus,
        timeline,
    })
}

pub fn forecast(args: &ForecastArgs) -> Result<i32, Exit> {
    let usage = UsageModel::preset(&args.usage).ok_or_else(|| {
        let names: Vec<&str> = USAGE_PRESETS.iter().map(|p| p.name).collect();
        Exit::usage(format!(
            "--usage: unknown usage model '{}' ({})",
            args.usage,
            names.join(", ")
        ))
    })?;
    let scheme = match (args.period_ms, args.buffers) {
        (Some(t), Some(n)) => {
            let valid = t > 0.0 && t.is_finite() && args.compute_ms >= 0.0 && n > 0;
            if !valid {
                return Err(Exit::usage(
                    "--period-ms must be positive, --buffers at least 1, --compute-ms 0 or more",
                ));
            }
            let period_ns = (t * 1e6).round() as u64;
            let compute = Compute::Nanos((args.compute_ms * 1e6).round() as u64);
            Some(BufferScheme::new(period_ns, n, compute).map_err(|e| Exit::usage(e.to_string()))?)
        }
        _ => None,
    };
    let apps: Vec<&'static latscope_stats::forecast::AppPreset> = if args.apps {
        APP_PRESETS.iter().collect()
    } else if let Some(name) = &args.app {
        let p = latscope_stats::forecast::AppPreset::find(name).ok_or_else(|| {
            let names: Vec<&str> = APP_PRESETS.iter().map(|p| p.name).collect();
            Exit::usage(format!(
                "--app: unknown application '{name}' ({})",
                names.join(", ")
            ))
        })?;
        vec![p]
    } else {
        Vec::new()
    };
    let wanted_cells: Option<Vec<u32>> = match &args.cell {
        None => None,
        Some(list) => Some(
            list.split(',')
                .map(|s| s.trim().parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    Exit::usage(format!("--cell: '{list}' is not a list of cell numbers"))
                })?,
        ),
    };

    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    let cell_ids = store.cell_ids(id)?;
    let options = TailOptions::default();

    let mut out_cells = Vec::new();
    let mut any_fail = false;
    let mut grid_rows: Vec<String> = Vec::new();
    for (cell, cell_id) in run.cells.iter().zip(cell_ids) {
        if let Some(w) = &wanted_cells {
            if !w.contains(&cell.meta.index) {
                continue;
            }
        }
        let mut metrics_out = Vec::new();
        for name in FORECAST_METRICS {
            let Some(p) = pool(&store, cell_id, cell, name) else {
                continue;
            };
            let ncpu = p.cpus.len().max(1) as u64;
            let measured_ns = Nanos(cell.meta.duration_ns.0.saturating_mul(ncpu));
            if measured_ns == Nanos::ZERO || p.wakeups.histogram.is_empty() {
                continue;
            }
            let wake =
                Measured::wakeups(&p.wakeups, measured_ns, &options).context("cannot forecast")?;
            let dl = Measured::deadlines(&p.wakeups, measured_ns, &options)
                .context("cannot forecast")?;
            let mut worst = serde_json::Map::new();
            for h in [Horizon::Hour, Horizon::Day, Horizon::Week] {
                worst.insert(
                    h.name(),
                    horizon_json(&wake.worst_case(h, &usage, &p.timeline)),
                );
            }
            let mut pseudo = serde_json::Map::new();
            for (label, secs) in PERMISSIBLE_MISS_INTERVALS {
                pseudo.insert(
                    label.to_string(),
                    estimate_json(&wake.exceeded_once_per(secs)),
                );
            }
            let buffering = scheme.as_ref().map(|s| mttf_json(&dl.mttf_best(s)));
            let verdicts: Vec<Verdict> = apps.iter().map(|a| dl.verdict(a)).collect();
            if args.app.is_some()
                && verdicts.iter().any(|v| !v.pass)
                && name == metric::TIMER_LATENCY
            {
                any_fail = true;
            }
            let mut grid_json = None;
            if let (Some(_), Some(s)) = (&args.grid_csv, &scheme) {
                let periods: Vec<u64> = [1u64, 2, 4, 8, 16, 32, 64]
                    .iter()
                    .map(|ms| ms * 1_000_000)
                    .collect();
                let counts: Vec<u32> = (2..=8).collect();
                if let Ok(grid) = dl.mttf_grid(&periods, &counts, s.compute, true) {
                    grid_json = Some(json!({
                        "periods_ns": grid.periods_ns,
                        "buffers": grid.buffers,
                        "mttf_s": grid.cells.iter().map(|r| r.iter().map(|m| m.mttf_s).collect::<Vec<_>>()).collect::<Vec<_>>(),
                        "lower_bound": grid.cells.iter().map(|r| r.iter().map(|m| m.lower_bound).collect::<Vec<_>>()).collect::<Vec<_>>(),
                    }));
                    for (r, period) in grid.periods_ns.iter().enumerate() {
                        for (c, n) in grid.buffers.iter().enumerate() {
                            if let Some(m) = grid.get(r, c) {
                                grid_rows.push(format!(
                                    "{},{},{},{},{:.6e},{},{}",
                                    cell.meta.index,
                                    name,
                                    period,
                                    n,
                                    m.mttf_s,
                                    m.lower_bound,
                                    m.provenance.as_str()
                                ));
                            }
                        }
                    }
                }
            }
            // A few hundred points are enough for a curve.
            let ex = wake.exceedance();
            let step = (ex.len() / 200).max(1);
            let exceedance: Vec<(u64, f64)> = ex.into_iter().step_by(step).collect();
            metrics_out.push(MetricForecast {
                name: name.to_string(),
                cpus: p.cpus.clone(),
                samples: wake.samples(),
                measured_s: wake.duration_s(),
                per_deadline: dl.per_deadline(),
                exceedance,
                worst_case: serde_json::Value::Object(worst),
                pseudo_worst_case: serde_json::Value::Object(pseudo),
                buffering,
                verdicts,
                grid: grid_json,
                tail: wake.tail().err().map(|e| e.to_string()),
            });
        }
        out_cells.push(json!({
            "index": cell.meta.index,
            "probe": cell.meta.probe,
            "workload": cell.meta.workload,
            "metrics": metrics_out,
        }));
    }
    if let Some(path) = &args.grid_csv {
        if scheme.is_none() {
            return Err(Exit::usage(
                "--grid-csv needs --period-ms and --buffers (its compute time)",
            ));
        }
        let mut text =
            String::from("cell,metric,period_ns,buffers,mttf_s,lower_bound,provenance\n");
        for r in &grid_rows {
            text.push_str(r);
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let doc = json!({
        "schema": "latscope.forecast.v1",
        "run_id": run.meta.id.0,
        "usage": { "name": args.usage, "model": usage },
        "cells": out_cells,
    });
    let mut stdout = std::io::stdout().lock();
    let text = if args.json {
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        crate::colour::verdicts(&render_text(&doc), crate::colour::enabled())
    };
    let _ = stdout.write_all(text.as_bytes());
    Ok(if any_fail { exit::THRESHOLD } else { exit::OK })
}

fn ns_text(v: &serde_json::Value) -> String {
    match v.as_u64() {
        Some(n) => Nanos(n).to_string(),
        None => "-".to_string(),
    }
}

fn estimate_text(v: &serde_json::Value) -> String {
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return format!("n/a ({err})");
    }
    let lat = ns_text(&v["latency_ns"]);
    let prov = v["provenance"].as_str().unwrap_or("?");
    let lo = ns_text(&v["interval"]["low"]);
    let hi = ns_text(&v["interval"]["high"]);
    format!("{lat} ({prov}; interval {lo} - {hi})")
}

/// The forecast for people: per cell and metric.
fn render_text(doc: &serde_json::Value) -> String {
    let mut out = format!(
        "forecast for run {} · usage model {}\n",
        doc["run_id"], doc["usage"]["name"]
    );
    for c in doc["cells"].as_array().into_iter().flatten() {
        for m in c["metrics"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "\ncell {} ({}, workload {}) · {} · {} samples over {:.1} s (CPUs pooled){}\n",
                c["index"],
                c["probe"].as_str().unwrap_or("?"),
                c["workload"].as_str().unwrap_or("?"),
                m["name"].as_str().unwrap_or("?"),
                m["samples"],
                m["measured_s"].as_f64().unwrap_or(0.0),
                if m["per_deadline"] == true {
                    ", per deadline"
                } else {
                    ""
                }
            ));
            out.push_str("  worst case (exceeded on average once in the horizon):\n");
            for h in ["hour", "day", "week"] {
                let v = &m["worst_case"][h];
                let windows = match v.get("observed_windows") {
                    Some(w) => format!(
                        "; observed over {} whole {h}s: median {} worst {}",
                        w["windows"],
                        ns_text(&w["median_ns"]),
                        ns_text(&w["worst_ns"])
                    ),
                    None => String::new(),
                };
                out.push_str(&format!("    per {h:<5} {}{windows}\n", estimate_text(v)));
            }
            out.push_str("  pseudo worst case (for schedulability), one miss per:\n");
            for (label, _) in PERMISSIBLE_MISS_INTERVALS {
                out.push_str(&format!(
                    "    {label:<6} {}\n",
                    estimate_text(&m["pseudo_worst_case"][label])
                ));
            }
            if let Some(b) = m.get("buffering").filter(|b| !b.is_null()) {
                let mttf = b["mttf_s"].as_f64().unwrap_or(0.0);
                out.push_str(&format!(
                    "  buffering {} x {} (slack {}): {} misses in {} deadlines; mean time to underrun {}{:.3} s ({})\n",
                    b["buffers"],
                    ns_text(&b["period_ns"]),
                    Nanos(b["slack_ns"].as_i64().unwrap_or(0).max(0) as u64),
                    b["misses"],
                    b["deadlines"],
                    if b["lower_bound"] == true { "more than " } else { "" },
                    mttf,
                    b["provenance"].as_str().unwrap_or("?"),
                ));
            }
            let verdicts = m["verdicts"].as_array().cloned().unwrap_or_default();
            if !verdicts.is_empty() {
                let mut t = latscope_report::Table::new([
                    "application",
                    "verdict",
                    "time between misses",
                    "target",
                    "basis",
                ]);
                for v in &verdicts {
                    let mttf = v["mttf_s"].as_f64().unwrap_or(0.0);
                    t.row([
                        v["app"].as_str().unwrap_or("?").to_string(),
                        if v["pass"] == true {
                            "PASS"
                        } else if v["conclusive"] == false {
                            "too short to tell"
                        } else {
                            "FAIL"
                        }
                        .to_string(),
                        format!(
                            "{}{}",
                            if v["lower_bound"] == true { "> " } else { "" },
                            seconds_text(mttf)
                        ),
                        seconds_text(v["target_s"].as_f64().unwrap_or(0.0)),
                        v["basis"]["provenance"]
                            .as_str()
                            .or_else(|| v["basis"]["observed_or_extrapolated"].as_str())
                            .unwrap_or("")
                            .to_string(),
                    ]);
                }
                out.push_str(&t.render());
            }
            if let Some(g) = m.get("grid").filter(|g| !g.is_null()) {
                out.push_str(&grid_text(g));
            }
            if let Some(why) = m.get("tail").and_then(|t| t.as_str()) {
                out.push_str(&format!("  (no tail fit: {why})\n"));
            }
        }
    }
    out
}

/// The MTTF grid as a table: buffer sizes down, buffer counts across, each
/// entry the mean time to underrun (">" for lower bounds), the text form of
/// the study's Figures 6 and 7.
fn grid_text(g: &serde_json::Value) -> String {
    let counts: Vec<u64> = g["buffers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_u64())
        .collect();
    let mut header = vec!["buffer \\ count".to_string()];
    header.extend(counts.iter().map(|c| c.to_string()));
    let mut t = latscope_report::Table::new(header);
    for (r, period) in g["periods_ns"].as_array().into_iter().flatten().enumerate() {
        let mut row = vec![ns_text(period)];
        for c in 0..counts.len() {
            let mttf = g["mttf_s"][r][c].as_f64().unwrap_or(0.0);
            let lb = g["lower_bound"][r][c] == true;
            row.push(format!(
                "{}{}",
                if lb { ">" } else { "" },
                seconds_text(mttf)
            ));
        }
        t.row(row);
    }
    format!(
        "  mean time to underrun over buffer sizes and counts (same compute time):\n{}",
        t.render()
    )
}

fn seconds_text(s: f64) -> String {
    if !s.is_finite() {
        return "never".to_string();
    }
    if s >= 86_400.0 {
        format!("{:.1} d", s / 86_400.0)
    } else if s >= 3_600.0 {
        format!("{:.1} h", s / 3_600.0)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.3} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text form of a forecast, from a fixed document.
    #[test]
    fn text_rendering_of_a_forecast() {
        let doc = json!({
            "run_id": 7,
            "usage": {"name": "office"},
            "cells": [{
                "index": 0, "probe": "timer", "workload": "cpu",
                "metrics": [{
                    "name": "timer.latency", "samples": 20000, "measured_s": 20.0,
                    "per_deadline": true,
                    "worst_case": {
                        "hour": {"latency_ns": 812000, "provenance": "extrapolated",
                                 "interval": {"low": 700000, "high": 990000}},
                        "day": {"latency_ns": null, "error": "too few samples"},
                        "week": {"latency_ns": 20000, "provenance": "observed",
                                 "interval": {"low": 19000, "high": 21000},
                                 "observed_windows": {"windows": 2, "median_ns": 30000, "worst_ns": 40000}}
                    },
                    "pseudo_worst_case": {
                        "10min": {"latency_ns": 500000, "provenance": "observed", "interval": {"low": 1, "high": null}},
                        "hour": {"latency_ns": null, "error": "too few samples"},
                        "day": {"latency_ns": null, "error": "too few samples"}
                    },
                    "buffering": {"buffers": 2, "period_ns": 1000000, "slack_ns": 250000,
                                  "misses": 0, "deadlines": 20000, "mttf_s": 20.0,
                                  "lower_bound": true, "provenance": "observed"},
                    "verdicts": [{"app": "control-1khz", "pass": false, "conclusive": true,
                                  "mttf_s": 0.5, "lower_bound": false, "target_s": 86400.0,
                                  "basis": {"provenance": "observed"}}],
                    "grid": {"periods_ns": [1000000, 2000000], "buffers": [2, 3],
                             "mttf_s": [[0.5, 10.0], [4.0, 20.0]],
                             "lower_bound": [[false, false], [false, true]]}
                }]
            }]
        });
        let text = render_text(&doc);
        for want in [
            "forecast for run 7 · usage model \"office\"",
            "cell 0 (timer, workload cpu) · timer.latency · 20000 samples over 20.0 s (CPUs pooled), per deadline",
            "per hour  812µs (extrapolated; interval 700µs - 990µs)",
            "per day   n/a (too few samples)",
            "observed over 2 whole weeks: median 30.0µs worst 40.0µs",
            "10min  500µs (observed; interval 1ns - -)",
            "buffering 2 x 1.00ms (slack 250µs): 0 misses in 20000 deadlines; mean time to underrun more than 20.000 s (observed)",
            "control-1khz",
            "FAIL",
            ">20.000 s",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }
}
