//! The wording of the engine's errors (`RequestError::line`, the probes'
//! `SettingError`, the text's `TextError`, the trace plan's and the
//! actions' errors), named by the command line's options: every line is
//! the one users saw when the CLI worded each error itself.

use latscope_engine::actions::ActionError;
use latscope_engine::probes::{SettingError, MAX_PERIOD};
use latscope_engine::request::TextError;
use latscope_engine::{RequestError, TracePlanError};
use latscope_model::{Namer, Nanos, Policy, Setting};

/// The settings named as the CLI names them (`plan.rs`'s `Options`, the
/// same rule): `--` and the setting's key.
struct Flags;

impl Namer for Flags {
    fn name(&self, s: Setting) -> String {
        format!("--{}", s.key())
    }
}

/// Every line as users saw it when the CLI worded each error itself.
const LINES: &str = "\
--period must be greater than 0
--period 11.0s is over the limit of 10.0s
--gap-ratio must be at least 2
--runtime and --pause must be at most 10s
--priority 0 is outside 1-99
priority 0 is out of range for fifo: expected 1-99
--buffers 65 is out of range: expected 1-64
--compute 2.00s must be shorter than the period 1.00s: the producer could never keep up
--threshold must be greater than 0 with --trace
--stack-period must be between 10us and 1s
--stacks and --episode-cap need --trace
--on-threshold acts on episodes: it needs --trace
--trace needs --probe timer, noise or udp: the app probe hands no samples to the tracer
--stop-above must be greater than 0
--fail-above must be greater than 0
--threshold 1.00ms is above --stop-above 500µs: the value that stops the run would not be an episode
--checkpoint must be at least 100ms
--cpus 0-2: the udp probe takes one CPU (sender and receiver on it) or two (sender,receiver)
--timer-slack needs --probe timer
--runtime, --pause, --gap-ratio, --gap-min and --fp need --probe noise
--path and --payload need --probe udp
--buffers, --compute and --app need --probe app
--period 1.00ms is outside 50us..1s
cannot calibrate --compute: no clock
--priority needs --policy fifo or rr: other threads have no real-time priority
--nice needs --policy other or batch: idle threads run below every nice value
--nice 25 is outside -20..19
--sched-runtime and --sched-deadline need --policy deadline
--policy batch, idle or deadline and --nice need --probe timer
--trace cannot follow --policy deadline threads: they are not pinned, and tracing reads each measured CPU's events
--sched-runtime 500ns is below the kernel's least, 1024ns
the kernel wants --sched-runtime <= --sched-deadline <= --period: got 1.00ms, 500µs, 500ns
--policy deadline threads cannot be pinned (--cpus 0): the kernel admits SCHED_DEADLINE only for threads free to run on every CPU of their root domain (online: 0-1); leave --cpus out
--priorities needs --probe timer or --probe noise
--priorities replaces --policy, --priority, --nice, --sched-runtime and --sched-deadline: give each policy in the list
--priorities with --trace needs --probe timer: the noise probe's analysis follows one thread per CPU
--priorities needs --phase fixed: a random phase gives each thread its own expiries
--priorities: 'x' is not a priority 1-99, rr:N, fifo:N, other, batch or idle
--priorities: several priorities at once need at least two (one is a plain run's policy and priority)
--priorities: idle is listed twice: only a fifo or rr priority can be shared by several threads
--priorities: a noise duty cycle pauses the threads off their grid: several priorities at once cannot have one
--timer-slack: bad
--app: unknown application 'walkman' (modem)
--on-threshold 'mail': give exec:COMMAND, snapshot or snapshot:DIR
--action-limit 'lots': give COUNT/PERIOD, e.g. 10/h, 1/m, 100/d";

fn setting_errors() -> [SettingError; 8] {
    use SettingError as E;
    [
        E::PeriodZero,
        E::PeriodOverLimit {
            period: Nanos::from_secs(11),
            max: MAX_PERIOD,
        },
        E::GapRatio,
        E::RuntimePauseTooLong,
        E::Priority(0),
        E::PriorityForPolicy {
            priority: 0,
            policy: "fifo",
        },
        E::Buffers {
            buffers: 65,
            max: 64,
        },
        E::ComputeOverPeriod {
            compute: Nanos::from_secs(2),
            period: Nanos::from_secs(1),
        },
    ]
}

fn rules() -> Vec<RequestError> {
    use RequestError as E;
    let (ms, us, ns) = (Nanos::from_millis(1), Nanos::from_micros(500), Nanos(500));
    vec![
        E::Trace(TracePlanError::ZeroThreshold),
        E::Trace(TracePlanError::StackPeriod),
        E::TraceOptionsWithoutTrace,
        E::ActionsWithoutTrace,
        E::TraceWithAppProbe,
        E::BoundZero(Setting::StopAbove),
        E::BoundZero(Setting::FailAbove),
        E::ThresholdAboveStop {
            threshold: ms,
            stop: us,
        },
        E::CheckpointTooShort,
        E::UdpCpus("0-2".into()),
        E::TimerSlackWithoutTimer,
        E::NoiseOptionsWithoutNoise,
        E::UdpOptionsWithoutUdp,
        E::AppOptionsWithoutApp,
        E::UnboundedPeriod(ms),
        E::Calibrate("no clock".into()),
        E::PriorityWithoutRealTime(Policy::Other),
        E::NiceWithPolicy(Policy::Idle),
        E::NiceOutOfRange(25),
        E::DeadlineOptionsWithoutDeadline,
        E::PolicyNeedsTimer(Policy::Batch),
        E::DeadlineWithTrace,
        E::DeadlineRuntimeTooShort(ns),
        E::DeadlineOrder {
            runtime: ms,
            deadline: us,
            period: ns,
        },
        E::DeadlineCpus {
            cpus: "0".into(),
            online: "0-1".into(),
        },
        E::PrioritiesNeedTimer,
        E::PrioritiesWithPolicy,
        E::PrioritiesWithTrace,
        E::PrioritiesWithRandomPhase,
        E::PriorityItem("x".into()),
        E::PrioritiesTooFew,
        E::PriorityTwice("idle".into()),
        E::PrioritiesWithDuty,
    ]
}

/// The library words each error once; named by the options, every
/// line is the one users saw before.
#[test]
fn errors_name_the_options_as_before() {
    let text = [
        TextError::TimerSlack("bad".into()),
        TextError::UnknownApp {
            name: "walkman".into(),
            known: "modem".into(),
        },
        TextError::Action(ActionError::Action("mail".into())),
        TextError::Action(ActionError::Limit("lots".into())),
    ];
    let lines: Vec<String> = setting_errors()
        .into_iter()
        .map(RequestError::Setting)
        .chain(rules())
        .map(|e| e.line(&Flags))
        .chain(text.iter().map(|e| e.line(&Flags)))
        .collect();
    for (got, want) in lines.iter().zip(LINES.lines()) {
        assert_eq!(got, want);
    }
    assert_eq!(lines.len(), LINES.lines().count());
    let e = TextError::Duration {
        setting: Setting::GapMin,
        error: Nanos::parse_duration("soon").unwrap_err(),
    };
    assert!(e.line(&Flags).starts_with("--gap-min: invalid duration"));
}
