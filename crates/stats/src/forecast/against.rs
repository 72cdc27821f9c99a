//! A forecast held against reality: the underrun rate a timer run predicts
//! for a buffering scheme, beside the underruns an application-probe run
//! of that scheme counted, with an exact test.
//!
//! One underrun per stall: the application probe counts one underrun for
//! each stall that outlasts the slack however many periods it spans, so
//! the prediction counts wake-ups, not deadlines ([`Measured::wakeups`]):
//! `P(latency > (n − 1)·t − c)` per buffer, from [`Measured::mttf_best`] as
//! `latscope forecast` computes it (read from the data where they hold
//! misses, extrapolated from the tail fit where they hold few).
//!
//! The test, exact either way, two-sided, refuting at p < [`REFUTE_AT`]:
//! - predicted from observed misses (`k₁` of `n₁` wake-ups) against `k₂`
//!   underruns in `n₂` buffers: both counts are Poisson, and given
//!   `k₁ + k₂` the application's share is binomial with `p = n₂ / (n₁ + n₂)`
//!   when the rates are equal (the conditional test of two Poisson rates);
//! - predicted by the tail model (a rate without a count): `k₂` against a
//!   Poisson mean of `P(miss)·n₂`.
//!
//! Beside the study's model, the same timer run gives a second prediction
//! that exposes the work too ([`Exposed`]): the pipeline's buffer is also
//! late when a stall longer than the slack lands in its `c` of work, which
//! a wake-up never sees. If stalls come independently of the thread, the
//! latency at a random instant is the rest of the stall covering it, so
//! its density at `s` is the rate of stalls longer than `s`:
//! `P(underrun) ≈ P(L > s) + c·f_L(s)` (first order), `f_L(s)` counted in
//! the band `[s/2, 3s/2)` of the same distribution.

use serde::Serialize;

use super::mttf::BufferScheme;
use super::special::poisson_mean_interval;
use super::validation::poisson_two_sided;
use super::{Interval, Measured, Provenance};
use crate::compare::{binomial_lower_tail, binomial_upper_tail};

/// A forecast is refuted when its exact test gives p below this.
pub const REFUTE_AT: f64 = 0.01;

/// The underruns an application-probe run counted.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ObservedUnderruns {
    pub underruns: u64,
    /// Buffers the producer filled (one deadline each).
    pub buffers: u64,
}

/// One side of the comparison, as underruns per hour of the pipeline
/// running.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// Events counted (misses of the timer run, underruns of the app run);
    /// `None` for a model rate.
    pub events: Option<u64>,
    /// Buffers (wake-ups) the count is out of.
    pub buffers: u64,
    pub per_hour: f64,
    /// Exact Poisson interval of `per_hour` (the model's, for an
    /// extrapolated prediction).
    pub interval_per_hour: Interval<f64>,
    pub provenance: Provenance,
    /// No miss was seen and none extrapolated: `per_hour` is an upper
    /// bound.
    pub upper_bound: bool,
}

/// Predicted against observed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub scheme: BufferScheme,
    pub slack_ns: i64,
    pub predicted: Rate,
    pub observed: Rate,
    /// Which exact test.
    pub test: &'static str,
    pub p_value: f64,
    /// `p_value < REFUTE_AT`.
    pub refuted: bool,
    /// One line.
    pub verdict: String,
    /// The prediction with the work exposed, when the slack is positive
    /// and the prediction is read from counts.
    pub exposed: Option<Exposed>,
}

/// The first-order prediction with the work exposed to stalls.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Exposed {
    /// Wake-ups later than the slack (as `predicted.events`).
    pub late: u64,
    /// Wake-ups in the band `[s/2, 3s/2)`, the density's estimate.
    pub band: u64,
    pub per_hour: f64,
    /// The counts' exact intervals combined (each end from the ends of the
    /// two counts' intervals).
    pub interval_per_hour: Interval<f64>,
    /// The two-sided Poisson p of the observed count at the end of the
    /// interval nearest to it: the prediction is refuted only when even
    /// that end is.
    pub p_value: f64,
    pub refuted: bool,
    pub verdict: String,
}

fn per_hour(events: f64, buffers: u64, period_s: f64) -> f64 {
    events / (buffers.max(1) as f64 * period_s) * 3600.0
}

fn rate_interval(k: u64, buffers: u64, period_s: f64, confidence: f64) -> Interval<f64> {
    let (lo, hi) = poisson_mean_interval(k, confidence);
    Interval {
        low: per_hour(lo, buffers, period_s),
        high: Some(per_hour(hi, buffers, period_s)),
        confidence,
    }
}

/// Two-sided exact test that `k2` of `k1 + k2` events fall on the side
/// holding `n2` of `n1 + n2` trials (equal rates).
fn conditional_two_sided(k1: u64, n1: u64, k2: u64, n2: u64) -> f64 {
    let total = k1 + k2;
    if total == 0 {
        return 1.0;
    }
    let p = n2 as f64 / (n1 + n2).max(1) as f64;
    let lower = binomial_lower_tail(total, p, k2);
    let upper = binomial_upper_tail(total, p, k2);
    (2.0 * lower.min(upper)).min(1.0)
}

/// The comparison of `scheme`'s predicted underruns (from the timer run's
/// per-wake-up distribution `wakeups`) with `observed`.
pub fn compare_underruns(
    wakeups: &Measured<'_>,
    scheme: &BufferScheme,
    observed: ObservedUnderruns,
) -> Comparison {
    let t = scheme.period_s();
    let confidence = wakeups.confidence();
    let m = wakeups.mttf_best(scheme);
    let n1 = wakeups.samples();
    let k2 = observed.underruns;
    let n2 = observed.buffers;
    let observed_rate = Rate {
        events: Some(k2),
        buffers: n2,
        per_hour: per_hour(k2 as f64, n2, t),
        interval_per_hour: rate_interval(k2, n2, t, confidence),
        provenance: Provenance::Observed,
        upper_bound: false,
    };
    let (predicted, test, p_value) = match m.provenance {
        Provenance::Observed => {
            let k1 = m.misses;
            let rate = Rate {
                events: Some(k1),
                buffers: n1,
                per_hour: per_hour(k1 as f64, n1, t),
                interval_per_hour: rate_interval(k1, n1, t, confidence),
                provenance: Provenance::Observed,
                upper_bound: k1 == 0,
            };
            let p = conditional_two_sided(k1, n1, k2, n2);
            (rate, "conditional binomial test of two Poisson counts", p)
        }
        Provenance::Extrapolated => {
            let per_hour_model = 3600.0 / m.mttf_s;
            let interval = Interval {
                low: m.interval_s.high.map_or(0.0, |h| 3600.0 / h),
                high: Some(3600.0 / m.interval_s.low),
                confidence,
            };
            let rate = Rate {
                events: None,
                buffers: n1,
                per_hour: per_hour_model,
                interval_per_hour: interval,
                provenance: Provenance::Extrapolated,
                upper_bound: m.lower_bound,
            };
            let lambda = per_hour_model / 3600.0 * n2 as f64 * t;
            let p = if m.lower_bound {
                // Only more underruns than the bound allows refute it.
                if k2 == 0 {
                    1.0
                } else {
                    1.0 - super::special::poisson_cdf(k2 - 1, lambda)
                }
            } else {
                poisson_two_sided(k2, lambda)
            };
            (rate, "Poisson test against the model's mean", p)
        }
    };
    let refuted = p_value < REFUTE_AT;
    let verdict = verdict_line(&predicted, &observed_rate, p_value, refuted);
    let exposed = (m.provenance == Provenance::Observed)
        .then(|| exposed(wakeups, scheme, &observed_rate))
        .flatten();
    Comparison {
        scheme: *scheme,
        slack_ns: scheme.slack_ns(),
        predicted,
        observed: observed_rate,
        test,
        p_value,
        refuted,
        verdict,
        exposed,
    }
}

/// [`Exposed`] for `scheme`, from the per-wake-up histogram.
fn exposed(wakeups: &Measured<'_>, scheme: &BufferScheme, observed: &Rate) -> Option<Exposed> {
    let s = u64::try_from(scheme.slack_ns()).ok().filter(|&s| s >= 2)?;
    let h = wakeups.histogram();
    let n1 = h.count();
    let (lo, hi) = (s / 2, s + s / 2);
    let late = h.count_above(s);
    let band = h.count_above(lo.saturating_sub(1)) - h.count_above(hi.saturating_sub(1));
    // Each wake-up in the band stands for c / (hi − lo) of a late buffer.
    let weight = scheme.compute_ns() as f64 / (hi - lo) as f64;
    let t = scheme.period_s();
    let confidence = wakeups.confidence();
    let events = late as f64 + weight * band as f64;
    let (late_lo, late_hi) = poisson_mean_interval(late, confidence);
    let (band_lo, band_hi) = poisson_mean_interval(band, confidence);
    let low = per_hour(late_lo + weight * band_lo, n1, t);
    let high = per_hour(late_hi + weight * band_hi, n1, t);
    let k2 = observed.events.unwrap_or(0);
    let n2 = observed.buffers as f64;
    // The end of the interval nearest the observation, as a mean for n₂.
    let nearest = observed.per_hour.clamp(low, high) / 3600.0 * n2 * t;
    let p_value = poisson_two_sided(k2, nearest);
    let refuted = p_value < REFUTE_AT;
    let predicted = Rate {
        events: None,
        buffers: n1,
        per_hour: per_hour(events, n1, t),
        interval_per_hour: Interval {
            low,
            high: Some(high),
            confidence,
        },
        provenance: Provenance::Observed,
        upper_bound: false,
    };
    let verdict = verdict_line(&predicted, observed, p_value, refuted);
    Some(Exposed {
        late,
        band,
        per_hour: predicted.per_hour,
        interval_per_hour: predicted.interval_per_hour,
        p_value,
        refuted,
        verdict,
    })
}

fn verdict_line(predicted: &Rate, observed: &Rate, p: f64, refuted: bool) -> String {
    let how = if predicted.per_hour > 0.0 {
        format!(
            "observed {:.2}x the predicted rate",
            observed.per_hour / predicted.per_hour
        )
    } else {
        "none predicted".to_string()
    };
    if refuted {
        format!("REFUTED: {how} (p = {p:.2e} < {REFUTE_AT})")
    } else {
        format!("CONSISTENT: {how} (p = {p:.3}, not below {REFUTE_AT})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::{Compute, TailOptions};
    use crate::Histogram;
    use latscope_model::Nanos;

    fn timer_run(late: u64, of: u64) -> Histogram {
        let mut h = Histogram::new();
        h.record_n(20_000, of - late);
        h.record_n(500_000, late);
        h
    }

    #[test]
    fn the_conditional_test_knows_its_answers() {
        // Equal exposure, 10 and 10: nothing to see.
        assert!((conditional_two_sided(10, 1000, 10, 1000) - 1.0).abs() < 1e-12);
        // 0 of 10 on one half: 2 · 0.5^10.
        let p = conditional_two_sided(10, 1000, 0, 1000);
        assert!((p - 2.0 * 0.5f64.powi(10)).abs() < 1e-12, "{p}");
        // No event anywhere: p = 1.
        assert_eq!(conditional_two_sided(0, 10, 0, 10), 1.0);
    }

    #[test]
    fn an_app_run_like_the_timer_run_is_consistent_and_one_ten_times_worse_is_not() {
        // 1 ms, 2 buffers, 0.6 ms: slack 0.4 ms; the timer run: 100 of
        // 360,000 wake-ups at 500 µs (100 per 6 min = 1000 per hour).
        let h = timer_run(100, 360_000);
        let wake =
            Measured::new(&h, Nanos::from_secs(360), false, &TailOptions::default()).unwrap();
        let scheme = BufferScheme::new(1_000_000, 2, Compute::Nanos(600_000)).unwrap();
        let same = compare_underruns(
            &wake,
            &scheme,
            ObservedUnderruns {
                underruns: 17,
                buffers: 60_000,
            },
        );
        assert_eq!(same.predicted.events, Some(100));
        assert!((same.predicted.per_hour - 1000.0).abs() < 1e-9);
        assert!((same.observed.per_hour - 1020.0).abs() < 1e-9);
        assert!(!same.refuted, "{same:?}");
        assert!(same.verdict.starts_with("CONSISTENT"));
        let worse = compare_underruns(
            &wake,
            &scheme,
            ObservedUnderruns {
                underruns: 170,
                buffers: 60_000,
            },
        );
        assert!(worse.refuted && worse.p_value < 1e-20, "{worse:?}");
        assert!(worse.verdict.starts_with("REFUTED"), "{}", worse.verdict);
        let none = compare_underruns(
            &wake,
            &scheme,
            ObservedUnderruns {
                underruns: 0,
                buffers: 60_000,
            },
        );
        // 17 expected, none seen: refuted as too few (2·(5/6)^100·...).
        assert!(none.refuted, "{none:?}");
    }

    #[test]
    fn exposing_the_work_adds_c_times_the_density_at_the_slack() {
        // 1000 of 100,000 wake-ups at 300 µs, inside the band [200, 600) µs
        // of a 400 µs slack, and 100 at 500 µs (late, and in the band):
        // density 1100 / 400 µs; with 600 µs of work each of them stands
        // for 1.5 late buffers: 100 + 1.5·1100 = 1750 per 100,000.
        let mut h = Histogram::new();
        h.record_n(20_000, 100_000 - 1_100);
        h.record_n(300_000, 1_000);
        h.record_n(500_000, 100);
        let wake =
            Measured::new(&h, Nanos::from_secs(100), false, &TailOptions::default()).unwrap();
        let scheme = BufferScheme::new(1_000_000, 2, Compute::Nanos(600_000)).unwrap();
        let c = compare_underruns(
            &wake,
            &scheme,
            ObservedUnderruns {
                underruns: 175,
                buffers: 10_000,
            },
        );
        let e = c.exposed.as_ref().unwrap();
        assert_eq!((e.late, e.band), (100, 1_100));
        // 1750 per 100 s of buffers = 63,000 per hour.
        assert!((e.per_hour - 63_000.0).abs() < 1e-6, "{}", e.per_hour);
        assert!(!e.refuted && c.refuted, "{c:?}");
        // Without work there is nothing to expose.
        let idle = BufferScheme::new(400_000, 2, Compute::Nanos(0)).unwrap();
        let c0 = compare_underruns(
            &wake,
            &idle,
            ObservedUnderruns {
                underruns: 10,
                buffers: 10_000,
            },
        );
        let e0 = c0.exposed.unwrap();
        assert!((e0.per_hour - c0.predicted.per_hour).abs() < 1e-9);
    }
}
