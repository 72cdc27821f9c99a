//! The pure part of the noise probe: measuring the base iteration and
//! finding interruptions in a stream of clock readings. Generic over the
//! clock, so tests drive it with a scripted one.

use std::hint::black_box;

/// Something the loop reads every iteration.
pub trait Ticks {
    fn now(&mut self) -> u64;
}

/// The time stamp counter.
pub struct Tsc;

impl Ticks for Tsc {
    #[inline(always)]
    fn now(&mut self) -> u64 {
        latscope_platform::tsc::rdtsc()
    }
}

/// CLOCK_MONOTONIC through the vDSO, in nanoseconds.
pub struct Mono;

impl Ticks for Mono {
    #[inline(always)]
    fn now(&mut self) -> u64 {
        latscope_platform::monotonic_ns()
    }
}

/// Iteration lengths below this many ticks are counted one by one for the
/// base (a 4 KiB array on the stack; longer ones are interruptions anyway).
const BASE_BINS: usize = 1024;

/// The base iteration over `iterations` loop turns: the study's minimum,
/// which interruptions can only lengthen, taken as the shortest length
/// that at least one turn in 1,000 reaches. A clock read in quanta gives a
/// rare shorter delta between two reads of the same quantum's edge: this
/// VM's TSC reads 26 or 52 ticks apart, and 1 tick apart in about 2 reads
/// in 100,000 (2026-11-25). That 1 tick as the base made the threshold
/// 4 ticks and every iteration an interruption.
#[inline(never)]
pub fn base_ticks<C: Ticks>(clock: &mut C, iterations: u64, fp: bool) -> u64 {
    let mut counts = [0u32; BASE_BINS];
    let mut min = u64::MAX;
    let mut acc = 1.0f64;
    let mut prev = clock.now();
    for _ in 0..iterations {
        if fp {
            acc = fp_work(acc);
        }
        let now = clock.now();
        let d = now.wrapping_sub(prev);
        if d < min {
            min = d;
        }
        if let Some(c) = usize::try_from(d).ok().and_then(|i| counts.get_mut(i)) {
            *c = c.saturating_add(1);
        }
        prev = now;
    }
    black_box(acc);
    let rank = iterations / 1000;
    let mut seen = 0u64;
    let mut base = min;
    if rank > 0 {
        for (d, c) in counts.iter().enumerate() {
            seen += u64::from(*c);
            if seen > rank {
                base = d as u64;
                break;
            }
        }
    }
    base.max(1)
}

/// Floating-point work that stays in registers: the FPU/SSE state is live
/// in every iteration, as in the study's floating-point variant.
#[inline(always)]
fn fp_work(acc: f64) -> f64 {
    let x = black_box(acc) * 1.000_000_1 + 1e-9;
    x - (x - 1.0) * 1e-12
}

/// What one active period found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spun {
    pub iterations: u64,
    /// First and last readings of the period.
    pub start: u64,
    pub end: u64,
    /// The loop stopped because `stop` said so.
    pub stopped: bool,
}

/// Spins from now until the clock reaches `until`; every iteration of at
/// least `threshold` ticks is passed to `on_gap(start, end)`, and the clock
/// is read again after it, so the time `on_gap` takes is neither an
/// iteration nor an interruption. `stop` is
/// polled every 2^16 iterations (a few hundred µs).
#[inline(never)]
pub fn spin<C: Ticks>(
    clock: &mut C,
    until: u64,
    threshold: u64,
    fp: bool,
    stop: &dyn Fn() -> bool,
    on_gap: &mut dyn FnMut(u64, u64),
) -> Spun {
    let mut acc = 1.0f64;
    let start = clock.now();
    let mut prev = start;
    let mut iterations = 0u64;
    let mut stopped = false;
    loop {
        if fp {
            acc = fp_work(acc);
        }
        let now = clock.now();
        prev = if now.wrapping_sub(prev) >= threshold {
            on_gap(prev, now);
            // Recording (tick conversions, histogram, timeline, hand-over
            // ring) takes longer than the threshold: starting the next
            // iteration at `now` would measure it as the next interruption,
            // and every gap would then begin where the previous one ended.
            // The recording time belongs to no iteration.
            clock.now()
        } else {
            now
        };
        iterations += 1;
        if now >= until {
            break;
        }
        if iterations & 0xffff == 0 && stop() {
            stopped = true;
            break;
        }
    }
    black_box(acc);
    Spun {
        iterations,
        start,
        end: prev,
        stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns scripted readings, then keeps adding `step`.
    struct Script {
        values: Vec<u64>,
        i: usize,
        step: u64,
    }

    impl Ticks for Script {
        fn now(&mut self) -> u64 {
            let v = if self.i < self.values.len() {
                self.values[self.i]
            } else {
                self.values.last().copied().unwrap_or(0)
                    + (self.i + 1 - self.values.len()) as u64 * self.step
            };
            self.i += 1;
            v
        }
    }

    #[test]
    fn base_is_the_shortest_iteration() {
        let mut c = Script {
            values: vec![0, 10, 30, 37, 60, 70],
            i: 0,
            step: 10,
        };
        assert_eq!(base_ticks(&mut c, 5, false), 7);
    }

    #[test]
    fn gaps_at_or_above_the_threshold_are_reported_with_their_ends() {
        // Iterations of 10 ticks, with interruptions of 45 and 300 ticks and
        // one of 39 (below a threshold of 40). After each gap the loop reads
        // the clock once more (a delta of 0 here: free recording).
        let mut v = vec![0u64];
        for d in [10, 10, 45, 0, 10, 39, 10, 300, 0, 10] {
            let last = *v.last().unwrap_or(&0);
            v.push(last + d);
        }
        let end = *v.last().unwrap_or(&0);
        let mut c = Script {
            values: v,
            i: 0,
            step: 10,
        };
        let mut gaps = Vec::new();
        let spun = spin(&mut c, end, 40, false, &|| false, &mut |a, b| {
            gaps.push((a, b))
        });
        assert_eq!(gaps, vec![(20, 65), (124, 424)]);
        assert_eq!(spun.iterations, 8);
        assert_eq!((spun.start, spun.end), (0, end));
        assert!(!spun.stopped);
    }

    #[test]
    fn stop_is_honoured_within_a_bounded_number_of_iterations() {
        let mut c = Script {
            values: vec![0],
            i: 0,
            step: 1,
        };
        let spun = spin(&mut c, u64::MAX, 1_000, true, &|| true, &mut |_, _| {});
        assert!(spun.stopped);
        assert_eq!(spun.iterations, 0x10000);
    }

    /// A clock that a recording cost can be charged to from inside `on_gap`.
    struct Costly {
        script: Script,
        extra: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl Ticks for Costly {
        fn now(&mut self) -> u64 {
            self.script.now() + self.extra.get()
        }
    }

    #[test]
    fn recording_a_gap_is_not_charged_to_the_next_iteration() {
        // Iterations of 10 ticks, one interruption of 300, and a recording
        // that costs 50 ticks, above the threshold of 40 (as the real one is
        // above the real threshold). Charging it to the next iteration would
        // make that a gap too, and so on to the end: a chain of gaps each
        // starting where the previous one ended.
        let extra = std::rc::Rc::new(std::cell::Cell::new(0));
        let mut c = Costly {
            script: Script {
                values: vec![0, 10, 20, 320],
                i: 0,
                step: 10,
            },
            extra: std::rc::Rc::clone(&extra),
        };
        let mut gaps = Vec::new();
        let spun = spin(&mut c, 2_000, 40, false, &|| false, &mut |a, b| {
            gaps.push((a, b));
            extra.set(extra.get() + 50);
        });
        assert_eq!(gaps, vec![(20, 320)], "one interruption, no chain");
        let chained = gaps.windows(2).filter(|w| w[1].0 == w[0].1).count();
        assert_eq!(chained, 0);
        assert!(spun.end >= 2_000);
    }

    #[test]
    fn a_rare_short_delta_of_a_quantised_clock_is_not_the_base() {
        // Reads 26 ticks apart, and 1 tick apart twice in 10,000: the base
        // is 26, not 1 (whose threshold would make every turn a gap).
        let mut values = vec![0u64];
        for i in 0..10_000u64 {
            let last = *values.last().unwrap_or(&0);
            values.push(last + if i % 5_000 == 7 { 1 } else { 26 });
        }
        let mut c = Script {
            values,
            i: 0,
            step: 26,
        };
        assert_eq!(base_ticks(&mut c, 10_000, false), 26);
    }

    #[test]
    fn a_clock_that_does_not_advance_gives_a_base_of_one_tick() {
        // The threshold is a multiple of the base: a base of 0 would make
        // every iteration an interruption.
        let mut c = Script {
            values: vec![5],
            i: 0,
            step: 0,
        };
        assert_eq!(base_ticks(&mut c, 100, false), 1);
    }

    #[test]
    fn the_base_of_a_real_clock_is_no_longer_than_its_mean_iteration() {
        // The minimum of the iterations cannot exceed their mean, measured
        // around the same loop with the same clock.
        let n = 100_000;
        let a = Tsc.now();
        let b = base_ticks(&mut Tsc, n, false);
        let elapsed = Tsc.now().wrapping_sub(a);
        assert!(b <= elapsed / n + 1, "base {b} ticks, mean {}", elapsed / n);
        let a = Mono.now();
        let m = base_ticks(&mut Mono, n, true);
        let elapsed = Mono.now() - a;
        assert!(m <= elapsed / n + 1, "base {m} ns, mean {} ns", elapsed / n);
    }
}
