//! `latscope study NAME`: runs the study's design (a probe run or a micro
//! run, stored like any other), then prints the paper's tables beside this
//! machine's figures. Glue only: the designs, the pairing and the
//! rendering are `latscope_reproduce`'s.

use anyhow::Context;
use latscope_engine::system::{measuring_pair, online_cpus};
use latscope_engine::Quiet;
use latscope_model::MicroResult;
use latscope_reproduce::{Design, MicroDesign, ProbeDesign, ReproduceError, RunFigures};
use latscope_stats::RunResult;

use crate::args::{RunOutputArgs, StudyArgs};
use crate::exit::{self, Exit};
use crate::output;
use crate::run::{exit_code, run_cells, RunOptions};

pub fn study(args: &StudyArgs) -> Result<i32, Exit> {
    let Some(name) = args.name.as_deref().filter(|_| !args.list) else {
        return list();
    };
    let design = latscope_reproduce::design(name, args.quick)
        .ok_or_else(|| Exit::usage(ReproduceError::UnknownStudy(name.to_string())))?;
    if let Some(path) = &args.json {
        output::check_writable(path)?;
    }
    let (stored, micro, code) = match &design {
        Design::Probe(p) => probe(p, args)?,
        Design::Micro(m) => micro(m, args)?,
    };
    let figures = RunFigures::from_run(&stored, micro);
    let paired = latscope_reproduce::reproduce(name, &design, &figures)
        .map_err(|e| Exit::from(anyhow::Error::from(e)))?;
    if let Some(path) = &args.json {
        output::write_json_doc(&paired, path)?;
    }
    if !args.quiet {
        output::print(&latscope_reproduce::render(&paired));
    }
    Ok(code)
}

/// `--list`: each study with its quick and full designs.
fn list() -> Result<i32, Exit> {
    let text = latscope_reproduce::list_text().map_err(|e| Exit::from(anyhow::Error::from(e)))?;
    output::print(&text);
    Ok(exit::OK)
}

/// The design's cells as one stored run, as `latscope suite` runs them.
fn probe(d: &ProbeDesign, args: &StudyArgs) -> Result<(RunResult, Vec<MicroResult>, i32), Exit> {
    let online = online_cpus().context("cannot read the online CPUs")?;
    let (plan, cells) = d.plan(&online).map_err(crate::plan::request_error)?;
    let output = RunOutputArgs {
        json: None,
        no_dma_latency: false,
        quiet: args.quiet,
    };
    let opts = RunOptions {
        store: &args.store.store,
        output: &output,
        histogram: false,
    };
    let ran = run_cells(&opts, &plan, &cells, &online)?;
    let code = exit_code(&ran);
    Ok((ran.stored, Vec::new(), code))
}

/// The design's benchmarks as one stored micro run, on the last online
/// CPU with the one before it as partner (as `latscope micro`).
fn micro(d: &MicroDesign, args: &StudyArgs) -> Result<(RunResult, Vec<MicroResult>, i32), Exit> {
    let online = online_cpus().context("cannot read the online CPUs")?;
    let (cpu, other) =
        measuring_pair(None, &online).map_err(|e| Exit::from(anyhow::anyhow!("{e}")))?;
    let plan = d
        .plan(
            cpu.0,
            other.map(|c| c.0),
            crate::args::recorded_command_line(),
        )
        .map_err(|e| Exit::from(anyhow::anyhow!("{e}")))?;
    let (stored, micro, code) =
        crate::micro::run_stored(&plan, &args.store.store, None, &mut Quiet, |_| Ok(()))?;
    let results = micro.map(|m| m.results()).unwrap_or_default();
    Ok((stored, results, code))
}
