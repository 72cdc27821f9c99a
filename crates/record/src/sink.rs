//! The contract of where a run's results go while it runs: the [`Sink`]
//! that the engine writes through, and the [`Checkpoint`] it writes.
//!
//! It lives here, below both the engine (which writes) and the store (which
//! is one sink), so that neither depends on the other: the store implements
//! [`Sink`], the engine's in-memory mirror does, and the decorators (the
//! threshold actions, the monitor's windows) wrap an inner sink and pass
//! every call on. A sink's failure is one line ([`SinkError`]); the engine
//! keeps measuring and tries again at the next checkpoint.

use latscope_model::{
    Capabilities, CellMeta, Episode, EpisodeWindow, MicroContext, MicroResult, Nanos,
    NoiseCpuStats, RunId, RunMeta, RunStatus, SystemInfo, TimerCpuStats, TraceSummary, UdpStats,
    WorkloadStats,
};

use crate::{MetricResult, TimelineChunk};

/// A sink's failure, as the one line a user reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SinkError(pub String);

/// A sink's name for a cell (the store's row id; the mirror's index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellKey(pub i64);

/// Everything a checkpoint of one cell carries. Fields left empty (or
/// `None`) leave what the sink holds for them as it is.
#[derive(Clone, Debug, Default)]
pub struct Checkpoint {
    /// How long the cell has measured so far.
    pub duration: Nanos,
    /// CLOCK_REALTIME of the checkpoint (the run's `checkpoint_unix_ns`).
    pub now_unix: Nanos,
    /// Every metric as measured so far: replaces the stored rows.
    pub metrics: Vec<MetricResult>,
    /// Timeline seconds completed since the last stored checkpoint: appended.
    pub timeline: Vec<TimelineChunk>,
    /// The noise probe's figures per CPU (upserted per CPU).
    pub noise: Vec<NoiseCpuStats>,
    /// The timer probe's early wake-ups per CPU (upserted per CPU).
    pub timer: Vec<TimerCpuStats>,
    /// The UDP probe's counts (replaced).
    pub udp: Option<UdpStats>,
    /// The workload's characterization so far (replaced).
    pub workload: Option<WorkloadStats>,
    /// Episodes (and the event windows kept for some) found so far or since
    /// the last checkpoint (upserted by sequence number).
    pub episodes: Vec<Episode>,
    pub windows: Vec<EpisodeWindow>,
    /// The tracer's summary so far (replaced).
    pub trace_summary: Option<TraceSummary>,
}

/// What receives a run as it is measured. Every call is made from the
/// housekeeping thread.
pub trait Sink {
    /// Records a new run; returns its id.
    fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId, SinkError>;
    /// Replaces the run's capabilities (known once the threads started).
    fn update_capabilities(&mut self, run: RunId, caps: &Capabilities) -> Result<(), SinkError>;
    /// Adds a cell to the run.
    fn add_cell(&mut self, run: RunId, meta: &CellMeta) -> Result<CellKey, SinkError>;
    /// Stores a checkpoint of a cell: all of it, or nothing.
    fn checkpoint(&mut self, run: RunId, cell: CellKey, cp: &Checkpoint) -> Result<(), SinkError>;
    /// Ends the run with its status and notes.
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError>;
    /// Records the context of a microbenchmark run (the Null frame, the
    /// caches, the counters). Sinks that keep no microbenchmarks refuse it.
    fn set_micro_context(&mut self, _run: RunId, _context: &MicroContext) -> Result<(), SinkError> {
        Err(SinkError(
            "this sink keeps no microbenchmark results".into(),
        ))
    }
    /// Adds a finished microbenchmark as a cell with its result: the two
    /// together, or nothing. Sinks that keep no microbenchmarks refuse it.
    fn add_micro_cell(
        &mut self,
        _run: RunId,
        _meta: &CellMeta,
        _result: &MicroResult,
    ) -> Result<CellKey, SinkError> {
        Err(SinkError(
            "this sink keeps no microbenchmark results".into(),
        ))
    }
}

/// A borrowed sink is a sink, so that a decorator can wrap one it does not
/// own.
impl<S: Sink + ?Sized> Sink for &mut S {
    fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId, SinkError> {
        (**self).create_run(meta, system, caps)
    }
    fn update_capabilities(&mut self, run: RunId, caps: &Capabilities) -> Result<(), SinkError> {
        (**self).update_capabilities(run, caps)
    }
    fn add_cell(&mut self, run: RunId, meta: &CellMeta) -> Result<CellKey, SinkError> {
        (**self).add_cell(run, meta)
    }
    fn checkpoint(&mut self, run: RunId, cell: CellKey, cp: &Checkpoint) -> Result<(), SinkError> {
        (**self).checkpoint(run, cell, cp)
    }
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        (**self).finish_run(run, status, ended_unix, notes)
    }
    fn set_micro_context(&mut self, run: RunId, context: &MicroContext) -> Result<(), SinkError> {
        (**self).set_micro_context(run, context)
    }
    fn add_micro_cell(
        &mut self,
        run: RunId,
        meta: &CellMeta,
        result: &MicroResult,
    ) -> Result<CellKey, SinkError> {
        (**self).add_micro_cell(run, meta, result)
    }
}
