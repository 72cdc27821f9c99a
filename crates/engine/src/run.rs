//! A run from start to end: prepare (capabilities detected, guards held),
//! execute the cells one after the other, finish (status and notes), and
//! hand back what was measured even when the sink failed.

use std::sync::Arc;

use latscope_model::{CpuId, CpuSet, Nanos, RunId, RunMeta, RunStatus, SystemInfo};
use latscope_platform::{caps, sysinfo, DmaLatencyGuard};
use latscope_probes::Clock;
use latscope_record::RunResult;

use crate::cell::{run_cell, CellOutcome};
use crate::config::{CellSpec, RunConfig};
use crate::ctx::RunCtx;
use crate::error::EngineError;
use crate::load;
use crate::observer::Observer;
use crate::sink::{MemorySink, Sink, SinkError};
use crate::stop::Stop;

/// What a run gives back.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run's id in the sink (when the sink could create it).
    pub run_id: RunId,
    /// How the measurement ended: complete, interrupted, or failed.
    pub status: RunStatus,
    /// Everything measured, as kept in memory beside the sink: complete
    /// even when the sink failed.
    pub result: RunResult,
    /// The sink's first failure, when part of the run could not be stored
    /// (the rest is in `result`).
    pub sink_error: Option<SinkError>,
    /// The largest value of the probes' main figure over every cell
    /// (timer latency, noise gap, UDP path): what `--fail-above` tests.
    pub max_latency: Nanos,
    /// When `--stop-above` ended the run: the value that exceeded it.
    pub stopped_above: Option<Nanos>,
}

/// The machine-facing pieces of a run that tests replace.
pub struct Env<'a> {
    pub clock: Arc<dyn Clock>,
    pub stop: Stop,
    pub observer: &'a mut dyn Observer,
    /// The system snapshot to record (taken from the machine when `None`).
    pub system: Option<SystemInfo>,
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
    for c in cells {
        c.probe.validate().map_err(EngineError::Config)?;
        load::check(c).map_err(EngineError::Config)?;
    }

    // What the threads obtain is recorded once they have tried, below.
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
        let measured: CpuSet = cells.iter().flat_map(|c| c.probe.cpus()).collect();
        let housekeeping: Vec<CpuId> = online.iter().filter(|c| !measured.contains(*c)).collect();
        if !housekeeping.is_empty() {
            if let Err(e) = latscope_platform::set_affinity_set(&housekeeping) {
                capabilities.missing.push(format!(
                    "housekeeping thread not kept off the measured CPUs ({e})"
                ));
            }
        }
    }

    let system = env.system.unwrap_or_else(sysinfo::snapshot);
    let meta = running_meta(
        Nanos(env.clock.realtime_ns()),
        config.command_line.clone(),
        &system,
    );
    // A sink that cannot even record the run fails it before anything is
    // measured: there would be nowhere to put the results.
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
    let mut ctx = RunCtx {
        config,
        sink,
        mirror,
        run_id,
        mirror_run,
        capabilities,
        system,
        online: online.clone(),
        clock: env.clock,
        stop: env.stop,
        observer: env.observer,
        clock_read_ns: latscope_platform::clock_read_cost(2_000),
        sink_error: None,
        sink_failures: 0,
        sink_owes: false,
        sink_lost: false,
        told: false,
        trace_line: None,
        max_latency: Nanos::ZERO,
        stopped_above: None,
    };

    let mut notes = Vec::new();
    let mut status = RunStatus::Complete;
    let mut failure = None;
    for cell in cells {
        if ctx.stop.stopped() {
            break;
        }
        match run_cell(&mut ctx, cell) {
            Ok(CellOutcome {
                status: s,
                notes: n,
            }) => {
                notes.extend(n);
                if s != RunStatus::Complete {
                    status = s;
                    break;
                }
            }
            Err(e) => {
                notes.push(e.to_string());
                status = RunStatus::Failed;
                failure = Some(e);
                break;
            }
        }
    }
    if status == RunStatus::Complete && ctx.stop.stopped() {
        status = RunStatus::Interrupted;
    }
    let ended = Nanos(ctx.clock.realtime_ns());
    let _ = ctx.mirror.finish_run(ctx.mirror_run, status, ended, &notes);
    // The sink's copy says why it is incomplete when it failed on the way;
    // its status names the cause. A sink that failed and came back (a
    // PostgreSQL server restarted, a disk freed) holds the whole run: later
    // checkpoints carried again what the failed ones held.
    let recovered = ctx.sink_error.is_some() && !ctx.sink_lost && !ctx.sink_owes;
    let (stored_status, stored_notes) = match &ctx.sink_error {
        Some(e) if recovered => {
            let mut n = notes.clone();
            n.push(format!(
                "the store refused {} checkpoint(s) during the run (first: {e}) and took later ones, which carried what the refused ones held: nothing was lost",
                ctx.sink_failures
            ));
            (status, n)
        }
        Some(e) => {
            let mut n = notes.clone();
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
    drop(dma_guard);
    if let Some(e) = failure {
        // With a sink that failed too, the in-memory copy is all there is
        // of part of the run: hand it back (the failure is in its notes)
        // rather than the error alone.
        if ctx.sink_error.is_none() {
            return Err(e);
        }
    }
    let result = ctx
        .mirror
        .into_run()
        .ok_or_else(|| EngineError::Sink(SinkError("the run was not kept in memory".into())))?;
    Ok(RunOutcome {
        run_id,
        status,
        result,
        sink_error: ctx.sink_error,
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
