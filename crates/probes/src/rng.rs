/// xorshift64*: a tiny generator for random phases on a measuring thread,
/// where a library generator's allocation or locking would not do. Not for
/// anything that needs cryptographic quality.
pub(crate) struct XorShift(u64);

impl XorShift {
    pub(crate) fn new(seed: u64) -> XorShift {
        XorShift(seed | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..bound` (bound > 0), by multiply-shift.
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_in_range_and_spreads() {
        let mut r = XorShift::new(42);
        let mut buckets = [0u32; 10];
        for _ in 0..100_000 {
            let v = r.below(1000);
            assert!(v < 1000);
            buckets[(v / 100) as usize] += 1;
        }
        for b in buckets {
            assert!((9_000..11_000).contains(&b), "{buckets:?}");
        }
    }
}
