//! What a caller asks a run to do, as one typed value: the probe and its
//! settings, CPUs, period, scheduling, workloads, tracing, thresholds and
//! what happens when they are crossed. [`RunRequest::default`] holds every
//! default; [`RunRequest::plan`] holds every cross-option rule, checks the
//! request against the online CPUs and yields the [`RunPlan`] (the run's
//! settings and its cells). `latscope run`, `latscope suite` (its grid) and
//! the monitor (its epoch) all build one; only the CLI knows option names
//! ([`RequestError`] names settings, each front end words them).

mod error;
mod plan;
mod priorities;
mod probe;
mod sched;
#[cfg(test)]
mod tests;
mod text;

use latscope_model::{CpuSet, Nanos, NoiseDuty, Policy, TimerSlack, UdpPath};
use latscope_platform::SchedPolicy;
use latscope_probes::timer::{Phase, TimerApi, TimerConfig};
use latscope_workloads::LoadLevel;

use crate::actions::{Action, Limit};
use crate::config::{CellSpec, ProbeSpec, TraceBackend, TracePlan};

pub use error::{nice_reason, RequestError};
pub use priorities::{parse_priority_list, priority_label};
pub use sched::MIN_DEADLINE_RUNTIME;
pub use text::{duration, AppScheme, RequestText, TextError};

/// The probe a run measures with. A value's first paragraph is its
/// description in `run --help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ProbeKind {
    /// Timer wake-up latency.
    Timer,
    /// Interruptions of a CPU-bound loop (OS noise).
    Noise,
    /// UDP/IP stack send and receive latency (a sender and a receiver thread).
    Udp,
    /// A periodic pipeline: a producer filling --buffers buffers of
    /// --period, --compute of work each, for a device clock; counts real
    /// buffer underruns (docs/app-probe.md).
    App,
}

/// The timer probe's own settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerOptions {
    pub api: TimerApi,
    pub phase: Phase,
    /// The measuring threads' timer slack (timer probe only; `None`: the
    /// least the kernel allows).
    pub slack: Option<TimerSlack>,
    /// The noise probe's duty cycle run beside the timer (the monitor).
    pub noise_duty: Option<NoiseDuty>,
}

/// The settings of the policies beyond FIFO and RR, for the timer probe
/// (`None`: the default). The DEADLINE period is the probe's period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedOptions {
    /// Under `other` or `batch`: the measuring threads' nice value,
    /// -20..19 (`None`: the one inherited).
    pub nice: Option<i32>,
    /// Under `deadline`: the runtime reserved every period (`None`:
    /// [`RunRequest::DEFAULT_RUNTIME_SHARE`] of the period).
    pub runtime: Option<Nanos>,
    /// Under `deadline`: the relative deadline (`None`: the period).
    pub deadline: Option<Nanos>,
}

/// The noise probe's own settings (`None`: the default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NoiseOptions {
    pub runtime: Option<Nanos>,
    pub pause: Option<Nanos>,
    pub gap_ratio: Option<u32>,
    pub gap_min: Option<Nanos>,
    pub fp: bool,
}

/// The UDP probe's own settings (`None`: the default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpOptions {
    pub path: Option<UdpPath>,
    pub payload: Option<usize>,
}

/// The app probe's own settings (`None`: the default). A named
/// application's preset is expanded by the caller into these and the
/// period; `name` is recorded with the cell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppOptions {
    pub name: Option<String>,
    pub buffers: Option<u32>,
    pub compute: Option<Nanos>,
}

/// Tracing: episodes above the threshold explained from kernel events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceOptions {
    pub on: bool,
    pub backend: TraceBackend,
    /// Kernel stacks sampled every `stack_period`.
    pub stacks: bool,
    pub stack_period: Nanos,
    /// Episodes kept in full.
    pub episode_cap: usize,
}

/// Everything a run is asked to do. Build it with struct update syntax over
/// [`RunRequest::default`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRequest {
    pub probe: ProbeKind,
    /// The CPUs as a list (`0-3`, `1,0`: for the udp probe the order is
    /// sender, receiver); `None`: every online CPU (udp: the first two).
    pub cpus: Option<String>,
    /// `None`: 1 ms (udp: 10 ms).
    pub period: Option<Nanos>,
    /// `None`: until stopped (the monitor's epochs).
    pub duration: Option<Nanos>,
    pub policy: Policy,
    /// `None`: [`RunRequest::DEFAULT_PRIORITY`] under `fifo` and `rr`;
    /// refused under the other policies, which have none.
    pub priority: Option<u32>,
    /// Nice value and DEADLINE reservation.
    pub sched: SchedOptions,
    /// Several priorities measured at once, one timer or noise thread per
    /// item and CPU (a FIFO or RR priority may be listed more than once),
    /// timer threads on one shared expiry grid (in place of `policy`,
    /// `priority` and `sched`); empty: one, `policy` at `priority`.
    pub priorities: Vec<(SchedPolicy, u32)>,
    /// Samples above it are counted (and with tracing become episodes).
    pub threshold: Option<Nanos>,
    pub timer: TimerOptions,
    pub noise: NoiseOptions,
    pub udp: UdpOptions,
    pub app: AppOptions,
    pub trace: TraceOptions,
    /// One cell per workload, in this order; empty: one cell, no workload.
    pub workloads: Vec<String>,
    pub load_level: LoadLevel,
    pub warmup: Nanos,
    /// How often what was measured is stored.
    pub checkpoint: Nanos,
    pub stop_above: Option<Nanos>,
    pub fail_above: Option<Nanos>,
    /// Threshold actions (they need tracing) and how often they may run.
    pub actions: Vec<Action>,
    pub action_limit: Limit,
}

impl RunRequest {
    /// The period when none is given.
    pub const DEFAULT_PERIOD: Nanos = Nanos::from_millis(1);
    /// The udp probe's period when none is given.
    pub const DEFAULT_UDP_PERIOD: Nanos = Nanos::from_millis(10);
    pub const DEFAULT_DURATION: Nanos = Nanos::from_secs(30);
    pub const DEFAULT_PRIORITY: u32 = 95;
    /// Under `deadline` without a runtime: this fraction (1/N) of the
    /// period is reserved.
    pub const DEFAULT_RUNTIME_SHARE: u64 = 10;
    pub const DEFAULT_CHECKPOINT: Nanos = Nanos::from_secs(10);
    /// The shortest checkpoint interval.
    pub const MIN_CHECKPOINT: Nanos = Nanos::from_millis(100);
    pub const DEFAULT_WARMUP: Nanos = Nanos::from_secs(2);
    pub const DEFAULT_EPISODE_CAP: usize = 1000;
    /// The periods a run without end (the monitor) accepts: it measures
    /// for weeks, so neither a flood of wake-ups nor too few samples.
    pub const UNBOUNDED_PERIODS: (Nanos, Nanos) = (Nanos::from_micros(50), Nanos::from_secs(1));
    pub const DEFAULT_RUNTIME: Nanos = Nanos::from_millis(33);
    pub const DEFAULT_PAUSE: Nanos = Nanos::from_millis(33);
    /// The noise probe's pause with several priorities at once: none, the
    /// threads spin without sleeping (Bernadat's Table 6), so that a
    /// shared RR priority shows its quantum (a pause shorter than the
    /// quantum would hand the CPU over before the quantum ends).
    pub const DEFAULT_GROUP_PAUSE: Nanos = Nanos(0);
    pub const DEFAULT_GAP_RATIO: u32 = 4;
    pub const DEFAULT_PAYLOAD: usize = 64;
    pub const DEFAULT_BUFFERS: u32 = 2;

    /// The period this request measures at.
    pub fn period(&self) -> Nanos {
        match (self.period, self.probe) {
            (Some(p), _) => p,
            (None, ProbeKind::Udp) => Self::DEFAULT_UDP_PERIOD,
            (None, _) => Self::DEFAULT_PERIOD,
        }
    }
}

impl Default for RunRequest {
    /// The timer probe on every online CPU, every millisecond for 30 s at
    /// FIFO 95, no workload, no tracing.
    fn default() -> RunRequest {
        RunRequest {
            probe: ProbeKind::Timer,
            cpus: None,
            period: None,
            duration: Some(Self::DEFAULT_DURATION),
            policy: Policy::Fifo,
            priority: None,
            sched: SchedOptions::default(),
            priorities: Vec::new(),
            threshold: None,
            timer: TimerOptions {
                api: TimerApi::ClockNanosleep,
                phase: Phase::Fixed,
                slack: None,
                noise_duty: None,
            },
            noise: NoiseOptions::default(),
            udp: UdpOptions::default(),
            app: AppOptions::default(),
            trace: TraceOptions {
                on: false,
                backend: TraceBackend::Auto,
                stacks: false,
                stack_period: TracePlan::DEFAULT_STACK_PERIOD,
                episode_cap: Self::DEFAULT_EPISODE_CAP,
            },
            workloads: Vec::new(),
            load_level: LoadLevel::Normal,
            warmup: Self::DEFAULT_WARMUP,
            checkpoint: Self::DEFAULT_CHECKPOINT,
            stop_above: None,
            fail_above: None,
            actions: Vec::new(),
            action_limit: Limit::default(),
        }
    }
}

/// A request checked against the machine: the run's settings and what
/// each cell measures.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// What every probe shares (CPUs, policy, priority, duration,
    /// threshold), as the timer probe's configuration; for the timer probe
    /// also the probe's own.
    pub timer: TimerConfig,
    pub checkpoint: Nanos,
    /// The CPUs as given (recorded with the settings).
    pub cpus: CpuSet,
    pub trace: Option<TracePlan>,
    /// The probe with its own configuration.
    pub probe: ProbeSpec,
    /// With several priorities at once: the probe (timer or noise) at
    /// each, measured together in every workload's cells (`probe` is the
    /// first).
    pub together: Vec<ProbeSpec>,
    /// One cell per workload (`none` when none was asked for).
    pub workloads: Vec<String>,
    pub load_level: String,
    pub warmup: Nanos,
    pub stop_above: Option<Nanos>,
    pub fail_above: Option<Nanos>,
    pub actions: Vec<Action>,
    pub action_limit: Limit,
}

impl RunPlan {
    /// The probe once per workload, in the order given; with several
    /// priorities, per workload one cell per priority, measured together.
    pub fn cells(&self) -> Vec<CellSpec> {
        let probes = match self.together.is_empty() {
            true => std::slice::from_ref(&self.probe),
            false => self.together.as_slice(),
        };
        let k = probes.len();
        let of = (self.workloads.len() * k) as u32;
        let mut cells = Vec::with_capacity(of as usize);
        for (w, workload) in self.workloads.iter().enumerate() {
            let first = (w * k) as u32;
            let together: Vec<u32> = match k > 1 {
                true => (first..first + k as u32).collect(),
                false => Vec::new(),
            };
            for (i, probe) in probes.iter().enumerate() {
                cells.push(CellSpec {
                    index: first + i as u32,
                    of,
                    probe: probe.clone(),
                    workload: workload.clone(),
                    load_level: self.load_level.clone(),
                    warmup: self.warmup,
                    cpus: self.cpus.clone(),
                    together: together.clone(),
                    instance: probes[..i]
                        .iter()
                        .filter(|p| p.policy() == probe.policy())
                        .count() as u32,
                });
            }
        }
        cells
    }
}
