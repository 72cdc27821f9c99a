//! SplitMix64: a tiny seeded generator, enough for reproducible test data
//! (tests only).

pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on (0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// `n` uniforms on (0, 1) from `seed`.
pub(crate) fn uniforms(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = Rng(seed);
    (0..n).map(|_| rng.uniform()).collect()
}
