//! Special functions the forecasts need: the log-gamma function, the
//! regularized incomplete gamma functions, and from them the Poisson
//! distribution, exact (Garwood) Poisson confidence limits and the χ²₁
//! quantile used as the profile-likelihood cut.
//!
//! The crate has no numerical dependency, so these are written out here from
//! the textbook definitions (Lanczos' approximation for ln Γ; the power series
//! and the continued fraction for the incomplete gamma function). Their
//! accuracy (about 1e-13 relative) is far beyond what a latency forecast needs.

/// ln Γ(x) for x > 0 (Lanczos' approximation, g = 7, nine terms).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

const EPS: f64 = 1e-15;
const TINY: f64 = 1e-300;
const MAX_ITER: usize = 10_000_000;

/// The regularized lower incomplete gamma function P(a, x) by its series
/// (converges quickly for x < a + 1).
fn gamma_p_series(a: f64, x: f64) -> f64 {
    let mut ap = a;
    let mut del = 1.0 / a;
    let mut sum = del;
    for _ in 0..MAX_ITER {
        ap += 1.0;
        del *= x / ap;
        sum += del;
        if del.abs() < sum.abs() * EPS {
            break;
        }
    }
    (sum.ln() - x + a * x.ln() - ln_gamma(a)).exp()
}

/// The regularized upper incomplete gamma function Q(a, x) by its continued
/// fraction, evaluated with the modified Lentz method (for x ≥ a + 1).
fn gamma_q_fraction(a: f64, x: f64) -> f64 {
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..MAX_ITER {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    (h.ln() - x + a * x.ln() - ln_gamma(a)).exp()
}

/// P(a, x) = γ(a, x) / Γ(a), for a > 0 and x ≥ 0.
pub(crate) fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else if x < a + 1.0 {
        gamma_p_series(a, x).clamp(0.0, 1.0)
    } else {
        (1.0 - gamma_q_fraction(a, x)).clamp(0.0, 1.0)
    }
}

/// Q(a, x) = 1 − P(a, x), computed without cancellation in either tail.
pub(crate) fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        1.0
    } else if x < a + 1.0 {
        (1.0 - gamma_p_series(a, x)).clamp(0.0, 1.0)
    } else {
        gamma_q_fraction(a, x).clamp(0.0, 1.0)
    }
}

/// P(K ≤ k) for K ~ Poisson(λ).
pub(crate) fn poisson_cdf(k: u64, lambda: f64) -> f64 {
    if lambda <= 0.0 {
        return 1.0;
    }
    gamma_q(k as f64 + 1.0, lambda)
}

/// Finds x in [lo, hi] where the monotone `f` crosses zero, by bisection
/// (geometric when both ends are positive, as all callers' scales are).
pub(crate) fn bisect(mut lo: f64, mut hi: f64, rel_tol: f64, f: impl Fn(f64) -> f64) -> f64 {
    let f_lo = f(lo);
    for _ in 0..200 {
        let mid = if lo > 0.0 && hi / lo > 4.0 {
            (lo * hi).sqrt()
        } else {
            0.5 * (lo + hi)
        };
        if (hi - lo) <= rel_tol * hi.abs().max(lo.abs()) || mid <= lo || mid >= hi {
            break;
        }
        let fm = f(mid);
        if (fm > 0.0) == (f_lo > 0.0) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Exact (Garwood) two-sided confidence limits for the mean λ of a Poisson
/// count, given `k` events observed: `(lower, upper)`. The lower limit is 0
/// when `k = 0`.
pub(crate) fn poisson_mean_interval(k: u64, confidence: f64) -> (f64, f64) {
    let half = (1.0 - confidence) / 2.0;
    let kf = k as f64;
    let lower = if k == 0 {
        0.0
    } else {
        // P(K ≥ k; λ) = P(k, λ) = α/2, increasing in λ.
        bisect(0.0, kf.max(1.0), 1e-10, |l| gamma_p(kf, l) - half)
    };
    // P(K ≤ k; λ) = Q(k + 1, λ) = α/2, decreasing in λ.
    let mut hi = kf + 10.0 * kf.sqrt() + 10.0;
    while gamma_q(kf + 1.0, hi) > half {
        hi *= 2.0;
    }
    let upper = bisect(kf.max(1e-12), hi, 1e-10, |l| half - gamma_q(kf + 1.0, l));
    (lower, upper)
}

/// The quantile of the χ² distribution with one degree of freedom at
/// probability `confidence`: the profile-likelihood deviance cut (3.841 for
/// 95 %).
pub(crate) fn chi2_1_quantile(confidence: f64) -> f64 {
    // P(χ²₁ ≤ c) = P(1/2, c/2).
    bisect(1e-12, 200.0, 1e-12, |c| gamma_p(0.5, c / 2.0) - confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn ln_gamma_known_values() {
        assert!(ln_gamma(1.0).abs() < 1e-13);
        assert!(ln_gamma(2.0).abs() < 1e-13);
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-13));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
        assert!(close(ln_gamma(101.0), 363.739_375_555_563_5, 1e-12));
    }

    #[test]
    fn poisson_cdf_matches_direct_sums() {
        for &lambda in &[0.1f64, 1.0, 3.7, 25.0, 400.0] {
            let mut term = (-lambda).exp();
            let mut sum = term;
            for k in 0..60u64 {
                if k > 0 {
                    term *= lambda / k as f64;
                    sum += term;
                }
                let got = poisson_cdf(k, lambda);
                assert!(
                    (got - sum).abs() < 1e-12,
                    "k {k} λ {lambda}: {got} vs {sum}"
                );
            }
        }
        assert_eq!(poisson_cdf(0, 0.0), 1.0);
    }

    #[test]
    fn garwood_limits_known_values() {
        // Standard tables: k = 0 → (0, 3.689); k = 1 → (0.0253, 5.572);
        // k = 10 → (4.795, 18.39).
        let (l, u) = poisson_mean_interval(0, 0.95);
        assert_eq!(l, 0.0);
        assert!(close(u, 3.688_879, 1e-5), "{u}");
        let (l, u) = poisson_mean_interval(1, 0.95);
        assert!(close(l, 0.025_318, 1e-4), "{l}");
        assert!(close(u, 5.571_643, 1e-5), "{u}");
        let (l, u) = poisson_mean_interval(10, 0.95);
        assert!(close(l, 4.795_389, 1e-5), "{l}");
        assert!(close(u, 18.390_356, 1e-5), "{u}");
    }

    #[test]
    fn garwood_limits_for_large_counts_match_the_normal_approximation() {
        for k in [10_000u64, 1_000_000] {
            let (l, u) = poisson_mean_interval(k, 0.95);
            let kf = k as f64;
            let half = 1.96 * kf.sqrt();
            assert!((l - (kf - half)).abs() < 0.02 * half, "{k}: {l}");
            assert!((u - (kf + half)).abs() < 0.02 * half, "{k}: {u}");
        }
    }

    #[test]
    fn chi2_cut() {
        assert!(close(chi2_1_quantile(0.95), 3.841_458_8, 1e-7));
        assert!(close(chi2_1_quantile(0.99), 6.634_896_6, 1e-7));
    }
}
