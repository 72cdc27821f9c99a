//! Statistics over iterations, and the correction for what measuring costs.
//!
//! A benchmark runs `ops` operations per iteration between two clock reads,
//! for many iterations. Following Chen et al. (§3.4, the *Null* benchmark),
//! the cost of the measurement itself is measured separately — the time
//! between two back-to-back clock reads, and the counter deltas of an empty
//! iteration — and subtracted from every iteration before dividing by the
//! number of operations:
//!
//! ```text
//! per-op time    = max(0, elapsed − null_elapsed) / ops
//! per-op counter = max(0, delta − null_delta) / ops
//! ```
//!
//! The statistics (min, median, mean, standard deviation, max) are then
//! taken over the iterations' per-op figures, as the study reports them: a
//! single operation of tens of nanoseconds cannot be timed by a clock read
//! of about as long, but an iteration of thousands can, and its spread says
//! how steady the machine was.
//!
//! An iteration should last at least [`OVERHEAD_FACTOR`] times the clock
//! read, so that the correction is small next to what it corrects;
//! [`ops_per_iteration`] picks the number of operations from a first
//! estimate, and [`OpStats::overhead_share`] says how large the correction
//! turned out to be.

use serde::Serialize;

/// How many times longer than the measurement overhead an iteration should
/// last (the correction is then at most 0.1 % of it).
pub const OVERHEAD_FACTOR: f64 = 1000.0;

/// The shortest iteration aimed for, whatever the overhead (1 ms: well
/// above the clock's resolution and a timer tick's share of noise).
pub const MIN_ITERATION_NS: f64 = 1_000_000.0;

/// Why statistics could not be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no iterations were measured")]
    NoIterations,
    #[error("an iteration must run at least one operation")]
    NoOperations,
    #[error("the measurement overhead must be finite and not negative (got {0})")]
    BadOverhead(f64),
}

/// Per-operation statistics of one benchmark over its iterations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpStats {
    pub iterations: usize,
    pub ops_per_iteration: u64,
    /// The overhead subtracted from every iteration (ns).
    pub overhead_ns: f64,
    /// Per operation, after the correction (ns).
    pub min_ns: f64,
    pub median_ns: f64,
    pub mean_ns: f64,
    /// Sample standard deviation over iterations (n − 1); 0 for one.
    pub stddev_ns: f64,
    pub max_ns: f64,
    /// The median per operation without the correction.
    pub uncorrected_median_ns: f64,
    /// The overhead as a share of the median iteration: how much of what
    /// was timed was the timing.
    pub overhead_share: f64,
    /// Each iteration's corrected time per operation, in the order they
    /// ran.
    pub per_op_ns: Vec<f64>,
}

/// The statistics of iterations that took `elapsed_ns` each, running `ops`
/// operations, with `overhead_ns` (the *Null* figure) subtracted from each.
pub fn op_stats(elapsed_ns: &[u64], ops: u64, overhead_ns: f64) -> Result<OpStats, StatsError> {
    if elapsed_ns.is_empty() {
        return Err(StatsError::NoIterations);
    }
    if ops == 0 {
        return Err(StatsError::NoOperations);
    }
    if !overhead_ns.is_finite() || overhead_ns < 0.0 {
        return Err(StatsError::BadOverhead(overhead_ns));
    }
    let n = ops as f64;
    let in_order: Vec<f64> = elapsed_ns
        .iter()
        .map(|&e| (e as f64 - overhead_ns).max(0.0) / n)
        .collect();
    let mut per_op = in_order.clone();
    per_op.sort_by(f64::total_cmp);
    let mut raw: Vec<f64> = elapsed_ns.iter().map(|&e| e as f64).collect();
    raw.sort_by(f64::total_cmp);
    let mean = per_op.iter().sum::<f64>() / per_op.len() as f64;
    let stddev = if per_op.len() > 1 {
        let ss: f64 = per_op.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (per_op.len() - 1) as f64).sqrt()
    } else {
        0.0
    };
    let median_iteration = median_sorted(&raw);
    Ok(OpStats {
        iterations: per_op.len(),
        ops_per_iteration: ops,
        overhead_ns,
        min_ns: per_op[0],
        median_ns: median_sorted(&per_op),
        mean_ns: mean,
        stddev_ns: stddev,
        max_ns: per_op[per_op.len() - 1],
        uncorrected_median_ns: median_iteration / n,
        overhead_share: if median_iteration > 0.0 {
            overhead_ns / median_iteration
        } else {
            0.0
        },
        per_op_ns: in_order,
    })
}

pub use latscope_stats::micro::median_sorted;

/// A counter's change per operation over an iteration of `ops` operations,
/// less the change an empty iteration shows (`null_delta`, the counter's
/// own cost): never below 0.
pub fn per_op_counter(delta: u64, null_delta: f64, ops: u64) -> f64 {
    if ops == 0 {
        return 0.0;
    }
    (delta as f64 - null_delta).max(0.0) / ops as f64
}

/// How many operations an iteration needs to last at least
/// [`OVERHEAD_FACTOR`] times `overhead_ns` and `min_iteration_ns`
/// ([`MIN_ITERATION_NS`] unless a benchmark asks for more), given
/// a first estimate of one operation's cost; at least 1.
pub fn ops_per_iteration(estimate_op_ns: f64, overhead_ns: f64, min_iteration_ns: f64) -> u64 {
    let target = (OVERHEAD_FACTOR * overhead_ns.max(0.0)).max(min_iteration_ns);
    if !estimate_op_ns.is_finite() || estimate_op_ns <= 0.0 {
        return 1;
    }
    let ops = (target / estimate_op_ns).ceil();
    if ops >= u64::MAX as f64 {
        u64::MAX
    } else {
        (ops as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn statistics_are_per_operation_after_the_correction() {
        // Five iterations of 100 operations, each iteration paying 40 ns
        // of clock reads.
        let elapsed = [10_040, 10_240, 9_940, 11_040, 10_040];
        let s = op_stats(&elapsed, 100, 40.0).unwrap();
        assert_eq!(s.iterations, 5);
        assert_eq!(s.min_ns, 99.0);
        assert_eq!(s.median_ns, 100.0);
        assert_eq!(s.max_ns, 110.0);
        assert!((s.mean_ns - 102.2).abs() < 1e-9, "{}", s.mean_ns);
        // Sample standard deviation of 99, 100, 100, 102, 110 (mean 102.2).
        let want = ((10.24 + 4.84 + 4.84 + 0.04 + 60.84) / 4.0f64).sqrt();
        assert!((s.stddev_ns - want).abs() < 1e-9, "{}", s.stddev_ns);
        assert_eq!(s.uncorrected_median_ns, 100.4);
        assert!((s.overhead_share - 40.0 / 10_040.0).abs() < 1e-12);
    }

    #[test]
    fn an_even_count_has_the_middle_two_as_median() {
        let s = op_stats(&[100, 200, 300, 400], 1, 0.0).unwrap();
        assert_eq!(s.median_ns, 250.0);
        assert_eq!(median_sorted(&[]), 0.0);
        assert_eq!(op_stats(&[7], 1, 0.0).unwrap().stddev_ns, 0.0);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(op_stats(&[], 1, 0.0), Err(StatsError::NoIterations));
        assert_eq!(op_stats(&[1], 0, 0.0), Err(StatsError::NoOperations));
        assert!(matches!(
            op_stats(&[1], 1, f64::NAN),
            Err(StatsError::BadOverhead(_))
        ));
        assert!(matches!(
            op_stats(&[1], 1, -1.0),
            Err(StatsError::BadOverhead(_))
        ));
    }

    #[test]
    fn counters_lose_their_own_cost_and_never_go_negative() {
        assert_eq!(per_op_counter(1_010, 10.0, 100), 10.0);
        assert_eq!(per_op_counter(5, 10.0, 100), 0.0);
        assert_eq!(per_op_counter(5, 0.0, 0), 0.0);
    }

    #[test]
    fn iterations_are_long_enough_to_dwarf_the_clock_read() {
        // A 2 µs frame (a slow clock read and counter reads): iterations
        // of at least 2 ms.
        assert_eq!(ops_per_iteration(50.0, 2000.0, MIN_ITERATION_NS), 40_000);
        // A cheap clock: the 1 ms floor, or the benchmark's own.
        assert_eq!(ops_per_iteration(100.0, 1.0, MIN_ITERATION_NS), 10_000);
        assert_eq!(ops_per_iteration(100.0, 1.0, 2e7), 200_000);
        // A slow operation still runs once.
        assert_eq!(ops_per_iteration(1e9, 20.0, MIN_ITERATION_NS), 1);
        assert_eq!(ops_per_iteration(0.0, 20.0, MIN_ITERATION_NS), 1);
        assert_eq!(ops_per_iteration(f64::NAN, 20.0, MIN_ITERATION_NS), 1);
    }

    proptest! {
        /// The statistics are ordered and the correction only lowers them.
        #[test]
        fn statistics_are_ordered(
            elapsed in proptest::collection::vec(0u64..10_000_000, 1..60),
            ops in 1u64..10_000,
            overhead in 0.0f64..1_000.0,
        ) {
            let s = op_stats(&elapsed, ops, overhead).unwrap();
            prop_assert!(s.min_ns <= s.median_ns && s.median_ns <= s.max_ns);
            prop_assert!(s.min_ns <= s.mean_ns + 1e-9 && s.mean_ns <= s.max_ns + 1e-9);
            prop_assert!(s.min_ns >= 0.0 && s.stddev_ns >= 0.0);
            prop_assert!(s.median_ns <= s.uncorrected_median_ns + 1e-9);
        }
    }
}
