//! Independence and stationarity checks on a run's per-second maxima.
//!
//! A return level assumes that the extremes it extrapolates from are
//! independent draws from one distribution. A run's per-second maxima break
//! that when one disturbance spans several seconds (autocorrelation) or when
//! the machine changes during the run (a load starts, a neighbour on the
//! host wakes up). Two tests, both on ranks so that a heavy tail (a single
//! 5 ms stall among 50 µs seconds) does not dominate them:
//!
//! - **Ljung–Box** on the rank series: `Q = n (n + 2) Σₖ ρₖ² / (n − k)` over
//!   lags 1..h, compared with χ²ₕ (Ljung & Box, *Biometrika* 65, 1978). On
//!   ranks the autocorrelations do not depend on the distribution of the
//!   data (Dufour & Roy's portmanteau tests of randomness on ranks, 1986).
//! - **Pettitt's change-point test**: `Uₜ = 2 Σ_{i≤t} rᵢ − t (n + 1)`,
//!   `K = max |Uₜ|`, at the second `t` where the distribution most likely
//!   shifted, with `p ≈ 2 exp(−6K² / (n³ + n²))` (Pettitt, *Applied
//!   Statistics* 28, 1979). A long run is cut at its change points by binary
//!   segmentation ([`segments`]), so that a forecast can use the part of the
//!   run that describes the machine as it is now.
//!
//! Both need enough seconds to say anything: [`MIN_SECONDS`].

use serde::Serialize;

use super::special::gamma_q;

/// Fewest seconds either test runs on.
pub const MIN_SECONDS: usize = 20;
/// Significance level below which a test fails.
pub const ALPHA: f64 = 0.01;
/// Shortest segment binary segmentation leaves (seconds).
pub const MIN_SEGMENT_SECONDS: usize = 60;
/// Most segments a run is cut into.
pub const MAX_SEGMENTS: usize = 8;

/// The Ljung–Box test of a series.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LjungBox {
    /// Q.
    pub statistic: f64,
    /// h: the lags summed (and the χ² degrees of freedom).
    pub lags: usize,
    pub p_value: f64,
}

/// Pettitt's change-point test of a series.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ChangePoint {
    /// The series splits before this index (the first of the later part).
    pub index: usize,
    /// K = max |Uₜ|.
    pub statistic: f64,
    pub p_value: f64,
}

/// Both checks of one series, with what they mean for a forecast.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesChecks {
    /// Seconds tested.
    pub seconds: usize,
    pub ljung_box: Option<LjungBox>,
    pub change_point: Option<ChangePoint>,
    /// Whether the per-second maxima look independent (Ljung–Box not
    /// rejected at [`ALPHA`]); `None` when the series is too short.
    pub independent: Option<bool>,
    /// Whether they look stationary (Pettitt not rejected at [`ALPHA`]).
    pub stationary: Option<bool>,
}

/// Mid-ranks (1-based; ties share the mean of their ranks).
pub(crate) fn ranks(series: &[f64]) -> Vec<f64> {
    let n = series.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| series[a].total_cmp(&series[b]));
    let mut r = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && series[order[j]] == series[order[i]] {
            j += 1;
        }
        // Positions i..j (0-based) share the rank (i + 1 + j) / 2.
        let mid = (i + 1 + j) as f64 / 2.0;
        for &k in &order[i..j] {
            r[k] = mid;
        }
        i = j;
    }
    r
}

/// The Ljung–Box test of the ranks of `series` over lags `1..=lags`
/// (`lags` 0: `min(20, n / 5)`). `None` for fewer than [`MIN_SECONDS`]
/// values or a constant series.
pub fn ljung_box(series: &[f64], lags: usize) -> Option<LjungBox> {
    let n = series.len();
    if n < MIN_SECONDS {
        return None;
    }
    let h = if lags == 0 { (n / 5).min(20) } else { lags }.clamp(1, n - 1);
    let r = ranks(series);
    let mean = (n as f64 + 1.0) / 2.0;
    let dev: Vec<f64> = r.iter().map(|v| v - mean).collect();
    let c0: f64 = dev.iter().map(|d| d * d).sum();
    if c0 <= 0.0 {
        return None;
    }
    let nf = n as f64;
    let mut q = 0.0;
    for k in 1..=h {
        let ck: f64 = dev[..n - k].iter().zip(&dev[k..]).map(|(a, b)| a * b).sum();
        let rho = ck / c0;
        q += rho * rho / (nf - k as f64);
    }
    q *= nf * (nf + 2.0);
    Some(LjungBox {
        statistic: q,
        lags: h,
        p_value: gamma_q(h as f64 / 2.0, q / 2.0),
    })
}

/// Pettitt's test of `series`. `None` for fewer than [`MIN_SECONDS`] values
/// or a constant series.
pub fn pettitt(series: &[f64]) -> Option<ChangePoint> {
    let n = series.len();
    if n < MIN_SECONDS {
        return None;
    }
    let r = ranks(series);
    let nf = n as f64;
    let mut cum = 0.0;
    let mut best = (0usize, 0.0f64);
    for (t, rank) in r.iter().enumerate().take(n - 1) {
        cum += rank;
        let u = 2.0 * cum - (t as f64 + 1.0) * (nf + 1.0);
        if u.abs() > best.1 {
            best = (t + 1, u.abs());
        }
    }
    if best.1 == 0.0 {
        return None;
    }
    let k = best.1;
    let p = (2.0 * (-6.0 * k * k / (nf * nf * nf + nf * nf)).exp()).min(1.0);
    Some(ChangePoint {
        index: best.0,
        statistic: k,
        p_value: p,
    })
}

/// Both tests of `series` (per-second maxima, seconds without samples left
/// out by the caller).
pub fn check_series(series: &[f64]) -> SeriesChecks {
    let ljung_box = ljung_box(series, 0);
    let change_point = pettitt(series);
    SeriesChecks {
        seconds: series.len(),
        independent: ljung_box.map(|t| t.p_value >= ALPHA),
        stationary: change_point.map(|t| t.p_value >= ALPHA),
        ljung_box,
        change_point,
    }
}

/// Cuts `series` at its change points by binary segmentation: a part is
/// cut where Pettitt's test rejects at [`ALPHA`] and both sides keep at
/// least [`MIN_SEGMENT_SECONDS`] values, into at most [`MAX_SEGMENTS`]
/// parts. Returns the parts as index ranges, in order.
pub fn segments(series: &[f64]) -> Vec<std::ops::Range<usize>> {
    let mut done: Vec<std::ops::Range<usize>> = Vec::new();
    let mut todo: Vec<std::ops::Range<usize>> = Vec::new();
    todo.push(0..series.len());
    while let Some(part) = todo.pop() {
        if done.len() + todo.len() + 1 >= MAX_SEGMENTS {
            done.push(part);
            continue;
        }
        let cut = pettitt(&series[part.clone()]).filter(|c| {
            c.p_value < ALPHA
                && c.index >= MIN_SEGMENT_SECONDS
                && part.len() - c.index >= MIN_SEGMENT_SECONDS
        });
        match cut {
            Some(c) => {
                let at = part.start + c.index;
                todo.push(at..part.end);
                todo.push(part.start..at);
            }
            None => done.push(part),
        }
    }
    done.sort_by_key(|r| r.start);
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::test_rng::uniforms;

    #[test]
    fn ranks_share_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn independent_noise_passes_and_persistence_fails_ljung_box() {
        let mut rejected = 0;
        for seed in 0..50 {
            let x = uniforms(seed, 300);
            let t = ljung_box(&x, 0).unwrap();
            assert_eq!(t.lags, 20);
            if t.p_value < ALPHA {
                rejected += 1;
            }
        }
        // About 1 % of independent series are rejected at the 1 % level.
        assert!(rejected <= 3, "{rejected} of 50 rejected");
        // An AR(1) with coefficient 0.6 is rejected every time.
        for seed in 0..20 {
            let e = uniforms(seed + 100, 300);
            let mut x = vec![0.0; 300];
            for i in 1..300 {
                x[i] = 0.6 * x[i - 1] + e[i] - 0.5;
            }
            let t = ljung_box(&x, 0).unwrap();
            assert!(t.p_value < ALPHA, "seed {seed}: {t:?}");
        }
        assert!(ljung_box(&[1.0; 100], 0).is_none());
        assert!(ljung_box(&uniforms(1, 10), 0).is_none());
    }

    #[test]
    fn pettitt_finds_a_shift_where_it_is() {
        let mut x = uniforms(7, 400);
        for v in &mut x[250..] {
            *v += 0.5;
        }
        let c = pettitt(&x).unwrap();
        assert!((240..=260).contains(&c.index), "{c:?}");
        assert!(c.p_value < 1e-6, "{c:?}");
        let mut rejected = 0;
        for seed in 0..50 {
            if pettitt(&uniforms(seed, 400)).unwrap().p_value < ALPHA {
                rejected += 1;
            }
        }
        assert!(rejected <= 3, "{rejected} of 50 stationary series cut");
    }

    #[test]
    fn segments_cut_at_each_shift_and_nowhere_else() {
        let mut x = uniforms(11, 900);
        for v in &mut x[300..600] {
            *v += 1.0;
        }
        let parts = segments(&x);
        assert_eq!(parts.len(), 3, "{parts:?}");
        assert!((290..=310).contains(&parts[1].start), "{parts:?}");
        assert!((590..=610).contains(&parts[2].start), "{parts:?}");
        assert_eq!(parts[0].start, 0);
        assert_eq!(parts[2].end, 900);
        assert_eq!(segments(&uniforms(12, 900)), vec![0..900]);
    }
}
