//! A measured distribution ready for forecasts ([`Measured`]): its
//! histogram, duration and tail fit, and the forecasts read directly from
//! them. The forecasts that need more add their methods in their own files
//! (the timeline's checks and the prediction interval in `predictive.rs`,
//! the worst case per horizon in `horizon.rs`, the MTTF in `mttf.rs`, the
//! verdicts in `apps.rs`), so that this file uses none of them.

use latscope_model::Nanos;

use crate::{Histogram, MetricResult};

use super::decluster::ExtremalIndex;
use super::exceedance::{exceedance, observed_level};
use super::limits::{check_clusters, check_horizon_within, check_shape, Refusal, Rules};
use super::self_check::{SelfCheck, SELF_CHECK_P};
use super::tail::{TailFit, TailOptions};
use super::values::{positive, ForecastError, LatencyEstimate};

/// A measured distribution ready for forecasts: a histogram, the time it
/// took to record, and its tail fit (made once, up front).
///
/// Use [`Measured::wakeups`] (the uncorrected distribution, one sample per
/// wake-up) for worst cases and pseudo worst cases, and
/// [`Measured::deadlines`] (the coordinated-omission-corrected one, one
/// sample per deadline) for MTTF and verdicts.
#[derive(Clone, Debug)]
pub struct Measured<'a> {
    pub(super) histogram: &'a Histogram,
    pub(super) duration: Nanos,
    pub(super) per_deadline: bool,
    pub(super) confidence: f64,
    pub(super) tail: Result<TailFit, ForecastError>,
    pub(super) extremal: Option<ExtremalIndex>,
    pub(super) rules: Rules,
    /// The between-window variance of the log cluster rate
    /// (`rate_dispersion` in `self_check.rs`), from the timeline.
    pub(super) dispersion: Option<f64>,
    /// The model against the run's own 10-second maxima.
    pub(super) self_check: Option<SelfCheck>,
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

    /// The same forecast under other `rules` (see [`super::limits::Rules`]).
    pub fn with_rules(mut self, rules: Rules) -> Measured<'a> {
        self.rules = rules;
        self
    }

    /// The between-window variance of the log cluster rate, when the
    /// timeline gave one (`rate_dispersion` in `self_check.rs`).
    pub fn rate_dispersion(&self) -> Option<f64> {
        self.dispersion
    }

    /// The model against the run's own 10-second maxima, when the
    /// timeline gave enough of them.
    pub fn self_check(&self) -> Option<&SelfCheck> {
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
    pub(super) fn check_rules(&self) -> Result<(), ForecastError> {
        if let Some(c) = self.clusters() {
            check_clusters(c, self.rules.min_clusters, self.duration_s())
                .map_err(ForecastError::Refused)?;
        }
        match self.self_check {
            Some(s) if self.rules.self_check && s.p_value < SELF_CHECK_P => {
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
    /// interval admits ξ ≥ 1 ([`super::limits::check_shape`]). The interval is the
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
    pub(super) fn check_reach(&self, events: f64) -> Result<(), ForecastError> {
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
    pub(super) fn at_least_seen(&self, mut e: LatencyEstimate) -> LatencyEstimate {
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
    /// measured rate (see [`super::PERMISSIBLE_MISS_INTERVALS`]).
    pub fn exceeded_once_per(&self, seconds: f64) -> Result<LatencyEstimate, ForecastError> {
        self.exceeded_once_in(self.rate_hz() * seconds)
    }
}
