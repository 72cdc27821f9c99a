//! Microbenchmarks: what the operating system's primitives cost on this
//! machine, in the manner of Chen et al., "The Measured Performance of
//! Personal Computer Operating Systems" (TOCS 14(1), 1996), sections 3–4:
//! each benchmark repeated over many iterations, every iteration long
//! enough to dwarf the clock read, the cost of reading the clock (their
//! *Null* benchmark) measured and subtracted, and the statistics taken over
//! iterations rather than over single operations.
//!
//! This crate holds the pure parts, deterministic and tested without a
//! kernel:
//!
//! * [`stats`]: per-operation statistics over iterations, with the
//!   measurement overhead subtracted;
//! * [`levels`]: the cache levels read from a memory-latency curve;
//! * [`irq`]: interrupts and softirqs during a benchmark, from
//!   `/proc/interrupts` and `/proc/softirqs`, the clock told apart.

pub mod irq;
pub mod levels;
pub mod stats;
