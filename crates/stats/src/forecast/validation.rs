//! The out-of-sample test's result and the pieces of it that the
//! per-second test ([`super::diagnostics::validate`]) and the refitted one
//! ([`super::history::validate_fit`]) share: the level tested and the exact
//! Poisson test of the count seen above it.

use serde::Serialize;

use crate::SecondStats;

use super::special::poisson_cdf;
use super::tail::TailFit;

/// Seconds of the later part the validation level is expected to be
/// exceeded in.
pub const VALIDATION_EXPECTED: f64 = 10.0;
/// Which model the out-of-sample test checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValidationMethod {
    /// The checked tail model itself, refitted to the histogram stored at a
    /// checkpoint ([`super::history::validate_fit`]).
    TailFit,
    /// A tail fitted to the per-second maxima ([`super::diagnostics::validate`]), for runs
    /// without stored checkpoints.
    SecondMaxima,
}

/// The out-of-sample test (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validation {
    pub method: ValidationMethod,
    /// CPU-seconds fitted (about the first two thirds) and seconds with
    /// samples tested (the rest).
    pub fit_seconds: usize,
    pub test_seconds: usize,
    /// The level tested.
    pub level_ns: u64,
    /// Seconds of the later part expected to hold a sample above the level.
    pub predicted: f64,
    /// Seconds of the later part seen above it.
    pub observed: u64,
    /// Exact two-sided Poisson p-value of `observed` given `predicted`.
    pub p_value: f64,
    pub passed: bool,
}

impl Validation {
    /// "validated: predicted 12.0, observed 9, p = 0.47" (or "failed").
    pub fn describe(&self) -> String {
        let what = match self.method {
            ValidationMethod::TailFit => format!(
                "the tail model refitted to the first {} CPU-seconds",
                self.fit_seconds
            ),
            ValidationMethod::SecondMaxima => format!(
                "per-second maxima of the first {} seconds",
                self.fit_seconds
            ),
        };
        format!(
            "{}: {what}; seconds of the other {} above {}: predicted {:.1}, observed {}, p = {:.2}",
            if self.passed {
                "validated"
            } else {
                "validation failed"
            },
            self.test_seconds,
            super::text::fmt_ns(self.level_ns as i64),
            self.predicted,
            self.observed,
            self.p_value
        )
    }
}

/// One CPU's seconds of a pooled timeline.
pub struct CpuSeconds<'a> {
    pub cpu: Option<u32>,
    pub seconds: &'a [SecondStats],
}

/// The level a validation tests: where `fit` puts an exceedance
/// probability of `p`, never below its threshold (a level in the tail it
/// describes); and the probability the fit gives that level.
pub(crate) fn validation_level(fit: &TailFit, p: f64) -> (u64, f64) {
    let level = fit
        .return_level(p.min(fit.zeta))
        .unwrap_or(fit.threshold_ns)
        .max(fit.threshold_ns);
    let level_ns = level.ceil() as u64;
    let tail_p = fit.tail_probability(level_ns as f64).unwrap_or(fit.zeta);
    (level_ns, tail_p)
}

/// Two-sided exact Poisson p-value of `k` for mean `lambda`.
pub(crate) fn poisson_two_sided(k: u64, lambda: f64) -> f64 {
    if lambda <= 0.0 {
        return if k == 0 { 1.0 } else { 0.0 };
    }
    let below = poisson_cdf(k, lambda);
    let above = if k == 0 {
        1.0
    } else {
        1.0 - poisson_cdf(k - 1, lambda)
    };
    (2.0 * below.min(above)).min(1.0)
}
