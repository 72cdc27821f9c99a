//! The one lifecycle every probe follows, so that the engine (and through
//! it the CLI, the monitor and the tests) drives timer, noise, udp and the
//! simulated probe alike:
//!
//! 1. **validate** the settings (one line naming the bad value);
//! 2. **start** the measuring threads: each sets itself up (pinned, policy,
//!    slack, stack prefaulted), reports how that went, and waits behind one
//!    shared barrier; all are released together once every one is ready;
//! 3. while they measure, the housekeeping thread reads **progress**, takes a
//!    **snapshot** at each checkpoint and **drains the timeline** of
//!    completed seconds;
//! 4. **finish** waits for the threads and hands over the exact final
//!    figures, with the first measuring error if a loop failed (the other
//!    threads' data is still good).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use latscope_model::{CpuId, NoiseCpuStats, TimerCpuStats, UdpStats};
use latscope_record::{MetricResult, TimelineChunk};

use crate::{ProbeError, Progress, SampleRing, ThreadSetup};

/// A configured probe whose recorders are allocated, not yet measuring.
pub trait Probe: Send {
    /// The probe's stable name: `timer`, `noise`, `udp`, `app`, `sim`.
    fn name(&self) -> &'static str;

    /// Checks the settings; the error is one line naming the bad value.
    fn validate(&self) -> Result<(), ProbeError>;

    /// Starts the measuring threads and returns once all of them are set up
    /// and released together. Setting `stop` ends their loops early.
    fn start(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<Box<dyn RunningProbe>, ProbeError>;
}

/// Per measured CPU: the measuring thread's tid and the ring its samples
/// are handed to the trace analysis in (only when asked for).
pub struct Handoff {
    pub cpu: CpuId,
    pub tid: i32,
    pub ring: Arc<SampleRing>,
}

/// A probe that is measuring. Every method is called from the
/// housekeeping thread, never from a measuring thread.
pub trait RunningProbe: Send {
    /// How each measuring thread's set-up went (sorted by CPU).
    fn setups(&self) -> &[ThreadSetup];

    /// CLOCK_MONOTONIC (or the scripted clock's) time zero of the cell;
    /// timeline seconds count from here.
    fn start_ns(&self) -> u64;

    /// Whether every measuring thread has ended.
    fn finished(&self) -> bool;

    /// A cheap view for the progress bar.
    fn progress(&self) -> Progress;

    /// Everything measured so far, for a checkpoint.
    fn snapshot(&self) -> ProbeSnapshot;

    /// Completed timeline seconds not yet taken.
    fn drain_timeline(&self) -> Vec<TimelineChunk>;

    /// The rings that feed the trace analysis.
    fn handoffs(&self) -> Vec<Handoff>;

    /// Waits for the measuring threads and returns the exact figures.
    fn finish(self: Box<Self>) -> ProbeFinal;
}

/// Figures a probe keeps beside its histograms, per kind of probe.
#[derive(Clone, Debug, Default)]
pub struct ProbeStats {
    pub timer: Vec<TimerCpuStats>,
    pub noise: Vec<NoiseCpuStats>,
    pub udp: Option<UdpStats>,
}

/// What a checkpoint stores of a running probe.
#[derive(Clone, Debug, Default)]
pub struct ProbeSnapshot {
    pub metrics: Vec<MetricResult>,
    pub stats: ProbeStats,
}

/// The probe after its threads ended.
pub struct ProbeFinal {
    pub snapshot: ProbeSnapshot,
    /// Every timeline second not yet taken, the last one included.
    pub timeline: Vec<TimelineChunk>,
    /// Timeline seconds lost because the reader fell behind.
    pub lost_timeline_seconds: u64,
    /// The first measuring loop that failed, if any.
    pub error: Option<ProbeError>,
}
