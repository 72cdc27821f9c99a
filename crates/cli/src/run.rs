//! `latscope run`: plan the cells, hand them to the engine with the store as
//! its sink, and print the summary from the store. When the store fails on
//! the way, the whole run (kept in memory by the engine) is written to a
//! rescue file that one error line names.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use latscope_engine::probes::RealClock;
use latscope_engine::system::StopSignals;
use latscope_engine::{
    EngineError, Env, LimitExceeded, Observer, PlanRun, RunOutcome, SinkFailure, Stop,
};
use latscope_model::{CpuSet, RunStatus};
use latscope_stats::RunResult;
use latscope_store::Store;

use crate::args::{RunArgs, RunOutputArgs};
use crate::exit::{self, Exit};
use crate::observer::CliObserver;
use crate::output;
use crate::plan::plan_run;
use latscope_engine::{CellSpec as CellPlan, RunPlan};

pub fn run(args: &RunArgs) -> Result<i32, Exit> {
    let online = latscope_engine::system::online_cpus().context("cannot read the online CPUs")?;
    let plan = plan_run(args, &online)?;
    let cells = plan.cells();
    let opts = RunOptions {
        store: &args.store.store,
        output: &args.output,
        histogram: args.histogram,
    };
    let ran = run_cells(&opts, &plan, &cells, &online)?;
    opts.write(&ran.stored)?;
    Ok(exit_code(&ran))
}

/// Options of `run` (and `suite`) that are not about what to measure.
pub struct RunOptions<'a> {
    pub store: &'a std::path::Path,
    pub output: &'a RunOutputArgs,
    pub histogram: bool,
}

impl RunOptions<'_> {
    /// The run's JSON file when asked for, and its summary unless quiet.
    fn write(&self, run: &RunResult) -> anyhow::Result<()> {
        if let Some(path) = &self.output.json {
            output::write_json(run, path)?;
        }
        if !self.output.quiet {
            output::print(&latscope_report::run_summary(run, self.histogram));
        }
        Ok(())
    }
}

/// The exit code of a run's status alone: 1 failed, 130 interrupted.
pub fn status_code(status: RunStatus) -> i32 {
    match status {
        RunStatus::Interrupted => exit::INTERRUPTED,
        RunStatus::Failed => exit::ERROR,
        _ => exit::OK,
    }
}

/// What a run gave back: the run as stored, its status, and the limit
/// it exceeded.
pub struct Ran {
    pub stored: RunResult,
    pub status: RunStatus,
    pub exceeded: Option<LimitExceeded>,
}

/// The exit code, with the line that explains a 3 printed on stderr:
/// a failure is 1; a signal is 130; a value above `--stop-above` or
/// `--fail-above` is 3 (DESIGN.md's "threshold exceeded").
pub fn exit_code(ran: &Ran) -> i32 {
    let id = ran.stored.meta.id;
    match ran.exceeded {
        None => return status_code(ran.status),
        Some(LimitExceeded::Stopped { value, limit }) => eprintln!(
            "latscope: stopped: a value of {value} exceeded --stop-above {limit} (run {id} stored)"
        ),
        Some(LimitExceeded::Failed { max, limit }) => eprintln!(
            "latscope: the largest value, {max}, exceeded --fail-above {limit} (run {id} stored)"
        ),
    }
    exit::THRESHOLD
}

/// Runs the cells one after the other in one stored run
/// ([`latscope_engine::run_plan`]: the plan's threshold actions decorate
/// the store); returns the run as stored and its status. Stops early on a
/// signal or a failed cell: every finished cell, and the partial one, stay
/// stored.
pub fn run_cells(
    opts: &RunOptions,
    plan: &RunPlan,
    cells: &[CellPlan],
    online: &CpuSet,
) -> Result<Ran, Exit> {
    let mut observer = CliObserver::new(!opts.output.quiet && std::io::stderr().is_terminal());
    let how = PlanRun {
        dma_latency: !opts.output.no_dma_latency,
        command_line: crate::args::recorded_command_line(),
        say: Arc::new(|line: &str| eprintln!("latscope: {line}")),
        snapshot: latscope_report::perfetto_trace,
    };
    let (outcome, store) = stored(
        opts.store,
        opts.output.json.as_deref(),
        &mut observer,
        |o, p| output::rescue_json(o, &latscope_report::run_json(&o.result), p),
        |store, env| latscope_engine::run_plan(plan, cells, online, store, env, how),
        |o| opts.write(&o.result),
    )?;
    Ok(Ran {
        stored: store.load_run(outcome.run_id)?,
        status: outcome.status,
        exceeded: outcome.limit_exceeded(plan.stop_above, plan.fail_above),
    })
}

/// Runs `go` into the store at `path`, opened (and `json` checked) before
/// anything is measured: an unusable path fails now, not after the user
/// waited. When the store fails on the way, the engine writes the whole
/// run to a rescue file beside it (`rescue`: [`output::rescue_json`] of a
/// document), `report` writes what the user asked for, and the error names
/// the file.
pub fn stored(
    path: &Path,
    json: Option<&Path>,
    observer: &mut dyn Observer,
    rescue: impl Fn(&RunOutcome, &Path) -> Result<std::path::PathBuf, String>,
    go: impl FnOnce(&mut Store, Env) -> Result<RunOutcome, EngineError>,
    report: impl FnOnce(&RunOutcome) -> anyhow::Result<()>,
) -> Result<(RunOutcome, Store), Exit> {
    let mut store = Store::open(path)?;
    if let Some(json) = json {
        output::check_writable(json)?;
    }
    let signals = StopSignals::install().context("cannot install signal handlers")?;
    let rescue = |o: &RunOutcome| rescue(o, path);
    let env = Env {
        clock: Arc::new(RealClock),
        stop: Stop::from_signals(&signals),
        observer,
        names: &crate::plan::Options,
        system: None,
        rescue: Some(&rescue),
    };
    let outcome = go(&mut store, env).map_err(engine_error)?;
    if outcome.sink_error.is_some() {
        return Err(rescued(&outcome, report));
    }
    Ok((outcome, store))
}

/// The engine's error as the CLI's: a bad setting is a usage error.
pub fn engine_error(e: EngineError) -> Exit {
    match e {
        EngineError::Config(e) => crate::plan::request_error(e),
        EngineError::Probe(latscope_engine::probes::ProbeError::VethPath(why)) => {
            Exit::from(anyhow::anyhow!("--path veth: {why}"))
        }
        other => Exit::from(anyhow::Error::from(other)),
    }
}

/// The error of a run whose store failed: measured data outlives the
/// store, so the whole run is in the rescue file the engine wrote, and
/// the user gets one line saying where. The JSON the user asked for and
/// the summary (`report`) do not depend on the store and are written too.
pub fn rescued(
    outcome: &RunOutcome,
    report: impl FnOnce(&RunOutcome) -> anyhow::Result<()>,
) -> Exit {
    let Some(failure) = outcome.sink_failure() else {
        return Exit::from(anyhow::anyhow!("the store failed"));
    };
    if let SinkFailure::Rescued { error, path } = &failure {
        if let Err(err) = report(outcome)
            .with_context(|| format!("{error}; the whole run is in {}, but", path.display()))
        {
            return Exit::from(err);
        }
    }
    Exit::from(anyhow::Error::from(failure))
}
