//! `run`'s arguments as the engine's [`RequestText`], and the request's
//! errors as the one-line messages that name the options. The parsing of
//! the text, the defaults and the rules between options are the request's
//! (`latscope_engine::request`); here are only the option names.

use latscope_engine::actions::ActionError;
use latscope_engine::probes::{Field, SettingError};
use latscope_engine::request::{
    nice_reason, AppScheme, Bound, RequestText, TextError, TextSetting,
};
use latscope_engine::{RequestError, RunPlan, RunRequest, TracePlanError};
use latscope_model::{CpuSet, Nanos};
use latscope_stats::forecast::APP_PRESETS;

use crate::args::{ActionArgs, LimitArgs, LoadArgs, RunArgs, TraceArgs};
use crate::exit::Exit;

/// Checks `args` against the online CPUs: the plan, or one line naming
/// the option at fault.
pub fn plan_run(args: &RunArgs, online: &CpuSet) -> Result<RunPlan, Exit> {
    request(args)?.plan(online).map_err(request_error)
}

pub(crate) fn duration(flag: &str, text: &str) -> Result<Nanos, Exit> {
    Nanos::parse_duration(text).map_err(|e| Exit::usage(format!("--{flag}: {e}")))
}

/// The arguments as a request: text parsed, nothing else decided.
pub fn request(args: &RunArgs) -> Result<RunRequest, Exit> {
    parse(&RequestText {
        probe: args.probe,
        cpus: args.cpus.clone(),
        period: args.period.clone(),
        duration: Some(args.duration.clone()),
        policy: args.policy,
        priority: args.priority,
        priorities: args.priorities.clone(),
        nice: args.nice,
        sched_runtime: args.sched_runtime.clone(),
        sched_deadline: args.sched_deadline.clone(),
        threshold: args.threshold.clone(),
        timer_api: args.timer_api,
        phase: args.phase,
        timer_slack: args.timer_slack.clone(),
        runtime: args.runtime.clone(),
        pause: args.pause.clone(),
        gap_ratio: args.gap_ratio,
        gap_min: args.gap_min.clone(),
        fp: args.fp,
        path: args.path,
        payload: args.payload,
        app: args.app.clone(),
        buffers: args.buffers,
        compute: args.compute.clone(),
        stack_period: Some(args.stack_period.clone()),
        episode_cap: Some(args.episode_cap),
        workloads: args.workload.clone(),
        checkpoint: Some(args.checkpoint.clone()),
        ..common(&args.trace, &args.load, &args.limits, &args.actions)
    })
}

/// The options `run` and `suite` share, as text.
pub fn common(t: &TraceArgs, load: &LoadArgs, limits: &LimitArgs, a: &ActionArgs) -> RequestText {
    RequestText {
        trace: t.trace,
        trace_backend: t.trace_backend,
        stacks: t.stacks,
        load_level: load.load_level,
        warmup: Some(load.warmup.clone()),
        stop_above: limits.stop_above.clone(),
        fail_above: limits.fail_above.clone(),
        actions: a.on_threshold.clone(),
        action_limit: a.action_limit.clone(),
        ..RequestText::default()
    }
}

/// The text as a request, with the forecast's application presets for
/// `--app`.
pub fn parse(text: &RequestText) -> Result<RunRequest, Exit> {
    let apps: Vec<AppScheme> = APP_PRESETS
        .iter()
        .map(|p| AppScheme {
            name: p.name,
            period: Nanos(p.period_ns),
            buffers: p.buffers,
            compute: p.compute,
        })
        .collect();
    text.parse(&apps).map_err(|e| match e {
        TextError::Duration { setting, error } => {
            Exit::usage(format!("{}: {error}", duration_flag(setting)))
        }
        TextError::TimerSlack(e) => Exit::usage(format!("--timer-slack: {e}")),
        TextError::UnknownApp { .. } => Exit::usage(format!("--app: {e}")),
        TextError::Workloads(e) => Exit::usage(format!("--workload: {e}")),
        TextError::Action(e) => action_error(e),
        TextError::Request(e) => request_error(e),
    })
}

/// The option a duration is given with.
fn duration_flag(s: TextSetting) -> &'static str {
    match s {
        TextSetting::Period => "--period",
        TextSetting::Duration => "--duration",
        TextSetting::SchedRuntime => "--sched-runtime",
        TextSetting::SchedDeadline => "--sched-deadline",
        TextSetting::Threshold => "--threshold",
        TextSetting::Runtime => "--runtime",
        TextSetting::Pause => "--pause",
        TextSetting::GapMin => "--gap-min",
        TextSetting::Compute => "--compute",
        TextSetting::StackPeriod => "--stack-period",
        TextSetting::Warmup => "--warmup",
        TextSetting::Checkpoint => "--checkpoint",
        TextSetting::StopAbove => "--stop-above",
        TextSetting::FailAbove => "--fail-above",
    }
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
        RequestError::PrioritiesWithTrace => "--priorities with --trace needs --probe timer: the noise probe's analysis follows one thread per CPU".into(),
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
