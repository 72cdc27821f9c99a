//! `kill -9` at random instants against a simulated run writing into a real
//! SQLite store: after each kill the store must open, pass
//! `PRAGMA integrity_check`, read back as an interrupted run, and hold the
//! last complete checkpoint of each cell, never a mix of two.
//!
//! The run is this test binary re-executed with [`CHILD_ENV`] set to the
//! store's path: [`child_run`] then runs the engine in real time (two
//! simulated cells on 2 CPUs at a 100 µs period, a checkpoint at every
//! housekeeping tick) until the parent kills it. The simulated probe's
//! snapshot carries a witness in another table than the metrics (per CPU,
//! `timer_stats.early_wakeups` is the number of samples of the same
//! snapshot, see `latscope_probes::sim`), so a checkpoint written in two
//! steps shows as a witness that disagrees with the `timer.latency` row.
//! The unit tests at the end show that [`check_store`] sees such a split
//! checkpoint and edited rows: the check is not a tautology.
//!
//! A checkpoint's write takes a few ms of each 100 ms housekeeping tick,
//! so uniform instants seldom fall inside one: every other kill is aimed
//! (the child marks in a file beside the store while it writes a
//! checkpoint; the parent waits for the mark and kills 0–5 ms later). With
//! the store's checkpoint split in two transactions (a local experiment, not
//! kept), this test failed within 9–31 kills in each of four runs; a split
//! with a 20 ms pause in between, at the first kill.
//!
//! Exact checks (any failure is a wrong store): integrity, the witness
//! equal to the sample count with the latency of the same last sample, the
//! timeline's chunks contiguous from second 0 with every second complete
//! but a finished cell's last, the timeline behind the histogram by less
//! than a second, no more samples than deadlines due by the stored
//! duration, a finished cell stored whole. Two bounds depend on how long the
//! housekeeping thread took between the snapshot and the reads after it
//! (the timeline drained after the snapshot may hold samples the histogram
//! has not got; the duration is read after both) and allow
//! [`SCHEDULING_MARGIN_S`].
//!
//! The random instants come from a seeded generator (seed printed, and
//! settable with [`SEED_ENV`]); the kill instants still vary with the
//! machine's speed, which is the point: every instant must be safe.
//! The kills run two at a time ([`LANES`]), each child in its own store.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use latscope_engine::{
    BuildProbe, CellKey, CellSpec, Env, Guards, ProbeSpec, Quiet, RunConfig, Sink, SinkError, Stop,
};
use latscope_model::{
    metric, Capabilities, CellMeta, CellSettings, CpuId, CpuSet, Nanos, RunId, RunMeta, RunStatus,
    SimSettings, SystemInfo,
};
use latscope_probes::sim::{SimConfig, SimProbe};
use latscope_probes::{Clock, RealClock, RunningProbe, ScriptedClock};
use latscope_record::MetricResult;
use latscope_store::{Checkpoint, Store, StoreError, INTERRUPTED_NOTE};
use rusqlite::Connection;

/// Set in the child: the path of the store it writes.
const CHILD_ENV: &str = "LATSCOPE_KILL_CHILD";
/// Overrides the seed of the kill instants.
const SEED_ENV: &str = "LATSCOPE_KILL_SEED";
const DEFAULT_SEED: u64 = 0x1a75_c09e_0012_0050;

const KILLS: usize = 50;
/// The kill comes this long after the child is spawned (uniform, ms): from
/// the store's creation to well into the second cell, past its first
/// complete timeline second...
const KILL_AFTER_MS: std::ops::RangeInclusive<u64> = 5..=1_800;
/// ... but the first few kills come during the child's start-up (before
/// the store exists, while it is created, before the run is recorded),
/// which the uniform instants would seldom hit.
const EARLY_KILLS: usize = 4;
const EARLY_KILL_AFTER_MS: std::ops::RangeInclusive<u64> = 0..=40;
/// A checkpoint's write takes a few ms of each 100 ms tick, so uniform
/// instants seldom fall inside one. Every other kill after the early ones
/// is therefore aimed: after its random instant the parent waits (at most
/// [`AIM_FOR_MS`]) until the child starts writing a checkpoint, then kills
/// it this many µs later (uniform), inside the write or just after it.
const AIMED_DELAY_US: std::ops::RangeInclusive<u64> = 0..=5_000;
const AIM_FOR_MS: u64 = 300;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
/// The simulated period: 10,000 samples a second per CPU.
const PERIOD: u64 = 100_000;
const CPUS: [u32; 2] = [0, 1];
/// Cell 0 ends early (so that many kills find it finished, with its final
/// checkpoint); cell 1 outlasts every kill.
const CELL_DURATIONS: [u64; 2] = [200 * MS, 30 * S];
/// Shorter than the housekeeping tick (100 ms): a checkpoint at every tick.
const CHECKPOINT: u64 = 20 * MS;
/// The system-wide metric the child adds to each checkpoint: its sample
/// count is the number of checkpoints the cell has stored, so the store
/// itself says how many checkpoints a kill left behind.
const CHECKPOINTS: &str = "test.checkpoints";
/// Bounds that depend on how long the housekeeping thread took between two
/// consecutive calls of one checkpoint (snapshot → drain → duration) allow
/// this much; everything else is exact.
const SCHEDULING_MARGIN_S: u64 = 2;

/// Sample `k`'s latency on `cpu`: differs from sample to sample, so the
/// witness's `max_early_ns` (the latest sample's latency) names the sample.
fn latency(cpu: CpuId, k: u64) -> Nanos {
    Nanos(10_000 + (k % 997) * 7 + u64::from(cpu.0))
}

fn sim_settings(duration: u64) -> CellSettings {
    let mut s = SimSettings {
        period_ns: Nanos(PERIOD),
        ..SimSettings::default()
    };
    s.common.duration_ns = Some(Nanos(duration));
    s.common.cpus = "0-1".into();
    CellSettings::Sim(s)
}

fn sim_config(clock: Arc<dyn Clock>, duration: u64) -> SimConfig {
    SimConfig {
        cpus: CPUS.iter().map(|&c| CpuId(c)).collect(),
        period: Nanos(PERIOD),
        duration: Some(Nanos(duration)),
        threshold: Some(Nanos::from_micros(15)),
        clock,
        latency: Arc::new(latency),
        fail_after: None,
        handoff: 0,
    }
}

fn sim_cell(clock: &Arc<dyn Clock>, index: u32, duration: u64) -> CellSpec {
    let cfg = sim_config(Arc::clone(clock), duration);
    let build: BuildProbe = Arc::new(move || Ok(Box::new(SimProbe::new(cfg.clone())?) as _));
    CellSpec {
        index,
        of: CELL_DURATIONS.len() as u32,
        probe: ProbeSpec::Custom {
            name: "sim",
            cpus: CPUS.iter().map(|&c| CpuId(c)).collect(),
            duration: Some(Nanos(duration)),
            build,
            settings: sim_settings(duration),
        },
        workload: "none".into(),
        load_level: "medium".into(),
        warmup: Nanos::ZERO,
        cpus: CPUS.iter().map(|&c| CpuId(c)).collect(),
        together: Vec::new(),
        instance: 0,
    }
}

/// `cp` with the [`CHECKPOINTS`] metric saying it is the cell's `n`th.
fn counted(cp: &Checkpoint, n: u64) -> Checkpoint {
    let mut cp = cp.clone();
    let mut m = MetricResult::new(CHECKPOINTS, None);
    m.histogram.record_n(1, n);
    cp.metrics.push(m);
    cp
}

/// The store, with each checkpoint counted into it (see [`CHECKPOINTS`]);
/// everything else goes to the store as it is. A byte in `writing` is 1
/// while a checkpoint is being written, so that the parent can tell how
/// many kills came in the middle of one.
struct Counting {
    store: Store,
    checkpoints: BTreeMap<CellKey, u64>,
    writing: std::fs::File,
}

/// The file [`Counting::writing`] keeps beside the store.
fn writing_marker(store: &Path) -> std::path::PathBuf {
    store.with_extension("writing")
}

impl Sink for Counting {
    fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId, SinkError> {
        Sink::create_run(&mut self.store, meta, system, caps)
    }
    fn update_capabilities(&mut self, run: RunId, caps: &Capabilities) -> Result<(), SinkError> {
        Sink::update_capabilities(&mut self.store, run, caps)
    }
    fn add_cell(&mut self, run: RunId, meta: &CellMeta) -> Result<CellKey, SinkError> {
        Sink::add_cell(&mut self.store, run, meta)
    }
    fn checkpoint(&mut self, run: RunId, cell: CellKey, cp: &Checkpoint) -> Result<(), SinkError> {
        use std::os::unix::fs::FileExt;
        let n = self.checkpoints.get(&cell).copied().unwrap_or(0) + 1;
        let cp = counted(cp, n);
        self.writing.write_all_at(b"1", 0).unwrap();
        let stored = Sink::checkpoint(&mut self.store, run, cell, &cp);
        self.writing.write_all_at(b"0", 0).unwrap();
        stored?;
        self.checkpoints.insert(cell, n);
        Ok(())
    }
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        Sink::finish_run(&mut self.store, run, status, ended_unix, notes)
    }
}

/// The process the parent kills: returns at once unless [`CHILD_ENV`] is set.
#[test]
fn child_run() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = Store::open(Path::new(&path)).unwrap();
    let mut sink = Counting {
        store,
        checkpoints: BTreeMap::new(),
        writing: std::fs::File::create(writing_marker(Path::new(&path))).unwrap(),
    };
    let clock: Arc<dyn Clock> = Arc::new(RealClock);
    let cells: Vec<CellSpec> = CELL_DURATIONS
        .iter()
        .zip(0..)
        .map(|(&d, i)| sim_cell(&clock, i, d))
        .collect();
    let config = RunConfig {
        checkpoint: Nanos(CHECKPOINT),
        trace: None,
        guards: Guards::NONE,
        command_line: vec!["kill-test-child".into()],
        stop_above: None,
        unbounded: false,
    };
    let online: CpuSet = CPUS.iter().map(|&c| CpuId(c)).collect();
    let out = latscope_engine::run(
        &config,
        &cells,
        &online,
        &mut sink,
        Env {
            clock,
            stop: Stop::new(),
            observer: &mut Quiet,
            names: &latscope_model::Neutral,
            system: Some(SystemInfo::default()),
            rescue: None,
        },
    );
    panic!("the run ended before it was killed: {out:?}");
}

/// A small seeded generator (SplitMix64): no dependency for a few numbers.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn in_range(&mut self, r: &std::ops::RangeInclusive<u64>) -> u64 {
        r.start() + self.next() % (r.end() - r.start() + 1)
    }
}

/// What a killed run left in its store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Found {
    /// The store opened as one (the kill came after its first migration).
    store: bool,
    /// The run was recorded (the kill came after `create_run`).
    run: bool,
    cells: usize,
    /// Checkpoints stored, over all cells.
    checkpoints: u64,
    /// Cells stored with their final checkpoint.
    finished_cells: usize,
    /// Timeline seconds stored, over all cells and CPUs.
    timeline_seconds: u64,
    /// CPUs whose stored timeline counts more samples than their stored
    /// histogram (see the check), and by how many samples at most.
    timeline_ahead: u64,
    max_lead: u64,
}

fn sql(what: &str) -> impl FnOnce(rusqlite::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// One row of `timeline_chunks`: CPU, first second, the seconds' counts.
type Chunk = (i64, u64, Vec<u64>);

/// Checks a store left by a killed run; `Err` says what is inconsistent.
fn check_store(path: &Path) -> Result<Found, String> {
    // The file as the kill left it (SQLite's own recovery of the WAL
    // aside), before the store's code opens and perhaps migrates it.
    if path.exists() {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(sql("opening"))?;
        let integrity: Vec<String> = conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(sql("integrity_check"))?;
        if integrity != ["ok"] {
            return Err(format!("PRAGMA integrity_check: {integrity:?}"));
        }
        let fk: usize = conn
            .prepare("PRAGMA foreign_key_check")
            .and_then(|mut s| Ok(s.query_map([], |_| Ok(()))?.count()))
            .map_err(sql("foreign_key_check"))?;
        if fk != 0 {
            return Err(format!("{fk} rows fail PRAGMA foreign_key_check"));
        }
    }
    let store = match Store::open_existing(path) {
        Ok(s) => s,
        Err(e @ (StoreError::Missing { .. } | StoreError::NotAStore { .. })) => {
            // Killed before the first migration committed: nothing was
            // recorded, and the next run must be able to use the file.
            let s = Store::open(path).map_err(|o| {
                format!("the store does not open for reading ({e}) nor for writing ({o})")
            })?;
            let runs = s.list_runs().map_err(|e| e.to_string())?;
            if !runs.is_empty() {
                return Err(format!("a store refused as '{e}' holds runs"));
            }
            return Ok(Found::default());
        }
        Err(e) => return Err(format!("the store does not open after the kill: {e}")),
    };
    let opened = Found {
        store: true,
        ..Found::default()
    };
    let conn = Connection::open(path).map_err(sql("opening"))?;

    let runs = store.list_runs().map_err(|e| e.to_string())?;
    let listing = match runs.as_slice() {
        [] => {
            let cells: i64 = conn
                .query_row("SELECT count(*) FROM cells", [], |r| r.get(0))
                .map_err(sql("counting cells"))?;
            if cells != 0 {
                return Err(format!("no run but {cells} cells"));
            }
            return Ok(opened);
        }
        [one] => one,
        more => return Err(format!("{} runs in a store of one run", more.len())),
    };
    let id = listing.meta.id;
    let run = store
        .load_run(id)
        .map_err(|e| format!("load_run({id}): {e}"))?;
    let (stored_status, checkpoint_time): (String, Option<i64>) = conn
        .query_row(
            "SELECT status, checkpoint_unix_ns FROM runs WHERE id = ?1",
            [id.0],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql("reading the run"))?;
    if stored_status != "running" {
        return Err(format!("a killed run is stored as '{stored_status}'"));
    }
    if run.meta.status != RunStatus::Interrupted
        || !run.meta.notes.iter().any(|n| n == INTERRUPTED_NOTE)
    {
        return Err(format!(
            "a killed run reads as {:?} with notes {:?}",
            run.meta.status, run.meta.notes
        ));
    }

    let ids: Vec<(i64, i64)> = conn
        .prepare("SELECT id, idx FROM cells WHERE run_id = ?1 ORDER BY idx")
        .and_then(|mut s| {
            s.query_map([id.0], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .map_err(sql("reading the cells"))?;
    if ids.len() != run.cells.len() || ids.iter().zip(0..).any(|((_, idx), i)| *idx != i) {
        return Err(format!(
            "cells {ids:?} (id, idx); load_run read {}",
            run.cells.len()
        ));
    }
    let mut found = Found {
        run: true,
        cells: ids.len(),
        ..opened
    };
    for (i, (&(cell_id, _), cell)) in ids.iter().zip(&run.cells).enumerate() {
        let finished = i + 1 < ids.len();
        let f = check_cell(&conn, cell_id, cell, finished).map_err(|e| format!("cell {i}: {e}"))?;
        found.checkpoints += f.checkpoints;
        found.finished_cells += usize::from(finished);
        found.timeline_seconds += f.timeline_seconds;
        found.timeline_ahead += f.timeline_ahead;
        found.max_lead = found.max_lead.max(f.max_lead);
    }
    if checkpoint_time.is_some() != (found.checkpoints > 0) {
        return Err(format!(
            "the run's checkpoint time is {checkpoint_time:?} after {} checkpoints",
            found.checkpoints
        ));
    }
    Ok(found)
}

/// The checks of one cell; `finished`: a later cell exists, so this one's
/// final checkpoint must be stored.
fn check_cell(
    conn: &Connection,
    cell_id: i64,
    cell: &latscope_record::CellResult,
    finished: bool,
) -> Result<Found, String> {
    let CellSettings::Sim(settings) = &cell.meta.settings else {
        return Err(format!("settings {:?}", cell.meta.settings));
    };
    let period = settings.period_ns.0;
    let planned = settings.common.duration_ns.ok_or("no planned duration")?.0;
    let per_second = S / period;
    let duration = cell.meta.duration_ns.0;

    let samples: BTreeMap<i64, (u64, Option<u64>)> = conn
        .prepare(
            "SELECT cpu, samples, max_ns FROM metrics \
             WHERE cell_id = ?1 AND name = ?2 AND kind = 'raw'",
        )
        .and_then(|mut s| {
            s.query_map(rusqlite::params![cell_id, metric::TIMER_LATENCY], |r| {
                Ok((r.get(0)?, (r.get(1)?, r.get(2)?)))
            })?
            .collect()
        })
        .map_err(sql("reading the metrics"))?;
    let witness: BTreeMap<i64, (u64, u64)> = conn
        .prepare("SELECT cpu, early_wakeups, max_early_ns FROM timer_stats WHERE cell_id = ?1")
        .and_then(|mut s| {
            s.query_map([cell_id], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?
                .collect()
        })
        .map_err(sql("reading timer_stats"))?;
    let counter: Vec<u64> = conn
        .prepare("SELECT samples FROM metrics WHERE cell_id = ?1 AND name = ?2 AND cpu = -1")
        .and_then(|mut s| {
            s.query_map(rusqlite::params![cell_id, CHECKPOINTS], |r| r.get(0))?
                .collect()
        })
        .map_err(sql("reading the checkpoint count"))?;
    let others: i64 = conn
        .query_row(
            "SELECT count(*) FROM metrics WHERE cell_id = ?1 AND NOT \
             ((name = ?2 AND kind = 'raw' AND cpu >= 0) OR (name = ?3 AND cpu = -1))",
            rusqlite::params![cell_id, metric::TIMER_LATENCY, CHECKPOINTS],
            |r| r.get(0),
        )
        .map_err(sql("counting other metrics"))?;
    if others != 0 {
        return Err(format!("{others} unexpected metric rows"));
    }
    let chunks: Vec<Chunk> = conn
        .prepare(
            "SELECT cpu, first_second, seconds, data, metric FROM timeline_chunks \
             WHERE cell_id = ?1 ORDER BY cpu, first_second, id",
        )
        .and_then(|mut s| {
            s.query_map([cell_id], |r| {
                let cpu: i64 = r.get(0)?;
                let first: u64 = r.get(1)?;
                let n: u64 = r.get(2)?;
                let data: Vec<u8> = r.get(3)?;
                let name: String = r.get(4)?;
                // Each second is (count, max, above) as little-endian u64.
                let counts = data
                    .chunks_exact(24)
                    .map(|c| u64::from_le_bytes(c[..8].try_into().unwrap()))
                    .collect::<Vec<_>>();
                let counts = if name == metric::TIMER_LATENCY && counts.len() as u64 == n {
                    counts
                } else {
                    Vec::new() // reported below as a malformed chunk
                };
                Ok((cpu, first, counts))
            })?
            .collect()
        })
        .map_err(sql("reading the timeline"))?;
    if chunks.iter().any(|c| c.2.is_empty()) {
        return Err("a timeline chunk of another metric or with a wrong length".into());
    }

    let Some(&checkpoints) = counter.first() else {
        // No checkpoint of this cell was stored: nothing but the cell row.
        if !samples.is_empty() || !witness.is_empty() || !chunks.is_empty() || duration != 0 {
            return Err(format!(
                "no checkpoint counted, yet {} metric rows, {} timer_stats rows, {} timeline chunks, duration {duration}",
                samples.len(),
                witness.len(),
                chunks.len()
            ));
        }
        if finished {
            return Err("a later cell exists but this one has no final checkpoint".into());
        }
        return Ok(Found::default());
    };
    let cpus: Vec<i64> = CPUS.iter().map(|&c| i64::from(c)).collect();
    if checkpoints == 0
        || counter.len() != 1
        || samples.keys().ne(cpus.iter())
        || witness.keys().ne(cpus.iter())
    {
        return Err(format!(
            "checkpoint counts {counter:?}, timer.latency rows for CPUs {:?}, timer_stats rows for CPUs {:?}",
            samples.keys().collect::<Vec<_>>(),
            witness.keys().collect::<Vec<_>>()
        ));
    }

    let mut found = Found {
        checkpoints,
        ..Found::default()
    };
    for &cpu in &cpus {
        let (m, max) = samples[&cpu];
        let (early, latest) = witness[&cpu];
        let cpu_id = CpuId(u32::try_from(cpu).unwrap());
        // The witness: the same snapshot ⇒ the same count and the latency of
        // the same last sample. A checkpoint half written, or two mixed,
        // differ here.
        if early != m {
            return Err(format!(
                "CPU {cpu}: timer_stats.early_wakeups = {early} but the timer.latency row has {m} samples: the two tables hold different checkpoints"
            ));
        }
        let expected = m.checked_sub(1).map_or(0, |k| latency(cpu_id, k).0);
        if latest != expected {
            return Err(format!(
                "CPU {cpu}: timer_stats.max_early_ns = {latest}, but sample {} had the latency {expected}",
                m.saturating_sub(1)
            ));
        }
        // load_run reads the same figures.
        let loaded = cell
            .metrics
            .iter()
            .find(|r| r.name == metric::TIMER_LATENCY && r.cpu == Some(cpu_id))
            .map(|r| (r.histogram.count(), r.histogram.max().map(|n| n.0)));
        let loaded_witness = cell
            .timer
            .iter()
            .find(|t| t.cpu == cpu_id)
            .map(|t| t.early_wakeups);
        if loaded != Some((m, max)) || loaded_witness != Some(early) {
            return Err(format!(
                "CPU {cpu}: load_run read {loaded:?} and {loaded_witness:?}, the tables hold {:?} and {early}",
                (m, max)
            ));
        }

        // The timeline: chunks follow each other from second 0, every
        // second complete but a cell's very last (only its final checkpoint
        // stores that one).
        let mut next = 0;
        let mut seconds = Vec::new();
        for (_, first, counts) in chunks.iter().filter(|c| c.0 == cpu) {
            if *first != next {
                return Err(format!(
                    "CPU {cpu}: a timeline chunk starts at second {first}, the one before ended at {next}"
                ));
            }
            next += counts.len() as u64;
            seconds.extend_from_slice(counts);
        }
        let t: u64 = seconds.iter().sum();
        let partial = seconds.iter().position(|&c| c != per_second);
        if let Some(p) = partial {
            if p + 1 != seconds.len() || seconds[p] > per_second || t != m {
                return Err(format!(
                    "CPU {cpu}: timeline second {p} holds {} samples (of {per_second}) in {seconds:?}, with {m} samples in the histogram",
                    seconds[p]
                ));
            }
        }
        // Exact: the seconds completed by the snapshot are all stored, so
        // the timeline lags the histogram by less than one second.
        if m > t + per_second {
            return Err(format!(
                "CPU {cpu}: the timeline holds {t} samples, the histogram {m}: more than a second apart"
            ));
        }
        // The engine drains the timeline just after the snapshot: a second
        // completed between the two is stored with samples the histogram
        // has not got yet. Counted, and bounded with the margin.
        if t > m {
            found.timeline_ahead += 1;
            found.max_lead = found.max_lead.max(t - m);
        }
        if t > m + SCHEDULING_MARGIN_S * per_second {
            return Err(format!(
                "CPU {cpu}: the timeline holds {t} samples, the histogram only {m}"
            ));
        }
        found.timeline_seconds += seconds.len() as u64;

        // The duration is taken just after the snapshot: every sample is
        // due by then (deadlines at 0, period, 2 × period, ...), and no
        // more than the margin's worth is missing.
        let due = duration / period + 1;
        if m > due || due - m > SCHEDULING_MARGIN_S * per_second {
            return Err(format!(
                "CPU {cpu}: {m} samples in a cell that has measured {duration} ns ({due} deadlines due at a {period} ns period)"
            ));
        }
        if finished {
            let all = planned.div_ceil(period);
            if duration != planned || m != all || t != m {
                return Err(format!(
                    "CPU {cpu}: a finished cell of {planned} ns has the duration {duration}, {m} samples (of {all}) and {t} in its timeline"
                ));
            }
        }
    }
    Ok(found)
}

/// Waits until the child starts writing a checkpoint (see [`Counting`]),
/// at most [`AIM_FOR_MS`]; whether it did.
fn wait_for_a_checkpoint(store: &Path) -> bool {
    let marker = writing_marker(store);
    let began = Instant::now();
    while began.elapsed() < Duration::from_millis(AIM_FOR_MS) {
        if std::fs::read(&marker).is_ok_and(|m| m == b"1") {
            return true;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    false
}

/// Before this instant the parent does not read the store before killing
/// (it would take part in the store's creation).
const LIVE_CHECK_AFTER_MS: u64 = 100;

/// Just before a kill: the child is a latscope process, and the run it
/// records (if it has one yet) reads as running. Whether there was a run.
fn check_live(path: &Path, pid: u32) -> bool {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert!(
        comm.starts_with("latscope"),
        "the child's command is {comm}"
    );
    let Ok(store) = Store::open_existing(path) else {
        return false;
    };
    let runs = store.list_runs().unwrap();
    let Some(run) = runs.first() else {
        return false;
    };
    assert_eq!(run.meta.pid, pid);
    assert_eq!(
        run.meta.status,
        RunStatus::Running,
        "a live run reads as {:?}: {:?}",
        run.meta.status,
        run.meta.notes
    );
    true
}

/// One kill: when, whether it is aimed at a checkpoint, and how long
/// after the checkpoint's start it comes.
struct KillPlan {
    i: usize,
    wait: u64,
    aimed: bool,
    delay_us: u64,
}

/// The kills' instants, drawn from `seed` in order.
fn kill_plans(seed: u64) -> Vec<KillPlan> {
    let mut rng = SplitMix64(seed);
    (0..KILLS)
        .map(|i| {
            let wait = rng.in_range(if i < EARLY_KILLS {
                &EARLY_KILL_AFTER_MS
            } else {
                &KILL_AFTER_MS
            });
            let aimed = i >= EARLY_KILLS && i % 2 == 1;
            let delay_us = if aimed {
                rng.in_range(&AIMED_DELAY_US)
            } else {
                0
            };
            KillPlan {
                i,
                wait,
                aimed,
                delay_us,
            }
        })
        .collect()
}

/// What one kill saw besides the store it left.
struct Killed {
    wait: u64,
    found: Found,
    live_run: bool,
    mid_checkpoint: bool,
    aimed_found: bool,
}

/// Spawns a child run, kills it as `plan` says and checks its store.
fn kill_once(plan: &KillPlan, exe: &Path, seed: u64) -> Killed {
    let (i, wait) = (plan.i, plan.wait);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill.db");
    let stderr_path = dir.path().join("child.stderr");
    // Run through a link named like latscope, so that the child's
    // command name makes it a live latscope process for the store's
    // liveness check: the run then reads as interrupted only because
    // its process is gone.
    let link = dir.path().join("latscope-kill-child");
    std::os::unix::fs::symlink(exe, &link).unwrap();
    let mut child = Command::new(&link)
        .args([
            "--exact",
            "kill::child_run",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(wait));
    let live_run = wait >= LIVE_CHECK_AFTER_MS && check_live(&path, child.id());
    let mut aimed_found = false;
    if plan.aimed {
        aimed_found = wait_for_a_checkpoint(&path);
        std::thread::sleep(Duration::from_micros(plan.delay_us));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    let context = || {
        format!(
            "kill {i} after {wait} ms (seed {seed}; {SEED_ENV} replays the instants); the child's stderr:\n{}",
            std::fs::read_to_string(&stderr_path).unwrap_or_default()
        )
    };
    assert_eq!(
        status.signal(),
        Some(9),
        "the child ended by itself ({status}): {}",
        context()
    );
    let marker = std::fs::read(writing_marker(&path)).unwrap_or_default();
    match check_store(&path) {
        Ok(found) => Killed {
            wait,
            found,
            live_run,
            mid_checkpoint: marker == b"1",
            aimed_found,
        },
        Err(e) => panic!("{e}\n{}", context()),
    }
}

/// The kills run in this many lanes at once: each child sleeps between
/// its simulated samples (the 50 kills took 3.9 CPU-s in 22.6 s over
/// two lanes), so five lanes take about a fifth of the time of one and
/// add their own timing spread, which is the point (every instant must
/// be safe). Five lanes take the 25 pairs of kills five each.
const LANES: usize = 5;

#[test]
fn kill_9_at_random_instants_leaves_the_last_whole_checkpoint() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let seed = std::env::var(SEED_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let plans = kill_plans(seed);
    let exe = std::env::current_exe().unwrap();
    let began = Instant::now();
    // Lanes take pairs of kills in turn, so that each has as many aimed
    // (odd) kills as the other.
    let killed: Vec<Killed> = std::thread::scope(|s| {
        let lanes: Vec<_> = (0..LANES)
            .map(|lane| {
                let (plans, exe) = (&plans, &exe);
                s.spawn(move || {
                    plans
                        .iter()
                        .filter(|p| (p.i / 2) % LANES == lane)
                        .map(|p| kill_once(p, exe, seed))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        lanes.into_iter().flat_map(|l| l.join().unwrap()).collect()
    });
    let results: Vec<(u64, Found)> = killed.iter().map(|k| (k.wait, k.found)).collect();
    let live_runs = killed.iter().filter(|k| k.live_run).count();
    let mid_checkpoint = killed.iter().filter(|k| k.mid_checkpoint).count();
    let aimed_found = killed.iter().filter(|k| k.aimed_found).count();
    let took = began.elapsed();

    let with = |p: fn(&Found) -> bool| results.iter().filter(|(_, f)| p(f)).count();
    let seen: Vec<u64> = results.iter().map(|(_, f)| f.checkpoints).collect();
    let stored: Vec<u64> = seen.iter().copied().filter(|&n| n > 0).collect();
    let mut tally: BTreeMap<u64, usize> = BTreeMap::new();
    for &n in &seen {
        *tally.entry(n).or_default() += 1;
    }
    eprintln!(
        "kill -9: {} kills in {:.1} s ({LANES} at a time; seed {seed}), instants {}..={} ms after spawning",
        results.len(),
        took.as_secs_f64(),
        results.iter().map(|r| r.0).min().unwrap_or(0),
        results.iter().map(|r| r.0).max().unwrap_or(0),
    );
    eprintln!(
        "  stores: {} not yet a store (no file, or before the first migration), {} without a run, {} with a run and 0 checkpoints, {} with ≥ 1 checkpoint (min {}, max {}, mean {:.1}); {} with cell 0 finished and cell 1 begun",
        with(|f| !f.store),
        with(|f| f.store && !f.run),
        with(|f| f.run && f.checkpoints == 0),
        stored.len(),
        stored.iter().min().unwrap_or(&0),
        stored.iter().max().unwrap_or(&0),
        stored.iter().sum::<u64>() as f64 / stored.len().max(1) as f64,
        with(|f| f.finished_cells > 0),
    );
    eprintln!(
        "  timeline: {} stores with complete seconds of a running cell; {} CPUs whose timeline was ahead of their histogram (by {} samples at most)",
        with(|f| f.timeline_seconds > 2 * f.finished_cells as u64),
        results.iter().map(|r| r.1.timeline_ahead).sum::<u64>(),
        results.iter().map(|r| r.1.max_lead).max().unwrap_or(0),
    );
    eprintln!(
        "  {mid_checkpoint} kills came while a checkpoint was being written (between the sink's call and its return); {aimed_found} of the {} aimed kills found a checkpoint starting",
        (EARLY_KILLS..KILLS).filter(|i| i % 2 == 1).count()
    );
    eprintln!(
        "  {live_runs} runs read as running just before their kill (the others: no run yet, or too early to look)"
    );
    eprintln!(
        "  checkpoints stored per kill (checkpoints×kills): {}",
        tally
            .iter()
            .map(|(n, k)| format!("{n}×{k}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert_eq!(results.len(), KILLS);
}

// --- the check itself can fail -------------------------------------------

/// A store holding one run of one simulated cell with two whole
/// checkpoints, at 1.5 s and 2.5 s, built on a scripted clock; the third
/// checkpoint (at 3.2 s) is returned unwritten.
fn stored_run(
    dir: &Path,
) -> (
    std::path::PathBuf,
    RunId,
    latscope_store::CellId,
    Checkpoint,
) {
    let path = dir.join("s.db");
    let mut store = Store::open(&path).unwrap();
    let clock = Arc::new(ScriptedClock::new(1_000 * S));
    let meta = RunMeta {
        command_line: vec!["test".into()],
        // Not a latscope process: the run reads as interrupted.
        pid: std::process::id(),
        hostname: "h".into(),
        tool_version: "0".into(),
        ..RunMeta::new(RunId(0), Nanos(clock.realtime_ns()))
    };
    let run = store
        .create_run(&meta, &SystemInfo::default(), &Capabilities::default())
        .unwrap();
    let cell = store
        .add_cell(
            run,
            &CellMeta {
                monotonic_start_ns: Nanos(clock.monotonic_ns()),
                ..CellMeta::new(0, "none", sim_settings(30 * S), Nanos::ZERO)
            },
        )
        .unwrap();
    assert_eq!(check_store(&path), Ok(found(0, 0)), "before any checkpoint");
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let probe = SimProbe::new(sim_config(dyn_clock, 30 * S))
        .unwrap()
        .start(Arc::new(AtomicBool::new(false)));
    let take = |until_ms: u64| {
        clock.advance(Duration::from_nanos(
            1_000 * S + until_ms * MS - clock.monotonic_ns(),
        ));
        let snap = probe.snapshot();
        Checkpoint {
            duration: Nanos(until_ms * MS),
            now_unix: Nanos(clock.realtime_ns()),
            metrics: snap.metrics,
            timeline: probe.drain_timeline(),
            timer: snap.stats.timer,
            ..Checkpoint::default()
        }
    };
    store
        .write_checkpoint(run, cell, &counted(&take(1_500), 1))
        .unwrap();
    assert_eq!(check_store(&path), Ok(found(1, 1)));
    store
        .write_checkpoint(run, cell, &counted(&take(2_500), 2))
        .unwrap();
    assert_eq!(check_store(&path), Ok(found(2, 2)));
    let third = counted(&take(3_200), 3);
    (path, run, cell, third)
}

/// What [`check_store`] finds in [`stored_run`]'s store: `seconds`
/// timeline seconds per CPU.
fn found(checkpoints: u64, seconds: u64) -> Found {
    Found {
        store: true,
        run: true,
        cells: 1,
        checkpoints,
        finished_cells: 0,
        timeline_seconds: seconds * CPUS.len() as u64,
        timeline_ahead: 0,
        max_lead: 0,
    }
}

#[test]
fn the_check_sees_a_checkpoint_written_in_two_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let (path, run, cell, third) = stored_run(dir.path());
    let mut store = Store::open(&path).unwrap();
    // As before issue 12: the metrics and timeline in one transaction...
    store
        .checkpoint(
            run,
            cell,
            third.duration,
            &third.metrics,
            &third.timeline,
            third.now_unix,
        )
        .unwrap();
    let e = check_store(&path).unwrap_err();
    assert!(
        e.contains("timer_stats.early_wakeups = 25001 but the timer.latency row has 32001"),
        "{e}"
    );
    // ... the figures in another: whole again.
    store.set_timer_stats(cell, &third.timer).unwrap();
    assert_eq!(check_store(&path), Ok(found(3, 3)));
    // The same checkpoint written whole.
    let dir2 = tempfile::tempdir().unwrap();
    let (path2, run2, cell2, third2) = stored_run(dir2.path());
    Store::open(&path2)
        .unwrap()
        .write_checkpoint(run2, cell2, &third2)
        .unwrap();
    assert_eq!(check_store(&path2), Ok(found(3, 3)));
}

#[test]
fn the_check_sees_rows_that_do_not_belong_together() {
    let edits = [
        (
            "UPDATE timer_stats SET early_wakeups = early_wakeups - 1 WHERE cpu = 1",
            "CPU 1: timer_stats.early_wakeups = 25000",
        ),
        (
            "UPDATE timer_stats SET max_early_ns = max_early_ns + 7 WHERE cpu = 0",
            "CPU 0: timer_stats.max_early_ns",
        ),
        (
            "DELETE FROM metrics WHERE cpu = 1",
            "timer.latency rows for CPUs [0]",
        ),
        (
            "UPDATE cells SET duration_ns = duration_ns + 3000000000",
            "25001 samples in a cell that has measured 5500000000 ns",
        ),
        (
            "UPDATE cells SET duration_ns = 2000000000",
            "25001 samples in a cell that has measured 2000000000 ns",
        ),
        (
            // A chunk sent twice.
            "INSERT INTO timeline_chunks (cell_id, metric, cpu, first_second, seconds, data) \
             SELECT cell_id, metric, cpu, first_second, seconds, data FROM timeline_chunks \
             WHERE cpu = 0 AND first_second = 1",
            "CPU 0: a timeline chunk starts at second 1, the one before ended at 2",
        ),
        (
            // A checkpoint's timeline lost.
            "DELETE FROM timeline_chunks WHERE cpu = 1 AND first_second = 1",
            "CPU 1: the timeline holds 10000 samples, the histogram 25001",
        ),
        (
            "UPDATE runs SET checkpoint_unix_ns = NULL",
            "the run's checkpoint time is None after 2 checkpoints",
        ),
        (
            "UPDATE runs SET status = 'complete'",
            "a killed run is stored as 'complete'",
        ),
    ];
    for (edit, expected) in edits {
        let dir = tempfile::tempdir().unwrap();
        let (path, ..) = stored_run(dir.path());
        let conn = Connection::open(&path).unwrap();
        assert_eq!(conn.execute(edit, []).unwrap(), 1, "{edit}");
        drop(conn);
        let e = check_store(&path).unwrap_err();
        assert!(e.contains(expected), "{edit}: {e}");
    }
}

#[test]
fn a_file_killed_before_its_first_migration_is_no_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    assert_eq!(check_store(&path), Ok(Found::default()), "no file");
    std::fs::write(&path, b"").unwrap();
    assert_eq!(check_store(&path), Ok(Found::default()), "an empty file");
    std::fs::write(&path, b"not sqlite at all, and long enough").unwrap();
    assert!(check_store(&path).is_err(), "a damaged file");
}
