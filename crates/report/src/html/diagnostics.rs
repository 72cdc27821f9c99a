//! The diagnostics of one metric's forecast: the checks that failed (in
//! words) or that all passed, the out-of-sample validation, and three plots
//! to judge the tail fit by eye — threshold stability (ξ̂ against the
//! threshold), return levels (model against the per-second maxima) and a
//! Q-Q plot of the excesses.
//!
//! The data come precomputed in
//! [`latscope_stats::forecast::diagnostics::Diagnostics`]; this module only
//! draws them, with the report's plotting kit ([`super::svg`]). The kit has
//! no dashed lines or interval bars, so interval bars are series of
//! two-point segments and reference lines are series dashed after
//! rendering ([`dashed`]).

use std::fmt::Write as _;

use latscope_model::Nanos;
use latscope_stats::forecast::diagnostics::{
    Diagnostics, GevCheck, ReturnLevel, ThresholdDiagnostics,
};
use latscope_stats::forecast::history::PartForecast;
use latscope_stats::forecast::{ForecastError, LatencyEstimate, Provenance};

use super::escape::escape;
use super::page::{figure, para, seconds_text, table, us};
use super::svg::{Axis, Mark, Plot, Scale, Series};

/// The dash pattern of reference lines and extrapolated curves.
const DASH: &str = "6 4";
/// Room above the data, as a share of their span, for a legend of up to
/// four entries (it covers about the top 30 % of the plot's right side).
const LEGEND_ROOM: f64 = 0.45;
/// The same for a legend of two entries.
const SMALL_LEGEND_ROOM: f64 = 0.25;

/// The "Forecast diagnostics" block of metric `name` of cell `cell`: always
/// present, whatever `d` holds.
pub(super) fn diagnostics_section(cell: u32, name: &str, d: &Diagnostics) -> String {
    let mut out = String::from("<div class=\"diagnostics\"><h4>Forecast diagnostics</h4>");
    out.push_str(&checks(d));
    out.push_str(&parts_table(&d.parts));
    out.push_str(&gev_table(d.gev.as_ref()));
    out.push_str(&threshold_figure(cell, name, d.threshold.as_ref()));
    out.push_str(&return_level_figure(
        cell,
        name,
        &d.return_levels,
        &d.observed_points,
    ));
    out.push_str(&qq_figure(cell, name, &d.qq));
    out.push_str("</div>");
    out
}

/// The warnings as a list (or that all checks passed), then the validation
/// line or why there is none.
fn checks(d: &Diagnostics) -> String {
    let mut out = String::new();
    if d.warnings.is_empty() {
        out.push_str(&para("All checks passed.", Some("pass")));
    } else {
        out.push_str("<ul class=\"warnings\">");
        for w in &d.warnings {
            let _ = write!(out, "<li>{}</li>", escape(w));
        }
        out.push_str("</ul>");
    }
    match (&d.validation, &d.validation_skipped) {
        (Some(v), _) => out.push_str(&para(
            &v.describe(),
            Some(if v.passed { "pass" } else { "fail" }),
        )),
        (None, Some(why)) => out.push_str(&para(why, Some("note"))),
        (None, None) => {}
    }
    out
}

/// `812µs (700µs - 990µs, extrapolated)` or `n/a: why`.
fn estimate_cell(e: &Result<LatencyEstimate, ForecastError>) -> String {
    match e {
        Ok(e) => format!(
            "{} ({} - {}, {})",
            Nanos(e.latency_ns),
            Nanos(e.interval.low),
            e.interval
                .high
                .map_or("-".to_string(), |h| Nanos(h).to_string()),
            e.provenance.as_str()
        ),
        Err(why) => format!("n/a: {why}"),
    }
}

/// The forecasts of the parts of a run that changed, when it did.
fn parts_table(parts: &[PartForecast]) -> String {
    let Some(first) = parts.first() else {
        return String::new();
    };
    let mut header = vec!["part".to_string(), "samples".to_string(), "max".to_string()];
    header.extend(
        first
            .pseudo_worst_case
            .0
            .iter()
            .map(|(label, _)| format!("once per {label}")),
    );
    let rows: Vec<Vec<String>> = parts
        .iter()
        .map(|p| {
            let mut row = vec![
                format!("{:.0}-{:.0} s", p.from_s, p.to_s),
                p.samples.to_string(),
                Nanos(p.max_ns).to_string(),
            ];
            row.extend(p.pseudo_worst_case.0.iter().map(|(_, e)| estimate_cell(e)));
            row
        })
        .collect();
    let mut out = String::from("<h5>Forecast per part</h5>");
    out.push_str(&para(
        "The run changed (see the warnings): each part between its change points, moved to the nearest stored checkpoint, has its own checked model.",
        Some("note"),
    ));
    out.push_str(&table(&header, &rows, 1));
    out
}

/// The block-maxima model against the tail fit, per horizon.
fn gev_table(g: Option<&GevCheck>) -> String {
    let Some(g) = g else {
        return String::new();
    };
    let rows: Vec<Vec<String>> = g
        .levels
        .iter()
        .map(|l| {
            vec![
                format!("per {}", seconds_text(l.period_s)),
                format!(
                    "{} ({} - {})",
                    Nanos(l.level_ns.round() as u64),
                    Nanos(l.level_interval.low.max(0.0).round() as u64),
                    l.level_interval
                        .high
                        .map_or("-".to_string(), |h| Nanos(h.round() as u64).to_string())
                ),
                format!(
                    "{} ({} - {})",
                    Nanos(l.pot_ns),
                    Nanos(l.pot_interval.low),
                    l.pot_interval
                        .high
                        .map_or("-".to_string(), |h| Nanos(h).to_string())
                ),
                if l.agrees { "agree" } else { "DISAGREE" }.to_string(),
            ]
        })
        .collect();
    let mut out = String::from("<h5>Block maxima against the tail fit</h5>");
    out.push_str(&para(
        &format!(
            "A generalized extreme value fit to {} maxima of {} s blocks (shape {:.2}) beside the peaks-over-threshold model; their intervals should overlap.",
            g.blocks, g.block_seconds, g.shape
        ),
        Some("note"),
    ));
    out.push_str(&table(
        &["horizon", "block maxima", "tail fit", "models"],
        &rows,
        1,
    ));
    out
}

/// "95 %" for a confidence of 0.95.
fn percent(confidence: f64) -> String {
    format!("{:.0} %", confidence * 100.0)
}

/// The series of vertical bars from `(x, low)` to `(x, high)`, `high: None`
/// reaching `top`.
fn bars(name: &str, spans: impl IntoIterator<Item = (f64, f64, Option<f64>)>, top: f64) -> Series {
    Series {
        name: name.to_string(),
        mark: Mark::Line,
        segments: spans
            .into_iter()
            .map(|(x, low, high)| vec![(x, low), (x, high.unwrap_or(top))])
            .collect(),
        hollow: Vec::new(),
    }
}

/// `svg` (from [`Plot::render`]) with the series named `name`, and its
/// line in the legend, drawn dashed.
fn dashed(svg: &str, name: &str) -> String {
    let name = escape(name);
    let mut out = svg.replacen(
        &format!("<g class=\"series\"><title>{name}</title>"),
        &format!("<g class=\"series\" stroke-dasharray=\"{DASH}\"><title>{name}</title>"),
        1,
    );
    let label = format!("class=\"tick\">{name}</text>");
    let legend_line = out.find("<g class=\"legend\">").and_then(|legend| {
        let at = legend + out[legend..].find(&label)?;
        out[legend..at]
            .rfind("stroke-width=\"3\"")
            .map(|i| legend + i)
    });
    if let Some(i) = legend_line {
        out.insert_str(i, &format!("stroke-dasharray=\"{DASH}\" "));
    }
    out
}

/// `values` and one value more, `share` of their span (in decades on a log
/// scale) above the largest, so that the legend in the top right corner
/// hides no data.
fn with_headroom(mut values: Vec<f64>, scale: Scale, share: f64) -> Vec<f64> {
    let (lo, hi) = values
        .iter()
        .filter(|v| v.is_finite() && (scale == Scale::Linear || **v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if lo < hi {
        values.push(match scale {
            Scale::Linear => hi + share * (hi - lo),
            Scale::Log => hi * (hi / lo).powf(share),
        });
    }
    values
}

/// Why a plot is missing, in one sentence.
fn skipped(text: &str) -> String {
    para(text, Some("note"))
}

/// ξ̂ against the threshold, each rung with its interval, the chosen rung
/// highlighted and the line ξ = 1 (an infinite mean) dashed.
fn threshold_figure(cell: u32, name: &str, t: Option<&ThresholdDiagnostics>) -> String {
    const NONE: &str =
        "No threshold stability plot: too few tail samples for a ladder of thresholds.";
    const INFINITE: &str = "ξ = 1: infinite mean";
    let Some(t) = t.filter(|t| !t.rungs.is_empty()) else {
        return skipped(NONE);
    };
    let x = |ns: f64| ns / 1e3;
    let Some(x_axis) = Axis::fit(
        "threshold (µs, log scale)",
        Scale::Log,
        t.rungs
            .iter()
            .map(|r| x(r.threshold_ns))
            .collect::<Vec<_>>(),
    ) else {
        return skipped(NONE);
    };
    let ys = t.rungs.iter().flat_map(|r| {
        [r.shape, r.shape_interval.low]
            .into_iter()
            .chain(r.shape_interval.high)
    });
    let Some(y_axis) = Axis::fit(
        "shape ξ",
        Scale::Linear,
        with_headroom(ys.chain([1.0]).collect(), Scale::Linear, LEGEND_ROOM),
    ) else {
        return skipped(NONE);
    };
    let confidence = t.rungs[0].shape_interval.confidence;
    let interval_name = format!("{} interval", percent(confidence));
    let chosen = t.rungs.get(t.chosen);
    let others = t
        .rungs
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != t.chosen)
        .map(|(_, r)| {
            (
                x(r.threshold_ns),
                r.shape_interval.low,
                r.shape_interval.high,
            )
        });
    let mut series = vec![
        Series::new(
            "ξ̂ per threshold",
            Mark::LineDots,
            t.rungs
                .iter()
                .map(|r| (x(r.threshold_ns), r.shape))
                .collect(),
        ),
        bars(&interval_name, others, y_axis.max),
    ];
    if let Some(r) = chosen {
        let mut s = bars(
            "chosen threshold",
            [(
                x(r.threshold_ns),
                r.shape_interval.low,
                r.shape_interval.high,
            )],
            y_axis.max,
        );
        s.hollow.push((x(r.threshold_ns), r.shape));
        series.push(s);
    }
    series.push(Series::new(
        INFINITE,
        Mark::Line,
        vec![(x_axis.min, 1.0), (x_axis.max, 1.0)],
    ));
    series.retain(|s| s.segments.iter().any(|seg| !seg.is_empty()));
    let plot = Plot {
        title: format!("{name}, cell {cell}: threshold stability"),
        x: x_axis,
        y: y_axis,
        series,
    };
    let mut caption = format!(
        "Threshold stability: the shape ξ̂ of the generalized Pareto tail fitted above each threshold of the ladder, with its {} profile-likelihood interval (a bar reaching the top is not bounded above).",
        percent(confidence)
    );
    if let Some(r) = chosen {
        let _ = write!(
            caption,
            " The chosen threshold (ringed), {}, is the lowest whose ξ̂ lies inside the interval of every threshold above it: ξ̂ = {:.2}, interval {:.2} to {}.",
            Nanos(r.threshold_ns.max(0.0).round() as u64),
            r.shape,
            r.shape_interval.low,
            r.shape_interval
                .high
                .map_or_else(|| "unbounded".to_string(), |h| format!("{h:.2}"))
        );
    }
    if let Some(s) = t.mean_excess_shape {
        let _ = write!(
            caption,
            " The slope of the mean excess above it gives ξ ≈ {s:.2}."
        );
    }
    caption.push_str(" Above the dashed line ξ = 1 the tail has an infinite mean.");
    figure(&dashed(&plot.render(), INFINITE), &caption)
}

/// A line's points in segments, as [`Series::segments`].
type Segments = Vec<Vec<(f64, f64)>>;

/// The return levels' points, split by provenance into segments: a step
/// between two levels is extrapolated when either end is, so the two lines
/// meet.
fn return_level_lines(levels: &[ReturnLevel]) -> (Segments, Segments) {
    let point = |l: &ReturnLevel| (l.seconds, us(l.latency_ns));
    let extrapolated = |l: &ReturnLevel| l.provenance == Provenance::Extrapolated;
    let mut observed: Segments = Vec::new();
    let mut beyond: Segments = Vec::new();
    if let [only] = levels {
        if extrapolated(only) {
            beyond.push(vec![point(only)]);
        } else {
            observed.push(vec![point(only)]);
        }
    }
    for w in levels.windows(2) {
        let (a, b) = (point(&w[0]), point(&w[1]));
        let lines = if extrapolated(&w[0]) || extrapolated(&w[1]) {
            &mut beyond
        } else {
            &mut observed
        };
        match lines.last_mut() {
            Some(seg) if seg.last() == Some(&a) => seg.push(b),
            _ => lines.push(vec![a, b]),
        }
    }
    (observed, beyond)
}

/// The model's return levels (solid where observed, dashed where
/// extrapolated) with their intervals as bars, and the per-second maxima
/// at their empirical return periods as dots.
fn return_level_figure(
    cell: u32,
    name: &str,
    levels: &[ReturnLevel],
    observed_points: &[(f64, u64)],
) -> String {
    const NONE: &str = "No return-level plot: too few per-second maxima and no tail fit.";
    const OBSERVED: &str = "return level, observed";
    const EXTRAPOLATED: &str = "return level, extrapolated";
    if levels.is_empty() && observed_points.is_empty() {
        return skipped(NONE);
    }
    let xs = levels
        .iter()
        .map(|l| l.seconds)
        .chain(observed_points.iter().map(|p| p.0));
    let Some(x_axis) = Axis::fit(
        "return period (s of measured load per CPU, log scale)",
        Scale::Log,
        xs.collect::<Vec<_>>(),
    ) else {
        return skipped(NONE);
    };
    let ys = levels
        .iter()
        .flat_map(|l| {
            [l.latency_ns, l.interval.low]
                .into_iter()
                .chain(l.interval.high)
        })
        .chain(observed_points.iter().map(|p| p.1))
        .map(us);
    let Some(y_axis) = Axis::fit(
        "latency (µs, log scale)",
        Scale::Log,
        with_headroom(ys.collect(), Scale::Log, LEGEND_ROOM),
    ) else {
        return skipped(NONE);
    };
    let confidence = levels.first().map_or(0.95, |l| l.interval.confidence);
    let (observed, beyond) = return_level_lines(levels);
    let interval = bars(
        &format!("{} interval", percent(confidence)),
        levels.iter().map(|l| {
            (
                l.seconds,
                us(l.interval.low).max(y_axis.min),
                l.interval.high.map(us),
            )
        }),
        y_axis.max,
    );
    let mut series = vec![
        Series {
            name: OBSERVED.to_string(),
            mark: Mark::LineDots,
            segments: observed,
            hollow: Vec::new(),
        },
        Series {
            name: EXTRAPOLATED.to_string(),
            mark: Mark::LineDots,
            segments: beyond,
            hollow: Vec::new(),
        },
        interval,
        Series::new(
            "per-second maxima",
            Mark::Dots,
            observed_points.iter().map(|&(s, ns)| (s, us(ns))).collect(),
        ),
    ];
    series.retain(|s| s.segments.iter().any(|seg| !seg.is_empty()));
    let plot = Plot {
        title: format!("{name}, cell {cell}: return levels"),
        x: x_axis,
        y: y_axis,
        series,
    };
    figure(
        &dashed(&plot.render(), EXTRAPOLATED),
        &format!(
            "Return levels: the latency exceeded on average once per return period of measured load (per CPU), with its {} interval (a bar reaching the top is not bounded above); solid where read from the data, dashed where extrapolated from the tail fit. Dots: the per-second maxima at their empirical return periods (the i-th largest of S at S / i seconds).",
            percent(confidence)
        ),
    )
}

/// The excesses over the threshold against the model's quantiles, with
/// the diagonal y = x dashed; both axes share one range.
fn qq_figure(cell: u32, name: &str, qq: &[(f64, f64)]) -> String {
    const NONE: &str = "No Q-Q plot: too few excesses over a threshold to fit a model.";
    const DIAGONAL: &str = "y = x";
    let points: Vec<(f64, f64)> = qq
        .iter()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .map(|&(model, data)| (model / 1e3, data / 1e3))
        .collect();
    let values: Vec<f64> = points.iter().flat_map(|&(a, b)| [a, b]).collect();
    let Some(axis) = Axis::fit(
        "",
        Scale::Linear,
        with_headroom(values, Scale::Linear, SMALL_LEGEND_ROOM),
    ) else {
        return skipped(NONE);
    };
    let diagonal = vec![(axis.min, axis.min), (axis.max, axis.max)];
    let plot = Plot {
        title: format!("{name}, cell {cell}: Q-Q plot of the excesses"),
        x: Axis {
            label: "model quantile of the excess (µs)".to_string(),
            ..axis.clone()
        },
        y: Axis {
            label: "observed excess (µs)".to_string(),
            ..axis
        },
        series: vec![
            Series::new("excesses", Mark::Dots, points),
            Series::new(DIAGONAL, Mark::Line, diagonal),
        ],
    };
    figure(
        &dashed(&plot.render(), DIAGONAL),
        "Q-Q plot of the excesses over the chosen threshold: each observed excess against the fitted model's quantile at its plotting position. Points on the dashed diagonal y = x mean the generalized Pareto model fits; points above it at the right mean a heavier tail than the model's.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashing_marks_the_series_and_its_legend_line() {
        let plot = Plot::fit(
            "t",
            ("x", Scale::Linear),
            ("y", Scale::Linear),
            vec![
                Series::new("a", Mark::Line, vec![(0.0, 0.0), (1.0, 1.0)]),
                Series::new("b <c>", Mark::Line, vec![(0.0, 1.0), (1.0, 0.0)]),
            ],
        )
        .unwrap();
        let svg = dashed(&plot.render(), "b <c>");
        assert_eq!(svg.matches("stroke-dasharray").count(), 2, "{svg}");
        assert!(
            svg.contains("<g class=\"series\" stroke-dasharray=\"6 4\"><title>b &lt;c&gt;</title>")
        );
        let legend = &svg[svg.find("<g class=\"legend\">").unwrap()..];
        let dash = legend.find("stroke-dasharray").unwrap();
        assert!(dash > legend.find(">a</text>").unwrap(), "{legend}");
    }

    #[test]
    fn return_level_lines_meet_where_extrapolation_starts() {
        let level = |s: f64, ns: u64, p: Provenance| ReturnLevel {
            seconds: s,
            latency_ns: ns,
            provenance: p,
            interval: latscope_stats::forecast::Interval {
                low: ns,
                high: None,
                confidence: 0.95,
            },
        };
        let levels = [
            level(1.0, 1_000, Provenance::Observed),
            level(10.0, 2_000, Provenance::Observed),
            level(100.0, 3_000, Provenance::Extrapolated),
            level(1000.0, 4_000, Provenance::Extrapolated),
        ];
        let (observed, beyond) = return_level_lines(&levels);
        assert_eq!(observed, vec![vec![(1.0, 1.0), (10.0, 2.0)]]);
        assert_eq!(beyond, vec![vec![(10.0, 2.0), (100.0, 3.0), (1000.0, 4.0)]]);
        let (observed, beyond) = return_level_lines(&levels[3..]);
        assert!(observed.is_empty());
        assert_eq!(beyond, vec![vec![(1000.0, 4.0)]]);
    }
}
