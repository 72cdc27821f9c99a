//! The entry point of a run of probe cells, what a run gives back, and the
//! machine-facing pieces a caller supplies. The lifecycle itself (prepare,
//! cells, finish, rescue) is `lifecycle`, shared with the microbenchmarks.

use std::path::PathBuf;
use std::sync::Arc;

use latscope_model::{
    CpuSet, MicroContext, MicroResult, Nanos, RunId, RunMeta, RunStatus, SystemInfo,
};
use latscope_probes::Clock;
use latscope_record::RunResult;

use crate::cell::{run_cell, CellOutcome};
use crate::config::{CellSpec, RunConfig};
use crate::ctx::RunCtx;
use crate::error::EngineError;
use crate::lifecycle::{self, Work};
use crate::load;
use crate::observer::Observer;
use crate::sink::{Sink, SinkError};
use crate::stop::Stop;

/// What a run gives back.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run's id in the sink (when the sink could create it).
    pub run_id: RunId,
    /// How the measurement ended: complete, interrupted, or failed.
    pub status: RunStatus,
    /// Everything measured, as kept in memory beside the sink: complete
    /// even when the sink failed. Its id is the run's in the sink.
    pub result: RunResult,
    /// A microbenchmark run's context and results, as kept in memory.
    pub micro_context: Option<MicroContext>,
    pub micro: Vec<MicroResult>,
    /// The sink's first failure, when part of the run could not be stored
    /// (the rest is in `result`).
    pub sink_error: Option<SinkError>,
    /// When the sink failed and the caller gave a [`Rescue`]: where the
    /// whole run was written, or why it could not be.
    pub rescued: Option<Result<PathBuf, String>>,
    /// The largest value of the probes' main figure over every cell
    /// (timer latency, noise gap, UDP path): what `--fail-above` tests.
    pub max_latency: Nanos,
    /// When `--stop-above` ended the run: the value that exceeded it.
    pub stopped_above: Option<Nanos>,
}

/// Writes the whole run somewhere else when the sink failed (the CLI: a
/// rescue file of the run's JSON beside the store); returns where.
pub type Rescue<'a> = &'a dyn Fn(&RunOutcome) -> Result<PathBuf, String>;

/// The machine-facing pieces of a run that tests replace.
pub struct Env<'a> {
    pub clock: Arc<dyn Clock>,
    pub stop: Stop,
    pub observer: &'a mut dyn Observer,
    /// The system snapshot to record (taken from the machine when `None`).
    pub system: Option<SystemInfo>,
    /// Where the whole run goes when the sink fails (`None`: only into the
    /// outcome).
    pub rescue: Option<Rescue<'a>>,
}

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
    lifecycle::execute(config, &mut ProbeCells(cells), online, sink, env)
}

/// Cells that each measure a probe under a workload.
struct ProbeCells<'c>(&'c [CellSpec]);

impl Work for ProbeCells<'_> {
    fn check(&self) -> Result<(), EngineError> {
        for c in self.0 {
            c.probe.validate().map_err(EngineError::Config)?;
            load::check(c).map_err(EngineError::Config)?;
        }
        Ok(())
    }

    fn measured_cpus(&self) -> CpuSet {
        self.0.iter().flat_map(|c| c.probe.cpus()).collect()
    }

    fn cells(&self) -> usize {
        self.0.len()
    }

    fn run_cell(
        &mut self,
        ctx: &mut RunCtx<'_, '_>,
        index: usize,
    ) -> Result<CellOutcome, EngineError> {
        run_cell(ctx, &self.0[index])
    }
}

/// The metadata of a run that starts now: `Running`, this process, this
/// boot, this host and version.
pub fn running_meta(
    started_unix_ns: Nanos,
    command_line: Vec<String>,
    system: &latscope_model::SystemInfo,
) -> RunMeta {
    RunMeta {
        id: RunId(0),
        started_unix_ns,
        ended_unix_ns: None,
        checkpoint_unix_ns: None,
        status: RunStatus::Running,
        command_line,
        pid: std::process::id(),
        boot_id: std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        hostname: system.hostname.clone(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        notes: Vec::new(),
        source: None,
    }
}
