//! The excesses a GPD is fitted to, and the one sum its likelihood needs,
//! computed in groups.
//!
//! The GPD log-likelihood of weighted excesses `(y, w)` depends on the data
//! only through the total weight `W`, `Σ w y`, the largest excess and
//!
//! ```text
//! S(θ) = Σ w ln(1 + θ y)          (θ = ξ/σ > −1/max y)
//! ```
//!
//! Every fit, profile and interval of the tail model evaluates `S` many
//! thousand times, at one `ln_1p` per distinct excess: a histogram's tail
//! has thousands of occupied buckets. [`Excesses`] sorts the excesses,
//! merges equal values (raw samples repeat) and cuts them into groups no
//! wider than ±[`SPREAD`] of their weighted mean `ȳ`. Within a group,
//! `ln(1 + θ y) = ln(1 + θ ȳ) + ln(1 + t δ)` with `t = θ ȳ / (1 + θ ȳ)` and
//! `δ = (y − ȳ)/ȳ`, and the second term is a power series in `t δ`:
//!
//! ```text
//! Σ w ln(1 + θ y) = W_g ln(1 + θ ȳ) + Σ_k (−1)^(k+1) t^k M_k / k,   M_k = Σ w δ^k
//! ```
//!
//! The moments `M_k` are computed once, so a group costs one `ln_1p` and a
//! polynomial instead of one `ln_1p` per excess. For θ ≥ 0, `|t| < 1`
//! and `|t δ| ≤ SPREAD`; the series is cut after [`ORDER`] terms, leaving
//! less than `SPREAD^(ORDER+1)` per unit weight, below the rounding of the
//! sum itself. Near the lower end of θ (a bounded tail ending just above
//! the largest excess) `|t|` grows without limit: a group whose `|t δ|`
//! would exceed [`SPREAD`] is summed excess by excess, as before.

/// Largest `|y − ȳ| / ȳ` within a group, and largest `|t δ|` summed by the
/// series.
const SPREAD: f64 = 0.1;
/// Terms of the series: `0.1^15 / 15` is far below the rounding of a sum
/// of thousands of terms.
const ORDER: usize = 14;

/// Weighted excesses over a threshold, sorted, with their groups.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Excesses {
    /// As given, for callers that show them.
    points: Vec<(f64, f64)>,
    /// Distinct excesses, ascending, with their summed weights.
    merged: Vec<(f64, f64)>,
    groups: Vec<Group>,
    weight: f64,
    sum: f64,
    max: f64,
    min: f64,
}

#[derive(Clone, Debug, PartialEq)]
struct Group {
    /// The group's excesses: `merged[start..end]`.
    start: usize,
    end: usize,
    weight: f64,
    /// ȳ: the weighted mean.
    center: f64,
    /// Largest `|y − ȳ| / ȳ`.
    spread: f64,
    /// `(−1)^(k+1) M_k / k` for k = 1..=ORDER.
    coefficients: [f64; ORDER],
}

impl Excesses {
    /// Groups `points` (excess, weight). Values are not checked here:
    /// the fits check them ([`super::gpd`]).
    pub(crate) fn new(points: Vec<(f64, f64)>) -> Excesses {
        let mut merged = points.clone();
        merged.sort_by(|a, b| a.0.total_cmp(&b.0));
        merged.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        let (mut weight, mut sum) = (0.0, 0.0);
        let (mut max, mut min) = (f64::NEG_INFINITY, f64::INFINITY);
        for &(y, w) in &points {
            weight += w;
            sum += w * y;
            max = max.max(y);
            min = min.min(y);
        }
        let groups = if merged
            .iter()
            .all(|&(y, w)| y > 0.0 && y.is_finite() && w > 0.0 && w.is_finite())
        {
            group(&merged)
        } else {
            // Invalid data are refused by the fits; sum them one by one.
            Vec::new()
        };
        Excesses {
            points,
            merged,
            groups,
            weight,
            sum,
            max,
            min,
        }
    }

    /// The same excesses without groups: every sum excess by excess, in
    /// the order given (the reference the grouped sums are tested with).
    #[cfg(test)]
    pub(crate) fn ungrouped(points: Vec<(f64, f64)>) -> Excesses {
        Excesses {
            groups: Vec::new(),
            ..Excesses::new(points)
        }
    }

    /// The points as given.
    pub(crate) fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
    /// `W`: the total weight.
    pub(crate) fn weight(&self) -> f64 {
        self.weight
    }
    /// `Σ w y`.
    pub(crate) fn sum(&self) -> f64 {
        self.sum
    }
    /// The largest excess (−∞ when there is none).
    pub(crate) fn max(&self) -> f64 {
        self.max
    }
    /// The smallest excess (∞ when there is none).
    pub(crate) fn min(&self) -> f64 {
        self.min
    }

    /// `S(θ) = Σ w ln(1 + θ y)`; NaN or −∞ where `1 + θ y ≤ 0` for some
    /// excess, as the direct sum gives.
    pub(crate) fn sum_ln_1p(&self, theta: f64) -> f64 {
        if self.groups.is_empty() {
            return direct(&self.points, theta);
        }
        if theta * self.max <= -1.0 || !theta.is_finite() {
            return direct(&self.merged, theta);
        }
        let mut s = 0.0;
        for g in &self.groups {
            let a = theta * g.center;
            let t = a / (1.0 + a);
            if (t * g.spread).abs() > SPREAD {
                s += direct(&self.merged[g.start..g.end], theta);
                continue;
            }
            let mut p = g.coefficients[ORDER - 1];
            for c in g.coefficients[..ORDER - 1].iter().rev() {
                p = p * t + c;
            }
            s += g.weight * a.ln_1p() + p * t;
        }
        s
    }

    /// `(Σ w y / (1 + θ y), Σ w y / (1 + θ y)²)`, excess by excess (one
    /// division each, no logarithm): what the score of the scale and its
    /// derivative need ([`super::gpd::best_log_scale`]).
    pub(crate) fn sum_ratios(&self, theta: f64) -> (f64, f64) {
        let (mut a, mut b) = (0.0, 0.0);
        for &(y, w) in &self.merged {
            let r = y / (1.0 + theta * y);
            a += w * r;
            b += w * r / (1.0 + theta * y);
        }
        (a, b)
    }
}

/// `Σ w ln(1 + θ y)`, excess by excess.
fn direct(points: &[(f64, f64)], theta: f64) -> f64 {
    points.iter().map(|&(y, w)| w * (theta * y).ln_1p()).sum()
}

/// Cuts ascending, positive, distinct `merged` into groups no wider than
/// `SPREAD` of their mean and computes their moments.
fn group(merged: &[(f64, f64)]) -> Vec<Group> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < merged.len() {
        // [y_start, y_end] within ȳ ± SPREAD·ȳ holds for any ȳ in it when
        // y_end ≤ y_start (1 + SPREAD).
        let limit = merged[start].0 * (1.0 + SPREAD);
        let mut end = start + 1;
        while end < merged.len() && merged[end].0 <= limit {
            end += 1;
        }
        let part = &merged[start..end];
        let weight: f64 = part.iter().map(|p| p.1).sum();
        let center = part.iter().map(|&(y, w)| w * y).sum::<f64>() / weight;
        let mut moments = [0.0; ORDER];
        let mut spread: f64 = 0.0;
        for &(y, w) in part {
            let d = (y - center) / center;
            spread = spread.max(d.abs());
            let mut power = w;
            for m in moments.iter_mut() {
                power *= d;
                *m += power;
            }
        }
        let mut coefficients = [0.0; ORDER];
        for (k, (c, m)) in coefficients.iter_mut().zip(moments).enumerate() {
            let order = (k + 1) as f64;
            *c = if k % 2 == 0 { m / order } else { -m / order };
        }
        groups.push(Group {
            start,
            end,
            weight,
            center,
            spread,
            coefficients,
        });
        start = end;
    }
    groups
}

/// Excesses of the kinds the tail model meets, for tests of the grouped
/// sums and the fits on them: a histogram's buckets above a threshold
/// (light, bounded and heavy tails), raw samples in whole microseconds
/// (heavy repeats), raw samples in nanoseconds, and a few distinct values
/// with large counts.
#[cfg(test)]
pub(crate) fn representative() -> Vec<(&'static str, Vec<(f64, f64)>)> {
    use crate::forecast::test_rng::Rng;
    use crate::forecast::{Gpd, TailFit, TailOptions, Threshold};
    use crate::Histogram;

    let draws = |seed: u64, n: usize, xi: f64, scale: f64| -> Vec<f64> {
        let g = Gpd::new(xi, scale).expect("a valid GPD");
        let mut rng = Rng(seed);
        (0..n).map(|_| 10_000.0 + g.isf(rng.uniform())).collect()
    };
    let buckets = |xs: Vec<f64>| -> Vec<(f64, f64)> {
        let mut h = Histogram::new();
        for x in xs {
            h.record(x as u64);
        }
        let options = TailOptions {
            threshold: Threshold::Quantile(0.9),
            ..TailOptions::default()
        };
        let fit = TailFit::from_histogram(&h, &options).expect("a tail");
        fit.points().to_vec()
    };
    let above = |xs: Vec<f64>, u: f64| -> Vec<(f64, f64)> {
        xs.into_iter()
            .filter(|&x| x > u)
            .map(|x| (x - u, 1.0))
            .collect()
    };
    let micro: Vec<f64> = draws(4, 20_000, 0.1, 4_000.0)
        .into_iter()
        .map(|x| (x / 1000.0).floor() * 1000.0)
        .collect();
    vec![
        (
            "histogram, light tail",
            buckets(draws(1, 200_000, 0.1, 3_000.0)),
        ),
        (
            "histogram, bounded tail",
            buckets(draws(2, 200_000, -0.3, 8_000.0)),
        ),
        (
            "histogram, heavy tail",
            buckets(draws(3, 200_000, 0.7, 2_000.0)),
        ),
        ("whole microseconds", above(micro, 12_000.0)),
        (
            "nanoseconds",
            above(draws(5, 20_000, 0.2, 5_000.0), 15_000.0),
        ),
        (
            "a few values",
            vec![
                (500.0, 1e5),
                (1_500.0, 3e4),
                (2_500.0, 5e3),
                (7_000.0, 300.0),
                (12_000.0, 20.0),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::test_rng::Rng;

    fn check(points: Vec<(f64, f64)>) {
        let e = Excesses::new(points.clone());
        let max = e.max();
        let mean = e.sum() / e.weight();
        let mut thetas = vec![0.0];
        for k in 1..=12 {
            thetas.push(-1.0 / max * (1.0 - 10f64.powi(-k)));
            thetas.push(-1.0 / max * k as f64 / 13.0);
        }
        for k in -10..=8 {
            thetas.push(10f64.powi(k) / mean);
        }
        for theta in thetas {
            let want = direct(&points, theta);
            let got = e.sum_ln_1p(theta);
            let scale = points
                .iter()
                .map(|&(y, w)| w * (theta * y).ln_1p().abs())
                .sum::<f64>();
            assert!(
                (got - want).abs() <= 1e-12 * scale,
                "θ {theta}: {got} against {want} (scale {scale})"
            );
            if theta * max > -1.0 {
                let (a, b) = e.sum_ratios(theta);
                let (mut wa, mut wb) = (0.0, 0.0);
                for &(y, w) in &points {
                    wa += w * y / (1.0 + theta * y);
                    wb += w * y / (1.0 + theta * y).powi(2);
                }
                assert!((a - wa).abs() <= 1e-12 * wa, "θ {theta}: {a} against {wa}");
                assert!((b - wb).abs() <= 1e-12 * wb, "θ {theta}: {b} against {wb}");
            }
        }
    }

    #[test]
    fn grouped_sums_equal_direct_ones() {
        let mut rng = Rng(3);
        // Histogram-like: bucket midpoints with counts.
        let buckets: Vec<(f64, f64)> = (0..3000)
            .map(|i| {
                let y = 0.5 + i as f64 * (1.0 + i as f64 / 1024.0);
                (y, (1.0 + 1e4 * (-(i as f64) / 300.0).exp()).floor())
            })
            .collect();
        check(buckets);
        // Raw samples with heavy repeats (whole microseconds).
        let raw: Vec<(f64, f64)> = (0..20_000)
            .map(|_| ((-rng.uniform().ln() * 4.0).ceil() * 1000.0, 1.0))
            .collect();
        check(raw);
        // A few distinct values.
        check(vec![(1.0, 500.0), (2.0, 40.0), (7.0, 3.0), (30.0, 1.0)]);
        // Spread over decades.
        let wide: Vec<(f64, f64)> = (0..5000)
            .map(|_| ((1.0 / rng.uniform()).powf(1.5), 1.0))
            .collect();
        check(wide);
    }

    #[test]
    fn grouped_sums_equal_direct_ones_on_representative_excesses() {
        for (name, points) in representative() {
            let e = Excesses::new(points.clone());
            assert!(
                e.groups.len() * 4 < e.merged.len() || e.merged.len() < 50,
                "{name}: {} groups of {} values",
                e.groups.len(),
                e.merged.len()
            );
            check(points);
        }
    }

    #[test]
    fn repeats_are_merged_and_totals_kept() {
        let e = Excesses::new(vec![(2.0, 1.0), (1.0, 1.0), (2.0, 3.0), (5.0, 0.5)]);
        assert_eq!(e.merged, vec![(1.0, 1.0), (2.0, 4.0), (5.0, 0.5)]);
        assert_eq!(e.weight(), 5.5);
        assert_eq!(e.sum(), 11.5);
        assert_eq!((e.min(), e.max()), (1.0, 5.0));
        assert_eq!(e.points().len(), 4);
        assert_eq!(e.sum_ln_1p(-0.2), f64::NEG_INFINITY);
        assert!(e.sum_ln_1p(-0.3).is_nan());
    }
}
