//! `latscope monitor`: the timer probe measuring continuously through the
//! engine's lifecycle, for weeks.
//!
//! * [`config`]: the options, from the command line or a TOML file that
//!   SIGHUP re-reads.
//! * [`windows`]: rolling per-minute and per-hour histograms per metric and
//!   CPU, in constant memory.
//! * [`http`]: the read-only `/metrics` and `/healthz` endpoint, bounded in
//!   connections, request size and time, on the housekeeping CPUs.

pub mod auth;
pub mod config;
pub mod daemon;
pub mod exposition;
pub mod http;
pub mod metrics;
pub mod sink;
pub mod system;
pub mod web_config;
pub mod windows;
