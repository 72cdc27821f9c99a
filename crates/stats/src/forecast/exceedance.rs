//! The empirical exceedance curve (CCDF) and the latencies read from it.

use crate::Histogram;

use super::special::poisson_cdf;
use super::{positive, Interval, LatencyEstimate, Provenance};

/// The empirical exceedance curve `P(X > x)` of a histogram, one point per
/// non-empty bucket at its upper edge, ascending in `x`, preceded by
/// `(first_low − 1, 1.0)` when the first bucket does not start at 0.
///
/// Upper bucket edges are where [`Histogram::count_above`] is exact, so every
/// probability here is exact for the recorded data (not interpolated). The
/// last point is the top bucket's edge with probability 0; drop it on a
/// log-scale plot. An empty histogram gives no points.
pub fn exceedance(h: &Histogram) -> Vec<(u64, f64)> {
    let n = h.count();
    if n == 0 {
        return Vec::new();
    }
    let total = n as f64;
    let mut out = Vec::new();
    let mut below_or_at = 0u64;
    for (low, high, count) in h.buckets() {
        if out.is_empty() && low > 0 {
            out.push((low - 1, 1.0));
        }
        below_or_at += count;
        out.push((high, (n - below_or_at) as f64 / total));
    }
    out
}

/// `P(X > x)` = `count_above(x) / count`, at bucket resolution (exact when
/// `x` is a bucket's upper edge; otherwise samples sharing `x`'s bucket but
/// above `x` are not counted). 0 for an empty histogram.
pub fn p_exceed(h: &Histogram, x: u64) -> f64 {
    match h.count() {
        0 => 0.0,
        n => h.count_above(x) as f64 / n as f64,
    }
}

/// The smallest bucket upper edge `x` (capped at the exact maximum) with at
/// most `allowed` samples above it. `None` for an empty histogram.
///
/// This is how a latency "exceeded at most `a` times" is read from the data;
/// it agrees with the schedulability module's pseudo worst case.
pub fn level_exceeded_at_most(h: &Histogram, allowed: u64) -> Option<u64> {
    let max = h.max()?.0;
    let buckets: Vec<(u64, u64, u64)> = h.buckets().collect();
    let mut above = 0u64;
    let mut level = None;
    for &(_, high, count) in buckets.iter().rev() {
        if above > allowed {
            break;
        }
        level = Some(high.min(max));
        above += count;
    }
    level
}

/// The latency exceeded on average once in `events` samples, read from the
/// data: possible when the run holds at least that many samples
/// (`m = count / events ≥ 1` expected exceedances). `None` otherwise, or for
/// an empty histogram.
///
/// The estimate is the smallest level exceeded by at most `⌊m⌋` samples.
/// Its interval is distribution-free: the number `K` of samples above the
/// true level is binomial, ≈ Poisson(`m`) for the small probabilities
/// forecasts use, so the order statistics exceeded by at most `b` and `a`
/// samples, with `b` the smallest count with `P(K ≤ b) ≥ 1 − α/2` and `a` the
/// largest with `P(K ≤ a) ≤ α/2`, bracket it with confidence `1 − α`. When
/// `m` is small (below about 3.7 at 95 %) no such `a` exists and the upper
/// end is open (`high: None`): the data cannot rule out a larger value.
pub fn observed_level(h: &Histogram, events: f64, confidence: f64) -> Option<LatencyEstimate> {
    let n = h.count();
    if n == 0 || !positive(events) {
        return None;
    }
    let m = n as f64 / events;
    if m < 1.0 {
        return None;
    }
    let point = level_exceeded_at_most(h, m.floor() as u64)?;
    let half = (1.0 - confidence) / 2.0;
    // Smallest b with P(K ≤ b) ≥ 1 − α/2.
    let b = search_count(m, |c| poisson_cdf(c, m) >= 1.0 - half);
    let low = level_exceeded_at_most(h, b).unwrap_or(point).min(point);
    // Largest a with P(K ≤ a) ≤ α/2, if any.
    let high = if poisson_cdf(0, m) > half {
        None
    } else {
        let first_above = search_count(m, |c| poisson_cdf(c, m) > half);
        level_exceeded_at_most(h, first_above - 1).map(|v| v.max(point))
    };
    Some(LatencyEstimate {
        latency_ns: point,
        provenance: Provenance::Observed,
        interval: Interval {
            low,
            high,
            confidence,
        },
        events,
        expected_in_run: m,
    })
}

/// The smallest count `c` for which the monotone predicate holds, searched
/// around the Poisson mean `m`.
fn search_count(m: f64, pred: impl Fn(u64) -> bool) -> u64 {
    let mut hi = (m + 10.0 * m.sqrt() + 10.0).ceil() as u64;
    while !pred(hi) {
        hi = hi.saturating_mul(2);
    }
    let mut lo = 0u64;
    if pred(lo) {
        return 0;
    }
    // pred(lo) false, pred(hi) true.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1000 samples: 900 at 10 µs, 90 at 100 µs, 9 at 1 ms, 1 at 10 ms —
    /// all exact bucket values, so every probability is known exactly.
    pub(crate) fn decade_histogram() -> Histogram {
        let mut h = Histogram::new();
        h.record_n(10_000, 900);
        h.record_n(100_000, 90);
        h.record_n(1_000_000, 9);
        h.record_n(10_000_000, 1);
        h
    }

    #[test]
    fn exceedance_is_exact_at_bucket_edges() {
        let h = decade_histogram();
        let curve = exceedance(&h);
        assert_eq!(curve.len(), 5);
        assert_eq!(curve[0], (9_999, 1.0));
        let probs: Vec<f64> = curve.iter().map(|p| p.1).collect();
        assert_eq!(probs, vec![1.0, 0.1, 0.01, 0.001, 0.0]);
        // Edges are the buckets' upper ends: 10 µs sits in a 8 ns bucket.
        assert!(curve[1].0 >= 10_000 && curve[1].0 < 10_016);
        for &(x, p) in &curve {
            assert_eq!(p_exceed(&h, x), p);
        }
        assert_eq!(p_exceed(&h, 9_999), 1.0);
        assert_eq!(p_exceed(&h, 500_000), 0.01);
        assert_eq!(p_exceed(&h, 20_000_000), 0.0);
        assert!(exceedance(&Histogram::new()).is_empty());
        assert_eq!(p_exceed(&Histogram::new(), 5), 0.0);
    }

    #[test]
    fn levels_exceeded_at_most() {
        let h = decade_histogram();
        assert_eq!(level_exceeded_at_most(&h, 0), Some(10_000_000));
        let l1 = level_exceeded_at_most(&h, 1).unwrap();
        assert!((1_000_000..1_001_000).contains(&l1));
        assert_eq!(level_exceeded_at_most(&h, 5), Some(l1));
        let l10 = level_exceeded_at_most(&h, 10).unwrap();
        assert!((100_000..100_100).contains(&l10));
        assert_eq!(level_exceeded_at_most(&Histogram::new(), 0), None);
    }

    #[test]
    fn observed_level_reads_the_ccdf() {
        let h = decade_histogram();
        // Once in 100 samples: 10 expected above → the 100 µs level.
        let e = observed_level(&h, 100.0, 0.95).unwrap();
        assert_eq!(e.provenance, Provenance::Observed);
        assert!((100_000..100_100).contains(&e.latency_ns));
        assert!(e.interval.low <= e.latency_ns);
        assert!(e.interval.high.unwrap() >= e.latency_ns);
        // Once in 1000: m = 1 → exceeded by at most one sample (1 ms), and
        // the upper end is open.
        let e = observed_level(&h, 1000.0, 0.95).unwrap();
        assert!((1_000_000..1_001_000).contains(&e.latency_ns));
        assert_eq!(e.interval.high, None);
        // Once in 2000: more than the run holds.
        assert!(observed_level(&h, 2000.0, 0.95).is_none());
    }
}
