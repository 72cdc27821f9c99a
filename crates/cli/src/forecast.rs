//! `latscope forecast RUN`: turn a stored run's distributions into answers
//! an application designer can use — the exceedance curve, the worst case
//! per hour, day and week, pseudo worst cases for permissible miss rates,
//! the mean time to underrun of a buffering scheme (and its grid over
//! buffer sizes and counts), and verdicts for application presets.
//!
//! Glue only: the arguments become [`ForecastOptions`] (checked by
//! [`ForecastOptions::from_request`]), the run, its timelines and the
//! histograms kept at its checkpoints come from
//! the store, `latscope_stats` computes the
//! [`latscope_stats::forecast::ForecastReport`] (the CPUs of a cell pooled
//! as one longer run of one CPU, the same report the HTML page shows) and
//! `latscope_report` renders it.

use std::io::Write;

use anyhow::Context;
use latscope_model::CpuId;
use latscope_stats::forecast::{
    forecast_report, CellSnapshot, CpuTimeline, ForecastOptions, ForecastRequest,
    ForecastRequestError, FORECAST_METRICS,
};
use latscope_stats::SecondStats;

use crate::args::ForecastArgs;
use crate::exit::{self, Exit};

pub fn forecast(args: &ForecastArgs) -> Result<i32, Exit> {
    let request = ForecastRequest {
        usage: &args.usage,
        period_ms: args.period_ms,
        buffers: args.buffers,
        compute_ms: args.compute_ms,
        app: args.app.as_deref(),
        all_apps: args.apps,
        cells: args.cell.as_deref(),
    };
    let options = ForecastOptions::from_request(&request).map_err(|e| match e {
        ForecastRequestError::UnknownUsage(_) => Exit::usage(format!("--usage: {e}")),
        ForecastRequestError::BadScheme => Exit::usage(
            "--period-ms must be positive, --buffers at least 1, --compute-ms 0 or more",
        ),
        ForecastRequestError::Scheme(_) => Exit::usage(e),
        ForecastRequestError::UnknownApp(_) => Exit::usage(format!("--app: {e}")),
        ForecastRequestError::BadCells(_) => Exit::usage(format!("--cell: {e}")),
    })?;

    let store = latscope_store::Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    let cell_ids = store.cell_ids(id)?;
    // The per-second maxima of the forecast metrics, for the observed
    // worst case of whole hours; a timeline that cannot be read only loses
    // that column.
    let mut loaded: Vec<(u32, &str, Option<CpuId>, Vec<SecondStats>)> = Vec::new();
    let mut snapshots: Vec<CellSnapshot> = Vec::new();
    for (cell, cell_id) in run.cells.iter().zip(cell_ids) {
        if options
            .cells
            .as_ref()
            .is_some_and(|w| !w.contains(&cell.meta.index))
        {
            continue;
        }
        for m in &cell.metrics {
            let Some(&name) = FORECAST_METRICS.iter().find(|n| **n == m.name) else {
                continue;
            };
            if let Ok(t) = store.load_timeline(cell_id, name, m.cpu) {
                loaded.push((cell.meta.index, name, m.cpu, t));
            }
        }
        // The histograms kept at the cell's checkpoints, for the
        // out-of-sample test and the forecast per part; unreadable ones
        // only lose those checks.
        if let Ok(kept) = store.load_snapshots_of(cell_id, &FORECAST_METRICS) {
            snapshots.extend(kept.into_iter().map(|s| CellSnapshot {
                cell: cell.meta.index,
                at: s.at,
                metrics: s.metrics,
            }));
        }
    }
    let timelines: Vec<CpuTimeline<'_>> = loaded
        .iter()
        .map(|(cell, metric, cpu, seconds)| CpuTimeline {
            cell: *cell,
            metric,
            cpu: *cpu,
            seconds,
        })
        .collect();
    let report =
        forecast_report(&run, &timelines, &snapshots, &options).context("cannot forecast")?;
    // Only the one application asked for decides the exit code, and only
    // on the wake-up latency (noise gaps are no deadline).
    let any_fail = args.app.is_some() && report.wakeup_verdict_failed();
    if let Some(path) = &args.grid_csv {
        std::fs::write(path, latscope_report::grid_csv(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    // A monitor's real hours, days and weeks beside the forecast.
    let observed = crate::observed::observed(&store, id)?;
    let text = if args.json {
        let mut doc = latscope_report::forecast_json(&report).context("cannot write JSON")?;
        if let (Some(o), Some(map)) = (&observed, doc.as_object_mut()) {
            map.insert(
                "observed_blocks".into(),
                serde_json::to_value(o).context("cannot write JSON")?,
            );
        }
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        let mut t = latscope_report::forecast_text(&report, args.grid_csv.is_some());
        if let Some(o) = &observed {
            t.push_str(&latscope_report::observed_blocks_text(
                latscope_model::metric::TIMER_LATENCY,
                o,
            ));
        }
        crate::colour::verdicts(&t)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    Ok(if any_fail { exit::THRESHOLD } else { exit::OK })
}
