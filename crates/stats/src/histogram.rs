use latscope_model::Nanos;

use crate::layout::{highest_of, index_of, lowest_of, COUNTS_LEN, HIGHEST_TRACKABLE};

/// An owned HDR histogram of nanosecond values: the form that is merged,
/// queried, stored and rendered. The measuring side records into an
/// [`crate::AtomicHistogram`] and takes snapshots of this type.
///
/// Besides the bucket counts it keeps the exact minimum, maximum and sum, so
/// min, max and mean are exact and only percentiles carry the 0.1 % bucket
/// error.
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("total", &self.total)
            .field("min", &self.min)
            .field("max", &self.max)
            .field("sum", &self.sum)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; COUNTS_LEN],
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Builds a snapshot from raw parts; used by the atomic recorder.
    pub(crate) fn from_parts(counts: Vec<u64>, sum: u128, min: u64, max: u64) -> Histogram {
        let total = counts.iter().sum();
        let (min, max) = if total == 0 {
            (u64::MAX, 0)
        } else {
            (min, max)
        };
        Histogram {
            counts,
            total,
            sum,
            min,
            max,
        }
    }

    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    pub fn record_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[index_of(value)] += n;
        self.total += n;
        self.sum += u128::from(value) * u128::from(n);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Adds another histogram's samples to this one.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += *b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The samples recorded after `earlier`, when this histogram continues
    /// it (every bucket at least as full): the part of a run between two
    /// cumulative snapshots. Counts and the sum are exact; the minimum and
    /// maximum are the bounds of the lowest and highest non-empty buckets,
    /// except that the maximum is exact when it was recorded after
    /// `earlier` (it exceeds `earlier`'s). `None` when `earlier` is not an
    /// earlier state of this histogram.
    pub fn since(&self, earlier: &Histogram) -> Option<Histogram> {
        let mut counts = Vec::with_capacity(self.counts.len());
        for (&a, &b) in self.counts.iter().zip(&earlier.counts) {
            counts.push(a.checked_sub(b)?);
        }
        let sum = self.sum.checked_sub(earlier.sum)?;
        let first = counts.iter().position(|&c| c > 0);
        let last = counts.iter().rposition(|&c| c > 0);
        let (min, max) = match (first, last) {
            (Some(f), Some(l)) => {
                let max = if earlier.is_empty() || self.max > earlier.max {
                    self.max
                } else {
                    highest_of(l).min(self.max)
                };
                (lowest_of(f).max(self.min).min(max), max)
            }
            _ => (u64::MAX, 0),
        };
        Some(Histogram::from_parts(counts, sum, min, max))
    }

    pub fn count(&self) -> u64 {
        self.total
    }
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
    /// Exact smallest value recorded; `None` when empty.
    pub fn min(&self) -> Option<Nanos> {
        (self.total > 0).then_some(Nanos(self.min))
    }
    /// Exact largest value recorded (even beyond the trackable range).
    pub fn max(&self) -> Option<Nanos> {
        (self.total > 0).then_some(Nanos(self.max))
    }
    /// Exact arithmetic mean, rounded to the nearest nanosecond.
    pub fn mean(&self) -> Option<Nanos> {
        if self.total == 0 {
            return None;
        }
        let t = u128::from(self.total);
        let m = (self.sum + t / 2) / t;
        Some(Nanos(u64::try_from(m).unwrap_or(u64::MAX)))
    }
    /// Exact sum of all values.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Replaces the sum of the values, for a histogram rebuilt from another
    /// tool's buckets: placed at each bucket's edge, its samples sum to less
    /// than the tool measured, and the tool's own average is the better
    /// account of the mean. Refused (returning `false`, changing nothing)
    /// for an empty histogram and for a sum no set of values between the
    /// minimum and the maximum could have.
    pub fn set_sum(&mut self, sum: u128) -> bool {
        let n = u128::from(self.total);
        if n == 0 || sum < n * u128::from(self.min) || sum > n * u128::from(self.max) {
            return false;
        }
        self.sum = sum;
        true
    }

    /// Population standard deviation, from bucket midpoints (Jones & Regehr
    /// report it for callback spacing).
    pub fn stddev(&self) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let mean = self.sum as f64 / self.total as f64;
        let mut acc = 0.0;
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                let mid = (lowest_of(i) + highest_of(i)) as f64 / 2.0;
                acc += c as f64 * (mid - mean) * (mid - mean);
            }
        }
        Some((acc / self.total as f64).sqrt())
    }

    /// The value at quantile `q` (0 ≤ q ≤ 1): the smallest recorded bucket
    /// holding at least `ceil(q × count)` samples at or below it, reported as
    /// that bucket's highest value (as HdrHistogram does) but never above the
    /// exact maximum or below the exact minimum.
    pub fn quantile(&self, q: f64) -> Option<Nanos> {
        if self.total == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let v = highest_of(i).min(self.max).max(self.min);
                return Some(Nanos(v));
            }
        }
        Some(Nanos(self.max))
    }

    /// How many samples lie strictly above `value`, at bucket resolution:
    /// samples that share `value`'s bucket cannot be told apart from it and
    /// are not counted, so the result can fall short by the samples within
    /// 0.1 % above `value`. It is exact when `value` ends a bucket, which every
    /// value below 2048 ns and every power-of-two number of microseconds
    /// minus one nanosecond does. Exact threshold counts come from the
    /// recorder, not from here.
    pub fn count_above(&self, value: u64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        if value >= HIGHEST_TRACKABLE {
            return u64::from(self.max > value);
        }
        self.counts[index_of(value) + 1..].iter().sum()
    }

    /// Non-empty buckets as `(low_ns, high_ns, count)`, ascending; `high_ns` is
    /// inclusive.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (lowest_of(i), highest_of(i), c))
    }

    /// Counts of the buckets whose lowest value lies in `[low, high)`: exact
    /// when `low` and `high` are bucket boundaries, as the log table's are.
    pub(crate) fn count_between(&self, low: u64, high: u64) -> u64 {
        self.buckets()
            .filter(|&(lo, _, _)| lo >= low && lo < high)
            .map(|(_, _, c)| c)
            .sum()
    }

    /// Compact, versioned binary form for the store: a header, then the
    /// non-empty counters as (index gap, count) LEB128 pairs.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(MAGIC);
        put_varint(&mut out, self.total);
        put_varint(&mut out, self.min);
        put_varint(&mut out, self.max);
        put_varint(&mut out, (self.sum >> 64) as u64);
        put_varint(&mut out, self.sum as u64);
        let mut last = 0usize;
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                put_varint(&mut out, (i - last) as u64);
                put_varint(&mut out, c);
                last = i;
            }
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Histogram, DecodeError> {
        let (head, entries) = parse_lsh1(bytes)?;
        let mut counts = vec![0u64; COUNTS_LEN];
        for (idx, c) in entries {
            *counts.get_mut(idx).ok_or(DecodeError::Corrupt)? = c;
        }
        Ok(Histogram::from_parts(counts, head.sum, head.min, head.max))
    }

    /// Adds the samples of a histogram in its binary form
    /// ([`Histogram::to_bytes`]) as [`Histogram::merge`] would, without
    /// building it: merging thousands of stored interval histograms then
    /// costs their non-empty buckets, not a full histogram each. On an
    /// error nothing is added.
    pub fn merge_bytes(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        let (head, entries) = parse_lsh1(bytes)?;
        if entries.iter().any(|&(idx, _)| idx >= self.counts.len()) {
            return Err(DecodeError::Corrupt);
        }
        for (idx, c) in entries {
            self.counts[idx] += c;
        }
        self.total += head.total;
        self.sum += head.sum;
        self.min = self.min.min(head.min);
        self.max = self.max.max(head.max);
        Ok(())
    }
}

/// The header of the binary form.
struct Lsh1Head {
    total: u64,
    min: u64,
    max: u64,
    sum: u128,
}

/// The binary form's header and its non-empty buckets (index, count),
/// checked: the counts add up to the total.
fn parse_lsh1(bytes: &[u8]) -> Result<(Lsh1Head, Vec<(usize, u64)>), DecodeError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(DecodeError::BadHeader)?;
    let mut cur = Cursor {
        bytes: rest,
        pos: 0,
    };
    let total = cur.varint()?;
    let min = cur.varint()?;
    let max = cur.varint()?;
    let sum_hi = cur.varint()?;
    let sum_lo = cur.varint()?;
    let mut entries = Vec::new();
    let mut idx = 0usize;
    let mut seen = 0u64;
    while !cur.done() {
        let gap = usize::try_from(cur.varint()?).map_err(|_| DecodeError::Corrupt)?;
        idx = idx.checked_add(gap).ok_or(DecodeError::Corrupt)?;
        let c = cur.varint()?;
        if idx >= COUNTS_LEN {
            return Err(DecodeError::Corrupt);
        }
        entries.push((idx, c));
        seen = seen.checked_add(c).ok_or(DecodeError::Corrupt)?;
    }
    if seen != total {
        return Err(DecodeError::Corrupt);
    }
    let head = Lsh1Head {
        total,
        min,
        max,
        sum: (u128::from(sum_hi) << 64) | u128::from(sum_lo),
    };
    Ok((head, entries))
}

const MAGIC: &[u8] = b"LSH1";

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }
    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.pos).ok_or(DecodeError::Truncated)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::Corrupt)
    }
}

/// A stored histogram could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a latscope histogram (bad header)")]
    BadHeader,
    #[error("histogram data is truncated")]
    Truncated,
    #[error("histogram data is corrupt")]
    Corrupt,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn set_sum_takes_only_a_possible_sum() {
        let mut h = Histogram::new();
        assert!(!h.set_sum(10));
        h.record_n(10_000, 3);
        h.record(50_000);
        assert_eq!(h.sum(), 80_000);
        assert!(h.set_sum(82_000));
        assert_eq!(h.mean(), Some(Nanos(20_500)));
        assert_eq!(
            (h.min(), h.max()),
            (Some(Nanos(10_000)), Some(Nanos(50_000)))
        );
        // below 4 × min or above 4 × max: no set of values gives it
        assert!(!h.set_sum(39_999));
        assert!(!h.set_sum(200_001));
        assert_eq!(h.sum(), 82_000);
        assert!(h.set_sum(40_000) && h.set_sum(200_000));
        let back = Histogram::from_bytes(&h.to_bytes()).unwrap();
        assert_eq!(back.sum(), 200_000);
    }

    #[test]
    fn empty_has_no_statistics() {
        let h = Histogram::new();
        assert_eq!(h.count(), 0);
        assert_eq!(h.min(), None);
        assert_eq!(h.max(), None);
        assert_eq!(h.mean(), None);
        assert_eq!(h.quantile(0.5), None);
    }

    /// The part after a snapshot has exactly the later samples' counts and
    /// sum, its own maximum when it set a new one, and the earlier state is
    /// refused when it is not one.
    #[test]
    fn since_gives_the_later_part() {
        let mut earlier = Histogram::new();
        for v in [1_000, 5_000, 900_000] {
            earlier.record(v);
        }
        let mut now = earlier.clone();
        let mut later = Histogram::new();
        for v in [2_000, 3_000, 1_500_000] {
            now.record(v);
            later.record(v);
        }
        let part = now.since(&earlier).unwrap();
        assert_eq!(part.count(), 3);
        assert_eq!(part.sum(), later.sum());
        assert_eq!(part.max(), Some(Nanos(1_500_000)));
        assert_eq!(part.count_above(2_500), later.count_above(2_500));
        assert!(part.min().unwrap().0 <= 2_000 && part.min().unwrap().0 >= 1_990);
        // A later part below the earlier maximum: bucket resolution.
        let mut quiet = earlier.clone();
        quiet.record(7_000);
        let q = quiet.since(&earlier).unwrap();
        let max = q.max().unwrap().0;
        assert!((7_000..=7_010).contains(&max), "{max}");
        assert!(earlier.since(&now).is_none());
        assert!(now.since(&now).unwrap().is_empty());
        assert_eq!(now.since(&Histogram::new()).unwrap(), now);
    }

    #[test]
    fn exact_min_max_mean() {
        let mut h = Histogram::new();
        for v in [10_000, 20_000, 30_000, 1_234_567] {
            h.record(v);
        }
        assert_eq!(h.min(), Some(Nanos(10_000)));
        assert_eq!(h.max(), Some(Nanos(1_234_567)));
        assert_eq!(
            h.mean(),
            Some(Nanos((10_000 + 20_000 + 30_000 + 1_234_567 + 2) / 4))
        );
    }

    #[test]
    fn quantiles_of_uniform_values() {
        let mut h = Histogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5).unwrap().0;
        assert!((500_000..=500_500).contains(&p50), "{p50}");
        let p99 = h.quantile(0.99).unwrap().0;
        assert!((990_000..=991_000).contains(&p99), "{p99}");
        assert_eq!(h.quantile(1.0), Some(Nanos(1_000_000)));
        assert_eq!(h.quantile(0.0), Some(Nanos(1_000)));
    }

    #[test]
    fn values_beyond_range_keep_exact_max() {
        let mut h = Histogram::new();
        h.record(100 * 1_000_000_000);
        assert_eq!(h.max(), Some(Nanos(100 * 1_000_000_000)));
        assert_eq!(h.quantile(1.0), Some(Nanos(100 * 1_000_000_000)));
        assert_eq!(h.count_above(HIGHEST_TRACKABLE), 1);
    }

    #[test]
    fn count_above_counts_whole_buckets() {
        let mut h = Histogram::new();
        for v in [100_000u64, 249_000, 256_000, 300_000, 400_000, 499_000] {
            h.record(v);
        }
        // 256 µs - 1 ns ends a bucket, so the count is exact there.
        assert_eq!(h.count_above(255_999), 4);
        assert_eq!(h.count_above(250_000), 4);
        assert_eq!(h.count_above(0), 6);
        assert_eq!(h.count_above(1_000_000), 0);
        assert_eq!(Histogram::new().count_above(5), 0);
    }

    #[test]
    fn bytes_round_trip_and_reject_garbage() {
        let mut h = Histogram::new();
        for v in [1u64, 7, 2047, 2048, 10_000, 5_000_000, 90_000_000_000] {
            h.record_n(v, v % 5 + 1);
        }
        let back = Histogram::from_bytes(&h.to_bytes()).unwrap();
        assert_eq!(back, h);
        assert_eq!(Histogram::from_bytes(b"nope"), Err(DecodeError::BadHeader));
        let bytes = h.to_bytes();
        assert!(Histogram::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        let empty = Histogram::new();
        assert_eq!(Histogram::from_bytes(&empty.to_bytes()).unwrap(), empty);
    }

    proptest! {
        #[test]
        fn merge_equals_recording_everything(a in prop::collection::vec(1u64..10_000_000_000, 0..200),
                                             b in prop::collection::vec(1u64..10_000_000_000, 0..200)) {
            let mut ha = Histogram::new();
            let mut hb = Histogram::new();
            let mut all = Histogram::new();
            for &v in &a { ha.record(v); all.record(v); }
            for &v in &b { hb.record(v); all.record(v); }
            ha.merge(&hb);
            prop_assert_eq!(ha, all);
        }

        #[test]
        fn quantiles_match_hdrhistogram(values in prop::collection::vec(1u64..60_000_000_000, 1..500),
                                        q in 0.0f64..1.0) {
            let mut ours = Histogram::new();
            let mut theirs = hdrhistogram::Histogram::<u64>::new_with_bounds(1, HIGHEST_TRACKABLE, 3).unwrap();
            for &v in &values { ours.record(v); theirs.record(v).unwrap(); }
            let o = ours.quantile(q).unwrap().0;
            // HdrHistogram reports the bucket's highest equivalent value; ours
            // is the same, clamped to the exact max/min.
            let t = theirs.value_at_quantile(q).min(theirs.max()).max(theirs.min());
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            let exact = sorted[rank - 1];
            // Within the 0.1 % bucket error of the exact order statistic.
            prop_assert!(o >= exact && (o - exact) as f64 <= exact as f64 / 1000.0 + 1.0,
                "ours {} exact {}", o, exact);
            prop_assert!((o as f64 - t as f64).abs() <= t as f64 / 1000.0 + 1.0, "ours {} hdr {}", o, t);
        }

        #[test]
        fn count_above_is_within_bucket_error(values in prop::collection::vec(1u64..5_000_000, 0..300),
                                              t in 1u64..5_000_000) {
            let mut h = Histogram::new();
            for &v in &values { h.record(v); }
            let exact = values.iter().filter(|&&v| v > t).count() as u64;
            let clearly = values.iter().filter(|&&v| v as f64 > t as f64 * 1.001 + 1.0).count() as u64;
            let got = h.count_above(t);
            prop_assert!(got <= exact && got >= clearly, "got {} exact {} clearly {}", got, exact, clearly);
        }
    }

    #[test]
    fn merging_the_binary_form_equals_merging_the_histogram() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for k in 0..3_000u64 {
            a.record(1_000 + (k * 7919) % 50_000);
            b.record(900 + (k * 104_729) % 2_000_000);
        }
        let mut direct = a.clone();
        direct.merge(&b);
        let mut via_bytes = a.clone();
        via_bytes.merge_bytes(&b.to_bytes()).unwrap();
        assert_eq!(via_bytes, direct);
        // Into an empty one, and an empty one's bytes.
        let mut empty = Histogram::new();
        empty.merge_bytes(&b.to_bytes()).unwrap();
        assert_eq!(empty, b);
        empty.merge_bytes(&Histogram::new().to_bytes()).unwrap();
        assert_eq!(empty, b);
        // Damage adds nothing.
        let mut bytes = b.to_bytes();
        bytes.truncate(bytes.len() - 1);
        let before = a.clone();
        assert!(a.merge_bytes(&bytes).is_err());
        assert!(a.merge_bytes(b"LSH0").is_err());
        assert_eq!(a, before);
    }
}
