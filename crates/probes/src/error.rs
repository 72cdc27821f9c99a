//! What every probe reports besides its measurements: why it could not run,
//! how each measuring thread's set-up went, and a cheap view of progress.
//! They live at the crate root because every probe (timer, noise, udp, the
//! simulated one) and the engine driving them share them.

use latscope_model::{CpuId, Nanos};

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

/// A probe setting, as the settings and the store name it (the CLI names
/// each by its option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    Period,
    Duration,
    Priority,
    Phase,
    Buffers,
    Compute,
    Runtime,
    Pause,
    GapRatio,
    Payload,
}

impl Field {
    /// The setting's name in a sentence ("period", "gap ratio").
    pub fn name(self) -> &'static str {
        match self {
            Field::Period => "period",
            Field::Duration => "duration",
            Field::Priority => "priority",
            Field::Phase => "phase",
            Field::Buffers => "buffers",
            Field::Compute => "compute",
            Field::Runtime => "runtime",
            Field::Pause => "pause",
            Field::GapRatio => "gap ratio",
            Field::Payload => "payload",
        }
    }
}

/// Settings a probe cannot run with, one line each. The lines name the
/// settings, never a command-line option: the CLI puts its option names
/// in front ([`SettingError::subject`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("period must be greater than 0")]
    PeriodZero,
    #[error("period {period} is over the limit of {max}")]
    PeriodOverLimit { period: Nanos, max: Nanos },
    #[error("period {period} is outside {min}..10s for the udp probe")]
    UdpPeriod { period: Nanos, min: Nanos },
    #[error("duration {duration} is shorter than one period ({period})")]
    DurationUnderPeriod { duration: Nanos, period: Nanos },
    #[error("duration {duration} is shorter than the ring and one period ({primed})")]
    DurationUnderRing { duration: Nanos, primed: Nanos },
    /// No CPU to measure; the text says what for ("selected", "to measure").
    #[error("no CPU {0}")]
    NoCpu(&'static str),
    #[error("phase random applies to relative timers (nanosleep, epoll), not {0}")]
    PhaseRandom(TimerApi),
    /// A real-time priority out of range, with the policy named.
    #[error("priority {priority} is out of range for {policy}: expected 1-99")]
    PriorityForPolicy { priority: u32, policy: &'static str },
    #[error("priority {0} is outside 1-99")]
    Priority(u32),
    #[error("buffers {buffers} is out of range: expected 1-{max}")]
    Buffers { buffers: u32, max: u32 },
    #[error("compute {compute} must be shorter than the period {period}: the producer could never keep up")]
    ComputeOverPeriod { compute: Nanos, period: Nanos },
    #[error("runtime must be greater than 0")]
    RuntimeZero,
    #[error("runtime and pause must be at most 10s")]
    RuntimePauseTooLong,
    #[error("gap ratio must be at least 2")]
    GapRatio,
    #[error("payload {payload} is outside {min}..{max} bytes (a sequence number and a time stamp, up to the largest UDP/IPv4 datagram)")]
    Payload {
        payload: usize,
        min: usize,
        max: usize,
    },
    /// The noise duty cycle (its own one-line reason).
    #[error("{0}")]
    NoiseDuty(String),
    #[error("the noise duty cycle {on}/{every} does not fit")]
    DutyFit { on: Nanos, every: Nanos },
    #[error("a noise duty cycle needs a timer the loop schedules itself (clock_nanosleep, nanosleep, epoll), not {0}")]
    DutyTimer(TimerApi),
    /// Probes started together that would not measure alike: timer probes
    /// off one expiry grid, noise probes with different active periods.
    #[error("probes measured together must share CPUs and duration (timer: period, timer service and a fixed phase; noise: active periods, pauses and threshold), without a duty cycle")]
    NotTogether,
}

impl SettingError {
    /// The setting the line starts with, which a front end may replace by
    /// its own name for it (`--period 20s is over ...`); `None` when the
    /// line does not start with one setting.
    pub fn subject(&self) -> Option<Field> {
        Some(match self {
            SettingError::PeriodZero
            | SettingError::PeriodOverLimit { .. }
            | SettingError::UdpPeriod { .. } => Field::Period,
            SettingError::DurationUnderPeriod { .. } | SettingError::DurationUnderRing { .. } => {
                Field::Duration
            }
            SettingError::PhaseRandom(_) => Field::Phase,
            SettingError::Priority(_) => Field::Priority,
            SettingError::Buffers { .. } => Field::Buffers,
            SettingError::ComputeOverPeriod { .. } => Field::Compute,
            SettingError::RuntimeZero => Field::Runtime,
            SettingError::GapRatio => Field::GapRatio,
            SettingError::Payload { .. } => Field::Payload,
            SettingError::NoCpu(_)
            | SettingError::PriorityForPolicy { .. }
            | SettingError::RuntimePauseTooLong
            | SettingError::NoiseDuty(_)
            | SettingError::DutyFit { .. }
            | SettingError::DutyTimer(_)
            | SettingError::NotTogether => return None,
        })
    }

    /// The line after its subject's name (" 20s is over the limit of
    /// 10s"), or the whole line when it has no subject.
    pub fn rest(&self) -> String {
        let line = self.to_string();
        match self.subject() {
            Some(f) => line
                .strip_prefix(f.name())
                .map_or(line.clone(), str::to_string),
            None => line,
        }
    }
}
