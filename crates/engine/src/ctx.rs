//! The state every cell of a run shares while the run goes on, and the
//! bookkeeping of the sink's failures: apart from the run's lifecycle
//! (`run`) so that the cell (`cell`), which takes it, need not import the
//! lifecycle back.

use std::sync::Arc;

use latscope_model::{Capabilities, CpuSet, Namer, Nanos, RunId, SystemInfo};
use latscope_probes::Clock;

use crate::config::RunConfig;
use crate::error::EngineError;
use crate::observer::Observer;
use crate::sink::{CellKey, MemorySink, Sink, SinkError};
use crate::stop::Stop;

/// The state every cell of a run shares.
pub(crate) struct RunCtx<'a, 'e> {
    pub config: &'a RunConfig,
    pub sink: &'a mut dyn Sink,
    pub mirror: MemorySink,
    pub run_id: RunId,
    pub mirror_run: RunId,
    pub capabilities: Capabilities,
    pub system: SystemInfo,
    pub online: CpuSet,
    pub clock: Arc<dyn Clock>,
    pub stop: Stop,
    pub observer: &'e mut dyn Observer,
    /// How the notices name the run's settings ([`crate::Env::names`]).
    pub names: &'e dyn Namer,
    pub clock_read_ns: u64,
    /// The first sink failure of the run.
    pub sink_error: Option<SinkError>,
    /// Checkpoints the sink refused (a lost connection, a full disk).
    pub sink_failures: u32,
    /// The last checkpoint the sink was given failed, and none since
    /// succeeded: it owes the run something.
    pub sink_owes: bool,
    /// The sink lost something no later checkpoint carries again (a call
    /// other than a checkpoint failed, or the bounded buffer dropped data).
    pub sink_lost: bool,
    /// The tracing backend's line as last told (told again when a cell's
    /// differs).
    pub trace_line: Option<String>,
    /// The capability lines have been told (after the first cell's
    /// threads tried what they could get).
    pub told: bool,
    /// The largest main figure seen so far, over every cell.
    pub max_latency: Nanos,
    /// Set when `--stop-above` stopped the run: the value that exceeded it.
    pub stopped_above: Option<Nanos>,
}

impl RunCtx<'_, '_> {
    /// Notes a sink failure that no later call repairs (the first failure
    /// is kept for the outcome).
    pub fn sink_failed(&mut self, e: SinkError) {
        self.sink_lost = true;
        self.first_sink_failure(e);
    }

    /// Notes a checkpoint the sink refused: the next checkpoint carries what
    /// it held again (cumulative histograms whole, appended data from the
    /// pending buffer), so the run is whole once one succeeds.
    pub fn checkpoint_failed(&mut self, e: SinkError) {
        self.sink_failures += 1;
        self.sink_owes = true;
        self.first_sink_failure(e);
    }

    /// Notes a checkpoint the sink took.
    pub fn checkpoint_stored(&mut self) {
        self.sink_owes = false;
    }

    fn first_sink_failure(&mut self, e: SinkError) {
        if self.sink_error.is_none() {
            self.observer.sink_failed(&e);
            self.sink_error = Some(e);
        }
    }

    /// Adds a cell to the sink and the mirror.
    pub fn add_cell(
        &mut self,
        meta: &latscope_model::CellMeta,
    ) -> Result<(Option<CellKey>, CellKey), EngineError> {
        let mirror = self
            .mirror
            .add_cell(self.mirror_run, meta)
            .map_err(EngineError::Sink)?;
        let stored = match self.sink.add_cell(self.run_id, meta) {
            Ok(k) => Some(k),
            Err(e) => {
                self.sink_failed(e);
                None
            }
        };
        Ok((stored, mirror))
    }

    /// Records a microbenchmark run's context in the sink and the mirror.
    pub fn set_micro_context(&mut self, context: &latscope_model::MicroContext) {
        let _ = self.mirror.set_micro_context(self.mirror_run, context);
        if let Err(e) = self.sink.set_micro_context(self.run_id, context) {
            self.sink_failed(e);
        }
    }

    /// Adds a measured microbenchmark (cell and result) to the sink and the
    /// mirror.
    pub fn add_micro_cell(
        &mut self,
        meta: &latscope_model::CellMeta,
        result: &latscope_model::MicroResult,
    ) -> Result<(), EngineError> {
        self.mirror
            .add_micro_cell(self.mirror_run, meta, result)
            .map_err(EngineError::Sink)?;
        if let Err(e) = self.sink.add_micro_cell(self.run_id, meta, result) {
            self.sink_failed(e);
        }
        Ok(())
    }
}
