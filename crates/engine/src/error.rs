//! Why a run could not be made.

use latscope_probes::ProbeError;

use crate::request::RequestError;
use crate::sink::SinkError;

/// A run that could not start, or a cell that could not: one line each.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A setting no probe or workload accepts (a usage error).
    #[error("{0}")]
    Config(RequestError),
    /// The sink refused the run before anything was measured.
    #[error("{0}")]
    Sink(SinkError),
    // Transparent: the line is the probe's, and its source chain is the
    // probe error's own (with "{0}" and a source, a chain printed whole
    // said the probe's line twice).
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The microbenchmarks' session could not start.
    #[error(transparent)]
    Micro(#[from] latscope_micro::session::SessionError),
    /// The threshold actions' thread could not start.
    #[error("cannot start the threshold actions' thread: {0}")]
    Actions(std::io::Error),
    #[error("cannot start workload {workload}: {reason}")]
    Workload { workload: String, reason: String },
}
