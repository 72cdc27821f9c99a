//! latscope-report's snapshot tests as one binary (linked once, not seven
//! times).
#![allow(clippy::unwrap_used)]

mod common;

mod export_snapshots;
mod noise_snapshots;
mod perfetto;
mod snapshots;
mod trace_snapshots;
mod udp_snapshots;
mod workload_snapshots;
