//! The *Null* benchmark of Chen et al. (§3.4): what reading each time
//! source costs, the floor under every other figure. One operation is one
//! read.

use std::hint::black_box;

use latscope_platform::perf_self::SelfCounter;
use latscope_platform::primitives::{
    clock_gettime_syscall, clock_gettime_vdso, gettimeofday_us, rdtscp,
};
use latscope_platform::tsc::rdtsc;

use super::benchmark::Benchmark;
use crate::bench::{BenchError, Operation};
use crate::counters::Counters;

/// Reads a time source `ops` times.
struct Reads(fn() -> u64);

impl Operation for Reads {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            black_box((self.0)());
        }
        Ok(())
    }
}

/// Reads the task-clock counter by `read` (a system call per read).
struct CounterReads(Counters);

impl Operation for CounterReads {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            black_box(self.0.read_task_clock());
        }
        Ok(())
    }
}

/// Reads a hardware counter with `rdpmc` (no system call).
struct RdpmcReads(SelfCounter);

impl Operation for RdpmcReads {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            black_box(self.0.read());
        }
        Ok(())
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    vec![
        Benchmark::new("null", "rdtsc", "one rdtsc", false, |_| {
            Ok(Box::new(Reads(rdtsc)))
        }),
        Benchmark::new("null", "rdtscp", "one rdtscp", false, |_| {
            Ok(Box::new(Reads(rdtscp)))
        }),
        Benchmark::new(
            "null",
            "clock_gettime",
            "one clock_gettime(CLOCK_MONOTONIC) through the vDSO",
            false,
            |_| Ok(Box::new(Reads(clock_gettime_vdso))),
        ),
        Benchmark::new(
            "null",
            "clock_gettime_syscall",
            "one clock_gettime(CLOCK_MONOTONIC) by system call",
            false,
            |_| Ok(Box::new(Reads(clock_gettime_syscall))),
        ),
        Benchmark::new("null", "gettimeofday", "one gettimeofday", false, |_| {
            Ok(Box::new(Reads(gettimeofday_us)))
        }),
        Benchmark::new(
            "null",
            "perf_read",
            "one read() of a perf counter (task-clock)",
            false,
            |_| {
                let c = Counters::open();
                if let Some(why) = &c.availability()[0].unavailable {
                    return Err(BenchError::Setup(format!("no perf counter: {why}")));
                }
                Ok(Box::new(CounterReads(c)))
            },
        ),
        Benchmark::new(
            "null",
            "perf_rdpmc",
            "one read of a hardware counter by rdpmc through its mmap page",
            false,
            |_| {
                let c = SelfCounter::open().map_err(|why| {
                    BenchError::Setup(format!("needs a hardware counter readable by rdpmc: {why}"))
                })?;
                Ok(Box::new(RdpmcReads(c)))
            },
        ),
    ]
}
