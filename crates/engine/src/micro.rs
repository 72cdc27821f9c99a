//! `latscope micro` through the run lifecycle: every benchmark is a cell,
//! stored with its result as soon as it is measured (so a stop keeps every
//! finished one), on the housekeeping thread, which the session pins to the
//! measuring CPU. No guard is held and no probe thread started: the
//! microbenchmarks measure the calling thread itself.

use latscope_micro::ops::Benchmark;
use latscope_micro::session::{Session, SessionOptions};
use latscope_model::{
    CellMeta, CellSettings, CommonSettings, CpuId, CpuSet, MicroResult, MicroSettings, Nanos,
    Policy, RunStatus,
};

use crate::cell::CellOutcome;
use crate::config::{Guards, RunConfig};
use crate::ctx::RunCtx;
use crate::error::EngineError;
use crate::lifecycle::{self, Work};
use crate::outcome::{Env, RunOutcome};
use crate::sink::Sink;

/// What a microbenchmark run measures, and how.
pub struct MicroPlan {
    /// The benchmarks, in the order they run.
    pub benchmarks: Vec<Benchmark>,
    pub options: SessionOptions,
    /// The command line recorded with the run.
    pub command_line: Vec<String>,
}

/// Runs the plan's benchmarks as one run in `sink`, one cell each. Stops
/// before the next benchmark on a stop request (the run is then
/// interrupted, with a note of how many were measured). A session that
/// cannot start (the measuring CPU refused) ends the run as failed and
/// comes back as `Err`.
pub fn run_micro(
    plan: &MicroPlan,
    sink: &mut dyn Sink,
    env: Env<'_>,
) -> Result<RunOutcome, EngineError> {
    let config = RunConfig {
        checkpoint: Nanos::from_secs(1),
        trace: None,
        guards: Guards::NONE,
        command_line: plan.command_line.clone(),
        stop_above: None,
        unbounded: false,
    };
    let mut work = MicroCells {
        plan,
        session: None,
        started: 0,
    };
    let online = work.measured_cpus();
    lifecycle::execute(&config, &mut work, &online, sink, env)
}

/// The benchmarks as cells.
struct MicroCells<'p> {
    plan: &'p MicroPlan,
    session: Option<Session>,
    /// When the current benchmark started (CLOCK_MONOTONIC).
    started: u64,
}

impl Work for MicroCells<'_> {
    fn check(&self) -> Result<(), EngineError> {
        Ok(())
    }

    fn measured_cpus(&self) -> CpuSet {
        let o = &self.plan.options;
        std::iter::once(o.cpu)
            .chain(o.other_cpu)
            .map(CpuId)
            .collect()
    }

    fn cells(&self) -> usize {
        self.plan.benchmarks.len()
    }

    fn start(&mut self, ctx: &mut RunCtx<'_, '_>) -> Result<(), EngineError> {
        let session = Session::start(self.plan.options.clone())?;
        ctx.set_micro_context(&session.context());
        self.session = Some(session);
        self.started = ctx.clock.monotonic_ns();
        Ok(())
    }

    fn run_cell(
        &mut self,
        ctx: &mut RunCtx<'_, '_>,
        index: usize,
    ) -> Result<CellOutcome, EngineError> {
        let b = &self.plan.benchmarks[index];
        let Some(session) = &self.session else {
            // `start` sets the session before any cell runs.
            return Ok(CellOutcome {
                status: RunStatus::Failed,
                notes: vec!["the micro session did not start".into()],
            });
        };
        let result = session.measure(b);
        let now = ctx.clock.monotonic_ns();
        let meta = self.cell_meta(index, b, &result, now);
        self.started = now;
        ctx.observer.micro_result(&result);
        ctx.add_micro_cell(&meta, &result)?;
        Ok(CellOutcome {
            status: RunStatus::Complete,
            notes: Vec::new(),
        })
    }

    fn stopped_note(&self, done: usize) -> Option<String> {
        Some(format!(
            "interrupted after {done} of {} benchmarks",
            self.plan.benchmarks.len()
        ))
    }
}

impl MicroCells<'_> {
    /// The cell of benchmark `index`, measured from `self.started` to `now`.
    fn cell_meta(&self, index: usize, b: &Benchmark, r: &MicroResult, now: u64) -> CellMeta {
        let o = &self.plan.options;
        CellMeta {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            probe: "micro".into(),
            workload: "idle".into(),
            settings: CellSettings::Micro(MicroSettings {
                bench: b.id(),
                iterations: o.iterations as u32,
                warmup: o.warmup as u32,
                cpu: o.cpu,
                other_cpu: r.other_cpu,
                quick: o.quick,
                common: CommonSettings {
                    policy: Policy::Other,
                    priority: 0,
                    cpus: std::iter::once(o.cpu)
                        .chain(r.other_cpu)
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                    ..CommonSettings::default()
                },
            }),
            duration_ns: Nanos(now.saturating_sub(self.started)),
            monotonic_start_ns: Nanos(self.started),
        }
    }
}
