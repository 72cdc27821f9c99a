//! The forecast: for each cell's forecast metrics, the worst case per hour,
//! day and week, the mean time to buffer underrun against buffer size, one
//! line per number of buffers (the data of Cota-Robles & Held's Figures 6
//! and 7), PASS/FAIL verdicts for the application presets, and, after the
//! worst cases, the checks behind them ([`super::diagnostics`]).
//!
//! Everything shown comes from the [`ForecastReport`] `latscope forecast`
//! prints, computed by the same function with the same defaults: the CPUs
//! pooled the same way ([`latscope_stats::forecast::pool_cpus`]) and the same
//! grid ([`latscope_stats::forecast::GridSpec::standard`]).

use std::fmt::Write as _;

use latscope_model::Nanos;
use latscope_stats::forecast::{
    forecast_report, AppPreset, CellForecast, CellSnapshot, CpuTimeline, ForecastOptions,
    ForecastReport, MetricForecast, MttfGrid, Verdict, APP_PRESETS,
};
use latscope_stats::RunResult;

use super::diagnostics::diagnostics_section;
use super::escape::escape;
use super::page::{figure, para, seconds_text, table};
use super::svg::{Mark, Plot, Scale, Series};
use super::timeline::Timeline;

/// The forecast the report shows: `latscope forecast`'s defaults (the
/// continuous usage model, the standard MTTF grid) with a verdict for every
/// application preset. The same function computes both, so the page and
/// the terminal show the same figures.
pub fn report_forecast(
    run: &RunResult,
    timelines: &[Timeline],
    snapshots: &[CellSnapshot],
) -> Option<ForecastReport> {
    let borrowed: Vec<CpuTimeline<'_>> = timelines.iter().map(Timeline::as_cpu_timeline).collect();
    let options = ForecastOptions {
        apps: APP_PRESETS.iter().collect(),
        ..ForecastOptions::new()
    };
    forecast_report(run, &borrowed, snapshots, &options).ok()
}

pub(super) fn forecast_section(report: Option<&ForecastReport>, notes: &[String]) -> String {
    match report {
        Some(report) => {
            let mut out: String = notes.iter().map(|n| para(n, None)).collect();
            out.push_str(&report_section(report));
            out
        }
        None => String::new(),
    }
}

/// The forecast section's content for a computed `report`: one part per
/// cell and forecast metric.
pub(super) fn report_section(report: &ForecastReport) -> String {
    let mut out = String::new();
    for c in &report.cells {
        for m in &c.metrics {
            metric_section(&mut out, c, m, report);
        }
    }
    out
}

fn metric_section(out: &mut String, c: &CellForecast, m: &MetricForecast, r: &ForecastReport) {
    let _ = write!(
        out,
        "<h3>Cell {} · {}{} · workload {}</h3>",
        c.index,
        escape(&m.name),
        escape(crate::forecast::level_of(&m.name)),
        escape(&c.workload)
    );
    out.push_str(&para(
        &format!(
            "{} {} over {:.1} s of measured time ({} CPU(s) pooled as one longer run){}.",
            m.deadlines,
            if m.per_deadline {
                "deadlines (corrected for coordinated omission)"
            } else {
                "samples"
            },
            m.measured_s,
            m.cpus.len().max(1),
            if m.tail.is_none() {
                "; beyond the data, a generalized Pareto tail fit extrapolates"
            } else {
                "; too few tail samples to extrapolate, so unseen misses give lower bounds only"
            }
        ),
        Some("note"),
    ));
    out.push_str(&worst_cases(m, r));
    out.push_str(&diagnostics_section(c.index, &m.name, &m.diagnostics));
    if let Some(grid) = &m.grid {
        out.push_str(&mttf_figure(c.index, &m.name, grid));
        out.push_str(&grid_table(grid));
    }
    out.push_str(&verdicts(&m.verdicts));
}

/// The worst case per hour, day and week, as `latscope forecast` prints it.
fn worst_cases(m: &MetricForecast, r: &ForecastReport) -> String {
    let header = [
        "horizon",
        "worst case",
        "basis",
        "interval",
        "the worst of one future horizon (prediction interval)",
        "observed windows: median, worst",
    ];
    let rows: Vec<Vec<String>> = m
        .worst_case
        .iter()
        .iter()
        .map(|(name, h)| {
            let (value, basis, interval) = match &h.estimate {
                Ok(e) => (
                    Nanos(e.latency_ns).to_string(),
                    e.provenance.as_str().to_string(),
                    format!(
                        "{} - {}",
                        Nanos(e.interval.low),
                        e.interval
                            .high
                            .map(|v| Nanos(v).to_string())
                            .unwrap_or_else(|| "-".to_string())
                    ),
                ),
                Err(why) => ("n/a".to_string(), why.to_string(), "-".to_string()),
            };
            let windows = match (&h.monitor, &h.windows) {
                (Some(m), _) => crate::blocks::monitor_blocks_phrase(name, m),
                (None, Some(w)) => format!(
                    "{} × {name}: {}, {}",
                    w.windows,
                    Nanos(w.median_ns),
                    Nanos(w.worst_ns)
                ),
                (None, None) => "-".to_string(),
            };
            let (value, basis) = match &h.monitor {
                Some(m) => (
                    m.worst.map_or_else(|| "-".to_string(), |w| w.to_string()),
                    "observed (monitor windows): the worst of them".to_string(),
                ),
                None => (value, basis),
            };
            let prediction = match &h.monitor {
                Some(_) => "-".to_string(),
                None => crate::forecast::prediction_text(&h.prediction),
            };
            vec![
                format!("per {name}"),
                value,
                basis,
                interval,
                prediction,
                windows,
            ]
        })
        .collect();
    let mut out = String::from("<h4>Worst cases: hour, day, week</h4>");
    out.push_str(&para(
        &format!(
            "The latency exceeded on average once per horizon at the measured rate, usage model {} (a day is {:.1} h and a week {:.1} h of the measured load), as latscope forecast prints it. The interval is that of the level; the prediction interval is where the largest latency of one future horizon should lie (95 %), model and parameter uncertainty included (docs/forecast-method.md, \"Prediction intervals\").",
            r.usage.name,
            r.usage.model.day_run_seconds() / 3600.0,
            r.usage.model.week_run_seconds() / 3600.0
        ),
        Some("note"),
    ));
    out.push_str(&table(&header, &rows, 1));
    out
}

/// The grid's numbers, as the terminal shows them with `--grid-csv`.
fn grid_table(g: &MttfGrid) -> String {
    let mut header = vec!["buffer \\ count".to_string()];
    header.extend(g.buffers.iter().map(|n| n.to_string()));
    let rows: Vec<Vec<String>> = g
        .periods_ns
        .iter()
        .enumerate()
        .map(|(r, p)| {
            let mut row = vec![Nanos(*p).to_string()];
            for c in 0..g.buffers.len() {
                row.push(match g.get(r, c) {
                    Some(m) => format!(
                        "{}{}",
                        if m.lower_bound { ">" } else { "" },
                        crate::forecast::seconds_text(m.mttf_s)
                    ),
                    None => "-".to_string(),
                });
            }
            row
        })
        .collect();
    table(&header, &rows, 1)
}

fn mttf_figure(cell: u32, name: &str, grid: &MttfGrid) -> String {
    let series: Vec<Series> = grid
        .buffers
        .iter()
        .enumerate()
        .map(|(col, n)| {
            let mut line = Vec::new();
            let mut hollow = Vec::new();
            for (row, &period) in grid.periods_ns.iter().enumerate() {
                if let Some(m) = grid.get(row, col) {
                    if m.mttf_s.is_finite() && m.mttf_s > 0.0 {
                        let p = (period as f64 / 1e6, m.mttf_s);
                        line.push(p);
                        if m.lower_bound {
                            hollow.push(p);
                        }
                    }
                }
            }
            Series {
                name: format!("{n} buffers"),
                mark: Mark::LineDots,
                segments: vec![line],
                hollow,
            }
        })
        .collect();
    match Plot::fit(
        &format!("cell {cell}: mean time to underrun"),
        ("buffer size (ms, log scale)", Scale::Log),
        ("mean time to underrun (s, log scale)", Scale::Log),
        series,
    ) {
        Some(p) => figure(
            &p.render(),
            &format!(
                "Mean time between buffer underruns from {name}, against the size of each buffer, one line per number of buffers; computing a buffer takes {}. Hollow points are lower bounds (no miss seen and none extrapolated).",
                compute_text(grid)
            ),
        ),
        None => String::new(),
    }
}

fn verdicts(verdicts: &[Verdict]) -> String {
    if verdicts.is_empty() {
        return String::new();
    }
    let header = [
        "application",
        "buffering",
        "target: one miss per",
        "predicted",
        "verdict",
        "basis",
        "how",
    ];
    let mut rows = Vec::new();
    for v in verdicts {
        let (what, buffering) = match AppPreset::find(&v.app) {
            Some(a) => (
                format!("{} — {}", a.name, a.description),
                format!("{} × {}", a.buffers, Nanos(a.period_ns)),
            ),
            None => (v.app.clone(), "-".to_string()),
        };
        let text = if v.pass {
            "PASS"
        } else if !v.conclusive {
            "FAIL (too short to tell)"
        } else {
            "FAIL"
        };
        rows.push(vec![
            what,
            buffering,
            seconds_text(v.target_s),
            format!(
                "{}{}",
                if v.lower_bound { "> " } else { "" },
                seconds_text(v.mttf_s)
            ),
            text.to_string(),
            v.basis.provenance.as_str().to_string(),
            v.note.clone(),
        ]);
    }
    let mut out = String::from("<h4>Application verdicts</h4>");
    let mut t = table(&header, &rows, header.len());
    // Colour the verdict cells: the table helper escapes text, so mark
    // them after rendering by their unique text.
    for (text, class) in [
        ("<td>PASS</td>", "pass"),
        ("<td>FAIL</td>", "fail"),
        ("<td>FAIL (too short to tell)</td>", "unsure"),
    ] {
        t = t.replace(
            text,
            &text.replace("<td>", &format!("<td class=\"{class}\">")),
        );
    }
    out.push_str(&t);
    out
}

/// How long computing one buffer of the grid takes.
fn compute_text(g: &MttfGrid) -> String {
    match g.compute {
        latscope_stats::forecast::Compute::Fraction(f) => {
            format!("{:.0} % of its length", f * 100.0)
        }
        latscope_stats::forecast::Compute::Nanos(n) => Nanos(n).to_string(),
    }
}
