//! The end-to-end tests of the real `latscope` binary, as one test binary:
//! one file per subject, each a module here, sharing `common`. One binary
//! compiles `common` and links the dependencies once, not once per file;
//! `cargo test -p latscope --test e2e run_e2e::` runs one file's tests.
//! Tests that measure take `common::serial()`, so that measurements of all
//! files run one at a time; so do the files whose tests do not measure but
//! keep a CPU busy for a while (the source scans, `cargo metadata`, a
//! simulated week of store windows, exports): only a few short tests that
//! start latscope once to see it refuse something run beside a
//! measurement.

#![allow(clippy::unwrap_used)]

mod common;

mod actions_e2e;
mod app_e2e;
mod architecture;
mod bad_input;
mod bench_scripts;
mod check_e2e;
mod compare_e2e;
mod deferred_e2e;
mod export_e2e;
mod export_formats_e2e;
mod export_hdr_e2e;
mod forecast_e2e;
mod held_e2e;
mod hosts_e2e;
mod import_e2e;
mod known_answer;
mod limits_e2e;
mod micro_e2e;
mod monitor_e2e;
mod monitor_footprint_e2e;
mod monitor_prometheus_e2e;
mod monitor_rules_e2e;
mod monitor_tls_e2e;
mod monitor_windows_e2e;
mod noise_e2e;
mod policies_e2e;
mod postgres_e2e;
mod postgres_restart_e2e;
mod postgres_stall_e2e;
mod priorities_e2e;
mod push_e2e;
mod recurring_e2e;
mod report_e2e;
mod rt_load_e2e;
mod run_e2e;
mod sched_e2e;
mod shared_priority_e2e;
mod source_shape;
mod store_faults;
mod study_e2e;
mod timer_slack_e2e;
mod trace_e2e;
mod udp_e2e;
mod workload_e2e;
