//! Peaks over threshold: a generalized Pareto tail fitted above a high
//! threshold, and the return levels and tail probabilities it implies.
//!
//! # Threshold
//!
//! [`Threshold::Auto`] chooses the threshold from the data by parameter
//! stability ([`super::stability::choose_threshold`]): a ladder of
//! thresholds from the 90th percentile up, a fit at each, and the lowest
//! rung above which the fitted shape stays inside its own interval. The
//! ladder, the choice and any second regime it found are kept with the fit
//! ([`TailFit::choice`]) for the diagnostics. Fewer than
//! [`super::stability::MIN_RUNG_EXCEEDANCES`] samples above the 90th
//! percentile (a run of fewer than 500 samples) give no fit
//! ([`ForecastError::TooFewTailSamples`]).
//!
//! [`TailFit::from_samples`] keeps the older fixed ladder of percentiles:
//! the highest of the 99.99th, 99.9th and 99th that leaves at least
//! [`PREFERRED_EXCEEDANCES`] (1000) samples above it, failing that the 99th
//! if it leaves at least `min_exceedances`.
//!
//! # Grouped data
//!
//! A histogram keeps each value to within 1/1024 of itself, not the values
//! themselves. The fit treats every bucket above the threshold as its count
//! of samples at the bucket's midpoint (weighted maximum likelihood). The
//! threshold is always a bucket's upper edge, so the exceedance count is
//! exact, and the rounding of each excess is at most half a bucket, 0.05 % of
//! the latency — orders of magnitude below the sampling error of any tail
//! estimate. (A full grouped-data likelihood would change nothing at that
//! resolution and cost a CDF difference per bucket.)
//!
//! # Return levels and intervals
//!
//! With `ζ = k/n` the fraction of samples above the threshold `u`, the level
//! exceeded with probability `p < ζ` is `x_p = u + σ/ξ ((ζ/p)^ξ − 1)`
//! (`u + σ ln(ζ/p)` for ξ = 0), and the model's tail probability above
//! `x > u` is `ζ · P(Y > x − u)`. Intervals come from the GPD's profile
//! likelihood (see [`super::gpd`]), which handles the skewed uncertainty of
//! far-tail levels far better than the delta method and, unlike a bootstrap,
//! is deterministic. `ζ` is treated as known: its relative error `1/√k`
//! (3 % at 1000 excesses) is small beside the shape's contribution this far
//! out.

use serde::Serialize;

use crate::Histogram;
use latscope_record::layout::{highest_of, index_of, HIGHEST_TRACKABLE};

use super::excesses::Excesses;
use super::gpd::{fit_weighted, profile_return_level, return_excess, GpdFit};
use super::ladder::ThresholdChoice;
use super::special::{bisect, chi2_1_quantile};
use super::{positive, ForecastError, Interval, LatencyEstimate, Provenance};

/// Fewest excesses a tail fit accepts by default.
pub const MIN_EXCEEDANCES: u64 = 100;
/// Excesses the automatic threshold aims for.
pub const PREFERRED_EXCEEDANCES: u64 = 1000;
/// The percentiles the automatic threshold tries, highest first.
pub const AUTO_QUANTILES: [f64; 3] = [0.9999, 0.999, 0.99];

/// How the threshold of a tail fit is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Threshold {
    /// Chosen by parameter stability (histograms) or the fixed ladder of
    /// percentiles (raw samples): see the module documentation.
    Auto,
    /// This quantile of the data (0 < q < 1).
    Quantile(f64),
    /// Samples strictly above this value (for histograms, above the upper
    /// edge of its bucket).
    Value(u64),
}

/// Options of a tail fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TailOptions {
    pub threshold: Threshold,
    /// Fewest excesses to fit at all.
    pub min_exceedances: u64,
    /// Confidence level of every interval (0.95 by default).
    pub confidence: f64,
}

impl Default for TailOptions {
    fn default() -> Self {
        TailOptions {
            threshold: Threshold::Auto,
            min_exceedances: MIN_EXCEEDANCES,
            confidence: 0.95,
        }
    }
}

impl TailOptions {
    pub(crate) fn validate(&self) -> Result<(), ForecastError> {
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(ForecastError::InvalidArgument(format!(
                "confidence must lie strictly between 0 and 1 (got {})",
                self.confidence
            )));
        }
        if let Threshold::Quantile(q) = self.threshold {
            if !(q > 0.0 && q < 1.0) {
                return Err(ForecastError::InvalidArgument(format!(
                    "threshold quantile must lie strictly between 0 and 1 (got {q})"
                )));
            }
        }
        Ok(())
    }
}

/// Where a histogram's tail is cut for a fit.
pub(crate) struct Cut {
    /// The threshold (ns) and the samples strictly above it.
    pub u: f64,
    pub k: u64,
    /// The quantile it was taken at, when it was chosen by one.
    pub quantile: Option<f64>,
    /// The ladder it was chosen on ([`Threshold::Auto`]).
    pub choice: Option<ThresholdChoice>,
}

/// A generalized Pareto tail fitted above a threshold.
#[derive(Clone, PartialEq, Serialize)]
pub struct TailFit {
    /// u: the fit describes samples strictly above it (ns).
    pub threshold_ns: f64,
    /// The quantile the threshold was taken at, when it was chosen by one.
    pub threshold_quantile: Option<f64>,
    /// All samples (n).
    pub samples: u64,
    /// Samples above the threshold (k).
    pub exceedances: u64,
    /// ζ = k / n: the probability of exceeding the threshold.
    pub zeta: f64,
    /// The GPD of the excesses over the threshold.
    pub fit: GpdFit,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// The threshold ladder and the choice on it, for automatic thresholds
    /// of histograms.
    #[serde(skip)]
    pub choice: Option<ThresholdChoice>,
    /// The excesses as weighted points, kept (grouped) for profile
    /// likelihoods.
    #[serde(skip)]
    excesses: Excesses,
}

impl std::fmt::Debug for TailFit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailFit")
            .field("threshold_ns", &self.threshold_ns)
            .field("threshold_quantile", &self.threshold_quantile)
            .field("samples", &self.samples)
            .field("exceedances", &self.exceedances)
            .field("zeta", &self.zeta)
            .field("fit", &self.fit)
            .field("confidence", &self.confidence)
            .finish_non_exhaustive()
    }
}

impl TailFit {
    /// Fits the tail of a histogram above the threshold `options` give as
    /// a quantile or a value; [`TailFit::from_histogram`] also chooses one
    /// ([`Threshold::Auto`]).
    pub(crate) fn from_histogram_fixed(
        h: &Histogram,
        options: &TailOptions,
    ) -> Result<TailFit, ForecastError> {
        options.validate()?;
        let max = h.max().ok_or(ForecastError::EmptyHistogram)?.0;
        let cut = match options.threshold {
            Threshold::Auto => {
                return Err(ForecastError::InvalidArgument(
                    "an automatic threshold is chosen by TailFit::from_histogram".to_string(),
                ))
            }
            Threshold::Quantile(q) => {
                let u = h.quantile(q).map_or(max, |v| v.0);
                Cut {
                    u: u as f64,
                    k: h.count_above(u),
                    quantile: Some(q),
                    choice: None,
                }
            }
            Threshold::Value(v) => {
                let u = if v >= HIGHEST_TRACKABLE {
                    v
                } else {
                    highest_of(index_of(v))
                };
                Cut {
                    u: u as f64,
                    k: h.count_above(u),
                    quantile: None,
                    choice: None,
                }
            }
        };
        TailFit::above(h, cut, options.min_exceedances, options.confidence)
    }

    /// Fits the excesses of `h` over `cut` (at least `needed` of them),
    /// treated as grouped data (see the module documentation).
    pub(crate) fn above(
        h: &Histogram,
        cut: Cut,
        needed: u64,
        confidence: f64,
    ) -> Result<TailFit, ForecastError> {
        let n = h.count();
        let max = h.max().ok_or(ForecastError::EmptyHistogram)?.0;
        check_count(cut.k, needed, cut.u)?;
        let uf = cut.u;
        // Thresholds are bucket edges (integers below 2^53), so this is exact.
        let u = uf as u64;
        let points: Vec<(f64, f64)> = h
            .buckets()
            .filter(|&(low, _, _)| low > u)
            .map(|(low, high, count)| {
                let value = if high >= HIGHEST_TRACKABLE {
                    max as f64
                } else {
                    ((low as f64 + high as f64) / 2.0).min(max as f64)
                };
                (value - uf, count as f64)
            })
            .collect();
        let excesses = Excesses::new(points);
        let fit = fit_weighted(&excesses)?;
        Ok(TailFit {
            threshold_ns: uf,
            threshold_quantile: cut.quantile,
            samples: n,
            exceedances: cut.k,
            zeta: cut.k as f64 / n as f64,
            fit,
            confidence,
            choice: cut.choice,
            excesses,
        })
    }

    /// Fits the tail of raw samples (ns, or any unit), with the same
    /// threshold rules; quantiles are order statistics.
    pub fn from_samples(samples: &[f64], options: &TailOptions) -> Result<TailFit, ForecastError> {
        options.validate()?;
        if samples.is_empty() {
            return Err(ForecastError::EmptyHistogram);
        }
        if samples.iter().any(|v| !v.is_finite()) {
            return Err(ForecastError::InvalidArgument(
                "samples must be finite".to_string(),
            ));
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let count_above = |u: f64| (n - sorted.partition_point(|&v| v <= u)) as u64;
        let at_quantile = |q: f64| -> (f64, u64) {
            let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
            let u = sorted[rank - 1];
            (u, count_above(u))
        };
        let (u, k, quantile) = match options.threshold {
            Threshold::Auto => auto_threshold(at_quantile, options.min_exceedances)?,
            Threshold::Quantile(q) => {
                let (u, k) = at_quantile(q);
                (u, k, Some(q))
            }
            Threshold::Value(v) => (v as f64, count_above(v as f64), None),
        };
        check_count(k, options.min_exceedances, u)?;
        let points: Vec<(f64, f64)> = sorted
            .iter()
            .filter(|&&v| v > u)
            .map(|&v| (v - u, 1.0))
            .collect();
        let excesses = Excesses::new(points);
        let fit = fit_weighted(&excesses)?;
        Ok(TailFit {
            threshold_ns: u,
            threshold_quantile: quantile,
            samples: n as u64,
            exceedances: k,
            zeta: k as f64 / n as f64,
            fit,
            confidence: options.confidence,
            choice: None,
            excesses,
        })
    }

    /// The excesses over the threshold as `(excess, weight)` points.
    pub(crate) fn points(&self) -> &[(f64, f64)] {
        self.excesses.points()
    }

    /// The excesses, grouped for the likelihood.
    pub(crate) fn excesses(&self) -> &Excesses {
        &self.excesses
    }

    /// The model's `P(X > x)` for `x` at or above the threshold; `None`
    /// below it, where the fit says nothing.
    pub fn tail_probability(&self, x: f64) -> Option<f64> {
        (x >= self.threshold_ns).then(|| self.zeta * self.fit.gpd.sf(x - self.threshold_ns))
    }

    /// The level exceeded with probability `p`, for `0 < p ≤ ζ`; `None`
    /// otherwise (above ζ the data themselves answer).
    pub fn return_level(&self, p: f64) -> Option<f64> {
        if !positive(p) || p > self.zeta {
            return None;
        }
        Some(self.threshold_ns + return_excess(&self.fit.gpd, (self.zeta / p).ln()))
    }

    fn cut(&self) -> f64 {
        self.fit.log_likelihood - chi2_1_quantile(self.confidence) / 2.0
    }

    /// Profile-likelihood interval of [`TailFit::return_level`]; `high` is
    /// `None` when the data cannot bound it (the profile never drops below
    /// the cut within 10¹² times the estimated excess).
    pub fn return_level_interval(&self, p: f64) -> Option<Interval<f64>> {
        let point = self.return_level(p)?;
        let u = self.threshold_ns;
        let z_hat = point - u;
        let ln_r = (self.zeta / p).ln();
        if !positive(z_hat) || !positive(ln_r) {
            return Some(Interval {
                low: point,
                high: Some(point),
                confidence: self.confidence,
            });
        }
        let cut = self.cut();
        let g = |z: f64| profile_return_level(&self.excesses, z, ln_r) - cut;
        // Lower end: between a point outside and the estimate.
        let mut a = z_hat / 2.0;
        while g(a) > 0.0 && a > z_hat * 1e-12 {
            a /= 2.0;
        }
        let low = if g(a) > 0.0 {
            u
        } else {
            u + bisect(a, z_hat, 1e-6, g)
        };
        let mut b = z_hat * 2.0;
        while g(b) > 0.0 && b < z_hat * 1e12 {
            b *= 2.0;
        }
        let high = if g(b) > 0.0 {
            None
        } else {
            Some(u + bisect(b / 2.0, b, 1e-6, g))
        };
        Some(Interval {
            low: low.min(point),
            high: high.map(|h| h.max(point)),
            confidence: self.confidence,
        })
    }

    /// Profile-likelihood interval of [`TailFit::tail_probability`] at
    /// `x` above the threshold. `low` is 0 when the data allow a bounded tail
    /// ending below `x`.
    pub fn tail_probability_interval(&self, x: f64) -> Option<Interval<f64>> {
        let p_hat = self.tail_probability(x)?;
        let z = x - self.threshold_ns;
        if !positive(z) {
            return Some(Interval {
                low: p_hat,
                high: Some(p_hat),
                confidence: self.confidence,
            });
        }
        // ln(ζ/p) beyond which p underflows: the far end of the search.
        const LN_R_MAX: f64 = 700.0;
        let cut = self.cut();
        let h = |ln_r: f64| profile_return_level(&self.excesses, z, ln_r) - cut;
        let ln_r_hat = if p_hat > 0.0 {
            (self.zeta / p_hat).ln().min(LN_R_MAX)
        } else {
            LN_R_MAX
        };
        if !positive(h(ln_r_hat)) {
            // Not even the estimate clears the cut: numerically degenerate.
            return Some(Interval {
                low: p_hat,
                high: Some(p_hat),
                confidence: self.confidence,
            });
        }
        // Largest plausible p: smallest ln r still inside.
        let mut a = ln_r_hat / 2.0;
        while h(a) > 0.0 && a > 1e-9 {
            a /= 2.0;
        }
        let p_high = if h(a) > 0.0 {
            self.zeta
        } else {
            self.zeta * (-bisect(a, ln_r_hat, 1e-6, h)).exp()
        };
        // Smallest plausible p: largest ln r still inside.
        let p_low = if ln_r_hat >= LN_R_MAX {
            0.0
        } else {
            let mut b = (ln_r_hat * 2.0).min(LN_R_MAX);
            while h(b) > 0.0 && b < LN_R_MAX {
                b = (b * 2.0).min(LN_R_MAX);
            }
            if h(b) > 0.0 {
                0.0
            } else {
                self.zeta * (-bisect(b / 2.0, b, 1e-6, h)).exp()
            }
        };
        Some(Interval {
            low: p_low.min(p_hat),
            high: Some(p_high.max(p_hat)),
            confidence: self.confidence,
        })
    }

    /// The latency exceeded on average once in `events` samples, from the
    /// model, labelled [`Provenance::Extrapolated`]. `None` when `1/events`
    /// is not below ζ (the data answer that directly).
    pub fn estimate_once_in(&self, events: f64) -> Option<LatencyEstimate> {
        let p = 1.0 / events;
        if !positive(self.zeta - p) {
            return None;
        }
        let point = self.return_level(p)?;
        let interval = self.return_level_interval(p)?;
        Some(LatencyEstimate {
            latency_ns: to_ns(point),
            provenance: Provenance::Extrapolated,
            interval: Interval {
                low: to_ns(interval.low.floor()),
                high: interval.high.map(|h| to_ns(h.ceil())),
                confidence: interval.confidence,
            },
            events,
            expected_in_run: self.samples as f64 / events,
        })
    }
}

fn to_ns(v: f64) -> u64 {
    // `as` saturates for out-of-range floats, which is what we want here.
    v.round().max(0.0) as u64
}

fn check_count(k: u64, needed: u64, u: f64) -> Result<(), ForecastError> {
    if k < needed.max(3) {
        return Err(ForecastError::TooFewTailSamples {
            exceedances: k,
            needed: needed.max(3),
            threshold_ns: to_ns(u),
        });
    }
    Ok(())
}

fn auto_threshold(
    at_quantile: impl Fn(f64) -> (f64, u64),
    min: u64,
) -> Result<(f64, u64, Option<f64>), ForecastError> {
    for q in AUTO_QUANTILES {
        let (u, k) = at_quantile(q);
        if k >= PREFERRED_EXCEEDANCES.max(min) {
            return Ok((u, k, Some(q)));
        }
    }
    let q = AUTO_QUANTILES[AUTO_QUANTILES.len() - 1];
    let (u, k) = at_quantile(q);
    check_count(k, min, u)?;
    Ok((u, k, Some(q)))
}
