//! A latscope histogram as a Prometheus native histogram: the HDR
//! recording buckets' counts moved into the exponential buckets of
//! [`NATIVE_SCHEMA`], then written as spans and deltas. The choices and
//! their reasons are in the parent module's documentation.

use latscope_record::Histogram;

use super::proto::BucketSpan;

/// The native bucket schema: each power of two split into 2^3 = 8 buckets,
/// neighbouring bounds 2^(1/8) ≈ 1.0905× apart.
pub const NATIVE_SCHEMA: i32 = 3;

/// The half-width of the native zero bucket, in seconds: 2^-128, the
/// default of Prometheus's Go client. Only exact zeros fall in it.
pub const NATIVE_ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// Buckets per power of two at [`NATIVE_SCHEMA`].
const PER_OCTAVE: usize = 8;

/// `2^(j/8) / 2` for j = 0..8: the bucket bounds inside one power of two
/// as fractions in [0.5, 1), the form `frexp` splits a value into.
/// Written out (as Prometheus's clients do) rather than computed with
/// `exp2`, whose last bit may differ between platforms, so that a value on
/// a bound lands where Prometheus would put it.
const BOUNDS: [f64; PER_OCTAVE] = [
    0.5,
    0.545_253_866_332_628_8,
    0.594_603_557_501_360_5,
    0.648_419_777_325_504_8,
    0.707_106_781_186_547_5,
    0.771_105_412_703_970_4,
    0.840_896_415_253_714_4,
    0.917_004_043_204_671_1,
];

/// A histogram's native form: the zero bucket's count and the non-empty
/// buckets as (index, count), ascending by index. Bucket `i` holds the
/// values in (2^((i-1)/8), 2^(i/8)] seconds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NativeBuckets {
    pub zero_count: u64,
    pub buckets: Vec<(i32, u64)>,
}

/// The native bucket that holds `seconds` (> 0): the `i` with
/// 2^((i-1)/8) < seconds ≤ 2^(i/8). Computed as Prometheus's clients do,
/// from the binary exponent and a search of the fraction among
/// the bounds of one power of two, so that no logarithm rounds a value
/// into a neighbour.
pub fn native_index(seconds: f64) -> i32 {
    let (frac, exp) = frexp(seconds);
    // bounds[j] < frac ≤ bounds[j+1], or j = 8 above the last bound: the
    // bucket that ends at 2^exp.
    let j = BOUNDS.partition_point(|&b| b < frac);
    let octave = i64::from(exp) - 1;
    let index = octave * PER_OCTAVE as i64 + j as i64;
    // A positive finite f64's exponent lies in -1073..=1024, so the index
    // lies within ±8200.
    i32::try_from(index).unwrap_or(if index < 0 { i32::MIN } else { i32::MAX })
}

/// The upper bound of native bucket `index`, in seconds: 2^(index/8).
pub fn native_upper_bound(index: i32) -> f64 {
    (f64::from(index) / PER_OCTAVE as f64).exp2()
}

/// `v = frac × 2^exp` with `frac` in [0.5, 1), for a positive finite `v`
/// (C's `frexp`; Rust's standard library has none).
fn frexp(v: f64) -> (f64, i32) {
    const EXP_MASK: u64 = 0x7ff << 52;
    let bits = v.to_bits();
    let biased = i32::try_from((bits & EXP_MASK) >> 52).unwrap_or(0);
    if biased == 0 {
        // Subnormal (below 2.2e-308 s, never a latency): scale into the
        // normal range first.
        let (frac, exp) = frexp(v * 2f64.powi(64));
        return (frac, exp - 64);
    }
    // Replace the exponent by the one of [0.5, 1): biased 1022.
    let frac = f64::from_bits((bits & !EXP_MASK) | (1022 << 52));
    (frac, biased - 1022)
}

/// The native buckets of a latscope histogram (nanoseconds). Each HDR
/// recording bucket's whole count goes to the native bucket that holds
/// its midpoint: HDR buckets are at most 0.1 % wide, so a native bound
/// that cuts one misplaces samples by at most 0.05 % of their value,
/// against the native buckets' 9 %. Zero goes to the zero bucket; below
/// 2048 ns every HDR bucket holds one value, so that is exact.
pub fn native_buckets(h: &Histogram) -> NativeBuckets {
    let mut out = NativeBuckets::default();
    for (low, high, count) in h.buckets() {
        if high == 0 {
            out.zero_count += count;
            continue;
        }
        let mid = low + (high - low) / 2;
        let index = native_index(mid as f64 / 1e9);
        match out.buckets.last_mut() {
            Some((i, c)) if *i == index => *c += count,
            _ => out.buckets.push((index, count)),
        }
    }
    out
}

/// Spans and deltas of ascending (index, count) buckets, as the protobuf
/// carries them. Gaps of one or two empty buckets are written as buckets of
/// count 0 inside the span (a zero delta costs one byte, a new span at least
/// four); longer gaps start a new span whose offset is the gap. An empty
/// list gives one no-op span (offset 0, length 0), which marks the message
/// as a native histogram even without observations.
pub fn spans_and_deltas(buckets: &[(i32, u64)]) -> (Vec<BucketSpan>, Vec<i64>) {
    /// Longest gap filled with empty buckets rather than a new span.
    const FILL: i64 = 2;
    let mut spans: Vec<(i32, u32)> = Vec::new();
    let mut deltas = Vec::with_capacity(buckets.len());
    let mut previous = 0i64;
    // The index just past the current span.
    let mut next: Option<i32> = None;
    for &(index, count) in buckets {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        match (next, spans.last_mut()) {
            (Some(n), Some((_, length))) => {
                let gap = i64::from(index) - i64::from(n);
                if gap <= FILL {
                    for _ in 0..gap {
                        deltas.push(-previous);
                        previous = 0;
                    }
                    *length += u32::try_from(gap + 1).unwrap_or(u32::MAX);
                } else {
                    spans.push((i32::try_from(gap).unwrap_or(i32::MAX), 1));
                }
            }
            _ => spans.push((index, 1)),
        }
        deltas.push(count - previous);
        previous = count;
        next = Some(index.saturating_add(1));
    }
    if spans.is_empty() {
        spans.push((0, 0));
    }
    let spans = spans
        .into_iter()
        .map(|(offset, length)| BucketSpan {
            offset: Some(offset),
            length: Some(length),
        })
        .collect();
    (spans, deltas)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_the_eighth_roots_of_two() {
        for (j, &b) in BOUNDS.iter().enumerate() {
            let exact = (j as f64 / 8.0).exp2() / 2.0;
            assert!((b - exact).abs() <= f64::EPSILON, "{j}: {b} vs {exact}");
        }
        assert_eq!(NATIVE_ZERO_THRESHOLD, 2f64.powi(-128));
    }

    #[test]
    fn index_puts_each_value_in_its_bucket() {
        // Powers of two are upper bounds: 1 s ends bucket 0, 0.5 s bucket -8.
        assert_eq!(native_index(1.0), 0);
        assert_eq!(native_index(0.5), -8);
        assert_eq!(native_index(2.0), 8);
        assert_eq!(native_index(1.0 + 1e-12), 1);
        assert_eq!(native_index(1.0 - 1e-12), 0);
        // 1 ns: 2^-30 ≈ 0.93 ns < 1 ns ≤ 2^(-239/8)
        assert_eq!(native_index(1e-9), -239);
        for ns in [1u64, 7, 999, 1000, 1001, 20_000, 1_234_567, 100_000_000] {
            let s = ns as f64 / 1e9;
            let i = native_index(s);
            assert!(native_upper_bound(i - 1) < s, "{ns}: bucket {i}");
            assert!(
                s <= native_upper_bound(i) * (1.0 + 1e-15),
                "{ns}: bucket {i}"
            );
        }
        assert_eq!(frexp(3.0), (0.75, 2));
        assert_eq!(frexp(f64::MIN_POSITIVE / 4.0), (0.5, -1023));
    }

    #[test]
    fn spans_fill_short_gaps_and_start_new_ones_for_long() {
        let (spans, deltas) = spans_and_deltas(&[(-3, 5), (-2, 7), (0, 2), (10, 4), (11, 4)]);
        let spans: Vec<_> = spans.iter().map(|s| (s.offset(), s.length())).collect();
        // -3..=0 is one span with an empty bucket at -1; 10 starts after a
        // gap of 9 (1..=9).
        assert_eq!(spans, [(-3, 4), (9, 2)]);
        assert_eq!(deltas, [5, 2, -7, 2, 2, 0]);
        let (spans, deltas) = spans_and_deltas(&[]);
        assert_eq!(spans.len(), 1);
        assert_eq!((spans[0].offset(), spans[0].length()), (0, 0));
        assert!(deltas.is_empty());
    }

    #[test]
    fn zeros_go_to_the_zero_bucket_and_counts_are_kept() {
        let mut h = Histogram::new();
        h.record_n(0, 3);
        h.record_n(1, 2);
        h.record_n(1_000_000, 4);
        let n = native_buckets(&h);
        assert_eq!(n.zero_count, 3);
        assert_eq!(n.buckets, [(-239, 2), (native_index(1e-3), 4)]);
    }
}
