//! The generalized Pareto distribution (GPD) and its maximum-likelihood fit.
//!
//! For excesses `y = x − u > 0` over a high threshold `u`, the
//! Pickands–Balkema–de Haan theorem makes the GPD the natural model:
//!
//! ```text
//! P(Y > y) = (1 + ξ y / σ)^(−1/ξ)     (ξ ≠ 0)
//! P(Y > y) = exp(−y / σ)              (ξ = 0)
//! ```
//!
//! with shape `ξ` (tail heaviness: ξ > 0 heavy, power-law; ξ = 0
//! exponential; ξ < 0 bounded, with endpoint `−σ/ξ`) and scale `σ > 0`.
//!
//! # Fit
//!
//! Data are weighted points `(y, w)`: a raw sample has weight 1; a histogram
//! bucket contributes its midpoint with its count as weight (see
//! [`super::TailFit`]). The fit maximises the weighted log-likelihood over
//! `ξ ∈ [−1, 3]`:
//!
//! * **Interior** (Grimshaw's reduction): writing `θ = ξ/σ`, the likelihood
//!   equations give `ξ(θ) = Σ w ln(1 + θ y) / W`, which leaves a
//!   one-dimensional profile `ℓ*(θ) = −W ln(ξ(θ)/θ) − W (1 + ξ(θ))`. It is
//!   maximised by a scan over `θ` (every `θ` whose `ξ(θ)` lies in `[−1, 3]`)
//!   refined by golden-section search, so no starting value can send it to a
//!   wrong local optimum.
//! * **Boundary** `ξ = −1`: the GPD is uniform on `[0, σ]` and the likelihood
//!   is maximised at `σ = max y`. A finite interferer (a fixed-length busy
//!   period hit at a random phase) produces exactly such a tail, so this
//!   candidate is always compared; below `ξ = −1` the likelihood is unbounded
//!   and the estimate meaningless, hence the limit. Above `ξ = 3` a latency
//!   tail would have no finite moment of order 1/3; the limit only keeps the
//!   search finite.
//!
//! The likelihood depends on the data only through `W`, `Σ w y`, the
//! largest excess and `Σ w ln(1 + θ y)`; [`Excesses`] computes that sum from
//! groups of nearby excesses, to rounding the same as excess by excess at a
//! small fraction of the cost (see [`super::excesses`]).
//!
//! # Profile likelihood
//!
//! Confidence intervals for return levels (and, by the same constraint, for
//! tail probabilities) come from the profile likelihood: for a candidate
//! return level `z` at exceedance ratio `r` (see [`profile_return_level`]) the
//! scale is fixed by `σ = z ξ / (r^ξ − 1)` and the log-likelihood maximised
//! over `ξ` alone. The interval is the set of `z` whose deviance
//! `2 (ℓ̂ − ℓ_p(z))` stays below the χ²₁ quantile (Coles, *An Introduction to
//! Statistical Modeling of Extreme Values*, 2001, §4.3.3). It is
//! asymmetric, as return-level uncertainty is, unlike the delta method's.
//! The profile of the shape alone (for the threshold ladder,
//! [`super::stability`]) maximises over σ for each ξ; that maximum is
//! unique and is solved for directly ([`best_log_scale`]).

use serde::Serialize;

use super::excesses::Excesses;
use super::{positive, ForecastError};

/// Smallest shape the fit considers (the uniform distribution).
pub const SHAPE_MIN: f64 = -1.0;
/// Largest shape the fit considers.
pub const SHAPE_MAX: f64 = 3.0;

/// A generalized Pareto distribution of excesses over a threshold.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Gpd {
    /// ξ: > 0 heavy (power-law) tail, 0 exponential, < 0 bounded.
    pub shape: f64,
    /// σ > 0, in the unit of the data (nanoseconds for latencies).
    pub scale: f64,
}

impl Gpd {
    /// A GPD; the scale must be positive and both finite.
    pub fn new(shape: f64, scale: f64) -> Result<Gpd, ForecastError> {
        if !shape.is_finite() || !scale.is_finite() || scale <= 0.0 {
            return Err(ForecastError::InvalidArgument(format!(
                "a generalized Pareto distribution needs a finite shape and a positive scale (got ξ = {shape}, σ = {scale})"
            )));
        }
        Ok(Gpd { shape, scale })
    }

    /// P(Y > y).
    pub fn sf(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return 1.0;
        }
        let (xi, s) = (self.shape, self.scale);
        if xi == 0.0 {
            return (-y / s).exp();
        }
        let a = xi * y / s;
        if a <= -1.0 {
            return 0.0;
        }
        (-a.ln_1p() / xi).exp()
    }

    /// P(Y ≤ y).
    pub fn cdf(&self, y: f64) -> f64 {
        1.0 - self.sf(y)
    }

    /// The excess exceeded with probability `p` (0 < p ≤ 1): the inverse of
    /// [`Gpd::sf`]. `quantile(1 − u)` for uniform `u` samples the GPD.
    pub fn isf(&self, p: f64) -> f64 {
        let lr = -p.ln();
        if self.shape == 0.0 {
            self.scale * lr
        } else {
            self.scale * (self.shape * lr).exp_m1() / self.shape
        }
    }

    /// The excess below which a fraction `q` of the distribution lies.
    pub fn quantile(&self, q: f64) -> f64 {
        self.isf(1.0 - q)
    }

    /// The largest possible excess: `−σ/ξ` for a bounded tail (ξ < 0).
    pub fn upper_endpoint(&self) -> Option<f64> {
        (self.shape < 0.0).then(|| -self.scale / self.shape)
    }

    /// The weighted log-likelihood of points `(y, w)`; −∞ where the
    /// distribution cannot have produced them.
    pub fn log_likelihood(&self, points: &[(f64, f64)]) -> f64 {
        log_likelihood(points, self.shape, self.scale)
    }
}

/// A maximum-likelihood GPD fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GpdFit {
    pub gpd: Gpd,
    /// The maximised weighted log-likelihood.
    pub log_likelihood: f64,
    /// Total weight (the number of excesses).
    pub weight: f64,
    /// Whether the estimate sits on a limit of the shape range (−1 or 3),
    /// where the usual asymptotics (and so the intervals) are rough.
    pub on_boundary: bool,
}

/// The log-likelihood of points `(y, w)`, excess by excess.
pub(crate) fn log_likelihood(points: &[(f64, f64)], xi: f64, sigma: f64) -> f64 {
    if !positive(sigma) || !sigma.is_finite() || !xi.is_finite() {
        return f64::NEG_INFINITY;
    }
    let w_total: f64 = points.iter().map(|p| p.1).sum();
    let head = -w_total * sigma.ln();
    if xi == 0.0 {
        let s: f64 = points.iter().map(|&(y, w)| w * y).sum();
        return head - s / sigma;
    }
    let coef = 1.0 + 1.0 / xi;
    if coef == 0.0 {
        // ξ = −1: uniform on [0, σ].
        let fits = points.iter().all(|&(y, _)| y <= sigma);
        return if fits { head } else { f64::NEG_INFINITY };
    }
    let mut s = 0.0;
    for &(y, w) in points {
        let a = xi * y / sigma;
        if a <= -1.0 {
            return f64::NEG_INFINITY;
        }
        s += w * a.ln_1p();
    }
    head - coef * s
}

/// [`log_likelihood`] of grouped excesses: the same value, to rounding,
/// from [`Excesses::sum_ln_1p`].
pub(crate) fn grouped_log_likelihood(e: &Excesses, xi: f64, sigma: f64) -> f64 {
    if !positive(sigma) || !sigma.is_finite() || !xi.is_finite() {
        return f64::NEG_INFINITY;
    }
    let head = -e.weight() * sigma.ln();
    if xi == 0.0 {
        return head - e.sum() / sigma;
    }
    let coef = 1.0 + 1.0 / xi;
    if coef == 0.0 {
        // ξ = −1: uniform on [0, σ].
        return if e.max() <= sigma {
            head
        } else {
            f64::NEG_INFINITY
        };
    }
    // Only the largest excess can leave the support.
    if xi * e.max() / sigma <= -1.0 {
        return f64::NEG_INFINITY;
    }
    head - coef * e.sum_ln_1p(xi / sigma)
}

/// Maximum-likelihood fit to raw excesses (all > 0), each of weight 1.
pub fn fit_gpd(excesses: &[f64]) -> Result<GpdFit, ForecastError> {
    let points: Vec<(f64, f64)> = excesses.iter().map(|&y| (y, 1.0)).collect();
    fit_weighted(&Excesses::new(points))
}

struct Summary {
    w: f64,
    mean: f64,
    max: f64,
}

fn summarize(e: &Excesses) -> Result<Summary, ForecastError> {
    for &(y, wt) in e.points() {
        if !positive(y) || !y.is_finite() || !positive(wt) || !wt.is_finite() {
            return Err(ForecastError::InvalidArgument(format!(
                "excesses must be positive and finite with positive weights (got {y} with weight {wt})"
            )));
        }
    }
    let (w, s, max, min) = (e.weight(), e.sum(), e.max(), e.min());
    if w < 3.0 {
        return Err(ForecastError::DegenerateTail(format!(
            "{w} excesses cannot determine two parameters"
        )));
    }
    if max <= min {
        return Err(ForecastError::DegenerateTail(
            "every excess has the same value".to_string(),
        ));
    }
    Ok(Summary {
        w,
        mean: s / w,
        max,
    })
}

/// The log-scale `u = ln σ` in `[a, b]` that maximises the log-likelihood
/// at shape `xi` (a profile over the scale), found exactly rather than by
/// search. For ξ ≥ −1 the score
///
/// ```text
/// ∂ℓ/∂u = P(σ) − W,   P(σ) = (1 + ξ)/σ · Σ w y / (1 + ξ y/σ),
/// ```
///
/// falls strictly as σ grows (each `y/(1 + ξ y/σ)` does), so the
/// likelihood has one maximum: where `P = W`, or the end of `[a, b]` that
/// root lies beyond. `ln P − ln W` is solved by safeguarded Newton in
/// `v = ln(σ − σ₀)`, `σ₀ = max(−ξ max y, 0)` the pole of `P`: there it is
/// nearly linear even when the root lies a hair above the pole, as it does
/// for shapes near −1. A handful of steps, each a sum of divisions, replace
/// the hundred likelihoods of a grid and golden-section search. `None` for
/// ξ < −1 or invalid input, where the argument does not hold.
pub(crate) fn best_log_scale(points: &Excesses, xi: f64, a: f64, b: f64) -> Option<f64> {
    let w = points.weight();
    if xi < SHAPE_MIN || !xi.is_finite() || !a.is_finite() || !b.is_finite() || a >= b {
        return None;
    }
    if !positive(w) || !positive(points.sum()) {
        return None;
    }
    let mean = points.sum() / w;
    if xi == 0.0 {
        return Some(mean.ln().clamp(a, b));
    }
    if 1.0 + 1.0 / xi == 0.0 {
        // ξ = −1: ℓ = −W ln σ, largest at the smallest σ allowed.
        return Some(a);
    }
    let pole = (-xi * points.max()).max(0.0);
    // ln P(σ) − ln W and its derivative in v, for σ = σ₀ + e^v.
    let h = |v: f64| -> (f64, f64) {
        let sigma = pole + v.exp();
        let (sa, sb) = points.sum_ratios(xi / sigma);
        let p = (1.0 + xi) / sigma * sa;
        (p.ln() - w.ln(), -(sb / sa) * v.exp() / sigma)
    };
    let (va, vb) = ((a.exp() - pole).ln(), (b.exp() - pole).ln());
    if !va.is_finite() || !vb.is_finite() || va >= vb {
        return None;
    }
    if h(va).0 <= 0.0 {
        return Some(a);
    }
    if h(vb).0 >= 0.0 {
        return Some(b);
    }
    let (mut lo, mut hi) = (va, vb);
    // Start from the moment estimate σ = mean (1 − ξ), where it lies inside.
    let start = (mean * (1.0 - xi).max(0.05) - pole).ln();
    let mut v = if start > va && start < vb {
        start
    } else {
        0.5 * (va + vb)
    };
    for _ in 0..100 {
        let (f, df) = h(v);
        let step = f / df;
        if !step.is_finite() {
            return None;
        }
        if step.abs() <= 1e-10 * (1.0 + v.abs()) {
            v -= step;
            break;
        }
        if f > 0.0 {
            lo = v;
        } else {
            hi = v;
        }
        let next = v - step;
        v = if next > lo && next < hi {
            next
        } else {
            0.5 * (lo + hi)
        };
        if hi - lo <= 1e-10 * (1.0 + v.abs()) {
            break;
        }
    }
    Some((pole + v.exp()).ln().clamp(a, b))
}

/// `max ℓ(shape, σ)` over `ln σ ∈ [ln_lo, ln_hi]`: at [`best_log_scale`],
/// or, where that does not apply (shapes below −1), by a grid and
/// golden-section search.
pub(crate) fn profile_scale(points: &Excesses, shape: f64, ln_lo: f64, ln_hi: f64) -> f64 {
    match best_log_scale(points, shape, ln_lo, ln_hi) {
        Some(u) => grouped_log_likelihood(points, shape, u.exp()),
        None => search_scale(points, shape, ln_lo, ln_hi),
    }
}

/// [`profile_scale`] by a grid of 61 log-scales and golden-section search
/// between the best one's neighbours.
fn search_scale(points: &Excesses, shape: f64, ln_lo: f64, ln_hi: f64) -> f64 {
    let grid: Vec<f64> = (0..=60)
        .map(|i| ln_lo + (ln_hi - ln_lo) * i as f64 / 60.0)
        .collect();
    grid_then_golden(&grid, 40, |s| {
        grouped_log_likelihood(points, shape, s.exp())
    })
    .1
}

/// Golden-section maximisation of `f` on `[a, b]`.
pub(crate) fn golden_max(
    mut a: f64,
    mut b: f64,
    iters: usize,
    f: impl Fn(f64) -> f64,
) -> (f64, f64) {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    let mut fc = f(c);
    let mut fd = f(d);
    for _ in 0..iters {
        if fc >= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    if fc >= fd {
        (c, fc)
    } else {
        (d, fd)
    }
}

/// Maximises `f` over the sorted `grid`: the best grid point, then
/// golden-section search between its neighbours. Returns `(x, f(x))`.
pub(crate) fn grid_then_golden(grid: &[f64], iters: usize, f: impl Fn(f64) -> f64) -> (f64, f64) {
    let values: Vec<f64> = grid.iter().map(|&x| f(x)).collect();
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] || values[best].is_nan() {
            best = i;
        }
    }
    let lo = grid[best.saturating_sub(1)];
    let hi = grid[(best + 1).min(grid.len() - 1)];
    let (x, fx) = golden_max(lo, hi, iters, &f);
    if fx > values[best] {
        (x, fx)
    } else {
        (grid[best], values[best])
    }
}

/// Weighted maximum-likelihood fit (see the module documentation).
pub(crate) fn fit_weighted(points: &Excesses) -> Result<GpdFit, ForecastError> {
    let sum = summarize(points)?;
    let w = sum.w;
    let xi_of = |theta: f64| -> f64 { points.sum_ln_1p(theta) / w };
    // ℓ*(θ) from ξ(θ), which the bounded profile below has already computed.
    let profile_at = |theta: f64, xi: f64| -> f64 {
        if theta == 0.0 {
            return -w * sum.mean.ln() - w;
        }
        if !xi.is_finite() {
            return f64::NEG_INFINITY;
        }
        -w * (xi / theta).ln() - w * (1.0 + xi)
    };
    // θ ranges over (−1/max y, ∞). ξ(θ) rises from −∞ at the lower end
    // (only the largest excess's term diverges, so ξ reaches −1 only very
    // close to it) to ∞; lines with ξ(θ) outside [−1, 3] are excluded.
    let theta_floor = -1.0 / sum.max;
    let bounded = |theta: f64| -> f64 {
        if theta == 0.0 {
            return profile_at(theta, 0.0);
        }
        let xi = xi_of(theta);
        if !(SHAPE_MIN..=SHAPE_MAX).contains(&xi) {
            return f64::NEG_INFINITY;
        }
        profile_at(theta, xi)
    };
    let mut theta_hi = 1.0 / sum.mean;
    while xi_of(theta_hi) < SHAPE_MAX {
        theta_hi *= 2.0;
    }

    let mut grid: Vec<f64> = Vec::with_capacity(200);
    // Negative side: fractions of the lower end, dense near both ends.
    for j in 1..20 {
        grid.push(theta_floor * j as f64 / 20.0);
    }
    for e in 2..=12 {
        grid.push(theta_floor * (1.0 - 10f64.powi(-e)));
    }
    for e in 2..=8 {
        grid.push(theta_floor * 2.5 * 10f64.powi(-e));
    }
    grid.push(0.0);
    // Positive side: log-spaced over 10 decades below ξ ≈ 3.
    for j in 0..=50 {
        grid.push(theta_hi * 10f64.powf(-10.0 + j as f64 / 5.0));
    }
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    let (theta, ll) = grid_then_golden(&grid, 50, bounded);

    let interior = if theta == 0.0 {
        (0.0, sum.mean)
    } else {
        let xi = xi_of(theta);
        (xi, xi / theta)
    };
    // The ξ = −1 boundary: uniform on [0, max].
    let ll_uniform = -w * sum.max.ln();
    let (xi, sigma, ll, mut on_boundary) = if ll_uniform > ll {
        (SHAPE_MIN, sum.max, ll_uniform, true)
    } else {
        (interior.0, interior.1, ll, false)
    };
    if xi >= SHAPE_MAX - 1e-6 {
        on_boundary = true;
    }
    // Recompute at the chosen point so the value is exactly the likelihood.
    let ll_check = grouped_log_likelihood(points, xi, sigma);
    let ll = if ll_check.is_finite() { ll_check } else { ll };
    Ok(GpdFit {
        gpd: Gpd::new(xi, sigma)?,
        log_likelihood: ll,
        weight: w,
        on_boundary,
    })
}

/// The excess `z` exceeded with probability `p = ζ / r` (where `ζ` is the
/// threshold's exceedance rate), for `ln_r = ln(ζ/p) > 0`.
pub(crate) fn return_excess(gpd: &Gpd, ln_r: f64) -> f64 {
    if gpd.shape == 0.0 {
        gpd.scale * ln_r
    } else {
        gpd.scale * (gpd.shape * ln_r).exp_m1() / gpd.shape
    }
}

/// The profile log-likelihood of return excess `z` at `ln_r`: the
/// log-likelihood maximised over ξ ∈ [−1, 3] with σ tied to ξ by
/// `z = σ (r^ξ − 1) / ξ`.
pub(crate) fn profile_return_level(points: &Excesses, z: f64, ln_r: f64) -> f64 {
    if !positive(z) || !positive(ln_r) {
        return f64::NEG_INFINITY;
    }
    let sigma_of = |xi: f64| -> f64 {
        if xi.abs() < 1e-12 {
            z / ln_r
        } else {
            z * xi / (xi * ln_r).exp_m1()
        }
    };
    let ll = |xi: f64| grouped_log_likelihood(points, xi, sigma_of(xi));
    let grid: Vec<f64> = (0..=80)
        .map(|i| SHAPE_MIN + (SHAPE_MAX - SHAPE_MIN) * i as f64 / 80.0)
        .collect();
    grid_then_golden(&grid, 40, ll).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sf_and_isf_are_inverse() {
        for &(xi, s) in &[
            (0.3, 10.0),
            (0.0, 5.0),
            (-0.4, 2.0),
            (-1.0, 3.0),
            (1.5, 1.0),
        ] {
            let g = Gpd::new(xi, s).unwrap();
            for &p in &[0.9, 0.5, 1e-3, 1e-9] {
                let y = g.isf(p);
                assert!((g.sf(y) - p).abs() <= 1e-6 * p, "ξ {xi} p {p}");
            }
        }
        let g = Gpd::new(-0.5, 2.0).unwrap();
        assert_eq!(g.upper_endpoint(), Some(4.0));
        assert_eq!(g.sf(4.5), 0.0);
        assert_eq!(Gpd::new(0.1, 1.0).unwrap().upper_endpoint(), None);
        assert!(Gpd::new(0.1, 0.0).is_err());
    }

    #[test]
    fn rejects_degenerate_data() {
        assert!(fit_gpd(&[1.0, 1.0, 1.0, 1.0]).is_err());
        assert!(fit_gpd(&[1.0, 2.0]).is_err());
        assert!(fit_gpd(&[1.0, -2.0, 3.0]).is_err());
    }

    #[test]
    fn uniform_data_hit_the_lower_shape_limit() {
        let ys: Vec<f64> = (1..=1000).map(|i| i as f64 * 0.5).collect();
        let fit = fit_gpd(&ys).unwrap();
        assert!(fit.gpd.shape <= -0.95, "{:?}", fit);
        assert!((fit.gpd.scale - 500.0).abs() < 10.0, "{:?}", fit);
    }

    /// The grouped likelihood and the exact scale profile against the
    /// computation they replace: the same fit, search and profiles, excess
    /// by excess in the order given, with the scale found by grid and
    /// golden-section search. The likelihood agrees to rounding; the
    /// estimates to about 1e-7, the precision to which a search on
    /// rounded likelihoods can place a maximum at all (summing the same
    /// excesses in reverse order moves them as much).
    #[test]
    fn grouped_fits_equal_the_direct_ones() {
        let close = |a: f64, b: f64, rel: f64| (a - b).abs() <= rel * a.abs().max(b.abs());
        for (name, points) in crate::forecast::excesses::representative() {
            let fast = Excesses::new(points.clone());
            let slow = Excesses::ungrouped(points.clone());
            let f = fit_weighted(&fast).unwrap();
            let s = fit_weighted(&slow).unwrap();
            println!("{name}: {} values, {:?} against {:?}", points.len(), f, s);
            assert!(
                close(f.log_likelihood, s.log_likelihood, 1e-12),
                "{name}: {f:?} {s:?}"
            );
            assert!(
                (f.gpd.shape - s.gpd.shape).abs() <= 1e-6,
                "{name}: {f:?} {s:?}"
            );
            assert!(close(f.gpd.scale, s.gpd.scale, 1e-6), "{name}: {f:?} {s:?}");
            assert_eq!(f.on_boundary, s.on_boundary, "{name}");
            // The direct value of the grouped estimate: the same likelihood.
            let direct = log_likelihood(&points, f.gpd.shape, f.gpd.scale);
            assert!(close(direct, f.log_likelihood, 1e-12), "{name}");

            let mean = fast.sum() / fast.weight();
            for xi in [
                -1.0,
                -0.999,
                -0.5,
                -0.1,
                0.0,
                1e-3,
                f.gpd.shape,
                0.3,
                1.0,
                3.0,
            ] {
                let floor = if xi < 0.0 { -xi * fast.max() } else { 0.0 };
                let lo = (floor * (1.0 + 1e-9)).max(mean * 1e-6);
                let hi = (mean * 10.0).max(lo * 10.0);
                let exact = profile_scale(&fast, xi, lo.ln(), hi.ln());
                let searched = search_scale(&slow, xi, lo.ln(), hi.ln());
                assert!(
                    close(exact, searched, 1e-12),
                    "{name}, ξ {xi}: {exact} against {searched}"
                );
            }

            for ln_r in [2.0, 10.0, 20.0] {
                let z_hat = return_excess(&f.gpd, ln_r);
                for k in [0.5, 0.9, 1.0, 1.2, 3.0] {
                    let a = profile_return_level(&fast, z_hat * k, ln_r);
                    let b = profile_return_level(&slow, z_hat * k, ln_r);
                    assert!(
                        close(a, b, 1e-12) || (a == f64::NEG_INFINITY && b == a),
                        "{name}, ln r {ln_r}, z {}: {a} against {b}",
                        z_hat * k
                    );
                }
            }
        }
    }

    #[test]
    fn profile_peaks_at_the_mle_return_level() {
        let ys: Vec<f64> = (1..=2000)
            .map(|i| {
                Gpd::new(0.2, 3.0)
                    .unwrap()
                    .quantile((i as f64 - 0.5) / 2000.0)
            })
            .collect();
        let points = Excesses::new(ys.iter().map(|&y| (y, 1.0)).collect());
        let fit = fit_weighted(&points).unwrap();
        let ln_r = 1000f64.ln();
        let z = return_excess(&fit.gpd, ln_r);
        let at = profile_return_level(&points, z, ln_r);
        assert!(
            (at - fit.log_likelihood).abs() < 1e-3,
            "{at} vs {}",
            fit.log_likelihood
        );
        assert!(profile_return_level(&points, z * 1.5, ln_r) < at);
        assert!(profile_return_level(&points, z / 1.5, ln_r) < at);
    }
}
