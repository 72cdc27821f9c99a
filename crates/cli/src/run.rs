//! `latscope run`: detect what the machine allows, hold the system settings a
//! measurement needs, run the probe, checkpoint while it runs, store the
//! result and print the summary from the store.

use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;
use latscope_model::{CellMeta, Episode, EpisodeWindow, Nanos, RunId, RunMeta, RunStatus};
use latscope_platform::{caps, sysinfo, DmaLatencyGuard, StopSignals};
use latscope_probes::noise::{NoiseConfig, NoiseProbe};
use latscope_probes::timer::{Phase, ProbeError, TimerConfig, TimerProbe};
use latscope_store::{CellId, Store};
use serde_json::json;

use crate::args::RunArgs;
use crate::exit::{self, Exit};
use crate::output;
use crate::plan::{plan_run, RunPlan};
use crate::probe::Running;
use crate::progress::ProgressBar;
use crate::trace_session::{self, TraceSession};

/// How often the housekeeping thread wakes: progress, signals, end of run.
const TICK: Duration = Duration::from_millis(100);

pub fn run(args: &RunArgs) -> Result<i32, Exit> {
    let online = latscope_platform::online_cpus().context("cannot read the online CPUs")?;
    let plan = plan_run(args, &online)?;
    // Open the store before measuring: an unusable path must fail now, not
    // after the user waited for the measurement.
    let mut store = Store::open(&args.store.store)?;

    if let Some(path) = &args.json {
        output::check_writable(path)?;
    }

    // What the threads obtain is recorded once they have tried, below.
    let mut capabilities = caps::detect();
    match latscope_platform::lock_memory() {
        Ok(()) => capabilities.mlock = true,
        Err(e) => capabilities.missing.push(format!(
            "memory not locked ({e}; needs root or CAP_IPC_LOCK): page faults can add latency"
        )),
    }
    let dma_guard = if args.no_dma_latency {
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

    // The tracer is opened and enabled before the measuring threads start,
    // so that their first samples have their events.
    let mut trace_open = None;
    if let Some(tp) = &plan.trace {
        let measured: Vec<latscope_model::CpuId> = plan.timer.cpus.clone();
        let traced: Vec<latscope_model::CpuId> = online.iter().collect();
        match trace_session::open(&traced, &measured, tp.stack_period) {
            Ok(t) => {
                capabilities.tracepoints = true;
                capabilities.stack_samples = tp.stack_period.is_some();
                trace_open = Some(t);
            }
            Err(e) => capabilities.missing.push(format!(
                "--trace: {e}; the run continues without decomposition or episodes"
            )),
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

    let clock_read_ns = latscope_platform::clock_read_cost(2_000);
    let steal_before = trace_session::read_steal(&plan.timer.cpus);
    let running = match start_probe(&plan, &signals) {
        Ok(r) => r,
        Err(e) => return fail(&mut store, run_id, e.into()),
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
    capabilities.rt_priority = refused.is_empty();
    if !refused.is_empty() {
        capabilities.missing.push(format!(
            "no real-time priority ({}; needs root or CAP_SYS_NICE): measuring threads run as SCHED_OTHER, results are not real-time",
            refused[0]
        ));
    }
    if running.setups().iter().all(|s| s.timer_slack) {
        capabilities.timer_slack_ns = Some(1);
    }
    store.update_capabilities(run_id, &capabilities)?;
    for line in &capabilities.missing {
        eprintln!("latscope: {line}");
    }

    let cell_meta = CellMeta {
        index: 0,
        probe: if plan.noise.is_some() {
            "noise"
        } else {
            "timer"
        }
        .into(),
        workload: "none".into(),
        settings: match &plan.noise {
            Some(n) => noise_settings(&plan, n, clock_read_ns),
            None => timer_settings(&plan, clock_read_ns),
        },
        duration_ns: Nanos::ZERO,
        monotonic_start_ns: Nanos(running.start_ns()),
    };
    let cell = store.add_cell(run_id, &cell_meta)?;

    let session = match (trace_open, &plan.trace) {
        (Some(open), Some(tp)) => {
            match TraceSession::start(
                open,
                running.handoffs(),
                tp.threshold,
                tp.episode_cap,
                running.start_ns(),
                plan.checkpoint,
                plan.noise.is_some(),
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

    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let outcome = housekeep(
        &running,
        &mut store,
        run_id,
        cell,
        &plan,
        &signals,
        show_progress,
        session.as_ref(),
    );
    let finished = running.join()?;
    let trace_final = session.map(TraceSession::finish);
    let duration = measured(&plan.timer, cell_meta.monotonic_start_ns.0);
    let mut notes = Vec::new();
    let status = if let Some(e) = finished.error() {
        notes.push(format!("measurement failed: {e}"));
        RunStatus::Failed
    } else if signals.stopped() {
        notes.push(format!(
            "stopped by signal {} after {duration}",
            signals.signal().unwrap_or(0)
        ));
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let final_timeline = finished.drain_timeline();
    let lost = finished.lost_timeline_seconds();
    if lost > 0 {
        notes.push(format!(
            "{lost} timeline seconds were lost (the housekeeping thread fell behind); they are stored as empty seconds"
        ));
    }
    if let Err(e) = &outcome {
        notes.push(format!("a checkpoint failed during the run: {e:#}"));
    }
    let mut final_metrics = finished.results();
    if let Some(t) = &trace_final {
        final_metrics.extend(t.metrics.iter().cloned());
        if let Some(e) = &t.error {
            notes.push(e.clone());
        }
        if t.summary.lost_records > 0 {
            notes.push(format!(
                "the kernel lost {} trace records (ring full): episodes near them are marked incomplete",
                t.summary.lost_records
            ));
        }
    }
    store
        .checkpoint(
            run_id,
            cell,
            duration,
            &final_metrics,
            &final_timeline,
            Nanos(latscope_platform::realtime_ns()),
        )
        .context("cannot store the final results")?;
    let mut noise = finished.noise_stats();
    if !noise.is_empty() {
        let steal_after = trace_session::read_steal(&plan.timer.cpus);
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
                let pause = plan.noise.as_ref().map_or(Nanos(1), |c| c.pause);
                if pause.0 == 0 && plan.timer.policy != latscope_platform::SchedPolicy::Other {
                    n.findings
                        .extend(latscope_probes::noise::rt_throttling_finding(
                            &gaps.histogram,
                            n.active_ns,
                            system.rt_runtime_us,
                            system.rt_period_us,
                        ));
                }
            }
            if let Some(t) = &trace_final {
                if let Some(classes) = t.noise_classes.get(&n.cpu.0) {
                    n.classes = classes.clone();
                }
            }
        }
        store
            .set_noise_stats(cell, &noise)
            .context("cannot store the noise figures")?;
    }
    if let Some(t) = &trace_final {
        store_episodes(&mut store, cell, &t.episodes).context("cannot store the episodes")?;
        store
            .set_trace_summary(cell, &t.summary)
            .context("cannot store the trace summary")?;
    }
    store.finish_run(
        run_id,
        status,
        Nanos(latscope_platform::realtime_ns()),
        &notes,
    )?;
    drop(dma_guard);

    let stored = store.load_run(run_id)?;
    if let Some(path) = &args.json {
        output::write_json(&stored, path)?;
    }
    if !args.quiet {
        print!("{}", output::summary(&stored, args.histogram));
    }
    Ok(match status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        RunStatus::Failed => exit::ERROR,
        _ => exit::OK,
    })
}

/// Time measured so far: from time zero to now, never past the planned end.
fn measured(cfg: &TimerConfig, start_ns: u64) -> Nanos {
    let elapsed = Nanos(latscope_platform::monotonic_ns().saturating_sub(start_ns));
    cfg.duration.map_or(elapsed, |d| elapsed.min(d))
}

/// Records a run that could not start as failed, then reports the error.
fn fail(store: &mut Store, run: RunId, error: anyhow::Error) -> Result<i32, Exit> {
    let _ = store.finish_run(
        run,
        RunStatus::Failed,
        Nanos(latscope_platform::realtime_ns()),
        &[format!("{error:#}")],
    );
    Err(Exit::from(error))
}

/// The housekeeping loop: progress, checkpoints, until the threads end.
/// A failed checkpoint is retried at the next one; its error is returned at
/// the end so the run's notes record it.
#[allow(clippy::too_many_arguments)]
fn housekeep(
    probe: &Running,
    store: &mut Store,
    run: RunId,
    cell: CellId,
    plan: &RunPlan,
    signals: &StopSignals,
    show_progress: bool,
    session: Option<&TraceSession>,
) -> anyhow::Result<()> {
    let mut bar = show_progress.then(|| ProgressBar::new(plan.timer.duration));
    let mut last_checkpoint = latscope_platform::monotonic_ns();
    let mut last_draw = 0u64;
    let mut result = Ok(());
    while !probe.finished() {
        std::thread::sleep(TICK);
        let now = latscope_platform::monotonic_ns();
        if let Some(bar) = bar.as_mut() {
            // At most twice a second.
            if now.saturating_sub(last_draw) >= 500_000_000 || signals.stopped() {
                bar.draw(measured(&plan.timer, probe.start_ns()), probe.progress());
                last_draw = now;
            }
        }
        if now.saturating_sub(last_checkpoint) >= plan.checkpoint.0 {
            last_checkpoint = now;
            let mut metrics = probe.results();
            let traced = session.map(TraceSession::checkpoint);
            if let Some((m, _, _)) = &traced {
                metrics.extend(m.iter().cloned());
            }
            let r = store
                .checkpoint(
                    run,
                    cell,
                    measured(&plan.timer, probe.start_ns()),
                    &metrics,
                    &probe.drain_timeline(),
                    Nanos(latscope_platform::realtime_ns()),
                )
                .map_err(anyhow::Error::from)
                .and_then(|()| match &traced {
                    Some((_, summary, episodes)) => {
                        store_episodes(store, cell, episodes)?;
                        if let Some(s) = summary {
                            store.set_trace_summary(cell, s)?;
                        }
                        Ok(())
                    }
                    None => Ok(()),
                });
            let noise = probe.noise_stats();
            let r = r.and_then(|()| {
                if !noise.is_empty() {
                    store.set_noise_stats(cell, &noise)?;
                }
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

/// Starts the probe the plan names.
fn start_probe(plan: &RunPlan, signals: &StopSignals) -> Result<Running, ProbeError> {
    Ok(match &plan.noise {
        Some(n) => Running::Noise(NoiseProbe::new(n.clone())?.start(signals.flag())?),
        None => Running::Timer(TimerProbe::new(plan.timer.clone())?.start(signals.flag())?),
    })
}

fn noise_settings(
    plan: &RunPlan,
    n: &NoiseConfig,
    clock_read_ns: u64,
) -> BTreeMap<String, serde_json::Value> {
    let mut s = BTreeMap::new();
    s.insert("runtime_ns".into(), json!(n.runtime.0));
    s.insert("pause_ns".into(), json!(n.pause.0));
    s.insert("gap_ratio".into(), json!(n.gap_ratio));
    if let Some(g) = n.gap_min {
        s.insert("gap_min_ns".into(), json!(g.0));
    }
    s.insert("fp".into(), json!(n.fp));
    s.insert("policy".into(), json!(n.policy.as_str()));
    s.insert("priority".into(), json!(plan.timer.effective_priority()));
    s.insert("cpus".into(), json!(plan.cpus.to_string()));
    if let Some(d) = n.duration {
        s.insert("duration_ns".into(), json!(d.0));
    }
    if let Some(th) = n.threshold {
        s.insert("threshold_ns".into(), json!(th.0));
    }
    s.insert("clock_read_ns".into(), json!(clock_read_ns));
    s
}

fn timer_settings(plan: &RunPlan, clock_read_ns: u64) -> BTreeMap<String, serde_json::Value> {
    let t = &plan.timer;
    let mut s = BTreeMap::new();
    s.insert("timer_api".into(), json!(t.api.as_str()));
    s.insert("period_ns".into(), json!(t.period.0));
    s.insert("policy".into(), json!(t.policy.as_str()));
    s.insert("priority".into(), json!(t.effective_priority()));
    s.insert(
        "phase".into(),
        json!(if t.phase == Phase::Random {
            "random"
        } else {
            "fixed"
        }),
    );
    s.insert("cpus".into(), json!(plan.cpus.to_string()));
    if let Some(d) = t.duration {
        s.insert("duration_ns".into(), json!(d.0));
    }
    if let Some(th) = t.threshold {
        s.insert("threshold_ns".into(), json!(th.0));
    }
    s.insert("clock_read_ns".into(), json!(clock_read_ns));
    s
}
