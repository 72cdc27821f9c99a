//! Exports of a whole run to the formats other tools read: CSV tables,
//! HdrHistogram interval logs, cyclictest's histogram text and JSON file
//! (rt-tests JSON), the Prometheus text exposition of a stored run, and
//! the run's JSON and an episode's Perfetto trace, all behind one
//! interface ([`export`]). Pure functions: a [`RunResult`] in, bytes out.
//! The live `/metrics` exposition is where it is served, in the monitor
//! (`latscope_monitor::exposition`).
//!
//! [`RunResult`]: latscope_stats::RunResult

mod choice;
mod csv;
mod cyclictest;
mod format;
mod hdr;
mod prometheus;
mod rt_tests_json;

pub use self::choice::{ChoiceError, FormatChoice, FormatName};
pub use self::csv::{buckets_csv, summaries_csv};
pub use self::cyclictest::{cyclictest_histogram, DEFAULT_MAX_US};
pub use self::format::{export, ExportInput, Format, MicroInput};
pub use self::hdr::{hdr_checkpoint_log, hdr_interval_log, to_hdr, HdrUnit};
pub use self::prometheus::{
    label_value as prometheus_label_value, prometheus_family, prometheus_help, prometheus_text,
    seconds as prometheus_seconds, PROMETHEUS_BUCKETS_NS,
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
    /// A micro run asked for a format that holds latency histograms (it
    /// exports as JSON or CSV).
    #[error("a micro run exports as JSON or CSV (the other formats hold latency histograms)")]
    MicroFormat,
    /// The Perfetto trace of an episode the run does not have (the
    /// message says which episodes it has).
    #[error("{0}")]
    NoEpisode(String),
    /// The kernel events of episode `.0` were not kept.
    #[error("the kernel events of episode {0} were not kept")]
    WindowNotKept(u32),
    /// The document could not be encoded as JSON.
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The output could not be written.
    #[error("cannot write the export: {0}")]
    Io(#[from] std::io::Error),
}

/// The CPU as exports print it: its number, or `all` for system-wide metrics.
pub(crate) fn cpu_label(cpu: Option<latscope_model::CpuId>) -> String {
    cpu.map_or_else(|| "all".to_string(), |c| c.to_string())
}
