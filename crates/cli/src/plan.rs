//! `run`'s arguments as the engine's [`RequestText`], and the request's
//! errors as the one-line messages that name the options. The parsing of
//! the text, the defaults and the rules between options are the request's
//! (`latscope_engine::request`); here are only the option names.

use latscope_engine::request::{AppScheme, RequestText};
use latscope_engine::{RequestError, RunPlan, RunRequest};
use latscope_model::{CpuSet, Namer, Nanos, Setting};
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
    text.parse(&apps).map_err(|e| Exit::usage(e.line(&Options)))
}

/// The settings named by their options (`--gap-ratio`, `--probe timer`):
/// `--` and the setting's key.
pub struct Options;

impl Namer for Options {
    fn name(&self, s: Setting) -> String {
        format!("--{}", s.key())
    }
}

/// A request's error as one usage line naming the options.
pub fn request_error(e: RequestError) -> Exit {
    Exit::usage(e.line(&Options))
}
