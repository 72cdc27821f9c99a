//! The entry point of a run of probe cells. The lifecycle itself (prepare,
//! cells, finish, rescue) is `lifecycle`, shared with the microbenchmarks.

use std::ops::Range;

use latscope_model::CpuSet;

use crate::cell::{run_together, CellOutcome};
use crate::config::{CellSpec, RunConfig};
use crate::ctx::RunCtx;
use crate::error::EngineError;
use crate::lifecycle::{self, Work};
use crate::load;
use crate::outcome::{Env, RunOutcome};
use crate::sink::Sink;
use crate::together;

/// Runs `cells` one after the other as one run in `sink`. Stops early on a
/// stop request or a failed cell: every finished cell, and the partial one,
/// are kept. Errors before measuring (a workload that cannot start, a probe
/// that cannot start) end the run as failed and come back as `Err`.
pub fn run(
    config: &RunConfig,
    cells: &[CellSpec],
    online: &CpuSet,
    sink: &mut dyn Sink,
    env: Env<'_>,
) -> Result<RunOutcome, EngineError> {
    let groups = together::groups(cells);
    lifecycle::execute(config, &mut ProbeCells { cells, groups }, online, sink, env)
}

/// Cells that each measure a probe under a workload, one group after the
/// other: a group is one cell, or cells measured at once.
struct ProbeCells<'c> {
    cells: &'c [CellSpec],
    groups: Vec<Range<usize>>,
}

impl Work for ProbeCells<'_> {
    fn check(&self) -> Result<(), EngineError> {
        for c in self.cells {
            c.probe.validate().map_err(EngineError::Config)?;
            load::check(c).map_err(EngineError::Config)?;
        }
        for g in &self.groups {
            together::check(&self.cells[g.clone()]).map_err(EngineError::Config)?;
        }
        Ok(())
    }

    fn measured_cpus(&self) -> CpuSet {
        self.cells.iter().flat_map(|c| c.probe.cpus()).collect()
    }

    fn cells(&self) -> usize {
        self.groups.len()
    }

    fn run_cell(
        &mut self,
        ctx: &mut RunCtx<'_, '_>,
        index: usize,
    ) -> Result<CellOutcome, EngineError> {
        run_together(ctx, &self.cells[self.groups[index].clone()])
    }
}
