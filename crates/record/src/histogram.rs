//! The owned histogram, stored sparsely.
//!
//! # Storage
//!
//! The layout ([`crate::layout`]) has 27,648 counters (216 KiB as `u64`s).
//! A dense `Vec` of them per histogram made every histogram cost 216 KiB
//! however few values it held, which the per-source histograms of a traced
//! run (one per interrupt, softirq vector, workqueue function, …) multiply.
//! Here the counters are split into chunks of [`CHUNK`] counters, each
//! allocated on the first sample that falls into it; a chunk never written
//! is `None` and reads as zeros, and the chunk index itself is only
//! allocated on the first sample, so an empty histogram holds no heap.
//!
//! Why chunks of 256 counters (2 KiB). Heap in bytes of typical histograms,
//! from `examples/histogram_timing.rs`: `heap_bytes` with chunks of 256 and
//! (built with `CHUNK_BITS = 10`) 1024 counters, and what chunks of 64
//! counters or one vector trimmed to the lowest and highest non-empty
//! counter would hold:
//!
//! | histogram                             | dense   | 256    | 1024   | 64     | trimmed |
//! |---------------------------------------|---------|--------|--------|--------|---------|
//! | empty                                 | 221,184 | 0      | 0      | 0      | 0       |
//! | 1e6 values, 10 µs..1 ms               | 221,184 | 57,696 | 57,432 | 58,752 | 54,784  |
//! | 1e5 values < 2 µs                     | 221,184 | 16,448 | 16,400 | 19,840 | 16,000  |
//! | 20 values, log-normal around 2 µs     | 221,184 | 20,584 | 32,800 | 12,672 | 23,184  |
//! | 1e5 values, log-normal around 2 µs    | 221,184 | 55,528 | 65,600 | 53,632 | 56,744  |
//! | 1e6 timer-like: 3 µs, 5 % to 200 µs, one 5 ms | 221,184 | 68,008 | 82,032 | 67,968 | 101,480 |
//!
//! A trimmed vector is the smallest for a compact distribution, but one
//! outlier stretches it over every counter in between (the timer-like row)
//! and growing it downwards moves all counters. Chunks of one power-of-two
//! bucket (1024 counters) are as small for histograms that fill whole
//! buckets, but a per-source histogram of few samples touches a few
//! counters in each of several buckets and pays 8 KiB for each; 256
//! counters cost a sixth to a third less for such histograms and the same
//! for the others, while the index stays small (108 pointers at most, 864
//! bytes, and only up to the highest chunk used). Smaller chunks gain
//! little more except for the smallest histograms, with a larger index and
//! more allocations.
//!
//! Speed, informally (the same example, one short run on a shared 2-CPU
//! machine, not a benchmark): recording costs one dependent load more,
//! about 2.9 ns against 2.1 ns a value; merge (1.3 µs against 4.8 µs),
//! quantile (0.4 against 3.1 µs), `since`, `from_bytes` and clone skip the
//! chunks never written instead of touching all 27,648 counters; `to_bytes`
//! is as before (its cost is the encoding); and a new histogram no longer
//! allocates and zeroes 216 KiB (a thousand histograms of 100 values: 10 ms
//! against 89 ms). Chunks of 256 and 1024 counters time alike.
//!
//! The binary form ([`Histogram::to_bytes`]) lists the non-empty counters
//! and does not depend on the storage: it is byte for byte what the dense
//! histogram wrote.

use latscope_model::Nanos;

use std::sync::Arc;

use crate::layout::{highest_of, index_of, lowest_of, COUNTS_LEN, HIGHEST_TRACKABLE};

/// log2 of the counters per chunk.
const CHUNK_BITS: u32 = 8;
/// Counters per lazily allocated chunk.
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks covering the whole layout.
const CHUNKS: usize = COUNTS_LEN / CHUNK;
const _: () = assert!(COUNTS_LEN.is_multiple_of(CHUNK));

type Chunk = [u64; CHUNK];

/// What a chunk that was never written holds.
static ZERO: Chunk = [0; CHUNK];

/// A zeroed chunk.
#[cold]
#[inline(never)]
fn new_chunk() -> Arc<Chunk> {
    Arc::new([0; CHUNK])
}

/// Splits a counter index into its chunk and the offset in the chunk.
#[inline]
fn split(index: usize) -> (usize, usize) {
    (index >> CHUNK_BITS, index & (CHUNK - 1))
}

/// An owned HDR histogram of nanosecond values: the form that is merged,
/// queried, stored and rendered. The measuring side records into an
/// [`crate::AtomicHistogram`] and takes snapshots of this type.
///
/// Besides the bucket counts it keeps the exact minimum, maximum and sum, so
/// min, max and mean are exact and only percentiles carry the 0.1 % bucket
/// error.
///
/// The counters are allocated in chunks as values arrive (see the module
/// documentation): an empty histogram holds no heap, one of values between
/// 10 µs and 1 ms about 56 KiB, at most 216 KiB. Recording may therefore
/// allocate; measuring threads record into the preallocated
/// [`crate::AtomicHistogram`] instead.
///
/// Chunks are shared by a histogram and its clones until one of them
/// writes to a chunk, which then gets its own copy of that chunk alone
/// (copy on write): a cumulative histogram published at every checkpoint
/// (the tracer's per-source metrics) costs, per publication, the chunk index
/// and the chunks written since the last one, not a full copy.
/// [`Histogram::heap_bytes`] counts shared chunks in every holder.
#[derive(Clone)]
pub struct Histogram {
    /// Chunk `k` holds counters `k·CHUNK .. (k+1)·CHUNK`; `None` (or beyond
    /// the end) means all zero. At most [`CHUNKS`] long.
    chunks: Vec<Option<Arc<Chunk>>>,
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

/// Equal when the counts and the exact statistics are: a chunk that is
/// allocated but all zero equals one that is not.
impl PartialEq for Histogram {
    fn eq(&self, other: &Histogram) -> bool {
        self.total == other.total
            && self.sum == other.sum
            && self.min == other.min
            && self.max == other.max
            && (0..CHUNKS)
                .all(|k| self.chunk(k).unwrap_or(&ZERO) == other.chunk(k).unwrap_or(&ZERO))
    }
}

impl Eq for Histogram {}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            chunks: Vec::new(),
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Builds a snapshot from the counters `counter(0) ..
    /// counter(COUNTS_LEN - 1)`, read once each in order, then the exact
    /// `(sum, min, max)` from `exact`; used by the atomic recorder. Only
    /// the chunks holding a non-zero counter are allocated: no dense copy
    /// is made.
    pub(crate) fn from_counters(
        mut counter: impl FnMut(usize) -> u64,
        exact: impl FnOnce() -> (u128, u64, u64),
    ) -> Histogram {
        let mut chunks = Vec::new();
        let mut buf: Chunk = [0; CHUNK];
        for k in 0..CHUNKS {
            let mut any = 0;
            for (j, slot) in buf.iter_mut().enumerate() {
                let c = counter(k * CHUNK + j);
                *slot = c;
                any |= c;
            }
            if any != 0 {
                chunks.resize_with(k, || None);
                chunks.push(Some(Arc::new(buf)));
            }
        }
        let (sum, min, max) = exact();
        Histogram::from_chunks(chunks, sum, min, max)
    }

    /// A histogram from counts by counter index (the layout's, as another
    /// recorder computed them: latscope's BPF programs) and the exact sum,
    /// minimum and maximum it kept beside them. Counts at the same index
    /// add up. The counts and the exact figures may have been read at
    /// slightly different times while the other recorder kept counting: a
    /// minimum or maximum outside the lowest or highest non-empty counter
    /// is replaced by that counter's bound. `None` when an index is outside
    /// the layout.
    pub fn from_index_counts(
        counts: &[(usize, u64)],
        sum: u128,
        min: u64,
        max: u64,
    ) -> Option<Histogram> {
        let mut h = Histogram::new();
        let (mut lo, mut hi) = (usize::MAX, 0usize);
        for &(i, n) in counts {
            if i >= COUNTS_LEN {
                return None;
            }
            if n == 0 {
                continue;
            }
            let (k, j) = split(i);
            match h.chunks.get_mut(k) {
                Some(Some(c)) => Arc::make_mut(c)[j] += n,
                _ => h.add_chunk(k)[j] += n,
            }
            h.total += n;
            lo = lo.min(i);
            hi = hi.max(i);
        }
        if h.total == 0 {
            return Some(h);
        }
        h.sum = sum;
        h.min = if index_of(min) == lo {
            min
        } else {
            lowest_of(lo)
        };
        h.max = if index_of(max) == hi {
            max
        } else {
            highest_of(hi)
        };
        Some(h)
    }

    /// A histogram of the given chunks; the total is their sum, and the
    /// minimum and maximum are reset when it is zero.
    fn from_chunks(chunks: Vec<Option<Arc<Chunk>>>, sum: u128, min: u64, max: u64) -> Histogram {
        let mut h = Histogram {
            chunks,
            total: 0,
            sum,
            min: u64::MAX,
            max: 0,
        };
        h.total = h.present().map(|(_, c)| c.iter().sum::<u64>()).sum();
        if h.total > 0 {
            (h.min, h.max) = (min, max);
        }
        h
    }

    /// Chunk `k`, or `None` when it was never written.
    #[inline]
    fn chunk(&self, k: usize) -> Option<&Chunk> {
        self.chunks.get(k).and_then(|c| c.as_deref())
    }

    /// Chunk `k`, allocated (zeroed) if it was not.
    #[inline]
    fn chunk_mut(&mut self, k: usize) -> &mut Chunk {
        if !matches!(self.chunks.get(k), Some(Some(_))) {
            self.add_chunk(k);
        }
        // Allocated just above: the closure never runs.
        Arc::make_mut(self.chunks[k].get_or_insert_with(new_chunk))
    }

    /// Allocates chunk `k` (and the index up to it) if it is not.
    #[cold]
    #[inline(never)]
    fn add_chunk(&mut self, k: usize) -> &mut Chunk {
        if self.chunks.len() <= k {
            self.chunks.reserve_exact(k + 1 - self.chunks.len());
            self.chunks.resize_with(k + 1, || None);
        }
        Arc::make_mut(self.chunks[k].get_or_insert_with(new_chunk))
    }

    /// The allocated chunks with their numbers, ascending.
    fn present(&self) -> impl DoubleEndedIterator<Item = (usize, &Chunk)> + '_ {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(k, c)| c.as_deref().map(|c| (k, c)))
    }

    /// The non-zero counters as (index, count), ascending.
    fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.present().flat_map(|(k, c)| {
            c.iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(move |(j, &n)| (k * CHUNK + j, n))
        })
    }

    /// Indexes of the lowest and the highest non-zero counter.
    fn nonzero_range(&self) -> Option<(usize, usize)> {
        let first = self.nonzero().next()?.0;
        let last = self
            .present()
            .rev()
            .find_map(|(k, c)| c.iter().rposition(|&n| n > 0).map(|j| k * CHUNK + j))?;
        Some((first, last))
    }

    /// Approximate heap footprint in bytes: the allocated chunks and the
    /// chunk index (not the allocator's own overhead). Zero for a
    /// histogram that never held a sample; at most 216 KiB plus the index.
    pub fn heap_bytes(&self) -> usize {
        let chunks = self.chunks.iter().flatten().count();
        self.chunks.capacity() * std::mem::size_of::<Option<Arc<Chunk>>>()
            + chunks * std::mem::size_of::<Chunk>()
    }

    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    pub fn record_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        let (k, j) = split(index_of(value));
        match self.chunks.get_mut(k) {
            Some(Some(c)) => Arc::make_mut(c)[j] += n,
            _ => self.add_chunk(k)[j] += n,
        }
        self.total += n;
        self.sum += u128::from(value) * u128::from(n);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Adds another histogram's samples to this one.
    pub fn merge(&mut self, other: &Histogram) {
        for (k, theirs) in other.present() {
            for (a, b) in self.chunk_mut(k).iter_mut().zip(theirs) {
                *a += *b;
            }
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
        let n = self.chunks.len().max(earlier.chunks.len());
        let mut chunks = Vec::with_capacity(n);
        for k in 0..n {
            let a = self.chunk(k).unwrap_or(&ZERO);
            let b = earlier.chunk(k).unwrap_or(&ZERO);
            if a == b {
                chunks.push(None);
                continue;
            }
            // Some counter differs: either it grew, or `earlier` is not
            // earlier and the subtraction below fails.
            let mut d: Chunk = [0; CHUNK];
            for ((d, &x), &y) in d.iter_mut().zip(a).zip(b) {
                *d = x.checked_sub(y)?;
            }
            chunks.push(Some(Arc::new(d)));
        }
        let sum = self.sum.checked_sub(earlier.sum)?;
        let mut part = Histogram::from_chunks(chunks, sum, u64::MAX, 0);
        if let Some((f, l)) = part.nonzero_range() {
            let max = if earlier.is_empty() || self.max > earlier.max {
                self.max
            } else {
                highest_of(l).min(self.max)
            };
            (part.min, part.max) = (lowest_of(f).max(self.min).min(max), max);
        }
        Some(part)
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
        for (i, c) in self.nonzero() {
            let mid = (lowest_of(i) + highest_of(i)) as f64 / 2.0;
            acc += c as f64 * (mid - mean) * (mid - mean);
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
        for (k, c) in self.present() {
            let in_chunk: u64 = c.iter().sum();
            if seen + in_chunk < rank {
                seen += in_chunk;
                continue;
            }
            for (j, &n) in c.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    let v = highest_of(k * CHUNK + j).min(self.max).max(self.min);
                    return Some(Nanos(v));
                }
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
        let from = index_of(value) + 1;
        self.present()
            .filter(|&(k, _)| (k + 1) * CHUNK > from)
            .map(|(k, c)| {
                let skip = from.saturating_sub(k * CHUNK);
                c.iter().skip(skip).sum::<u64>()
            })
            .sum()
    }

    /// Non-empty buckets as `(low_ns, high_ns, count)`, ascending; `high_ns` is
    /// inclusive.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.nonzero()
            .map(|(i, c)| (lowest_of(i), highest_of(i), c))
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
        for (i, c) in self.nonzero() {
            put_varint(&mut out, (i - last) as u64);
            put_varint(&mut out, c);
            last = i;
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Histogram, DecodeError> {
        let (head, entries) = parse_lsh1(bytes)?;
        let mut h = Histogram::new();
        for (idx, c) in entries {
            if idx >= COUNTS_LEN {
                return Err(DecodeError::Corrupt);
            }
            let (k, j) = split(idx);
            // A later entry for the same counter replaces it, as it always
            // did; a zero count allocates nothing.
            if c > 0 {
                h.chunk_mut(k)[j] = c;
            } else if let Some(Some(chunk)) = h.chunks.get_mut(k) {
                Arc::make_mut(chunk)[j] = 0;
            }
        }
        for slot in &mut h.chunks {
            if slot.as_deref().is_some_and(|c| c.iter().all(|&n| n == 0)) {
                *slot = None;
            }
        }
        Ok(Histogram::from_chunks(
            h.chunks, head.sum, head.min, head.max,
        ))
    }

    /// Adds the samples of a histogram in its binary form
    /// ([`Histogram::to_bytes`]) as [`Histogram::merge`] would, without
    /// building it: merging thousands of stored interval histograms then
    /// costs their non-empty buckets, not a full histogram each. On an
    /// error nothing is added.
    pub fn merge_bytes(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        let (head, entries) = parse_lsh1(bytes)?;
        if entries.iter().any(|&(idx, _)| idx >= COUNTS_LEN) {
            return Err(DecodeError::Corrupt);
        }
        // One chunk lookup per run of entries in the same chunk, not one
        // per entry: a long monitor's report merges thousands of blobs.
        let mut rest = entries.iter().filter(|&&(_, c)| c > 0).peekable();
        while let Some(&(idx, c)) = rest.next() {
            let (k, j) = split(idx);
            let chunk = self.chunk_mut(k);
            chunk[j] += c;
            while let Some(&&(idx, c)) = rest.peek() {
                let (next_k, j) = split(idx);
                if next_k != k {
                    break;
                }
                chunk[j] += c;
                rest.next();
            }
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
mod sparse_tests;

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

#[cfg(test)]
mod index_count_tests {
    use super::*;

    #[test]
    fn counts_by_index_rebuild_the_histogram_that_recorded_them() {
        let values = [
            0u64,
            5,
            2047,
            2048,
            3_000,
            150_000,
            1_000_000,
            70_000_000_000,
        ];
        let mut want = Histogram::new();
        let mut counts = Vec::new();
        for (n, &v) in values.iter().enumerate() {
            want.record_n(v, n as u64 + 1);
            counts.push((index_of(v), n as u64 + 1));
        }
        let got = Histogram::from_index_counts(&counts, want.sum(), 0, HIGHEST_TRACKABLE).unwrap();
        // 70 s is clamped into the top counter; the kept maximum is the
        // caller's (here the top of the layout).
        assert_eq!(got.count(), want.count());
        assert_eq!(got.quantile(0.5), want.quantile(0.5));
        assert_eq!(got.sum(), want.sum());
        assert_eq!(got.to_bytes().len(), want.to_bytes().len());
        assert_eq!(
            Histogram::from_index_counts(&[], 0, 0, 0),
            Some(Histogram::new())
        );
        assert_eq!(
            Histogram::from_index_counts(&[(COUNTS_LEN, 1)], 1, 1, 1),
            None
        );
        // A minimum or maximum outside the counters (read at another time)
        // is bounded by them.
        let h = Histogram::from_index_counts(&[(index_of(3_000), 1)], 3_000, 10, 9_000).unwrap();
        assert_eq!(h.min(), Some(Nanos(lowest_of(index_of(3_000)))));
        assert_eq!(h.max(), Some(Nanos(highest_of(index_of(3_000)))));
        let h = Histogram::from_index_counts(&[(index_of(3_000), 1)], 3_001, 3_001, 3_001).unwrap();
        assert_eq!((h.min(), h.max()), (Some(Nanos(3_001)), Some(Nanos(3_001))));
    }
}
