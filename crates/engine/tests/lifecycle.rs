//! The run lifecycle, driven deterministically: the simulated probe with
//! scripted latencies, a scripted clock that advances only when the engine
//! sleeps, and in-memory or failing sinks. What only a real kernel can show
//! is in the CLI's end-to-end tests.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use latscope_engine::{
    BuildProbe, CellSpec, Env, Guards, MemorySink, Observer, ProbeSpec, RunConfig, Sink, SinkError,
    Stop,
};
use latscope_model::{metric, CellSettings, CpuId, CpuSet, Nanos, RunId, RunStatus, SimSettings};
use latscope_probes::sim::{LatencyScript, SimConfig, SimProbe};
use latscope_probes::{Clock, Progress, ScriptedClock};
use latscope_store::Checkpoint;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

pub(crate) fn config(checkpoint_s: u64) -> RunConfig {
    RunConfig {
        checkpoint: Nanos(checkpoint_s * S),
        trace: None,
        guards: Guards::NONE,
        command_line: vec!["test".into()],
        stop_above: None,
        unbounded: false,
    }
}

/// A simulated cell: `cpus` CPUs, 1 ms period, `seconds` long; sample k on
/// a CPU is late by 10 µs + k mod 100 µs, and fails after `fail_after_s`.
fn sim_cell(
    clock: &Arc<ScriptedClock>,
    index: u32,
    of: u32,
    cpus: &[u32],
    seconds: u64,
    fail_after_s: Option<u64>,
) -> CellSpec {
    let latency: LatencyScript = Arc::new(|_cpu, k| Nanos(10_000 + (k % 100) * 1_000));
    scripted_cell(clock, (index, of), cpus, seconds, fail_after_s, latency)
}

/// As [`sim_cell`], with the latencies of `latency`.
pub(crate) fn scripted_cell(
    clock: &Arc<ScriptedClock>,
    (index, of): (u32, u32),
    cpus: &[u32],
    seconds: u64,
    fail_after_s: Option<u64>,
    latency: LatencyScript,
) -> CellSpec {
    let clock: Arc<dyn Clock> = clock.clone();
    let cpus: Vec<CpuId> = cpus.iter().map(|&c| CpuId(c)).collect();
    let cfg = SimConfig {
        cpus: cpus.clone(),
        period: Nanos(MS),
        duration: Some(Nanos(seconds * S)),
        threshold: Some(Nanos::from_micros(100)),
        clock,
        latency,
        fail_after: fail_after_s.map(|s| Nanos(s * S)),
        handoff: 0,
    };
    let build: BuildProbe = Arc::new(move || Ok(Box::new(SimProbe::new(cfg.clone())?) as _));
    CellSpec {
        index,
        of,
        probe: ProbeSpec::Custom {
            name: "sim",
            cpus,
            duration: Some(Nanos(seconds * S)),
            build,
            settings: CellSettings::Sim(SimSettings {
                period_ns: Nanos(MS),
                ..SimSettings::default()
            }),
        },
        workload: "none".into(),
        load_level: "medium".into(),
        warmup: Nanos::ZERO,
        cpus: online(),
        together: Vec::new(),
        instance: 0,
    }
}

/// As [`sim_cell`] on CPU 0, but sample `spike_at` is late by 2 ms.
fn spike_cell(
    clock: &Arc<ScriptedClock>,
    index: u32,
    of: u32,
    seconds: u64,
    spike_at: u64,
) -> CellSpec {
    let latency: LatencyScript = Arc::new(move |_cpu, k| {
        if k == spike_at {
            Nanos(2 * MS)
        } else {
            Nanos(10_000 + (k % 100) * 1_000)
        }
    });
    scripted_cell(clock, (index, of), &[0], seconds, None, latency)
}

fn online() -> CpuSet {
    [CpuId(0), CpuId(1)].into_iter().collect()
}

/// Records every checkpoint a sink receives, and can fail from a given one.
#[derive(Default)]
struct Recorder {
    inner: MemorySink,
    checkpoints: Vec<(Nanos, u64, u64)>,
    /// Fail checkpoints number `fail_from..fail_until` (0-based).
    fail: Option<std::ops::Range<usize>>,
    calls: usize,
}

impl Recorder {
    fn samples(cp: &Checkpoint) -> u64 {
        cp.metrics
            .iter()
            .filter(|m| m.name == metric::TIMER_LATENCY)
            .map(|m| m.histogram.count())
            .sum()
    }
}

impl Sink for Recorder {
    fn create_run(
        &mut self,
        meta: &latscope_model::RunMeta,
        system: &latscope_model::SystemInfo,
        caps: &latscope_model::Capabilities,
    ) -> Result<RunId, SinkError> {
        self.inner.create_run(meta, system, caps)
    }
    fn update_capabilities(
        &mut self,
        run: RunId,
        caps: &latscope_model::Capabilities,
    ) -> Result<(), SinkError> {
        self.inner.update_capabilities(run, caps)
    }
    fn add_cell(
        &mut self,
        run: RunId,
        meta: &latscope_model::CellMeta,
    ) -> Result<latscope_engine::CellKey, SinkError> {
        self.inner.add_cell(run, meta)
    }
    fn checkpoint(
        &mut self,
        run: RunId,
        cell: latscope_engine::CellKey,
        cp: &Checkpoint,
    ) -> Result<(), SinkError> {
        let n = self.calls;
        self.calls += 1;
        if self.fail.as_ref().is_some_and(|r| r.contains(&n)) {
            return Err(SinkError("store s.db: the disk is full".into()));
        }
        let seconds: u64 = cp.timeline.iter().map(|c| c.seconds.len() as u64).sum();
        self.checkpoints
            .push((cp.duration, Recorder::samples(cp), seconds));
        self.inner.checkpoint(run, cell, cp)
    }
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        self.inner.finish_run(run, status, ended, notes)
    }
}

/// Stops the run (as a signal would) once a cell has measured `at`.
struct StopAt {
    stop: Stop,
    at: Nanos,
    signal: i32,
    progress: Vec<(Nanos, Progress)>,
    notices: Arc<Mutex<Vec<String>>>,
}

impl Observer for StopAt {
    fn sink_failed(&mut self, e: &SinkError) {
        self.notice(&format!("sink failed: {e}"));
    }
    fn notice(&mut self, line: &str) {
        if let Ok(mut n) = self.notices.lock() {
            n.push(line.to_string());
        }
    }
    fn progress(&mut self, _cell: &CellSpec, elapsed: Nanos, p: Progress) {
        self.progress.push((elapsed, p));
        if elapsed >= self.at && !self.stop.stopped() {
            self.stop.request(self.signal);
        }
    }
}

fn observer(stop: &Stop, at: Nanos, signal: i32) -> StopAt {
    StopAt {
        stop: stop.clone(),
        at,
        signal,
        progress: Vec::new(),
        notices: Arc::default(),
    }
}

fn env<'a>(clock: &Arc<ScriptedClock>, stop: &Stop, obs: &'a mut StopAt) -> Env<'a> {
    Env {
        clock: clock.clone(),
        stop: stop.clone(),
        observer: obs,
        names: &latscope_model::Neutral,
        system: Some(latscope_model::SystemInfo::default()),
        rescue: None,
    }
}

#[test]
fn checkpoints_hold_exactly_what_was_measured_by_then() {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    let mut sink = Recorder::default();
    let cells = [sim_cell(&clock, 0, 1, &[0, 1], 10, None)];
    let out = latscope_engine::run(
        &config(2),
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Complete);
    assert!(out.sink_error.is_none());
    // Four checkpoints while measuring (2, 4, 6, 8 s) and the final one.
    let durations: Vec<u64> = sink.checkpoints.iter().map(|c| c.0 .0 / MS).collect();
    assert_eq!(durations.len(), 5, "{durations:?}");
    for (i, (d, samples, _)) in sink.checkpoints.iter().enumerate().take(4) {
        // Two CPUs, one sample per ms with a deadline at or before the
        // checkpoint's time.
        let expected = 2 * (d.0 / MS);
        assert!(
            samples.abs_diff(expected) <= 2,
            "checkpoint {i} at {d}: {samples} samples, expected {expected}"
        );
    }
    let last = sink.checkpoints[4];
    assert_eq!(last.0, Nanos(10 * S));
    assert_eq!(last.1, 2 * 10_000, "every deadline of 10 s on 2 CPUs");
    // Timeline: 10 complete seconds per CPU, each sent once.
    let sent: u64 = sink.checkpoints.iter().map(|c| c.2).sum();
    assert_eq!(sent, 2 * 10, "timeline seconds sent");
    let tl = sink
        .inner
        .timeline(0, metric::TIMER_LATENCY, Some(CpuId(1)));
    assert_eq!(tl.len(), 10);
    assert!(tl.iter().all(|s| s.count == 1_000), "{tl:?}");
    // The outcome's copy is the same run.
    let c = &out.result.cells[0];
    assert_eq!(c.meta.duration_ns, Nanos(10 * S));
    assert_eq!(c.meta.probe, "sim");
}

fn stopped_mid_cell(signal: i32) {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(3_050 * MS), signal);
    let mut sink = Recorder::default();
    let cells = [
        sim_cell(&clock, 0, 2, &[0], 10, None),
        sim_cell(&clock, 1, 2, &[0], 10, None),
    ];
    let out = latscope_engine::run(
        &config(1),
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Interrupted);
    assert_eq!(out.result.cells.len(), 1, "the second cell never started");
    let c = &out.result.cells[0];
    // Stopped at the first tick at or after 3.05 s; the probe saw the
    // request at that tick.
    assert!(
        c.meta.duration_ns >= Nanos(3_050 * MS) && c.meta.duration_ns <= Nanos(3_200 * MS),
        "{}",
        c.meta.duration_ns
    );
    let samples: u64 = c
        .metrics
        .iter()
        .filter(|m| m.name == metric::TIMER_LATENCY)
        .map(|m| m.histogram.count())
        .sum();
    // Deadlines fall at 0, 1, 2, ... ms from time zero.
    assert_eq!(
        samples,
        c.meta.duration_ns.0 / MS + 1,
        "every deadline until the stop"
    );
    let stored = sink.inner.run().unwrap();
    assert_eq!(stored.meta.status, RunStatus::Interrupted);
    assert!(
        stored
            .meta
            .notes
            .iter()
            .any(|n| n.contains(&format!("stopped by signal {signal}"))),
        "{:?}",
        stored.meta.notes
    );
    assert_eq!(stored.cells[0].metrics, c.metrics, "the store has it all");
}

#[test]
fn ctrl_c_mid_cell_keeps_everything_measured() {
    stopped_mid_cell(2);
}

#[test]
fn sigterm_mid_cell_keeps_everything_measured() {
    stopped_mid_cell(15);
}

#[test]
fn a_failing_cell_ends_the_suite_and_keeps_the_cells_before_it() {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    let mut sink = Recorder::default();
    let cells = [
        sim_cell(&clock, 0, 3, &[0], 2, None),
        sim_cell(&clock, 1, 3, &[0], 5, Some(1)),
        sim_cell(&clock, 2, 3, &[0], 2, None),
    ];
    let out = latscope_engine::run(
        &config(1),
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(out.result.cells.len(), 2, "the third cell did not run");
    assert_eq!(out.result.cells[0].meta.duration_ns, Nanos(2 * S));
    let failed = &out.result.cells[1];
    assert!(failed.meta.duration_ns < Nanos(2 * S));
    let notes = &sink.inner.run().unwrap().meta.notes;
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("cell 1 (sim, other, none): measurement failed")),
        "{notes:?}"
    );
}

#[test]
fn progress_is_reported_every_tick_and_never_goes_back() {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    let mut sink = Recorder::default();
    let cells = [sim_cell(&clock, 0, 1, &[0], 3, None)];
    latscope_engine::run(
        &config(10),
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    // One report per 100 ms tick until the 3 s cell ends.
    assert!(
        (29..=31).contains(&obs.progress.len()),
        "{}",
        obs.progress.len()
    );
    for w in obs.progress.windows(2) {
        assert!(w[1].0 >= w[0].0, "elapsed goes back: {w:?}");
        assert!(w[1].1.samples >= w[0].1.samples);
    }
    let (elapsed, p) = obs.progress[9];
    assert_eq!(elapsed, Nanos(S), "the tenth tick is at 1 s");
    assert!(p.samples.abs_diff(1_000) <= 1, "{}", p.samples);
    assert_eq!(p.max_latency, Nanos(109_000));
}

/// A 6 s simulated run on CPU 0 into a sink whose checkpoints `fail`
/// (numbered from 0); the outcome, the sink and the observer's notices.
fn run_with_failing_checkpoints(
    fail: std::ops::Range<usize>,
) -> (latscope_engine::RunOutcome, Recorder, Vec<String>) {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    let notices = Arc::clone(&obs.notices);
    let mut sink = Recorder {
        fail: Some(fail),
        ..Recorder::default()
    };
    let cells = [sim_cell(&clock, 0, 1, &[0], 6, None)];
    let out = latscope_engine::run(
        &config(1),
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    let notices = notices.lock().unwrap().clone();
    (out, sink, notices)
}

#[test]
fn a_failing_sink_loses_nothing_it_gets_back() {
    // Checkpoints 1 and 2 (at 2 s and 3 s) fail, as on a full disk that
    // is then cleared.
    let (out, sink, notices) = run_with_failing_checkpoints(1..3);
    assert_eq!(out.status, RunStatus::Complete, "measuring went on");
    // It came back: later checkpoints carried what the failed ones held.
    assert!(out.sink_error.is_none(), "{:?}", out.sink_error);
    assert_eq!(
        notices
            .iter()
            .filter(|n| n.contains("disk is full"))
            .count(),
        1,
        "said once: {notices:?}"
    );
    // The timeline seconds of the failed checkpoints were sent again.
    let tl = sink
        .inner
        .timeline(0, metric::TIMER_LATENCY, Some(CpuId(0)));
    assert_eq!(tl.len(), 6, "{tl:?}");
    assert!(tl.iter().all(|s| s.count == 1_000));
    // The sink's copy is whole, and its notes say what happened.
    let stored = sink.inner.run().unwrap();
    assert_eq!(stored.meta.status, RunStatus::Complete);
    assert!(
        stored
            .meta
            .notes
            .iter()
            .any(|n| n.contains("refused 2 checkpoint(s)") && n.contains("nothing was lost")),
        "{:?}",
        stored.meta.notes
    );
    assert_eq!(out.result.meta.status, RunStatus::Complete);
    assert_eq!(out.result.cells[0].meta.duration_ns, Nanos(6 * S));
}

#[test]
fn a_sink_that_fails_to_the_end_holds_the_run_up_to_its_last_good_checkpoint() {
    // Every checkpoint from the second on fails, the final one too.
    let (out, sink, _) = run_with_failing_checkpoints(1..1_000);
    assert_eq!(out.status, RunStatus::Complete, "measuring went on");
    assert!(out.sink_error.is_some());
    let stored = sink.inner.run().unwrap();
    assert_eq!(stored.meta.status, RunStatus::Failed);
    assert!(stored
        .meta
        .notes
        .iter()
        .any(|n| n.contains("the store failed")));
    assert_eq!(out.result.cells[0].meta.duration_ns, Nanos(6 * S));
}

#[test]
fn a_sink_that_cannot_record_the_run_fails_it_before_measuring() {
    struct Refuse;
    impl Sink for Refuse {
        fn create_run(
            &mut self,
            _: &latscope_model::RunMeta,
            _: &latscope_model::SystemInfo,
            _: &latscope_model::Capabilities,
        ) -> Result<RunId, SinkError> {
            Err(SinkError(
                "store s.db stayed locked by another process for 5 s".into(),
            ))
        }
        fn update_capabilities(
            &mut self,
            _: RunId,
            _: &latscope_model::Capabilities,
        ) -> Result<(), SinkError> {
            unreachable!()
        }
        fn add_cell(
            &mut self,
            _: RunId,
            _: &latscope_model::CellMeta,
        ) -> Result<latscope_engine::CellKey, SinkError> {
            unreachable!()
        }
        fn checkpoint(
            &mut self,
            _: RunId,
            _: latscope_engine::CellKey,
            _: &Checkpoint,
        ) -> Result<(), SinkError> {
            unreachable!()
        }
        fn finish_run(
            &mut self,
            _: RunId,
            _: RunStatus,
            _: Nanos,
            _: &[String],
        ) -> Result<(), SinkError> {
            unreachable!()
        }
    }
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    let cells = [sim_cell(&clock, 0, 1, &[0], 1, None)];
    let e = latscope_engine::run(
        &config(1),
        &cells,
        &online(),
        &mut Refuse,
        env(&clock, &stop, &mut obs),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "store s.db stayed locked by another process for 5 s"
    );
    assert!(obs.progress.is_empty(), "nothing was measured");
}

#[test]
fn a_cell_that_cannot_start_after_the_sink_failed_still_returns_the_run() {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    // Every checkpoint fails, as on a disk that stays full.
    let mut sink = Recorder {
        fail: Some(0..usize::MAX),
        ..Recorder::default()
    };
    let refuse: BuildProbe = Arc::new(|| {
        Err(latscope_probes::ProbeError::Spawn(
            "scripted start failure".into(),
        ))
    });
    let cells = [
        sim_cell(&clock, 0, 2, &[0], 2, None),
        CellSpec {
            probe: ProbeSpec::Custom {
                name: "sim",
                cpus: vec![CpuId(0)],
                duration: Some(Nanos(S)),
                build: refuse,
                settings: CellSettings::Sim(SimSettings::default()),
            },
            ..sim_cell(&clock, 1, 2, &[0], 1, None)
        },
    ];
    let out = latscope_engine::run(
        &config(1),
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Failed);
    assert!(out.sink_error.is_some());
    assert_eq!(out.result.cells.len(), 1);
    assert_eq!(out.result.cells[0].meta.duration_ns, Nanos(2 * S));
    assert!(
        out.result
            .meta
            .notes
            .iter()
            .any(|n| n.contains("scripted start failure")),
        "{:?}",
        out.result.meta.notes
    );
}

#[test]
fn stop_above_ends_the_run_within_a_tick_of_the_first_sample_above_it() {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    let mut sink = Recorder::default();
    let cells = [
        spike_cell(&clock, 0, 2, 10, 4_321),
        sim_cell(&clock, 1, 2, &[0], 10, None),
    ];
    let mut cfg = config(1);
    cfg.stop_above = Some(Nanos(MS));
    let out = latscope_engine::run(
        &cfg,
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Interrupted);
    assert_eq!(out.stopped_above, Some(Nanos(2 * MS)));
    assert_eq!(out.max_latency, Nanos(2 * MS));
    assert_eq!(out.result.cells.len(), 1, "the second cell never started");
    let d = out.result.cells[0].meta.duration_ns;
    assert!(
        d >= Nanos(4_321 * MS) && d <= Nanos(4_500 * MS),
        "stopped at {d}, the spike was at 4.321 s"
    );
    let stored = sink.inner.run().unwrap();
    assert_eq!(stored.meta.status, RunStatus::Interrupted);
    assert!(
        stored
            .meta
            .notes
            .iter()
            .any(|n| n.contains("a value of 2.00ms exceeded stop-above limit 1.00ms")),
        "{:?}",
        stored.meta.notes
    );
    // Everything up to the stop is stored, the spike included.
    let max = stored.cells[0]
        .metrics
        .iter()
        .filter(|m| m.name == metric::TIMER_LATENCY)
        .filter_map(|m| m.histogram.max())
        .max()
        .unwrap();
    assert!(max >= Nanos(1_990_000), "{max}");
}

#[test]
fn without_stop_above_the_run_completes_and_reports_its_maximum() {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = observer(&stop, Nanos(u64::MAX), 0);
    let mut sink = Recorder::default();
    let cells = [
        sim_cell(&clock, 0, 2, &[0], 3, None),
        spike_cell(&clock, 1, 2, 3, 1_500),
    ];
    let mut cfg = config(1);
    // A limit the run never exceeds stops nothing.
    cfg.stop_above = Some(Nanos(5 * MS));
    let out = latscope_engine::run(
        &cfg,
        &cells,
        &online(),
        &mut sink,
        env(&clock, &stop, &mut obs),
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!(out.stopped_above, None);
    assert_eq!(out.result.cells.len(), 2);
    assert_eq!(
        out.max_latency,
        Nanos(2 * MS),
        "the largest over both cells"
    );
}

/// Records what the bounded buffer dropped while the sink failed.
#[derive(Default)]
struct Drops {
    notices: Vec<String>,
    dropped: Vec<(u64, u64)>,
}

impl Observer for Drops {
    fn notice(&mut self, line: &str) {
        self.notices.push(line.to_string());
    }
    fn sink_dropped(&mut self, _cell: &CellSpec, seconds: u64, episodes: u64) {
        self.dropped.push((seconds, episodes));
    }
}

/// A store that fails for longer than the buffer holds (a day of
/// timeline): the oldest seconds are dropped at once as they overflow, the
/// observer hears it when it happens (one notice, then every drop), not
/// only in the run's notes at its end.
#[test]
fn a_store_down_for_over_a_day_drops_the_oldest_and_says_so_at_once() {
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let stop = Stop::new();
    let mut obs = Drops::default();
    let mut sink = Recorder {
        fail: Some(0..usize::MAX),
        ..Recorder::default()
    };
    // One sample a second for a day and 30 minutes.
    let seconds = 86_400 + 1_800;
    let c: Arc<dyn Clock> = clock.clone();
    let cfg = SimConfig {
        cpus: vec![CpuId(0)],
        period: Nanos(S),
        duration: Some(Nanos(seconds * S)),
        threshold: None,
        clock: c,
        latency: Arc::new(|_cpu, _k| Nanos(10_000)),
        fail_after: None,
        handoff: 0,
    };
    let build: BuildProbe = Arc::new(move || Ok(Box::new(SimProbe::new(cfg.clone())?) as _));
    let mut cell = sim_cell(&clock, 0, 1, &[0], seconds, None);
    if let ProbeSpec::Custom { build: b, .. } = &mut cell.probe {
        *b = build;
    }
    let env = Env {
        clock: clock.clone(),
        stop: stop.clone(),
        observer: &mut obs,
        names: &latscope_model::Neutral,
        system: Some(latscope_model::SystemInfo::default()),
        rescue: None,
    };
    let out = latscope_engine::run(&config(600), &[cell], &online(), &mut sink, env).unwrap();
    assert!(out.sink_error.is_some());
    let dropped: u64 = obs.dropped.iter().map(|d| d.0).sum();
    println!(
        "dropped {dropped} timeline seconds in {} drops; notices {:?}",
        obs.dropped.len(),
        obs.notices
    );
    // Past the day the buffer holds, in whole checkpoints' chunks.
    assert!((1_800 - 600..=1_800 + 600).contains(&dropped), "{dropped}");
    assert!(
        obs.dropped.len() >= 2,
        "told at each drop: {:?}",
        obs.dropped
    );
    let said: Vec<&String> = obs
        .notices
        .iter()
        .filter(|n| n.contains("is being dropped"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "one line at the first drop: {:?}",
        obs.notices
    );
}
