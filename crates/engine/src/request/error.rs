//! Why a request cannot be run: one variant per rule, worded once by
//! [`RequestError::line`] with each setting named by the caller (the CLI
//! by its options, the monitor by its keys, `Display` in plain words).

use latscope_model::{Namer, Nanos, Neutral, Policy, Setting};
use latscope_probes::SettingError;
use latscope_workloads::WorkloadError;

use crate::config::TracePlanError;
use crate::cpus::CpuChoiceError;

/// A request that breaks a rule, one line each.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// A probe's own check.
    Setting(#[from] SettingError),
    /// The trace settings themselves.
    Trace(#[from] TracePlanError),
    /// Stacks, or an episode cap other than the default, without tracing.
    TraceOptionsWithoutTrace,
    ActionsWithoutTrace,
    /// The app probe hands no samples to the tracer.
    TraceWithAppProbe,
    /// A value limit ([`Setting::StopAbove`] or [`Setting::FailAbove`])
    /// of 0.
    BoundZero(Setting),
    /// With tracing, the value that stops the run must be an episode.
    ThresholdAboveStop {
        threshold: Nanos,
        stop: Nanos,
    },
    /// Shorter than [`RunRequest::MIN_CHECKPOINT`](super::RunRequest::MIN_CHECKPOINT).
    CheckpointTooShort,
    Cpus(#[from] CpuChoiceError),
    /// The udp probe takes one or two CPUs.
    UdpCpus(String),
    TimerSlackWithoutTimer,
    NoiseOptionsWithoutNoise,
    UdpOptionsWithoutUdp,
    AppOptionsWithoutApp,
    /// A run without end (the monitor) outside its period range,
    /// [`RunRequest::UNBOUNDED_PERIODS`](super::RunRequest::UNBOUNDED_PERIODS).
    UnboundedPeriod(Nanos),
    /// The app probe's work could not be calibrated on this machine.
    Calibrate(String),
    /// A workload that does not exist or cannot run here.
    Workload(WorkloadError),
    LoadLevel(WorkloadError),
    /// A priority given with a policy that has none.
    PriorityWithoutRealTime(Policy),
    /// A nice value given with a policy it does not weigh.
    NiceWithPolicy(Policy),
    NiceOutOfRange(i32),
    DeadlineOptionsWithoutDeadline,
    /// batch, idle, deadline and nice are the timer probe's.
    PolicyNeedsTimer(Policy),
    DeadlineRuntimeTooShort(Nanos),
    /// The kernel refuses (EINVAL) a reservation out of this order.
    DeadlineOrder {
        runtime: Nanos,
        deadline: Nanos,
        period: Nanos,
    },
    /// Tracing reads the measured CPUs' events per CPU; DEADLINE threads
    /// move between CPUs.
    DeadlineWithTrace,
    /// An item of a priority list that is none of its forms.
    PriorityItem(String),
    PrioritiesTooFew,
    PriorityTwice(String),
    PrioritiesNeedTimer,
    PrioritiesWithPolicy,
    /// The noise probe's trace analysis follows one thread per CPU.
    PrioritiesWithTrace,
    PrioritiesWithRandomPhase,
    /// Cells marked as measured together that are not a group of timer
    /// or noise cells under one workload (a caller's plan, not a user's
    /// request).
    NotTogether,
    PrioritiesWithDuty,
    /// The kernel refuses (EPERM) SCHED_DEADLINE to a pinned thread.
    DeadlineCpus {
        cpus: String,
        online: String,
    },
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line(&Neutral))
    }
}

/// `a, b and c`.
fn names(n: &dyn Namer, settings: &[Setting]) -> String {
    let names: Vec<String> = settings.iter().map(|s| n.name(*s)).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

impl RequestError {
    /// The line, each setting named by `n`.
    pub fn line(&self, n: &dyn Namer) -> String {
        use RequestError as E;
        use Setting as S;
        match self {
            E::Setting(s) => s.line(n),
            E::Trace(t) => t.line(n),
            E::TraceOptionsWithoutTrace => format!(
                "{} need {}",
                names(n, &[S::Stacks, S::EpisodeCap]),
                n.name(S::Trace)
            ),
            E::ActionsWithoutTrace => format!(
                "{} acts on episodes: it needs {}",
                n.name(S::OnThreshold),
                n.name(S::Trace)
            ),
            E::TraceWithAppProbe => format!(
                "{} needs {}: the app probe hands no samples to the tracer",
                n.name(S::Trace),
                n.given(S::Probe, "timer, noise or udp")
            ),
            E::BoundZero(bound) => format!("{} must be greater than 0", n.name(*bound)),
            E::ThresholdAboveStop { threshold, stop } => format!(
                "{} is above {}: the value that stops the run would not be an episode",
                n.given(S::Threshold, &threshold.to_string()),
                n.given(S::StopAbove, &stop.to_string())
            ),
            E::CheckpointTooShort => {
                format!("{} must be at least 100ms", n.name(S::Checkpoint))
            }
            E::Cpus(c) => format!("{}: {c}", n.name(S::Cpus)),
            E::UdpCpus(cpus) => format!(
                "{}: the udp probe takes one CPU (sender and receiver on it) or two (sender,receiver)",
                n.given(S::Cpus, cpus)
            ),
            E::UnboundedPeriod(period) => {
                format!("{} is outside 50us..1s", n.given(S::Period, &period.to_string()))
            }
            E::Calibrate(why) => format!("cannot calibrate {}: {why}", n.name(S::Compute)),
            E::Workload(w) => format!("{}: {w}", n.name(S::Workload)),
            E::LoadLevel(w) => format!("{}: {w}", n.name(S::LoadLevel)),
            E::TimerSlackWithoutTimer
            | E::NoiseOptionsWithoutNoise
            | E::UdpOptionsWithoutUdp
            | E::AppOptionsWithoutApp => self.probe_options_line(n),
            E::PriorityWithoutRealTime(_)
            | E::NiceWithPolicy(_)
            | E::NiceOutOfRange(_)
            | E::DeadlineOptionsWithoutDeadline
            | E::PolicyNeedsTimer(_)
            | E::DeadlineWithTrace
            | E::DeadlineRuntimeTooShort(_)
            | E::DeadlineOrder { .. }
            | E::DeadlineCpus { .. } => self.sched_line(n),
            E::PriorityItem(_)
            | E::PrioritiesTooFew
            | E::PriorityTwice(_)
            | E::PrioritiesNeedTimer
            | E::PrioritiesWithPolicy
            | E::PrioritiesWithTrace
            | E::PrioritiesWithRandomPhase
            | E::PrioritiesWithDuty
            | E::NotTogether => self.priorities_line(n),
        }
    }

    /// A probe's own settings given with another probe.
    fn probe_options_line(&self, n: &dyn Namer) -> String {
        use Setting as S;
        let (settings, probe): (&[Setting], _) = match self {
            RequestError::TimerSlackWithoutTimer => (&[S::TimerSlack], "timer"),
            RequestError::NoiseOptionsWithoutNoise => (
                &[S::Runtime, S::Pause, S::GapRatio, S::GapMin, S::Fp],
                "noise",
            ),
            RequestError::UdpOptionsWithoutUdp => (&[S::Path, S::Payload], "udp"),
            // AppOptionsWithoutApp.
            _ => (&[S::Buffers, S::Compute, S::App], "app"),
        };
        let verb = if settings.len() == 1 { "needs" } else { "need" };
        format!("{} {verb} {}", names(n, settings), n.given(S::Probe, probe))
    }

    /// The scheduling rules: policy, priority, nice value and the DEADLINE
    /// reservation.
    fn sched_line(&self, n: &dyn Namer) -> String {
        use RequestError as E;
        use Setting as S;
        let policy = |p: &str| n.given(S::Policy, p);
        match self {
            E::PriorityWithoutRealTime(p) => format!(
                "{} needs {}: {p} threads have no real-time priority",
                n.name(S::Priority),
                policy("fifo or rr")
            ),
            E::NiceWithPolicy(p) => format!(
                "{} needs {}: {p} threads {}",
                n.name(S::Nice),
                policy("other or batch"),
                nice_reason(*p)
            ),
            E::NiceOutOfRange(v) => {
                format!("{} is outside -20..19", n.given(S::Nice, &v.to_string()))
            }
            E::DeadlineOptionsWithoutDeadline => format!(
                "{} need {}",
                names(n, &[S::SchedRuntime, S::SchedDeadline]),
                policy("deadline")
            ),
            E::DeadlineWithTrace => format!(
                "{} cannot follow {} threads: they are not pinned, and tracing reads each measured CPU's events",
                n.name(S::Trace),
                policy("deadline")
            ),
            E::DeadlineRuntimeTooShort(r) => format!(
                "{} is below the kernel's least, 1024ns",
                n.given(S::SchedRuntime, &r.to_string())
            ),
            E::DeadlineOrder {
                runtime,
                deadline,
                period,
            } => format!(
                "the kernel wants {} <= {} <= {}: got {runtime}, {deadline}, {period}",
                n.name(S::SchedRuntime),
                n.name(S::SchedDeadline),
                n.name(S::Period)
            ),
            E::DeadlineCpus { cpus, online } => format!(
                "{} threads cannot be pinned ({}): the kernel admits SCHED_DEADLINE only for threads free to run on every CPU of their root domain (online: {online}); leave {} out",
                policy("deadline"),
                n.given(S::Cpus, cpus),
                n.name(S::Cpus)
            ),
            // PolicyNeedsTimer.
            _ => format!(
                "{} and {} need {}",
                policy("batch, idle or deadline"),
                n.name(S::Nice),
                n.given(S::Probe, "timer")
            ),
        }
    }

    /// The rules of several priorities at once.
    fn priorities_line(&self, n: &dyn Namer) -> String {
        use RequestError as E;
        use Setting as S;
        let list = n.name(S::Priorities);
        match self {
            E::PrioritiesNeedTimer => format!(
                "{list} needs {} or {}",
                n.given(S::Probe, "timer"),
                n.given(S::Probe, "noise")
            ),
            E::PrioritiesWithPolicy => format!(
                "{list} replaces {}: give each policy in the list",
                names(
                    n,
                    &[S::Policy, S::Priority, S::Nice, S::SchedRuntime, S::SchedDeadline]
                )
            ),
            E::PrioritiesWithTrace => format!(
                "{list} with {} needs {}: the noise probe's analysis follows one thread per CPU",
                n.name(S::Trace),
                n.given(S::Probe, "timer")
            ),
            E::PrioritiesWithRandomPhase => format!(
                "{list} needs {}: a random phase gives each thread its own expiries",
                n.given(S::Phase, "fixed")
            ),
            E::PriorityItem(item) => format!(
                "{list}: '{item}' is not a priority 1-99, rr:N, fifo:N, other, batch or idle"
            ),
            E::PrioritiesTooFew => format!("{list}: several priorities at once need at least two (one is a plain run's policy and priority)"),
            E::PriorityTwice(item) => format!("{list}: {item} is listed twice: only a fifo or rr priority can be shared by several threads"),
            E::PrioritiesWithDuty => format!("{list}: a noise duty cycle pauses the threads off their grid: several priorities at once cannot have one"),
            // NotTogether.
            _ => format!("{list}: cells measured together must be the consecutive timer (or noise) cells their lists name, under one workload"),
        }
    }
}

/// Why a policy takes no nice value.
pub fn nice_reason(p: Policy) -> &'static str {
    match p {
        Policy::Fifo | Policy::Rr => "take a real-time priority instead",
        Policy::Idle => "run below every nice value",
        Policy::Deadline => "are scheduled by their reservation",
        Policy::Other | Policy::Batch => "take one",
    }
}
