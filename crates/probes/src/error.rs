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
    Config(String),
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
    /// A measuring loop failed for a reason that is not a timer service's
    /// error (the simulated probe's scripted failure, for one).
    #[error("measuring failed on CPU {cpu}: {reason}")]
    Measuring { cpu: CpuId, reason: String },
    #[error("measuring thread on CPU {0} panicked")]
    Panicked(CpuId),
}
