//! The forecast: for each cell's headline metric, the mean time to buffer
//! underrun against buffer size, one line per number of buffers (the data
//! of Cota-Robles & Held's Figures 6 and 7), and PASS/FAIL verdicts for the
//! application presets.
//!
//! As in `latscope forecast`, a cell's CPUs are pooled as one longer run of
//! one CPU: their samples and their time add up, so a rate is per CPU, the
//! way an application pinned to one CPU sees it.

use std::fmt::Write as _;

use latscope_model::Nanos;
use latscope_stats::forecast::{Compute, Measured, MttfGrid, TailOptions, APP_PRESETS};
use latscope_stats::{CellResult, Histogram, MetricResult, RunResult};

use super::escape::escape;
use super::page::{figure, para, seconds_text, table};
use super::svg::{Mark, Plot, Scale, Series};

/// Buffer sizes of the grid, µs.
const PERIODS_US: [u64; 9] = [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000];
/// Buffer counts of the grid, one line each.
const COUNTS: [u32; 5] = [2, 3, 4, 6, 8];
/// Compute time per buffer as a share of the buffer (the study's
/// datapump: 25 %).
const COMPUTE_FRACTION: f64 = 0.25;

/// A cell's metric with its CPUs merged, as one longer run.
fn pool(c: &CellResult, name: &str) -> Option<(MetricResult, u64)> {
    let parts: Vec<&MetricResult> = c.metrics.iter().filter(|m| m.name == name).collect();
    if parts.is_empty() {
        return None;
    }
    let mut pooled = MetricResult::new(name, None);
    let mut corrected: Option<Histogram> = None;
    for m in &parts {
        pooled.histogram.merge(&m.histogram);
        if let Some(h) = &m.corrected {
            corrected.get_or_insert_with(Histogram::new).merge(h);
        }
    }
    pooled.corrected = corrected;
    let cpus = parts.len().max(1) as u64;
    Some((pooled, cpus))
}

pub(super) fn forecast_section(run: &RunResult) -> String {
    let mut out = String::new();
    let options = TailOptions::default();
    for c in &run.cells {
        let Some(name) = super::headline_metric(&c.meta.probe) else {
            continue;
        };
        let Some((pooled, cpus)) = pool(c, name) else {
            continue;
        };
        let measured_ns = Nanos(c.meta.duration_ns.0.saturating_mul(cpus));
        if measured_ns == Nanos::ZERO || pooled.histogram.is_empty() {
            continue;
        }
        let Ok(dl) = Measured::deadlines(&pooled, measured_ns, &options) else {
            continue;
        };
        let _ = write!(
            out,
            "<h3>Cell {} · {} · workload {}</h3>",
            c.meta.index,
            escape(name),
            escape(&c.meta.workload)
        );
        out.push_str(&para(
            &format!(
                "{} {} over {:.1} s of measured time ({} CPU(s) pooled as one longer run){}.",
                dl.samples(),
                if dl.per_deadline() {
                    "deadlines (corrected for coordinated omission)"
                } else {
                    "samples"
                },
                dl.duration_s(),
                cpus,
                match dl.tail() {
                    Ok(_) => "; beyond the data, a generalized Pareto tail fit extrapolates",
                    Err(_) => "; too few tail samples to extrapolate, so unseen misses give lower bounds only",
                }
            ),
            Some("note"),
        ));
        let periods: Vec<u64> = PERIODS_US.iter().map(|p| p * 1_000).collect();
        if let Ok(grid) = dl.mttf_grid(&periods, &COUNTS, Compute::Fraction(COMPUTE_FRACTION), true)
        {
            out.push_str(&mttf_figure(c, name, &grid));
        }
        out.push_str(&verdicts(&dl));
    }
    out
}

fn mttf_figure(c: &CellResult, name: &str, grid: &MttfGrid) -> String {
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
        &format!("cell {}: mean time to underrun", c.meta.index),
        ("buffer size (ms, log scale)", Scale::Log),
        ("mean time to underrun (s, log scale)", Scale::Log),
        series,
    ) {
        Some(p) => figure(
            &p.render(),
            &format!(
                "Mean time between buffer underruns from {name}, against the size of each buffer, one line per number of buffers; computing a buffer takes {:.0} % of its length. Hollow points are lower bounds (no miss seen and none extrapolated).",
                COMPUTE_FRACTION * 100.0
            ),
        ),
        None => String::new(),
    }
}

fn verdicts(dl: &Measured<'_>) -> String {
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
    for app in APP_PRESETS {
        let v = dl.verdict(app);
        let text = if v.pass {
            "PASS"
        } else if !v.conclusive {
            "FAIL (too short to tell)"
        } else {
            "FAIL"
        };
        rows.push(vec![
            format!("{} — {}", app.name, app.description),
            format!("{} × {}", app.buffers, Nanos(app.period_ns)),
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
