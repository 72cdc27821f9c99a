//! The analyzer's state and settings: what the analysis (this module's
//! `impl Analyzer`) and its modes (`kernel`, `udp`) share.

use std::collections::{HashMap, VecDeque};

use latscope_model::{
    CauseKind, CauseTotal, CpuId, Episode, EpisodeWindow, Nanos, NoiseClass, TraceSummary,
};
use latscope_stats::Histogram;

use super::attribute::{Environment, ThreadNames};
use super::steal::KernelSteal;
use super::symbols::Symbolize;
use super::work::WorkStats;
use super::{held, held_perf, recurring, seconds};
use crate::event::TraceEvent;

/// A measuring thread the analysis follows.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub cpu: CpuId,
    pub tid: i32,
}

/// Documented defaults; see docs/tracing.md.
pub const DEFAULT_EPISODE_CAP: usize = 1000;
pub const DEFAULT_WINDOW_EVENTS: usize = 16_384;
pub const DEFAULT_EXPORT_EVENTS: usize = 2_000;
/// How far before the expiry the attribution replays events, to know what
/// was running (and nested) at the expiry.
pub const REPLAY_NS: u64 = 2_000_000;
/// How far before the expiry an episode's exported window starts.
pub const EXPORT_BEFORE_NS: u64 = 500_000;

#[derive(Clone, Debug)]
pub struct AnalyzerConfig {
    pub measured: Vec<Measured>,
    /// Samples above this become episodes.
    pub threshold: Nanos,
    /// Episodes kept in full per run; the rest are counted and summed.
    pub episode_cap: usize,
    /// Events kept per measured CPU (the bounded window).
    pub window_events: usize,
    /// Events kept with each episode for export.
    pub export_events: usize,
    /// CLOCK_MONOTONIC of the cell's start (episode offsets count from it).
    pub cell_start_ns: u64,
    /// How far the parts of a sample may disagree with the clock reads
    /// (clock-read error) before the sample counts as not decomposed.
    pub tolerance_ns: u64,
    /// The samples are interruptions of the noise probe's loop (start,
    /// end), not timer wake-ups: classify them instead of decomposing.
    pub noise: bool,
    /// The samples are datagrams of the UDP probe (kernel receive time
    /// stamp, receiver's user code has it) on the receiver's CPU, split into
    /// `udp.recv.deliver` / `.sched` / `.return` (docs/tracing.md). `measured`
    /// then holds the receiver and, on another CPU, the sender (its CPU's
    /// events are needed; it gets no samples). Samples are processed only
    /// in [`Analyzer::flush`] and [`Analyzer::finish`]. Ignored with `noise`.
    pub udp: bool,
    /// The receiving thread in UDP mode; `None` means the first of
    /// `measured`. It is added to the followed threads if `measured` lacks
    /// its CPU, and its tid is the one followed on that CPU.
    pub udp_receiver: Option<Measured>,
}

impl AnalyzerConfig {
    pub fn new(measured: Vec<Measured>, threshold: Nanos, cell_start_ns: u64) -> AnalyzerConfig {
        AnalyzerConfig {
            measured,
            threshold,
            episode_cap: DEFAULT_EPISODE_CAP,
            window_events: DEFAULT_WINDOW_EVENTS,
            export_events: DEFAULT_EXPORT_EVENTS,
            cell_start_ns,
            tolerance_ns: 1_000,
            noise: false,
            udp: false,
            udp_receiver: None,
        }
    }
}

/// One sample split into its parts (exposed for tests and fixtures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decomposition {
    pub cpu: CpuId,
    pub deadline: u64,
    pub wake: u64,
    pub irq: u64,
    pub sched: u64,
    pub ret: u64,
    /// `expires` of the matching `hrtimer_start` (the kernel's view of the
    /// intended expiry). UDP mode: `deadline` is the receive time stamp,
    /// `irq`/`sched`/`ret` are deliver/sched/return and `expires` is 0.
    pub expires: i64,
}

pub(super) struct MeasuredCpu {
    pub(super) cpu: CpuId,
    pub(super) tid: i32,
    pub(super) pending: VecDeque<(u64, u64)>,
    pub(super) irq: Histogram,
    /// `irq`'s per-second maxima, by wake-up time.
    pub(super) irq_seconds: seconds::SecondMaxima,
    pub(super) sched: Histogram,
    pub(super) ret: Histogram,
    pub(super) stacks: VecDeque<(u64, u64)>,
    pub(super) window: VecDeque<TraceEvent>,
    /// Time of the last event before records were lost on this CPU.
    pub(super) lost_at: Option<u64>,
    /// Time of the newest event the bounded window has let go of.
    pub(super) evicted_at: Option<u64>,
    pub(super) steal: VecDeque<(u64, u64)>,
    /// Call chains of the measured thread's callbacks and switch-ins
    /// (perf backend with `--stacks`).
    pub(super) chains: held_perf::ChainRing,
}

impl MeasuredCpu {
    pub(super) fn new(m: Measured, window_events: usize, origin: u64) -> MeasuredCpu {
        MeasuredCpu {
            cpu: m.cpu,
            tid: m.tid,
            pending: VecDeque::with_capacity(1024),
            irq: Histogram::new(),
            irq_seconds: seconds::SecondMaxima::new(origin),
            sched: Histogram::new(),
            ret: Histogram::new(),
            stacks: VecDeque::with_capacity(STACK_RING),
            window: VecDeque::with_capacity(window_events),
            lost_at: None,
            evicted_at: None,
            steal: VecDeque::with_capacity(STEAL_READINGS),
            chains: held_perf::ChainRing::default(),
        }
    }
}

pub(crate) struct Found {
    pub(super) callback_time: u64,
    pub(super) callback_now: u64,
    pub(super) switch_in: u64,
    pub(super) expires: i64,
    /// The kernel's steal figures (BPF backend with a steal counter).
    pub(super) steal: Option<KernelSteal>,
}

pub(super) const STACK_RING: usize = 8_192;
pub(super) const STEAL_READINGS: usize = 128;
pub(super) const THREAD_TABLE_CAP: usize = 65_536;

pub struct Analyzer {
    pub(super) config: AnalyzerConfig,
    pub(super) env: Box<dyn Environment + Send>,
    pub(super) symbols: Box<dyn Symbolize + Send>,
    /// Index into `measured` per CPU number.
    pub(super) by_cpu: Vec<Option<usize>>,
    pub(super) measured: Vec<MeasuredCpu>,
    pub(super) work: WorkStats,
    pub(super) threads: ThreadNames,
    pub(super) ready: Vec<(Episode, Option<EpisodeWindow>)>,
    pub(super) awaiting_steal: Vec<(Episode, Option<EpisodeWindow>)>,
    pub(super) totals: HashMap<(CauseKind, String), CauseTotal>,
    /// Each cause's episode times, for the periodicity test.
    pub(super) recurring: recurring::Recurrences,
    pub(super) summary: TraceSummary,
    /// Per measured CPU number: interruptions by class (noise probe).
    pub(super) noise_classes:
        std::collections::BTreeMap<u32, std::collections::BTreeMap<String, NoiseClass>>,
    /// Every decomposition, when a test asks for them.
    pub(super) keep_decompositions: bool,
    pub(super) decompositions: Vec<Decomposition>,
    /// UDP mode: index into `measured` of the receiver's CPU.
    pub(super) udp_rx: Option<usize>,
    /// The kernel's stacks for the next sample's episode (BPF backend).
    pub(super) held_next: Option<held::RawHeld>,
    pub(super) held_fold: held::HeldFold,
    /// Whether events came with call chains (perf backend with `--stacks`):
    /// episodes then take their held stacks from them.
    pub(super) chains_seen: bool,
}
