//! What the engine tells the program that drives it while a run goes on:
//! one-line notices (capabilities not obtained, a tracer that could not
//! start), progress for a progress bar, checkpoints. The CLI prints them;
//! tests record them; the engine itself never prints.

use latscope_model::{MicroResult, Nanos};
use latscope_probes::Progress;

use crate::config::CellSpec;
use crate::sink::SinkError;

/// Receives the engine's events, on the housekeeping thread.
pub trait Observer {
    /// A line for the user (stderr in the CLI), without the "latscope: " prefix.
    fn notice(&mut self, _line: &str) {}

    /// A cell starts measuring.
    fn cell_started(&mut self, _cell: &CellSpec) {}

    /// Progress of the running cell, every housekeeping tick (100 ms).
    fn progress(&mut self, _cell: &CellSpec, _elapsed: Nanos, _progress: Progress) {}

    /// A checkpoint of the running cell was taken; `stored` says whether the
    /// sink took it (it is kept and retried when it did not).
    fn checkpoint(&mut self, _cell: &CellSpec, _elapsed: Nanos, _stored: bool) {}

    /// The sink failed for the first time in this run. Measuring goes on;
    /// what the sink could not take is kept in memory, within bounds, and
    /// comes back in the run's outcome with this error.
    fn sink_failed(&mut self, _error: &SinkError) {}

    /// While the sink failed, the bounded buffer of what it owes dropped
    /// its oldest `seconds` timeline seconds and `episodes` episodes (since
    /// the last call), at once as it happens.
    fn sink_dropped(&mut self, _cell: &CellSpec, _seconds: u64, _episodes: u64) {}

    /// The cell ended (its final figures are stored or kept).
    fn cell_finished(&mut self, _cell: &CellSpec) {}

    /// A microbenchmark was measured (or skipped: `result.skipped`).
    fn micro_result(&mut self, _result: &MicroResult) {}
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}
