//! The bucket layout shared by the recorder and the snapshot: HdrHistogram's
//! scheme with a unit of 1 ns and three significant digits.
//!
//! Values below 2048 ns get their own bucket each; above that, every doubling
//! of the value range reuses 1024 buckets of twice the width, so the relative
//! error stays below 1/1024.

/// Three significant decimal digits: 2 × 10^3 rounds up to 2048 sub-buckets.
pub const SIGNIFICANT_DIGITS: u32 = 3;
/// Largest value recorded exactly to three digits (2^36 - 1 ns, 68.7 s). Larger
/// values are clamped into the top bucket; the exact maximum is kept aside.
pub const HIGHEST_TRACKABLE: u64 = (1 << 36) - 1;

const SUB_BUCKET_COUNT: u64 = 2048;
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 10;
const SUB_BUCKET_HALF_COUNT: u64 = 1024;
const SUB_BUCKET_MASK: u64 = SUB_BUCKET_COUNT - 1;
/// Buckets needed so that 2^36 - 1 fits: 2048 << 25 = 2^36.
const BUCKET_COUNT: u64 = 26;
/// Total counters: (bucket_count + 1) × half the sub-buckets.
pub const COUNTS_LEN: usize = ((BUCKET_COUNT + 1) * SUB_BUCKET_HALF_COUNT) as usize;

/// Which power-of-two bucket holds `v`: 0 for values below 2048.
#[inline]
fn bucket_of(v: u64) -> u32 {
    64 - (SUB_BUCKET_HALF_MAGNITUDE + 1) - (v | SUB_BUCKET_MASK).leading_zeros()
}

/// Index of the counter for `value` (clamped to the trackable range).
#[inline]
pub fn index_of(value: u64) -> usize {
    let v = value.min(HIGHEST_TRACKABLE);
    let bucket = bucket_of(v);
    let sub = v >> bucket;
    // For bucket 0 the sub-bucket spans 0..2048; for the others only the upper
    // half (1024..2048) is used, which the subtraction below folds in.
    (((u64::from(bucket) + 1) << SUB_BUCKET_HALF_MAGNITUDE) + sub - SUB_BUCKET_HALF_COUNT) as usize
}

/// The lowest value that maps to counter `index`.
#[inline]
pub fn lowest_of(index: usize) -> u64 {
    let i = index as u64;
    let mut bucket = (i >> SUB_BUCKET_HALF_MAGNITUDE) as i64 - 1;
    let mut sub = (i & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
    if bucket < 0 {
        sub -= SUB_BUCKET_HALF_COUNT;
        bucket = 0;
    }
    sub << bucket
}

/// The highest value that maps to counter `index`.
#[inline]
pub fn highest_of(index: usize) -> u64 {
    let low = lowest_of(index);
    let bucket = bucket_of(low);
    low + (1u64 << bucket) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        for v in 0..2048 {
            assert_eq!(index_of(v), v as usize);
            assert_eq!(lowest_of(v as usize), v);
            assert_eq!(highest_of(v as usize), v);
        }
    }

    #[test]
    fn index_round_trips_and_is_monotonic() {
        let mut last = 0;
        for i in 0..COUNTS_LEN {
            let lo = lowest_of(i);
            let hi = highest_of(i);
            assert!(lo <= hi);
            assert_eq!(index_of(lo), i, "lowest of {i}");
            assert_eq!(index_of(hi), i, "highest of {i}");
            if i > 0 {
                assert_eq!(lo, last + 1, "buckets are contiguous at {i}");
            }
            last = hi;
        }
        assert!(last >= HIGHEST_TRACKABLE);
    }

    #[test]
    fn relative_error_is_below_one_in_a_thousand() {
        for i in 2048..COUNTS_LEN {
            let width = highest_of(i) - lowest_of(i) + 1;
            assert!(width as f64 / lowest_of(i) as f64 <= 1.0 / 1000.0);
        }
    }

    #[test]
    fn clamps_beyond_range() {
        assert_eq!(index_of(u64::MAX), index_of(HIGHEST_TRACKABLE));
        assert_eq!(index_of(HIGHEST_TRACKABLE), COUNTS_LEN - 1);
    }
}
