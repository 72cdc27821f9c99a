//! One cell: its workload (warmed up), the tracer, the probe, the
//! housekeeping loop with its checkpoints, the final figures. The workload
//! is stopped whatever happens.

use std::time::Duration;

use latscope_model::{
    metric, CellMeta, CpuId, Episode, EpisodeWindow, Nanos, NoiseCpuStats, RunStatus, Setting,
    TraceSummary, UdpStats, WorkloadStats,
};
use latscope_probes::{ProbeSnapshot, RunningProbe};
use latscope_record::{MetricResult, TimelineChunk};

use crate::config::{CellSpec, ProbeSpec};
use crate::ctx::RunCtx;
use crate::error::EngineError;
use crate::load::{self, CellLoad};
use crate::sink::{CellKey, Checkpoint, Sink};
use crate::trace_session::{self, AnalysisMode, TraceFinal, TraceOpen, TraceSession};

/// How often the housekeeping thread wakes: progress, stop requests, the
/// end of the cell.
const TICK: Duration = Duration::from_millis(100);

pub(crate) struct CellOutcome {
    pub status: RunStatus,
    pub notes: Vec<String>,
}

/// What the sink may owe at most while it fails (a full disk, a lost
/// connection): timeline seconds over all series (a day of one series,
/// 2 MB) and episodes with their windows. The cumulative histograms need no
/// buffer: each checkpoint carries them whole. Beyond these the oldest are
/// dropped and counted, so a store that stays away for days cannot make a
/// monitor run out of memory.
const PENDING_SECONDS: usize = 86_400;
const PENDING_EPISODES: usize = 1_000;

/// Where a cell's checkpoints go: the sink (when it took the cell) and the
/// in-memory mirror, with what the sink has not taken yet.
struct CellSinks {
    stored: Option<CellKey>,
    mirror: CellKey,
    /// Timeline seconds and episodes the sink has not taken yet (appended
    /// data: a failed checkpoint must not lose them), bounded.
    pending_timeline: Vec<TimelineChunk>,
    pending_episodes: Vec<Episode>,
    pending_windows: Vec<EpisodeWindow>,
    /// Dropped from the bounded buffer while the sink failed.
    dropped_seconds: u64,
    dropped_episodes: u64,
}

impl CellSinks {
    fn new(stored: Option<CellKey>, mirror: CellKey) -> CellSinks {
        CellSinks {
            stored,
            mirror,
            pending_timeline: Vec::new(),
            pending_episodes: Vec::new(),
            pending_windows: Vec::new(),
            dropped_seconds: 0,
            dropped_episodes: 0,
        }
    }

    /// Writes a checkpoint to the mirror (always) and to the sink (when it
    /// has the cell); what the sink could not take is kept for the next one.
    fn write(&mut self, ctx: &mut RunCtx<'_, '_>, cell: &CellSpec, mut cp: Checkpoint) -> bool {
        // The mirror takes only what is new.
        let _ = ctx.mirror.checkpoint(ctx.mirror_run, self.mirror, &cp);
        self.pending_timeline.append(&mut cp.timeline);
        self.pending_episodes.append(&mut cp.episodes);
        self.pending_windows.append(&mut cp.windows);
        let Some(key) = self.stored else {
            return false;
        };
        cp.timeline = std::mem::take(&mut self.pending_timeline);
        cp.episodes = std::mem::take(&mut self.pending_episodes);
        cp.windows = std::mem::take(&mut self.pending_windows);
        match ctx.sink.checkpoint(ctx.run_id, key, &cp) {
            Ok(()) => {
                ctx.checkpoint_stored();
                true
            }
            Err(e) => {
                self.pending_timeline = cp.timeline;
                self.pending_episodes = cp.episodes;
                self.pending_windows = cp.windows;
                let before = (self.dropped_seconds, self.dropped_episodes);
                self.bound();
                let (seconds, episodes) = (
                    self.dropped_seconds - before.0,
                    self.dropped_episodes - before.1,
                );
                if seconds > 0 || episodes > 0 {
                    if before == (0, 0) {
                        ctx.observer.notice(&format!(
                            "the store has failed for long: the oldest of what it could not take is being dropped (at most {PENDING_SECONDS} timeline seconds and {PENDING_EPISODES} episodes wait for it; the histograms stay whole)"
                        ));
                    }
                    ctx.observer.sink_dropped(cell, seconds, episodes);
                    ctx.sink_lost = true;
                }
                ctx.checkpoint_failed(e);
                false
            }
        }
    }

    /// Drops the oldest of what the sink owes beyond the bounds.
    fn bound(&mut self) {
        let mut seconds: usize = self.pending_timeline.iter().map(|c| c.seconds.len()).sum();
        let mut drop = 0;
        while seconds > PENDING_SECONDS && drop < self.pending_timeline.len() {
            seconds -= self.pending_timeline[drop].seconds.len();
            self.dropped_seconds += self.pending_timeline[drop].seconds.len() as u64;
            drop += 1;
        }
        self.pending_timeline.drain(..drop);
        if self.pending_episodes.len() > PENDING_EPISODES {
            let n = self.pending_episodes.len() - PENDING_EPISODES;
            let gone: Vec<u32> = self.pending_episodes.drain(..n).map(|e| e.seq).collect();
            self.pending_windows.retain(|w| !gone.contains(&w.seq));
            self.dropped_episodes += n as u64;
        }
    }

    /// A line for the run's notes when the bounds dropped anything.
    fn dropped_note(&self, label: &str) -> Option<String> {
        (self.dropped_seconds > 0 || self.dropped_episodes > 0).then(|| {
            format!(
                "{label}the store failed for long: {} timeline seconds and {} episodes it could not take were dropped (at most {PENDING_SECONDS} seconds and {PENDING_EPISODES} episodes wait for it); the histograms are whole",
                self.dropped_seconds, self.dropped_episodes
            )
        })
    }
}

fn split_episodes(
    episodes: Vec<(Episode, Option<EpisodeWindow>)>,
) -> (Vec<Episode>, Vec<EpisodeWindow>) {
    let mut eps = Vec::with_capacity(episodes.len());
    let mut windows = Vec::new();
    for (e, w) in episodes {
        eps.push(e);
        windows.extend(w);
    }
    (eps, windows)
}

fn analysis_mode(probe: &ProbeSpec) -> AnalysisMode {
    match probe {
        ProbeSpec::Noise(_) => AnalysisMode::Noise,
        ProbeSpec::Udp(_) => AnalysisMode::Udp,
        // The app probe hands no samples over (the CLI refuses --trace).
        ProbeSpec::Timer(_) | ProbeSpec::App(_) | ProbeSpec::Custom { .. } => AnalysisMode::Timer,
    }
}

/// One cell of a group measured at once: its running probe, where its
/// checkpoints go, the label of its notes.
struct Member<'c> {
    cell: &'c CellSpec,
    running: Box<dyn RunningProbe>,
    sinks: CellSinks,
    label: String,
}

fn note_label(cell: &CellSpec) -> String {
    if cell.of > 1 {
        format!("cell {} ({}): ", cell.index, cell.label())
    } else {
        String::new()
    }
}

/// Cells measured at the same time under one workload (see
/// [`crate::together`]); most often one. `cells` is not empty. With
/// `--trace` the group has one tracer and one analysis per cell, each
/// following that cell's measuring threads.
pub(crate) fn run_together(
    ctx: &mut RunCtx<'_, '_>,
    cells: &[CellSpec],
) -> Result<CellOutcome, EngineError> {
    let lead = &cells[0];
    let mut notes = Vec::new();
    let measured_cpus = lead.probe.cpus();
    let mut load = load::start(lead, &ctx.stop, ctx.clock.as_ref()).map_err(|reason| {
        EngineError::Workload {
            workload: lead.workload.clone(),
            reason,
        }
    })?;

    // The tracer is opened and enabled before the measuring threads start,
    // so that their first samples have their events.
    // Several cells are traced together with the timer probe only (the
    // request refuses the others; the noise and UDP analyses follow one
    // thread per CPU).
    let traceable =
        cells.len() == 1 || cells.iter().all(|c| matches!(c.probe, ProbeSpec::Timer(_)));
    let trace_open = match traceable {
        true => open_trace(ctx, lead, &measured_cpus),
        false => None,
    };
    let steal_before = trace_session::read_steal(&measured_cpus);
    let running = match crate::together::start(cells, ctx.stop.flag()) {
        Ok(r) => r,
        Err(e) => {
            let _ = load.stop();
            return Err(e.into());
        }
    };
    let mut members = Vec::with_capacity(cells.len());
    for (cell, running) in cells.iter().zip(running) {
        members.push(add_member(ctx, cell, running, &mut notes)?);
    }
    let session = start_session(ctx, lead, trace_open, &members);

    ctx.observer.cell_started(lead);
    housekeep(&mut members, ctx, session.as_ref(), &mut load);
    let mut finished = Vec::with_capacity(members.len());
    for m in members {
        // The threads have ended: their final maximum.
        ctx.max_latency = ctx.max_latency.max(m.running.progress().max_latency);
        let start_ns = m.running.start_ns();
        finished.push((m.cell, m.sinks, m.label, start_ns, m.running.finish()));
    }
    let mut trace_final = session
        .map(TraceSession::finish)
        .unwrap_or_default()
        .into_iter();
    let died = load.died();
    let (workload, mut load_note) = load.finish(ctx.clock.as_ref());
    let mut status = RunStatus::Complete;
    for (cell, mut sinks, label, start_ns, fin) in finished {
        let duration = measured(ctx, cell, start_ns);
        let s = end_status(ctx, fin.error.as_ref(), duration, &label, &mut notes);
        status = worse(status, s);
        if let Some(d) = &died {
            notes.push(format!(
                "{label}the workload {} died during the cell: {d}; the cell measured a partly unloaded system",
                cell.workload
            ));
        }
        if fin.lost_timeline_seconds > 0 {
            notes.push(format!(
                "{label}{} timeline seconds were lost (the housekeeping thread fell behind); they are stored as empty seconds",
                fin.lost_timeline_seconds
            ));
        }
        if let Some(line) = crate::together::never_ran_note(cell, &fin.snapshot.stats.noise) {
            notes.push(format!("{label}{line}"));
        }
        let ends = CellEnd {
            snapshot: fin.snapshot,
            timeline: fin.timeline,
            trace: trace_final.next(),
            duration,
            steal_before: steal_before.clone(),
            workload: workload.clone(),
            load_note: load_note.take(),
        };
        let cp = final_checkpoint(ctx, cell, ends, &label, &mut notes);
        let stored = sinks.write(ctx, cell, cp);
        notes.extend(sinks.dropped_note(&label));
        if sinks.stored.is_some() && !stored {
            notes.push(format!(
                "{label}the final results of the cell could not be stored"
            ));
        }
    }
    ctx.observer.cell_finished(lead);
    Ok(CellOutcome { status, notes })
}

/// The worse of two statuses: failed, then interrupted, then complete.
fn worse(a: RunStatus, b: RunStatus) -> RunStatus {
    let rank = |s: RunStatus| match s {
        RunStatus::Failed => 2,
        RunStatus::Interrupted => 1,
        _ => 0,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// A started cell told and added to the run: what its threads obtained,
/// its settings as applied, its place in the sink and the mirror.
fn add_member<'c>(
    ctx: &mut RunCtx<'_, '_>,
    cell: &'c CellSpec,
    running: Box<dyn RunningProbe>,
    notes: &mut Vec<String>,
) -> Result<Member<'c>, EngineError> {
    let label = note_label(cell);
    tell_capabilities(ctx, cell, running.as_ref(), &label, notes);
    let cell_meta = CellMeta {
        index: cell.index,
        probe: cell.probe.name().into(),
        workload: cell.workload.clone(),
        settings: crate::settings::with_rr_quantum(
            cell.settings(ctx.clock_read_ns),
            running.setups(),
        ),
        duration_ns: Nanos::ZERO,
        monotonic_start_ns: Nanos(running.start_ns()),
    };
    let (stored, mirror) = ctx.add_cell(&cell_meta)?;
    Ok(Member {
        cell,
        running,
        sinks: CellSinks::new(stored, mirror),
        label,
    })
}

/// Opens the tracer when the run traces; a tracer that cannot open is a
/// missing capability, and the run goes on without it.
fn open_trace(
    ctx: &mut RunCtx<'_, '_>,
    cell: &CellSpec,
    measured_cpus: &[CpuId],
) -> Option<TraceOpen> {
    let tp = ctx.config.trace.as_ref()?;
    let traced: Vec<CpuId> = ctx.online.iter().collect();
    match trace_session::open(
        &traced,
        measured_cpus,
        tp.stack_period,
        tp.backend,
        analysis_mode(&cell.probe),
        tp.threshold,
        ctx.names,
    ) {
        Ok(t) => {
            ctx.capabilities.tracepoints = true;
            ctx.capabilities.stack_samples = tp.stack_period.is_some();
            if ctx.trace_line.as_deref() != Some(t.line.as_str()) {
                ctx.observer.notice(&t.line);
                ctx.trace_line = Some(t.line.clone());
            }
            Some(t)
        }
        Err(e) => {
            let line = format!(
                "{}: {e}; the run continues without decomposition or episodes",
                ctx.names.name(Setting::Trace)
            );
            if !ctx.capabilities.missing.contains(&line) {
                ctx.capabilities.missing.push(line);
            }
            None
        }
    }
}

/// What a refused policy means: a real-time one falls back to SCHED_OTHER;
/// under a fair-share one only the nice value can be refused.
fn refusal_line(cell: &CellSpec, first: &str) -> String {
    if cell.probe.policy().0.is_real_time() {
        format!("no real-time priority ({first}; needs root or CAP_SYS_NICE): measuring threads run as SCHED_OTHER, results are not real-time")
    } else {
        format!("nice value refused ({first}; a negative one needs root or CAP_SYS_NICE): measuring threads keep the nice value they inherited")
    }
}

/// What the threads actually obtained (real-time priority, timer slack),
/// recorded in the capabilities and told once, at the run's first cell.
fn tell_capabilities(
    ctx: &mut RunCtx<'_, '_>,
    cell: &CellSpec,
    running: &dyn RunningProbe,
    label: &str,
    notes: &mut Vec<String>,
) {
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
            ctx.capabilities
                .missing
                .push(refusal_line(cell, &refused[0]));
        }
        ctx.capabilities.timer_slack_ns = crate::slack::in_force(running.setups());
    }
    if let Some(line) = crate::slack::note(&cell.probe, running.setups()) {
        ctx.observer.notice(&format!("{label}{line}"));
        notes.push(format!("{label}{line}"));
    }
    let caps = ctx.capabilities.clone();
    let _ = ctx.mirror.update_capabilities(ctx.mirror_run, &caps);
    if let Err(e) = ctx.sink.update_capabilities(ctx.run_id, &caps) {
        ctx.sink_failed(e);
    }
    if !ctx.told {
        for line in caps.missing.iter() {
            ctx.observer.notice(line);
        }
        ctx.told = true;
    }
}

/// The tracer's thread over the probes' hand-offs (one analysis per cell
/// of the group), when the tracer opened.
fn start_session(
    ctx: &mut RunCtx<'_, '_>,
    cell: &CellSpec,
    open: Option<TraceOpen>,
    members: &[Member<'_>],
) -> Option<TraceSession> {
    let (open, tp) = (open?, ctx.config.trace.as_ref()?);
    let groups = members.iter().map(|m| m.running.handoffs()).collect();
    match TraceSession::start(
        open,
        groups,
        tp.threshold,
        tp.episode_cap,
        members.first()?.running.start_ns(),
        ctx.config.checkpoint,
        analysis_mode(&cell.probe),
    ) {
        Ok(s) => Some(s),
        Err(e) => {
            let trace = ctx.names.name(Setting::Trace);
            ctx.observer.notice(&format!(
                "{trace}: cannot start the tracer thread ({e}); continuing without it"
            ));
            None
        }
    }
}

/// How the cell ended: its measurement failed, `--stop-above` or a signal
/// stopped it, or it ran to its end; the note that says so.
fn end_status(
    ctx: &RunCtx<'_, '_>,
    error: Option<&impl std::fmt::Display>,
    duration: Nanos,
    label: &str,
    notes: &mut Vec<String>,
) -> RunStatus {
    if let Some(e) = error {
        notes.push(format!("{label}measurement failed: {e}"));
        RunStatus::Failed
    } else if let (Some(value), Some(limit)) = (ctx.stopped_above, ctx.config.stop_above) {
        let limit = ctx.names.given(Setting::StopAbove, &limit.to_string());
        notes.push(format!(
            "{label}stopped after {duration}: a value of {value} exceeded {limit}"
        ));
        RunStatus::Interrupted
    } else if ctx.stop.stopped() {
        notes.push(format!(
            "{label}stopped by signal {} after {duration}",
            ctx.stop.signal().unwrap_or(0)
        ));
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    }
}

/// What a cell's threads and tracer gave back at its end.
struct CellEnd {
    snapshot: ProbeSnapshot,
    timeline: Vec<TimelineChunk>,
    trace: Option<TraceFinal>,
    duration: Nanos,
    steal_before: Vec<(CpuId, u64)>,
    /// The workload's final characterization, and its line when it did not
    /// end cleanly (told with one cell of a group).
    workload: Option<WorkloadStats>,
    load_note: Option<String>,
}

/// The cell's final checkpoint: the probe's exact figures with the
/// tracer's, the noise and UDP figures completed, the workload's
/// characterization; their notes.
fn final_checkpoint(
    ctx: &RunCtx<'_, '_>,
    cell: &CellSpec,
    end: CellEnd,
    label: &str,
    notes: &mut Vec<String>,
) -> Checkpoint {
    let ProbeSnapshot { mut metrics, stats } = end.snapshot;
    let mut timeline = end.timeline;
    let mut noise = stats.noise;
    let mut summary = None;
    let mut episodes = Vec::new();
    if let Some(t) = end.trace {
        metrics.extend(t.metrics);
        timeline.extend(t.timeline);
        if let Some(e) = &t.error {
            notes.push(format!("{label}{e}"));
        }
        if t.summary.lost_records > 0 {
            notes.push(format!(
                "{label}the kernel lost {} trace records (ring full): episodes near them are marked incomplete",
                t.summary.lost_records
            ));
        }
        for n in &mut noise {
            if let Some(classes) = t.noise_classes.get(&n.cpu.0) {
                n.classes = classes.clone();
            }
        }
        summary = Some(t.summary);
        episodes = t.episodes;
    }
    if !noise.is_empty() {
        let steal_after = trace_session::read_steal(&cell.probe.cpus());
        finish_noise(
            cell,
            ctx,
            &mut noise,
            &metrics,
            &end.steal_before,
            &steal_after,
        );
    }
    if let Some(u) = &stats.udp {
        notes.extend(udp_notes(u, label));
    }
    let workload = end.workload;
    if let Some(line) = end.load_note {
        notes.push(format!("{label}{line}"));
    }
    let (episodes, windows) = split_episodes(episodes);
    Checkpoint {
        duration: end.duration,
        now_unix: Nanos(ctx.clock.realtime_ns()),
        metrics,
        timeline,
        noise,
        timer: stats.timer,
        udp: stats.udp,
        workload,
        episodes,
        windows,
        trace_summary: summary,
    }
}

/// The UDP probe's losses and clock steps, for the run's notes.
fn udp_notes(u: &UdpStats, label: &str) -> Vec<String> {
    let mut notes = Vec::new();
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
    notes
}

/// Steal time, RT throttling and trace classes of the noise figures.
fn finish_noise(
    cell: &CellSpec,
    ctx: &RunCtx<'_, '_>,
    noise: &mut [NoiseCpuStats],
    metrics: &[MetricResult],
    steal_before: &[(CpuId, u64)],
    steal_after: &[(CpuId, u64)],
) {
    for n in noise.iter_mut() {
        let before = steal_before.iter().find(|(c, _)| *c == n.cpu);
        let after = steal_after.iter().find(|(c, _)| *c == n.cpu);
        if let (Some((_, b)), Some((_, a))) = (before, after) {
            n.steal_ns = Some(Nanos(a.saturating_sub(*b)));
        }
        let Some(gaps) = metrics
            .iter()
            .find(|m| m.name == metric::NOISE_GAP && m.cpu == Some(n.cpu))
        else {
            continue;
        };
        if let ProbeSpec::Noise(cfg) = &cell.probe {
            if cfg.pause.0 == 0 && cfg.policy.is_real_time() {
                n.findings
                    .extend(latscope_probes::noise::rt_throttling_finding(
                        &gaps.histogram,
                        n.active_ns,
                        ctx.system.rt_runtime_us,
                        ctx.system.rt_period_us,
                    ));
            }
        }
    }
}

/// Time measured so far: from time zero to now, never past the planned end.
fn measured(ctx: &RunCtx<'_, '_>, cell: &CellSpec, start_ns: u64) -> Nanos {
    let elapsed = Nanos(ctx.clock.monotonic_ns().saturating_sub(start_ns));
    cell.probe.duration().map_or(elapsed, |d| elapsed.min(d))
}

/// The housekeeping loop: progress, checkpoints, the workload's
/// characterization once a second, until the threads of every cell of the
/// group end. A checkpoint the sink refuses is kept and sent again with
/// the next one.
fn housekeep(
    members: &mut [Member<'_>],
    ctx: &mut RunCtx<'_, '_>,
    session: Option<&TraceSession>,
    load: &mut CellLoad,
) {
    let Some(lead) = members.first().map(|m| m.cell) else {
        return;
    };
    let finished = |members: &[Member<'_>]| members.iter().all(|m| m.running.finished());
    let start_ns = members[0].running.start_ns();
    let checkpoint = ctx.config.checkpoint.0;
    let mut last_checkpoint = ctx.clock.monotonic_ns();
    let mut last_sample = last_checkpoint;
    while !finished(members) {
        ctx.clock.sleep(TICK);
        if finished(members) {
            // The final figures follow at once: no checkpoint of the end.
            break;
        }
        let now = ctx.clock.monotonic_ns();
        if now.saturating_sub(last_sample) >= 1_000_000_000 {
            last_sample = now;
            load.tick();
        }
        let elapsed = measured(ctx, lead, start_ns);
        let progress = crate::together::progress(members.iter().map(|m| m.running.as_ref()));
        ctx.max_latency = ctx.max_latency.max(progress.max_latency);
        if let Some(limit) = ctx.config.stop_above {
            if progress.max_latency > limit && !ctx.stop.stopped() {
                ctx.stopped_above = Some(progress.max_latency);
                ctx.stop.request(0);
            }
        }
        ctx.observer.progress(lead, elapsed, progress);
        if now.saturating_sub(last_checkpoint) >= checkpoint {
            last_checkpoint = now;
            for (i, m) in members.iter_mut().enumerate() {
                let traced = session.map(|s| (s, i));
                let cp = snapshot(ctx, m.running.as_ref(), m.cell, traced, load);
                let stored = m.sinks.write(ctx, m.cell, cp);
                ctx.observer.checkpoint(m.cell, elapsed, stored);
            }
        }
    }
}

/// A checkpoint of a running cell (with its group's analysis, when
/// traced).
fn snapshot(
    ctx: &RunCtx<'_, '_>,
    probe: &dyn RunningProbe,
    cell: &CellSpec,
    traced: Option<(&TraceSession, usize)>,
    load: &CellLoad,
) -> Checkpoint {
    // The timeline first: every second it holds is then in the histograms
    // of the snapshot taken just after (never the other way round).
    let mut timeline = probe.drain_timeline();
    let ProbeSnapshot { mut metrics, stats } = probe.snapshot();
    let mut summary: Option<TraceSummary> = None;
    let mut episodes = Vec::new();
    if let Some((s, group)) = traced {
        let (m, sum, eps, seconds) = s.checkpoint(group);
        metrics.extend(m);
        summary = sum;
        episodes = eps;
        timeline.extend(seconds);
    }
    let (episodes, windows) = split_episodes(episodes);
    Checkpoint {
        duration: measured(ctx, cell, probe.start_ns()),
        now_unix: Nanos(ctx.clock.realtime_ns()),
        metrics,
        timeline,
        noise: stats.noise,
        timer: stats.timer,
        udp: stats.udp,
        workload: load.stats(ctx.clock.as_ref()),
        episodes,
        windows,
        trace_summary: summary,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use latscope_model::{Breakdown, CpuId};
    use latscope_record::SecondStats;

    fn episode(seq: u32) -> Episode {
        Episode {
            seq,
            cpu: CpuId(0),
            metric: metric::TIMER_LATENCY.into(),
            expiry_ns: Nanos(u64::from(seq)),
            offset_ns: Nanos(u64::from(seq)),
            latency_ns: Nanos(1_000_000),
            breakdown: Breakdown::default(),
            stacks: Vec::new(),
        }
    }

    #[test]
    fn what_a_failing_sink_is_owed_is_bounded_and_the_oldest_goes_first() {
        let mut s = CellSinks {
            stored: Some(CellKey(1)),
            mirror: CellKey(1),
            // Two days of one series in hour chunks, and 1,500 episodes.
            pending_timeline: (0..48)
                .map(|h| TimelineChunk {
                    metric: metric::TIMER_LATENCY.into(),
                    cpu: Some(CpuId(0)),
                    first_second: h * 3_600,
                    seconds: vec![SecondStats::default(); 3_600],
                })
                .collect(),
            pending_episodes: (1..=1_500).map(episode).collect(),
            pending_windows: (1..=1_500)
                .map(|seq| EpisodeWindow {
                    seq,
                    cpu: CpuId(0),
                    events: Vec::new(),
                    truncated: 0,
                })
                .collect(),
            dropped_seconds: 0,
            dropped_episodes: 0,
        };
        s.bound();
        let kept: usize = s.pending_timeline.iter().map(|c| c.seconds.len()).sum();
        assert_eq!(kept, PENDING_SECONDS);
        assert_eq!(
            s.pending_timeline[0].first_second,
            24 * 3_600,
            "the newest day"
        );
        assert_eq!(s.dropped_seconds, 24 * 3_600);
        assert_eq!(s.pending_episodes.len(), PENDING_EPISODES);
        assert_eq!(s.pending_episodes[0].seq, 501);
        assert_eq!(s.pending_windows.len(), PENDING_EPISODES);
        assert_eq!(s.pending_windows[0].seq, 501);
        assert_eq!(s.dropped_episodes, 500);
        let note = s.dropped_note("").unwrap();
        assert!(
            note.contains("86400 timeline seconds and 500 episodes"),
            "{note}"
        );
        // Within the bounds nothing goes.
        let before = (s.dropped_seconds, s.dropped_episodes);
        s.bound();
        assert_eq!((s.dropped_seconds, s.dropped_episodes), before);
    }
}
