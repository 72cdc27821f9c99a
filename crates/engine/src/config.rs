//! What a run is asked to do, validated before anything is measured: the
//! run-wide settings and one [`CellSpec`] per cell (a probe with its
//! settings, under one workload).

use std::fmt;
use std::sync::Arc;

use latscope_model::{CellSettings, CpuId, CpuSet, Namer, Nanos, Neutral, Setting};
use latscope_platform::SchedPolicy;
use latscope_probes::app::{AppConfig, AppProbe};
use latscope_probes::noise::{NoiseConfig, NoiseProbe};
use latscope_probes::timer::{TimerConfig, TimerProbe};
use latscope_probes::udp::{UdpConfig, UdpProbe};
use latscope_probes::{Probe, ProbeError};

/// Settings that hold for every cell of a run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// How often the housekeeping thread stores what was measured.
    pub checkpoint: Nanos,
    /// `--trace`: decompose samples and find episodes.
    pub trace: Option<TracePlan>,
    /// The system settings the run holds while it measures.
    pub guards: Guards,
    /// The command line recorded with the run.
    pub command_line: Vec<String>,
    /// `--stop-above`: end the run once the probe's main figure (timer
    /// latency, noise gap, UDP path) exceeds this, as cyclictest's `-b`
    /// and rtla's `-T` do. Checked by the housekeeping thread every 100 ms,
    /// so the run ends within about 100 ms of that sample.
    pub stop_above: Option<Nanos>,
    /// Runs of unbounded length (the monitor): the in-memory copy of the
    /// run keeps no timeline seconds and no episodes, so memory stays
    /// constant; the outcome's result then has none either (the store has
    /// them).
    pub unbounded: bool,
}

/// Which system settings a run changes (each restored at its end). All on
/// for a real measurement; tests of the lifecycle turn them off.
#[derive(Clone, Copy, Debug)]
pub struct Guards {
    /// `mlockall`: no page faults in the measuring loops.
    pub lock_memory: bool,
    /// Hold `/dev/cpu_dma_latency` at 0: no deep idle states.
    pub dma_latency: bool,
    /// Keep the housekeeping thread off the measured CPUs (cyclictest's
    /// `--mainaffinity`).
    pub pin_housekeeping: bool,
}

impl Guards {
    /// Everything a real measurement holds.
    pub const ALL: Guards = Guards {
        lock_memory: true,
        dma_latency: true,
        pin_housekeeping: true,
    };
    /// Nothing changed on the system.
    pub const NONE: Guards = Guards {
        lock_memory: false,
        dma_latency: false,
        pin_housekeeping: false,
    };
}

/// What the probe's samples are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnalysisMode {
    /// (intended expiry, wake-up) of the timer probe.
    Timer,
    /// (start, end) of the noise probe's interruptions.
    Noise,
    /// (receive stamp, user) of the UDP probe's receiver, which comes first
    /// in the hand-offs; the sender's CPU follows when it is another one.
    Udp,
}

/// Which tracer reads the kernel's events (`--trace-backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TraceBackend {
    /// BPF where its programs load, perf otherwise.
    #[default]
    Auto,
    /// In-kernel decomposition and aggregation (BPF programs).
    ///
    /// BPF or no tracing (the run says why and goes on untraced).
    Bpf,
    /// Every tracepoint record through perf rings.
    ///
    /// perf rings, as before there was a choice.
    Perf,
}

impl TraceBackend {
    /// The backend's name in settings (`auto`, `bpf`, `perf`).
    pub fn as_str(self) -> &'static str {
        match self {
            TraceBackend::Auto => "auto",
            TraceBackend::Bpf => "bpf",
            TraceBackend::Perf => "perf",
        }
    }
}

/// What `--trace` asks for.
#[derive(Clone, Debug)]
pub struct TracePlan {
    /// Which tracer.
    pub backend: TraceBackend,
    /// Samples above it become episodes.
    pub threshold: Nanos,
    /// `--stacks`: the cpu-clock sampling period.
    pub stack_period: Option<Nanos>,
    /// Episodes kept in full.
    pub episode_cap: usize,
}

/// A trace plan that cannot be followed, worded by [`TracePlanError::line`]
/// with the settings named by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TracePlanError {
    ZeroThreshold,
    StackPeriod,
}

impl TracePlanError {
    /// The line, each setting named by `n`.
    pub fn line(&self, n: &dyn Namer) -> String {
        match self {
            TracePlanError::ZeroThreshold => format!(
                "{} must be greater than 0 with {}",
                n.name(Setting::Threshold),
                n.name(Setting::Trace)
            ),
            TracePlanError::StackPeriod => format!(
                "{} must be between 10us and 1s",
                n.name(Setting::StackPeriod)
            ),
        }
    }
}

impl fmt::Display for TracePlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line(&Neutral))
    }
}

impl TracePlan {
    /// The episode threshold when none is given: about three times the p99
    /// of an idle timer on ordinary hardware and VMs without PREEMPT_RT
    /// (20–40 µs), so only real outliers become episodes, and below the
    /// deadlines people test for (audio buffers and control loops of a
    /// millisecond or more). See docs/tracing.md.
    pub const DEFAULT_THRESHOLD: Nanos = Nanos::from_micros(100);

    /// Tracing with episodes above `threshold` ([`Self::DEFAULT_THRESHOLD`]
    /// when `None`), `episode_cap` of them kept in full, no stacks.
    pub fn new(threshold: Option<Nanos>, episode_cap: usize) -> Result<Self, TracePlanError> {
        let threshold = threshold.unwrap_or(Self::DEFAULT_THRESHOLD);
        if threshold.0 == 0 {
            return Err(TracePlanError::ZeroThreshold);
        }
        Ok(TracePlan {
            backend: TraceBackend::Auto,
            threshold,
            stack_period: None,
            episode_cap,
        })
    }

    /// Reads the events with `backend`.
    pub fn with_backend(self, backend: TraceBackend) -> Self {
        TracePlan { backend, ..self }
    }

    /// The stack period `--stacks` takes when none is given: 200 µs, fine
    /// enough to catch the code of a few-hundred-µs episode.
    pub const DEFAULT_STACK_PERIOD: Nanos = Nanos::from_micros(200);

    /// [`Self::with_stacks`] at [`Self::DEFAULT_STACK_PERIOD`] when `on`.
    pub fn with_stacks_if(self, on: bool) -> Result<Self, TracePlanError> {
        if on {
            self.with_stacks(Self::DEFAULT_STACK_PERIOD)
        } else {
            Ok(self)
        }
    }

    /// Also samples kernel call chains every `period` (10 µs to 1 s).
    pub fn with_stacks(self, period: Nanos) -> Result<Self, TracePlanError> {
        if period < Nanos::from_micros(10) || period > Nanos::from_secs(1) {
            return Err(TracePlanError::StackPeriod);
        }
        Ok(TracePlan {
            stack_period: Some(period),
            ..self
        })
    }

    /// The timer probe's hand-over ring for the trace analysis: two seconds
    /// of samples per CPU (at least 4096) between the analysis thread's
    /// reads, which come every 10 ms.
    pub fn timer_handoff(&self, period: Nanos) -> usize {
        usize::try_from((2_000_000_000 / period.0.max(1)).max(4096)).unwrap_or(4096)
    }

    /// The noise probe's hand-over ring: interruptions per CPU.
    pub fn noise_handoff(&self) -> usize {
        65_536
    }

    /// The udp probe's hand-over ring: over six seconds of datagrams at the
    /// shortest period.
    pub fn udp_handoff(&self) -> usize {
        65_536
    }
}

/// Builds a probe the engine does not know by name (tests: the simulated
/// probe).
pub type BuildProbe = Arc<dyn Fn() -> Result<Box<dyn Probe>, ProbeError> + Send + Sync>;

/// A probe and its settings.
#[derive(Clone)]
pub enum ProbeSpec {
    Timer(TimerConfig),
    Noise(NoiseConfig),
    Udp(UdpConfig),
    App(AppConfig),
    /// A probe built by the caller; `duration` is how long it measures,
    /// `settings` what the store records of it (the engine fills in the
    /// common part).
    Custom {
        name: &'static str,
        cpus: Vec<CpuId>,
        duration: Option<Nanos>,
        build: BuildProbe,
        settings: CellSettings,
    },
}

impl fmt::Debug for ProbeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeSpec::Timer(c) => f.debug_tuple("Timer").field(c).finish(),
            ProbeSpec::Noise(c) => f.debug_tuple("Noise").field(c).finish(),
            ProbeSpec::Udp(c) => f.debug_tuple("Udp").field(c).finish(),
            ProbeSpec::App(c) => f.debug_tuple("App").field(c).finish(),
            ProbeSpec::Custom { name, .. } => f.debug_struct("Custom").field("name", name).finish(),
        }
    }
}

impl ProbeSpec {
    /// The probe's stable name (the cell's `probe`).
    pub fn name(&self) -> &'static str {
        match self {
            ProbeSpec::Timer(_) => "timer",
            ProbeSpec::Noise(_) => "noise",
            ProbeSpec::Udp(_) => "udp",
            ProbeSpec::App(_) => "app",
            ProbeSpec::Custom { name, .. } => name,
        }
    }

    /// How long the probe measures (`None`: until stopped).
    pub fn duration(&self) -> Option<Nanos> {
        match self {
            ProbeSpec::Timer(c) => c.duration,
            ProbeSpec::Noise(c) => c.duration,
            ProbeSpec::Udp(c) => c.duration,
            ProbeSpec::App(c) => c.duration,
            ProbeSpec::Custom { duration, .. } => *duration,
        }
    }

    /// The CPUs with a measuring thread, in the probe's order.
    pub fn cpus(&self) -> Vec<CpuId> {
        match self {
            ProbeSpec::Timer(c) => c.cpus.clone(),
            ProbeSpec::Noise(c) => c.cpus.clone(),
            ProbeSpec::Udp(c) => {
                let mut v = vec![c.sender_cpu];
                if c.receiver_cpu != c.sender_cpu {
                    v.push(c.receiver_cpu);
                }
                v
            }
            ProbeSpec::App(c) => c.cpus.clone(),
            ProbeSpec::Custom { cpus, .. } => cpus.clone(),
        }
    }

    /// The measuring threads' policy and priority.
    pub fn policy(&self) -> (SchedPolicy, u32) {
        match self {
            ProbeSpec::Timer(c) => (c.policy, c.priority),
            ProbeSpec::Noise(c) => (c.policy, c.priority),
            ProbeSpec::Udp(c) => (c.policy, c.priority),
            ProbeSpec::App(c) => (c.policy, c.priority),
            ProbeSpec::Custom { .. } => (SchedPolicy::Other, 0),
        }
    }

    /// The threshold above which samples are counted (and traced).
    pub fn threshold(&self) -> Option<Nanos> {
        match self {
            ProbeSpec::Timer(c) => c.threshold,
            ProbeSpec::Noise(c) => c.threshold,
            ProbeSpec::Udp(c) => c.threshold,
            ProbeSpec::App(c) => c.threshold,
            ProbeSpec::Custom { .. } => None,
        }
    }

    /// The priority applied: 0 without FIFO or RR.
    pub fn effective_priority(&self) -> u32 {
        match self.policy() {
            (policy, p) if policy.has_priority() => p,
            _ => 0,
        }
    }

    /// Allocates the probe's recorders.
    pub fn build(&self) -> Result<Box<dyn Probe>, ProbeError> {
        Ok(match self {
            ProbeSpec::Timer(c) => Box::new(TimerProbe::new(c.clone())?),
            ProbeSpec::Noise(c) => Box::new(NoiseProbe::new(c.clone())?),
            ProbeSpec::Udp(c) => Box::new(UdpProbe::new(c.clone())?),
            ProbeSpec::App(c) => Box::new(AppProbe::new(c.clone())?),
            ProbeSpec::Custom { build, .. } => build()?,
        })
    }
}

/// One cell of a run: a probe with its settings, under one workload.
#[derive(Clone, Debug)]
pub struct CellSpec {
    /// Position in the run (0-based) and the number of cells.
    pub index: u32,
    pub of: u32,
    pub probe: ProbeSpec,
    /// The workload's name as given (`idle`, `cpu`, `custom:...`); `none`
    /// when no workload was asked for.
    pub workload: String,
    pub load_level: String,
    pub warmup: Nanos,
    /// The CPUs as the user gave them (recorded with the settings).
    pub cpus: CpuSet,
    /// The cells (indices in the run) measured at the same time as this
    /// one, this one included: consecutive timer cells at several
    /// priorities on one shared expiry grid under one workload (`run
    /// --priorities`). Empty: measured alone.
    pub together: Vec<u32>,
    /// Among the cells measured together at this cell's policy and
    /// priority, how many come before it in the list (`rr:50,rr:50`: 0,
    /// then 1); 0 when measured alone. Stored from the second on as the
    /// cell's `instance` (2, 3, ...), which tells its label ("rr 50 #2")
    /// and its pairing in `compare` apart.
    pub instance: u32,
}

impl CellSpec {
    /// "timer, fifo 95, cpu" for notes and progress.
    pub fn label(&self) -> String {
        let (policy, priority) = self.probe.policy();
        let prio = if policy.has_priority() && self.instance > 0 {
            format!("{} {priority} #{}", policy.as_str(), self.instance + 1)
        } else if policy.has_priority() {
            format!("{} {priority}", policy.as_str())
        } else {
            policy.as_str().to_string()
        };
        format!("{}, {prio}, {}", self.probe.name(), self.workload)
    }

    /// The measured CPUs as a set.
    pub fn cpu_set(&self) -> CpuSet {
        self.probe.cpus().into_iter().collect()
    }
}
