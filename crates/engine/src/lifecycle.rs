//! One lifecycle for every kind of run: prepare (capabilities detected,
//! guards held), open the run in the sink and in the in-memory mirror,
//! execute the run's cells one after the other (what a cell does is the
//! [`Work`]'s: a probe measured under a workload, or a microbenchmark),
//! finish (status and notes, the sink's failures accounted for, the rescue
//! copy written when the sink failed), and hand back what was measured.

use std::sync::Arc;

use latscope_model::{Capabilities, CpuId, CpuSet, Nanos, RunId, RunMeta, RunStatus, SystemInfo};
use latscope_platform::{caps, sysinfo, DmaLatencyGuard};

use crate::cell::CellOutcome;
use crate::config::RunConfig;
use crate::ctx::RunCtx;
use crate::error::EngineError;
use crate::outcome::{Env, RunOutcome};
use crate::sink::{MemorySink, Sink, SinkError};

/// What the cells of a run are and do.
pub(crate) trait Work {
    /// Checks every cell's settings before anything is measured.
    fn check(&self) -> Result<(), EngineError>;
    /// The CPUs the cells measure on (the housekeeping thread keeps off
    /// them).
    fn measured_cpus(&self) -> CpuSet;
    /// How many cells the run has.
    fn cells(&self) -> usize;
    /// Before the first cell, once the run is open in the sink.
    fn start(&mut self, _ctx: &mut RunCtx<'_, '_>) -> Result<(), EngineError> {
        Ok(())
    }
    /// Runs cell `index` into the run.
    fn run_cell(
        &mut self,
        ctx: &mut RunCtx<'_, '_>,
        index: usize,
    ) -> Result<CellOutcome, EngineError>;
    /// The note of a run stopped between cells after `done` of them
    /// (`None`: the cells' own notes say it).
    fn stopped_note(&self, _done: usize) -> Option<String> {
        None
    }
}

/// Runs `work` as one run in `sink`. Stops early on a stop request or a
/// failed cell: every finished cell, and the partial one, are kept. Errors
/// before measuring end the run as failed and come back as `Err`.
pub(crate) fn execute(
    config: &RunConfig,
    work: &mut dyn Work,
    online: &CpuSet,
    sink: &mut dyn Sink,
    env: Env<'_>,
) -> Result<RunOutcome, EngineError> {
    work.check()?;
    let (capabilities, dma_guard) = prepare(config, &work.measured_cpus(), online);
    let rescue = env.rescue;
    let mut ctx = open(config, online, sink, env, capabilities)?;
    let (status, notes, failure) = run_cells(&mut ctx, work);
    let ended = Nanos(ctx.clock.realtime_ns());
    let _ = ctx.mirror.finish_run(ctx.mirror_run, status, ended, &notes);
    finish_in_sink(&mut ctx, status, ended, notes);
    drop(dma_guard);
    if let Some(e) = failure {
        // With a sink that failed too, the in-memory copy is all there is
        // of part of the run: hand it back (the failure is in its notes)
        // rather than the error alone.
        if ctx.sink_error.is_none() {
            return Err(e);
        }
    }
    let mut outcome = outcome(ctx, status)?;
    if let (Some(_), Some(write)) = (&outcome.sink_error, rescue) {
        outcome.rescued = Some(write(&outcome));
    }
    Ok(outcome)
}

/// Capabilities detected and the guards a real measurement holds:
/// `mlockall`, `/dev/cpu_dma_latency` at 0 (held until the returned guard
/// is dropped), the housekeeping thread off the measured CPUs.
fn prepare(
    config: &RunConfig,
    measured: &CpuSet,
    online: &CpuSet,
) -> (Capabilities, Option<DmaLatencyGuard>) {
    // What the threads obtain is recorded once they have tried (the cell).
    let mut capabilities = caps::detect();
    if config.guards.lock_memory {
        match latscope_platform::lock_memory() {
            Ok(()) => capabilities.mlock = true,
            Err(e) => capabilities.missing.push(format!(
                "memory not locked ({e}; needs root or CAP_IPC_LOCK): page faults can add latency"
            )),
        }
    }
    let dma_guard = if config.guards.dma_latency {
        match DmaLatencyGuard::hold(0) {
            Ok(g) => {
                capabilities.dma_latency = true;
                Some(g)
            }
            Err(e) => {
                capabilities.missing.push(format!(
                    "/dev/cpu_dma_latency not held at 0 ({e}): deep idle states can add wake-up latency"
                ));
                None
            }
        }
    } else {
        None
    };
    // Keep this housekeeping thread (sink, progress, signals) off the
    // measured CPUs when any other CPU is online, like cyclictest's
    // --mainaffinity: its own wake-ups would otherwise occasionally keep a
    // measured CPU busy at a timer expiry and give that sample a shorter
    // path than an idle CPU's (see docs/concepts.md).
    if config.guards.pin_housekeeping {
        let housekeeping: Vec<CpuId> = online.iter().filter(|c| !measured.contains(*c)).collect();
        if !housekeeping.is_empty() {
            if let Err(e) = latscope_platform::set_affinity_set(&housekeeping) {
                capabilities.missing.push(format!(
                    "housekeeping thread not kept off the measured CPUs ({e})"
                ));
            }
        }
    }
    (capabilities, dma_guard)
}

/// Creates the run in the sink and in the mirror. A sink that cannot even
/// record the run fails it before anything is measured: there would be
/// nowhere to put the results.
fn open<'a, 'e>(
    config: &'a RunConfig,
    online: &CpuSet,
    sink: &'a mut dyn Sink,
    env: Env<'e>,
    capabilities: Capabilities,
) -> Result<RunCtx<'a, 'e>, EngineError> {
    let system: SystemInfo = env.system.unwrap_or_else(sysinfo::snapshot);
    let meta = running_meta(
        Nanos(env.clock.realtime_ns()),
        config.command_line.clone(),
        &system,
    );
    let run_id = sink
        .create_run(&meta, &system, &capabilities)
        .map_err(EngineError::Sink)?;
    let mut mirror = if config.unbounded {
        MemorySink::lean()
    } else {
        MemorySink::new()
    };
    let mirror_run = mirror
        .create_run(&meta, &system, &capabilities)
        .map_err(EngineError::Sink)?;
    Ok(RunCtx {
        config,
        sink,
        mirror,
        run_id,
        mirror_run,
        capabilities,
        system,
        online: online.clone(),
        clock: Arc::clone(&env.clock),
        stop: env.stop,
        observer: env.observer,
        names: env.names,
        clock_read_ns: latscope_platform::clock_read_cost(2_000),
        sink_error: None,
        sink_failures: 0,
        sink_owes: false,
        sink_lost: false,
        told: false,
        trace_line: None,
        max_latency: Nanos::ZERO,
        stopped_above: None,
    })
}

/// The cells one after the other, until the end, a stop or a failure: the
/// run's status, its notes and the failure that ended it.
fn run_cells(
    ctx: &mut RunCtx<'_, '_>,
    work: &mut dyn Work,
) -> (RunStatus, Vec<String>, Option<EngineError>) {
    let mut notes = Vec::new();
    if let Err(e) = work.start(ctx) {
        notes.push(e.to_string());
        return (RunStatus::Failed, notes, Some(e));
    }
    let mut done = 0;
    for index in 0..work.cells() {
        if ctx.stop.stopped() {
            break;
        }
        match work.run_cell(ctx, index) {
            Ok(CellOutcome { status, notes: n }) => {
                notes.extend(n);
                done += 1;
                if status != RunStatus::Complete {
                    return (status, notes, None);
                }
            }
            Err(e) => {
                notes.push(e.to_string());
                return (RunStatus::Failed, notes, Some(e));
            }
        }
    }
    if ctx.stop.stopped() {
        notes.extend(work.stopped_note(done));
        return (RunStatus::Interrupted, notes, None);
    }
    (RunStatus::Complete, notes, None)
}

/// Ends the run in the sink. The sink's copy says why it is incomplete
/// when it failed on the way; its status names the cause. A sink that
/// failed and came back (a PostgreSQL server restarted, a disk freed) holds
/// the whole run: later checkpoints carried again what the failed ones
/// held.
fn finish_in_sink(ctx: &mut RunCtx<'_, '_>, status: RunStatus, ended: Nanos, notes: Vec<String>) {
    let recovered = ctx.sink_error.is_some() && !ctx.sink_lost && !ctx.sink_owes;
    let (stored_status, stored_notes) = match &ctx.sink_error {
        Some(e) if recovered => {
            let mut n = notes;
            n.push(format!(
                "the store refused {} checkpoint(s) during the run (first: {e}) and took later ones, which carried what the refused ones held: nothing was lost",
                ctx.sink_failures
            ));
            (status, n)
        }
        Some(e) => {
            let mut n = notes;
            n.push(format!(
                "the store failed during the run ({e}): it holds the run up to its last good checkpoint; the whole run was kept in memory and written elsewhere"
            ));
            (RunStatus::Failed, n)
        }
        None => (status, notes),
    };
    if let Err(e) = ctx
        .sink
        .finish_run(ctx.run_id, stored_status, ended, &stored_notes)
    {
        ctx.sink_failed(e);
    }
    if recovered && !ctx.sink_lost {
        ctx.sink_error = None;
    }
}

/// What the run gives back, from the mirror.
fn outcome(ctx: RunCtx<'_, '_>, status: RunStatus) -> Result<RunOutcome, EngineError> {
    let micro_context = ctx.mirror.micro_context().cloned();
    let micro = ctx.mirror.micro().to_vec();
    let mut result = ctx
        .mirror
        .into_run()
        .ok_or_else(|| EngineError::Sink(SinkError("the run was not kept in memory".into())))?;
    // The copy carries the run's id in the sink (the mirror numbers its
    // only run 1, which in the sink is another run).
    result.meta.id = ctx.run_id;
    Ok(RunOutcome {
        run_id: ctx.run_id,
        status,
        result,
        micro_context,
        micro,
        sink_error: ctx.sink_error,
        rescued: None,
        max_latency: ctx.max_latency,
        stopped_above: ctx.stopped_above,
    })
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
