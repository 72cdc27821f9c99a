//! What every probe reports besides its measurements: why it could not run,
//! how each measuring thread's set-up went, and a cheap view of progress.
//! They live at the crate root because every probe (timer, noise, udp, the
//! simulated one) and the engine driving them share them.

use latscope_model::{CpuId, Namer, Nanos, Neutral, Setting};

use crate::timer::TimerApi;

/// How a measuring thread's set-up went.
#[derive(Clone, Debug)]
pub struct ThreadSetup {
    pub cpu: CpuId,
    /// The measuring thread's kernel thread id (what tracepoints name).
    pub tid: i32,
    /// `Err` with a one-line reason when the policy/priority was refused.
    pub scheduler: Result<(), String>,
    /// The timer slack in force once the thread was set up, ns, as the
    /// kernel reports it (0 under a real-time policy); `None` when it could
    /// not be set as asked or read back.
    pub timer_slack_ns: Option<u64>,
    /// Under SCHED_RR: the round-robin quantum the kernel reported for
    /// this thread (`sched_rr_get_interval`), ns.
    pub rr_interval_ns: Option<u64>,
}

/// A cheap view of progress for the progress bar.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub samples: u64,
    pub max_latency: Nanos,
    pub overruns: u64,
}

/// Why a probe could not run, or why one of its measuring loops ended early.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("invalid settings: {0}")]
    Config(#[from] SettingError),
    /// A policy the kernel refused where falling back to SCHED_OTHER would
    /// measure something else than asked (SCHED_DEADLINE): its reason.
    #[error("{0}")]
    Scheduler(String),
    #[error("cannot pin the measuring thread to CPU {cpu}: {reason}")]
    Affinity { cpu: CpuId, reason: String },
    #[error("cannot start measuring thread: {0}")]
    Spawn(String),
    #[error("{api} failed on CPU {cpu}: {source}")]
    Timer {
        cpu: CpuId,
        api: TimerApi,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Network(String),
    /// The veth path's namespaces and link could not be made (the CLI
    /// names the option that chose the path).
    #[error("the veth path: {0}")]
    VethPath(String),
    /// A measuring loop failed for a reason that is not a timer service's
    /// error (the simulated probe's scripted failure, for one).
    #[error("measuring failed on CPU {cpu}: {reason}")]
    Measuring { cpu: CpuId, reason: String },
    #[error("measuring thread on CPU {0} panicked")]
    Panicked(CpuId),
}

/// Settings a probe cannot run with, one line each, worded by
/// [`SettingError::line`] with the settings named by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    PeriodZero,
    PeriodOverLimit {
        period: Nanos,
        max: Nanos,
    },
    UdpPeriod {
        period: Nanos,
        min: Nanos,
    },
    DurationUnderPeriod {
        duration: Nanos,
        period: Nanos,
    },
    DurationUnderRing {
        duration: Nanos,
        primed: Nanos,
    },
    /// No CPU to measure; the text says what for ("selected", "to measure").
    NoCpu(&'static str),
    PhaseRandom(TimerApi),
    /// A real-time priority out of range, with the policy named.
    PriorityForPolicy {
        priority: u32,
        policy: &'static str,
    },
    Priority(u32),
    Buffers {
        buffers: u32,
        max: u32,
    },
    ComputeOverPeriod {
        compute: Nanos,
        period: Nanos,
    },
    RuntimeZero,
    RuntimePauseTooLong,
    GapRatio,
    Payload {
        payload: usize,
        min: usize,
        max: usize,
    },
    /// The noise duty cycle (its own one-line reason).
    NoiseDuty(String),
    DutyFit {
        on: Nanos,
        every: Nanos,
    },
    DutyTimer(TimerApi),
    /// Probes started together that would not measure alike: timer probes
    /// off one expiry grid, noise probes with different active periods.
    NotTogether,
}

impl SettingError {
    /// The setting the line is about first, if one is.
    pub fn subject(&self) -> Option<Setting> {
        use SettingError as E;
        Some(match self {
            E::PeriodZero | E::PeriodOverLimit { .. } | E::UdpPeriod { .. } => Setting::Period,
            E::DurationUnderPeriod { .. } | E::DurationUnderRing { .. } => Setting::Duration,
            E::PhaseRandom(_) => Setting::Phase,
            E::Priority(_) => Setting::Priority,
            E::Buffers { .. } => Setting::Buffers,
            E::ComputeOverPeriod { .. } => Setting::Compute,
            E::RuntimeZero => Setting::Runtime,
            E::GapRatio => Setting::GapRatio,
            E::Payload { .. } => Setting::Payload,
            _ => return None,
        })
    }

    /// The line, each setting named by `n` (`period 20s is over the
    /// limit of 10s` in plain words).
    pub fn line(&self, n: &dyn Namer) -> String {
        use Setting as S;
        use SettingError as E;
        let given = |s, v: &dyn std::fmt::Display| n.given(s, &v.to_string());
        match self {
            E::PeriodZero => format!("{} must be greater than 0", n.name(S::Period)),
            E::PeriodOverLimit { period, max } => {
                format!("{} is over the limit of {max}", given(S::Period, period))
            }
            E::UdpPeriod { period, min } => format!(
                "{} is outside {min}..10s for the udp probe",
                given(S::Period, period)
            ),
            E::DurationUnderPeriod { duration, period } => format!(
                "{} is shorter than one period ({period})",
                given(S::Duration, duration)
            ),
            E::DurationUnderRing { duration, primed } => format!(
                "{} is shorter than the ring and one period ({primed})",
                given(S::Duration, duration)
            ),
            E::PhaseRandom(api) => format!(
                "{} applies to relative timers (nanosleep, epoll), not {api}",
                n.given(S::Phase, "random")
            ),
            E::Priority(p) => format!("{} is outside 1-99", given(S::Priority, p)),
            E::Buffers { buffers, max } => format!(
                "{} is out of range: expected 1-{max}",
                given(S::Buffers, buffers)
            ),
            E::ComputeOverPeriod { compute, period } => format!(
                "{} must be shorter than the period {period}: the producer could never keep up",
                given(S::Compute, compute)
            ),
            E::RuntimeZero => format!("{} must be greater than 0", n.name(S::Runtime)),
            E::RuntimePauseTooLong => format!(
                "{} and {} must be at most 10s",
                n.name(S::Runtime),
                n.name(S::Pause)
            ),
            E::GapRatio => format!("{} must be at least 2", n.name(S::GapRatio)),
            E::Payload { payload, min, max } => format!(
                "{} is outside {min}..{max} bytes (a sequence number and a time stamp, up to the largest UDP/IPv4 datagram)",
                given(S::Payload, payload)
            ),
            E::NoCpu(_)
            | E::PriorityForPolicy { .. }
            | E::NoiseDuty(_)
            | E::DutyFit { .. }
            | E::DutyTimer(_)
            | E::NotTogether => self.unnamed(),
        }
    }

    /// The lines that name no setting.
    fn unnamed(&self) -> String {
        match self {
            SettingError::NoCpu(what) => format!("no CPU {what}"),
            SettingError::PriorityForPolicy { priority, policy } => {
                format!("priority {priority} is out of range for {policy}: expected 1-99")
            }
            SettingError::NoiseDuty(why) => why.clone(),
            SettingError::DutyFit { on, every } => {
                format!("the noise duty cycle {on}/{every} does not fit")
            }
            SettingError::DutyTimer(api) => format!("a noise duty cycle needs a timer the loop schedules itself (clock_nanosleep, nanosleep, epoll), not {api}"),
            _ => "probes measured together must share CPUs and duration (timer: period, timer service and a fixed phase; noise: active periods, pauses and threshold), without a duty cycle".into(),
        }
    }
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line(&Neutral))
    }
}
