//! Turns parsed arguments into validated engine settings. Every check a
//! user can fail lives here and gives one line naming the bad value.

use latscope_engine::probes::NoiseConfig;
use latscope_engine::probes::UdpConfig;
use latscope_engine::probes::{Phase, TimerApi, TimerConfig};
use latscope_engine::system::SchedPolicy;
use latscope_engine::workloads::split_workloads;
use latscope_model::UdpPath;
use latscope_model::{CpuSet, Nanos};

use crate::args::{PhaseArg, PolicyArg, ProbeName, RunArgs, TimerApiArg, UdpPathArg};
use crate::exit::Exit;

/// What `latscope run` will do.
pub struct RunPlan {
    /// What every probe shares (CPUs, policy, priority, duration,
    /// threshold), as the timer probe's configuration; for `--probe timer`
    /// also the probe's own.
    pub timer: TimerConfig,
    pub checkpoint: Nanos,
    pub cpus: CpuSet,
    pub trace: Option<TracePlan>,
    /// The probe `--probe` names, with its own configuration.
    pub probe: ProbeCellPlan,
    /// `--workload`: one cell per workload (`none` without the option).
    pub workloads: Vec<String>,
    pub load_level: String,
    pub warmup: Nanos,
}

/// One cell: the engine's [`CellSpec`]; its probe: the engine's
/// [`ProbeSpec`] (a cell cannot hold two probes).
pub use latscope_engine::{CellSpec as CellPlan, ProbeSpec as ProbeCellPlan};

impl RunPlan {
    /// `run`: the probe once per workload, in the order given.
    pub fn cells(&self) -> Vec<CellPlan> {
        let of = self.workloads.len() as u32;
        self.workloads
            .iter()
            .enumerate()
            .map(|(i, w)| CellPlan {
                index: i as u32,
                of,
                probe: self.probe.clone(),
                workload: w.clone(),
                load_level: self.load_level.clone(),
                warmup: self.warmup,
                cpus: self.cpus.clone(),
            })
            .collect()
    }
}

pub use latscope_engine::TracePlan;

/// The episode threshold when `--trace` is given without `--threshold`:
/// about three times the p99 of an idle timer on ordinary hardware and VMs
/// without PREEMPT_RT (20–40 µs), so only real outliers become episodes, and
/// below the deadlines people test for (audio buffers and control loops of
/// a millisecond or more). See docs/tracing.md.
pub const DEFAULT_TRACE_THRESHOLD: Nanos = Nanos::from_micros(100);

fn duration(flag: &str, text: &str) -> Result<Nanos, Exit> {
    Nanos::parse_duration(text).map_err(|e| Exit::usage(format!("--{flag}: {e}")))
}

pub fn plan_run(args: &RunArgs, online: &CpuSet) -> Result<RunPlan, Exit> {
    let default_period = if args.probe == ProbeName::Udp {
        "10ms"
    } else {
        "1ms"
    };
    let period = duration("period", args.period.as_deref().unwrap_or(default_period))?;
    let run_for = duration("duration", &args.duration)?;
    let mut threshold = args
        .threshold
        .as_deref()
        .map(|t| duration("threshold", t))
        .transpose()?;
    if (args.stacks || args.episode_cap != 1000) && !args.trace {
        return Err(Exit::usage("--stacks and --episode-cap need --trace"));
    }
    let trace = if args.trace {
        let t = *threshold.get_or_insert(DEFAULT_TRACE_THRESHOLD);
        if t.0 == 0 {
            return Err(Exit::usage(
                "--threshold must be greater than 0 with --trace",
            ));
        }
        let stack_period = if args.stacks {
            let p = duration("stack-period", &args.stack_period)?;
            if p < Nanos::from_micros(10) || p > Nanos::from_secs(1) {
                return Err(Exit::usage("--stack-period must be between 10us and 1s"));
            }
            Some(p)
        } else {
            None
        };
        Some(TracePlan {
            threshold: t,
            stack_period,
            episode_cap: args.episode_cap,
        })
    } else {
        None
    };
    let checkpoint = duration("checkpoint", &args.checkpoint)?;
    if checkpoint < Nanos::from_millis(100) {
        return Err(Exit::usage("--checkpoint must be at least 100ms"));
    }
    let cpus = match &args.cpus {
        // The UDP probe's sender and receiver on two CPUs, as a NIC's
        // receive processing and the application usually are.
        None if args.probe == ProbeName::Udp => online.iter().take(2).collect(),
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
        // Two seconds of samples per CPU (at least 4096) between the
        // analysis thread's reads, which come every 10 ms.
        handoff: if trace.is_some() {
            usize::try_from((2_000_000_000 / period.0.max(1)).max(4096)).unwrap_or(4096)
        } else {
            0
        },
    };
    // Period, duration, priority and phase are checked where the probe
    // defines them.
    timer.validate().map_err(Exit::usage)?;
    let noise = match args.probe {
        ProbeName::Noise => {
            let runtime = args
                .runtime
                .as_deref()
                .map_or(Ok(Nanos::from_millis(33)), |t| duration("runtime", t))?;
            // `--pause 0` (spin continuously) reads naturally without a unit.
            let pause = match args.pause.as_deref().map(str::trim) {
                None => Nanos::from_millis(33),
                Some("0") => Nanos(0),
                Some(t) => duration("pause", t)?,
            };
            let gap_min = args
                .gap_min
                .as_deref()
                .map(|t| duration("gap-min", t))
                .transpose()?;
            let cfg = NoiseConfig {
                cpus: timer.cpus.clone(),
                policy: timer.policy,
                priority: timer.priority,
                runtime,
                pause,
                gap_ratio: args.gap_ratio.unwrap_or(4),
                gap_min,
                fp: args.fp,
                threshold: timer.threshold,
                duration: timer.duration,
                handoff: if trace.is_some() { 65_536 } else { 0 },
                force_vdso: false,
            };
            cfg.validate().map_err(Exit::usage)?;
            Some(cfg)
        }
        ProbeName::Timer | ProbeName::Udp => {
            if args.runtime.is_some()
                || args.pause.is_some()
                || args.gap_ratio.is_some()
                || args.gap_min.is_some()
                || args.fp
            {
                return Err(Exit::usage(
                    "--runtime, --pause, --gap-ratio, --gap-min and --fp need --probe noise",
                ));
            }
            None
        }
    };
    let udp = match args.probe {
        ProbeName::Udp => {
            // In the order written: `--cpus 1,0` puts the sender on 1 (a
            // CpuSet would sort them).
            let listed: Vec<_> = match &args.cpus {
                Some(text) => {
                    let mut v = Vec::new();
                    for item in text.split(',') {
                        let set =
                            CpuSet::parse(item).map_err(|e| Exit::usage(format!("--cpus: {e}")))?;
                        v.extend(set.iter().filter(|c| !v.contains(c)).collect::<Vec<_>>());
                    }
                    v
                }
                None => cpus.iter().collect(),
            };
            let (sender_cpu, receiver_cpu) = match listed.as_slice() {
                [one] => (*one, *one),
                [a, b] => (*a, *b),
                _ => {
                    return Err(Exit::usage(format!(
                        "--cpus {cpus}: the udp probe takes one CPU (sender and receiver on it) or two (sender,receiver)"
                    )))
                }
            };
            let cfg = UdpConfig {
                sender_cpu,
                receiver_cpu,
                path: match args.path.unwrap_or(UdpPathArg::Loopback) {
                    UdpPathArg::Loopback => UdpPath::Loopback,
                    UdpPathArg::Veth => UdpPath::Veth,
                },
                period,
                payload: args.payload.unwrap_or(64),
                policy: timer.policy,
                priority: timer.priority,
                threshold: timer.threshold,
                duration: timer.duration,
                // Over six seconds of datagrams at the shortest period.
                handoff: if trace.is_some() { 65_536 } else { 0 },
            };
            cfg.validate().map_err(Exit::usage)?;
            Some(cfg)
        }
        _ => {
            if args.path.is_some() || args.payload.is_some() {
                return Err(Exit::usage("--path and --payload need --probe udp"));
            }
            None
        }
    };
    let workloads: Vec<String> = match &args.workload {
        None => vec!["none".to_string()],
        Some(list) => split_workloads(list).map_err(|e| Exit::usage(format!("--workload: {e}")))?,
    };
    let warmup = duration("warmup", &args.warmup)?;
    // `noise` is planned for `--probe noise` only and `udp` for `--probe
    // udp` only: never both.
    let probe = match (noise, udp) {
        (Some(n), _) => ProbeCellPlan::Noise(n),
        (None, Some(u)) => ProbeCellPlan::Udp(u),
        (None, None) => ProbeCellPlan::Timer(timer.clone()),
    };
    Ok(RunPlan {
        timer,
        checkpoint,
        cpus,
        trace,
        probe,
        workloads,
        load_level: args.load_level.as_str().to_string(),
        warmup,
    })
}
