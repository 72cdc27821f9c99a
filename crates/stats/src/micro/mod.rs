//! The pure parts of the microbenchmarks (`latscope micro`): the cache
//! levels a memory-latency curve shows, and the comparison of two runs'
//! benchmarks (ratio of medians with a bootstrap interval and a verdict).

pub mod compare;
pub mod levels;

/// The median of sorted values (the mean of the middle two for an even
/// count); 0 for none.
pub fn median_sorted(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}
