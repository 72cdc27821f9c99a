//! Memory access time against the working set (Chen et al. §4.3, lmbench's
//! `lat_mem_rd`): a pointer chase through a buffer of the given size, each
//! load's address the value of the last, so loads cannot overlap. Two
//! orders: a fixed 128-byte stride (which the prefetcher learns) and a
//! random cyclic permutation of 128-byte slots (which it cannot). One
//! operation is one load.
//!
//! Both run on transparent huge pages, so that up to hundreds of megabytes
//! stay within the TLB's reach and the curve shows the caches alone. A
//! third curve, the random chase on 4 KiB pages only (`random_smallpages`),
//! adds a TLB miss (on a VM, a two-dimensional page walk) wherever the
//! working set outgrows the TLB: where it parts from the `random` curve is
//! the TLB's reach.

use std::hint::black_box;

use latscope_platform::pages::PageBuffer;

use super::benchmark::Benchmark;
use crate::bench::{BenchError, Operation};

/// Bytes between the slots of the chase: two cache lines, so that the
/// adjacent-line prefetcher does not fetch the next slot with this one.
pub const STRIDE: usize = 128;
/// The smallest working set of the curve.
pub const SMALLEST: u64 = 512;

/// The curves: name, random order, on huge pages.
pub const KINDS: [(&str, bool, bool); 3] = [
    ("stride128", false, true),
    ("random", true, true),
    ("random_smallpages", true, false),
];

/// A chase through `slots` slots of [`STRIDE`] bytes.
pub struct Chase {
    /// `buf[slot * STRIDE / 8]` holds the next slot's word index.
    buf: PageBuffer,
    at: usize,
}

impl Chase {
    /// A chase over `bytes` (at least two slots), in slot order or in a
    /// random single cycle (Sattolo's algorithm, seeded: the same order
    /// every run), on huge pages or on base pages only.
    pub fn new(bytes: u64, random: bool, huge: bool) -> Result<Chase, BenchError> {
        let words_per_slot = STRIDE / std::mem::size_of::<usize>();
        let slots = ((bytes as usize) / STRIDE).max(2);
        let mut order: Vec<usize> = (0..slots).collect();
        if random {
            let mut seed = 0x2545_F491_4F6C_DD1Du64;
            for i in (1..slots).rev() {
                seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = seed;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                // Sattolo: j < i, so the permutation is one cycle.
                let j = (z % i as u64) as usize;
                order.swap(i, j);
            }
        }
        let mut buf = PageBuffer::new(slots * words_per_slot, huge)
            .map_err(|e| BenchError::Setup(format!("cannot map {bytes} bytes: {e}")))?;
        let words = buf.as_mut_slice();
        for k in 0..slots {
            let from = order[k];
            let to = order[(k + 1) % slots];
            words[from * words_per_slot] = to * words_per_slot;
        }
        Ok(Chase {
            buf,
            at: order[0] * words_per_slot,
        })
    }

    /// How many loads one trip round the whole cycle takes.
    pub fn slots(&self) -> usize {
        self.buf.as_slice().len() / (STRIDE / std::mem::size_of::<usize>())
    }
}

impl Operation for Chase {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let mut p = self.at;
        let buf = self.buf.as_slice();
        for _ in 0..ops {
            // In bounds by construction: every stored value is the word
            // index of a slot.
            p = buf[p];
        }
        self.at = black_box(p);
        Ok(())
    }
}

/// Working sets from [`SMALLEST`] to at least `largest`, two per octave
/// (2^k and 1.5 × 2^k).
pub fn curve_sizes(largest: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = SMALLEST;
    loop {
        v.push(s);
        if s >= largest {
            break;
        }
        v.push(s + s / 2);
        s *= 2;
    }
    v
}

pub use latscope_stats::micro::size_name;

/// The curves' benchmarks up to `largest` bytes: `memory.<kind>_<size>`
/// for each of [`KINDS`].
pub fn benchmarks(largest: u64) -> Vec<Benchmark> {
    let mut v = Vec::new();
    for (kind, random, huge) in KINDS {
        for bytes in curve_sizes(largest) {
            v.push(
                Benchmark::new(
                    "memory",
                    format!("{kind}_{}", size_name(bytes)),
                    format!(
                        "one dependent load, {} over {}{}",
                        if random {
                            "random order"
                        } else {
                            "128-byte stride"
                        },
                        size_name(bytes),
                        if huge { "" } else { " on 4 KiB pages" }
                    ),
                    false,
                    move |_| Ok(Box::new(Chase::new(bytes, random, huge)?)),
                )
                .with_bytes(bytes),
            );
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both orders visit every slot once per trip round the cycle.
    #[test]
    fn the_chase_is_one_cycle_through_every_slot() {
        for (random, huge) in [(false, true), (true, true), (true, false)] {
            let mut c = Chase::new(64 * STRIDE as u64, random, huge).unwrap();
            assert_eq!(c.slots(), 64);
            let start = c.at;
            let mut seen = std::collections::BTreeSet::new();
            for _ in 0..64 {
                assert!(seen.insert(c.at), "slot visited twice");
                c.run(1).unwrap();
            }
            assert_eq!(c.at, start, "back at the start after 64 loads");
        }
        // The random order is not the stride order.
        let a = Chase::new(64 * STRIDE as u64, false, true).unwrap();
        let b = Chase::new(64 * STRIDE as u64, true, true).unwrap();
        assert_ne!(a.buf.as_slice(), b.buf.as_slice());
    }

    #[test]
    fn sizes_are_two_per_octave_and_named() {
        let s = curve_sizes(4096);
        assert_eq!(s, vec![512, 768, 1024, 1536, 2048, 3072, 4096]);
        assert_eq!(size_name(512), "512B");
        assert_eq!(size_name(768), "768B");
        assert_eq!(size_name(48 << 10), "48K");
        assert_eq!(size_name(1536), "1.5K");
        assert_eq!(size_name(12 << 20), "12M");
        assert_eq!(size_name(3 << 19), "1.5M");
        assert_eq!(benchmarks(4096).len(), 21);
    }
}
