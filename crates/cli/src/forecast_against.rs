//! `latscope forecast TIMER_RUN --against APP_RUN`: the underrun rate the
//! timer run forecasts for each application-probe cell's scheme, beside
//! the underruns that cell counted, with the exact test of
//! [`latscope_stats::forecast::compare_underruns`] (docs/app-probe.md).
//!
//! Each app cell is paired with the timer cell of the same workload (or
//! the timer run's only timer cell). Exit 3 when any forecast is refuted.

use std::io::Write;

use anyhow::Context;
use latscope_model::{metric, CellSettings};
use latscope_stats::forecast::{
    compare_underruns, pool_cpus, AppPreset, BufferScheme, Comparison, Compute, Losses, Measured,
    ObservedUnderruns, Pooled, TailOptions, Verdict,
};
use latscope_stats::{CellResult, RunResult};
use serde::Serialize;

use crate::args::ForecastArgs;
use crate::exit::{self, Exit};

/// One app cell held against its timer cell.
#[derive(Serialize)]
struct Pair {
    timer_cell: u32,
    app_cell: u32,
    workload: String,
    app_seconds: f64,
    #[serde(flatten)]
    comparison: Comparison,
    /// For a cell run with `--app NAME`: the forecast's verdict for the
    /// preset and the pipeline's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    preset: Option<PresetCheck>,
}

#[derive(Serialize)]
struct PresetCheck {
    app: String,
    forecast: Verdict,
    /// The pipeline's observed mean time between underruns, seconds (a
    /// lower bound when none was seen).
    pipeline_mttf_s: f64,
    pipeline_pass: bool,
    /// The pipeline's interval excludes the target.
    pipeline_conclusive: bool,
    /// Forecast and pipeline agree on PASS or FAIL.
    confirmed: bool,
}

pub fn against(args: &ForecastArgs, app_run: &str) -> Result<i32, Exit> {
    let store = latscope_store::Store::open_existing(&args.store.store)?;
    let timer = store.load_run(store.resolve(&args.run)?)?;
    let app = store.load_run(store.resolve(app_run)?)?;
    let pairs = pairs(&timer, &app)?;
    let refuted = pairs.iter().any(|p| p.comparison.refuted);
    let text = if args.json {
        let doc = serde_json::json!({
            "timer_run": timer.meta.id.0,
            "app_run": app.meta.id.0,
            "refute_at": latscope_stats::forecast::REFUTE_AT,
            "comparisons": pairs,
        });
        serde_json::to_string_pretty(&doc).context("cannot write JSON")? + "\n"
    } else {
        let mut t = String::new();
        for p in &pairs {
            t.push_str(&pair_text(p, timer.meta.id.0, app.meta.id.0));
        }
        crate::colour::verdicts(&t)
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(if refuted { exit::THRESHOLD } else { exit::OK })
}

fn pairs(timer: &RunResult, app: &RunResult) -> Result<Vec<Pair>, Exit> {
    let timer_cells: Vec<&CellResult> = timer
        .cells
        .iter()
        .filter(|c| c.metrics.iter().any(|m| m.name == metric::TIMER_LATENCY))
        .collect();
    if timer_cells.is_empty() {
        return Err(Exit::usage(format!(
            "run {} has no timer.latency to forecast from: give a timer-probe run",
            timer.meta.id.0
        )));
    }
    let mut out = Vec::new();
    for cell in &app.cells {
        let CellSettings::App(s) = &cell.meta.settings else {
            continue;
        };
        let t = timer_cells
            .iter()
            .find(|t| t.meta.workload == cell.meta.workload)
            .or((timer_cells.len() == 1).then_some(&timer_cells[0]))
            .ok_or_else(|| {
                Exit::usage(format!(
                    "run {} has no timer cell under workload '{}' for app cell {}",
                    timer.meta.id.0, cell.meta.workload, cell.meta.index
                ))
            })?;
        let scheme = BufferScheme::new(s.period_ns.0, s.buffers, Compute::Nanos(s.compute_ns.0))
            .map_err(|e| Exit::usage(format!("app cell {}: {e}", cell.meta.index)))?;
        let Some(pooled) = pool_cpus(t, metric::TIMER_LATENCY, &[], &[]) else {
            continue;
        };
        let wake = Measured::wakeups(&pooled.metric, pooled.measured, &TailOptions::default())
            .context("cannot forecast")?;
        let count = |name: &str| -> u64 {
            cell.metrics
                .iter()
                .filter(|m| m.name == name)
                .map(|m| m.histogram.count())
                .sum()
        };
        let observed = ObservedUnderruns {
            underruns: count(metric::APP_UNDERRUN),
            buffers: count(metric::APP_RESPONSE),
        };
        if observed.buffers == 0 {
            continue;
        }
        let comparison = compare_underruns(&wake, &scheme, observed);
        let preset = s
            .app
            .as_deref()
            .and_then(AppPreset::find)
            .map(|p| preset_check(p, &pooled, &wake, &comparison))
            .transpose()?;
        out.push(Pair {
            timer_cell: t.meta.index,
            app_cell: cell.meta.index,
            workload: cell.meta.workload.clone(),
            app_seconds: cell.meta.duration_ns.0 as f64 / 1e9,
            comparison,
            preset,
        });
    }
    if out.is_empty() {
        return Err(Exit::usage(format!(
            "run {} has no app-probe cell with buffers: give a `latscope run --probe app` run",
            app.meta.id.0
        )));
    }
    Ok(out)
}

/// The preset's verdict as `latscope forecast --app` gives it (late
/// wake-ups for a preset that loses one buffer per stall, late deadlines
/// for one that loses every late deadline), and the pipeline's, which
/// counts one underrun per stall: for the latter presets a lower count
/// than their late deadlines, so the pipeline's FAIL is conclusive and
/// its PASS optimistic.
fn preset_check(
    preset: &AppPreset,
    pooled: &Pooled,
    wake: &Measured<'_>,
    c: &Comparison,
) -> Result<PresetCheck, Exit> {
    let forecast = match preset.losses {
        Losses::PerStall => latscope_stats::forecast::verdict(preset, wake),
        Losses::PerDeadline => {
            let dl = Measured::deadlines(&pooled.metric, pooled.measured, &TailOptions::default())
                .context("cannot forecast")?;
            latscope_stats::forecast::verdict(preset, &dl)
        }
    };
    let o = &c.observed;
    let hours = 1.0 / 3600.0;
    let mttf = |per_hour: f64| {
        if per_hour > 0.0 {
            1.0 / (per_hour * hours)
        } else {
            f64::INFINITY
        }
    };
    let k = o.events.unwrap_or(0);
    let pipeline_mttf_s = if k == 0 {
        o.buffers as f64 * c.scheme.period_s()
    } else {
        mttf(o.per_hour)
    };
    let pipeline_pass = pipeline_mttf_s >= preset.target_s;
    let low = o.interval_per_hour.high.map_or(0.0, mttf);
    let high = mttf(o.interval_per_hour.low);
    let pipeline_conclusive = if pipeline_pass {
        low >= preset.target_s
    } else {
        high < preset.target_s
    };
    Ok(PresetCheck {
        app: preset.name.to_string(),
        confirmed: forecast.pass == pipeline_pass,
        forecast,
        pipeline_mttf_s,
        pipeline_pass,
        pipeline_conclusive,
    })
}

fn pair_text(p: &Pair, timer_run: i64, app_run: i64) -> String {
    let c = &p.comparison;
    let s = &c.scheme;
    let ms = |ns: f64| ns / 1e6;
    let mut t = format!(
        "app run {app_run} cell {} ({}, {:.1} s) against timer run {timer_run} cell {}: {:.3} ms x {} buffers, {:.3} ms compute, slack {:.3} ms\n",
        p.app_cell,
        p.workload,
        p.app_seconds,
        p.timer_cell,
        ms(s.period_ns as f64),
        s.buffers,
        ms(s.compute_ns() as f64),
        ms(c.slack_ns as f64),
    );
    let line = |what: &str, r: &latscope_stats::forecast::Rate, source: String| {
        let hi = r
            .interval_per_hour
            .high
            .map_or("inf".to_string(), |h| format!("{h:.1}"));
        format!(
            "  {what:<10}{}{:.1} underruns/h  ({:.0}%: {:.1}-{hi})  {source}\n",
            if r.upper_bound { "< " } else { "" },
            r.per_hour,
            r.interval_per_hour.confidence * 100.0,
            r.interval_per_hour.low,
        )
    };
    let source = match c.predicted.events {
        Some(k) => format!(
            "{k} of {} wake-ups later than the slack",
            c.predicted.buffers
        ),
        None => format!(
            "extrapolated from the tail of {} wake-ups",
            c.predicted.buffers
        ),
    };
    t.push_str(&line("predicted", &c.predicted, source));
    t.push_str(&line(
        "observed",
        &c.observed,
        format!(
            "{} underruns in {} buffers",
            c.observed.events.unwrap_or(0),
            c.observed.buffers
        ),
    ));
    t.push_str(&format!("  test      {}: p = {:.3e}\n", c.test, c.p_value));
    t.push_str(&format!("  verdict   {}\n", c.verdict));
    if let Some(e) = &c.exposed {
        t.push_str(&format!(
            "  exposed   {:.1} underruns/h  ({:.0}%: {:.1}-{:.1})  the work exposed too: {} late + c x density ({} wake-ups in [s/2, 3s/2))\n",
            e.per_hour,
            e.interval_per_hour.confidence * 100.0,
            e.interval_per_hour.low,
            e.interval_per_hour.high.unwrap_or(f64::INFINITY),
            e.late,
            e.band,
        ));
        t.push_str(&format!("  verdict   {}\n", e.verdict));
    }
    if let Some(pc) = &p.preset {
        let word = |pass: bool| if pass { "PASS" } else { "FAIL" };
        t.push_str(&format!(
            "  preset    {}: forecast {} (MTTF {}{:.0} s), pipeline {} (MTTF {}{:.0} s{}), target {:.0} s: {}\n",
            pc.app,
            word(pc.forecast.pass),
            if pc.forecast.lower_bound { ">= " } else { "" },
            pc.forecast.mttf_s,
            word(pc.pipeline_pass),
            if c.observed.events == Some(0) { ">= " } else { "" },
            pc.pipeline_mttf_s,
            if pc.pipeline_conclusive { "" } else { ", inconclusive" },
            pc.forecast.target_s,
            if pc.confirmed { "confirmed" } else { "CONTRADICTED" },
        ));
    }
    t.push('\n');
    t
}
