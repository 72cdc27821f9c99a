//! latscope-monitor's integration tests as one binary (linked once, not three
//! times).
#![allow(clippy::unwrap_used)]

mod common;

mod exposition;
mod http;
mod tls;
