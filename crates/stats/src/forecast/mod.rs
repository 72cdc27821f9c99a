//! Forecasts: what a measured latency distribution means for an application.
//!
//! This module turns a run's histograms and per-second timelines into the
//! answers Cota-Robles & Held's study computes from its latency tables:
//!
//! * the **exceedance curve** `P(latency > x)` ([`exceedance`], [`p_exceed`]);
//! * the **worst case per hour, day and week** under a usage model, from the
//!   observed per-window maxima and from the exceedance rate
//!   ([`Measured::worst_case`], [`window_maxima`], [`UsageModel`]);
//! * the **pseudo worst case** for a permissible miss rate, to feed a
//!   schedulability analysis ([`Measured::exceeded_once_per`]);
//! * the **mean time to buffer underrun** of a buffering scheme and its grid
//!   over buffer sizes and counts ([`Measured::mttf`], [`Measured::mttf_grid`]);
//! * **verdicts** for application presets ([`APP_PRESETS`], [`verdict`]).
//! * all of it for a stored run as one typed [`ForecastReport`]
//!   ([`forecast_report`]), which `latscope forecast` and the HTML report
//!   both render: one pooling of CPUs ([`pool_cpus`]), one MTTF grid
//!   ([`mttf_grid`], [`GridSpec::standard`]).
//!
//! Where a forecast needs rarer events than the run holds, it extrapolates
//! with a peaks-over-threshold generalized Pareto fit ([`TailFit`]). Every
//! number carries its [`Provenance`]: [`Provenance::Observed`] when read from
//! the data, [`Provenance::Extrapolated`] when it comes from the fitted tail.
//! An extrapolation is never labelled observed, and when the tail has too
//! few samples to fit, the answer is an error that says so, never a guess.
//!
//! The model is checked (docs/forecast-method.md): its threshold is chosen
//! by parameter stability ([`stability`]), clusters count once
//! ([`decluster`]), it reaches at most ten times the run and gives no figure
//! from a shape that may reach 1 ([`limits`]), and every forecast carries
//! its [`diagnostics`]: the threshold ladder, a second regime, independence
//! and stationarity ([`checks`]), a block-maxima model ([`gev`]) and an
//! out-of-sample test; where the store kept the run's checkpoints, the test
//! refits the model itself and a run that changed is forecast per part
//! ([`history`]).
//!
//! Everything here is pure and deterministic (no random numbers: intervals
//! come from profile likelihoods and exact Poisson limits).

pub mod against;
mod apps;
pub mod calibration;
#[cfg(test)]
mod calibration_tests;
pub mod checks;
pub mod decluster;
pub mod diagnostics;
mod exceedance;
mod excesses;
pub mod gev;
mod gpd;
pub mod history;
mod horizon;
mod ladder;
pub mod limits;
mod mttf;
mod observed;
pub mod pairing;
mod predictive;
mod pseudo;
mod report;
mod request;
pub mod retained;
mod special;
pub mod stability;
mod tail;
mod tail_histogram;
mod validation;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod test_rng;
#[cfg(test)]
mod tests;

use latscope_model::Nanos;
use serde::Serialize;

use crate::Histogram;
use crate::MetricResult;
use crate::SecondStats;
use decluster::{estimate_extremal_index, ExtremalIndex};
use limits::{
    check_clusters, check_horizon_within, check_shape, Refusal, Rules, MAX_EXTRAPOLATION,
};

pub use against::{compare_underruns, Comparison, ObservedUnderruns, Rate, REFUTE_AT};
pub use apps::{verdict, AppPreset, Basis, Losses, Origin, TailSummary, Verdict, APP_PRESETS};
pub use exceedance::{exceedance, level_exceeded_at_most, observed_level, p_exceed};
pub use gpd::{fit_gpd, Gpd, GpdFit, SHAPE_MAX, SHAPE_MIN};
pub use horizon::{
    window_maxima, Horizon, HorizonForecast, UsageModel, UsagePreset, WindowMaxima, USAGE_PRESETS,
};
pub use mttf::{mttf_observed, BufferScheme, Compute, Mttf, MttfGrid};
pub use predictive::{PredictedMax, SelfCheck, NODES as PREDICTIVE_NODES};
pub use pseudo::PseudoWorstCases;
pub use report::{
    forecast_metrics_of, forecast_report, is_forecast_metric, mttf_grid, pool_cpus, CellForecast,
    CellSnapshot, CpuTimeline, ForecastOptions, ForecastReport, GridSpec, MetricForecast, Pooled,
    UsageReport, WorstCases, FORECAST_METRICS, FORECAST_SCHEMA,
};
pub use request::{ForecastRequest, ForecastRequestError};
pub use retained::{cell_since, CellPart};
pub use tail::{
    TailFit, TailOptions, Threshold, AUTO_QUANTILES, MIN_EXCEEDANCES, PREFERRED_EXCEEDANCES,
};

/// Fewest misses of a buffering scheme for which the MTTF is read from the
/// data: a Poisson count of 10 is known to about ±60 % at 95 %, and beyond
/// it the data are left to the tail model ([`Measured::mttf_extrapolated`]).
pub const MIN_OBSERVED_MISSES: u64 = 10;

/// Permissible miss intervals of the study (§5.2) for pseudo worst cases:
/// one miss per ten minutes (conferencing audio), per hour (soft modem), per
/// day (high-reliability devices); `(name, seconds)`.
pub const PERMISSIBLE_MISS_INTERVALS: [(&str, f64); 3] =
    [("10min", 600.0), ("hour", 3600.0), ("day", 86_400.0)];

/// Where a number comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Read from the measured data.
    Observed,
    /// Computed from the generalized Pareto tail fitted to the data, beyond
    /// (or independently of) what the data show directly.
    Extrapolated,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Observed => "observed",
            Provenance::Extrapolated => "extrapolated",
        }
    }
}

/// A confidence interval; `high: None` means the data do not bound it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval<T> {
    pub low: T,
    pub high: Option<T>,
    /// The confidence level, e.g. 0.95.
    pub confidence: f64,
}

/// A latency exceeded on average once in `events` samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencyEstimate {
    pub latency_ns: u64,
    pub provenance: Provenance,
    pub interval: Interval<u64>,
    /// N: the latency is exceeded on average once in this many samples.
    pub events: f64,
    /// How many samples of the run are expected above it (`n / N`): at
    /// least 1 for observed estimates, below 1 for extrapolated ones.
    pub expected_in_run: f64,
}

/// Why a forecast could not be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error, Serialize)]
pub enum ForecastError {
    #[error("no samples")]
    EmptyHistogram,
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error(
        "too few samples in the tail to extrapolate: {exceedances} above {threshold_ns} ns, need {needed}"
    )]
    TooFewTailSamples {
        exceedances: u64,
        needed: u64,
        threshold_ns: u64,
    },
    #[error("cannot fit the tail: {0}")]
    DegenerateTail(String),
    /// The checked model declines to give a number (see [`limits`]).
    #[error("{}", .0.describe())]
    Refused(Refusal),
}

/// A measured distribution ready for forecasts: a histogram, the time it
/// took to record, and its tail fit (made once, up front).
///
/// Use [`Measured::wakeups`] (the uncorrected distribution, one sample per
/// wake-up) for worst cases and pseudo worst cases, and
/// [`Measured::deadlines`] (the coordinated-omission-corrected one, one
/// sample per deadline) for MTTF and verdicts.
#[derive(Clone, Debug)]
pub struct Measured<'a> {
    histogram: &'a Histogram,
    duration: Nanos,
    per_deadline: bool,
    confidence: f64,
    tail: Result<TailFit, ForecastError>,
    extremal: Option<ExtremalIndex>,
    rules: Rules,
    /// The between-window variance of the log cluster rate
    /// ([`predictive::rate_dispersion`]), from the timeline.
    dispersion: Option<f64>,
    /// The model against the run's own 10-second maxima.
    self_check: Option<predictive::SelfCheck>,
}

impl<'a> Measured<'a> {
    /// `histogram` recorded over `duration`; `per_deadline` says whether it
    /// holds one sample per deadline (coordinated-omission corrected).
    pub fn new(
        histogram: &'a Histogram,
        duration: Nanos,
        per_deadline: bool,
        options: &TailOptions,
    ) -> Result<Measured<'a>, ForecastError> {
        if histogram.is_empty() {
            return Err(ForecastError::EmptyHistogram);
        }
        if duration == Nanos::ZERO {
            return Err(ForecastError::InvalidArgument(
                "the measured duration must be positive".to_string(),
            ));
        }
        if !(options.confidence > 0.0 && options.confidence < 1.0) {
            return Err(ForecastError::InvalidArgument(format!(
                "confidence must lie strictly between 0 and 1 (got {})",
                options.confidence
            )));
        }
        Ok(Measured {
            histogram,
            duration,
            per_deadline,
            confidence: options.confidence,
            tail: TailFit::from_histogram(histogram, options),
            extremal: None,
            rules: Rules::STANDARD,
            dispersion: None,
            self_check: None,
        })
    }

    /// Estimates the extremal index from the run's per-second maxima (one
    /// series per CPU, as the histogram was recorded) at the tail fit's
    /// threshold ([`decluster::estimate_extremal_index`]); return levels
    /// then count clusters, not samples. Without a fit, or with too few
    /// busy seconds, θ stays 1 (every exceedance counts).
    pub fn with_timeline(mut self, series: &[&[u64]]) -> Measured<'a> {
        if let Ok(t) = &self.tail {
            self.extremal = estimate_extremal_index(series, self.histogram, t.threshold_ns as u64);
            let at = self
                .extremal
                .as_ref()
                .map_or(t.threshold_ns as u64, |e| e.threshold_ns);
            self.dispersion = predictive::rate_dispersion(series, at);
            self.self_check = self.self_check_of(series);
        }
        self
    }

    /// The same forecast under other `rules` (see [`limits::Rules`]).
    pub fn with_rules(mut self, rules: Rules) -> Measured<'a> {
        self.rules = rules;
        self
    }

    /// The between-window variance of the log cluster rate, when the
    /// timeline gave one ([`predictive::rate_dispersion`]).
    pub fn rate_dispersion(&self) -> Option<f64> {
        self.dispersion
    }

    /// The model against the run's own 10-second maxima, when the
    /// timeline gave enough of them.
    pub fn self_check(&self) -> Option<&predictive::SelfCheck> {
        self.self_check.as_ref()
    }

    /// The rules in use.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Clusters of exceedances the fit saw above its threshold (`k θ`).
    pub fn clusters(&self) -> Option<f64> {
        self.tail
            .as_ref()
            .ok()
            .map(|t| t.exceedances as f64 * self.theta())
    }

    /// Why the model may give no figure beyond the data under the rules:
    /// too few clusters ([`Rules::min_clusters`]).
    fn check_rules(&self) -> Result<(), ForecastError> {
        if let Some(c) = self.clusters() {
            check_clusters(c, self.rules.min_clusters, self.duration_s())
                .map_err(ForecastError::Refused)?;
        }
        match self.self_check {
            Some(s) if self.rules.self_check && s.p_value < predictive::SELF_CHECK_P => {
                Err(ForecastError::Refused(Refusal::Misfit {
                    windows: s.windows,
                    outside: s.outside,
                    p_value: s.p_value,
                }))
            }
            _ => Ok(()),
        }
    }

    /// The extremal index in use, when it was estimated.
    pub fn extremal_index(&self) -> Option<&ExtremalIndex> {
        self.extremal.as_ref()
    }

    /// θ: 1 unless estimated.
    pub fn theta(&self) -> f64 {
        self.extremal.as_ref().map_or(1.0, |e| e.theta)
    }

    /// Why the fitted tail may not be extrapolated at all: its shape's
    /// interval admits ξ ≥ 1 ([`limits::check_shape`]). The interval is the
    /// chosen rung's profile interval when the threshold was chosen by
    /// stability; for a fixed threshold only the point estimate is checked.
    pub fn heavy_tail(&self) -> Option<Refusal> {
        let t = self.tail.as_ref().ok()?;
        let shape = t.fit.gpd.shape;
        let high = match &t.choice {
            Some(c) => c.chosen().shape_interval.high,
            None => Some(shape),
        };
        check_shape(shape, high).err()
    }

    /// Whether `events` samples (at the measured rate) lie within the
    /// extrapolation limit ([`limits::MAX_EXTRAPOLATION`] times the run).
    fn check_reach(&self, events: f64) -> Result<(), ForecastError> {
        let horizon_s = events / self.rate_hz();
        check_horizon_within(self.duration_s(), horizon_s, self.rules.reach)
            .map_err(ForecastError::Refused)?;
        self.check_rules()
    }

    /// A metric's uncorrected distribution: one sample per wake-up.
    pub fn wakeups(
        metric: &'a MetricResult,
        duration: Nanos,
        options: &TailOptions,
    ) -> Result<Measured<'a>, ForecastError> {
        Measured::new(&metric.histogram, duration, false, options)
    }

    /// A metric's per-deadline distribution: the corrected histogram when
    /// the metric has one, else the uncorrected one (then
    /// [`Measured::per_deadline`] is false and misses hidden by overruns are
    /// not counted).
    pub fn deadlines(
        metric: &'a MetricResult,
        duration: Nanos,
        options: &TailOptions,
    ) -> Result<Measured<'a>, ForecastError> {
        match &metric.corrected {
            Some(c) => Measured::new(c, duration, true, options),
            None => Measured::new(&metric.histogram, duration, false, options),
        }
    }

    pub fn histogram(&self) -> &Histogram {
        self.histogram
    }
    /// Samples (wake-ups or deadlines) measured.
    pub fn samples(&self) -> u64 {
        self.histogram.count()
    }
    pub fn duration(&self) -> Nanos {
        self.duration
    }
    pub fn duration_s(&self) -> f64 {
        self.duration.0 as f64 / 1e9
    }
    /// Samples per second of the run.
    pub fn rate_hz(&self) -> f64 {
        self.samples() as f64 / self.duration_s()
    }
    /// Whether the histogram is coordinated-omission corrected.
    pub fn per_deadline(&self) -> bool {
        self.per_deadline
    }
    pub fn confidence(&self) -> f64 {
        self.confidence
    }
    /// The tail fit, or why there is none.
    pub fn tail(&self) -> Result<&TailFit, &ForecastError> {
        self.tail.as_ref()
    }

    /// The exceedance curve (see [`exceedance`]).
    pub fn exceedance(&self) -> Vec<(u64, f64)> {
        exceedance(self.histogram)
    }

    /// The latency exceeded on average once in `events` samples: observed
    /// when the run holds at least that many ([`observed_level`]), else
    /// extrapolated from the tail fit, else the reason there is no fit.
    pub fn exceeded_once_in(&self, events: f64) -> Result<LatencyEstimate, ForecastError> {
        if !positive(events) || !events.is_finite() {
            return Err(ForecastError::InvalidArgument(format!(
                "the number of events must be positive and finite (got {events})"
            )));
        }
        // Once in N samples counting clusters: N θ samples (see
        // [`decluster`]); the same for the data and the model.
        let effective = events * self.theta();
        if let Some(mut e) = observed_level(self.histogram, effective, self.confidence) {
            e.events = events;
            return Ok(self.at_least_seen(e));
        }
        let tail = self.tail.as_ref().map_err(Clone::clone)?;
        if let Some(r) = self.heavy_tail() {
            return Err(ForecastError::Refused(r));
        }
        self.check_reach(events)?;
        let mut e = tail.estimate_once_in(effective).ok_or_else(|| {
            ForecastError::DegenerateTail(format!(
                "once in {events} samples is not beyond the fitted threshold"
            ))
        })?;
        e.events = events;
        Ok(self.at_least_seen(e))
    }

    /// A horizon at least as long as the run is never forecast below what
    /// the run saw: its maximum happened within that time.
    fn at_least_seen(&self, mut e: LatencyEstimate) -> LatencyEstimate {
        if e.events >= self.samples() as f64 {
            if let Some(max) = self.histogram.max() {
                e.latency_ns = e.latency_ns.max(max.0);
                e.interval.high = e.interval.high.map(|h| h.max(max.0));
            }
        }
        e
    }

    /// The pseudo worst case for a permissible miss rate of one per
    /// `seconds`: the latency exceeded on average once in that time at the
    /// measured rate (see [`PERMISSIBLE_MISS_INTERVALS`]).
    pub fn exceeded_once_per(&self, seconds: f64) -> Result<LatencyEstimate, ForecastError> {
        self.exceeded_once_in(self.rate_hz() * seconds)
    }

    /// The worst case over `horizon` under `usage`: the exceedance-rate
    /// estimate, and the observed maxima of horizon-long windows of
    /// `timeline` (pass `&[]` when there is none).
    pub fn worst_case(
        &self,
        horizon: Horizon,
        usage: &UsageModel,
        timeline: &[SecondStats],
    ) -> HorizonForecast {
        let run_seconds = horizon.run_seconds(usage);
        let events = self.rate_hz() * run_seconds;
        let window = run_seconds.round();
        let windows = if window >= 1.0 && window < u64::MAX as f64 {
            window_maxima(timeline, window as u64)
        } else {
            None
        };
        HorizonForecast {
            horizon,
            usage: *usage,
            run_seconds,
            events,
            estimate: self.exceeded_once_in(events),
            prediction: self.predicted_max(run_seconds),
            windows,
            monitor: None,
        }
    }

    /// The observed MTTF (see [`mttf_observed`]).
    pub fn mttf(&self, scheme: &BufferScheme) -> Mttf {
        match mttf_observed(self.histogram, scheme, self.confidence) {
            Ok(m) => m,
            // `new` rejected empty histograms, the only error.
            Err(_) => unreachable_mttf(scheme),
        }
    }

    /// The MTTF from the fitted tail, labelled extrapolated. When the slack
    /// lies at or below the fit's threshold, or at least
    /// [`MIN_OBSERVED_MISSES`] measured deadlines exceeded it, the data
    /// answer and the observed MTTF is returned instead (labelled
    /// observed). Beyond that the model's `P(miss)` is capped at
    /// `MIN_OBSERVED_MISSES / N`, the smallest probability the data give
    /// directly, so that `P(miss)` never rises with the slack: the MTTF
    /// never falls as a buffer grows or buffers are added.
    ///
    /// Two limits of the checked model apply: a tail whose shape may be 1
    /// or more gives no extrapolation ([`ForecastError::Refused`]), and a
    /// miss rarer than one in [`limits::MAX_EXTRAPOLATION`] runs is not
    /// quantified: the MTTF is then the lower bound of that many runs,
    /// `10·N·t` (`lower_bound`), which is what the data and the limit allow.
    /// The same bound stands when the fitted tail is bounded (ξ < 0) and no
    /// tail reaching the slack is compatible with the data
    /// ([`Gpd::upper_endpoint`] tells where the fitted tail ends), so that
    /// the MTTF stays monotone in the slack.
    pub fn mttf_extrapolated(&self, scheme: &BufferScheme) -> Result<Mttf, ForecastError> {
        let tail = self.tail.as_ref().map_err(Clone::clone)?;
        let slack = scheme.slack_ns();
        let observed = self.mttf(scheme);
        if slack as f64 <= tail.threshold_ns || observed.misses >= MIN_OBSERVED_MISSES {
            return Ok(observed);
        }
        if let Some(r) = self.heavy_tail() {
            return Err(ForecastError::Refused(r));
        }
        let x = slack as f64;
        let (p, iv) = match (tail.tail_probability(x), tail.tail_probability_interval(x)) {
            (Some(p), Some(iv)) => (p, iv),
            _ => {
                return Err(ForecastError::DegenerateTail(
                    "no tail probability at the slack".to_string(),
                ))
            }
        };
        let t = scheme.period_s();
        let p_high = iv.high.unwrap_or(tail.zeta);
        let n = self.samples() as f64;
        let reach = 1.0 / (MAX_EXTRAPOLATION * n);
        if p_high <= 0.0 {
            // The fitted tail is bounded below the slack, and tails reaching
            // it are rejected: the model predicts no miss at all, which is
            // no number of seconds; the limit's lower bound remains (the
            // same as for a miss rarer than the limit, so the MTTF stays
            // monotone in the slack).
            return Ok(Mttf {
                scheme: *scheme,
                slack_ns: slack,
                p_miss: 0.0,
                misses: observed.misses,
                deadlines: observed.deadlines,
                mttf_s: t / reach,
                lower_bound: true,
                provenance: Provenance::Extrapolated,
                interval_s: Interval {
                    low: t / reach,
                    high: None,
                    confidence: iv.confidence,
                },
            });
        }
        let interval_s = Interval {
            low: t / p_high,
            high: (iv.low > 0.0).then(|| t / iv.low),
            confidence: iv.confidence,
        };
        // Where the data hold MIN_OBSERVED_MISSES misses they answer; beyond,
        // the model may not say a miss is more likely than there.
        let p = p.min(MIN_OBSERVED_MISSES as f64 / n);
        let (mttf_s, lower_bound) = if p >= reach {
            (t / p, false)
        } else {
            // Rarer than the limit lets the model say (or no miss at all
            // within the fitted tail): at least the limit.
            (t / reach, true)
        };
        let interval_s = Interval {
            low: interval_s.low.min(mttf_s),
            high: if lower_bound { None } else { interval_s.high },
            confidence: interval_s.confidence,
        };
        Ok(Mttf {
            scheme: *scheme,
            slack_ns: slack,
            p_miss: p,
            misses: observed.misses,
            deadlines: observed.deadlines,
            mttf_s,
            lower_bound,
            provenance: Provenance::Extrapolated,
            interval_s,
        })
    }

    /// The MTTF the forecasts use: [`Measured::mttf_extrapolated`] (the
    /// data where they hold enough misses, the capped tail model beyond),
    /// else (no fit, or a refused one) the observed MTTF.
    ///
    /// One function of the slack: `P(miss)` never rises as the slack
    /// grows, and the MTTF never falls as a buffer grows or buffers are
    /// added. (Switching to the observed count wherever a single miss was
    /// seen made the curve zigzag: 0.1 s at 0.25 ms buffers, 60 s at 2 ms,
    /// 17 s at 4 ms.)
    pub fn mttf_best(&self, scheme: &BufferScheme) -> Mttf {
        self.mttf_extrapolated(scheme)
            .unwrap_or_else(|_| self.mttf(scheme))
    }

    /// [`Measured::mttf_best`] over buffer sizes (rows) × counts (columns),
    /// or the observed MTTF only when `extrapolate` is false.
    pub fn mttf_grid(
        &self,
        periods_ns: &[u64],
        buffers: &[u32],
        compute: Compute,
        extrapolate: bool,
    ) -> Result<MttfGrid, ForecastError> {
        let mut cells = Vec::with_capacity(periods_ns.len());
        for &period in periods_ns {
            let mut row = Vec::with_capacity(buffers.len());
            for &n in buffers {
                let scheme = BufferScheme::new(period, n, compute)?;
                row.push(if extrapolate {
                    self.mttf_best(&scheme)
                } else {
                    self.mttf(&scheme)
                });
            }
            cells.push(row);
        }
        Ok(MttfGrid {
            periods_ns: periods_ns.to_vec(),
            buffers: buffers.to_vec(),
            compute,
            cells,
        })
    }

    /// The verdict for an application preset (see [`verdict`]).
    pub fn verdict(&self, preset: &AppPreset) -> Verdict {
        verdict(preset, self)
    }
}

/// `x > 0`, false for NaN: spelled out so that NaN inputs are rejected
/// wherever a positive number is required.
pub(crate) fn positive(x: f64) -> bool {
    x > 0.0
}

/// Never produced: [`Measured`] holds a non-empty histogram. Kept total so
/// that no `unwrap` or panic is needed.
fn unreachable_mttf(scheme: &BufferScheme) -> Mttf {
    Mttf {
        scheme: *scheme,
        slack_ns: scheme.slack_ns(),
        p_miss: 0.0,
        misses: 0,
        deadlines: 0,
        mttf_s: 0.0,
        lower_bound: true,
        provenance: Provenance::Observed,
        interval_s: Interval {
            low: 0.0,
            high: None,
            confidence: 0.0,
        },
    }
}
