//! Microbenchmarks: what the operating system's primitives cost on this
//! machine, in the manner of Chen et al., "The Measured Performance of
//! Personal Computer Operating Systems" (TOCS 14(1), 1996), sections 3–4:
//! each benchmark repeated over many iterations, every iteration long
//! enough to dwarf the clock read, the cost of reading the clock (their
//! *Null* benchmark) measured and subtracted, and the statistics taken over
//! iterations rather than over single operations.
//!
//! * [`session`]: a whole `latscope micro` run — the benchmarks chosen by
//!   name, the thread pinned, the *Null* frame measured once, each
//!   benchmark measured in turn and handed over as a `MicroResult`;
//! * [`bench`]: running one benchmark — calibration, warm-up, the timed
//!   iterations (no counter open) with the interrupts counted over all,
//!   then as many counted iterations, the *Null* correction;
//! * [`ops`]: the benchmarks of the groups `null`, `syscall`, `ctxswitch`,
//!   `sync`, `process`, `memory`, `vm`, `io`, `fs`, `net` and `blit`;
//! * [`caches`]: the caches sysfs lists, beside the levels the memory
//!   curve shows;
//! * [`counters`]: the perf counters of the measuring thread, a counter the
//!   machine lacks reported as unavailable, never as 0;
//!
//! and the pure parts, deterministic and tested without a kernel:
//!
//! * [`stats`]: per-operation statistics over iterations, with the
//!   measurement overhead subtracted;
//! * [`irq`]: interrupts and softirqs during a benchmark, from
//!   `/proc/interrupts` and `/proc/softirqs`, the clock told apart.
//!
//! The cache levels and the comparison of two runs are in
//! `latscope_stats::micro`.

pub mod bench;
pub mod caches;
pub mod counters;
pub mod irq;
pub mod ops;
pub mod session;
pub mod stats;
