//! Mean time to buffer underrun (the study's §5 and Figures 6 and 7).
//!
//! An application with `n` buffers of period `t` that needs `c` of compute
//! per buffer misses a deadline when its wake-up is later than the slack
//! `s = t·(n − 1) − c`. With `P(latency > s)` the per-deadline probability
//! (from the coordinated-omission-corrected histogram when there is one, so
//! that wake-ups that skipped deadlines count once per skipped deadline), the
//! mean time between misses is `MTTF = t / P(latency > s)`.
//!
//! The study divided by `(n − 1)·t` as "an approximation of the cycle time"
//! and noted it is exact only for double buffering; deadlines come once per
//! period `t`, so `t` is used here. Like the study, this applies a latency
//! distribution measured at one wake-up period to an application with
//! another: the per-wake-up latency is assumed not to depend on the period.
//!
//! When no measured deadline exceeded the slack the data say only that misses
//! are rarer than one in `N` deadlines: the MTTF is reported as a lower bound
//! `N·t` (`lower_bound: true`), never as infinity, with the exact Poisson
//! interval (for no event at 95 %, `MTTF > N·t / 3.69`).

use serde::Serialize;

pub use latscope_model::Compute;

use crate::Histogram;

use super::limits::MAX_EXTRAPOLATION;
use super::measured::Measured;
use super::special::poisson_mean_interval;
use super::{ForecastError, Interval, Provenance};

/// A buffering scheme: `buffers` buffers of `period_ns` each, `compute` to
/// fill one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BufferScheme {
    pub period_ns: u64,
    pub buffers: u32,
    pub compute: Compute,
}

impl BufferScheme {
    /// A scheme; the period must be positive, there must be at least one
    /// buffer and a fractional compute time must lie in [0, 1].
    pub fn new(
        period_ns: u64,
        buffers: u32,
        compute: Compute,
    ) -> Result<BufferScheme, ForecastError> {
        if period_ns == 0 || buffers == 0 {
            return Err(ForecastError::InvalidArgument(format!(
                "a buffering scheme needs a positive period and at least one buffer (got {period_ns} ns × {buffers})"
            )));
        }
        if let Compute::Fraction(f) = compute {
            if !(0.0..=1.0).contains(&f) {
                return Err(ForecastError::InvalidArgument(format!(
                    "compute fraction must lie in [0, 1] (got {f})"
                )));
            }
        }
        Ok(BufferScheme {
            period_ns,
            buffers,
            compute,
        })
    }

    /// Compute time per buffer in nanoseconds.
    pub fn compute_ns(&self) -> u64 {
        self.compute.nanos(self.period_ns)
    }

    /// The latency tolerance `(n − 1)·t`.
    pub fn tolerance_ns(&self) -> u64 {
        self.period_ns
            .saturating_mul(u64::from(self.buffers.saturating_sub(1)))
    }

    /// The slack `(n − 1)·t − c`; negative when the compute alone does not
    /// fit.
    pub fn slack_ns(&self) -> i64 {
        let s = i128::from(self.tolerance_ns()) - i128::from(self.compute_ns());
        i64::try_from(s).unwrap_or(if s < 0 { i64::MIN } else { i64::MAX })
    }

    /// Seconds per period.
    pub fn period_s(&self) -> f64 {
        self.period_ns as f64 / 1e9
    }
}

/// A mean time to underrun.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mttf {
    pub scheme: BufferScheme,
    pub slack_ns: i64,
    /// Per-deadline probability of a miss (the point estimate; 0 when none
    /// was observed and nothing was extrapolated).
    pub p_miss: f64,
    /// Measured deadlines whose latency exceeded the slack.
    pub misses: u64,
    /// Measured deadlines (N).
    pub deadlines: u64,
    /// Mean time between misses in seconds; a lower bound when
    /// `lower_bound` is set.
    pub mttf_s: f64,
    /// True when no miss was observed (or the extrapolated tail ends below
    /// the slack): the true MTTF is larger than `mttf_s`.
    pub lower_bound: bool,
    pub provenance: Provenance,
    /// Confidence interval of the MTTF in seconds; `high: None` when
    /// unbounded.
    pub interval_s: Interval<f64>,
}

/// The observed MTTF of `scheme` from a per-deadline histogram, with an
/// exact Poisson interval on the number of misses.
pub fn mttf_observed(
    h: &Histogram,
    scheme: &BufferScheme,
    confidence: f64,
) -> Result<Mttf, ForecastError> {
    let n = h.count();
    if n == 0 {
        return Err(ForecastError::EmptyHistogram);
    }
    let slack = scheme.slack_ns();
    let misses = match u64::try_from(slack) {
        Ok(s) => h.count_above(s),
        // Even an immediate wake-up misses.
        Err(_) => n,
    };
    let t = scheme.period_s();
    let total_s = n as f64 * t;
    let (lam_lo, lam_hi) = poisson_mean_interval(misses, confidence);
    let interval_s = Interval {
        low: total_s / lam_hi,
        high: (lam_lo > 0.0).then(|| total_s / lam_lo),
        confidence,
    };
    let (mttf_s, lower_bound) = if misses == 0 {
        (total_s, true)
    } else {
        (total_s / misses as f64, false)
    };
    Ok(Mttf {
        scheme: *scheme,
        slack_ns: slack,
        p_miss: misses as f64 / n as f64,
        misses,
        deadlines: n,
        mttf_s,
        lower_bound,
        provenance: Provenance::Observed,
        interval_s,
    })
}

/// MTTF over buffer sizes (rows) × buffer counts (columns): the data of the
/// study's Figures 6 and 7.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MttfGrid {
    /// Row keys: buffer sizes (periods) in ns.
    pub periods_ns: Vec<u64>,
    /// Column keys: numbers of buffers.
    pub buffers: Vec<u32>,
    pub compute: Compute,
    /// `cells[row][col]` for `periods_ns[row]` and `buffers[col]`.
    pub cells: Vec<Vec<Mttf>>,
}

impl MttfGrid {
    /// The cell for a row and column index.
    pub fn get(&self, row: usize, col: usize) -> Option<&Mttf> {
        self.cells.get(row)?.get(col)
    }
}

/// Fewest misses of a buffering scheme for which the MTTF is read from the
/// data: a Poisson count of 10 is known to about ±60 % at 95 %, and beyond
/// it the data are left to the tail model ([`Measured::mttf_extrapolated`]).
pub const MIN_OBSERVED_MISSES: u64 = 10;

impl Measured<'_> {
    /// The observed MTTF (see [`mttf_observed`]).
    pub fn mttf(&self, scheme: &BufferScheme) -> Mttf {
        match mttf_observed(self.histogram, scheme, self.confidence) {
            Ok(m) => m,
            // `new` rejected empty histograms, the only error.
            Err(_) => unreachable_mttf(scheme),
        }
    }

    /// The MTTF from the fitted tail, labelled extrapolated. When the slack
    /// lies at or below the fit's threshold, or at least
    /// [`MIN_OBSERVED_MISSES`] measured deadlines exceeded it, the data
    /// answer and the observed MTTF is returned instead (labelled
    /// observed). Beyond that the model's `P(miss)` is capped at
    /// `MIN_OBSERVED_MISSES / N`, the smallest probability the data give
    /// directly, so that `P(miss)` never rises with the slack: the MTTF
    /// never falls as a buffer grows or buffers are added.
    ///
    /// Two limits of the checked model apply: a tail whose shape may be 1
    /// or more gives no extrapolation ([`ForecastError::Refused`]), and a
    /// miss rarer than one in [`super::limits::MAX_EXTRAPOLATION`] runs is not
    /// quantified: the MTTF is then the lower bound of that many runs,
    /// `10·N·t` (`lower_bound`), which is what the data and the limit allow.
    /// The same bound stands when the fitted tail is bounded (ξ < 0) and no
    /// tail reaching the slack is compatible with the data
    /// ([`super::Gpd::upper_endpoint`] tells where the fitted tail ends), so that
    /// the MTTF stays monotone in the slack.
    pub fn mttf_extrapolated(&self, scheme: &BufferScheme) -> Result<Mttf, ForecastError> {
        let tail = self.tail.as_ref().map_err(Clone::clone)?;
        let slack = scheme.slack_ns();
        let observed = self.mttf(scheme);
        if slack as f64 <= tail.threshold_ns || observed.misses >= MIN_OBSERVED_MISSES {
            return Ok(observed);
        }
        if let Some(r) = self.heavy_tail() {
            return Err(ForecastError::Refused(r));
        }
        let x = slack as f64;
        let (p, iv) = match (tail.tail_probability(x), tail.tail_probability_interval(x)) {
            (Some(p), Some(iv)) => (p, iv),
            _ => {
                return Err(ForecastError::DegenerateTail(
                    "no tail probability at the slack".to_string(),
                ))
            }
        };
        let t = scheme.period_s();
        let p_high = iv.high.unwrap_or(tail.zeta);
        let n = self.samples() as f64;
        let reach = 1.0 / (MAX_EXTRAPOLATION * n);
        if p_high <= 0.0 {
            // The fitted tail is bounded below the slack, and tails reaching
            // it are rejected: the model predicts no miss at all, which is
            // no number of seconds; the limit's lower bound remains (the
            // same as for a miss rarer than the limit, so the MTTF stays
            // monotone in the slack).
            return Ok(Mttf {
                scheme: *scheme,
                slack_ns: slack,
                p_miss: 0.0,
                misses: observed.misses,
                deadlines: observed.deadlines,
                mttf_s: t / reach,
                lower_bound: true,
                provenance: Provenance::Extrapolated,
                interval_s: Interval {
                    low: t / reach,
                    high: None,
                    confidence: iv.confidence,
                },
            });
        }
        let interval_s = Interval {
            low: t / p_high,
            high: (iv.low > 0.0).then(|| t / iv.low),
            confidence: iv.confidence,
        };
        // Where the data hold MIN_OBSERVED_MISSES misses they answer; beyond,
        // the model may not say a miss is more likely than there.
        let p = p.min(MIN_OBSERVED_MISSES as f64 / n);
        let (mttf_s, lower_bound) = if p >= reach {
            (t / p, false)
        } else {
            // Rarer than the limit lets the model say (or no miss at all
            // within the fitted tail): at least the limit.
            (t / reach, true)
        };
        let interval_s = Interval {
            low: interval_s.low.min(mttf_s),
            high: if lower_bound { None } else { interval_s.high },
            confidence: interval_s.confidence,
        };
        Ok(Mttf {
            scheme: *scheme,
            slack_ns: slack,
            p_miss: p,
            misses: observed.misses,
            deadlines: observed.deadlines,
            mttf_s,
            lower_bound,
            provenance: Provenance::Extrapolated,
            interval_s,
        })
    }

    /// The MTTF the forecasts use: [`Measured::mttf_extrapolated`] (the
    /// data where they hold enough misses, the capped tail model beyond),
    /// else (no fit, or a refused one) the observed MTTF.
    ///
    /// One function of the slack: `P(miss)` never rises as the slack
    /// grows, and the MTTF never falls as a buffer grows or buffers are
    /// added. (Switching to the observed count wherever a single miss was
    /// seen made the curve zigzag: 0.1 s at 0.25 ms buffers, 60 s at 2 ms,
    /// 17 s at 4 ms.)
    pub fn mttf_best(&self, scheme: &BufferScheme) -> Mttf {
        self.mttf_extrapolated(scheme)
            .unwrap_or_else(|_| self.mttf(scheme))
    }

    /// [`Measured::mttf_best`] over buffer sizes (rows) × counts (columns),
    /// or the observed MTTF only when `extrapolate` is false.
    pub fn mttf_grid(
        &self,
        periods_ns: &[u64],
        buffers: &[u32],
        compute: Compute,
        extrapolate: bool,
    ) -> Result<MttfGrid, ForecastError> {
        let mut cells = Vec::with_capacity(periods_ns.len());
        for &period in periods_ns {
            let mut row = Vec::with_capacity(buffers.len());
            for &n in buffers {
                let scheme = BufferScheme::new(period, n, compute)?;
                row.push(if extrapolate {
                    self.mttf_best(&scheme)
                } else {
                    self.mttf(&scheme)
                });
            }
            cells.push(row);
        }
        Ok(MttfGrid {
            periods_ns: periods_ns.to_vec(),
            buffers: buffers.to_vec(),
            compute,
            cells,
        })
    }
}

/// Never produced: [`Measured`] holds a non-empty histogram. Kept total so
/// that no `unwrap` or panic is needed.
fn unreachable_mttf(scheme: &BufferScheme) -> Mttf {
    Mttf {
        scheme: *scheme,
        slack_ns: scheme.slack_ns(),
        p_miss: 0.0,
        misses: 0,
        deadlines: 0,
        mttf_s: 0.0,
        lower_bound: true,
        provenance: Provenance::Observed,
        interval_s: Interval {
            low: 0.0,
            high: None,
            confidence: 0.0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_follows_the_study() {
        // The study's modem: 4 ms cycle, 1 ms compute, double buffered: 3 ms.
        let s = BufferScheme::new(4_000_000, 2, Compute::Nanos(1_000_000)).unwrap();
        assert_eq!(s.slack_ns(), 3_000_000);
        assert_eq!(s.tolerance_ns(), 4_000_000);
        // Triple-buffered 6 ms buffers, 25 % compute: 12 − 1.5 = 10.5 ms.
        let s = BufferScheme::new(6_000_000, 3, Compute::Fraction(0.25)).unwrap();
        assert_eq!(s.slack_ns(), 10_500_000);
        let single = BufferScheme::new(1_000_000, 1, Compute::Fraction(0.5)).unwrap();
        assert_eq!(single.slack_ns(), -500_000);
        assert!(BufferScheme::new(0, 2, Compute::Nanos(0)).is_err());
        assert!(BufferScheme::new(1, 0, Compute::Nanos(0)).is_err());
        assert!(BufferScheme::new(1, 2, Compute::Fraction(1.5)).is_err());
    }

    /// 10⁶ deadlines: 10³ at 2 ms, 10 at 5 ms, the rest at 20 µs.
    fn known() -> Histogram {
        let mut h = Histogram::new();
        h.record_n(20_000, 1_000_000 - 1_010);
        h.record_n(2_000_000, 1_000);
        h.record_n(5_000_000, 10);
        h
    }

    #[test]
    fn exact_mttf_from_a_known_histogram() {
        let h = known();
        // 1 ms period, double buffered, 0.5 ms compute: slack 0.5 ms.
        // P(latency > 0.5 ms) = 1010 / 10⁶ exactly → MTTF = 1 ms / 1.01e-3.
        let s = BufferScheme::new(1_000_000, 2, Compute::Nanos(500_000)).unwrap();
        let m = mttf_observed(&h, &s, 0.95).unwrap();
        assert_eq!(m.misses, 1_010);
        assert_eq!(m.p_miss, 1_010.0 / 1e6);
        assert!((m.mttf_s - 1e-3 / 1.01e-3).abs() < 1e-12);
        assert!(!m.lower_bound);
        assert_eq!(m.provenance, Provenance::Observed);
        assert!(m.interval_s.low < m.mttf_s && m.interval_s.high.unwrap() > m.mttf_s);
        // 4 buffers of 1 ms, 0.5 ms compute: slack 2.5 ms, only the 10 at 5 ms.
        let s = BufferScheme::new(1_000_000, 4, Compute::Nanos(500_000)).unwrap();
        let m = mttf_observed(&h, &s, 0.95).unwrap();
        assert_eq!(m.misses, 10);
        assert!((m.mttf_s - 1e-3 * 1e5).abs() < 1e-9);
    }

    #[test]
    fn lower_bound_when_nothing_exceeds() {
        let h = known();
        let s = BufferScheme::new(2_000_000, 4, Compute::Nanos(0)).unwrap();
        let m = mttf_observed(&h, &s, 0.95).unwrap();
        assert_eq!(m.misses, 0);
        assert!(m.lower_bound);
        assert!(m.mttf_s.is_finite());
        // N·t = 10⁶ × 2 ms = 2000 s.
        assert!((m.mttf_s - 2000.0).abs() < 1e-9);
        assert_eq!(m.interval_s.high, None);
        assert!((m.interval_s.low - 2000.0 / 3.688_879).abs() < 0.01);
    }

    #[test]
    fn negative_slack_misses_every_deadline() {
        let h = known();
        let s = BufferScheme::new(1_000_000, 1, Compute::Nanos(10)).unwrap();
        let m = mttf_observed(&h, &s, 0.95).unwrap();
        assert_eq!(m.misses, 1_000_000);
        assert!((m.mttf_s - 1e-3).abs() < 1e-15);
        assert!(mttf_observed(&Histogram::new(), &s, 0.95).is_err());
    }
}
