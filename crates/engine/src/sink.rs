//! Where a run's results go while it runs.
//!
//! The engine writes through a [`Sink`]: the store is one (the CLI's), an
//! in-memory mirror is another (tests, and the rescue copy kept beside every
//! run), and the monitoring daemon will be a third. A sink that fails does
//! not stop the measurement: the engine keeps what could not be written and
//! tries again at the next checkpoint, and the run's outcome says what was
//! never stored.

use std::collections::BTreeMap;

use latscope_model::{
    Capabilities, CellMeta, CpuId, MicroContext, MicroResult, Nanos, RunId, RunMeta, RunStatus,
    SystemInfo,
};
pub use latscope_record::{CellKey, Checkpoint, Sink, SinkError};
use latscope_record::{CellResult, RunResult, SecondStats};

/// A run held in memory, with the same semantics as the store: metrics and
/// figures replaced at each checkpoint, timeline seconds appended, episodes
/// upserted by sequence number. The engine keeps one beside every run, so
/// that what a failing store could not take is still there at the end.
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    run: Option<RunResult>,
    /// Per cell index, metric and CPU: the timeline seconds in order.
    timelines: BTreeMap<(usize, String, Option<CpuId>), Vec<SecondStats>>,
    /// How many checkpoints each cell received.
    checkpoints: Vec<u32>,
    /// Drop timeline seconds and episodes instead of keeping them (see
    /// [`MemorySink::lean`]).
    lean: bool,
    /// A microbenchmark run's context and results, in cell order.
    micro_context: Option<MicroContext>,
    micro: Vec<MicroResult>,
}

impl MemorySink {
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A mirror that keeps no timeline seconds and no episodes, so that
    /// its memory stays constant however long the run: for the monitor,
    /// which runs for weeks and whose seconds and episodes live in the
    /// store.
    pub fn lean() -> MemorySink {
        MemorySink {
            lean: true,
            ..MemorySink::default()
        }
    }

    /// The run as received so far.
    pub fn run(&self) -> Option<&RunResult> {
        self.run.as_ref()
    }

    /// Takes the run out (the rescue copy at the end of a run).
    pub fn into_run(self) -> Option<RunResult> {
        self.run
    }

    /// A microbenchmark run's context, when one was recorded.
    pub fn micro_context(&self) -> Option<&MicroContext> {
        self.micro_context.as_ref()
    }

    /// A microbenchmark run's results, in cell order.
    pub fn micro(&self) -> &[MicroResult] {
        &self.micro
    }

    /// The timeline seconds received for a cell's metric on a CPU.
    pub fn timeline(&self, cell: usize, metric: &str, cpu: Option<CpuId>) -> &[SecondStats] {
        self.timelines
            .get(&(cell, metric.to_string(), cpu))
            .map_or(&[], Vec::as_slice)
    }

    /// How many checkpoints cell `cell` received (the final one included).
    pub fn checkpoints(&self, cell: usize) -> u32 {
        self.checkpoints.get(cell).copied().unwrap_or(0)
    }

    fn run_mut(&mut self) -> Result<&mut RunResult, SinkError> {
        self.run
            .as_mut()
            .ok_or_else(|| SinkError("no run was created".into()))
    }

    fn cell_mut(&mut self, cell: CellKey) -> Result<&mut CellResult, SinkError> {
        let run = self.run_mut()?;
        usize::try_from(cell.0)
            .ok()
            .and_then(|i| run.cells.get_mut(i))
            .ok_or_else(|| SinkError(format!("no cell {}", cell.0)))
    }
}

impl Sink for MemorySink {
    fn create_run(
        &mut self,
        meta: &RunMeta,
        system: &SystemInfo,
        caps: &Capabilities,
    ) -> Result<RunId, SinkError> {
        let mut meta = meta.clone();
        meta.id = RunId(1);
        self.run = Some(RunResult {
            meta,
            system: system.clone(),
            capabilities: caps.clone(),
            cells: Vec::new(),
        });
        self.timelines.clear();
        self.checkpoints.clear();
        self.micro_context = None;
        self.micro.clear();
        Ok(RunId(1))
    }

    fn update_capabilities(&mut self, _run: RunId, caps: &Capabilities) -> Result<(), SinkError> {
        let run = self.run_mut()?;
        run.capabilities = caps.clone();
        Ok(())
    }

    fn add_cell(&mut self, _run: RunId, meta: &CellMeta) -> Result<CellKey, SinkError> {
        let run = self.run_mut()?;
        run.cells.push(CellResult {
            meta: meta.clone(),
            metrics: Vec::new(),
            trace: None,
            episodes: Vec::new(),
            noise: Vec::new(),
            timer: Vec::new(),
            udp: None,
            workload_stats: None,
        });
        let key = CellKey(run.cells.len() as i64 - 1);
        self.checkpoints.push(0);
        Ok(key)
    }

    fn checkpoint(&mut self, _run: RunId, cell: CellKey, cp: &Checkpoint) -> Result<(), SinkError> {
        let lean = self.lean;
        let c = self.cell_mut(cell)?;
        c.meta.duration_ns = cp.duration;
        c.metrics = cp.metrics.clone();
        if !cp.noise.is_empty() {
            for n in &cp.noise {
                match c.noise.iter_mut().find(|x| x.cpu == n.cpu) {
                    Some(x) => *x = n.clone(),
                    None => c.noise.push(n.clone()),
                }
            }
            c.noise.sort_by_key(|n| n.cpu);
        }
        for t in &cp.timer {
            match c.timer.iter_mut().find(|x| x.cpu == t.cpu) {
                Some(x) => *x = t.clone(),
                None => c.timer.push(t.clone()),
            }
        }
        c.timer.sort_by_key(|t| t.cpu);
        if cp.udp.is_some() {
            c.udp = cp.udp.clone();
        }
        if cp.workload.is_some() {
            c.workload_stats = cp.workload.clone();
        }
        for e in cp.episodes.iter().filter(|_| !lean) {
            match c.episodes.iter_mut().find(|x| x.seq == e.seq) {
                Some(x) => *x = e.clone(),
                None => c.episodes.push(e.clone()),
            }
        }
        c.episodes.sort_by_key(|e| e.seq);
        if cp.trace_summary.is_some() {
            c.trace = cp.trace_summary.clone();
        }
        let index = usize::try_from(cell.0).unwrap_or(usize::MAX);
        for chunk in cp.timeline.iter().filter(|_| !self.lean) {
            let seconds = self
                .timelines
                .entry((index, chunk.metric.clone(), chunk.cpu))
                .or_default();
            // Chunks arrive in order; a chunk starting past the end leaves
            // empty seconds, as the store's reader does.
            let first = usize::try_from(chunk.first_second).unwrap_or(usize::MAX);
            if seconds.len() < first {
                seconds.resize(first, SecondStats::default());
            }
            seconds.truncate(first);
            seconds.extend(chunk.seconds.iter().copied());
        }
        if let Some(n) = self.checkpoints.get_mut(index) {
            *n += 1;
        }
        if let Some(run) = self.run.as_mut() {
            run.meta.checkpoint_unix_ns = Some(cp.now_unix);
        }
        Ok(())
    }

    fn finish_run(
        &mut self,
        _run: RunId,
        status: RunStatus,
        ended_unix: Nanos,
        notes: &[String],
    ) -> Result<(), SinkError> {
        let run = self.run_mut()?;
        run.meta.status = status;
        run.meta.ended_unix_ns = Some(ended_unix);
        run.meta.notes.extend(notes.iter().cloned());
        Ok(())
    }

    fn set_micro_context(&mut self, _run: RunId, context: &MicroContext) -> Result<(), SinkError> {
        self.run_mut()?;
        self.micro_context = Some(context.clone());
        Ok(())
    }

    fn add_micro_cell(
        &mut self,
        run: RunId,
        meta: &CellMeta,
        result: &MicroResult,
    ) -> Result<CellKey, SinkError> {
        let key = self.add_cell(run, meta)?;
        self.micro.push(result.clone());
        Ok(key)
    }
}
