//! Why a request cannot be run: one variant per rule, naming settings
//! (never a command-line option: the CLI words each for its options).

use latscope_model::{Nanos, Policy};
use latscope_probes::SettingError;
use latscope_workloads::WorkloadError;

use crate::config::TracePlanError;
use crate::cpus::CpuChoiceError;

/// Which of the two value limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Ends the run once a value exceeds it.
    StopAbove,
    /// Makes a complete run fail when a value exceeded it.
    FailAbove,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::StopAbove => "stop-above limit",
            Bound::FailAbove => "fail-above limit",
        }
    }
}

/// A request that breaks a rule, one line each.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// A probe's own check.
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// The trace settings themselves.
    #[error(transparent)]
    Trace(#[from] TracePlanError),
    /// Stacks, or an episode cap other than the default, without tracing.
    #[error("stacks and the episode cap need tracing")]
    TraceOptionsWithoutTrace,
    #[error("threshold actions act on episodes: they need tracing")]
    ActionsWithoutTrace,
    /// The app probe hands no samples to the tracer.
    #[error(
        "tracing needs the timer, noise or udp probe: the app probe hands no samples to the tracer"
    )]
    TraceWithAppProbe,
    #[error("the {} must be greater than 0", .0.name())]
    BoundZero(Bound),
    /// With tracing, the value that stops the run must be an episode.
    #[error("threshold {threshold} is above the stop-above limit {stop}: the value that stops the run would not be an episode")]
    ThresholdAboveStop { threshold: Nanos, stop: Nanos },
    /// Shorter than [`RunRequest::MIN_CHECKPOINT`](super::RunRequest::MIN_CHECKPOINT).
    #[error("checkpoint interval must be at least 100ms")]
    CheckpointTooShort,
    #[error("cpus: {0}")]
    Cpus(#[from] CpuChoiceError),
    /// The udp probe takes one or two CPUs.
    #[error("cpus {0}: the udp probe takes one CPU (sender and receiver on it) or two (sender,receiver)")]
    UdpCpus(String),
    #[error("timer slack needs the timer probe")]
    TimerSlackWithoutTimer,
    #[error("runtime, pause, gap ratio, gap min and fp need the noise probe")]
    NoiseOptionsWithoutNoise,
    #[error("path and payload need the udp probe")]
    UdpOptionsWithoutUdp,
    #[error("buffers, compute and app need the app probe")]
    AppOptionsWithoutApp,
    /// A run without end (the monitor) outside its period range,
    /// [`RunRequest::UNBOUNDED_PERIODS`](super::RunRequest::UNBOUNDED_PERIODS).
    #[error("period {0} is outside 50us..1s for a run without end")]
    UnboundedPeriod(Nanos),
    /// The app probe's work could not be calibrated on this machine.
    #[error("cannot calibrate the compute time: {0}")]
    Calibrate(String),
    /// A workload that does not exist or cannot run here.
    #[error("workload: {0}")]
    Workload(WorkloadError),
    #[error("load level: {0}")]
    LoadLevel(WorkloadError),
    /// A priority given with a policy that has none.
    #[error("a priority needs fifo or rr: {0} threads have no real-time priority")]
    PriorityWithoutRealTime(Policy),
    /// A nice value given with a policy it does not weigh.
    #[error("a nice value needs other or batch: {0} threads {reason}", reason = nice_reason(*.0))]
    NiceWithPolicy(Policy),
    #[error("nice {0} is outside -20..19")]
    NiceOutOfRange(i32),
    #[error("runtime and deadline need the deadline policy")]
    DeadlineOptionsWithoutDeadline,
    /// batch, idle, deadline and nice are the timer probe's.
    #[error("the {0} policy and a nice value need the timer probe")]
    PolicyNeedsTimer(Policy),
    #[error("deadline runtime {0} is below the kernel's least, 1.02us (1024ns)")]
    DeadlineRuntimeTooShort(Nanos),
    /// The kernel refuses (EINVAL) a reservation out of this order.
    #[error("the kernel wants runtime <= deadline <= period: runtime {runtime}, deadline {deadline}, period {period}")]
    DeadlineOrder {
        runtime: Nanos,
        deadline: Nanos,
        period: Nanos,
    },
    /// Tracing reads the measured CPUs' events per CPU; DEADLINE threads
    /// move between CPUs.
    #[error("tracing cannot follow deadline threads: they are not pinned, and tracing reads each measured CPU's events")]
    DeadlineWithTrace,
    /// An item of a priority list that is none of its forms.
    #[error("'{0}' is not a priority 1-99, rr:N, fifo:N, other, batch or idle")]
    PriorityItem(String),
    #[error(
        "several priorities at once need at least two (one is a plain run's policy and priority)"
    )]
    PrioritiesTooFew,
    #[error("{0} is listed twice: only a fifo or rr priority can be shared by several threads")]
    PriorityTwice(String),
    #[error("several priorities at once need the timer or the noise probe")]
    PrioritiesNeedTimer,
    #[error("several priorities at once replace the policy, priority, nice value and reservation: give each in the list")]
    PrioritiesWithPolicy,
    /// The noise probe's trace analysis follows one thread per CPU.
    #[error("several priorities at once are traced with the timer probe only: the noise probe's analysis follows one thread per CPU")]
    PrioritiesWithTrace,
    #[error("a random phase gives each thread its own expiries: several priorities at once need the fixed phase")]
    PrioritiesWithRandomPhase,
    /// Cells marked as measured together that are not a group of timer
    /// or noise cells under one workload (a caller's plan, not a user's
    /// request).
    #[error("cells measured together must be the consecutive timer (or noise) cells their lists name, under one workload")]
    NotTogether,
    #[error("a noise duty cycle pauses the threads off their grid: several priorities at once cannot have one")]
    PrioritiesWithDuty,
    /// The kernel refuses (EPERM) SCHED_DEADLINE to a pinned thread.
    #[error("deadline threads cannot be pinned: the kernel admits SCHED_DEADLINE only for a thread free to run on every CPU of its root domain (online: {online}), not on cpus {cpus}")]
    DeadlineCpus { cpus: String, online: String },
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
