//! The sparse histogram against a dense reference model (the dense
//! implementation it replaced, kept here verbatim in its storage-dependent
//! parts), and its memory.

use super::*;
use crate::AtomicHistogram;
use proptest::prelude::*;

/// The dense histogram as it was: every counter in one `Vec`.
#[derive(Clone, Debug, PartialEq)]
struct Dense {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Dense {
    fn new() -> Dense {
        Dense {
            counts: vec![0; COUNTS_LEN],
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    fn from_parts(counts: Vec<u64>, sum: u128, min: u64, max: u64) -> Dense {
        let total = counts.iter().sum();
        let (min, max) = if total == 0 {
            (u64::MAX, 0)
        } else {
            (min, max)
        };
        Dense {
            counts,
            total,
            sum,
            min,
            max,
        }
    }

    fn record_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[index_of(value)] += n;
        self.total += n;
        self.sum += u128::from(value) * u128::from(n);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    fn merge(&mut self, other: &Dense) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += *b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    fn since(&self, earlier: &Dense) -> Option<Dense> {
        let mut counts = Vec::with_capacity(self.counts.len());
        for (&a, &b) in self.counts.iter().zip(&earlier.counts) {
            counts.push(a.checked_sub(b)?);
        }
        let sum = self.sum.checked_sub(earlier.sum)?;
        let first = counts.iter().position(|&c| c > 0);
        let last = counts.iter().rposition(|&c| c > 0);
        let (min, max) = match (first, last) {
            (Some(f), Some(l)) => {
                let max = if earlier.total == 0 || self.max > earlier.max {
                    self.max
                } else {
                    highest_of(l).min(self.max)
                };
                (lowest_of(f).max(self.min).min(max), max)
            }
            _ => (u64::MAX, 0),
        };
        Some(Dense::from_parts(counts, sum, min, max))
    }

    fn mean(&self) -> Option<Nanos> {
        if self.total == 0 {
            return None;
        }
        let t = u128::from(self.total);
        let m = (self.sum + t / 2) / t;
        Some(Nanos(u64::try_from(m).unwrap_or(u64::MAX)))
    }

    fn stddev(&self) -> Option<f64> {
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

    fn quantile(&self, q: f64) -> Option<Nanos> {
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

    fn count_above(&self, value: u64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        if value >= HIGHEST_TRACKABLE {
            return u64::from(self.max > value);
        }
        self.counts[index_of(value) + 1..].iter().sum()
    }

    fn buckets(&self) -> Vec<(u64, u64, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (lowest_of(i), highest_of(i), c))
            .collect()
    }

    fn to_bytes(&self) -> Vec<u8> {
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

    fn from_bytes(bytes: &[u8]) -> Result<Dense, DecodeError> {
        let (head, entries) = parse_lsh1(bytes)?;
        let mut counts = vec![0u64; COUNTS_LEN];
        for (idx, c) in entries {
            *counts.get_mut(idx).ok_or(DecodeError::Corrupt)? = c;
        }
        Ok(Dense::from_parts(counts, head.sum, head.min, head.max))
    }

    fn merge_bytes(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
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

/// The sparse histogram's counters, written out densely.
fn dense_counts(h: &Histogram) -> Vec<u64> {
    let mut counts = vec![0u64; COUNTS_LEN];
    for (i, c) in h.nonzero() {
        counts[i] = c;
    }
    counts
}

/// Every allocated chunk holds a sample, and the index is no longer than
/// the layout.
fn is_canonical(h: &Histogram) -> bool {
    h.chunks.len() <= CHUNKS && h.chunks.iter().flatten().all(|c| c.iter().any(|&n| n > 0))
}

const QUANTILES: [f64; 10] = [0.0, 1e-6, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.999_999, 1.0];
const THRESHOLDS: [u64; 10] = [
    0,
    1,
    1023,
    2047,
    2048,
    10_000,
    1_000_000,
    HIGHEST_TRACKABLE - 1,
    HIGHEST_TRACKABLE,
    u64::MAX,
];

/// Everything observable of `s` is what the dense model gives.
fn assert_same(s: &Histogram, d: &Dense, q: f64, t: u64) -> Result<(), TestCaseError> {
    prop_assert!(is_canonical(s));
    prop_assert_eq!(dense_counts(s), d.counts.clone());
    prop_assert_eq!(s.count(), d.total);
    prop_assert_eq!(s.sum(), d.sum);
    let (min, max) = if d.total == 0 {
        (None, None)
    } else {
        (Some(Nanos(d.min)), Some(Nanos(d.max)))
    };
    prop_assert_eq!((s.min(), s.max()), (min, max));
    prop_assert_eq!(s.mean(), d.mean());
    prop_assert_eq!(s.stddev().map(f64::to_bits), d.stddev().map(f64::to_bits));
    for q in QUANTILES.into_iter().chain([q]) {
        prop_assert_eq!(s.quantile(q), d.quantile(q), "quantile {}", q);
    }
    for t in THRESHOLDS.into_iter().chain([t]) {
        prop_assert_eq!(s.count_above(t), d.count_above(t), "count_above {}", t);
    }
    prop_assert_eq!(s.buckets().collect::<Vec<_>>(), d.buckets());
    let bytes = s.to_bytes();
    prop_assert_eq!(&bytes, &d.to_bytes());
    let back = Histogram::from_bytes(&bytes);
    prop_assert!(back.as_ref().is_ok_and(|b| b == s && is_canonical(b)));
    Ok(())
}

/// A value anywhere in u64, spread over all magnitudes, with the edges of
/// the layout often.
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        prop::sample::select(vec![
            0u64,
            1,
            1023,
            1024,
            2047,
            2048,
            HIGHEST_TRACKABLE - 1,
            HIGHEST_TRACKABLE,
            HIGHEST_TRACKABLE + 1,
            u64::MAX,
        ]),
        0u64..4096,
        (any::<u64>(), 0u32..64).prop_map(|(v, s)| v >> s),
        10_000u64..1_000_000,
    ]
}

fn samples() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((value(), prop_oneof![Just(1u64), 0u64..1000]), 0..30)
}

#[derive(Debug, Clone)]
enum Op {
    Record(u64),
    RecordN(u64, u64),
    Merge(Vec<(u64, u64)>),
    MergeBytes(Vec<(u64, u64)>),
    /// Record more, then keep only the part after the state before.
    Since(Vec<(u64, u64)>),
    /// The state "since" a histogram of other samples: usually refused.
    SinceOther(Vec<(u64, u64)>),
    RoundTrip,
    Query(f64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => value().prop_map(Op::Record),
        3 => (value(), 0u64..100_000).prop_map(|(v, n)| Op::RecordN(v, n)),
        2 => samples().prop_map(Op::Merge),
        2 => samples().prop_map(Op::MergeBytes),
        2 => samples().prop_map(Op::Since),
        1 => samples().prop_map(Op::SinceOther),
        1 => Just(Op::RoundTrip),
        2 => (0.0f64..=1.0, value()).prop_map(|(q, t)| Op::Query(q, t)),
    ]
}

fn both(samples: &[(u64, u64)]) -> (Histogram, Dense) {
    let (mut s, mut d) = (Histogram::new(), Dense::new());
    for &(v, n) in samples {
        s.record_n(v, n);
        d.record_n(v, n);
    }
    (s, d)
}

proptest! {
    #[test]
    fn sparse_equals_the_dense_model(ops in prop::collection::vec(op(), 0..40),
                                     q in 0.0f64..=1.0, t in value()) {
        let (mut s, mut d) = (Histogram::new(), Dense::new());
        for op in ops {
            match op {
                Op::Record(v) => {
                    s.record(v);
                    d.record_n(v, 1);
                }
                Op::RecordN(v, n) => {
                    s.record_n(v, n);
                    d.record_n(v, n);
                }
                Op::Merge(xs) => {
                    let (os, od) = both(&xs);
                    s.merge(&os);
                    d.merge(&od);
                }
                Op::MergeBytes(xs) => {
                    let (os, od) = both(&xs);
                    let bytes = os.to_bytes();
                    prop_assert_eq!(&bytes, &od.to_bytes());
                    prop_assert!(s.merge_bytes(&bytes).is_ok());
                    prop_assert!(d.merge_bytes(&bytes).is_ok());
                    // Damaged bytes add nothing to either.
                    if bytes.len() > 4 {
                        let cut = &bytes[..bytes.len() - 1];
                        prop_assert_eq!(s.merge_bytes(cut).is_err(), d.merge_bytes(cut).is_err());
                    }
                }
                Op::Since(xs) => {
                    let (mut ls, mut ld) = (s.clone(), d.clone());
                    for &(v, n) in &xs {
                        ls.record_n(v, n);
                        ld.record_n(v, n);
                    }
                    let (ps, pd) = (ls.since(&s), ld.since(&d));
                    prop_assert!(ps.is_some() && pd.is_some());
                    // Backwards: refused by both unless nothing was added.
                    prop_assert_eq!(s.since(&ls).is_some(), d.since(&ld).is_some());
                    if let (Some(ps), Some(pd)) = (ps, pd) {
                        s = ps;
                        d = pd;
                    }
                }
                Op::SinceOther(xs) => {
                    let (os, od) = both(&xs);
                    match (s.since(&os), d.since(&od)) {
                        (Some(ps), Some(pd)) => {
                            s = ps;
                            d = pd;
                        }
                        (None, None) => {}
                        (a, b) => prop_assert!(false, "since: {:?} vs {:?}", a, b),
                    }
                }
                Op::RoundTrip => {
                    let bytes = s.to_bytes();
                    s = Histogram::from_bytes(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    d = Dense::from_bytes(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
                Op::Query(nq, nt) => {
                    // Everything compared here and at the end; after
                    // every operation the counters and exact statistics.
                    assert_same(&s, &d, nq, nt)?;
                }
            }
            prop_assert!(is_canonical(&s));
            prop_assert_eq!(dense_counts(&s), d.counts.clone());
            prop_assert_eq!((s.count(), s.sum()), (d.total, d.sum));
            prop_assert_eq!(s.mean(), d.mean());
        }
        assert_same(&s, &d, q, t)?;
    }
}

/// The stored form of a fixed histogram, as the dense implementation wrote
/// it (taken from it before the storage changed): databases hold these
/// bytes, so they must not change.
#[test]
fn binary_form_is_the_dense_one() {
    let mut h = Histogram::new();
    for (v, n) in [
        (0u64, 2u64),
        (1, 1),
        (2047, 3),
        (2048, 4),
        (10_000, 5),
        (123_456, 1),
        (5_000_000, 2),
        (HIGHEST_TRACKABLE, 1),
        (u64::MAX, 1),
    ] {
        h.record_n(v, n);
    }
    let hex: String = h.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "4c5348311400ffffffffffffffffff01018ce8ed84800200020101fe0f03010\
         4e21105a71d01bb2a02bb6e02"
    );
    assert_eq!(
        h.stddev().map(f64::to_bits),
        Some(4_875_596_956_564_468_533)
    );
    assert_eq!(h.quantile(0.5), Some(Nanos(2049)));
    assert_eq!(h.mean(), Some(Nanos(922_337_207_121_960_807)));
}

/// Hand-made binary forms the encoder never writes (a zero count, a counter
/// given twice) read as the dense histogram read them, and allocate
/// nothing for zero counts.
#[test]
fn odd_binary_forms_read_as_before() {
    let form = |total: u64, entries: &[(u64, u64)]| {
        let mut out = MAGIC.to_vec();
        for v in [total, 5, 3_000, 0, 9_000] {
            put_varint(&mut out, v);
        }
        for &(gap, c) in entries {
            put_varint(&mut out, gap);
            put_varint(&mut out, c);
        }
        out
    };
    for (total, entries) in [
        (0u64, vec![(7u64, 0u64)]),
        (3, vec![(5, 3), (0, 0)]),
        (5, vec![(5, 3), (0, 2)]),
        (3, vec![(5000, 0), (0, 3)]),
        (4, vec![(1, 1), (3000, 0), (0, 0), (20_000, 3)]),
    ] {
        let bytes = form(total, &entries);
        let s = Histogram::from_bytes(&bytes).unwrap();
        let d = Dense::from_bytes(&bytes).unwrap();
        assert_same(&s, &d, 0.5, 100).unwrap();
        let mut ms = Histogram::new();
        let mut md = Dense::new();
        ms.merge_bytes(&bytes).unwrap();
        md.merge_bytes(&bytes).unwrap();
        assert_eq!(dense_counts(&ms), md.counts);
        assert_eq!((ms.count(), ms.sum()), (md.total, md.sum));
        assert!(is_canonical(&ms));
    }
    let mut h = Histogram::new();
    h.merge_bytes(&form(0, &[(100, 0), (9_000, 0)])).unwrap();
    assert_eq!(h.heap_bytes(), 0);
}

const CHUNK_BYTES: usize = std::mem::size_of::<Chunk>();
const INDEX_BYTES: usize = CHUNKS * std::mem::size_of::<Option<Arc<Chunk>>>();
const DENSE_BYTES: usize = COUNTS_LEN * 8;

#[test]
fn empty_histograms_hold_no_heap() {
    let mut h = Histogram::new();
    assert_eq!(h.heap_bytes(), 0);
    h.merge(&Histogram::new());
    h.record_n(12_345, 0);
    assert_eq!(h.heap_bytes(), 0);
    assert_eq!(Histogram::default().heap_bytes(), 0);
    assert_eq!(
        Histogram::from_bytes(&h.to_bytes()).unwrap().heap_bytes(),
        0
    );
    assert_eq!(h.since(&h).unwrap().heap_bytes(), 0);
    assert_eq!(AtomicHistogram::new().snapshot().heap_bytes(), 0);
    assert_eq!(h.clone().heap_bytes(), 0);
}

/// A histogram of 10 µs..1 ms, every counter of that range filled: the
/// range covers counters 4,322..=11,169 (6,848 counters, 53.5 KiB), so at
/// most 6,848 / 256 + 2 = 28 chunks of 2 KiB (56 KiB) plus the index
/// (under 1 KiB) — about a quarter of the dense 216 KiB. The same for its
/// snapshot, clone, stored form and merge into an empty one.
#[test]
fn a_histogram_of_10us_to_1ms_is_a_quarter_of_the_dense_one() {
    let (lo, hi) = (index_of(10_000), index_of(1_000_000));
    assert_eq!((lo, hi), (4_322, 11_169));
    let bound = ((hi - lo + 1) / CHUNK + 2) * CHUNK_BYTES + INDEX_BYTES;
    assert!(bound <= 58 * 1024 && bound * 3 < DENSE_BYTES, "{bound}");
    let mut h = Histogram::new();
    let atomic = AtomicHistogram::new();
    for v in (10_000..=1_000_000).step_by(7) {
        h.record(v);
        atomic.record(v);
    }
    assert_eq!(h.buckets().count(), hi - lo + 1, "every counter is used");
    let snap = atomic.snapshot();
    assert_eq!(snap, h);
    let mut merged = Histogram::new();
    merged.merge(&h);
    for x in [
        &h,
        &snap,
        &h.clone(),
        &Histogram::from_bytes(&h.to_bytes()).unwrap(),
        &merged,
        &h.since(&Histogram::new()).unwrap(),
    ] {
        let b = x.heap_bytes();
        assert!(b <= bound, "{b} > {bound}");
        assert!(b >= (hi - lo + 1) * 8, "{b} cannot hold the counters");
    }
}

/// Values below 2 µs fill the first 2,048 counters: 8 chunks, 16 KiB, and a
/// few samples take a chunk each at most.
#[test]
fn small_and_few_values_take_little() {
    let mut h = Histogram::new();
    for v in 0..2_000 {
        h.record(v);
    }
    let b = h.heap_bytes();
    assert!(
        (8 * CHUNK_BYTES..=8 * CHUNK_BYTES + INDEX_BYTES).contains(&b),
        "{b}"
    );
    let mut few = Histogram::new();
    for v in [900, 3_100, 15_000, 52_000, 1_000_000_000] {
        few.record(v);
    }
    assert!(few.heap_bytes() <= 5 * CHUNK_BYTES + INDEX_BYTES);
    // Beyond the trackable range: the top counter, one chunk.
    let mut top = Histogram::new();
    top.record(u64::MAX);
    assert!(top.heap_bytes() <= CHUNK_BYTES + INDEX_BYTES);
    // Full: never more than the dense form and the index.
    let mut full = Histogram::new();
    for i in 0..COUNTS_LEN {
        full.record(lowest_of(i));
    }
    let b = full.heap_bytes();
    assert!(
        (DENSE_BYTES..=DENSE_BYTES + INDEX_BYTES).contains(&b),
        "{b}"
    );
}

#[test]
fn clones_share_chunks_until_one_of_them_writes() {
    let mut h = Histogram::new();
    for v in [100u64, 5_000, 80_000, 2_000_000] {
        h.record(v);
    }
    let published = h.clone();
    let shared = |a: &Histogram, b: &Histogram| {
        a.chunks
            .iter()
            .zip(&b.chunks)
            .filter(|(x, y)| matches!((x, y), (Some(x), Some(y)) if Arc::ptr_eq(x, y)))
            .count()
    };
    assert_eq!(shared(&h, &published), 4, "a clone copies no chunk");
    // Writing to one chunk copies that chunk only; the clone keeps its value.
    h.record(101);
    assert_eq!(shared(&h, &published), 3);
    assert_eq!(published.count(), 4);
    assert_eq!(h.count(), 5);
    let (k, j) = split(index_of(101));
    assert_eq!(published.chunk(k).map(|c| c[j]), Some(0));
    assert_eq!(h.chunk(k).map(|c| c[j]), Some(1));
    // A merge into a clone leaves the original alone.
    let mut m = published.clone();
    m.merge(&h);
    assert_eq!(published.count(), 4);
    assert_eq!(m.count(), 9);
}
