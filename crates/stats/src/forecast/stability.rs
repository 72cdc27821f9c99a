//! Choosing the threshold of a tail fit from the data: a ladder of
//! thresholds, the stability of the fitted shape along it, and the
//! detection of a tail made of two regimes.
//!
//! The generalized Pareto approximation holds above a threshold high enough
//! that the excesses have reached their limiting form; above such a
//! threshold the shape ξ stays the same and the modified scale
//! `σ* = σ − ξ u` too (Coles 2001, chapter 4, on threshold choice by parameter stability). Below it
//! the estimates drift. A fixed percentile cannot know where that is, and on
//! a virtual machine it is often in the wrong place: ordinary wake-ups end
//! near 100 µs and hypervisor stalls of 0.6–5 ms form a second regime, so a
//! threshold at the 99th percentile sees a jump from one to the other and
//! fits ξ > 1 (an infinite mean), while above the 99.9th percentile the same
//! data give ξ ≈ 0.
//!
//! [`choose_threshold`] fits the tail at every rung of a ladder (exceedance
//! counts falling by √2 from 10 % of the samples to [`MIN_RUNG_EXCEEDANCES`])
//! and computes, per rung, ξ with its profile-likelihood interval, `σ*` and
//! the mean excess (the mean residual life, which is linear in the
//! threshold with slope `ξ / (1 − ξ)` where the model holds). It chooses the
//! lowest rung whose ξ lies inside the interval of every rung above it: the
//! start of the region where the estimate is stable within its own
//! uncertainty. When rungs below the chosen one disagree with it (their ξ
//! outside its interval) the tail is reported as a [`Mixture`] of two
//! regimes, with the ranges of both, and the forecast describes the upper
//! one.

use crate::Histogram;

use super::excesses::Excesses;
use super::gpd::profile_scale;
pub use super::ladder::{Mixture, Rung, ThresholdChoice};
use super::special::{bisect, chi2_1_quantile};
use super::tail::{TailFit, TailOptions, Threshold};
use super::{positive, ForecastError, Interval, SHAPE_MAX, SHAPE_MIN};

/// Fewest excesses a rung of the ladder is fitted with.
pub const MIN_RUNG_EXCEEDANCES: u64 = 50;
/// The fraction of samples above the lowest rung.
pub const LADDER_START: f64 = 0.1;
/// Fewest excesses of a rung that may be chosen or veto a lower one.
pub const MIN_VOTING_EXCEEDANCES: u64 = 100;
/// Most rungs.
pub const MAX_RUNGS: usize = 24;

/// The profile log-likelihood of the shape: `max_σ ℓ(ξ, σ)`.
pub(crate) fn profile_shape(points: &Excesses, shape: f64) -> f64 {
    let (w, sum, max) = (points.weight(), points.sum(), points.max().max(0.0));
    if !positive(w) || !positive(sum) {
        return f64::NEG_INFINITY;
    }
    let mean = sum / w;
    // σ must exceed −ξ·max for a bounded tail.
    let floor = if shape < 0.0 { -shape * max } else { 0.0 };
    let lo = (floor * (1.0 + 1e-9)).max(mean * 1e-6);
    let hi = (mean * 10.0).max(lo * 10.0);
    profile_scale(points, shape, lo.ln(), hi.ln())
}

/// The profile-likelihood interval of ξ for a fit with maximised
/// log-likelihood `ll_hat` at `shape`.
fn shape_interval(points: &Excesses, shape: f64, ll_hat: f64, confidence: f64) -> Interval<f64> {
    let cut = ll_hat - chi2_1_quantile(confidence) / 2.0;
    let g = |xi: f64| profile_shape(points, xi) - cut;
    let high = if g(SHAPE_MAX) > 0.0 {
        None
    } else {
        Some(bisect(shape, SHAPE_MAX, 1e-4, g))
    };
    let low = if g(SHAPE_MIN) > 0.0 {
        SHAPE_MIN
    } else {
        bisect(SHAPE_MIN, shape, 1e-4, g)
    };
    Interval {
        low: low.min(shape),
        high: high.map(|h| h.max(shape)),
        confidence,
    }
}

fn rung(h: &Histogram, fraction: f64, confidence: f64) -> Option<Rung> {
    let options = TailOptions {
        threshold: Threshold::Quantile(1.0 - fraction),
        min_exceedances: MIN_RUNG_EXCEEDANCES,
        confidence,
    };
    let fit = TailFit::from_histogram_fixed(h, &options).ok()?;
    let points = fit.excesses();
    let g = fit.fit.gpd;
    let mean_excess = points.sum() / points.weight();
    Some(Rung {
        threshold_ns: fit.threshold_ns,
        exceedances: fit.exceedances,
        shape: g.shape,
        shape_interval: shape_interval(points, g.shape, fit.fit.log_likelihood, confidence),
        scale: g.scale,
        modified_scale: g.scale - g.shape * fit.threshold_ns,
        mean_excess,
    })
}

/// Fits the ladder of `h` and chooses its threshold (see the module
/// documentation). Fails when not even the lowest rung has
/// [`MIN_RUNG_EXCEEDANCES`] excesses.
pub fn choose_threshold(h: &Histogram, confidence: f64) -> Result<ThresholdChoice, ForecastError> {
    let n = h.count();
    if n == 0 {
        return Err(ForecastError::EmptyHistogram);
    }
    let mut rungs: Vec<Rung> = Vec::new();
    for i in 0..MAX_RUNGS {
        let fraction = LADDER_START * 0.5f64.powf(i as f64 / 2.0);
        if (fraction * n as f64) < MIN_RUNG_EXCEEDANCES as f64 {
            break;
        }
        let Some(r) = rung(h, fraction, confidence) else {
            continue;
        };
        // Buckets can map two fractions to one threshold.
        if rungs
            .last()
            .is_some_and(|l| l.threshold_ns >= r.threshold_ns)
        {
            continue;
        }
        rungs.push(r);
    }
    if rungs.is_empty() {
        let u = h.quantile(1.0 - LADDER_START).map_or(0, |v| v.0);
        return Err(ForecastError::TooFewTailSamples {
            exceedances: h.count_above(u),
            needed: MIN_RUNG_EXCEEDANCES,
            threshold_ns: u,
        });
    }
    // Rungs with fewer than MIN_VOTING_EXCEEDANCES excesses are shown but
    // neither chosen nor allowed to veto: their shape rests on a few dozen
    // points (on a VM, the few largest stalls), and the top rung, having no
    // rung above it, would otherwise always qualify.
    let voting = rungs
        .iter()
        .rposition(|r| r.exceedances >= MIN_VOTING_EXCEEDANCES)
        .map_or(rungs.len(), |i| i + 1);
    let chosen = (0..voting)
        .find(|&i| rungs[i..voting].iter().all(|r| r.admits(rungs[i].shape)))
        .unwrap_or(voting - 1);
    let mixture = mixture(h, &rungs, chosen);
    let mean_excess_shape = mean_excess_shape(&rungs[chosen..]);
    Ok(ThresholdChoice {
        rungs,
        chosen,
        mixture,
        mean_excess_shape,
    })
}

fn mixture(h: &Histogram, rungs: &[Rung], chosen: usize) -> Option<Mixture> {
    let c = &rungs[chosen];
    // The highest rung below the chosen one that disagrees with it.
    let below = rungs[..chosen].iter().rev().find(|r| !c.admits(r.shape))?;
    let u = c.threshold_ns;
    let n = h.count();
    let above = h.count_above(u as u64);
    // The 10th percentile of the upper regime: the value with 90 % of the
    // exceedances above it.
    let q = 1.0 - 0.9 * above as f64 / n as f64;
    let from = h.quantile(q).map_or(u, |v| v.0 as f64).max(u);
    Some(Mixture {
        lower_up_to_ns: lower_end(h, below.threshold_ns, u),
        upper_from_ns: from,
        upper_to_ns: h.max().map_or(u, |v| v.0 as f64),
        lower_shape: rungs[0].shape,
    })
}

/// Where the lower regime ends, between the threshold of a rung that still
/// sees it (`from`) and the chosen one (`to`): below the widest gap (as a
/// ratio) between two occupied buckets there, or `from` when no gap is wider
/// than 1.5×.
fn lower_end(h: &Histogram, from: f64, to: f64) -> f64 {
    let occupied: Vec<f64> = h
        .buckets()
        .filter(|&(low, _, count)| count > 0 && low as f64 >= from && low as f64 <= to)
        .map(|(low, high, _)| (low as f64 + high as f64) / 2.0)
        .collect();
    let widest = occupied
        .windows(2)
        .map(|w| (w[1] / w[0], w[0]))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match widest {
        Some((ratio, end)) if ratio > 1.5 => end,
        _ => from,
    }
}

/// ξ from a weighted least-squares line through the mean excesses of
/// `rungs` (weights: their exceedance counts).
fn mean_excess_shape(rungs: &[Rung]) -> Option<f64> {
    if rungs.len() < 3 {
        return None;
    }
    let w: f64 = rungs.iter().map(|r| r.exceedances as f64).sum();
    let mx = rungs
        .iter()
        .map(|r| r.exceedances as f64 * r.threshold_ns)
        .sum::<f64>()
        / w;
    let my = rungs
        .iter()
        .map(|r| r.exceedances as f64 * r.mean_excess)
        .sum::<f64>()
        / w;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for r in rungs {
        let k = r.exceedances as f64;
        sxy += k * (r.threshold_ns - mx) * (r.mean_excess - my);
        sxx += k * (r.threshold_ns - mx) * (r.threshold_ns - mx);
    }
    if !positive(sxx) {
        return None;
    }
    let slope = sxy / sxx;
    (slope > -1.0).then(|| slope / (1.0 + slope))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::test_rng::uniforms;
    use crate::forecast::Gpd;

    /// `n` samples: 20 µs plus a GPD excess of shape `xi`, scale 5 µs.
    fn gpd_histogram(seed: u64, n: usize, xi: f64) -> Histogram {
        let g = Gpd::new(xi, 5_000.0).unwrap();
        let mut h = Histogram::new();
        for u in uniforms(seed, n) {
            h.record(20_000 + g.isf(u) as u64);
        }
        h
    }

    #[test]
    fn a_pure_gpd_tail_is_stable_from_the_bottom_and_no_mixture() {
        for (seed, xi) in [(1, -0.2), (2, 0.0), (3, 0.3)] {
            let h = gpd_histogram(seed, 200_000, xi);
            let c = choose_threshold(&h, 0.95).unwrap();
            assert!(c.rungs.len() >= 10, "{}", c.rungs.len());
            let r = c.chosen();
            assert!(
                c.chosen <= 3,
                "ξ {xi}: chose rung {} of {:?}",
                c.chosen,
                c.rungs
            );
            assert!(r.admits(xi), "ξ {xi}: {r:?}");
            assert!(c.mixture.is_none(), "ξ {xi}: {:?}", c.mixture);
            let m = c.mean_excess_shape.unwrap();
            println!(
                "ξ {xi}: rung {} of {}, ξ̂ {:.3} {:?}, mean excess gives {m:.3}",
                c.chosen,
                c.rungs.len(),
                r.shape,
                r.shape_interval
            );
            assert!((m - xi).abs() < 0.15, "ξ {xi}: mean excess gives {m}");
        }
    }

    #[test]
    fn two_regimes_are_named_and_the_upper_one_is_fitted() {
        // 99.5 % wake-ups of 20-100 µs, 0.5 % stalls of 0.6-5 ms.
        let mut h = Histogram::new();
        let wake = Gpd::new(-0.3, 20_000.0).unwrap();
        let stall = Gpd::new(-0.1, 800_000.0).unwrap();
        for (i, u) in uniforms(9, 400_000).into_iter().enumerate() {
            if i % 200 == 0 {
                h.record(600_000 + stall.isf(u) as u64);
            } else {
                h.record(20_000 + wake.isf(u) as u64);
            }
        }
        let c = choose_threshold(&h, 0.95).unwrap();
        let r = c.chosen();
        assert!(r.threshold_ns >= 100_000.0, "{r:?}");
        assert!(r.admits(-0.1), "{r:?}");
        let m = c.mixture.as_ref().expect("a mixture");
        assert!(m.upper_from_ns >= 600_000.0, "{m:?}");
        assert!(
            (80_000.0..=120_000.0).contains(&m.lower_up_to_ns),
            "the wake-ups end at 86 µs: {m:?}"
        );
        let line = m.describe();
        println!(
            "{line}; chosen rung {} at {:.0} ns, ξ̂ {:.3}, lowest rung ξ̂ {:.3}",
            c.chosen, r.threshold_ns, r.shape, m.lower_shape
        );
        assert!(line.starts_with("two regimes: up to ~"), "{line}");
        assert!(
            line.ends_with("the forecast describes the upper one"),
            "{line}"
        );
    }

    #[test]
    fn too_few_samples_for_any_rung() {
        let h = gpd_histogram(4, 300, 0.1);
        assert!(matches!(
            choose_threshold(&h, 0.95),
            Err(ForecastError::TooFewTailSamples { .. })
        ));
        assert!(matches!(
            choose_threshold(&Histogram::new(), 0.95),
            Err(ForecastError::EmptyHistogram)
        ));
    }

    #[test]
    fn the_shape_interval_covers_the_estimate_and_narrows_with_data() {
        let small = choose_threshold(&gpd_histogram(5, 20_000, 0.2), 0.95).unwrap();
        let large = choose_threshold(&gpd_histogram(5, 400_000, 0.2), 0.95).unwrap();
        let width = |c: &ThresholdChoice| {
            let r = &c.rungs[0];
            r.shape_interval.high.unwrap() - r.shape_interval.low
        };
        for c in [&small, &large] {
            for r in &c.rungs {
                assert!(r.admits(r.shape), "{r:?}");
            }
        }
        assert!(width(&large) < width(&small) / 2.0);
    }
}
