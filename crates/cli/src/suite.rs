//! `latscope suite`: a matrix of probes × workloads × priorities, run as the
//! cells of one stored run, one cell at a time, ending with the summary
//! matrix of the study's Table 15 and the workload characterization.
//!
//! Glue only: the presets, the lists, the grid and the rules are
//! [`latscope_engine::suite`]'s and the request's; this module turns the
//! arguments into the base request, runs the cells and prints.

use anyhow::Context;
use latscope_engine::request::RequestText;
use latscope_engine::suite::{Preset, SuiteError, SuiteMatrix};
use latscope_engine::RunRequest;
use latscope_model::Nanos;

use crate::args::SuiteArgs;
use crate::exit::Exit;
use crate::output;
use crate::plan::{self, duration, request_error};
use crate::run::{exit_code, run_cells, RunOptions};

/// A suite error as one line naming the option it comes from.
fn suite_error(e: SuiteError) -> Exit {
    match e {
        SuiteError::UnknownProbe(_) => Exit::usage(format!("--probes: {e}")),
        SuiteError::Workloads(_) => Exit::usage(format!("--workload: {e}")),
        SuiteError::Priority(_) => Exit::usage(format!("--priorities: {e}")),
        SuiteError::Request(e) => request_error(e),
        SuiteError::NoBase(_) => Exit::from(anyhow::Error::from(e)),
    }
}

/// What every cell of the suite starts from: FIFO 95 and the defaults of
/// `run`, with the suite's options.
fn base_request(args: &SuiteArgs, cell_duration: Nanos) -> Result<RunRequest, Exit> {
    let text = RequestText {
        cpus: args.cpus.clone(),
        threshold: args.threshold.clone(),
        timer_slack: args.timer_slack.clone(),
        ..plan::common(&args.trace, &args.load, &args.limits, &args.actions)
    };
    Ok(RunRequest {
        duration: Some(cell_duration),
        ..plan::parse(&text)?
    })
}

pub fn suite(args: &SuiteArgs) -> Result<i32, Exit> {
    let preset = if args.long {
        &Preset::LONG
    } else if args.standard {
        &Preset::STANDARD
    } else {
        &Preset::QUICK
    };
    let matrix = SuiteMatrix::parse(
        args.probes.as_deref().unwrap_or(preset.probes),
        args.workloads.as_deref().unwrap_or(preset.workloads),
        args.priorities.as_deref().unwrap_or(preset.priorities),
    )
    .map_err(suite_error)?;
    let per_cell = duration(
        "cell-duration",
        args.cell_duration
            .as_deref()
            .unwrap_or(preset.cell_duration),
    )?;
    let online = latscope_engine::system::online_cpus().context("cannot read the online CPUs")?;
    let (base, cells) = matrix
        .plan(&base_request(args, per_cell)?, &online)
        .map_err(suite_error)?;
    if !args.output.quiet {
        let grid = matrix.describe(cells.len(), per_cell, base.warmup);
        eprintln!("latscope suite: {grid}");
    }
    let opts = RunOptions {
        store: &args.store.store,
        output: &args.output,
        histogram: false,
    };
    let ran = run_cells(&opts, &base, &cells, &online)?;
    let stored = &ran.stored;
    if let Some(path) = &args.output.json {
        output::write_json(stored, path)?;
    }
    if !args.output.quiet {
        let store = latscope_store::redact_arg(&args.store.store.display().to_string());
        crate::output::print(&latscope_report::suite_summary(stored, &store));
    }
    Ok(exit_code(&ran))
}
