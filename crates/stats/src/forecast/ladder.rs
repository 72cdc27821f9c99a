//! The threshold ladder of a histogram's tail and the choice made on it
//! ([`super::stability::choose_threshold`]), as types: a tail fit keeps the
//! ladder it was chosen on ([`super::tail::TailFit::choice`]).

use serde::Serialize;

use super::text::fmt_ns;
use super::Interval;

/// One threshold of the ladder and the fit above it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rung {
    pub threshold_ns: f64,
    pub exceedances: u64,
    /// ξ̂.
    pub shape: f64,
    /// Profile-likelihood interval of ξ; `high: None` when it reaches the
    /// largest shape considered (3).
    pub shape_interval: Interval<f64>,
    pub scale: f64,
    /// σ* = σ − ξ u: constant above a threshold where the model holds.
    pub modified_scale: f64,
    /// The mean of the excesses over the threshold (mean residual life).
    pub mean_excess: f64,
}

impl Rung {
    pub(crate) fn admits(&self, shape: f64) -> bool {
        shape >= self.shape_interval.low && self.shape_interval.high.is_none_or(|h| shape <= h)
    }
}

/// A tail made of two regimes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mixture {
    /// The lower regime reaches up to about this latency.
    pub lower_up_to_ns: f64,
    /// The upper regime: its 10th percentile and its largest value.
    pub upper_from_ns: f64,
    pub upper_to_ns: f64,
    /// ξ of the lowest rung, beside ξ of the chosen one, to show the jump.
    pub lower_shape: f64,
}

impl Mixture {
    /// "two regimes: up to ~100 µs, and 0.6 ms–5.36 ms; the forecast
    /// describes the upper one".
    pub fn describe(&self) -> String {
        format!(
            "two regimes: up to ~{}, and {}–{}; the forecast describes the upper one",
            fmt_ns(self.lower_up_to_ns as i64),
            fmt_ns(self.upper_from_ns as i64),
            fmt_ns(self.upper_to_ns as i64)
        )
    }
}

/// The ladder and the threshold chosen on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThresholdChoice {
    /// From the lowest threshold up.
    pub rungs: Vec<Rung>,
    /// The index of the chosen rung.
    pub chosen: usize,
    /// Set when the rungs below the chosen one disagree with it.
    pub mixture: Option<Mixture>,
    /// ξ implied by the slope of the mean excess over the chosen rung and
    /// those above it (`slope / (1 + slope)`); `None` with fewer than three
    /// rungs there. A second, model-free reading of the shape.
    pub mean_excess_shape: Option<f64>,
}

impl ThresholdChoice {
    pub fn chosen(&self) -> &Rung {
        &self.rungs[self.chosen]
    }
}
