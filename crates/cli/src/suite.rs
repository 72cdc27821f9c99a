//! `latscope suite`: a matrix of probes × workloads × priorities, run as the
//! cells of one stored run, one cell at a time, ending with the summary
//! matrix of the study's Table 15 and the workload characterization.
//!
//! Glue only: the presets, the lists and the grid of cells are
//! [`latscope_engine::suite`]'s; this module plans the probes' base settings
//! from the arguments, runs the cells and prints.

use anyhow::Context;
use latscope_engine::suite::{Preset, SuiteBase, SuiteError, SuiteMatrix, SuiteProbe};
use latscope_model::Nanos;

use crate::args::{PhaseArg, PolicyArg, ProbeName, RunArgs, StoreArg, SuiteArgs, TimerApiArg};
use crate::exit::Exit;
use crate::output;
use crate::plan::{plan_run, ProbeCellPlan};
use crate::run::{exit_code, run_cells, RunOptions};

/// A suite error as one line naming the option it comes from.
fn suite_error(e: SuiteError) -> Exit {
    match e {
        SuiteError::UnknownProbe(_) => Exit::usage(format!("--probes: {e}")),
        SuiteError::Workloads(_) => Exit::usage(format!("--workload: {e}")),
        SuiteError::Priority(_) => Exit::usage(format!("--priorities: {e}")),
        SuiteError::NoBase(_) => Exit::from(anyhow::Error::from(e)),
    }
}

/// The `run` arguments one cell of the suite corresponds to.
fn cell_args(args: &SuiteArgs, probe: ProbeName, duration: &str) -> RunArgs {
    RunArgs {
        probe,
        cpus: args.cpus.clone(),
        period: None,
        path: None,
        payload: None,
        buffers: None,
        compute: None,
        app: None,
        duration: duration.into(),
        policy: PolicyArg::Fifo,
        priority: 95,
        timer_api: TimerApiArg::ClockNanosleep,
        // The noise and UDP probes keep the least slack.
        timer_slack: args
            .timer_slack
            .clone()
            .filter(|_| probe == ProbeName::Timer),
        phase: PhaseArg::Fixed,
        threshold: args.threshold.clone(),
        json: None,
        histogram: false,
        no_dma_latency: args.no_dma_latency,
        checkpoint: "10s".into(),
        quiet: args.quiet,
        workload: None,
        load_level: args.load_level,
        warmup: args.warmup.clone(),
        runtime: None,
        pause: None,
        gap_ratio: None,
        gap_min: None,
        fp: false,
        trace: args.trace,
        trace_backend: args.trace_backend,
        stacks: args.stacks,
        stack_period: "200us".into(),
        episode_cap: 1000,
        limits: args.limits.clone(),
        actions: args.actions.clone(),
        store: StoreArg {
            store: args.store.store.clone(),
        },
    }
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
    let cell_duration = args
        .cell_duration
        .as_deref()
        .unwrap_or(preset.cell_duration);

    let online = latscope_engine::system::online_cpus().context("cannot read the online CPUs")?;
    // The plan of a timer cell carries what is common to all: CPUs,
    // checkpoints, tracing.
    let mut base_args = cell_args(args, ProbeName::Timer, cell_duration);
    base_args.workload = Some(matrix.workloads.join(","));
    let base = plan_run(&base_args, &online)?;
    let noise = plan_run(&cell_args(args, ProbeName::Noise, cell_duration), &online)?;
    let udp = if matrix.probes.contains(&SuiteProbe::Udp) {
        let mut a = cell_args(args, ProbeName::Udp, cell_duration);
        // Sender and receiver on the first two of the suite's CPUs.
        if let Some(list) = &args.cpus {
            let set = latscope_model::CpuSet::parse(list)
                .map_err(|e| Exit::usage(format!("--cpus: {e}")))?;
            let two: Vec<String> = set.iter().take(2).map(|c| c.to_string()).collect();
            a.cpus = Some(two.join(","));
        }
        match plan_run(&a, &online)?.probe {
            ProbeCellPlan::Udp(u) => Some(u),
            _ => None,
        }
    } else {
        None
    };
    let suite_base = SuiteBase {
        timer: base.timer.clone(),
        noise: match noise.probe {
            ProbeCellPlan::Noise(n) => Some(n),
            _ => None,
        },
        udp,
        load_level: base.load_level.clone(),
        warmup: base.warmup,
        cpus: base.cpus.clone(),
    };
    let cells = matrix.cells(&suite_base).map_err(suite_error)?;
    let n = cells.len() as u32;
    let per_cell = Nanos::parse_duration(cell_duration)
        .map_err(|e| Exit::usage(format!("--cell-duration: {e}")))?;
    if !args.quiet {
        let total = Nanos((per_cell.0 + base.warmup.0).saturating_mul(u64::from(n)));
        eprintln!(
            "latscope suite: {n} cells ({} probe(s) x {} workload(s) x {} setting(s)), about {total} in all",
            matrix.probes.len(),
            matrix.workloads.len(),
            matrix.priorities.len()
        );
    }
    let opts = RunOptions {
        store: &args.store.store,
        json: args.json.as_deref(),
        no_dma_latency: args.no_dma_latency,
        quiet: args.quiet,
        histogram: false,
    };
    let ran = run_cells(&opts, &base, &cells, &online)?;
    let stored = &ran.stored;
    if let Some(path) = opts.json {
        output::write_json(stored, path)?;
    }
    if !args.quiet {
        crate::output::print(&latscope_report::run_header(stored));
        crate::output::print(&latscope_report::suite_matrix(&stored.cells));
        let workloads = latscope_report::workload_table(stored);
        if !workloads.is_empty() {
            crate::output::print(&format!("\n{workloads}"));
        }
        crate::output::print(&format!(
            "\nEvery cell's tables: latscope show {} --store {}\n",
            stored.meta.id,
            latscope_store::redact_arg(&args.store.store.display().to_string())
        ));
    }
    Ok(exit_code(&ran, &base))
}
