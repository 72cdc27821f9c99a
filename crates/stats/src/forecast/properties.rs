//! Property tests of the checked forecasts over random two-regime
//! distributions: worst cases rise with the horizon, are finite, and are
//! never below the run's maximum for a horizon the run spans; the MTTF
//! never falls as a buffer grows or buffers are added.

use latscope_model::Nanos;
use proptest::prelude::*;

use super::test_rng::Rng;
use super::*;
use crate::Histogram;

/// `seconds` at 200 Hz: wake-ups of 10 µs plus an exponential of
/// `base_us`, and with probability `stall_p` a stall of 0.3 ms plus an
/// exponential of `stall_us`, in runs of `burst` consecutive samples.
fn run(
    seed: u64,
    seconds: u64,
    base_us: f64,
    stall_p: f64,
    stall_us: f64,
    burst: u64,
) -> (Histogram, Vec<u64>) {
    let mut rng = Rng(seed);
    let mut h = Histogram::new();
    let mut maxima = vec![0u64; seconds as usize];
    let mut left = 0u64;
    let mut stall = 0u64;
    for i in 0..seconds * 200 {
        let v = if left > 0 {
            left -= 1;
            stall
        } else if rng.uniform() < stall_p {
            stall = 300_000 + (-rng.uniform().ln() * stall_us * 1000.0) as u64;
            left = burst - 1;
            stall
        } else {
            10_000 + (-rng.uniform().ln() * base_us * 1000.0) as u64
        };
        h.record(v);
        let m = &mut maxima[(i / 200) as usize];
        *m = (*m).max(v);
    }
    (h, maxima)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn forecasts_are_monotone_finite_and_never_below_what_was_seen(
        seed in 1u64..u64::MAX,
        seconds in 60u64..400,
        base_us in 1.0f64..30.0,
        stall_p in 0.0f64..0.01,
        stall_us in 50.0f64..3000.0,
        burst in 1u64..6,
    ) {
        let (h, maxima) = run(seed, seconds, base_us, stall_p, stall_us, burst);
        let m = Measured::new(&h, Nanos::from_secs(seconds), true, &TailOptions::default())
            .unwrap()
            .with_timeline(&[&maxima]);
        let max = h.max().unwrap().0;
        let mut last = 0u64;
        for s in [1.0, 10.0, 60.0, 300.0, 600.0, 1800.0, 3600.0, 36_000.0] {
            match m.exceeded_once_per(s) {
                Ok(e) => {
                    prop_assert!(e.latency_ns >= last, "{s} s: {} after {last}", e.latency_ns);
                    prop_assert!(e.latency_ns < u64::MAX / 2, "finite: {e:?}");
                    prop_assert!(e.interval.low <= e.latency_ns);
                    if s >= seconds as f64 {
                        prop_assert!(e.latency_ns >= max, "{s} s: {} below the run's max {max}", e.latency_ns);
                    }
                    last = e.latency_ns;
                }
                Err(ForecastError::Refused(_)) | Err(ForecastError::TooFewTailSamples { .. })
                | Err(ForecastError::DegenerateTail(_)) => {}
                Err(e) => prop_assert!(false, "{s} s: {e}"),
            }
        }
        // Beyond ten times the run: always refused.
        let beyond = m.exceeded_once_per(seconds as f64 * 11.0);
        let refused = matches!(
            beyond,
            Err(ForecastError::Refused(_)) | Err(ForecastError::TooFewTailSamples { .. })
        );
        prop_assert!(refused, "beyond ten runs: {beyond:?}");
        let spec = GridSpec::standard();
        let g = mttf_grid(&m, &spec).unwrap();
        for (r, row) in g.cells.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                prop_assert!(cell.mttf_s.is_finite() && cell.mttf_s > 0.0, "{cell:?}");
                if c > 0 {
                    prop_assert!(cell.mttf_s >= row[c - 1].mttf_s * (1.0 - 1e-9),
                        "more buffers, shorter MTTF: {:?} then {:?}", row[c - 1], cell);
                }
                if r > 0 {
                    let above = &g.cells[r - 1][c];
                    prop_assert!(cell.mttf_s >= above.mttf_s * (1.0 - 1e-9),
                        "larger buffers, shorter MTTF: {above:?} then {cell:?}");
                }
            }
        }
    }
}
