#![allow(clippy::unwrap_used)]

use super::*;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// A deterministic splitmix64, so that the tests' "random" times are the
/// same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Roughly normal (Irwin–Hall, 12 uniforms), unit standard deviation.
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.unit()).sum::<f64>() - 6.0
    }
}

/// Times of a lattice `start + k × period` for `cycles` cycles, each kept
/// with probability `keep`, moved by normal jitter of `jitter` ns.
fn lattice(
    rng: &mut Rng,
    start: u64,
    period: u64,
    cycles: u64,
    keep: f64,
    jitter: f64,
) -> Vec<u64> {
    let mut out = Vec::new();
    for k in 0..cycles {
        if rng.unit() < keep {
            let t = start as f64 + (k * period) as f64 + jitter * rng.normal();
            out.push(t.max(0.0) as u64);
        }
    }
    out.sort_unstable();
    out
}

fn uniform(rng: &mut Rng, start: u64, span: u64, n: usize) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n)
        .map(|_| start + (rng.unit() * span as f64) as u64)
        .collect();
    v.sort_unstable();
    v
}

fn close(got: u64, want: u64, rel: f64) -> bool {
    (got as f64 - want as f64).abs() <= rel * want as f64
}

fn find(times: &[u64]) -> Option<Periodicity> {
    find_period(times, &PeriodSearch::default())
}

#[test]
fn an_exact_lattice_is_found_with_every_figure() {
    let times: Vec<u64> = (0..20).map(|k| 7 * S + k * 2 * S).collect();
    let p = find(&times).unwrap();
    assert_eq!(p.period_ns, 2 * S);
    assert_eq!(p.jitter_ns, 0);
    assert_eq!(p.events, 20);
    assert_eq!(p.occurrences, 20);
    assert_eq!(p.cycles_spanned, 19);
    assert_eq!(p.missing, 0);
    assert_eq!((p.first_ns, p.last_ns), (7 * S, 45 * S));
    assert!(p.log10_chance() < -20, "{p:?}");
}

#[test]
fn jitter_is_measured_and_the_period_stays_within_it() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let times = lattice(&mut rng, 3 * S, S, 30, 1.0, 3.0 * MS as f64);
    let p = find(&times).unwrap();
    assert!(close(p.period_ns, S, 0.001), "{p:?}");
    // Normal jitter of 3 ms: the RMS of 30 residuals is near it.
    assert!(p.jitter_ns > 2 * MS && p.jitter_ns < 4 * MS, "{p:?}");
    assert!(p.events >= 29, "{p:?}");
}

#[test]
fn forty_percent_missing_still_gives_the_fundamental() {
    let mut rng = Rng(12345);
    let times = lattice(&mut rng, S, 2 * S, 40, 0.6, 1.0 * MS as f64);
    let p = find(&times).unwrap();
    assert!(close(p.period_ns, 2 * S, 0.002), "{p:?}");
    assert_eq!(p.events, times.len() as u64);
    assert!(p.missing > 5, "{p:?}");
    assert_eq!(p.cycles_spanned + 1, p.events + p.missing);
}

#[test]
fn the_paper_example_two_four_eight_ten_is_every_two_seconds() {
    // A culprit every 2 s that collides with a sample only sometimes.
    let times = [2, 4, 8, 10, 14, 16, 18, 24].map(|s| s * S);
    let p = find(&times).unwrap();
    assert_eq!(p.period_ns, 2 * S);
    assert_eq!(p.missing, 4);
}

#[test]
fn unrelated_events_do_not_hide_a_lattice() {
    let mut rng = Rng(777);
    let mut times = lattice(&mut rng, S, 2 * S, 30, 1.0, 2.0 * MS as f64);
    times.extend(uniform(&mut rng, 0, 62 * S, 30));
    times.sort_unstable();
    let p = find(&times).unwrap();
    assert!(close(p.period_ns, 2 * S, 0.002), "{p:?}");
    assert!(p.events >= 30 && p.events <= 33, "{p:?}");
    assert_eq!(p.occurrences, 60);
}

#[test]
fn uniform_random_times_are_not_periodic() {
    for seed in 1..=20u64 {
        let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let times = uniform(&mut rng, 0, 120 * S, 60);
        assert_eq!(find(&times), None, "seed {seed}");
    }
}

#[test]
fn poisson_times_are_not_periodic() {
    for seed in 1..=20u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9));
        let mut t = 0u64;
        let times: Vec<u64> = (0..80)
            .map(|_| {
                // Exponential spacings, mean 1.5 s.
                t += (-(1.0 - rng.unit()).ln() * 1.5 * S as f64) as u64;
                t
            })
            .collect();
        assert_eq!(find(&times), None, "seed {seed}");
    }
}

#[test]
fn too_few_events_say_nothing() {
    assert_eq!(find(&[]), None);
    assert_eq!(find(&[S]), None);
    assert_eq!(find(&[S, 2 * S]), None);
    // Four exact occurrences: below the five asked for.
    assert_eq!(find(&[S, 2 * S, 3 * S, 4 * S]), None);
}

#[test]
fn the_cycles_asked_for_are_a_floor() {
    // Five exact occurrences half a second apart span four periods: enough
    // by default, not when five are asked for.
    let times = [0, 500, 1000, 1500, 2000].map(|ms| 10 * S + ms * MS);
    let p = find(&times).unwrap();
    assert_eq!(p.period_ns, 500 * MS);
    assert_eq!(p.cycles_spanned, 4);
    let strict = PeriodSearch {
        min_cycles: 5,
        ..PeriodSearch::default()
    };
    assert_eq!(find_period(&times, &strict), None);
}

#[test]
fn a_burst_of_events_counts_once() {
    // Each occurrence is three episodes 1 ms apart (one stall delays
    // consecutive samples).
    let times: Vec<u64> = (0..10)
        .flat_map(|k| (0..3).map(move |j| k * S + j * MS))
        .collect();
    let p = find(&times).unwrap();
    assert_eq!(p.period_ns, S);
    assert_eq!(p.occurrences, 10);
    assert_eq!(p.events, 10);
}

#[test]
fn every_ten_seconds_with_a_few_at_odd_fives_is_ten_seconds() {
    // Jones & Regehr's 10 s culprit; two unrelated episodes fall on odd
    // multiples of 5 s: they are extras, not a sign of a 5 s period.
    let mut times: Vec<u64> = (0..12).map(|k| k * 10 * S).collect();
    times.extend([35 * S, 75 * S]);
    times.sort_unstable();
    let p = find(&times).unwrap();
    assert_eq!(p.period_ns, 10 * S, "{p:?}");
    assert_eq!(p.events, 12);
}

#[test]
fn every_five_seconds_is_not_reported_as_ten() {
    // Every multiple of 5 s present: 10 s fits only half of them.
    let times: Vec<u64> = (0..24).map(|k| k * 5 * S).collect();
    let p = find(&times).unwrap();
    assert_eq!(p.period_ns, 5 * S, "{p:?}");
    // Most odd fives present too (a few missing): still 5 s.
    let times: Vec<u64> = (0..24)
        .filter(|k| k % 2 == 0 || k % 6 != 1)
        .map(|k| k * 5 * S)
        .collect();
    let p = find(&times).unwrap();
    assert_eq!(p.period_ns, 5 * S, "{p:?}");
}

#[test]
fn jitter_beyond_the_bound_says_nothing() {
    let mut rng = Rng(4242);
    // 15 % of the period: occurrences are spread over the whole cycle.
    let times = lattice(&mut rng, S, S, 30, 1.0, 0.15 * S as f64);
    assert_eq!(find(&times), None);
}

#[test]
fn unsorted_input_is_sorted_first() {
    let mut times: Vec<u64> = (0..12).map(|k| 5 * S + k * 3 * S).collect();
    times.reverse();
    assert_eq!(find(&times).unwrap().period_ns, 3 * S);
}

#[test]
fn many_events_stay_within_the_bound_on_candidates() {
    // 100 000 uniform events and a lattice: the search ends (bounded
    // candidates), whatever it says.
    let mut rng = Rng(99);
    let mut times = uniform(&mut rng, 0, 1_000 * S, 100_000);
    times.extend((0..500).map(|k| k * 2 * S));
    times.sort_unstable();
    let occ = occurrences(&times, PeriodSearch::default().min_period_ns / 4);
    let c = candidates(&occ, (20 * MS, 250 * S), 96);
    assert!(c.len() <= 96);
    let _ = find(&times);
}

#[test]
fn the_chance_bound_is_exact_when_every_trial_hits() {
    let l = binomial_tail_ln(10.0, 10.0, 0.1);
    assert!((l - 10.0 * 0.1f64.ln()).abs() < 1e-9);
    assert_eq!(binomial_tail_ln(10.0, 1.0, 0.1), 0.0);
    // Above the true tail: P(X >= 5 | 10, 0.1) = 0.001634...
    let exact: f64 = (5..=10)
        .map(|k| {
            let c = (1..=k).fold(1.0, |acc, i| acc * f64::from(10 - k + i) / f64::from(i));
            c * 0.1f64.powi(k) * 0.9f64.powi(10 - k)
        })
        .sum();
    assert!(binomial_tail_ln(10.0, 5.0, 0.1) >= exact.ln());
}

#[test]
fn times_on_a_probe_grid_need_the_grid_to_be_said() {
    // As seen in a control run: six episodes of a kworker 29 ms apart
    // (some cycles missing) among others, every time on the 1 ms grid of
    // the probe's expiries. On that grid a 29 ms lattice fits to the
    // nanosecond by coincidence far more often than continuous times
    // would.
    let grid = MS;
    let start = 5_000 * MS + 137_123;
    let mut times: Vec<u64> = [0, 29, 87, 203, 348, 551]
        .iter()
        .map(|k| start + k * MS)
        .collect();
    let mut rng = Rng(31);
    times.extend((0..6).map(|_| start + (rng.next() % 11_000) * MS - 4_000 * MS));
    times.sort_unstable();
    let on_grid = PeriodSearch {
        resolution_ns: grid,
        ..PeriodSearch::default()
    };
    assert_eq!(find_period(&times, &on_grid), None);
    let claimed = find(&times);
    assert!(
        claimed.as_ref().is_some_and(|p| p.period_ns == 29 * MS),
        "without the grid: {claimed:?}"
    );
    // A real culprit on the same grid is still found.
    let times: Vec<u64> = (0..12).map(|k| start + k * 1_000 * MS).collect();
    let p = find_period(&times, &on_grid).unwrap();
    assert_eq!(p.period_ns, 1_000 * MS);
    assert!(p.log10_chance() < -10, "{p:?}");
}

#[test]
fn uniform_times_on_a_grid_rarely_claim_a_period() {
    let mut claims = Vec::new();
    for seed in 1..=100u64 {
        let mut rng = Rng(seed.wrapping_mul(0x6a09_e667_f3bc_c909));
        let grid = [MS, 2 * MS, 10 * MS][(rng.next() % 3) as usize];
        let n = 5 + (rng.next() % 60) as usize;
        let slots = (10 + rng.next() % 300) * S / grid;
        let mut times: Vec<u64> = (0..n).map(|_| (rng.next() % slots) * grid).collect();
        times.sort_unstable();
        let search = PeriodSearch {
            resolution_ns: grid,
            ..PeriodSearch::default()
        };
        if let Some(p) = find_period(&times, &search) {
            claims.push((seed, grid, n, p));
        }
    }
    assert!(claims.len() <= 1, "{claims:?}");
}

/// A short lattice (8 to 19 cycles) with jitter of 0.5 to 1 % of the
/// period, a fifth of its occurrences missing and at least 8 of them over 6
/// or more cycles, drawn 4000 times from fixed seeds: how often the search
/// finds it at its period. Not every draw can be found: drops and jitter
/// sometimes make another period the better explanation (seen: 7 of 8 even
/// cycles and 2 of 7 odd ones, the odd ones 1.5 to 2 jitters off, fit 100
/// ms better than 50), so the bound is on the rate, at most 1 in 1000, and
/// the misses are printed. Over 20000 such seeds a tolerance of three MADs
/// missed 21 of 16817 fair draws (nine occurrences narrowed to five and
/// lost); the tolerance chosen by the evidence missed none.
#[test]
fn jittered_lattices_are_found_at_their_period() {
    let (mut tried, mut misses) = (0, Vec::new());
    for seed in 1..=4000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let period = (50 + rng.next() % 4_950) * MS;
        let jitter = 0.005 * (1.0 + rng.unit()) * period as f64;
        let cycles = 8 + rng.next() % 12;
        let start = 100 * S + (rng.unit() * period as f64) as u64;
        let times = lattice(&mut rng, start, period, cycles, 0.8, jitter);
        let Some(sxx) = fair_lattice(&times, start, period) else {
            continue;
        };
        tried += 1;
        let p = find(&times);
        // Within five standard errors of a least-squares slope through
        // these cycles, or 0.2 %.
        let tol = (5.0 * jitter / period as f64 / sxx.sqrt()).max(0.002);
        if !p.as_ref().is_some_and(|p| close(p.period_ns, period, tol)) {
            misses.push((seed, period, times.len(), p.map(|p| p.period_ns)));
        }
    }
    eprintln!("{} of {tried} missed: {misses:?}", misses.len());
    assert!(tried >= 3000, "only {tried} fair draws");
    assert!(
        misses.len() * 1000 <= tried,
        "{} of {tried}: {misses:?}",
        misses.len()
    );
}

/// Σ(k − k̄)² over the cycles the times occupy, when they are a fair test
/// of the search: at least 8 of them, over 6 or more cycles, and not
/// (nearly) only every g-th cycle, which makes them a lattice of g ×
/// period, as the search rightly says (seen: 7 of 7 even cycles and 1 of 7
/// odd ones, read as 100 ms, not 50).
fn fair_lattice(times: &[u64], start: u64, period: u64) -> Option<f64> {
    let cycle: Vec<f64> = times
        .iter()
        .map(|&t| ((t as f64 - start as f64) / period as f64).round())
        .collect();
    let spanned = cycle.last()? - cycle.first()?;
    let on: Vec<OnLattice> = cycle
        .iter()
        .zip(times)
        .map(|(&k, &t)| OnLattice {
            cycle: k as i64,
            time: t as f64,
            residual: 0.0,
        })
        .collect();
    if times.len() < 8 || spanned < 6.0 || harmonic(&on) {
        return None;
    }
    let mean = cycle.iter().sum::<f64>() / cycle.len() as f64;
    Some(cycle.iter().map(|k| (k - mean) * (k - mean)).sum())
}

/// Uniform times: how often the search claims a period. The chance bound
/// gates at 1e-3 after the look-elsewhere correction, so claims should be
/// rare; allow 2 in 200 for the approximations.
#[test]
fn uniform_times_rarely_claim_a_period() {
    let mut claims = Vec::new();
    for seed in 1..=200u64 {
        let mut rng = Rng(seed.wrapping_mul(0xd134_2543_de82_ef95));
        let n = 5 + (rng.next() % 200) as usize;
        let span = (10 + rng.next() % 600) * S;
        let times = uniform(&mut rng, 0, span, n);
        if let Some(p) = find(&times) {
            claims.push((seed, n, p));
        }
    }
    assert!(claims.len() <= 2, "{claims:?}");
}
