//! Exports of a whole run to the formats other tools read: CSV tables,
//! HdrHistogram interval logs, cyclictest's histogram text and JSON file
//! (rt-tests JSON) and the Prometheus text exposition. Pure functions: a [`RunResult`] in, text out.
//!
//! [`RunResult`]: latscope_stats::RunResult

mod csv;
mod cyclictest;
pub mod exposition;
mod hdr;
mod prometheus;
mod rt_tests_json;

pub use self::csv::{buckets_csv, summaries_csv};
pub use self::cyclictest::{cyclictest_histogram, DEFAULT_MAX_US};
pub use self::hdr::{hdr_checkpoint_log, hdr_interval_log, to_hdr, HdrUnit};
pub use self::prometheus::{
    prometheus_family, prometheus_help, prometheus_text, PROMETHEUS_BUCKETS_NS,
};
pub use self::rt_tests_json::{rt_tests_json, RtTestsUnit};

/// Why an export could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The run holds no data of the kind the format carries.
    #[error("{0}")]
    NoData(String),
    /// The HdrHistogram encoder failed.
    #[error("cannot encode a histogram for the HdrHistogram log: {0}")]
    Hdr(String),
}

/// The CPU as exports print it: its number, or `all` for system-wide metrics.
pub(crate) fn cpu_label(cpu: Option<latscope_model::CpuId>) -> String {
    cpu.map_or_else(|| "all".to_string(), |c| c.to_string())
}
