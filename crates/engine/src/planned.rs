//! A planned run: the plan's run-wide settings as the lifecycle's
//! configuration, and its threshold actions, when it has any, as a
//! decorator of the sink (their thread on the housekeeping CPUs).

use std::sync::Arc;

use latscope_model::CpuSet;

use crate::actions::{ActionSink, Actions, SnapshotDoc};
use crate::config::{CellSpec, Guards, RunConfig};
use crate::cpus::housekeeping_cpus;
use crate::error::EngineError;
use crate::outcome::{Env, RunOutcome};
use crate::request::RunPlan;
use crate::sink::Sink;

/// What a caller adds to a plan to run it.
pub struct PlanRun {
    /// Hold /dev/cpu_dma_latency at 0 while measuring.
    pub dma_latency: bool,
    /// The command line recorded with the run.
    pub command_line: Vec<String>,
    /// Where the threshold actions' failures are said, one line each.
    pub say: Arc<dyn Fn(&str) + Send + Sync>,
    /// The document a `snapshot` action writes.
    pub snapshot: SnapshotDoc,
}

impl RunPlan {
    /// The lifecycle's configuration of this plan.
    pub fn config(&self, dma_latency: bool, command_line: Vec<String>) -> RunConfig {
        RunConfig {
            checkpoint: self.checkpoint,
            trace: self.trace.clone(),
            guards: Guards {
                dma_latency,
                ..Guards::ALL
            },
            command_line,
            stop_above: self.stop_above,
            unbounded: false,
        }
    }
}

/// Runs `cells` of `plan` as one run in `sink` ([`crate::run`]), through
/// the plan's threshold actions when it has any.
pub fn run_plan<S: Sink>(
    plan: &RunPlan,
    cells: &[CellSpec],
    online: &CpuSet,
    sink: &mut S,
    env: Env<'_>,
    how: PlanRun,
) -> Result<RunOutcome, EngineError> {
    let config = plan.config(how.dma_latency, how.command_line);
    if plan.actions.is_empty() {
        return crate::run(&config, cells, online, sink, env);
    }
    let measured = cells.iter().flat_map(|c| c.probe.cpus()).collect();
    let actions = Actions::start(
        plan.actions.clone(),
        plan.action_limit,
        housekeeping_cpus(online, &measured),
        how.say,
        how.snapshot,
    )
    .map_err(EngineError::Actions)?
    .naming(env.names);
    let mut sink = ActionSink::new(sink, actions);
    crate::run(&config, cells, online, &mut sink, env)
}
