//! Everything latscope does to and asks of the operating system.
//!
//! This is the one crate allowed `unsafe`: each block calls into libc and
//! carries a `// SAFETY:` comment saying why the call is sound. Everything
//! that changes the system is an RAII guard that restores what it changed
//! ([`DmaLatencyGuard`]); thread settings ([`set_affinity`],
//! [`set_scheduler`], [`set_timer_slack`]) apply to the calling thread only
//! and end with it.
//!
//! The timer services under test ([`timers`]) are thin wrappers with no
//! allocation, so a measuring loop that uses them makes no system call but
//! the one being measured and a clock read.
#![allow(unsafe_code)]

pub mod bpf;
pub mod caps;
mod clock;
mod dma;
mod error;
pub mod files;
pub mod granularity;
pub mod hazards;
mod mount;
pub mod net;
pub mod os_ops;
pub mod pages;
pub mod perf;
pub mod perf_self;
pub mod primitives;
pub mod process;
pub mod procstat;
pub mod pthread_mutex;
mod sched;
mod sched_class;
mod signals;
mod sysfs;
pub mod sysinfo;
pub mod timers;
pub mod tsc;
pub mod veth;
pub mod wake;

pub use clock::{clock_read_cost, monotonic_ns, realtime_ns, spin_until, thread_cpu_ns};
pub use dma::DmaLatencyGuard;
pub use error::PlatformError;
pub use mount::{mount_tracefs, MountGuard};
pub use sched::{
    block_signals_in_this_thread, current_tid, lock_memory, one_heap, online_cpus, set_affinity,
    set_affinity_set, set_scheduler, set_timer_slack, timer_slack, SchedPolicy,
};
pub use sched_class::{rr_interval, set_nice, DeadlineParams};
pub use signals::StopSignals;
