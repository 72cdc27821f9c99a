//! latscope-platform's tests of the live kernel as one binary (this crate is
//! optimised in every build: one optimised test binary instead of four).
//! `one_heap` stays a binary of its own: it counts the process's heaps.
#![allow(clippy::unwrap_used)]

use std::sync::{Mutex, MutexGuard};

mod bpf_live;
mod perf_live;
mod procstat_live;
mod rr_quantum;

static KERNEL: Mutex<()> = Mutex::new(());

/// Held by every test that uses the live kernel (tracepoints, BPF,
/// scheduling): they run one at a time, so that none disturbs another's
/// measurement (in binaries of their own, the files never overlapped).
pub fn kernel() -> MutexGuard<'static, ()> {
    KERNEL.lock().unwrap_or_else(|e| e.into_inner())
}
