//! `latscope forecast RUN`: turn a stored run's distributions into answers
//! an application designer can use — the exceedance curve, the worst case
//! per hour, day and week, pseudo worst cases for permissible miss rates,
//! the mean time to underrun of a buffering scheme (and its grid over
//! buffer sizes and counts), and verdicts for application presets.
//!
//! Glue only: the arguments become [`ForecastOptions`], the run and its
//! timelines come from the store, `latscope_stats` computes the
//! [`latscope_stats::forecast::ForecastReport`] (the CPUs of a cell pooled
//! as one longer run of one CPU, the same report the HTML page shows) and
//! `latscope_report` renders it.

use std::io::Write;

use anyhow::Context;
use latscope_model::CpuId;
use latscope_stats::forecast::{
    forecast_report, BufferScheme, Compute, CpuTimeline, ForecastOptions, UsageModel, APP_PRESETS,
    FORECAST_METRICS, USAGE_PRESETS,
};
use latscope_stats::SecondStats;

use crate::args::ForecastArgs;
use crate::exit::{self, Exit};

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

    let store = latscope_store::Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    let cell_ids = store.cell_ids(id)?;
    // The per-second maxima of the forecast metrics, for the observed
    // worst case of whole hours; a timeline that cannot be read only loses
    // that column.
    let mut loaded: Vec<(u32, &str, Option<CpuId>, Vec<SecondStats>)> = Vec::new();
    for (cell, cell_id) in run.cells.iter().zip(cell_ids) {
        if wanted_cells
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
    let options = ForecastOptions {
        usage_name: args.usage.clone(),
        usage,
        scheme,
        apps,
        cells: wanted_cells,
        ..ForecastOptions::new()
    };
    let report = forecast_report(&run, &timelines, &options).context("cannot forecast")?;
    // Only the one application asked for decides the exit code, and only
    // on the wake-up latency (noise gaps are no deadline).
    let any_fail = args.app.is_some()
        && report.cells.iter().any(|c| {
            c.metrics.iter().any(|m| {
                m.name == latscope_model::metric::TIMER_LATENCY
                    && m.verdicts.iter().any(|v| !v.pass)
            })
        });
    if let Some(path) = &args.grid_csv {
        std::fs::write(path, latscope_report::grid_csv(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let text = if args.json {
        let doc = latscope_report::forecast_json(&report).context("cannot write JSON")?;
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        crate::colour::verdicts(
            &latscope_report::forecast_text(&report, args.grid_csv.is_some()),
            crate::colour::enabled(),
        )
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    Ok(if any_fail { exit::THRESHOLD } else { exit::OK })
}
