//! `latscope run`: detect what the machine allows, hold the system settings a
//! measurement needs, run the probe, checkpoint while it runs, store the
//! result and print the summary from the store.

use std::fs;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;
use latscope_model::{
    Capabilities, CellMeta, CpuSet, Episode, EpisodeWindow, Nanos, RunId, RunMeta, RunStatus,
    SystemInfo,
};
use latscope_platform::{caps, sysinfo, DmaLatencyGuard, StopSignals};
use latscope_probes::noise::NoiseProbe;
use latscope_probes::timer::{ProbeError, TimerProbe};
use latscope_probes::udp::UdpProbe;
use latscope_stats::RunResult;
use latscope_store::{CellId, Store};

use crate::args::RunArgs;
use crate::cell_load;
use crate::exit::{self, Exit};
use crate::output;
use crate::plan::{plan_run, CellPlan, ProbeCellPlan, RunPlan};
use crate::probe::Running;
use crate::progress::ProgressBar;
use crate::trace_session::{self, AnalysisMode, TraceSession};

/// How often the housekeeping thread wakes: progress, signals, end of run.
const TICK: Duration = Duration::from_millis(100);

pub fn run(args: &RunArgs) -> Result<i32, Exit> {
    let online = latscope_platform::online_cpus().context("cannot read the online CPUs")?;
    let plan = plan_run(args, &online)?;
    let cells = plan.cells();
    let opts = RunOptions {
        store: &args.store.store,
        json: args.json.as_deref(),
        no_dma_latency: args.no_dma_latency,
        quiet: args.quiet,
        histogram: args.histogram,
    };
    let (stored, status) = run_cells(&opts, &plan, &cells, &online)?;
    if let Some(path) = opts.json {
        output::write_json(&stored, path)?;
    }
    if !opts.quiet {
        print!("{}", output::summary(&stored, opts.histogram));
    }
    Ok(exit_code(status))
}

/// Options of `run` (and `suite`) that are not about what to measure.
pub struct RunOptions<'a> {
    pub store: &'a std::path::Path,
    pub json: Option<&'a std::path::Path>,
    pub no_dma_latency: bool,
    pub quiet: bool,
    pub histogram: bool,
}

pub fn exit_code(status: RunStatus) -> i32 {
    match status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        RunStatus::Failed => exit::ERROR,
        _ => exit::OK,
    }
}

/// What stays the same for every cell of a run.
struct RunCtx {
    store: Store,
    run_id: RunId,
    capabilities: Capabilities,
    system: SystemInfo,
    signals: StopSignals,
    online: CpuSet,
    clock_read_ns: u64,
    show_progress: bool,
    /// The capability lines have been printed (after the first cell's
    /// threads tried what they could get).
    told: bool,
}

/// Runs the cells one after the other in one stored run; returns the run
/// as stored and its status. Stops early on a signal or a failed cell:
/// every finished cell, and the partial one, stay stored.
pub fn run_cells(
    opts: &RunOptions,
    plan: &RunPlan,
    cells: &[CellPlan],
    online: &CpuSet,
) -> Result<(RunResult, RunStatus), Exit> {
    // Open the store before measuring: an unusable path must fail now, not
    // after the user waited for the measurement.
    let mut store = Store::open(opts.store)?;
    if let Some(path) = opts.json {
        output::check_writable(path)?;
    }
    for c in cells {
        cell_load::check(c).map_err(Exit::usage)?;
    }

    // What the threads obtain is recorded once they have tried, below.
    let mut capabilities = caps::detect();
    match latscope_platform::lock_memory() {
        Ok(()) => capabilities.mlock = true,
        Err(e) => capabilities.missing.push(format!(
            "memory not locked ({e}; needs root or CAP_IPC_LOCK): page faults can add latency"
        )),
    }
    let dma_guard = if opts.no_dma_latency {
        None
    } else {
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
    };

    // Keep this housekeeping thread (store, progress, signals) off the
    // measured CPUs when any other CPU is online, like cyclictest's
    // --mainaffinity: its own wake-ups would otherwise occasionally keep a
    // measured CPU busy at a timer expiry and give that sample a shorter
    // path than an idle CPU's (see docs/concepts.md).
    let housekeeping: Vec<latscope_model::CpuId> = online
        .iter()
        .filter(|c| !plan.timer.cpus.contains(c))
        .collect();
    if !housekeeping.is_empty() {
        if let Err(e) = latscope_platform::set_affinity_set(&housekeeping) {
            capabilities.missing.push(format!(
                "housekeeping thread not kept off the measured CPUs ({e})"
            ));
        }
    }

    let system = sysinfo::snapshot();
    let signals = StopSignals::install().context("cannot install signal handlers")?;
    let meta = RunMeta {
        id: RunId(0),
        started_unix_ns: Nanos(latscope_platform::realtime_ns()),
        ended_unix_ns: None,
        checkpoint_unix_ns: None,
        status: RunStatus::Running,
        command_line: std::env::args().collect(),
        pid: std::process::id(),
        boot_id: fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        hostname: system.hostname.clone(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        notes: Vec::new(),
    };
    let run_id = store.create_run(&meta, &system, &capabilities)?;
    let mut ctx = RunCtx {
        store,
        run_id,
        capabilities,
        system,
        signals,
        online: online.clone(),
        clock_read_ns: latscope_platform::clock_read_cost(2_000),
        show_progress: !opts.quiet && std::io::stderr().is_terminal(),
        told: false,
    };

    let mut notes = Vec::new();
    let mut status = RunStatus::Complete;
    for cell in cells {
        if ctx.signals.stopped() {
            break;
        }
        match run_cell(&mut ctx, plan, cell) {
            Ok(outcome) => {
                notes.extend(outcome.notes);
                if outcome.status != RunStatus::Complete {
                    status = outcome.status;
                    break;
                }
            }
            Err(e) => {
                let _ = ctx.store.finish_run(
                    ctx.run_id,
                    RunStatus::Failed,
                    Nanos(latscope_platform::realtime_ns()),
                    &[format!("{e:#}")],
                );
                return Err(Exit::from(e));
            }
        }
    }
    if status == RunStatus::Complete && ctx.signals.stopped() {
        status = RunStatus::Interrupted;
    }
    ctx.store.finish_run(
        ctx.run_id,
        status,
        Nanos(latscope_platform::realtime_ns()),
        &notes,
    )?;
    drop(dma_guard);
    let stored = ctx.store.load_run(ctx.run_id)?;
    Ok((stored, status))
}

struct CellOutcome {
    status: RunStatus,
    notes: Vec<String>,
}

/// One cell: its workload (warmed up), the tracer, the probe, the
/// housekeeping loop, the final figures; the workload is stopped whatever
/// happens.
fn run_cell(ctx: &mut RunCtx, plan: &RunPlan, cell: &CellPlan) -> anyhow::Result<CellOutcome> {
    let mut notes = Vec::new();
    let label = if cells_label_needed(cell) {
        format!("cell {} ({}): ", cell.index, cell.label())
    } else {
        String::new()
    };
    let mut load = cell_load::start(cell, &ctx.online, &ctx.signals)
        .with_context(|| format!("cannot start workload {}", cell.workload))?;

    // The tracer is opened and enabled before the measuring threads start,
    // so that their first samples have their events.
    let mut trace_open = None;
    if let Some(tp) = &plan.trace {
        let measured: Vec<latscope_model::CpuId> = cell.measured_cpus();
        let traced: Vec<latscope_model::CpuId> = ctx.online.iter().collect();
        match trace_session::open(&traced, &measured, tp.stack_period) {
            Ok(t) => {
                ctx.capabilities.tracepoints = true;
                ctx.capabilities.stack_samples = tp.stack_period.is_some();
                trace_open = Some(t);
            }
            Err(e) => {
                let line =
                    format!("--trace: {e}; the run continues without decomposition or episodes");
                if !ctx.capabilities.missing.contains(&line) {
                    ctx.capabilities.missing.push(line);
                }
            }
        }
    }

    let steal_before = trace_session::read_steal(&cell.measured_cpus());
    let running = match start_probe(cell, &ctx.signals) {
        Ok(r) => r,
        Err(e) => {
            let _ = load.stop();
            return Err(e.into());
        }
    };

    // What the threads actually obtained.
    let refused: Vec<String> = running
        .setups()
        .iter()
        .filter_map(|s| {
            s.scheduler
                .as_ref()
                .err()
                .map(|e| format!("CPU {}: {e}", s.cpu))
        })
        .collect();
    if !ctx.told {
        ctx.capabilities.rt_priority = refused.is_empty();
        if !refused.is_empty() {
            ctx.capabilities.missing.push(format!(
                "no real-time priority ({}; needs root or CAP_SYS_NICE): measuring threads run as SCHED_OTHER, results are not real-time",
                refused[0]
            ));
        }
        if running.setups().iter().all(|s| s.timer_slack) {
            ctx.capabilities.timer_slack_ns = Some(1);
        }
    }
    ctx.store
        .update_capabilities(ctx.run_id, &ctx.capabilities)?;
    if !ctx.told {
        for line in &ctx.capabilities.missing {
            eprintln!("latscope: {line}");
        }
        ctx.told = true;
    }

    let cell_meta = CellMeta {
        index: cell.index,
        probe: cell.probe_name().into(),
        workload: cell.workload.clone(),
        settings: crate::settings::cell_settings(cell, ctx.clock_read_ns),
        duration_ns: Nanos::ZERO,
        monotonic_start_ns: Nanos(running.start_ns()),
    };
    let cell_id = ctx.store.add_cell(ctx.run_id, &cell_meta)?;

    let session = match (trace_open, &plan.trace) {
        (Some(open), Some(tp)) => {
            match TraceSession::start(
                open,
                running.handoffs(),
                tp.threshold,
                tp.episode_cap,
                running.start_ns(),
                plan.checkpoint,
                match cell.probe {
                    ProbeCellPlan::Timer(_) => AnalysisMode::Timer,
                    ProbeCellPlan::Noise(_) => AnalysisMode::Noise,
                    ProbeCellPlan::Udp(_) => AnalysisMode::Udp,
                },
            ) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("latscope: --trace: cannot start the tracer thread ({e}); continuing without it");
                    None
                }
            }
        }
        _ => None,
    };

    let outcome = housekeep(
        &running,
        ctx,
        cell_id,
        cell,
        plan.checkpoint,
        session.as_ref(),
        &mut load,
    );
    let finished = running.join()?;
    let trace_final = session.map(TraceSession::finish);
    let duration = measured(cell.duration(), cell_meta.monotonic_start_ns.0);
    let died = load.died();
    let status = if let Some(e) = finished.error() {
        notes.push(format!("{label}measurement failed: {e}"));
        RunStatus::Failed
    } else if ctx.signals.stopped() {
        notes.push(format!(
            "{label}stopped by signal {} after {duration}",
            ctx.signals.signal().unwrap_or(0)
        ));
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    if let Some(d) = &died {
        notes.push(format!(
            "{label}the workload {} died during the cell: {d}; the cell measured a partly unloaded system",
            cell.workload
        ));
    }
    let final_timeline = finished.drain_timeline();
    let lost = finished.lost_timeline_seconds();
    if lost > 0 {
        notes.push(format!(
            "{label}{lost} timeline seconds were lost (the housekeeping thread fell behind); they are stored as empty seconds"
        ));
    }
    if let Err(e) = &outcome {
        notes.push(format!("{label}a checkpoint failed during the run: {e:#}"));
    }
    let mut final_metrics = finished.results();
    if let Some(t) = &trace_final {
        final_metrics.extend(t.metrics.iter().cloned());
        if let Some(e) = &t.error {
            notes.push(format!("{label}{e}"));
        }
        if t.summary.lost_records > 0 {
            notes.push(format!(
                "{label}the kernel lost {} trace records (ring full): episodes near them are marked incomplete",
                t.summary.lost_records
            ));
        }
    }
    ctx.store
        .checkpoint(
            ctx.run_id,
            cell_id,
            duration,
            &final_metrics,
            &final_timeline,
            Nanos(latscope_platform::realtime_ns()),
        )
        .context("cannot store the final results")?;
    let mut noise = finished.noise_stats();
    if !noise.is_empty() {
        let steal_after = trace_session::read_steal(&cell.measured_cpus());
        for n in &mut noise {
            let before = steal_before.iter().find(|(c, _)| *c == n.cpu);
            let after = steal_after.iter().find(|(c, _)| *c == n.cpu);
            if let (Some((_, b)), Some((_, a))) = (before, after) {
                n.steal_ns = Some(Nanos(a.saturating_sub(*b)));
            }
            if let Some(gaps) = final_metrics
                .iter()
                .find(|m| m.name == latscope_model::metric::NOISE_GAP && m.cpu == Some(n.cpu))
            {
                let spinning = matches!(&cell.probe, ProbeCellPlan::Noise(c) if c.pause.0 == 0);
                if spinning && cell.policy() != latscope_platform::SchedPolicy::Other {
                    n.findings
                        .extend(latscope_probes::noise::rt_throttling_finding(
                            &gaps.histogram,
                            n.active_ns,
                            ctx.system.rt_runtime_us,
                            ctx.system.rt_period_us,
                        ));
                }
            }
            if let Some(t) = &trace_final {
                if let Some(classes) = t.noise_classes.get(&n.cpu.0) {
                    n.classes = classes.clone();
                }
            }
        }
        ctx.store
            .set_noise_stats(cell_id, &noise)
            .context("cannot store the noise figures")?;
    }
    if let Some(u) = finished.udp_stats() {
        ctx.store
            .set_udp_stats(cell_id, &u)
            .context("cannot store the udp probe's counts")?;
        if u.lost > 0 || u.send_errors > 0 {
            notes.push(format!(
                "{label}udp: {} of {} datagrams lost, {} sends failed",
                u.lost, u.sent, u.send_errors
            ));
        }
        if u.inconsistent > 0 {
            notes.push(format!(
                "{label}udp: {} datagrams had a path shorter than their send: CLOCK_REALTIME stepped during the run, their udp.send and udp.recv are off",
                u.inconsistent
            ));
        }
    }
    if let Some(t) = &trace_final {
        store_episodes(&mut ctx.store, cell_id, &t.episodes)
            .context("cannot store the episodes")?;
        ctx.store
            .set_trace_summary(cell_id, &t.summary)
            .context("cannot store the trace summary")?;
    }
    if let Some(line) = load.finish(&mut ctx.store, cell_id)? {
        notes.push(format!("{label}{line}"));
    }
    Ok(CellOutcome { status, notes })
}

fn cells_label_needed(cell: &CellPlan) -> bool {
    cell.of > 1
}

/// Time measured so far: from time zero to now, never past the planned end.
fn measured(planned: Option<Nanos>, start_ns: u64) -> Nanos {
    let elapsed = Nanos(latscope_platform::monotonic_ns().saturating_sub(start_ns));
    planned.map_or(elapsed, |d| elapsed.min(d))
}

/// The housekeeping loop: progress, checkpoints, the workload's
/// characterization once a second, until the threads end. A failed
/// checkpoint is retried at the next one; its error is returned at the end
/// so the run's notes record it.
fn housekeep(
    probe: &Running,
    ctx: &mut RunCtx,
    cell_id: CellId,
    cell: &CellPlan,
    checkpoint: Nanos,
    session: Option<&TraceSession>,
    load: &mut cell_load::CellLoad,
) -> anyhow::Result<()> {
    let mut bar = ctx.show_progress.then(|| ProgressBar::new(cell.duration()));
    let mut last_checkpoint = latscope_platform::monotonic_ns();
    let mut last_draw = 0u64;
    let mut last_sample = last_checkpoint;
    let mut result = Ok(());
    while !probe.finished() {
        std::thread::sleep(TICK);
        let now = latscope_platform::monotonic_ns();
        if now.saturating_sub(last_sample) >= 1_000_000_000 {
            last_sample = now;
            load.tick();
        }
        if let Some(bar) = bar.as_mut() {
            // At most twice a second.
            if now.saturating_sub(last_draw) >= 500_000_000 || ctx.signals.stopped() {
                bar.draw(
                    measured(cell.duration(), probe.start_ns()),
                    probe.progress(),
                );
                last_draw = now;
            }
        }
        if now.saturating_sub(last_checkpoint) >= checkpoint.0 {
            last_checkpoint = now;
            let mut metrics = probe.results();
            let traced = session.map(TraceSession::checkpoint);
            if let Some((m, _, _)) = &traced {
                metrics.extend(m.iter().cloned());
            }
            let store = &mut ctx.store;
            let r = store
                .checkpoint(
                    ctx.run_id,
                    cell_id,
                    measured(cell.duration(), probe.start_ns()),
                    &metrics,
                    &probe.drain_timeline(),
                    Nanos(latscope_platform::realtime_ns()),
                )
                .map_err(anyhow::Error::from)
                .and_then(|()| match &traced {
                    Some((_, summary, episodes)) => {
                        store_episodes(store, cell_id, episodes)?;
                        if let Some(s) = summary {
                            store.set_trace_summary(cell_id, s)?;
                        }
                        Ok(())
                    }
                    None => Ok(()),
                });
            let noise = probe.noise_stats();
            let udp = probe.udp_stats();
            let r = r.and_then(|()| {
                if !noise.is_empty() {
                    store.set_noise_stats(cell_id, &noise)?;
                }
                if let Some(u) = &udp {
                    store.set_udp_stats(cell_id, u)?;
                }
                load.checkpoint(store, cell_id)?;
                Ok(())
            });
            if let Err(e) = r {
                result = Err(e.context("checkpoint failed"));
            }
        }
    }
    if let Some(bar) = bar.as_mut() {
        bar.finish();
    }
    result
}

fn store_episodes(
    store: &mut Store,
    cell: CellId,
    episodes: &[(Episode, Option<EpisodeWindow>)],
) -> anyhow::Result<()> {
    if episodes.is_empty() {
        return Ok(());
    }
    let eps: Vec<Episode> = episodes.iter().map(|(e, _)| e.clone()).collect();
    let windows: Vec<EpisodeWindow> = episodes.iter().filter_map(|(_, w)| w.clone()).collect();
    store.add_episodes(cell, &eps, &windows)?;
    Ok(())
}

/// Starts the probe the cell names.
fn start_probe(cell: &CellPlan, signals: &StopSignals) -> Result<Running, ProbeError> {
    Ok(match &cell.probe {
        ProbeCellPlan::Noise(n) => {
            Running::Noise(NoiseProbe::new(n.clone())?.start(signals.flag())?)
        }
        ProbeCellPlan::Udp(u) => Running::Udp(UdpProbe::new(u.clone())?.start(signals.flag())?),
        ProbeCellPlan::Timer(t) => {
            Running::Timer(TimerProbe::new(t.clone())?.start(signals.flag())?)
        }
    })
}
