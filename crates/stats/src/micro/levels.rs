//! Cache levels read from a memory-latency curve: the time per load of a
//! pointer chase against the working set's size, flat while the set fits a
//! level and rising where it spills into the next (Chen et al. §4.3's
//! "memory access time"; lmbench's `lat_mem_rd`).
//!
//! The curve is cut into flat stretches by an optimal piecewise-constant
//! fit of the logarithm of the latency (dynamic programming over all cuts,
//! each stretch paying a penalty proportional to the noise the curve shows
//! between neighbouring points, so that noise does not make levels and a
//! real step always does). Stretches whose latencies differ by less than
//! [`MIN_STEP`] are one level; a stretch that is short or still rising
//! (more than [`MAX_LEVEL_SLOPE`] per doubling) is the ramp from one level
//! to the next, not a level of its own. A level's
//! capacity is the largest working set whose latency is still below the
//! geometric middle of its plateau and the next one: a random chase over a
//! set `r` times a cache's size hits it about `1/r` of the time, so the
//! latency crosses that middle between one and two times the capacity.
//! The crossing is also capped at [`MAX_CAPACITY_STEP`] times the level,
//! so that a level too short to be kept does not stretch the one below.
//! The last level is memory, with no capacity (and it may still be rising
//! where the curve ends).

use serde::Serialize;

use super::median_sorted as median;

/// Smallest ratio between the latencies of two levels.
pub const MIN_STEP: f64 = 1.25;
/// Fewest points a flat stretch needs to be a level rather than a ramp.
pub const MIN_LEVEL_POINTS: usize = 3;
/// Steepest a level may rise, in natural-log units per doubling of the
/// working set (0.1: about 7 % per doubling). The ramp from one level to
/// the next rises 0.2–0.4 per doubling; noise of a few per cent moves a
/// plateau's slope by a few hundredths.
pub const MAX_LEVEL_SLOPE: f64 = 0.1;

/// Largest ratio to its level that a working set may show and still count
/// as fitting it (the capacity is where the curve leaves the level, even
/// when the next level kept is far above).
pub const MAX_CAPACITY_STEP: f64 = 1.5;

/// One point of the curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CurvePoint {
    /// The working set (bytes).
    pub bytes: u64,
    /// Time per load (ns).
    pub ns: f64,
}

/// A level of the memory hierarchy found in the curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Level {
    /// The working sets of its plateau.
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// The median latency of the plateau (ns).
    pub ns: f64,
    /// Its size as the curve shows it; `None` for the last level (memory).
    pub capacity_bytes: Option<u64>,
}

/// The levels of `curve` (any order; points with a non-positive or
/// non-finite latency are ignored), fastest first.
pub fn detect_levels(curve: &[CurvePoint]) -> Vec<Level> {
    let mut pts: Vec<CurvePoint> = curve
        .iter()
        .copied()
        .filter(|p| p.ns.is_finite() && p.ns > 0.0)
        .collect();
    pts.sort_by_key(|p| p.bytes);
    if pts.len() < MIN_LEVEL_POINTS {
        return Vec::new();
    }
    let y: Vec<f64> = pts.iter().map(|p| p.ns.ln()).collect();
    let stretches = segment(&y, penalty(&y));
    // Merge neighbours that differ by less than a real step.
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in stretches {
        if let Some(last) = merged.last_mut() {
            if (mean(&y[a..b]) - mean(&y[last.0..last.1])).abs() < MIN_STEP.ln() {
                last.1 = b;
                continue;
            }
        }
        merged.push((a, b));
    }
    // Short or rising stretches are ramps between levels, not levels.
    let x: Vec<f64> = pts.iter().map(|p| (p.bytes.max(1) as f64).log2()).collect();
    // The last stretch is memory even while still rising: the curve may
    // end before a random chase over it has flattened out.
    let n = merged.len();
    let plateaus: Vec<(usize, usize)> = merged
        .into_iter()
        .enumerate()
        .filter(|&(i, (a, b))| {
            b - a >= MIN_LEVEL_POINTS
                && (i + 1 == n || slope(&x[a..b], &y[a..b]) <= MAX_LEVEL_SLOPE)
        })
        .map(|(_, s)| s)
        .collect();
    let mut levels: Vec<Level> = Vec::new();
    for (i, &(a, b)) in plateaus.iter().enumerate() {
        let mut ys: Vec<f64> = y[a..b].to_vec();
        ys.sort_by(f64::total_cmp);
        let level_y = median(&ys);
        if let Some(prev) = levels.last() {
            // Not slower than the previous level by a real step: the same.
            if level_y - prev.ns.ln() < MIN_STEP.ln() {
                continue;
            }
        }
        let next = plateaus.get(i + 1).map(|&(c, d)| {
            let mut ys: Vec<f64> = y[c..d].to_vec();
            ys.sort_by(f64::total_cmp);
            median(&ys)
        });
        let capacity_bytes = next.map(|next_y| {
            // Below the middle, and never more than MAX_CAPACITY_STEP above
            // the level: a level too short to be kept (two points of a
            // --quick curve) between this one and the next must not be
            // counted as part of this one.
            let limit = ((level_y + next_y) / 2.0).min(level_y + MAX_CAPACITY_STEP.ln());
            let end = plateaus[i + 1].0;
            (b - 1..end)
                .take_while(|&j| y[j] < limit)
                .last()
                .map_or(pts[b - 1].bytes, |j| pts[j].bytes)
        });
        levels.push(Level {
            from_bytes: pts[a].bytes,
            to_bytes: pts[b - 1].bytes,
            ns: level_y.exp(),
            capacity_bytes,
        });
    }
    if let Some(last) = levels.last_mut() {
        last.capacity_bytes = None;
    }
    levels
}

/// The least-squares slope of `y` against `x`; 0 without spread in `x`.
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let (mx, my) = (mean(x), mean(y));
    let sxx: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum();
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    if sxx > 0.0 {
        sxy / sxx
    } else {
        0.0
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The penalty of one more stretch: twice the noise variance times the log
/// of the number of points (BIC-like), with the variance from the median
/// absolute difference of neighbours (robust to the steps themselves), and
/// at least that of a 2 % wobble.
fn penalty(y: &[f64]) -> f64 {
    let mut d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    d.sort_by(f64::total_cmp);
    // MAD of differences of i.i.d. noise: sigma * sqrt(2) * 0.6745.
    let sigma = (median(&d) / (0.6745 * std::f64::consts::SQRT_2)).max(0.02);
    2.0 * sigma * sigma * (y.len() as f64).ln() * 4.0
}

/// The optimal cut of `y` into stretches `[a, b)` minimizing the squared
/// error around each stretch's mean plus `beta` per stretch.
fn segment(y: &[f64], beta: f64) -> Vec<(usize, usize)> {
    let n = y.len();
    let mut s = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, &v) in y.iter().enumerate() {
        s[i + 1] = s[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    let cost = |a: usize, b: usize| {
        let k = (b - a) as f64;
        let sum = s[b] - s[a];
        (s2[b] - s2[a]) - sum * sum / k
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for b in 1..=n {
        for a in 0..b {
            let c = best[a] + cost(a, b) + beta;
            if c < best[b] {
                best[b] = c;
                from[b] = a;
            }
        }
    }
    let mut cuts = Vec::new();
    let mut b = n;
    while b > 0 {
        let a = from[b];
        cuts.push((a, b));
        b = a;
    }
    cuts.reverse();
    cuts
}

/// The TLB's reach: the largest working set at which a chase on base
/// pages (`small`) still costs less than [`MIN_STEP`] times the same chase
/// on huge pages (`huge`), given that it costs more from the next size on
/// (at that size and the one after, so that one noisy point does not
/// decide). `None` when the two curves never part, or share fewer than
/// three sizes.
pub fn tlb_reach(huge: &[CurvePoint], small: &[CurvePoint]) -> Option<u64> {
    let mut pairs: Vec<(u64, f64)> = small
        .iter()
        .filter_map(|s| {
            huge.iter()
                .find(|h| h.bytes == s.bytes)
                .filter(|h| h.ns > 0.0 && s.ns.is_finite())
                .map(|h| (s.bytes, s.ns / h.ns))
        })
        .collect();
    pairs.sort_by_key(|p| p.0);
    if pairs.len() < 3 {
        return None;
    }
    let parted = |i: usize| pairs[i].1 >= MIN_STEP;
    (1..pairs.len())
        .find(|&i| parted(i) && (i + 1 == pairs.len() || parted(i + 1)))
        .map(|i| pairs[i - 1].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tlb_reach_is_where_small_pages_start_to_cost_more() {
        let huge = curve(&[(32 << 10, 1.5), (512 << 10, 4.0)], 100.0, 0.03, 7);
        // Base pages: one TLB of 64 entries (256 KiB), beyond it each load
        // also misses the TLB (a walk of 20 ns, half of it cached).
        let small: Vec<CurvePoint> = huge
            .iter()
            .map(|p| CurvePoint {
                bytes: p.bytes,
                ns: if p.bytes > 256 << 10 {
                    p.ns + 20.0
                } else {
                    p.ns
                },
            })
            .collect();
        assert_eq!(tlb_reach(&huge, &small), Some(256 << 10));
        assert_eq!(tlb_reach(&huge, &huge), None);
        // One noisy point alone does not part them.
        let mut spike = huge.clone();
        spike[5].ns *= 2.0;
        assert_eq!(tlb_reach(&huge, &spike), None);
        assert_eq!(tlb_reach(&huge[..2], &small[..2]), None);
    }

    /// A --quick curve (one size per octave) with a level of two points
    /// between L1 and the last level: L1's capacity stays where the curve
    /// leaves it, not where the next kept level begins.
    #[test]
    fn a_short_level_does_not_stretch_the_one_below() {
        let pts: Vec<CurvePoint> = [
            (512u64, 1.6),
            (1 << 10, 1.6),
            (2 << 10, 1.6),
            (4 << 10, 1.58),
            (8 << 10, 1.58),
            (16 << 10, 1.68),
            (32 << 10, 1.6),
            (64 << 10, 4.11),
            (128 << 10, 4.18),
            (256 << 10, 7.94),
            (512 << 10, 13.6),
            (1 << 20, 25.0),
            (2 << 20, 19.7),
            (4 << 20, 19.9),
            (8 << 20, 114.2),
            (16 << 20, 181.5),
            (32 << 20, 184.8),
            (64 << 20, 214.8),
            (128 << 20, 219.9),
        ]
        .into_iter()
        .map(|(bytes, ns)| CurvePoint { bytes, ns })
        .collect();
        let l = detect_levels(&pts);
        assert_eq!(l[0].capacity_bytes, Some(32 << 10), "{l:?}");
    }

    /// A seeded generator for the noise (tests only).
    struct Rng(u64);
    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Working sets from 512 B to 256 MiB, two per octave.
    fn sizes() -> Vec<u64> {
        let mut v = Vec::new();
        let mut s = 512u64;
        while s <= 256 << 20 {
            v.push(s);
            v.push(s * 3 / 2);
            s *= 2;
        }
        v
    }

    /// The latency of a random chase over `w` bytes with caches `(size,
    /// ns)` and memory at `mem_ns`: a level of size C holds min(1, C/w) of
    /// the set, times a multiplicative noise of ±`noise`.
    fn curve(caches: &[(u64, f64)], mem_ns: f64, noise: f64, seed: u64) -> Vec<CurvePoint> {
        let mut rng = Rng(seed);
        sizes()
            .into_iter()
            .map(|w| {
                let mut ns = 0.0;
                let mut covered = 0.0;
                for &(c, lat) in caches {
                    let f = (c as f64 / w as f64).min(1.0);
                    ns += (f - covered).max(0.0) * lat;
                    covered = covered.max(f);
                }
                ns += (1.0 - covered) * mem_ns;
                let wobble = 1.0 + noise * (2.0 * rng.uniform() - 1.0);
                CurvePoint {
                    bytes: w,
                    ns: ns * wobble,
                }
            })
            .collect()
    }

    fn within_2x(found: Option<u64>, truth: u64) -> bool {
        found.is_some_and(|f| f * 2 >= truth && f <= truth * 2)
    }

    #[test]
    fn two_levels_in_noise() {
        for seed in 1..=20 {
            let c = curve(&[(32 << 10, 1.5)], 90.0, 0.05, seed);
            let l = detect_levels(&c);
            assert_eq!(l.len(), 2, "seed {seed}: {l:?}");
            assert!(
                within_2x(l[0].capacity_bytes, 32 << 10),
                "seed {seed}: {l:?}"
            );
            assert!((l[0].ns / 1.5 - 1.0).abs() < 0.1, "{l:?}");
            assert_eq!(l[1].capacity_bytes, None);
        }
    }

    #[test]
    fn three_and_four_levels_in_noise() {
        for seed in 1..=20 {
            let c = curve(&[(48 << 10, 1.2), (2 << 20, 4.5)], 95.0, 0.05, seed);
            let l = detect_levels(&c);
            assert_eq!(l.len(), 3, "seed {seed}: {l:?}");
            assert!(
                within_2x(l[0].capacity_bytes, 48 << 10),
                "seed {seed}: {l:?}"
            );
            assert!(
                within_2x(l[1].capacity_bytes, 2 << 20),
                "seed {seed}: {l:?}"
            );
            let c = curve(
                &[(32 << 10, 1.3), (1 << 20, 4.0), (32 << 20, 14.0)],
                100.0,
                0.05,
                seed,
            );
            let l = detect_levels(&c);
            assert_eq!(l.len(), 4, "seed {seed}: {l:?}");
            for (found, truth) in l.iter().zip([32u64 << 10, 1 << 20, 32 << 20]) {
                assert!(within_2x(found.capacity_bytes, truth), "seed {seed}: {l:?}");
            }
        }
    }

    #[test]
    fn a_flat_curve_is_one_level_and_nothing_is_none() {
        let flat: Vec<CurvePoint> = sizes()
            .into_iter()
            .map(|b| CurvePoint { bytes: b, ns: 2.0 })
            .collect();
        let l = detect_levels(&flat);
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!(l[0].capacity_bytes, None);
        assert!(detect_levels(&[]).is_empty());
        assert!(detect_levels(&[CurvePoint {
            bytes: 1,
            ns: f64::NAN
        }])
        .is_empty());
    }
}
