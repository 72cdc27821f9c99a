//! Running one benchmark: calibrate the operations per iteration, warm up,
//! time the iterations with no counter open and the interrupts counted
//! over all of them, then run as many iterations again with the counters
//! open and read around each.
//!
//! A timed iteration, and a counted one:
//!
//! ```text
//! op.before_iteration()    op.before_iteration()
//! t0 = clock()             c0 = counters.read()
//!   op.run(ops)              op.run(ops)
//! t1 = clock()             c1 = counters.read()
//! ```
//!
//! The *Null* iteration (`null`) measures the frame around nothing: its
//! time (two back-to-back clock reads) is subtracted from every timed
//! iteration, its counter deltas from every counted one
//! (`stats::op_stats`, `stats::per_op_counter`). Counters are kept out of
//! the timed pass because a perf event on the thread is switched with it
//! and slows what switches (`docs/micro.md`).
//!
//! The calling thread is expected to be pinned to its CPU already (the
//! caller's business: benchmarks across CPUs pin their own helpers).

use serde::Serialize;

use crate::counters::{difference, Counters, COUNTERS};
use crate::irq::{self, IrqDelta};
use crate::stats::{op_stats, ops_per_iteration, per_op_counter, OpStats, StatsError};

/// Iterations of the study (Chen et al. repeat every test 50 times).
pub const DEFAULT_ITERATIONS: usize = 50;
/// Untimed iterations first (caches, TLB, page faults of first touch).
pub const DEFAULT_WARMUP: usize = 5;
/// Tries of the Null iteration, whose median is subtracted.
pub const NULL_TRIES: usize = 1001;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Stats(#[from] StatsError),
}

impl BenchError {
    /// The last OS error, for `what`.
    pub fn last_os(what: impl Into<String>) -> BenchError {
        BenchError::Os {
            what: what.into(),
            source: std::io::Error::last_os_error(),
        }
    }
}

/// What a benchmark repeats.
pub trait Operation {
    /// Runs `ops` operations.
    fn run(&mut self, ops: u64) -> Result<(), BenchError>;

    /// Prepares the next iteration of `ops` operations, outside the
    /// timing (a cold read evicts the files it is about to read).
    fn before_iteration(&mut self, _ops: u64) -> Result<(), BenchError> {
        Ok(())
    }
}

/// How a benchmark is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Options {
    pub iterations: usize,
    pub warmup: usize,
    /// Operations per iteration; `None` to calibrate
    /// ([`ops_per_iteration`]).
    pub ops: Option<u64>,
    /// The shortest iteration calibration aims for (ns).
    pub min_iteration_ns: u64,
    /// The shortest warm-up (ns): warm-up iterations go on until it has
    /// passed, for operations that reach a steady state only after a while
    /// (a TCP stream).
    pub min_warmup_ns: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            iterations: DEFAULT_ITERATIONS,
            warmup: DEFAULT_WARMUP,
            ops: None,
            min_iteration_ns: crate::stats::MIN_ITERATION_NS as u64,
            min_warmup_ns: 0,
        }
    }
}

/// What the measuring frame itself costs (the *Null* benchmark's
/// correction): its median time, and each counter's mean change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Null {
    pub elapsed_ns: f64,
    pub counters: Vec<Option<f64>>,
}

/// A counter's figure per operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CounterFigure {
    pub name: &'static str,
    /// Median over iterations of the corrected change per operation;
    /// `None` when the counter is unavailable.
    pub per_op: Option<f64>,
}

/// One benchmark's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measurement {
    pub stats: OpStats,
    pub counters: Vec<CounterFigure>,
    /// Interrupts on the benchmark's CPUs per iteration (all, and all but
    /// the clock), and softirqs; `None` where `/proc` could not be read.
    pub interrupts_per_iteration: Option<f64>,
    pub non_timer_interrupts_per_iteration: Option<f64>,
    pub softirqs_per_iteration: Option<f64>,
}

/// The clock every benchmark is timed with: CLOCK_MONOTONIC through the
/// vDSO (the clock the probes use; its cost is in the Null figure).
fn clock() -> u64 {
    latscope_platform::monotonic_ns()
}

/// Measures the Null iteration: the frame of [`measure`] around nothing.
pub fn null(counters: &Counters) -> Null {
    let mut times = Vec::with_capacity(NULL_TRIES);
    let mut sums = [0u64; COUNTERS.len()];
    let mut seen = [0u64; COUNTERS.len()];
    for _ in 0..NULL_TRIES {
        let c0 = counters.read();
        let t0 = clock();
        let t1 = clock();
        let c1 = counters.read();
        times.push(t1.saturating_sub(t0) as f64);
        for (i, d) in difference(&c0, &c1).iter().enumerate() {
            if let Some(d) = d {
                sums[i] += d;
                seen[i] += 1;
            }
        }
    }
    times.sort_by(f64::total_cmp);
    Null {
        elapsed_ns: crate::stats::median_sorted(&times),
        counters: sums
            .iter()
            .zip(&seen)
            .map(|(&s, &n)| (n > 0).then(|| s as f64 / n as f64))
            .collect(),
    }
}

/// `/proc/interrupts` and `/proc/softirqs` now, if readable.
fn irq_tables() -> Option<(irq::IrqTable, irq::IrqTable)> {
    let i = std::fs::read_to_string("/proc/interrupts").ok()?;
    let s = std::fs::read_to_string("/proc/softirqs").ok()?;
    Some((irq::parse(&i).ok()?, irq::parse(&s).ok()?))
}

/// Runs `op` on the calling thread: calibration, warm-up, the timed
/// iterations, then as many counted ones. `cpus` are the CPUs whose
/// interrupts count (the benchmark's own; all when empty).
///
/// The times come from iterations with no counter open: a software perf
/// event on a thread is switched out and in with it, which made a
/// same-CPU pipe round trip 20–40 % slower here (`perf stat` on
/// `perf bench sched pipe` shows the same). The counters are then opened
/// for a second pass of the same iterations, read around each, and closed.
pub fn measure(
    op: &mut dyn Operation,
    null: &Null,
    options: &Options,
    cpus: &[u32],
) -> Result<Measurement, BenchError> {
    let ops = match options.ops {
        Some(n) => n.max(1),
        None => calibrate(op, null.elapsed_ns, options.min_iteration_ns as f64)?,
    };
    let warm_from = clock();
    let mut warmed = 0;
    while warmed < options.warmup || clock().saturating_sub(warm_from) < options.min_warmup_ns {
        op.run(ops)?;
        warmed += 1;
    }
    let iterations = options.iterations.max(1);
    let mut elapsed = Vec::with_capacity(iterations);
    let irq_before = irq_tables();
    for _ in 0..iterations {
        op.before_iteration(ops)?;
        let t0 = clock();
        op.run(ops)?;
        let t1 = clock();
        elapsed.push(t1.saturating_sub(t0));
    }
    let irq_after = irq_tables();

    let mut per_op: Vec<Vec<f64>> = vec![Vec::with_capacity(iterations); COUNTERS.len()];
    {
        let counters = Counters::open();
        for _ in 0..iterations {
            op.before_iteration(ops)?;
            let c0 = counters.read();
            op.run(ops)?;
            let c1 = counters.read();
            for (i, d) in difference(&c0, &c1).iter().enumerate() {
                if let (Some(d), Some(z)) = (d, null.counters.get(i).copied().flatten()) {
                    per_op[i].push(per_op_counter(*d, z, ops));
                }
            }
        }
    }
    let stats = op_stats(&elapsed, ops, null.elapsed_ns)?;
    let n = iterations as f64;
    let (int, non_timer, soft) = match (irq_before, irq_after) {
        (Some((i0, s0)), Some((i1, s1))) => {
            let IrqDelta { total, non_timer } = irq::delta(&i0, &i1, cpus);
            let soft = irq::delta(&s0, &s1, cpus).total;
            (
                Some(total as f64 / n),
                Some(non_timer as f64 / n),
                Some(soft as f64 / n),
            )
        }
        _ => (None, None, None),
    };
    Ok(Measurement {
        stats,
        counters: COUNTERS
            .iter()
            .zip(per_op)
            .map(|(spec, mut v)| CounterFigure {
                name: spec.name,
                per_op: (v.len() == iterations).then(|| {
                    v.sort_by(f64::total_cmp);
                    crate::stats::median_sorted(&v)
                }),
            })
            .collect(),
        interrupts_per_iteration: int,
        non_timer_interrupts_per_iteration: non_timer,
        softirqs_per_iteration: soft,
    })
}

/// Operations per iteration: one operation timed, then twice as many until
/// a run lasts a millisecond (or 2^20 operations), giving an estimate of
/// one operation; then [`ops_per_iteration`].
fn calibrate(
    op: &mut dyn Operation,
    overhead_ns: f64,
    min_iteration_ns: f64,
) -> Result<u64, BenchError> {
    let mut n = 1u64;
    loop {
        op.before_iteration(n)?;
        let t0 = clock();
        op.run(n)?;
        let t = clock().saturating_sub(t0) as f64;
        if t >= 1_000_000.0 || n >= 1 << 20 {
            let estimate = (t - overhead_ns).max(0.0) / n as f64;
            return Ok(ops_per_iteration(
                estimate.max(0.1),
                overhead_ns,
                min_iteration_ns,
            ));
        }
        n *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operation that spins on the clock for a fixed time per op.
    struct Spin(u64);
    impl Operation for Spin {
        fn run(&mut self, ops: u64) -> Result<(), BenchError> {
            for _ in 0..ops {
                let end = clock() + self.0;
                while clock() < end {
                    std::hint::spin_loop();
                }
            }
            Ok(())
        }
    }

    /// A 2 µs operation measures as about 2 µs per operation (a loose
    /// bound: the VM may stall a few iterations, and the median is what is
    /// checked), with iterations long enough to dwarf the clock.
    #[test]
    fn a_known_operation_measures_what_it_costs() {
        let counters = Counters::open();
        let null = null(&counters);
        assert!(
            null.elapsed_ns > 0.0 && null.elapsed_ns < 100_000.0,
            "{null:?}"
        );
        let m = measure(&mut Spin(2_000), &null, &Options::default(), &[]).unwrap();
        eprintln!("{:?}", m.stats);
        assert_eq!(m.stats.iterations, DEFAULT_ITERATIONS);
        assert!(m.stats.ops_per_iteration >= 5, "{:?}", m.stats);
        assert!(
            m.stats.median_ns > 1_900.0 && m.stats.median_ns < 3_000.0,
            "{:?}",
            m.stats
        );
        assert!(m.stats.overhead_share < 0.01, "{:?}", m.stats);
        assert_eq!(m.counters.len(), COUNTERS.len());
        if counters.availability()[0].unavailable.is_none() {
            // task-clock per operation: about the 2 µs spun.
            let tc = m.counters[0].per_op.unwrap();
            assert!(tc > 1_500.0 && tc < 3_000.0, "{tc}");
        }
        assert!(m.interrupts_per_iteration.is_some());
    }

    #[test]
    fn fixed_operations_are_used_as_given() {
        let null = Null {
            elapsed_ns: 0.0,
            counters: vec![None; COUNTERS.len()],
        };
        let options = Options {
            iterations: 3,
            warmup: 0,
            ops: Some(7),
            ..Options::default()
        };
        let m = measure(&mut Spin(100), &null, &options, &[]).unwrap();
        assert_eq!(m.stats.ops_per_iteration, 7);
        assert_eq!(m.stats.iterations, 3);
        assert!(m.counters.iter().all(|c| c.per_op.is_none()));
    }
}
