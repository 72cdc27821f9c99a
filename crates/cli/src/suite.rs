//! `latscope suite`: a matrix of probes × workloads × priorities, run as the
//! cells of one stored run, one cell at a time, ending with the summary
//! matrix of the study's Table 15 and the workload characterization.

use anyhow::Context;
use latscope_engine::system::SchedPolicy;
use latscope_model::Nanos;

use crate::args::{PhaseArg, PolicyArg, ProbeName, RunArgs, StoreArg, SuiteArgs, TimerApiArg};
use crate::exit::Exit;
use crate::output;
use crate::plan::{plan_run, split_workloads, CellPlan, ProbeCellPlan};
use crate::run::{exit_code, run_cells, RunOptions};

/// What a preset runs.
struct Preset {
    probes: &'static str,
    workloads: &'static str,
    cell: &'static str,
    priorities: &'static str,
}

const QUICK: Preset = Preset {
    probes: "timer,noise,udp",
    workloads: "idle,cpu,memory,net",
    cell: "10s",
    priorities: "95",
};
const STANDARD: Preset = Preset {
    probes: "timer,noise,udp",
    workloads: "idle,cpu,memory,compile,disk,net,tty,fork,timer",
    cell: "45s",
    priorities: "95,other",
};
const LONG: Preset = Preset {
    probes: "timer,noise,udp",
    workloads: "idle,cpu,memory,compile,disk,net,tty,fork,timer",
    cell: "5m",
    priorities: "95,other",
};

/// `95` → FIFO 95, `other` → SCHED_OTHER, `rr:50` → RR 50.
pub fn parse_priorities(list: &str) -> Result<Vec<(SchedPolicy, u32)>, Exit> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim) {
        let parsed = match item {
            "other" => Some((SchedPolicy::Other, 0)),
            _ => {
                let (policy, n) = match item.split_once(':') {
                    Some(("fifo", n)) => (SchedPolicy::Fifo, n),
                    Some(("rr", n)) => (SchedPolicy::Rr, n),
                    Some(_) => (SchedPolicy::Fifo, ""),
                    None => (SchedPolicy::Fifo, item),
                };
                n.parse::<u32>()
                    .ok()
                    .filter(|p| (1..=99).contains(p))
                    .map(|p| (policy, p))
            }
        };
        match parsed {
            Some(p) if !out.contains(&p) => out.push(p),
            Some(_) => {}
            None => {
                return Err(Exit::usage(format!(
                    "--priorities: '{item}' is not a priority 1-99, rr:N, fifo:N or other"
                )))
            }
        }
    }
    Ok(out)
}

fn parse_probes(list: &str) -> Result<Vec<ProbeName>, Exit> {
    let mut out = Vec::new();
    for p in list.split(',').map(str::trim) {
        let probe = match p {
            "timer" => ProbeName::Timer,
            "noise" => ProbeName::Noise,
            "udp" => ProbeName::Udp,
            other => {
                return Err(Exit::usage(format!(
                    "--probes: unknown probe '{other}' (timer, noise, udp)"
                )))
            }
        };
        if !out.contains(&probe) {
            out.push(probe);
        }
    }
    Ok(out)
}

/// The `run` arguments one cell of the suite corresponds to.
fn cell_args(args: &SuiteArgs, probe: ProbeName, duration: &str) -> RunArgs {
    RunArgs {
        probe,
        cpus: args.cpus.clone(),
        period: None,
        path: None,
        payload: None,
        duration: duration.into(),
        policy: PolicyArg::Fifo,
        priority: 95,
        timer_api: TimerApiArg::ClockNanosleep,
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
        stacks: false,
        stack_period: "200us".into(),
        episode_cap: 1000,
        store: StoreArg {
            store: args.store.store.clone(),
        },
    }
}

pub fn suite(args: &SuiteArgs) -> Result<i32, Exit> {
    let preset = if args.long {
        &LONG
    } else if args.standard {
        &STANDARD
    } else {
        &QUICK
    };
    let probes = parse_probes(args.probes.as_deref().unwrap_or(preset.probes))?;
    let workloads = split_workloads(args.workloads.as_deref().unwrap_or(preset.workloads))?;
    let cell_duration = args.cell_duration.as_deref().unwrap_or(preset.cell);
    let priorities = parse_priorities(args.priorities.as_deref().unwrap_or(preset.priorities))?;

    let online = latscope_engine::system::online_cpus().context("cannot read the online CPUs")?;
    // The plan of a timer cell carries what is common to all: CPUs,
    // checkpoints, tracing.
    let mut base_args = cell_args(args, ProbeName::Timer, cell_duration);
    base_args.workload = Some(workloads.join(","));
    let base = plan_run(&base_args, &online)?;
    let noise_base = plan_run(&cell_args(args, ProbeName::Noise, cell_duration), &online)?;
    let udp_base = if probes.contains(&ProbeName::Udp) {
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
    let noise_base = match noise_base.probe {
        ProbeCellPlan::Noise(n) => Some(n),
        _ => None,
    };

    let mut cells: Vec<CellPlan> = Vec::new();
    for workload in &workloads {
        for probe in &probes {
            for &(policy, priority) in &priorities {
                let mut timer = base.timer.clone();
                timer.policy = policy;
                timer.priority = if policy == SchedPolicy::Other {
                    0
                } else {
                    priority
                };
                timer.validate().map_err(Exit::usage)?;
                let probe = match probe {
                    ProbeName::Timer => ProbeCellPlan::Timer(timer),
                    ProbeName::Noise => {
                        let mut n = noise_base.clone().context("no noise plan")?;
                        n.policy = timer.policy;
                        n.priority = timer.priority;
                        ProbeCellPlan::Noise(n)
                    }
                    ProbeName::Udp => {
                        let mut u = udp_base.clone().context("no udp plan")?;
                        u.policy = timer.policy;
                        u.priority = timer.priority;
                        ProbeCellPlan::Udp(u)
                    }
                };
                cells.push(CellPlan {
                    index: cells.len() as u32,
                    of: 0,
                    probe,
                    workload: workload.clone(),
                    load_level: base.load_level.clone(),
                    warmup: base.warmup,
                    cpus: base.cpus.clone(),
                });
            }
        }
    }
    let n = cells.len() as u32;
    for c in &mut cells {
        c.of = n;
    }
    let per_cell = Nanos::parse_duration(cell_duration)
        .map_err(|e| Exit::usage(format!("--cell-duration: {e}")))?;
    if !args.quiet {
        let total = Nanos((per_cell.0 + base.warmup.0).saturating_mul(u64::from(n)));
        eprintln!(
            "latscope suite: {n} cells ({} probe(s) x {} workload(s) x {} setting(s)), about {total} in all",
            probes.len(),
            workloads.len(),
            priorities.len()
        );
    }
    let opts = RunOptions {
        store: &args.store.store,
        json: args.json.as_deref(),
        no_dma_latency: args.no_dma_latency,
        quiet: args.quiet,
        histogram: false,
    };
    let (stored, status) = run_cells(&opts, &base, &cells, &online)?;
    if let Some(path) = opts.json {
        output::write_json(&stored, path)?;
    }
    if !args.quiet {
        print!("{}", latscope_report::run_header(&stored));
        print!("{}", latscope_report::suite_matrix(&stored.cells));
        let workloads = latscope_report::workload_table(&stored);
        if !workloads.is_empty() {
            print!("\n{workloads}");
        }
        println!(
            "\nEvery cell's tables: latscope show {} --store {}",
            stored.meta.id,
            args.store.store.display()
        );
    }
    Ok(exit_code(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_read_like_the_studies_compared_them() {
        let p = parse_priorities("95,50,other").unwrap_or_default();
        assert_eq!(
            p,
            vec![
                (SchedPolicy::Fifo, 95),
                (SchedPolicy::Fifo, 50),
                (SchedPolicy::Other, 0)
            ]
        );
        assert_eq!(
            parse_priorities("rr:10").unwrap_or_default(),
            vec![(SchedPolicy::Rr, 10)]
        );
        assert!(parse_priorities("0").is_err());
        assert!(parse_priorities("fast").is_err());
        assert!(parse_probes("timer,jitter").is_err());
    }
}
