//! Two micro runs compared benchmark by benchmark, as LEBench reports
//! kernel against kernel: the ratio of the medians (new / baseline), a
//! percentile-bootstrap interval of that ratio from the iterations, and a
//! verdict.
//!
//! Each run holds, per benchmark, every iteration's time per operation.
//! One replicate resamples both runs' iterations with replacement and takes
//! the ratio of the two medians; the interval is the central 95 % of
//! [`RESAMPLES`] replicates. The verdict is SLOWER (FASTER) when the whole
//! interval lies above (below) 1 *and* the ratio differs from 1 by at least
//! [`MIN_EFFECT`]: a statistically real difference of 0.5 % between two
//! kernels is not one a user acts on, and iterations of one run drift
//! together (frequency, the host), which narrows the interval more than
//! independence would.

use serde::Serialize;

use super::median_sorted;
use crate::compare::{RatioCi, Rng, CI_LEVEL};
use latscope_model::MicroResult;

/// Bootstrap replicates per benchmark.
pub const RESAMPLES: u32 = 2000;
/// The smallest change a verdict names (3 %).
pub const MIN_EFFECT: f64 = 0.03;
const SEED: u64 = 0x6d69_6372_6f00_0001;

/// What a comparison says of one benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Faster,
    Slower,
    Same,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "FASTER",
            Verdict::Slower => "SLOWER",
            Verdict::Same => "same",
        }
    }
}

/// One benchmark in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchComparison {
    pub bench: String,
    pub base_median_ns: f64,
    pub new_median_ns: f64,
    /// new / baseline.
    pub ratio: f64,
    /// `None` when either run has no iterations (or a median of 0).
    pub ci: Option<RatioCi>,
    pub verdict: Verdict,
}

/// The percentile-bootstrap interval of median(new) / median(base).
pub fn bootstrap_median_ratio(base: &[f64], new: &[f64], resamples: u32) -> Option<RatioCi> {
    if base.is_empty() || new.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = Rng(SEED);
    let mut draw = |v: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        for _ in 0..v.len() {
            let i = (rng.next_u64() % v.len() as u64) as usize;
            buf.push(v[i]);
        }
        buf.sort_by(f64::total_cmp);
        median_sorted(buf)
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut ratios = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let ma = draw(base, &mut a);
        let mb = draw(new, &mut b);
        if ma <= 0.0 {
            return None;
        }
        ratios.push(mb / ma);
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - CI_LEVEL) / 2.0;
    let pick =
        |p: f64| ratios[((p * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    Some(RatioCi {
        low: pick(tail),
        high: pick(1.0 - tail),
        level: CI_LEVEL,
        resamples,
    })
}

/// The verdict of a ratio and its interval.
pub fn verdict(ratio: f64, ci: Option<&RatioCi>) -> Verdict {
    match ci {
        Some(ci) if ci.low > 1.0 && ratio >= 1.0 + MIN_EFFECT => Verdict::Slower,
        Some(ci) if ci.high < 1.0 && ratio <= 1.0 / (1.0 + MIN_EFFECT) => Verdict::Faster,
        _ => Verdict::Same,
    }
}

/// One benchmark of both runs compared.
pub fn compare_bench(base: &MicroResult, new: &MicroResult) -> BenchComparison {
    let ratio = if base.median_ns > 0.0 {
        new.median_ns / base.median_ns
    } else {
        f64::NAN
    };
    let ci = bootstrap_median_ratio(&base.per_iteration_ns, &new.per_iteration_ns, RESAMPLES);
    BenchComparison {
        bench: base.bench.clone(),
        base_median_ns: base.median_ns,
        new_median_ns: new.median_ns,
        ratio,
        verdict: if ratio.is_finite() {
            verdict(ratio, ci.as_ref())
        } else {
            Verdict::Same
        },
        ci,
    }
}

/// The benchmarks both runs measured (neither skipped), in the baseline's
/// order.
pub fn compare_runs(base: &[MicroResult], new: &[MicroResult]) -> Vec<BenchComparison> {
    base.iter()
        .filter(|b| b.skipped.is_none())
        .filter_map(|b| {
            new.iter()
                .find(|n| n.bench == b.bench && n.skipped.is_none())
                .map(|n| compare_bench(b, n))
        })
        .collect()
}

/// The rows `--fail-if-slower PCT` fails on: SLOWER by more than `pct` %.
pub fn slower_than(rows: &[BenchComparison], pct: f64) -> Vec<&BenchComparison> {
    rows.iter()
        .filter(|r| r.verdict == Verdict::Slower && r.ratio > 1.0 + pct / 100.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Rng;

    /// `n` iterations around `median` with ±`spread` relative noise.
    fn iterations(median: f64, spread: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                median * (1.0 + spread * (2.0 * u - 1.0))
            })
            .collect()
    }

    fn result(bench: &str, v: Vec<f64>) -> MicroResult {
        let mut s = v.clone();
        s.sort_by(f64::total_cmp);
        MicroResult {
            bench: bench.into(),
            median_ns: median_sorted(&s),
            per_iteration_ns: v,
            ..MicroResult::default()
        }
    }

    #[test]
    fn a_tenth_slower_is_slower_and_the_same_is_same() {
        let base = result("a", iterations(100.0, 0.05, 50, 1));
        let slow = result("a", iterations(110.0, 0.05, 50, 2));
        let same = result("a", iterations(100.0, 0.05, 50, 3));
        let fast = result("a", iterations(80.0, 0.05, 50, 4));
        let c = compare_bench(&base, &slow);
        assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
        let ci = c.ci.unwrap();
        assert!(
            ci.low > 1.0 && ci.low < 1.1 && ci.high > 1.1 && ci.high < 1.2,
            "{ci:?}"
        );
        assert_eq!(compare_bench(&base, &same).verdict, Verdict::Same);
        assert_eq!(compare_bench(&base, &fast).verdict, Verdict::Faster);
    }

    /// Of 40 pairs of runs of one machine, at most a few (5 % at 95 %) may
    /// get a verdict; with the 3 % floor, none does at ±5 % noise.
    #[test]
    fn the_same_distribution_rarely_gets_a_verdict() {
        let mut named = 0;
        for seed in 0..40 {
            let a = result("a", iterations(100.0, 0.05, 50, 2 * seed + 10));
            let b = result("a", iterations(100.0, 0.05, 50, 2 * seed + 11));
            if compare_bench(&a, &b).verdict != Verdict::Same {
                named += 1;
            }
        }
        assert!(named <= 2, "{named} of 40");
    }

    #[test]
    fn a_small_but_real_change_is_same_below_the_effect_floor() {
        let base = result("a", iterations(100.0, 0.001, 50, 5));
        let new = result("a", iterations(101.0, 0.001, 50, 6));
        let c = compare_bench(&base, &new);
        assert!(c.ci.as_ref().unwrap().low > 1.0, "{c:?}");
        assert_eq!(c.verdict, Verdict::Same);
    }

    #[test]
    fn runs_match_by_name_skipped_ones_drop_and_the_fail_rule_uses_the_percentage() {
        let base = vec![
            result("a", iterations(100.0, 0.02, 50, 7)),
            result("b", iterations(100.0, 0.02, 50, 8)),
            MicroResult {
                bench: "c".into(),
                skipped: Some("needs Xvfb".into()),
                ..MicroResult::default()
            },
        ];
        let new = vec![
            result("b", iterations(120.0, 0.02, 50, 9)),
            result("a", iterations(106.0, 0.02, 50, 10)),
            result("c", iterations(1.0, 0.02, 50, 11)),
        ];
        let rows = compare_runs(&base, &new);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].bench, "a");
        assert_eq!(rows[0].verdict, Verdict::Slower);
        assert_eq!(rows[1].verdict, Verdict::Slower);
        let fail: Vec<&str> = slower_than(&rows, 10.0)
            .iter()
            .map(|r| r.bench.as_str())
            .collect();
        assert_eq!(fail, vec!["b"]);
        assert_eq!(slower_than(&rows, 1.0).len(), 2);
    }

    #[test]
    fn empty_or_zero_baselines_give_no_interval() {
        assert!(bootstrap_median_ratio(&[], &[1.0], 10).is_none());
        assert!(bootstrap_median_ratio(&[0.0, 0.0], &[1.0], 10).is_none());
        let c = compare_bench(&result("a", vec![0.0]), &result("a", vec![1.0]));
        assert_eq!(c.verdict, Verdict::Same);
    }
}
