//! The background load of a cell: started (and warmed up) before the probe,
//! watched while it runs, characterized once a second, stopped at the end.

use latscope_model::CpuSet;
use latscope_platform::StopSignals;
use latscope_store::{CellId, Store};

use crate::plan::CellPlan;

/// Checks what a cell's workload needs before anything is measured.
pub fn check(cell: &CellPlan) -> Result<(), String> {
    match cell.workload.as_str() {
        "none" | "idle" => Ok(()),
        other => Err(format!("--workload: unknown workload '{other}'")),
    }
}

/// A running workload (or none).
pub struct CellLoad {
    died: Option<String>,
}

pub fn start(
    cell: &CellPlan,
    _online: &CpuSet,
    _signals: &StopSignals,
) -> anyhow::Result<CellLoad> {
    check(cell).map_err(anyhow::Error::msg)?;
    Ok(CellLoad { died: None })
}

impl CellLoad {
    /// Once a second: characterization sample and liveness.
    pub fn tick(&mut self) {}

    /// Why the load stopped early, if it did.
    pub fn died(&self) -> Option<String> {
        self.died.clone()
    }

    pub fn checkpoint(&mut self, _store: &mut Store, _cell: CellId) -> anyhow::Result<()> {
        Ok(())
    }

    /// Stores the characterization and stops the load.
    pub fn finish(mut self, _store: &mut Store, _cell: CellId) -> anyhow::Result<()> {
        self.stop();
        Ok(())
    }

    pub fn stop(&mut self) {}
}
