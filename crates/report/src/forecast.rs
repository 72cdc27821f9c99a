//! `latscope forecast` for people and programs: the text the terminal
//! shows, the `latscope.forecast.v1` JSON document and the MTTF grid as
//! CSV, all from one [`ForecastReport`] (computed in `latscope_stats`).

use latscope_model::Nanos;
use latscope_stats::forecast::{
    ForecastError, ForecastReport, HorizonForecast, LatencyEstimate, MetricForecast, Mttf, MttfGrid,
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
                "\ncell {} ({}, workload {}) · {} · {} samples over {:.1} s (CPUs pooled){}\n",
                c.index,
                c.probe,
                c.workload,
                m.name,
                m.samples,
                m.measured_s,
                if m.per_deadline { ", per deadline" } else { "" }
            ));
            metric_text(&mut out, m, with_grid);
        }
    }
    out
}

fn metric_text(out: &mut String, m: &MetricForecast, with_grid: bool) {
    out.push_str("  worst case (exceeded on average once in the horizon):\n");
    for (h, f) in m.worst_case.iter() {
        out.push_str(&format!("    per {h:<5} {}\n", horizon_text(h, f)));
    }
    out.push_str("  pseudo worst case (for schedulability), one miss per:\n");
    for (label, e) in &m.pseudo_worst_case.0 {
        out.push_str(&format!("    {label:<6} {}\n", estimate_text(e)));
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
    format!("{}{windows}", estimate_text(&h.estimate))
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
