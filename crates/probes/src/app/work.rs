//! The producer's work: a busy loop of a calibrated number of turns, so
//! that an interruption during the work makes the buffer later by as much,
//! as it would a real computation (a loop that spun until a clock time
//! would absorb it).

use std::hint::black_box;

use latscope_model::{CpuId, Nanos};

use crate::ProbeError;

/// Turns of the loop timed for each calibration round.
const CALIBRATION_TURNS: u64 = 200_000;
/// Calibration rounds; the median one counts.
const CALIBRATION_ROUNDS: usize = 31;

/// `turns` turns of integer work the compiler cannot remove.
#[inline(never)]
pub fn spin_turns(turns: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..turns {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

/// The result of [`calibrate`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Turns that make the compute time asked for.
    pub turns: u64,
    /// Nanoseconds per turn on the calibrated CPU.
    pub ns_per_turn: f64,
}

/// How many turns of [`spin_turns`] take `compute` on `cpu`, timed in the
/// thread's CPU time (time the thread did not run is not counted) on a
/// thread pinned there; the median of several rounds. (The fastest round
/// made the work 15-20 % longer than asked in a run on a shared VM, whose
/// vCPUs are rarely as fast as at their best: the median is the typical
/// speed, which is what a compute time `c` means.)
pub fn calibrate(cpu: CpuId, compute: Nanos) -> Result<Calibration, ProbeError> {
    let handle = std::thread::Builder::new()
        .name(format!("lat-calib/{cpu}"))
        .spawn(move || -> Result<f64, ProbeError> {
            latscope_platform::set_affinity(cpu).map_err(|e| ProbeError::Affinity {
                cpu,
                reason: e.to_string(),
            })?;
            black_box(spin_turns(CALIBRATION_TURNS));
            let mut rounds = [0u64; CALIBRATION_ROUNDS];
            for r in rounds.iter_mut() {
                let a = latscope_platform::thread_cpu_ns();
                black_box(spin_turns(CALIBRATION_TURNS));
                *r = latscope_platform::thread_cpu_ns().saturating_sub(a);
            }
            rounds.sort_unstable();
            let median = rounds[CALIBRATION_ROUNDS / 2];
            Ok(median.max(1) as f64 / CALIBRATION_TURNS as f64)
        })
        .map_err(|e| ProbeError::Spawn(e.to_string()))?;
    let ns_per_turn = handle.join().map_err(|_| ProbeError::Panicked(cpu))??;
    Ok(Calibration {
        turns: (compute.0 as f64 / ns_per_turn).round() as u64,
        ns_per_turn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibrated_loop_takes_about_the_time_asked() {
        let cpu = latscope_platform::online_cpus()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let c = calibrate(cpu, Nanos::from_micros(500)).unwrap();
        assert!(c.turns > 0 && c.ns_per_turn > 0.0, "{c:?}");
        // The fastest of 20 runs (CPU time, so a preemption does not count)
        // lies within a factor 2 of the target: the calibration is not off
        // by an order of magnitude. (Speed changes of a shared vCPU make it
        // no tighter than that.)
        let best = (0..20)
            .map(|_| {
                let a = latscope_platform::thread_cpu_ns();
                black_box(spin_turns(c.turns));
                latscope_platform::thread_cpu_ns() - a
            })
            .min()
            .unwrap();
        assert!((250_000..1_000_000).contains(&best), "{best} ns for 500 µs");
        assert_eq!(calibrate(cpu, Nanos(0)).unwrap().turns, 0);
    }
}
