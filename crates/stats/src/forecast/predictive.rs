//! A prediction interval for the largest latency of a future window.
//!
//! A return level's confidence interval says where the level exceeded on
//! average once in `N` samples lies; it says nothing of how much the
//! maximum of one particular future window varies around it. Even with the
//! model exact, the maximum of a window in which `λ` clusters are expected
//! above the threshold is random: `P(M ≤ x) = exp(−λ S(x − u))`, with `S` the
//! generalized Pareto survival function of a cluster's peak excess (Coles
//! 2001, §4.2 and §5.3: the peaks of clusters follow the same GPD, and
//! clusters arrive as a Poisson process). Planning asks for that spread:
//! "the worst of the next hour: 2.1–9.8 ms, 95 %".
//!
//! # Parameter uncertainty
//!
//! The interval is made from the **predictive distribution**
//! `P(M ≤ x | data) = ∫ exp(−λ S(x − u; ξ, σ)) p(ξ, σ, λ | data)`, which
//! integrates the model over the uncertainty of its parameters, as Coles
//! (2001, §9.1) does for prediction in the Bayesian setting, where the
//! predictive distribution summarizes future extremes with both the
//! model's randomness and the parameters' uncertainty in it. Instead of
//! Markov chain Monte Carlo, the parameter distribution is its
//! large-sample normal approximation (with a flat
//! prior, the posterior is approximately normal about the maximum-likelihood
//! estimate with the inverse observed information as covariance):
//!
//! * `(ξ, ln σ)` from the fitted tail, covariance the inverse of the
//!   observed information (a numerical Hessian of the grouped
//!   log-likelihood at the estimate);
//! * `ln λ` independent of them, with variance `1/c` for the `c = k θ`
//!   clusters the fit saw above the threshold (a Poisson count);
//!   `λ = c · (window samples / run samples)`.
//!
//! The integral is a deterministic product rule over equal-probability
//! nodes of the standard normal ([`NODES`] per parameter), so the interval
//! is the same on every run. Where the information is not usable (a shape
//! on its boundary, or a likelihood that is flat or not concave there),
//! only `λ` is integrated and [`PredictedMax::parameter_uncertainty`] is
//! false: the interval is then too narrow and says so.
//!
//! Below the threshold the model says nothing; there the histogram's own
//! exceedance fraction `p̂(x)` stands in for the tail, with the same
//! clustering: `P(M ≤ x) ≈ exp(−n θ p̂(x))`.

use serde::Serialize;

use super::decluster::estimate_extremal_index;
use super::gpd::grouped_log_likelihood;
use super::limits::{check_horizon_within, Refusal};
use super::self_check::{rate_dispersion, SelfCheck, DISPERSION_WINDOW_S};
use super::special::{bisect, gamma_p, ln_gamma};
use super::{ForecastError, Measured, SHAPE_MAX, SHAPE_MIN};

/// Equal-probability normal nodes per parameter of the predictive integral.
pub const NODES: usize = 12;

/// The spread of the maximum of a future window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PredictedMax {
    /// The window's length in seconds of the measured load.
    pub window_s: f64,
    /// Samples expected in it at the measured rate.
    pub events: f64,
    /// Clusters expected above the fit's threshold in it (`λ`).
    pub clusters_expected: f64,
    /// The median of the predictive distribution of the window's maximum.
    pub median_ns: u64,
    /// The central prediction interval: the window's maximum lies in
    /// `[low, high]` with probability `confidence` under the model.
    pub low_ns: u64,
    /// `None` when the predictive distribution puts more than `(1 −
    /// confidence)/2` beyond any finite level (a shape that may be large).
    pub high_ns: Option<u64>,
    pub confidence: f64,
    /// Whether the uncertainty of the shape and scale was integrated over
    /// (false: only the cluster rate's; see the module documentation).
    pub parameter_uncertainty: bool,
}

/// One node of the parameter integral.
#[derive(Clone, Copy, Debug)]
struct Node {
    shape: f64,
    scale: f64,
    lambda: f64,
    weight: f64,
}

/// The predictive distribution of a window's maximum.
struct Predictive<'m, 'a> {
    measured: &'m Measured<'a>,
    u: f64,
    nodes: Vec<Node>,
    /// Samples in the window times θ (for the part below the threshold).
    n_theta: f64,
}

impl Predictive<'_, '_> {
    fn cdf(&self, x: f64) -> f64 {
        if x < self.u {
            let h = self.measured.histogram();
            let above = h.count_above(x.max(0.0) as u64) as f64 / h.count() as f64;
            return (-self.n_theta * above).exp();
        }
        let z = x - self.u;
        self.nodes
            .iter()
            .map(|n| n.weight * (-n.lambda * gpd_sf(n.shape, n.scale, z)).exp())
            .sum()
    }

    /// The smallest `x` with `cdf(x) ≥ q`, or `None` when no finite level
    /// reaches it (searched to 10⁹ times the largest sample).
    fn quantile(&self, q: f64) -> Option<f64> {
        let max = self.measured.histogram().max().map_or(1.0, |m| m.0 as f64);
        let f = |x: f64| self.cdf(x) - q;
        if f(self.u) >= 0.0 {
            let lo = self.measured.histogram().min().map_or(0.0, |m| m.0 as f64);
            if f(lo) >= 0.0 {
                return Some(lo);
            }
            return Some(bisect(lo.max(1.0), self.u, 1e-6, f));
        }
        let mut hi = (self.u * 2.0).max(max);
        let limit = max * 1e9;
        while f(hi) < 0.0 {
            if hi > limit {
                return None;
            }
            hi *= 2.0;
        }
        Some(bisect(self.u.max(1.0), hi, 1e-6, f))
    }
}

/// The GPD survival function at excess `z ≥ 0`.
fn gpd_sf(shape: f64, scale: f64, z: f64) -> f64 {
    if shape.abs() < 1e-12 {
        return (-z / scale).exp();
    }
    let a = shape * z / scale;
    if a <= -1.0 {
        return 0.0;
    }
    (-a.ln_1p() / shape).exp()
}

/// Φ(z), the standard normal distribution function.
fn normal_cdf(z: f64) -> f64 {
    let half = 0.5 * gamma_p(0.5, z * z / 2.0);
    if z >= 0.0 {
        0.5 + half
    } else {
        0.5 - half
    }
}

/// `m` equal-probability nodes of the standard normal (the quantiles at
/// `(i + ½)/m`), scaled to unit variance, each of weight `1/m`.
fn normal_nodes(m: usize) -> Vec<f64> {
    let raw: Vec<f64> = (0..m)
        .map(|i| {
            let p = (i as f64 + 0.5) / m as f64;
            let z = bisect(-40.0, 40.0, 1e-12, |z| normal_cdf(z) - p);
            if (p - 0.5).abs() < 1e-15 {
                0.0
            } else {
                z
            }
        })
        .collect();
    let var = raw.iter().map(|z| z * z).sum::<f64>() / m as f64;
    let s = if var > 0.0 { var.sqrt() } else { 1.0 };
    raw.iter().map(|z| z / s).collect()
}

/// The covariance of `(ξ, ln σ)`: the inverse of the observed information
/// (minus the numerical Hessian of the log-likelihood), or `None` where it
/// is not a covariance (a boundary estimate, a non-concave or flat
/// likelihood).
fn shape_scale_covariance(
    excesses: &super::excesses::Excesses,
    shape: f64,
    scale: f64,
) -> Option<[[f64; 2]; 2]> {
    let hx = 1e-3;
    let hs = 1e-3;
    let ls = scale.ln();
    if shape - 2.0 * hx <= SHAPE_MIN || shape + 2.0 * hx >= SHAPE_MAX {
        return None;
    }
    let l = |dx: f64, ds: f64| grouped_log_likelihood(excesses, shape + dx, (ls + ds).exp());
    let l0 = l(0.0, 0.0);
    let hxx = (l(hx, 0.0) - 2.0 * l0 + l(-hx, 0.0)) / (hx * hx);
    let hss = (l(0.0, hs) - 2.0 * l0 + l(0.0, -hs)) / (hs * hs);
    let hxs = (l(hx, hs) - l(hx, -hs) - l(-hx, hs) + l(-hx, -hs)) / (4.0 * hx * hs);
    // Information = −Hessian; it must be positive definite.
    let (a, b, d) = (-hxx, -hxs, -hss);
    let det = a * d - b * b;
    if !(a.is_finite() && b.is_finite() && d.is_finite()) || a <= 0.0 || det <= 0.0 {
        return None;
    }
    Some([[d / det, -b / det], [-b / det, a / det]])
}

/// `P(X ≥ k)` for `X ~ Binomial(n, p)`, summed term by term in logs.
fn binomial_upper(n: usize, k: usize, p: f64) -> f64 {
    let (nf, lp, lq) = (n as f64, p.ln(), (1.0 - p).ln());
    (k..=n)
        .map(|i| {
            let i = i as f64;
            (ln_gamma(nf + 1.0) - ln_gamma(i + 1.0) - ln_gamma(nf - i + 1.0)
                + i * lp
                + (nf - i) * lq)
                .exp()
        })
        .sum::<f64>()
        .min(1.0)
}

impl<'a> Measured<'a> {
    /// Estimates the extremal index from the run's per-second maxima (one
    /// series per CPU, as the histogram was recorded) at the tail fit's
    /// threshold ([`super::decluster::estimate_extremal_index`]); return levels
    /// then count clusters, not samples. Without a fit, or with too few
    /// busy seconds, θ stays 1 (every exceedance counts).
    pub fn with_timeline(mut self, series: &[&[u64]]) -> Measured<'a> {
        if let Ok(t) = &self.tail {
            self.extremal = estimate_extremal_index(series, self.histogram, t.threshold_ns as u64);
            let at = self
                .extremal
                .as_ref()
                .map_or(t.threshold_ns as u64, |e| e.threshold_ns);
            self.dispersion = rate_dispersion(series, at);
            self.self_check = self.self_check_of(series);
        }
        self
    }

    /// The self-check of the fitted model on `series` (per-second maxima,
    /// one series per CPU): see [`SelfCheck`]. `None` without a fit or
    /// with fewer than 10 windows.
    pub(crate) fn self_check_of(&self, series: &[&[u64]]) -> Option<SelfCheck> {
        let tail = self.tail().ok()?;
        let maxima: Vec<u64> = series
            .iter()
            .flat_map(|s| s.chunks_exact(DISPERSION_WINDOW_S))
            .map(|w| w.iter().copied().max().unwrap_or(0))
            .collect();
        if maxima.len() < 10 {
            return None;
        }
        let events = self.rate_hz() * DISPERSION_WINDOW_S as f64;
        let theta = self.theta();
        let lambda = tail.exceedances as f64 * theta * events / self.samples() as f64;
        let plug_in = Predictive {
            measured: self,
            u: tail.threshold_ns,
            nodes: vec![Node {
                shape: tail.fit.gpd.shape,
                scale: tail.fit.gpd.scale,
                lambda,
                weight: 1.0,
            }],
            n_theta: events * theta,
        };
        let outside = maxima
            .iter()
            .filter(|&&m| {
                let f = plug_in.cdf(m as f64);
                !(0.025..=0.975).contains(&f)
            })
            .count();
        Some(SelfCheck {
            windows: maxima.len(),
            outside,
            p_value: binomial_upper(maxima.len(), outside, 0.05),
        })
    }

    /// The prediction interval of the largest sample of a future window of
    /// `window_s` seconds of the measured load (see the module
    /// documentation). The same limits as the return levels apply: no fit,
    /// a shape that may reach 1 or a window beyond the reach give the
    /// reason instead.
    pub fn predicted_max(&self, window_s: f64) -> Result<PredictedMax, ForecastError> {
        if !(window_s > 0.0 && window_s.is_finite()) {
            return Err(ForecastError::InvalidArgument(format!(
                "the window must last a positive, finite time (got {window_s} s)"
            )));
        }
        let tail = self.tail().map_err(Clone::clone)?;
        if let Some(r) = self.heavy_tail() {
            return Err(ForecastError::Refused(r));
        }
        let events = self.rate_hz() * window_s;
        self.check_reach(events)?;
        check_horizon_within(self.duration_s(), window_s, self.rules().prediction_reach)
            .map_err(ForecastError::Refused)?;
        let mixture = tail.choice.as_ref().is_some_and(|c| c.mixture.is_some());
        if self.rules().refuse_mixture && mixture {
            return Err(ForecastError::Refused(Refusal::TwoRegimes));
        }
        let floor = self.rules().shape_floor.unwrap_or(SHAPE_MIN);
        let theta = self.theta();
        let clusters = tail.exceedances as f64 * theta;
        let lambda = clusters * events / self.samples() as f64;
        let gpd = tail.fit.gpd;
        let z = normal_nodes(NODES);
        let w = 1.0 / NODES as f64;
        let tau2 = if self.rules().rate_dispersion {
            self.dispersion.unwrap_or(0.0)
        } else {
            0.0
        };
        let sd_lambda = (1.0 / clusters.max(1.0) + tau2).sqrt();
        let cov = if tail.fit.on_boundary {
            None
        } else {
            shape_scale_covariance(tail.excesses(), gpd.shape, gpd.scale)
        };
        let mut nodes = Vec::new();
        let ln_scale = gpd.scale.ln();
        let pairs: Vec<(f64, f64, f64)> = match cov {
            Some(c) => {
                // Cholesky of the 2 × 2 covariance.
                let l11 = c[0][0].sqrt();
                let l21 = c[1][0] / l11;
                let l22 = (c[1][1] - l21 * l21).max(0.0).sqrt();
                z.iter()
                    .flat_map(|&a| z.iter().map(move |&b| (a, b)))
                    .map(|(a, b)| {
                        let shape = (gpd.shape + l11 * a).clamp(floor.max(SHAPE_MIN), SHAPE_MAX);
                        let scale = (ln_scale + l21 * a + l22 * b).exp();
                        (shape, scale, w * w)
                    })
                    .collect()
            }
            None => vec![(gpd.shape.max(floor), gpd.scale, 1.0)],
        };
        for &(shape, scale, wp) in &pairs {
            for &c in &z {
                nodes.push(Node {
                    shape,
                    scale,
                    lambda: lambda * (sd_lambda * c - sd_lambda * sd_lambda / 2.0).exp(),
                    weight: wp * w,
                });
            }
        }
        let p = Predictive {
            measured: self,
            u: tail.threshold_ns,
            nodes,
            n_theta: events * theta,
        };
        let alpha = (1.0 - self.confidence()) / 2.0;
        let ns = |v: f64| v.round().max(0.0) as u64;
        let low = p.quantile(alpha).unwrap_or(tail.threshold_ns);
        let median = p.quantile(0.5);
        let high = p.quantile(1.0 - alpha);
        Ok(PredictedMax {
            window_s,
            events,
            clusters_expected: lambda,
            median_ns: ns(median.unwrap_or(f64::MAX)),
            low_ns: ns(low),
            high_ns: high.map(ns),
            confidence: self.confidence(),
            parameter_uncertainty: cov.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::limits::Rules;
    use crate::forecast::self_check::SELF_CHECK_P;
    use crate::forecast::test_rng::Rng;
    use crate::forecast::TailOptions;
    use crate::Histogram;
    use latscope_model::Nanos;

    #[test]
    fn normal_nodes_are_symmetric_with_unit_variance() {
        let z = normal_nodes(12);
        assert_eq!(z.len(), 12);
        for i in 0..6 {
            assert!((z[i] + z[11 - i]).abs() < 1e-9, "{z:?}");
        }
        let var: f64 = z.iter().map(|v| v * v).sum::<f64>() / 12.0;
        assert!((var - 1.0).abs() < 1e-9);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
    }

    /// Exponential latencies above 20 µs (mean 5 µs) at 1 kHz, one sample
    /// at a time: the maximum of a window of `n` samples has the known
    /// distribution `(1 − e^{−y/5µs})^n`.
    fn exponential_run(seconds: u64, seed: u64) -> Histogram {
        let mut rng = Rng(seed);
        let mut h = Histogram::new();
        for _ in 0..seconds * 1000 {
            let y: f64 = -5_000.0 * (1.0 - rng.uniform()).ln();
            h.record(20_000 + y as u64);
        }
        h
    }

    #[test]
    fn the_interval_of_an_exponential_tail_holds_the_true_quantiles() {
        // 10 minutes measured, the maximum of the next 10 minutes
        // (600 000 samples): its true 2.5 %, 50 % and 97.5 % quantiles
        // are 20 µs + 5 µs · (ln n − ln(−ln q)).
        let h = exponential_run(600, 7);
        let m = Measured::new(&h, Nanos::from_secs(600), false, &TailOptions::default()).unwrap();
        let p = m.predicted_max(600.0).unwrap();
        let n = 600_000f64;
        let truth = |q: f64| 20_000.0 + 5_000.0 * (n.ln() - (-q.ln()).ln());
        assert!(p.parameter_uncertainty, "{p:?}");
        assert!((p.events - n).abs() < 1.0);
        let (lo, med, hi) = (
            p.low_ns as f64,
            p.median_ns as f64,
            p.high_ns.unwrap() as f64,
        );
        // Parameter uncertainty widens the interval beyond the truth's,
        // and the median stays near it (within 10 %).
        assert!(lo <= truth(0.025) * 1.02, "{p:?} vs {}", truth(0.025));
        assert!(hi >= truth(0.975) * 0.98, "{p:?} vs {}", truth(0.975));
        assert!(
            (med / truth(0.5) - 1.0).abs() < 0.1,
            "{p:?} vs {}",
            truth(0.5)
        );
        // It is narrower than four times the truth's.
        assert!(hi - lo < 4.0 * (truth(0.975) - truth(0.025)), "{p:?}");
    }

    #[test]
    fn a_longer_window_has_a_higher_interval_and_refusals_carry_over() {
        let h = exponential_run(120, 11);
        let m = Measured::new(&h, Nanos::from_secs(120), false, &TailOptions::default()).unwrap();
        let a = m.predicted_max(60.0).unwrap();
        let b = m.predicted_max(600.0).unwrap();
        assert!(
            b.median_ns > a.median_ns && b.low_ns > a.low_ns,
            "{a:?} {b:?}"
        );
        // An hour from two minutes is beyond the tenfold reach.
        assert!(matches!(
            m.predicted_max(3600.0),
            Err(ForecastError::Refused(_))
        ));
        assert!(m.predicted_max(0.0).is_err());
    }

    #[test]
    fn rate_dispersion_is_zero_for_even_counts_and_grows_with_spread() {
        // Every 10-second window holds 2 busy seconds: no extra variance.
        let even: Vec<u64> = (0..100)
            .map(|s| if s % 5 == 0 { 900 } else { 10 })
            .collect();
        assert_eq!(rate_dispersion(&[&even], 100), Some(0.0));
        // Windows alternate 0 and 4 busy seconds: mean 2, variance
        // 4 · 10/9; τ² = ln(1 + (40/9 − 2)/4).
        let uneven: Vec<u64> = (0..100)
            .map(|s| {
                if (s / 10) % 2 == 0 && s % 10 < 4 {
                    900
                } else {
                    10
                }
            })
            .collect();
        let t = rate_dispersion(&[&uneven], 100).unwrap();
        let want = (1.0f64 + (40.0 / 9.0 - 2.0) / 4.0).ln();
        assert!((t - want).abs() < 1e-12, "{t} vs {want}");
        assert_eq!(rate_dispersion(&[&even[..15]], 100), None);
        assert_eq!(rate_dispersion(&[&even], 1000), None);
        assert!(binomial_upper(10, 0, 0.05) > 0.999_999);
        // P(X ≥ 3) for Binomial(10, 0.05) = 1 − 0.9885 = 0.01150.
        assert!((binomial_upper(10, 3, 0.05) - 0.011_503).abs() < 1e-5);
    }

    /// Per-second maxima of a run recorded at 1 kHz by `latency`.
    fn timeline_of(
        seconds: u64,
        seed: u64,
        latency: impl Fn(u64, &mut Rng) -> u64,
    ) -> (Histogram, Vec<u64>) {
        let mut rng = Rng(seed);
        let mut h = Histogram::new();
        let mut maxima = Vec::new();
        for s in 0..seconds {
            let mut m = 0;
            for _ in 0..1000 {
                let v = latency(s, &mut rng);
                h.record(v);
                m = m.max(v);
            }
            maxima.push(m);
        }
        (h, maxima)
    }

    fn exponential(_: u64, rng: &mut Rng) -> u64 {
        let y: f64 = -5_000.0 * (1.0 - rng.uniform()).ln();
        20_000 + y as u64
    }

    #[test]
    fn the_self_check_passes_a_stationary_run_and_fails_a_changing_one() {
        let (h, maxima) = timeline_of(300, 5, exponential);
        let m = Measured::new(&h, Nanos::from_secs(300), false, &TailOptions::default())
            .unwrap()
            .with_timeline(&[&maxima]);
        let s = *m.self_check().unwrap();
        assert_eq!(s.windows, 30);
        assert!(s.p_value >= SELF_CHECK_P, "{s:?}");
        assert!(m.predicted_max(600.0).is_ok());
        // Every other minute the excesses are four times larger: the
        // 10-second maxima of the quiet minutes lie below the pooled
        // model's range, those of the loud ones above it.
        let (h, maxima) = timeline_of(300, 6, |s, rng| {
            let y: f64 = -5_000.0 * (1.0 - rng.uniform()).ln();
            let f = if (s / 60) % 2 == 0 { 1.0 } else { 4.0 };
            20_000 + (y * f) as u64
        });
        let m = Measured::new(&h, Nanos::from_secs(300), false, &TailOptions::default())
            .unwrap()
            .with_timeline(&[&maxima]);
        let s = *m.self_check().unwrap();
        assert!(s.p_value < SELF_CHECK_P, "{s:?}");
        let checked = Rules {
            self_check: true,
            refuse_mixture: false,
            ..Rules::STANDARD
        };
        let e = m.clone().with_rules(checked).predicted_max(600.0);
        let e = e.unwrap_err();
        assert!(e.to_string().contains("10-second maxima"), "{e}");
        // Without the self-check it is given.
        assert!(m
            .clone()
            .with_rules(Rules::NONE)
            .predicted_max(600.0)
            .is_ok());
    }

    #[test]
    fn a_bounded_tail_is_not_trusted_beyond_its_end() {
        // Excesses uniform on [0, 30 µs] (ξ = −1): the plug-in end is
        // 50 µs; with the shape floor the interval reaches beyond it.
        let (h, maxima) = timeline_of(120, 8, |_, rng| 20_000 + (30_000.0 * rng.uniform()) as u64);
        let m = Measured::new(&h, Nanos::from_secs(120), false, &TailOptions::default())
            .unwrap()
            .with_timeline(&[&maxima]);
        let floor = Rules {
            shape_floor: Some(0.0),
            ..Rules::NONE
        };
        let bounded = m.clone().with_rules(Rules::NONE).predicted_max(600.0);
        let floored = m.with_rules(floor).predicted_max(600.0).unwrap();
        let bounded = bounded.unwrap();
        assert!(bounded.high_ns.unwrap() <= 50_100, "{bounded:?}");
        assert!(
            floored.high_ns.unwrap() > bounded.high_ns.unwrap(),
            "{floored:?}"
        );
    }

    #[test]
    fn a_tail_of_two_regimes_gives_no_prediction_interval() {
        // Wake-ups of 20 µs + 5 µs exponential, and one in 500 a stall of
        // 2–5 ms: the ladder finds two regimes.
        let (h, maxima) = timeline_of(300, 9, |s, rng| {
            if rng.uniform() < 0.002 {
                2_000_000 + (3_000_000.0 * rng.uniform()) as u64
            } else {
                exponential(s, rng)
            }
        });
        let m = Measured::new(&h, Nanos::from_secs(300), false, &TailOptions::default())
            .unwrap()
            .with_timeline(&[&maxima]);
        let mixture = m.tail().unwrap().choice.as_ref().unwrap().mixture.is_some();
        assert!(mixture, "{:?}", m.tail().unwrap());
        assert_eq!(
            m.predicted_max(600.0),
            Err(ForecastError::Refused(Refusal::TwoRegimes))
        );
        assert!(m.with_rules(Rules::NONE).predicted_max(600.0).is_ok());
    }
}
