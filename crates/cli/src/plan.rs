//! Turns parsed arguments into validated engine settings. Every check a
//! user can fail lives here and gives one line naming the bad value.

use latscope_engine::probes::NoiseConfig;
use latscope_engine::probes::UdpConfig;
use latscope_engine::probes::{calibrate, AppConfig};
use latscope_engine::probes::{Phase, TimerApi, TimerConfig};
use latscope_engine::system::{cpus_in_order, select_cpus, udp_cpus, SchedPolicy};
use latscope_engine::workloads::split_workloads;
use latscope_model::UdpPath;
use latscope_model::{CpuSet, Nanos, TimerSlack};

use latscope_stats::forecast::{AppPreset, APP_PRESETS};

use crate::args::{PhaseArg, PolicyArg, ProbeName, RunArgs, TimerApiArg, UdpPathArg};
use crate::exit::Exit;
use latscope_engine::actions::{Action, Limit};

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
    /// `--stop-above` and `--fail-above`.
    pub stop_above: Option<Nanos>,
    pub fail_above: Option<Nanos>,
    /// `--on-threshold` and `--action-limit`.
    pub actions: Vec<Action>,
    pub action_limit: Limit,
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

fn duration(flag: &str, text: &str) -> Result<Nanos, Exit> {
    Nanos::parse_duration(text).map_err(|e| Exit::usage(format!("--{flag}: {e}")))
}

pub fn plan_run(args: &RunArgs, online: &CpuSet) -> Result<RunPlan, Exit> {
    let default_period = if args.probe == ProbeName::Udp {
        "10ms"
    } else {
        "1ms"
    };
    let preset = app_preset(args)?;
    let period = match (&args.period, preset) {
        (None, Some(p)) => Nanos(p.period_ns),
        (text, _) => duration("period", text.as_deref().unwrap_or(default_period))?,
    };
    let run_for = duration("duration", &args.duration)?;
    let mut threshold = args
        .threshold
        .as_deref()
        .map(|t| duration("threshold", t))
        .transpose()?;
    if (args.stacks || args.episode_cap != 1000) && !args.trace {
        return Err(Exit::usage("--stacks and --episode-cap need --trace"));
    }
    let limit = |flag: &str, text: &Option<String>| -> Result<Option<Nanos>, Exit> {
        let Some(text) = text else { return Ok(None) };
        let d = duration(flag, text)?;
        if d.0 == 0 {
            return Err(Exit::usage(format!("--{flag} must be greater than 0")));
        }
        Ok(Some(d))
    };
    let actions = args
        .actions
        .on_threshold
        .iter()
        .map(|a| Action::parse(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Exit::usage)?;
    let action_limit = Limit::parse(args.actions.action_limit.as_deref().unwrap_or("10/h"))
        .map_err(Exit::usage)?;
    if !actions.is_empty() && !args.trace {
        return Err(Exit::usage(
            "--on-threshold acts on episodes: it needs --trace",
        ));
    }
    let stop_above = limit("stop-above", &args.limits.stop_above)?;
    let fail_above = limit("fail-above", &args.limits.fail_above)?;
    // With --trace and --stop-above, the value that stops the run must be
    // an episode: the episode threshold is at most the stop limit.
    if let (true, Some(stop)) = (args.trace, stop_above) {
        match threshold {
            Some(t) if t > stop => {
                return Err(Exit::usage(format!(
                    "--threshold {t} is above --stop-above {stop}: the value that stops the run would not be an episode"
                )))
            }
            Some(_) => {}
            None => threshold = Some(TracePlan::DEFAULT_THRESHOLD.min(stop)),
        }
    }
    // With --trace, the threshold (default TracePlan::DEFAULT_THRESHOLD)
    // is also every probe's.
    let trace = if args.trace {
        let mut plan = TracePlan::new(threshold, args.episode_cap)
            .map_err(Exit::usage)?
            .with_backend(args.trace_backend.into());
        threshold = Some(plan.threshold);
        if args.stacks {
            let p = duration("stack-period", &args.stack_period)?;
            plan = plan.with_stacks(p).map_err(Exit::usage)?;
        }
        Some(plan)
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
        Some(text) => select_cpus(text, online).map_err(|e| Exit::usage(format!("--cpus: {e}")))?,
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
    let timer_slack = match (&args.timer_slack, args.probe) {
        (None, _) => TimerSlack::MINIMUM,
        (Some(text), ProbeName::Timer) => {
            TimerSlack::parse(text).map_err(|e| Exit::usage(format!("--timer-slack: {e}")))?
        }
        (Some(_), _) => return Err(Exit::usage("--timer-slack needs --probe timer")),
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
        handoff: trace.as_ref().map_or(0, |t| t.timer_handoff(period)),
        noise_duty: None,
        timer_slack,
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
                handoff: trace.as_ref().map_or(0, TracePlan::noise_handoff),
                force_vdso: false,
                duty: None,
            };
            cfg.validate().map_err(Exit::usage)?;
            Some(cfg)
        }
        ProbeName::Timer | ProbeName::Udp | ProbeName::App => {
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
                    cpus_in_order(text).map_err(|e| Exit::usage(format!("--cpus: {e}")))?
                }
                None => cpus.iter().collect(),
            };
            let (sender_cpu, receiver_cpu) = udp_cpus(&listed).ok_or_else(|| {
                Exit::usage(format!(
                    "--cpus {cpus}: the udp probe takes one CPU (sender and receiver on it) or two (sender,receiver)"
                ))
            })?;
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
                handoff: trace.as_ref().map_or(0, TracePlan::udp_handoff),
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
    let app = match args.probe {
        ProbeName::App => {
            if args.trace {
                return Err(Exit::usage(
                    "--trace needs --probe timer, noise or udp: the app probe hands no samples to the tracer",
                ));
            }
            Some(plan_app(args, &timer, preset)?)
        }
        _ => {
            if args.buffers.is_some() || args.compute.is_some() || args.app.is_some() {
                return Err(Exit::usage(
                    "--buffers, --compute and --app need --probe app",
                ));
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
    let probe = match (noise, udp, app) {
        (Some(n), _, _) => ProbeCellPlan::Noise(n),
        (None, Some(u), _) => ProbeCellPlan::Udp(u),
        (None, None, Some(a)) => ProbeCellPlan::App(a),
        (None, None, None) => ProbeCellPlan::Timer(timer.clone()),
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
        stop_above,
        fail_above,
        actions,
        action_limit,
    })
}

/// The application preset `--app` names, for `--probe app`.
fn app_preset(args: &RunArgs) -> Result<Option<&'static AppPreset>, Exit> {
    let Some(name) = &args.app else {
        return Ok(None);
    };
    if args.probe != ProbeName::App {
        return Err(Exit::usage(
            "--buffers, --compute and --app need --probe app",
        ));
    }
    let names: Vec<&str> = APP_PRESETS.iter().map(|p| p.name).collect();
    AppPreset::find(name).map(Some).ok_or_else(|| {
        Exit::usage(format!(
            "--app: unknown application '{name}' ({})",
            names.join(", ")
        ))
    })
}

/// The app probe's pipeline: the preset's scheme with the options' parts
/// over it, the work calibrated on the first measured CPU.
fn plan_app(
    args: &RunArgs,
    timer: &TimerConfig,
    preset: Option<&'static AppPreset>,
) -> Result<AppConfig, Exit> {
    let period = timer.period;
    let buffers = args.buffers.or(preset.map(|p| p.buffers)).unwrap_or(2);
    let compute = match (&args.compute, preset) {
        (Some(text), _) => duration("compute", text)?,
        (None, Some(p)) => Nanos(p.compute.nanos(period.0)),
        (None, None) => Nanos(0),
    };
    let mut cfg = AppConfig {
        cpus: timer.cpus.clone(),
        period,
        buffers,
        compute,
        compute_turns: 0,
        policy: timer.policy,
        priority: timer.priority,
        threshold: timer.threshold,
        duration: timer.duration,
        app: preset.map(|p| p.name.to_string()),
    };
    cfg.validate().map_err(Exit::usage)?;
    if let Some(&cpu) = cfg.cpus.first() {
        let c = calibrate(cpu, compute)
            .map_err(|e| Exit::usage(format!("cannot calibrate --compute: {e}")))?;
        cfg.compute_turns = c.turns;
    }
    Ok(cfg)
}
