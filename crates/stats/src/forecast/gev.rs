//! A second model of the tail: the generalized extreme value distribution
//! fitted to block maxima.
//!
//! The peaks-over-threshold model ([`super::TailFit`]) uses every sample
//! above a threshold; the block-maxima model uses only the largest sample of
//! each block of `b` seconds, which the per-second timeline already holds.
//! It rests on different assumptions (no threshold to choose, clusters
//! inside a block count once), so where both describe the data their return
//! levels agree within their intervals; where they do not, the report says
//! so rather than picking one (Coles 2001, chapter 3, for the model and its
//! profile-likelihood intervals).
//!
//! `G(z) = exp(−[1 + ξ (z − μ)/σ]^(−1/ξ))`, and the level a block maximum
//! exceeds with probability `p` is `z_p = μ − σ/ξ (1 − y_p^(−ξ))` with
//! `y_p = −ln(1 − p)` (`μ − σ ln y_p` for ξ = 0).
//!
//! The likelihood is maximised with the Nelder–Mead simplex of the `argmin`
//! crate, started from the Gumbel fit by moments. The interval of a return
//! level is its profile likelihood: `μ` is written in terms of `z_p`, the
//! likelihood maximised over `(ln σ, ξ)` for each `z_p`, and the interval is
//! where the deviance stays below the χ²₁ quantile.

use argmin::core::{CostFunction, Error as ArgminError, Executor, State};
use argmin::solver::neldermead::NelderMead;
use serde::Serialize;

use super::special::{bisect, chi2_1_quantile};
use super::{positive, ForecastError, Interval, SHAPE_MAX, SHAPE_MIN};

/// Fewest blocks a GEV fit accepts.
pub const MIN_BLOCKS: usize = 20;
/// Blocks the automatic block length aims for.
pub const TARGET_BLOCKS: usize = 50;
/// Longest automatic block (seconds).
pub const MAX_BLOCK_SECONDS: usize = 60;

/// The block length (seconds) for a run of `seconds`: `seconds / 50`
/// between 1 and 60 s, so that a short run still has about 50 blocks and a
/// long one blocks long enough for the asymptotics.
pub fn block_seconds(seconds: usize) -> usize {
    (seconds / TARGET_BLOCKS).clamp(1, MAX_BLOCK_SECONDS)
}

/// The maxima of consecutive blocks of `block` seconds of one per-second
/// series; a last, incomplete block is left out, as are blocks without a
/// sample (maximum 0).
pub fn block_maxima(per_second: &[u64], block: usize) -> Vec<f64> {
    per_second
        .chunks_exact(block.max(1))
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .filter(|&m| m > 0)
        .map(|m| m as f64)
        .collect()
}

/// A generalized extreme value distribution.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Gev {
    pub location: f64,
    pub scale: f64,
    pub shape: f64,
}

impl Gev {
    /// The level a block maximum exceeds with probability `p` (0 < p < 1).
    pub fn return_level(&self, p: f64) -> f64 {
        let y = -(-p).ln_1p();
        if self.shape.abs() < 1e-9 {
            self.location - self.scale * y.ln()
        } else {
            self.location - self.scale / self.shape * (1.0 - y.powf(-self.shape))
        }
    }

    /// P(block maximum ≤ z).
    pub fn cdf(&self, z: f64) -> f64 {
        let t = (z - self.location) / self.scale;
        if self.shape.abs() < 1e-9 {
            return (-(-t).exp()).exp();
        }
        let a = 1.0 + self.shape * t;
        if a <= 0.0 {
            return if self.shape > 0.0 { 0.0 } else { 1.0 };
        }
        (-a.powf(-1.0 / self.shape)).exp()
    }
}

/// The log-likelihood of `maxima` under a GEV; −∞ where impossible.
pub(crate) fn log_likelihood(maxima: &[f64], location: f64, scale: f64, shape: f64) -> f64 {
    if !positive(scale) || !scale.is_finite() || !location.is_finite() || !shape.is_finite() {
        return f64::NEG_INFINITY;
    }
    let n = maxima.len() as f64;
    let mut ll = -n * scale.ln();
    if shape.abs() < 1e-9 {
        for &z in maxima {
            let t = (z - location) / scale;
            ll -= t + (-t).exp();
        }
        return ll;
    }
    for &z in maxima {
        let a = 1.0 + shape * (z - location) / scale;
        if a <= 0.0 {
            return f64::NEG_INFINITY;
        }
        let la = a.ln();
        ll -= (1.0 + 1.0 / shape) * la + (-la / shape).exp();
    }
    ll
}

/// How closely an interval's ends are searched, relative to the level:
/// ten times finer than the histograms' 0.1 % buckets and the figures'
/// three digits. Each profile point is a whole fit, the forecast's largest
/// cost on a long run; 10⁻⁵ took a fifth more of them for nothing shown.
const LEVEL_TOLERANCE: f64 = 1e-4;

/// A maximum-likelihood GEV fit with what its intervals need.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GevFit {
    pub gev: Gev,
    pub log_likelihood: f64,
    pub blocks: usize,
    /// Seconds per block.
    pub block_seconds: usize,
    pub confidence: f64,
    #[serde(skip)]
    maxima: Vec<f64>,
}

/// The negative log-likelihood as argmin minimises it; impossible points
/// cost a large finite value so the simplex moves away from them.
struct Cost<F: Fn(&[f64]) -> f64> {
    ll: F,
}

impl<F: Fn(&[f64]) -> f64> CostFunction for Cost<F> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, p: &Self::Param) -> Result<f64, ArgminError> {
        let ll = (self.ll)(p);
        Ok(if ll.is_finite() { -ll } else { 1e300 })
    }
}

/// Minimises `−ll` from `start` with simplex steps `steps`; returns the
/// best point and its log-likelihood.
fn maximise(
    ll: impl Fn(&[f64]) -> f64,
    start: &[f64],
    steps: &[f64],
) -> Result<(Vec<f64>, f64), ForecastError> {
    let mut simplex = vec![start.to_vec()];
    for (i, s) in steps.iter().enumerate() {
        let mut v = start.to_vec();
        v[i] += s;
        simplex.push(v);
    }
    let fail = |e: ArgminError| ForecastError::InvalidArgument(format!("GEV fit failed: {e}"));
    let solver = NelderMead::new(simplex)
        .with_sd_tolerance(1e-7)
        .map_err(fail)?;
    let res = Executor::new(Cost { ll }, solver)
        .configure(|s| s.max_iters(2000))
        .run()
        .map_err(fail)?;
    let best = res
        .state()
        .get_best_param()
        .cloned()
        .ok_or_else(|| ForecastError::InvalidArgument("GEV fit found no point".into()))?;
    let cost = res.state().get_best_cost();
    Ok((best, -cost))
}

impl GevFit {
    /// Fits the block maxima (at least [`MIN_BLOCKS`], not all equal).
    pub fn fit(
        maxima: &[f64],
        block_seconds: usize,
        confidence: f64,
    ) -> Result<GevFit, ForecastError> {
        if maxima.len() < MIN_BLOCKS {
            return Err(ForecastError::InvalidArgument(format!(
                "a block-maxima fit needs at least {MIN_BLOCKS} blocks (got {})",
                maxima.len()
            )));
        }
        if maxima.iter().any(|v| !v.is_finite()) {
            return Err(ForecastError::InvalidArgument(
                "block maxima must be finite".into(),
            ));
        }
        let n = maxima.len() as f64;
        let mean = maxima.iter().sum::<f64>() / n;
        let var = maxima.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        if !positive(var) {
            return Err(ForecastError::InvalidArgument(
                "the block maxima are all equal".into(),
            ));
        }
        // Gumbel by moments, then the likelihood in (μ, ln σ, ξ).
        let s0 = var.sqrt() * 6f64.sqrt() / std::f64::consts::PI;
        let m0 = mean - 0.577_215_664_9 * s0;
        let ll = |p: &[f64]| {
            if !(SHAPE_MIN..=SHAPE_MAX).contains(&p[2]) {
                return f64::NEG_INFINITY;
            }
            log_likelihood(maxima, p[0], p[1].exp(), p[2])
        };
        // Start from two shapes and keep the better end point: the
        // likelihood of heavy-tailed maxima has a second, poorer mode.
        let mut best: Option<(Vec<f64>, f64)> = None;
        for xi0 in [0.1, 0.5] {
            let Ok(found) = maximise(ll, &[m0, s0.ln(), xi0], &[s0, 0.5, 0.2]) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| found.1 > b.1) {
                best = Some(found);
            }
        }
        let (p, l) = best.ok_or_else(|| {
            ForecastError::InvalidArgument("the block maxima admit no GEV fit".into())
        })?;
        if !l.is_finite() {
            return Err(ForecastError::InvalidArgument(
                "the block maxima admit no GEV fit".into(),
            ));
        }
        Ok(GevFit {
            gev: Gev {
                location: p[0],
                scale: p[1].exp(),
                shape: p[2],
            },
            log_likelihood: l,
            blocks: maxima.len(),
            block_seconds,
            confidence,
            maxima: maxima.to_vec(),
        })
    }

    /// The level exceeded on average once in `seconds` (by the maximum of
    /// a block, `block_seconds / seconds` being that block's probability).
    /// `None` for horizons not longer than a block.
    pub fn level_once_in(&self, seconds: f64) -> Option<f64> {
        let p = self.block_seconds as f64 / seconds;
        (positive(p) && p < 1.0).then(|| self.gev.return_level(p))
    }

    /// The profile log-likelihood of return level `z` at block
    /// probability `p`.
    fn profile(&self, z: f64, p: f64) -> f64 {
        let y = -(-p).ln_1p();
        let maxima = &self.maxima;
        let ll = |q: &[f64]| {
            let (scale, shape) = (q[0].exp(), q[1]);
            if !(SHAPE_MIN..=SHAPE_MAX).contains(&shape) {
                return f64::NEG_INFINITY;
            }
            let location = if shape.abs() < 1e-9 {
                z + scale * y.ln()
            } else {
                z + scale / shape * (1.0 - y.powf(-shape))
            };
            log_likelihood(maxima, location, scale, shape)
        };
        let g = self.gev;
        maximise(ll, &[g.scale.ln(), g.shape], &[0.3, 0.1]).map_or(f64::NEG_INFINITY, |r| r.1)
    }

    /// The profile-likelihood interval of [`GevFit::level_once_in`];
    /// `high: None` when the data do not bound it (within 1000 times the
    /// estimate's distance from the location).
    pub fn level_interval(&self, seconds: f64) -> Option<Interval<f64>> {
        let point = self.level_once_in(seconds)?;
        let p = self.block_seconds as f64 / seconds;
        let cut = self.log_likelihood - chi2_1_quantile(self.confidence) / 2.0;
        let g = |z: f64| self.profile(z, p) - cut;
        let spread = (point - self.gev.location).abs().max(self.gev.scale);
        let mut a = point - spread;
        while g(a) > 0.0 && point - a < spread * 1e3 {
            a = point - 2.0 * (point - a);
        }
        let low = if g(a) > 0.0 {
            a
        } else {
            bisect(a, point, LEVEL_TOLERANCE, g)
        };
        let mut b = point + spread;
        while g(b) > 0.0 && b - point < spread * 1e3 {
            b = point + 2.0 * (b - point);
        }
        let high = (g(b) <= 0.0).then(|| bisect(point, b, LEVEL_TOLERANCE, g));
        Some(Interval {
            low: low.min(point),
            high: high.map(|h| h.max(point)),
            confidence: self.confidence,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::test_rng::uniforms;

    /// Samples of a GEV by inversion.
    fn gev_samples(g: Gev, seed: u64, n: usize) -> Vec<f64> {
        uniforms(seed, n)
            .into_iter()
            .map(|u| g.return_level(1.0 - u))
            .collect()
    }

    #[test]
    fn return_level_inverts_the_cdf() {
        for shape in [-0.3, 0.0, 0.4] {
            let g = Gev {
                location: 100.0,
                scale: 10.0,
                shape,
            };
            for p in [0.5, 0.01, 1e-4] {
                let z = g.return_level(p);
                assert!(
                    (1.0 - g.cdf(z) - p).abs() < 1e-9 * p.max(1e-3),
                    "ξ {shape} p {p}"
                );
            }
        }
    }

    #[test]
    fn recovers_known_parameters_and_covers_the_true_level() {
        let mut covered = 0;
        let seeds = 20;
        for seed in 0..seeds {
            for shape in [-0.2, 0.1] {
                let g = Gev {
                    location: 50_000.0,
                    scale: 5_000.0,
                    shape,
                };
                let x = gev_samples(g, seed * 7 + 1, 200);
                let fit = GevFit::fit(&x, 1, 0.95).unwrap();
                assert!((fit.gev.shape - shape).abs() < 0.3, "{fit:?}");
                assert!((fit.gev.location - 50_000.0).abs() < 2_000.0, "{fit:?}");
                // The level exceeded once in 1000 blocks.
                let truth = g.return_level(1e-3);
                let i = fit.level_interval(1000.0).unwrap();
                if i.low <= truth && i.high.is_none_or(|h| truth <= h) {
                    covered += 1;
                }
            }
        }
        // 95 % intervals: at least 90 % of 40 fits cover the truth.
        println!("{covered} of 40 intervals cover the true level");
        assert!(covered >= 36, "{covered} of 40");
    }

    #[test]
    fn blocks_and_their_lengths() {
        assert_eq!(block_seconds(120), 2);
        assert_eq!(block_seconds(30), 1);
        assert_eq!(block_seconds(100_000), 60);
        assert_eq!(
            block_maxima(&[1, 5, 0, 0, 3, 2, 9], 2),
            vec![5.0, 3.0],
            "a block without samples and the incomplete last block are left out"
        );
        assert!(GevFit::fit(&[1.0; 30], 1, 0.95).is_err());
        assert!(GevFit::fit(&[1.0, 2.0, 3.0], 1, 0.95).is_err());
    }
}
