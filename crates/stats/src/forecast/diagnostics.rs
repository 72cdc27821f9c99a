//! The checks behind a forecast, computed and put in words: the threshold
//! ladder and a second regime, clusters, the independence and stationarity
//! of the per-second maxima, a second model from block maxima, and an
//! out-of-sample test on the run's own later part.
//!
//! Every check that fails becomes a line of [`Diagnostics::warnings`]; the
//! forecast is still given (within the limits of [`super::limits`]) but
//! labelled, because a user deciding on a machine needs both the figure and
//! the reason to doubt it.
//!
//! # Out-of-sample validation
//!
//! Where the store kept the run's checkpoints, the checked tail model itself
//! is refitted to the first two thirds and tested on the rest
//! ([`super::history::validate_fit`]). Otherwise the run keeps its time
//! order only as per-second maxima, and the check is made on those: the
//! same method (a generalized Pareto tail above a high
//! threshold, [`TailFit::from_samples`]) is fitted to the per-second maxima
//! of the first two thirds of every CPU's seconds, predicts how many seconds
//! of the last third have a maximum above a level `L`, and the count seen
//! there is compared with the prediction by an exact two-sided Poisson test.
//! `L` is the level the fit expects to be exceeded in about
//! [`VALIDATION_EXPECTED`] seconds of the later part, and never below the
//! fit's threshold: a level in the tail the fit describes. A p-value below
//! [`super::checks::ALPHA`] is a failed validation.

use serde::Serialize;

use super::checks::{check_series, segments, SeriesChecks, ALPHA};
use super::decluster::ExtremalIndex;
use super::gev::{block_maxima, block_seconds, GevFit};
use super::history::{cut_points, part_forecasts, validate_fit, History, PartForecast};
use super::stability::{Rung, ThresholdChoice};
use super::tail::{TailFit, TailOptions, Threshold};
use super::validation::{poisson_two_sided, validation_level};
pub use super::validation::{CpuSeconds, Validation, ValidationMethod, VALIDATION_EXPECTED};
use super::{Interval, Measured, Provenance};

/// Fewest seconds in the first part of a run for the validation.
pub const VALIDATION_MIN_SECONDS: usize = 100;
/// Fewest per-second maxima above the validation fit's threshold.
const VALIDATION_MIN_EXCEEDANCES: u64 = 20;

/// The threshold ladder, as the report shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThresholdDiagnostics {
    pub rungs: Vec<Rung>,
    pub chosen: usize,
    pub threshold_ns: f64,
    pub shape: f64,
    pub shape_interval: Interval<f64>,
    /// ξ read from the slope of the mean excess above the chosen rung.
    pub mean_excess_shape: Option<f64>,
    /// The two regimes in words, when the tail has two.
    pub mixture: Option<String>,
}

impl ThresholdDiagnostics {
    fn of(c: &ThresholdChoice) -> ThresholdDiagnostics {
        let r = c.chosen();
        ThresholdDiagnostics {
            rungs: c.rungs.clone(),
            chosen: c.chosen,
            threshold_ns: r.threshold_ns,
            shape: r.shape,
            shape_interval: r.shape_interval,
            mean_excess_shape: c.mean_excess_shape,
            mixture: c.mixture.as_ref().map(|m| m.describe()),
        }
    }
}

/// The independence and stationarity checks of one CPU's per-second maxima.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuChecks {
    pub cpu: Option<u32>,
    pub checks: SeriesChecks,
    /// The parts binary segmentation cuts the series into (seconds from
    /// the cell's start, each with its maximum); one part when no change
    /// point was found.
    pub segments: Vec<Segment>,
}

/// A part of a run between change points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Segment {
    pub from_s: usize,
    pub to_s: usize,
    pub max_ns: u64,
}

/// The block-maxima model beside the peaks-over-threshold one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GevCheck {
    pub block_seconds: usize,
    pub blocks: usize,
    pub location_ns: f64,
    pub scale_ns: f64,
    pub shape: f64,
    /// The horizons compared: an hour, a day and a week where they lie
    /// within the limit of extrapolation, else ten times the run.
    pub levels: Vec<GevLevel>,
    /// Whether the two models agree at every horizon.
    pub agrees: bool,
}

/// The two models' worst case over one horizon.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GevLevel {
    /// The horizon (seconds per CPU).
    pub period_s: f64,
    /// The worst case over `period_s` from the block maxima, with its
    /// interval.
    pub level_ns: f64,
    pub level_interval: Interval<f64>,
    /// The peaks-over-threshold figure it is compared with.
    pub pot_ns: u64,
    pub pot_interval: Interval<u64>,
    /// Whether the two intervals overlap.
    pub agrees: bool,
}

/// Points of a plot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReturnLevel {
    /// Return period: seconds of the measured load (per CPU).
    pub seconds: f64,
    pub latency_ns: u64,
    pub provenance: Provenance,
    pub interval: Interval<u64>,
}

/// Everything a reader needs to judge the forecast of one metric.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Diagnostics {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<ThresholdDiagnostics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extremal_index: Option<ExtremalIndex>,
    pub checks: Vec<CpuChecks>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gev: Option<GevCheck>,
    /// The out-of-sample test, or why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation: Option<Validation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_skipped: Option<String>,
    /// Return levels from one second to the limit of extrapolation.
    pub return_levels: Vec<ReturnLevel>,
    /// `(return period s, per-second maximum)`: the i-th largest of the
    /// `S` per-second maxima has an empirical return period of `S / i`.
    pub observed_points: Vec<(f64, u64)>,
    /// Q-Q points of the excesses over the threshold: `(model, data)`.
    pub qq: Vec<(f64, f64)>,
    /// The forecasts of the parts of a run that changed (cut at its change
    /// points, moved to stored checkpoints); empty when it did not, or
    /// when no checkpoints were stored.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartForecast>,
    /// Each failed check in words.
    pub warnings: Vec<String>,
}

/// Why a metric stored without a per-second timeline (the softirq
/// delays, kept as histograms only; an import without one) has none of the
/// checks that read it.
pub const NO_TIMELINE: &str = "not validated: no per-second timeline is stored for this metric, so clusters (every exceedance counts: the figures err high), independence, stationarity and the out-of-sample test are not checked";

/// Computes the diagnostics of a wake-up distribution `m` (already given
/// its timeline, [`Measured::with_timeline`]), its per-CPU seconds and,
/// where the store kept them, its checkpoints.
pub fn diagnose(
    m: &Measured<'_>,
    cpus: &[CpuSeconds<'_>],
    history: Option<&History<'_>>,
) -> Diagnostics {
    let mut d = Diagnostics::default();
    let tail = m.tail().ok();
    if let Some(c) = tail.and_then(|t| t.choice.as_ref()) {
        let t = ThresholdDiagnostics::of(c);
        if let Some(text) = &t.mixture {
            d.warnings.push(text.clone());
        }
        d.threshold = Some(t);
    }
    if let Some(r) = m.heavy_tail() {
        d.warnings.push(r.describe());
    }
    d.extremal_index = m.extremal_index().cloned();
    if let Some(e) = &d.extremal_index {
        if e.theta < 0.9 {
            d.warnings.push(format!(
                "clustered: extremal index {:.2} above {} (about {:.1} late samples per cluster); worst cases count clusters",
                e.theta,
                super::text::fmt_ns(e.threshold_ns as i64),
                1.0 / e.theta
            ));
        }
    }
    let maxima: Vec<Vec<u64>> = cpus
        .iter()
        .map(|c| c.seconds.iter().map(|s| s.max).collect())
        .collect();
    for (c, series) in cpus.iter().zip(&maxima) {
        // (second from the cell's start, maximum) of the seconds with samples.
        let kept: Vec<(usize, u64)> = series
            .iter()
            .zip(c.seconds)
            .enumerate()
            .filter(|(_, (_, s))| s.count > 0)
            .map(|(i, (&v, _))| (i, v))
            .collect();
        let logs: Vec<f64> = kept.iter().map(|&(_, v)| (v.max(1) as f64).ln()).collect();
        let checks = check_series(&logs);
        let cpu = c
            .cpu
            .map_or("the system".to_string(), |n| format!("CPU {n}"));
        if checks.independent == Some(false) {
            if let Some(lb) = &checks.ljung_box {
                d.warnings.push(format!(
                    "not independent: the per-second maxima of {cpu} are autocorrelated (Ljung-Box p = {:.2e})",
                    lb.p_value
                ));
            }
        }
        let parts: Vec<(usize, usize)> = if checks.stationary == Some(false) {
            segments(&logs)
                .into_iter()
                .map(|r| (r.start, r.end))
                .collect()
        } else {
            vec![(0, kept.len())]
        };
        let segs: Vec<Segment> = parts
            .iter()
            .filter(|&&(a, b)| a < b)
            .map(|&(a, b)| Segment {
                from_s: kept[a].0,
                to_s: kept[b - 1].0 + 1,
                max_ns: kept[a..b].iter().map(|&(_, v)| v).max().unwrap_or(0),
            })
            .collect();
        if checks.stationary == Some(false) {
            let cuts: Vec<String> = segs
                .iter()
                .map(|s| {
                    format!(
                        "{}-{} s max {}",
                        s.from_s,
                        s.to_s,
                        super::text::fmt_ns(s.max_ns as i64)
                    )
                })
                .collect();
            let p = checks.change_point.as_ref().map_or(0.0, |c| c.p_value);
            d.warnings.push(format!(
                "not stationary: {cpu} changed during the run (Pettitt p = {p:.2e}); parts: {}",
                cuts.join(", ")
            ));
        }
        d.checks.push(CpuChecks {
            cpu: c.cpu,
            checks,
            segments: segs,
        });
    }
    if let Some(h) = history {
        let mut cuts: Vec<usize> = d
            .checks
            .iter()
            .flat_map(|c| c.segments.iter().skip(1).map(|s| s.from_s))
            .collect();
        cuts.sort_unstable();
        d.parts = part_forecasts(m, cpus, h, &cut_points(h, &cuts));
    }
    d.gev = gev_check(m, &maxima);
    if let Some(g) = &d.gev {
        for l in g.levels.iter().filter(|l| !l.agrees) {
            d.warnings.push(format!(
                "the block-maxima model disagrees: worst case per {} s {} from {}-second maxima against {} from the tail fit; their intervals do not overlap",
                l.period_s,
                super::text::fmt_ns(l.level_ns as i64),
                g.block_seconds,
                super::text::fmt_ns(l.pot_ns as i64)
            ));
        }
    }
    let validation = match history {
        _ if cpus.is_empty() => Err(NO_TIMELINE.to_string()),
        Some(h) => validate_fit(m, cpus, h),
        None => validate(cpus, m.confidence()),
    };
    match validation {
        Ok(v) => {
            if !v.passed {
                d.warnings.push(v.describe());
            }
            d.validation = Some(v);
        }
        Err(why) => d.validation_skipped = Some(why),
    }
    d.return_levels = return_levels(m);
    d.observed_points = observed_points(&maxima);
    d.qq = tail.map(qq_points).unwrap_or_default();
    d
}

/// The horizons the two models are compared at (seconds per CPU).
const GEV_HORIZONS_S: [f64; 3] = [3600.0, 86_400.0, 604_800.0];

fn gev_check(m: &Measured<'_>, maxima: &[Vec<u64>]) -> Option<GevCheck> {
    let reach = (m.duration_s() * super::limits::MAX_EXTRAPOLATION).floor();
    let mut periods: Vec<f64> = GEV_HORIZONS_S
        .iter()
        .copied()
        .filter(|&p| p <= reach)
        .collect();
    if periods.is_empty() {
        periods.push(reach);
    }
    let confidence = m.confidence();
    let seconds: usize = maxima.iter().map(Vec::len).sum();
    let block = block_seconds(seconds / maxima.len().max(1));
    let blocks: Vec<f64> = maxima.iter().flat_map(|s| block_maxima(s, block)).collect();
    let fit = GevFit::fit(&blocks, block, confidence).ok()?;
    // Each interval is a profile likelihood searched by bisection, the
    // forecast's largest cost on a long run: the horizons are searched at
    // once, one thread each (the figures are the same as one after another).
    let intervals: Vec<Option<Interval<f64>>> = std::thread::scope(|scope| {
        let searches: Vec<_> = periods
            .iter()
            .map(|&period_s| {
                let fit = &fit;
                scope.spawn(move || fit.level_interval(period_s))
            })
            .collect();
        searches
            .into_iter()
            .map(|s| s.join().ok().flatten())
            .collect()
    });
    let levels: Vec<GevLevel> = periods
        .iter()
        .zip(intervals)
        .filter_map(|(&period_s, iv)| {
            let pot = m.exceeded_once_per(period_s).ok()?;
            let level_ns = fit.level_once_in(period_s)?;
            let iv = iv?;
            let pot_iv = pot.interval;
            let agrees = iv.low <= pot_iv.high.map_or(f64::INFINITY, |h| h as f64)
                && pot_iv.low as f64 <= iv.high.unwrap_or(f64::INFINITY);
            Some(GevLevel {
                period_s,
                level_ns,
                level_interval: iv,
                pot_ns: pot.latency_ns,
                pot_interval: pot_iv,
                agrees,
            })
        })
        .collect();
    if levels.is_empty() {
        return None;
    }
    Some(GevCheck {
        block_seconds: block,
        blocks: blocks.len(),
        location_ns: fit.gev.location,
        scale_ns: fit.gev.scale,
        shape: fit.gev.shape,
        agrees: levels.iter().all(|l| l.agrees),
        levels,
    })
}

/// The out-of-sample test of the per-second maxima of `cpus`.
pub fn validate(cpus: &[CpuSeconds<'_>], confidence: f64) -> Result<Validation, String> {
    let mut first = Vec::new();
    let mut later = Vec::new();
    for c in cpus {
        let used: Vec<u64> = c
            .seconds
            .iter()
            .filter(|s| s.count > 0)
            .map(|s| s.max)
            .collect();
        let cut = used.len() * 2 / 3;
        first.extend(used[..cut].iter().map(|&v| v as f64));
        later.extend_from_slice(&used[cut..]);
    }
    if first.len() < VALIDATION_MIN_SECONDS {
        let more = (VALIDATION_MIN_SECONDS * 3 / 2).saturating_sub(first.len() * 3 / 2);
        return Err(format!(
            "not validated: the run has {} seconds with samples; splitting it needs {} (about {} more per CPU)",
            first.len() * 3 / 2,
            VALIDATION_MIN_SECONDS * 3 / 2,
            more.div_ceil(cpus.len().max(1))
        ));
    }
    let q = 1.0 - (0.1f64).max(30.0 / first.len() as f64).min(0.5);
    let options = TailOptions {
        threshold: Threshold::Quantile(q),
        min_exceedances: VALIDATION_MIN_EXCEEDANCES,
        confidence,
    };
    let fit = TailFit::from_samples(&first, &options)
        .map_err(|e| format!("not validated: no fit to the first two thirds ({e})"))?;
    let n_later = later.len() as f64;
    let (level_ns, tail_p) = validation_level(&fit, VALIDATION_EXPECTED / n_later);
    let predicted = tail_p * n_later;
    let observed = later.iter().filter(|&&v| v > level_ns).count() as u64;
    let p_value = poisson_two_sided(observed, predicted);
    Ok(Validation {
        method: ValidationMethod::SecondMaxima,
        fit_seconds: first.len(),
        test_seconds: later.len(),
        level_ns,
        predicted,
        observed,
        p_value,
        passed: p_value >= ALPHA,
    })
}

/// Return periods plotted: 1 s to a week, by factors of about 3.
const RETURN_PERIODS_S: [f64; 13] = [
    1.0, 3.0, 10.0, 30.0, 60.0, 180.0, 600.0, 1800.0, 3600.0, 10_800.0, 36_000.0, 86_400.0,
    604_800.0,
];

fn return_levels(m: &Measured<'_>) -> Vec<ReturnLevel> {
    RETURN_PERIODS_S
        .iter()
        .filter_map(|&s| {
            let e = m.exceeded_once_per(s).ok()?;
            Some(ReturnLevel {
                seconds: s,
                latency_ns: e.latency_ns,
                provenance: e.provenance,
                interval: e.interval,
            })
        })
        .collect()
}

/// Most points a plot series keeps.
const PLOT_POINTS: usize = 100;

fn observed_points(maxima: &[Vec<u64>]) -> Vec<(f64, u64)> {
    let mut all: Vec<u64> = maxima
        .iter()
        .flatten()
        .copied()
        .filter(|&v| v > 0)
        .collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    let s = all.len() as f64;
    // Keep the top ranks densely (they carry the tail), then thin out
    // geometrically.
    let mut out = Vec::new();
    let mut i = 1usize;
    while i <= all.len() && out.len() < PLOT_POINTS {
        out.push((s / i as f64, all[i - 1]));
        i = if i < 20 { i + 1 } else { i + i / 10 };
    }
    out
}

fn qq_points(t: &TailFit) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = t.points().to_vec();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pts.iter().map(|p| p.1).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let step = (pts.len() / PLOT_POINTS).max(1);
    let mut cum = 0.0;
    let mut out = Vec::new();
    for (i, &(y, w)) in pts.iter().enumerate() {
        // Plotting position of the bucket's middle.
        let q = (cum + w / 2.0) / total;
        cum += w;
        if i % step == 0 || i + 1 == pts.len() {
            out.push((t.fit.gpd.quantile(q), y));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::test_rng::Rng;
    use crate::SecondStats;

    fn seconds_of(maxima: &[u64]) -> Vec<SecondStats> {
        maxima
            .iter()
            .map(|&m| SecondStats {
                count: 1000,
                max: m,
                above: 0,
            })
            .collect()
    }

    /// The validation of one CPU's per-second maxima.
    fn validate_one(maxima: &[u64]) -> Result<Validation, String> {
        let s = seconds_of(maxima);
        validate(
            &[CpuSeconds {
                cpu: Some(0),
                seconds: &s,
            }],
            0.95,
        )
    }

    #[test]
    fn poisson_p_values() {
        assert_eq!(poisson_two_sided(0, 0.0), 1.0);
        assert_eq!(poisson_two_sided(1, 0.0), 0.0);
        let p = poisson_two_sided(10, 10.0);
        assert!(p > 0.9, "{p}");
        // 30 where 10 are expected: P(K ≥ 30) ≈ 7e-7.
        assert!(poisson_two_sided(30, 10.0) < 1e-5);
        assert!(poisson_two_sided(0, 10.0) < 1e-3);
    }

    /// Exponential per-second maxima throughout: the later part behaves as
    /// predicted in nearly every seed; a later part whose maxima are three
    /// times larger fails.
    #[test]
    fn validation_passes_a_stationary_run_and_fails_a_changed_one() {
        let mut passed = 0;
        for seed in 1..=20u64 {
            let mut rng = Rng(seed);
            let maxima: Vec<u64> = (0..1800)
                .map(|_| 50_000 + (-rng.uniform().ln() * 20_000.0) as u64)
                .collect();
            let v = validate_one(&maxima).unwrap();
            assert_eq!((v.fit_seconds, v.test_seconds), (1200, 600));
            assert!((v.predicted - 10.0).abs() < 3.0, "{v:?}");
            passed += usize::from(v.passed);
        }
        assert!(passed >= 18, "{passed} of 20 passed");
        let mut rng = Rng(99);
        let maxima: Vec<u64> = (0..1800)
            .map(|i| {
                let x = 50_000 + (-rng.uniform().ln() * 20_000.0) as u64;
                if i >= 1200 {
                    x * 3
                } else {
                    x
                }
            })
            .collect();
        let v = validate_one(&maxima).unwrap();
        assert!(!v.passed, "{v:?}");
        assert!(v.describe().starts_with("validation failed"));
    }

    #[test]
    fn a_short_run_says_how_much_it_lacks() {
        let why = validate_one(&[10_000; 60]).unwrap_err();
        assert!(why.contains("needs 150"), "{why}");
    }

    /// A run whose per-second maxima rise tenfold at second 300 is cut
    /// there; the parts are in seconds from the start (an empty second
    /// does not shift them) and carry their own maxima.
    #[test]
    fn a_changed_run_is_cut_into_parts_in_seconds_from_the_start() {
        let mut rng = Rng(5);
        let mut seconds: Vec<SecondStats> = (0..600)
            .map(|i| {
                let x = 50_000 + (-rng.uniform().ln() * 10_000.0) as u64;
                SecondStats {
                    count: 1000,
                    max: if i >= 300 { x * 10 } else { x },
                    above: 0,
                }
            })
            .collect();
        seconds[10] = SecondStats::default();
        let mut h = crate::Histogram::new();
        for s in &seconds {
            h.record(s.max.max(1));
        }
        let m = Measured::new(
            &h,
            latscope_model::Nanos::from_secs(600),
            false,
            &TailOptions::default(),
        )
        .unwrap();
        let d = diagnose(
            &m,
            &[CpuSeconds {
                cpu: Some(1),
                seconds: &seconds,
            }],
            None,
        );
        let segs = &d.checks[0].segments;
        assert!(segs.len() >= 2, "{segs:?}");
        assert_eq!(segs[0].from_s, 0);
        assert_eq!(segs[segs.len() - 1].to_s, 600);
        assert!(segs.iter().any(|s| s.from_s == 300), "{segs:?}");
        for s in segs {
            let want = seconds[s.from_s..s.to_s]
                .iter()
                .map(|x| x.max)
                .max()
                .unwrap();
            assert_eq!(s.max_ns, want, "{s:?}");
        }
        assert!(d
            .warnings
            .iter()
            .any(|w| w.starts_with("not stationary: CPU 1")));
    }

    #[test]
    fn observed_points_have_empirical_return_periods() {
        let pts = observed_points(&[vec![5, 1, 3, 0], vec![4, 2]]);
        assert_eq!(pts[0], (5.0, 5));
        assert_eq!(pts[1], (2.5, 4));
        assert_eq!(pts.last(), Some(&(1.0, 1)));
    }
}
