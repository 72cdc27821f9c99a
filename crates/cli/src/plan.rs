//! Turns parsed arguments into validated engine settings. Every check a
//! user can fail lives here and gives one line naming the bad value.

use latscope_model::{CpuSet, Nanos};
use latscope_platform::SchedPolicy;
use latscope_probes::timer::{Phase, TimerApi, TimerConfig};

use crate::args::{PhaseArg, PolicyArg, RunArgs, TimerApiArg};
use crate::exit::Exit;

/// What `latscope run` will do.
pub struct RunPlan {
    pub timer: TimerConfig,
    pub checkpoint: Nanos,
    pub cpus: CpuSet,
}

fn duration(flag: &str, text: &str) -> Result<Nanos, Exit> {
    Nanos::parse_duration(text).map_err(|e| Exit::usage(format!("--{flag}: {e}")))
}

pub fn plan_run(args: &RunArgs, online: &CpuSet) -> Result<RunPlan, Exit> {
    let period = duration("period", &args.period)?;
    let run_for = duration("duration", &args.duration)?;
    let threshold = args
        .threshold
        .as_deref()
        .map(|t| duration("threshold", t))
        .transpose()?;
    let checkpoint = duration("checkpoint", &args.checkpoint)?;
    if checkpoint < Nanos::from_millis(100) {
        return Err(Exit::usage("--checkpoint must be at least 100ms"));
    }
    let cpus = match &args.cpus {
        None => online.clone(),
        Some(text) => {
            let set = CpuSet::parse(text).map_err(|e| Exit::usage(format!("--cpus: {e}")))?;
            let offline: CpuSet = set.iter().filter(|c| !online.contains(*c)).collect();
            if !offline.is_empty() {
                return Err(Exit::usage(format!(
                    "--cpus: CPU {offline} is not online (online CPUs: {online})"
                )));
            }
            set
        }
    };
    let policy = match args.policy {
        PolicyArg::Fifo => SchedPolicy::Fifo,
        PolicyArg::Rr => SchedPolicy::Rr,
        PolicyArg::Other => SchedPolicy::Other,
    };
    let api = match args.timer_api {
        TimerApiArg::ClockNanosleep => TimerApi::ClockNanosleep,
        TimerApiArg::Nanosleep => TimerApi::Nanosleep,
        TimerApiArg::Timerfd => TimerApi::Timerfd,
        TimerApiArg::PosixTimer => TimerApi::PosixTimer,
        TimerApiArg::Epoll => TimerApi::Epoll,
    };
    let phase = match args.phase {
        PhaseArg::Fixed => Phase::Fixed,
        PhaseArg::Random => Phase::Random,
    };
    let timer = TimerConfig {
        cpus: cpus.iter().collect(),
        period,
        policy,
        priority: args.priority,
        api,
        phase,
        threshold,
        duration: Some(run_for),
    };
    // Period, duration, priority and phase are checked where the probe
    // defines them.
    timer.validate().map_err(Exit::usage)?;
    Ok(RunPlan {
        timer,
        checkpoint,
        cpus,
    })
}
