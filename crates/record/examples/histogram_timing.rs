//! Informal timing and memory of `Histogram` (not a benchmark: one short run,
//! best of three, on whatever else the machine is doing).
//!
//! ```text
//! cargo run --release -p latscope-record --example histogram_timing
//! ```
//!
//! Times record (1e7 values), merge, quantile, since, to_bytes, from_bytes
//! and clone on a histogram of values spread over 10 µs..1 ms, creating many
//! small per-source histograms, and prints `heap_bytes` of typical
//! histograms. It uses only the public API that the dense histogram had as
//! well (except `heap_bytes`, behind [`heap`]), so the same file, with
//! `heap` returning 221,184, runs against the dense histogram (commit
//! 25f3e1c, in a `git worktree`) for a before/after comparison.
//!
//! It also prints, for the same distributions, the heap that other sparse
//! layouts would need (chunks of 64..1024 counters, or one vector trimmed to
//! the lowest and highest non-empty counter), from the non-empty buckets: the
//! figures behind the layout chosen in `src/histogram.rs`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use latscope_record::{Histogram, HIGHEST_TRACKABLE};

/// Heap bytes of a histogram (the dense one had 221,184 bytes always).
fn heap(h: &Histogram) -> usize {
    h.heap_bytes()
}

/// xorshift64*: reproducible, fast, good enough for spreading values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in log between `lo` and `hi`.
    fn log_uniform(&mut self, lo: f64, hi: f64) -> u64 {
        (lo * (hi / lo).powf(self.unit())) as u64
    }
    /// Log-normal with the given median and log-sigma (Box-Muller).
    fn log_normal(&mut self, median: f64, sigma: f64) -> u64 {
        let (u1, u2) = (self.unit().max(1e-300), self.unit());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (median * (sigma * z).exp()) as u64
    }
}

/// Best of three runs of `f`.
fn best<T>(mut f: impl FnMut() -> T) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn line(what: &str, d: Duration, per: u64) {
    let ns = d.as_nanos() as f64 / per as f64;
    println!(
        "{what:<44} {:>10.3} ms  {ns:>10.1} ns/op",
        d.as_secs_f64() * 1e3
    );
}

/// The counter index of `v` (a copy of the crate's private layout formula,
/// for the layout comparison only).
fn index_of(v: u64) -> usize {
    let v = v.min(HIGHEST_TRACKABLE);
    let bucket = 64 - 11 - (v | 2047).leading_zeros();
    ((((u64::from(bucket)) + 1) << 10) + (v >> bucket) - 1024) as usize
}

const COUNTS_LEN: usize = 27 * 1024;

/// Heap bytes the non-empty counters of `h` would need in chunks of `chunk`
/// counters (plus an index of one pointer per chunk), and in one vector
/// trimmed to [lowest, highest] non-empty counter.
fn layouts(h: &Histogram) -> (Vec<usize>, usize) {
    let idx: Vec<usize> = h.buckets().map(|(lo, _, _)| index_of(lo)).collect();
    let chunked = [64usize, 128, 256, 512, 1024]
        .iter()
        .map(|&c| {
            let mut ks: Vec<usize> = idx.iter().map(|i| i / c).collect();
            ks.dedup();
            ks.len() * c * 8 + COUNTS_LEN / c * 8
        })
        .collect();
    let trimmed = match (idx.first(), idx.last()) {
        (Some(a), Some(b)) => (b - a + 1) * 8,
        _ => 0,
    };
    (chunked, trimmed)
}

fn main() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    // Timing: values over 10 µs..1 ms, 1e6 distinct ones cycled 10 times.
    let values: Vec<u64> = (0..1_000_000)
        .map(|_| rng.log_uniform(10_000.0, 1_000_000.0))
        .collect();
    let record = best(|| {
        let mut h = Histogram::new();
        for _ in 0..10 {
            for &v in &values {
                h.record(v);
            }
        }
        h
    });
    line("record 1e7 values (10us..1ms)", record, 10_000_000);

    let mut big = Histogram::new();
    for &v in &values {
        big.record(v);
    }
    let mut narrow = Histogram::new();
    for _ in 0..10_000 {
        narrow.record(rng.log_normal(2_000.0, 0.5));
    }
    let merge = best(|| {
        let mut acc = Histogram::new();
        for _ in 0..1_000 {
            acc.merge(&big);
        }
        acc
    });
    line("merge 10us..1ms histogram, x1000", merge, 1_000);
    let merge_narrow = best(|| {
        let mut acc = Histogram::new();
        for _ in 0..1_000 {
            acc.merge(&narrow);
        }
        acc
    });
    line("merge ~2us histogram, x1000", merge_narrow, 1_000);
    let quantile = best(|| {
        let mut s = 0u64;
        for k in 0..10_000u64 {
            s += big.quantile(k as f64 / 10_000.0).map_or(0, |n| n.0);
        }
        s
    });
    line("quantile on 10us..1ms histogram, x10000", quantile, 10_000);
    let mut later = big.clone();
    for &v in values.iter().take(1_000) {
        later.record(v + 1);
    }
    let since = best(|| {
        for _ in 0..100 {
            black_box(later.since(&big));
        }
    });
    line("since on 10us..1ms histograms, x100", since, 100);
    let to_bytes = best(|| {
        for _ in 0..1_000 {
            black_box(big.to_bytes());
        }
    });
    line("to_bytes of 10us..1ms histogram, x1000", to_bytes, 1_000);
    let bytes = big.to_bytes();
    let from_bytes = best(|| {
        for _ in 0..1_000 {
            black_box(Histogram::from_bytes(&bytes).ok());
        }
    });
    line(
        "from_bytes of 10us..1ms histogram, x1000",
        from_bytes,
        1_000,
    );
    let clone = best(|| {
        for _ in 0..1_000 {
            black_box(big.clone());
        }
    });
    line("clone of 10us..1ms histogram, x1000", clone, 1_000);
    let sources = best(|| {
        let mut all = Vec::with_capacity(1_000);
        let mut r = Rng(7);
        for _ in 0..1_000 {
            let mut h = Histogram::new();
            for _ in 0..100 {
                h.record(r.log_normal(3_000.0, 0.8));
            }
            all.push(h);
        }
        all
    });
    line("1000 new histograms of 100 values ~3us", sources, 1_000);

    // Memory of typical histograms, and of the other layouts.
    let mut cases: Vec<(String, Histogram)> = Vec::new();
    cases.push(("empty".into(), Histogram::new()));
    cases.push(("1e6 values 10us..1ms".into(), big.clone()));
    let mut small = Histogram::new();
    for _ in 0..100_000 {
        small.record(rng.next() % 2_000);
    }
    cases.push(("1e5 values < 2us".into(), small));
    for n in [20u64, 1_000, 100_000] {
        let mut h = Histogram::new();
        for _ in 0..n {
            h.record(rng.log_normal(2_000.0, 0.7));
        }
        cases.push((format!("{n} values log-normal ~2us"), h));
    }
    let mut timer = Histogram::new();
    for k in 0..1_000_000u64 {
        let v = if k % 20 == 0 {
            rng.log_uniform(5_000.0, 200_000.0)
        } else {
            rng.log_normal(3_000.0, 0.3)
        };
        timer.record(v);
    }
    timer.record(5_000_000);
    cases.push(("timer-like 1e6: ~3us, 5% to 200us, 5ms".into(), timer));
    println!();
    println!(
        "{:<40} {:>9} | chunks of 64 / 128 / 256 / 512 / 1024 counters | trimmed",
        "histogram", "heap_bytes"
    );
    for (name, h) in &cases {
        let (chunked, trimmed) = layouts(h);
        let c: Vec<String> = chunked.iter().map(|b| b.to_string()).collect();
        println!("{name:<40} {:>9} | {} | {trimmed}", heap(h), c.join(" / "));
    }
}
