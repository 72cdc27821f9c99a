//! `latscope forecast` for people and programs: the text the terminal
//! shows, the `latscope.forecast.v1` JSON document and the MTTF grid as
//! CSV, all from one [`ForecastReport`] (computed in `latscope_stats`).

use latscope_model::{metric, Nanos};
use latscope_stats::blocks::ObservedBlocks;
use latscope_stats::forecast::diagnostics::{Diagnostics, GevCheck};
use latscope_stats::forecast::history::PartForecast;
use latscope_stats::forecast::{
    ForecastError, ForecastReport, HorizonForecast, LatencyEstimate, MetricForecast, Mttf,
    MttfGrid, PredictedMax, Provenance,
};

use crate::Table;

/// The forecast as the JSON document `--json` writes (schema
/// `latscope.forecast.v1`), as a value: keys in the order serde_json keeps
/// for its maps, as they always were.
pub fn forecast_json(report: &ForecastReport) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::to_value(report)
}

/// The forecast for people: per cell and metric, the worst cases, the
/// pseudo worst cases, the buffering scheme asked for, the verdicts, and
/// the MTTF grid when `with_grid` (it is long, so it is shown on request).
pub fn forecast_text(report: &ForecastReport, with_grid: bool) -> String {
    let usage = serde_json::to_string(&report.usage.name).unwrap_or_default();
    let mut out = format!("forecast for run {} · usage model {usage}\n", report.run_id);
    for c in &report.cells {
        for m in &c.metrics {
            out.push_str(&format!(
                "\ncell {} ({}, workload {}) · {}{} · {} samples over {:.1} s ({}){}\n",
                c.index,
                c.probe,
                c.workload,
                m.name,
                level_of(&m.name),
                m.samples,
                m.measured_s,
                if m.cpus.is_empty() {
                    "all CPUs, system-wide"
                } else {
                    "CPUs pooled"
                },
                if m.per_deadline { ", per deadline" } else { "" }
            ));
            metric_text(&mut out, m, with_grid);
        }
    }
    out
}

/// What an interrupt-level metric is, in the study's terms (its Table 3
/// rows): the thread's own latency and the noise gaps need no gloss.
pub fn level_of(name: &str) -> &'static str {
    if name == metric::TIMER_IRQ {
        " (expiry → our timer's interrupt handler: interrupt level)"
    } else if name.starts_with(metric::SOFTIRQ_DELAY_PREFIX) {
        " (raise → run of the softirq: deferred-work level)"
    } else {
        ""
    }
}

fn metric_text(out: &mut String, m: &MetricForecast, with_grid: bool) {
    let check = validation_tag(&m.diagnostics);
    let tagged = |e: &Result<LatencyEstimate, ForecastError>| match e {
        Ok(est) if est.provenance == Provenance::Extrapolated => check.clone(),
        _ => String::new(),
    };
    out.push_str("  worst case (exceeded on average once in the horizon):\n");
    for (h, f) in m.worst_case.iter() {
        out.push_str(&format!(
            "    per {h:<5} {}{}\n",
            horizon_text(h, f),
            tagged(&f.estimate)
        ));
    }
    out.push_str(&predictions_text(m));
    out.push_str(&diagnostics_text(&m.diagnostics));
    out.push_str("  pseudo worst case (for schedulability), one miss per:\n");
    for (label, e) in &m.pseudo_worst_case.0 {
        out.push_str(&format!(
            "    {label:<6} {}{}\n",
            estimate_text(e),
            tagged(e)
        ));
    }
    if let Some(b) = &m.buffering {
        out.push_str(&buffering_text(b));
    }
    if !m.verdicts.is_empty() {
        let mut t = Table::new([
            "application",
            "verdict",
            "time between misses",
            "target",
            "basis",
        ]);
        for v in &m.verdicts {
            t.row([
                v.app.clone(),
                if v.pass {
                    "PASS"
                } else if !v.conclusive {
                    "too short to tell"
                } else {
                    "FAIL"
                }
                .to_string(),
                format!(
                    "{}{}",
                    if v.lower_bound { "> " } else { "" },
                    seconds_text(v.mttf_s)
                ),
                seconds_text(v.target_s),
                v.basis.provenance.as_str().to_string(),
            ]);
        }
        out.push_str(&t.render());
    }
    if with_grid {
        if let Some(g) = &m.grid {
            out.push_str(&grid_text(g));
        }
    }
    if let Some(why) = &m.tail {
        out.push_str(&format!("  (no tail fit: {why})\n"));
    }
}

/// The model behind the worst cases and its checks: the threshold and
/// shape, clusters, the block-maxima cross-check, the out-of-sample test,
/// and every failed check marked `!`. Empty when nothing was computed.
pub fn diagnostics_text(d: &Diagnostics) -> String {
    let mut out = String::new();
    if let Some(t) = &d.threshold {
        let high = t
            .shape_interval
            .high
            .map_or("unbounded".to_string(), |h| format!("{h:.2}"));
        out.push_str(&format!(
            "  tail model: generalized Pareto above {} (shape {:.2}, interval {:.2} to {high}; the lowest stable of {} thresholds)",
            Nanos(t.threshold_ns.round() as u64),
            t.shape,
            t.shape_interval.low,
            t.rungs.len()
        ));
        match &d.extremal_index {
            Some(e) => out.push_str(&format!("; extremal index {:.2}\n", e.theta)),
            None if d.checks.is_empty() => {
                out.push_str("; extremal index 1 (no per-second timeline)\n")
            }
            None => out.push_str("; extremal index 1 (too few late seconds to estimate)\n"),
        }
    }
    if let Some(g) = &d.gev {
        out.push_str(&gev_text(g));
    }
    match (&d.validation, &d.validation_skipped) {
        (Some(v), _) if v.passed => out.push_str(&format!("  {}\n", v.describe())),
        (_, Some(why)) => out.push_str(&format!("  {why}\n")),
        _ => {}
    }
    for w in &d.warnings {
        out.push_str(&format!("  ! {w}\n"));
    }
    out.push_str(&parts_text(&d.parts));
    out
}

/// The block-maxima cross-check: one line per horizon compared.
fn gev_text(g: &GevCheck) -> String {
    let mut out = format!(
        "  block maxima ({} blocks of {} s, shape {:.2}):\n",
        g.blocks, g.block_seconds, g.shape
    );
    for l in &g.levels {
        let high = l
            .level_interval
            .high
            .map_or("-".to_string(), |h| Nanos(h.round() as u64).to_string());
        out.push_str(&format!(
            "    worst case per {} {} (interval {} - {high}), {} the tail fit ({})\n",
            seconds_text(l.period_s),
            Nanos(l.level_ns.round() as u64),
            Nanos(l.level_interval.low.max(0.0).round() as u64),
            if l.agrees {
                "agrees with"
            } else {
                "DISAGREES with"
            },
            Nanos(l.pot_ns)
        ));
    }
    out
}

/// The forecasts of the parts of a run that changed, one line each.
fn parts_text(parts: &[PartForecast]) -> String {
    if parts.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("  the run changed; forecast per part (cut at stored checkpoints):\n");
    for p in parts {
        let tail = match (p.threshold_ns, p.shape) {
            (Some(u), Some(xi)) => format!("tail above {} shape {xi:.2}", Nanos(u.round() as u64)),
            _ => "no tail fit".to_string(),
        };
        out.push_str(&format!(
            "    {:.0}-{:.0} s: {} samples, max {}, {tail}\n",
            p.from_s,
            p.to_s,
            p.samples,
            Nanos(p.max_ns)
        ));
        for (label, e) in &p.pseudo_worst_case.0 {
            out.push_str(&format!("      once per {label:<6} {}\n", estimate_text(e)));
        }
    }
    out
}

/// What the out-of-sample test says, for the end of every extrapolated
/// figure: ` [validated at 509µs, p = 0.47]`, ` [validation failed at
/// 509µs, p = 1.00e-3]` or ` [not validated]` (the reason is printed under
/// the worst cases). The level says how far up the tail the model was
/// tested: a figure far above it rests on the model alone.
fn validation_tag(d: &Diagnostics) -> String {
    match &d.validation {
        Some(v) if v.passed => format!(
            " [validated at {}, p = {:.2}]",
            Nanos(v.level_ns),
            v.p_value
        ),
        Some(v) => format!(
            " [validation failed at {}, p = {:.2e}]",
            Nanos(v.level_ns),
            v.p_value
        ),
        None if d.validation_skipped.is_some() => " [not validated]".to_string(),
        None => String::new(),
    }
}

/// One horizon's worst case, with the observed window maxima beside it.
pub fn horizon_text(name: &str, h: &HorizonForecast) -> String {
    let windows = match &h.windows {
        Some(w) => format!(
            "; observed over {} whole {name}s: median {} worst {}",
            w.windows,
            Nanos(w.median_ns),
            Nanos(w.worst_ns)
        ),
        None => String::new(),
    };
    if let Some(m) = &h.monitor {
        // Observed over the whole monitor: neither the model nor the
        // windows of the part whose timeline is kept add to it.
        return crate::blocks::monitor_blocks_phrase(name, m);
    }
    format!("{}{windows}", estimate_text(&h.estimate))
}

/// The prediction intervals of the largest latency of one future hour, day
/// and week; empty when every horizon was observed by a monitor.
fn predictions_text(m: &MetricForecast) -> String {
    let lines: Vec<String> = m
        .worst_case
        .iter()
        .iter()
        .filter(|(_, h)| h.monitor.is_none())
        .map(|(name, h)| format!("    next {name:<5} {}\n", prediction_text(&h.prediction)))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let confidence = m
        .worst_case
        .iter()
        .iter()
        .find_map(|(_, h)| h.prediction.as_ref().ok().map(|p| p.confidence))
        .unwrap_or(0.95);
    format!(
        "  the worst of one future horizon ({:.0} % prediction interval):\n{}",
        confidence * 100.0,
        lines.concat()
    )
}

/// `2.1ms - 9.8ms (median 4.0ms)`, or `n/a (why)`; `(shape and scale
/// not integrated)` when only the cluster rate's uncertainty was.
pub fn prediction_text(p: &Result<PredictedMax, ForecastError>) -> String {
    match p {
        Ok(p) => format!(
            "{} - {} (median {}){}",
            Nanos(p.low_ns),
            p.high_ns
                .map(|h| Nanos(h).to_string())
                .unwrap_or_else(|| "unbounded".to_string()),
            Nanos(p.median_ns),
            if p.parameter_uncertainty {
                ""
            } else {
                " (shape and scale uncertainty not integrated: too narrow)"
            }
        ),
        Err(why) => format!("n/a ({why})"),
    }
}

/// `812µs (extrapolated; interval 700µs - 990µs)`, or `n/a (why)`.
pub fn estimate_text(e: &Result<LatencyEstimate, ForecastError>) -> String {
    match e {
        Ok(est) => format!(
            "{} ({}; interval {} - {})",
            Nanos(est.latency_ns),
            est.provenance.as_str(),
            Nanos(est.interval.low),
            est.interval
                .high
                .map(|h| Nanos(h).to_string())
                .unwrap_or_else(|| "-".to_string())
        ),
        Err(why) => format!("n/a ({why})"),
    }
}

fn buffering_text(b: &Mttf) -> String {
    format!(
        "  buffering {} x {} (slack {}): {} misses in {} deadlines; mean time to underrun {}{:.3} s ({})\n",
        b.scheme.buffers,
        Nanos(b.scheme.period_ns),
        Nanos(u64::try_from(b.slack_ns.max(0)).unwrap_or(0)),
        b.misses,
        b.deadlines,
        if b.lower_bound { "more than " } else { "" },
        b.mttf_s,
        b.provenance.as_str(),
    )
}

/// The MTTF grid as a table: buffer sizes down, buffer counts across, each
/// entry the mean time to underrun (">" for lower bounds), the text form of
/// the study's Figures 6 and 7.
pub fn grid_text(g: &MttfGrid) -> String {
    let mut header = vec!["buffer \\ count".to_string()];
    header.extend(g.buffers.iter().map(|c| c.to_string()));
    let mut t = Table::new(header);
    for (r, period) in g.periods_ns.iter().enumerate() {
        let mut row = vec![Nanos(*period).to_string()];
        for c in 0..g.buffers.len() {
            row.push(match g.get(r, c) {
                Some(m) => format!(
                    "{}{}",
                    if m.lower_bound { ">" } else { "" },
                    seconds_text(m.mttf_s)
                ),
                None => "-".to_string(),
            });
        }
        t.row(row);
    }
    format!(
        "  mean time to underrun over buffer sizes and counts ({}):\n{}",
        compute_text(g),
        t.render()
    )
}

fn compute_text(g: &MttfGrid) -> String {
    match g.compute {
        latscope_stats::forecast::Compute::Fraction(f) => {
            format!("computing a buffer takes {:.0} % of its length", f * 100.0)
        }
        latscope_stats::forecast::Compute::Nanos(n) => {
            format!("computing a buffer takes {}", Nanos(n))
        }
    }
}

/// Every grid of the report as CSV: one line per cell, metric, buffer size
/// and count.
pub fn grid_csv(report: &ForecastReport) -> String {
    let mut text = String::from("cell,metric,period_ns,buffers,mttf_s,lower_bound,provenance\n");
    for c in &report.cells {
        for m in &c.metrics {
            let Some(grid) = &m.grid else { continue };
            for (r, period) in grid.periods_ns.iter().enumerate() {
                for (col, n) in grid.buffers.iter().enumerate() {
                    if let Some(x) = grid.get(r, col) {
                        text.push_str(&format!(
                            "{},{},{},{},{:.6e},{},{}\n",
                            c.index,
                            m.name,
                            period,
                            n,
                            x.mttf_s,
                            x.lower_bound,
                            x.provenance.as_str()
                        ));
                    }
                }
            }
        }
    }
    text
}

/// Seconds for reading: `0.500 s`, `4.2 min`, `1.5 h`, `2.0 d`, `never`.
pub fn seconds_text(s: f64) -> String {
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

/// The document of `forecast --json`: the report, the monitor's observed
/// blocks (`observed_blocks`, when it has them) and where each cut cell's
/// part starts (`model_fitted_from`, see [`model_cuts_text`]).
pub fn forecast_document(
    report: &ForecastReport,
    observed: Option<&ObservedBlocks>,
    cuts: &[(u32, Nanos, Nanos)],
) -> Result<serde_json::Value, serde_json::Error> {
    let mut doc = forecast_json(report)?;
    if let Some(map) = doc.as_object_mut() {
        if let Some(o) = observed {
            map.insert("observed_blocks".into(), serde_json::to_value(o)?);
        }
        let parts: Vec<serde_json::Value> = cuts
            .iter()
            .map(|(cell, from, _)| serde_json::json!({"cell": cell, "from_ns": from.0}))
            .collect();
        map.insert("model_fitted_from".into(), parts.into());
    }
    Ok(doc)
}

/// The text of `forecast`: the cut cells' lines, the report
/// ([`forecast_text`]), and the monitor's observed blocks of the wake-up
/// latency when it has them.
pub fn forecast_document_text(
    report: &ForecastReport,
    with_grid: bool,
    observed: Option<&ObservedBlocks>,
    cuts: &[(u32, Nanos, Nanos)],
) -> String {
    let mut t = model_cuts_text(cuts);
    t.push_str(&forecast_text(report, with_grid));
    if let Some(o) = observed {
        t.push_str(&crate::observed_blocks_text(metric::TIMER_LATENCY, o));
    }
    t
}

/// The lines saying which part of each cut cell the model was fitted to:
/// `(cell index, cell time of the cut, the cell's duration)` of each cell
/// whose oldest seconds the retention deleted.
pub fn model_cuts_text(cuts: &[(u32, Nanos, Nanos)]) -> String {
    cuts.iter()
        .map(|&(cell, from, duration)| {
            format!(
                "cell {cell}: tail model fitted to the last {:.1} h of {:.1} h (the part whose per-second timeline is still stored); worst cases observed over the whole run are read from the monitor's windows\n",
                duration.0.saturating_sub(from.0) as f64 / 3.6e12,
                duration.0 as f64 / 3.6e12,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use latscope_stats::forecast::{
        Basis, BufferScheme, CellForecast, Compute, GridSpec, Horizon, Interval, Provenance,
        PseudoWorstCases, UsageModel, UsageReport, Verdict, WindowMaxima, WorstCases,
        FORECAST_SCHEMA,
    };

    use super::*;

    fn estimate(ns: u64, provenance: Provenance, low: u64, high: Option<u64>) -> LatencyEstimate {
        LatencyEstimate {
            latency_ns: ns,
            provenance,
            interval: Interval {
                low,
                high,
                confidence: 0.95,
            },
            events: 3.6e6,
            expected_in_run: 0.5,
        }
    }

    fn horizon(
        h: Horizon,
        e: Result<LatencyEstimate, ForecastError>,
        windows: Option<WindowMaxima>,
    ) -> HorizonForecast {
        HorizonForecast {
            horizon: h,
            usage: UsageModel::CONTINUOUS,
            run_seconds: h.run_seconds(&UsageModel::CONTINUOUS),
            events: 1.0,
            estimate: e,
            prediction: Err(ForecastError::EmptyHistogram),
            windows,
            monitor: None,
        }
    }

    fn mttf(period_ns: u64, buffers: u32, mttf_s: f64, lower_bound: bool) -> Mttf {
        let scheme = BufferScheme::new(period_ns, buffers, Compute::Nanos(750_000)).unwrap();
        Mttf {
            scheme,
            slack_ns: scheme.slack_ns(),
            p_miss: 0.0,
            misses: 0,
            deadlines: 20_000,
            mttf_s,
            lower_bound,
            provenance: Provenance::Observed,
            interval_s: Interval {
                low: mttf_s / 2.0,
                high: None,
                confidence: 0.95,
            },
        }
    }

    /// The report of the old untyped test document, typed.
    fn report() -> ForecastReport {
        let few = || {
            Err(ForecastError::TooFewTailSamples {
                exceedances: 3,
                needed: 50,
                threshold_ns: 40_000,
            })
        };
        let weekly = WindowMaxima {
            window_s: 604_800,
            windows: 2,
            median_ns: 30_000,
            worst_ns: 40_000,
            maxima_ns: vec![20_000, 40_000],
            empty_seconds: 0,
        };
        let grid = MttfGrid {
            periods_ns: vec![1_000_000, 2_000_000],
            buffers: vec![2, 3],
            compute: Compute::Fraction(0.25),
            cells: vec![
                vec![
                    mttf(1_000_000, 2, 0.5, false),
                    mttf(1_000_000, 3, 10.0, false),
                ],
                vec![
                    mttf(2_000_000, 2, 4.0, false),
                    mttf(2_000_000, 3, 20.0, true),
                ],
            ],
        };
        let verdict = Verdict {
            app: "control-1khz".into(),
            pass: false,
            conclusive: true,
            mttf_s: 0.5,
            lower_bound: false,
            mttf_interval_s: Interval {
                low: 0.4,
                high: Some(0.6),
                confidence: 0.95,
            },
            target_s: 86_400.0,
            slack_ns: 250_000,
            basis: Basis {
                samples: 20_000,
                duration_s: 20.0,
                misses: 40,
                provenance: Provenance::Observed,
                per_deadline: true,
                tail: None,
            },
            note: String::new(),
        };
        let m = MetricForecast {
            name: "timer.latency".into(),
            cpus: vec![0],
            samples: 20_000,
            deadlines: 20_000,
            measured_s: 20.0,
            per_deadline: true,
            exceedance: vec![(1_000, 1.0)],
            worst_case: WorstCases {
                hour: horizon(
                    Horizon::Hour,
                    Ok(estimate(
                        812_000,
                        Provenance::Extrapolated,
                        700_000,
                        Some(990_000),
                    )),
                    None,
                ),
                day: horizon(Horizon::Day, few(), None),
                week: horizon(
                    Horizon::Week,
                    Ok(estimate(20_000, Provenance::Observed, 19_000, Some(21_000))),
                    Some(weekly),
                ),
            },
            pseudo_worst_case: PseudoWorstCases(vec![
                (
                    "10min",
                    Ok(estimate(500_000, Provenance::Observed, 1, None)),
                ),
                ("hour", few()),
                ("day", few()),
            ]),
            buffering: Some(mttf(1_000_000, 2, 20.0, true)),
            verdicts: vec![verdict],
            grid: Some(grid),
            tail: Some("too few samples".into()),
            diagnostics: Default::default(),
        };
        ForecastReport {
            schema: FORECAST_SCHEMA,
            run_id: 7,
            usage: UsageReport {
                name: "office".into(),
                model: UsageModel::CONTINUOUS,
            },
            cells: vec![CellForecast {
                index: 0,
                probe: "timer".into(),
                workload: "cpu".into(),
                metrics: vec![m],
            }],
        }
    }

    const FEW: &str = "n/a (too few samples in the tail to extrapolate: 3 above 40000 ns, need 50)";

    #[test]
    fn text_of_a_forecast_snapshot() {
        let want = format!(
            "forecast for run 7 · usage model \"office\"

cell 0 (timer, workload cpu) · timer.latency · 20000 samples over 20.0 s (CPUs pooled), per deadline
  worst case (exceeded on average once in the horizon):
    per hour  812µs (extrapolated; interval 700µs - 990µs)
    per day   {FEW}
    per week  20.0µs (observed; interval 19.0µs - 21.0µs); observed over 2 whole weeks: median 30.0µs worst 40.0µs
  the worst of one future horizon (95 % prediction interval):
    next hour  2.10ms - 9.80ms (median 4.00ms)
    next day   n/a (no samples)
    next week  n/a (no samples)
  pseudo worst case (for schedulability), one miss per:
    10min  500µs (observed; interval 1ns - -)
    hour   {FEW}
    day    {FEW}
  buffering 2 x 1.00ms (slack 250µs): 0 misses in 20000 deadlines; mean time to underrun more than 20.000 s (observed)
application   verdict  time between misses  target     basis
control-1khz     FAIL              0.500 s   1.0 d  observed
  (no tail fit: too few samples)
"
        );
        let mut r = report();
        r.cells[0].metrics[0].worst_case.hour.prediction = Ok(PredictedMax {
            window_s: 3600.0,
            events: 3.6e6,
            clusters_expected: 40.0,
            median_ns: 4_000_000,
            low_ns: 2_100_000,
            high_ns: Some(9_800_000),
            confidence: 0.95,
            parameter_uncertainty: true,
        });
        let text = forecast_text(&r, false);
        assert_eq!(text, want, "got:\n{text}");
    }

    #[test]
    fn extrapolated_figures_carry_the_out_of_sample_verdict() {
        use latscope_stats::forecast::diagnostics::{Validation, ValidationMethod};
        let mut r = report();
        r.cells[0].metrics[0].diagnostics.validation = Some(Validation {
            method: ValidationMethod::SecondMaxima,
            fit_seconds: 200,
            test_seconds: 100,
            level_ns: 509_378,
            predicted: 10.0,
            observed: 9,
            p_value: 0.47,
            passed: true,
        });
        let text = forecast_text(&r, false);
        assert!(
            text.contains(
                "per hour  812µs (extrapolated; interval 700µs - 990µs) [validated at 509µs, p = 0.47]\n"
            ),
            "{text}"
        );
        // Observed figures carry no tag.
        assert!(text.contains("interval 19.0µs - 21.0µs); observed over 2 whole weeks: median 30.0µs worst 40.0µs\n"), "{text}");
        assert!(text.contains(
            "  validated: per-second maxima of the first 200 seconds; seconds of the other 100 above 509.4 µs: predicted 10.0, observed 9, p = 0.47\n"
        ), "{text}");
        let v = r.cells[0].metrics[0]
            .diagnostics
            .validation
            .as_mut()
            .unwrap();
        v.passed = false;
        v.p_value = 0.001;
        let text = forecast_text(&r, false);
        assert!(
            text.contains("[validation failed at 509µs, p = 1.00e-3]"),
            "{text}"
        );
    }

    /// The block-maxima check prints a line per horizon, and a run that
    /// changed prints its parts with their own pseudo worst cases.
    #[test]
    fn block_maxima_levels_and_parts_are_printed() {
        use latscope_stats::forecast::diagnostics::{Diagnostics, GevCheck, GevLevel};
        use latscope_stats::forecast::history::PartForecast;
        use latscope_stats::forecast::PseudoWorstCases;
        let level = |period_s: f64, ns: f64, agrees: bool| GevLevel {
            period_s,
            level_ns: ns,
            level_interval: Interval {
                low: ns * 0.8,
                high: Some(ns * 1.5),
                confidence: 0.95,
            },
            pot_ns: 900_000,
            pot_interval: Interval {
                low: 800_000,
                high: Some(1_000_000),
                confidence: 0.95,
            },
            agrees,
        };
        let part = |from_s: f64, to_s: f64, max_ns: u64| PartForecast {
            from_s,
            to_s,
            samples: 1000,
            max_ns,
            threshold_ns: Some(50_000.0),
            shape: Some(0.1),
            pseudo_worst_case: PseudoWorstCases(vec![(
                "10min",
                Ok(estimate(
                    max_ns,
                    Provenance::Extrapolated,
                    max_ns / 2,
                    Some(max_ns * 2),
                )),
            )]),
        };
        let d = Diagnostics {
            gev: Some(GevCheck {
                block_seconds: 60,
                blocks: 120,
                location_ns: 1.0,
                scale_ns: 1.0,
                shape: 0.05,
                levels: vec![
                    level(3600.0, 1_000_000.0, true),
                    level(86_400.0, 3_000_000.0, false),
                ],
                agrees: false,
            }),
            parts: vec![part(0.0, 300.0, 100_000), part(300.0, 600.0, 2_000_000)],
            ..Diagnostics::default()
        };
        let text = diagnostics_text(&d);
        assert!(text.contains("  block maxima (120 blocks of 60 s, shape 0.05):\n    worst case per 1.0 h 1.00ms (interval 800µs - 1.50ms), agrees with the tail fit (900µs)\n    worst case per 1.0 d 3.00ms (interval 2.40ms - 4.50ms), DISAGREES with the tail fit (900µs)\n"), "{text}");
        assert!(text.contains("  the run changed; forecast per part (cut at stored checkpoints):\n    0-300 s: 1000 samples, max 100µs, tail above 50.0µs shape 0.10\n      once per 10min  100µs (extrapolated; interval"), "{text}");
        assert!(
            text.contains("    300-600 s: 1000 samples, max 2.00ms"),
            "{text}"
        );
    }

    #[test]
    fn the_grid_is_shown_on_request_and_written_as_csv() {
        let r = report();
        let text = forecast_text(&r, true);
        let grid = "  mean time to underrun over buffer sizes and counts (computing a buffer takes 25 % of its length):
buffer \\ count        2          3
1.00ms          0.500 s   10.000 s
2.00ms          4.000 s  >20.000 s
";
        assert!(text.contains(grid), "got:\n{text}");
        assert!(!forecast_text(&r, false).contains("buffer \\ count"));
        let csv = grid_csv(&r);
        assert_eq!(
            csv,
            "cell,metric,period_ns,buffers,mttf_s,lower_bound,provenance
0,timer.latency,1000000,2,5.000000e-1,false,observed
0,timer.latency,1000000,3,1.000000e1,false,observed
0,timer.latency,2000000,2,4.000000e0,false,observed
0,timer.latency,2000000,3,2.000000e1,true,observed
"
        );
        // The grid a real forecast uses is the standard one.
        assert_eq!(GridSpec::standard().buffers, vec![2, 3, 4, 6, 8]);
    }

    #[test]
    fn json_keeps_the_documented_keys() {
        let v = forecast_json(&report()).unwrap();
        assert_eq!(v["schema"], "latscope.forecast.v1");
        assert_eq!(v["usage"]["name"], "office");
        let m = &v["cells"][0]["metrics"][0];
        for key in [
            "name",
            "cpus",
            "samples",
            "measured_s",
            "per_deadline",
            "exceedance",
            "worst_case",
            "pseudo_worst_case",
            "buffering",
            "verdicts",
            "grid",
            "tail",
        ] {
            assert!(m.get(key).is_some(), "no {key} in {m}");
        }
        let hour = &m["worst_case"]["hour"];
        assert_eq!(hour["latency_ns"], 812_000);
        assert_eq!(hour["observed"], false);
        assert_eq!(hour["provenance"], "extrapolated");
        assert_eq!(hour["interval"]["high"], 990_000);
        assert_eq!(hour["run_seconds"], 3600.0);
        assert!(hour.get("observed_windows").is_none());
        let day = &m["worst_case"]["day"];
        assert!(day["latency_ns"].is_null());
        assert!(day["error"]
            .as_str()
            .unwrap()
            .starts_with("too few samples"));
        assert_eq!(
            m["worst_case"]["week"]["observed_windows"]["worst_ns"],
            40_000
        );
        assert!(m["pseudo_worst_case"]["10min"]["interval"]["high"].is_null());
        let b = &m["buffering"];
        for key in [
            "period_ns",
            "buffers",
            "slack_ns",
            "p_miss",
            "misses",
            "deadlines",
            "mttf_s",
            "lower_bound",
            "provenance",
            "interval_s",
        ] {
            assert!(b.get(key).is_some(), "no {key} in {b}");
        }
        assert_eq!(b["slack_ns"], 250_000);
        assert_eq!(m["grid"]["mttf_s"][1][0], 4.0);
        assert_eq!(m["grid"]["lower_bound"][1][1], true);
        assert_eq!(m["verdicts"][0]["app"], "control-1khz");
        assert_eq!(m["verdicts"][0]["basis"]["provenance"], "observed");
    }
}
