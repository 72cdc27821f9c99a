//! `run`'s arguments as the engine's [`RunRequest`], and the request's
//! errors as the one-line messages that name the options. The defaults and
//! the rules between options are the request's (`latscope_engine::request`);
//! here is only the parsing of text and the option names.

use latscope_engine::actions::{Action, ActionError, Limit};
use latscope_engine::probes::{Field, Phase, SettingError, TimerApi};
use latscope_engine::request::{
    nice_reason, parse_priority_list, AppOptions, Bound, NoiseOptions, ProbeKind, SchedOptions,
    TimerOptions, TraceOptions, UdpOptions,
};
use latscope_engine::workloads::{split_workloads, LoadLevel};
use latscope_engine::{RequestError, RunPlan, RunRequest, TracePlanError};
use latscope_model::{CpuSet, Nanos, Policy, TimerSlack, UdpPath};
use latscope_stats::forecast::{AppPreset, APP_PRESETS};

use crate::args::{
    LoadLevelArg, PhaseArg, PolicyArg, ProbeName, RunArgs, TimerApiArg, TraceArgs, UdpPathArg,
};
use crate::exit::Exit;

/// Checks `args` against the online CPUs: the plan, or one line naming
/// the option at fault.
pub fn plan_run(args: &RunArgs, online: &CpuSet) -> Result<RunPlan, Exit> {
    request(args)?.plan(online).map_err(request_error)
}

pub(crate) fn duration(flag: &str, text: &str) -> Result<Nanos, Exit> {
    Nanos::parse_duration(text).map_err(|e| Exit::usage(format!("--{flag}: {e}")))
}

pub(crate) fn optional(flag: &str, text: Option<&str>) -> Result<Option<Nanos>, Exit> {
    text.map(|t| duration(flag, t)).transpose()
}

/// The arguments as a request: text parsed, nothing else decided.
pub fn request(args: &RunArgs) -> Result<RunRequest, Exit> {
    let (period, app) = app_options(args, optional("period", args.period.as_deref())?)?;
    Ok(RunRequest {
        probe: probe_kind(args.probe),
        cpus: args.cpus.clone(),
        period,
        duration: Some(duration("duration", &args.duration)?),
        policy: policy(args.policy),
        priority: args.priority,
        priorities: match &args.priorities {
            Some(list) => parse_priority_list(list).map_err(request_error)?,
            None => Vec::new(),
        },
        sched: SchedOptions {
            nice: args.nice,
            runtime: optional("sched-runtime", args.sched_runtime.as_deref())?,
            deadline: optional("sched-deadline", args.sched_deadline.as_deref())?,
        },
        threshold: optional("threshold", args.threshold.as_deref())?,
        timer: timer_options(args)?,
        noise: noise_options(args)?,
        udp: UdpOptions {
            path: args.path.map(|p| match p {
                UdpPathArg::Loopback => UdpPath::Loopback,
                UdpPathArg::Veth => UdpPath::Veth,
            }),
            payload: args.payload,
        },
        app,
        trace: TraceOptions {
            // Parsed only when used, as before.
            stack_period: match args.trace.stacks {
                true => duration("stack-period", &args.stack_period)?,
                false => latscope_engine::TracePlan::DEFAULT_STACK_PERIOD,
            },
            episode_cap: args.episode_cap,
            ..trace_options(&args.trace)
        },
        workloads: match &args.workload {
            None => Vec::new(),
            Some(list) => {
                split_workloads(list).map_err(|e| Exit::usage(format!("--workload: {e}")))?
            }
        },
        load_level: load_level(args.load.load_level),
        warmup: duration("warmup", &args.load.warmup)?,
        checkpoint: duration("checkpoint", &args.checkpoint)?,
        stop_above: optional("stop-above", args.limits.stop_above.as_deref())?,
        fail_above: optional("fail-above", args.limits.fail_above.as_deref())?,
        actions: actions(&args.actions.on_threshold)?,
        action_limit: action_limit(args.actions.action_limit.as_deref())?,
    })
}

/// `--trace`, `--trace-backend` and `--stacks`; the rest as by default.
pub fn trace_options(t: &TraceArgs) -> TraceOptions {
    TraceOptions {
        on: t.trace,
        backend: t.trace_backend.into(),
        stacks: t.stacks,
        ..RunRequest::default().trace
    }
}

/// `--on-threshold`, each parsed.
pub fn actions(list: &[String]) -> Result<Vec<Action>, Exit> {
    list.iter()
        .map(|a| Action::parse(a).map_err(action_error))
        .collect()
}

/// `--action-limit` (default 10/h).
pub fn action_limit(text: Option<&str>) -> Result<Limit, Exit> {
    text.map_or(Ok(Limit::default()), |t| {
        Limit::parse(t).map_err(action_error)
    })
}

fn action_error(e: ActionError) -> Exit {
    Exit::usage(match e {
        ActionError::Action(a) => {
            format!("--on-threshold '{a}': give exec:COMMAND, snapshot or snapshot:DIR")
        }
        ActionError::Limit(l) => {
            format!("--action-limit '{l}': give COUNT/PERIOD, e.g. 10/h, 1/m, 100/d")
        }
    })
}

pub fn probe_kind(p: ProbeName) -> ProbeKind {
    match p {
        ProbeName::Timer => ProbeKind::Timer,
        ProbeName::Noise => ProbeKind::Noise,
        ProbeName::Udp => ProbeKind::Udp,
        ProbeName::App => ProbeKind::App,
    }
}

pub fn policy(p: PolicyArg) -> Policy {
    match p {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::Rr,
        PolicyArg::Other => Policy::Other,
        PolicyArg::Batch => Policy::Batch,
        PolicyArg::Idle => Policy::Idle,
        PolicyArg::Deadline => Policy::Deadline,
    }
}

pub fn load_level(l: LoadLevelArg) -> LoadLevel {
    match l {
        LoadLevelArg::Light => LoadLevel::Light,
        LoadLevelArg::Normal => LoadLevel::Normal,
        LoadLevelArg::Heavy => LoadLevel::Heavy,
    }
}

/// `--timer-slack` is parsed only for the timer probe (the request says
/// it needs it).
pub fn timer_slack(text: Option<&str>, probe: ProbeName) -> Result<Option<TimerSlack>, Exit> {
    match (text, probe) {
        (Some(t), ProbeName::Timer) => TimerSlack::parse(t)
            .map(Some)
            .map_err(|e| Exit::usage(format!("--timer-slack: {e}"))),
        (Some(_), _) => Ok(Some(TimerSlack::MINIMUM)),
        (None, _) => Ok(None),
    }
}

fn timer_options(args: &RunArgs) -> Result<TimerOptions, Exit> {
    Ok(TimerOptions {
        api: match args.timer_api {
            TimerApiArg::ClockNanosleep => TimerApi::ClockNanosleep,
            TimerApiArg::Nanosleep => TimerApi::Nanosleep,
            TimerApiArg::Timerfd => TimerApi::Timerfd,
            TimerApiArg::PosixTimer => TimerApi::PosixTimer,
            TimerApiArg::Epoll => TimerApi::Epoll,
        },
        phase: match args.phase {
            PhaseArg::Fixed => Phase::Fixed,
            PhaseArg::Random => Phase::Random,
        },
        slack: timer_slack(args.timer_slack.as_deref(), args.probe)?,
        noise_duty: None,
    })
}

fn noise_options(args: &RunArgs) -> Result<NoiseOptions, Exit> {
    Ok(NoiseOptions {
        runtime: optional("runtime", args.runtime.as_deref())?,
        // `--pause 0` (spin continuously) reads naturally without a unit.
        pause: match args.pause.as_deref().map(str::trim) {
            None => None,
            Some("0") => Some(Nanos(0)),
            Some(t) => Some(duration("pause", t)?),
        },
        gap_ratio: args.gap_ratio,
        gap_min: optional("gap-min", args.gap_min.as_deref())?,
        fp: args.fp,
    })
}

/// The period and `--app`, `--buffers` and `--compute`, an application's
/// preset expanded: its period when `--period` is not given, its buffers
/// and its compute time (a share of the period) unless given. Looked up
/// for `--probe app` only (with another probe the request refuses them).
fn app_options(args: &RunArgs, period: Option<Nanos>) -> Result<(Option<Nanos>, AppOptions), Exit> {
    let preset = match (&args.app, args.probe) {
        (Some(name), ProbeName::App) => Some(find_app(name)?),
        _ => None,
    };
    let period = period.or(preset.map(|p| Nanos(p.period_ns)));
    let compute = match (&args.compute, preset, period) {
        (Some(text), _, _) => Some(duration("compute", text)?),
        (None, Some(p), Some(period)) => Some(Nanos(p.compute.nanos(period.0))),
        _ => None,
    };
    let app = AppOptions {
        // The preset's own name is recorded (with another probe the name
        // given, which the request refuses).
        name: preset.map_or(args.app.clone(), |p| Some(p.name.to_string())),
        buffers: args.buffers.or(preset.map(|p| p.buffers)),
        compute,
    };
    Ok((period, app))
}

fn find_app(name: &str) -> Result<&'static AppPreset, Exit> {
    AppPreset::find(name).ok_or_else(|| {
        let names: Vec<&str> = APP_PRESETS.iter().map(|p| p.name).collect();
        Exit::usage(format!(
            "--app: unknown application '{name}' ({})",
            names.join(", ")
        ))
    })
}

/// The option a probe setting is given with.
fn flag(f: Field) -> &'static str {
    match f {
        Field::Period => "--period",
        Field::Duration => "--duration",
        Field::Priority => "--priority",
        Field::Phase => "--phase",
        Field::Buffers => "--buffers",
        Field::Compute => "--compute",
        Field::Runtime => "--runtime",
        Field::Pause => "--pause",
        Field::GapRatio => "--gap-ratio",
        Field::Payload => "--payload",
    }
}

/// A probe's setting error as the line users see: `--period 20s is over
/// the limit of 10s`.
pub fn setting_line(e: &SettingError) -> String {
    match (e, e.subject()) {
        (SettingError::RuntimePauseTooLong, _) => {
            "--runtime and --pause must be at most 10s".into()
        }
        (_, Some(field)) => format!("{}{}", flag(field), e.rest()),
        (_, None) => e.to_string(),
    }
}

/// A request's error as one usage line naming the options.
pub fn request_error(e: RequestError) -> Exit {
    Exit::usage(request_line(&e))
}

fn request_line(e: &RequestError) -> String {
    match e {
        RequestError::Setting(s) => setting_line(s),
        RequestError::Trace(TracePlanError::ZeroThreshold) => {
            "--threshold must be greater than 0 with --trace".into()
        }
        RequestError::Trace(TracePlanError::StackPeriod) => {
            "--stack-period must be between 10us and 1s".into()
        }
        RequestError::TraceOptionsWithoutTrace => "--stacks and --episode-cap need --trace".into(),
        RequestError::ActionsWithoutTrace => {
            "--on-threshold acts on episodes: it needs --trace".into()
        }
        RequestError::TraceWithAppProbe => "--trace needs --probe timer, noise or udp: the app probe hands no samples to the tracer".into(),
        RequestError::BoundZero(Bound::StopAbove) => "--stop-above must be greater than 0".into(),
        RequestError::BoundZero(Bound::FailAbove) => "--fail-above must be greater than 0".into(),
        RequestError::ThresholdAboveStop { threshold, stop } => format!(
            "--threshold {threshold} is above --stop-above {stop}: the value that stops the run would not be an episode"
        ),
        RequestError::CheckpointTooShort => "--checkpoint must be at least 100ms".into(),
        RequestError::Cpus(c) => format!("--cpus: {c}"),
        RequestError::UdpCpus(cpus) => format!(
            "--cpus {cpus}: the udp probe takes one CPU (sender and receiver on it) or two (sender,receiver)"
        ),
        RequestError::TimerSlackWithoutTimer => "--timer-slack needs --probe timer".into(),
        RequestError::NoiseOptionsWithoutNoise => {
            "--runtime, --pause, --gap-ratio, --gap-min and --fp need --probe noise".into()
        }
        RequestError::UdpOptionsWithoutUdp => "--path and --payload need --probe udp".into(),
        RequestError::AppOptionsWithoutApp => {
            "--buffers, --compute and --app need --probe app".into()
        }
        RequestError::UnboundedPeriod(period) => format!("--period {period} is outside 50us..1s"),
        RequestError::Calibrate(why) => format!("cannot calibrate --compute: {why}"),
        RequestError::Workload(w) => format!("--workload: {w}"),
        RequestError::LoadLevel(w) => format!("--load-level: {w}"),
        RequestError::PriorityWithoutRealTime(_)
        | RequestError::NiceWithPolicy(_)
        | RequestError::NiceOutOfRange(_)
        | RequestError::DeadlineOptionsWithoutDeadline
        | RequestError::PolicyNeedsTimer(_)
        | RequestError::DeadlineWithTrace
        | RequestError::DeadlineRuntimeTooShort(_)
        | RequestError::DeadlineOrder { .. }
        | RequestError::DeadlineCpus { .. } => sched_line(e),
        RequestError::PriorityItem(_)
        | RequestError::PrioritiesTooFew
        | RequestError::PriorityTwice(_)
        | RequestError::PrioritiesNeedTimer
        | RequestError::PrioritiesWithPolicy
        | RequestError::PrioritiesWithTrace
        | RequestError::PrioritiesWithRandomPhase
        | RequestError::PrioritiesWithDuty
        | RequestError::NotTogether => priorities_line(e),
    }
}

/// The rules of several priorities at once, naming --priorities and the
/// options it cannot go with.
fn priorities_line(e: &RequestError) -> String {
    match e {
        RequestError::PrioritiesNeedTimer => {
            "--priorities needs --probe timer or --probe noise".into()
        }
        RequestError::PrioritiesWithPolicy => "--priorities replaces --policy, --priority, --nice, --sched-runtime and --sched-deadline: give each policy in the list".into(),
        RequestError::PrioritiesWithTrace => "--priorities cannot go with --trace: tracing follows one measuring thread per CPU".into(),
        RequestError::PrioritiesWithRandomPhase => "--priorities needs --phase fixed: a random phase gives each thread its own expiries".into(),
        other => format!("--priorities: {other}"),
    }
}

/// The scheduling rules' errors, naming --policy, --priority, --nice and
/// the DEADLINE reservation's options.
fn sched_line(e: &RequestError) -> String {
    match e {
        RequestError::PriorityWithoutRealTime(p) => {
            format!("--priority needs --policy fifo or rr: {p} threads have no real-time priority")
        }
        RequestError::NiceWithPolicy(p) => format!(
            "--nice needs --policy other or batch: {p} threads {}",
            nice_reason(*p)
        ),
        RequestError::NiceOutOfRange(n) => format!("--nice {n} is outside -20..19"),
        RequestError::DeadlineOptionsWithoutDeadline => {
            "--sched-runtime and --sched-deadline need --policy deadline".into()
        }
        RequestError::PolicyNeedsTimer(_) => {
            "--policy batch, idle or deadline and --nice need --probe timer".into()
        }
        RequestError::DeadlineWithTrace => "--trace cannot follow --policy deadline threads: they are not pinned, and tracing reads each measured CPU's events".into(),
        RequestError::DeadlineRuntimeTooShort(r) => {
            format!("--sched-runtime {r} is below the kernel's least, 1024ns")
        }
        RequestError::DeadlineOrder {
            runtime,
            deadline,
            period,
        } => format!(
            "the kernel wants --sched-runtime <= --sched-deadline <= --period: got {runtime}, {deadline}, {period}"
        ),
        RequestError::DeadlineCpus { cpus, online } => format!(
            "--policy deadline threads cannot be pinned (--cpus {cpus}): the kernel admits SCHED_DEADLINE only for threads free to run on every CPU of their root domain (online: {online}); leave --cpus out"
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use latscope_engine::probes::MAX_PERIOD;

    /// Every setting error's line names the option, as before the request
    /// moved to the engine.
    #[test]
    fn setting_errors_name_the_options() {
        let cases = [
            (SettingError::PeriodZero, "--period must be greater than 0"),
            (
                SettingError::PeriodOverLimit {
                    period: Nanos::from_secs(11),
                    max: MAX_PERIOD,
                },
                "--period 11.0s is over the limit of 10.0s",
            ),
            (SettingError::GapRatio, "--gap-ratio must be at least 2"),
            (
                SettingError::RuntimePauseTooLong,
                "--runtime and --pause must be at most 10s",
            ),
            (SettingError::Priority(0), "--priority 0 is outside 1-99"),
            (
                SettingError::PriorityForPolicy {
                    priority: 0,
                    policy: "fifo",
                },
                "priority 0 is out of range for fifo: expected 1-99",
            ),
            (
                SettingError::Buffers {
                    buffers: 65,
                    max: 64,
                },
                "--buffers 65 is out of range: expected 1-64",
            ),
        ];
        for (e, line) in cases {
            assert_eq!(setting_line(&e), line);
        }
    }

    #[test]
    fn request_errors_name_the_options() {
        let line = |e: RequestError| request_line(&e);
        assert_eq!(
            line(RequestError::TraceOptionsWithoutTrace),
            "--stacks and --episode-cap need --trace"
        );
        assert_eq!(
            line(RequestError::CheckpointTooShort),
            "--checkpoint must be at least 100ms"
        );
        assert_eq!(
            line(RequestError::BoundZero(Bound::FailAbove)),
            "--fail-above must be greater than 0"
        );
    }
}
