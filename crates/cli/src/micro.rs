//! `latscope micro`: the microbenchmarks, run by the engine's lifecycle as
//! a run with one `micro` cell per benchmark, each stored as soon as it is
//! measured (so Ctrl-C keeps every finished one), then printed in the
//! study's style.

use std::path::Path;

use anyhow::Context;
use latscope_engine::system::{measuring_pair, online_cpus, PairError};
use latscope_engine::{MicroPlan, Observer, RunOutcome};
use latscope_micro::session::{select, SessionError, SessionOptions};
use latscope_model::{MicroContext, MicroResult};
use latscope_stats::RunResult;
use latscope_store::MicroRun;

use crate::args::MicroArgs;
use crate::exit::{self, Exit};

pub fn micro(args: &MicroArgs) -> Result<i32, Exit> {
    let benchmarks = select(&args.bench, args.quick).map_err(|e| match e {
        SessionError::UnknownBench { .. } => Exit::usage(format!("--bench: {e}")),
        e => Exit::usage(e),
    })?;
    if args.list {
        crate::output::print(&latscope_micro::session::list_text(&benchmarks));
        return Ok(exit::OK);
    }
    let (cpu, other) = choose_cpus(args.cpus.as_deref())?;
    let mut options = SessionOptions::new(cpu, other, args.quick);
    if let Some(n) = args.iterations {
        options.iterations = n as usize;
    }

    let plan = MicroPlan {
        benchmarks,
        options,
        command_line: crate::args::recorded_command_line(),
    };
    let mut observer = MicroLines { quiet: args.quiet };
    let (stored, micro, code) = run_stored(
        &plan,
        &args.store.store,
        args.json.as_deref(),
        &mut observer,
        |o| write(args, &o.result, o.micro_context.as_ref(), &o.micro),
    )?;
    let (context, results): (_, Vec<MicroResult>) = match &micro {
        Some(m) => (m.context.as_ref(), m.results()),
        None => (None, Vec::new()),
    };
    write(args, &stored, context, &results)?;
    Ok(code)
}

/// Runs `plan` into the store at `store_path` (opened, and `json` checked,
/// before anything runs); when the store fails on the way, the run's
/// document goes to a rescue file beside it and `report` writes what the
/// user asked for. Returns the run as stored, its benchmarks and the exit
/// code of its status.
pub fn run_stored(
    plan: &MicroPlan,
    store_path: &Path,
    json: Option<&Path>,
    observer: &mut dyn Observer,
    report: impl FnOnce(&RunOutcome) -> anyhow::Result<()>,
) -> Result<(RunResult, Option<MicroRun>, i32), Exit> {
    let (outcome, store) = crate::run::stored(
        store_path,
        json,
        observer,
        |o, p| {
            let doc = latscope_report::micro_json(&o.result, o.micro_context.as_ref(), &o.micro);
            crate::output::rescue_json(o, &doc, p)
        },
        |store, env| latscope_engine::run_micro(plan, store, env),
        report,
    )?;
    let stored = store.load_run(outcome.run_id)?;
    let micro = store.load_micro(outcome.run_id)?;
    Ok((stored, micro, crate::run::status_code(outcome.status)))
}

/// The JSON file when asked for, and the table unless `--quiet`.
fn write(
    args: &MicroArgs,
    run: &RunResult,
    context: Option<&MicroContext>,
    results: &[MicroResult],
) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        crate::output::write_json_doc(&latscope_report::micro_json(run, context, results), path)?;
    }
    if !args.quiet {
        crate::output::print(&latscope_report::micro_text(run, context, results));
    }
    Ok(())
}

/// One line per benchmark on stderr as it is measured, unless `--quiet`.
struct MicroLines {
    quiet: bool,
}

impl Observer for MicroLines {
    fn notice(&mut self, line: &str) {
        eprintln!("latscope: {line}");
    }

    fn micro_result(&mut self, r: &MicroResult) {
        if !self.quiet {
            eprintln!("{}", latscope_report::micro_line(r));
        }
    }
}

/// The measuring CPU and the partner: `--cpus A,B`, or the last online CPU
/// and the one before it.
fn choose_cpus(text: Option<&str>) -> Result<(u32, Option<u32>), Exit> {
    let online = online_cpus().context("cannot read the online CPUs")?;
    let (cpu, other) = measuring_pair(text, &online).map_err(|e| match e {
        PairError::Count(t) => Exit::usage(format!(
            "--cpus wants the measuring CPU and at most one partner (e.g. 1,0), not '{t}'"
        )),
        PairError::Choice(e) => Exit::usage(format!("--cpus: {e}")),
    })?;
    Ok((cpu.0, other.map(|c| c.0)))
}
