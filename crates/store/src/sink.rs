//! The store as a [`Sink`]: what `run`, `suite`, `micro` and the monitor
//! write through (the monitor's windows wrap it).

use latscope_model::{
    Capabilities, CellMeta, MicroContext, MicroResult, Nanos, RunId, RunMeta, RunStatus, SystemInfo,
};
use latscope_record::{CellKey, Checkpoint, Sink, SinkError};

use crate::{CellId, Store, StoreError};

impl From<StoreError> for SinkError {
    fn from(e: StoreError) -> SinkError {
        SinkError(e.to_string())
    }
}

impl Sink for Store {
    fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId, SinkError> {
        Ok(Store::create_run(self, meta, system, caps)?)
    }

    fn update_capabilities(&mut self, run: RunId, caps: &Capabilities) -> Result<(), SinkError> {
        Ok(Store::update_capabilities(self, run, caps)?)
    }

    fn add_cell(&mut self, run: RunId, meta: &CellMeta) -> Result<CellKey, SinkError> {
        Ok(CellKey(Store::add_cell(self, run, meta)?.0))
    }

    fn checkpoint(&mut self, run: RunId, cell: CellKey, cp: &Checkpoint) -> Result<(), SinkError> {
        Ok(self.write_checkpoint(run, CellId(cell.0), cp)?)
    }

    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        let mut notes = notes.to_vec();
        let reconnects = self.reconnects();
        if reconnects > 0 {
            notes.push(format!(
                "the connection to the PostgreSQL store was lost and opened again {reconnects} time(s) during the run"
            ));
        }
        Ok(Store::finish_run(self, run, status, ended_unix, &notes)?)
    }

    fn set_micro_context(&mut self, run: RunId, context: &MicroContext) -> Result<(), SinkError> {
        Ok(Store::set_micro_context(self, run, context)?)
    }

    fn add_micro_cell(
        &mut self,
        run: RunId,
        meta: &CellMeta,
        result: &MicroResult,
    ) -> Result<CellKey, SinkError> {
        Ok(CellKey(Store::add_micro_cell(self, run, meta, result)?.0))
    }
}
