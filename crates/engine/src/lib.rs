//! latscope's run lifecycle as a library: what `latscope run`,
//! `latscope suite` and `latscope micro` do, what the monitor daemon does
//! for weeks, and what the lifecycle tests drive with a simulated probe.
//! One lifecycle serves every kind of run ([`run`] for probe cells,
//! [`run_micro`] for microbenchmarks): interruption, failure, notes and the
//! rescue copy are handled once.
//!
//! A run is **prepared** (capabilities detected; guards held: `mlockall`,
//! `/dev/cpu_dma_latency` at 0, the housekeeping thread kept off the
//! measured CPUs), **executes** its cells one after the other (cells
//! measured together, several priorities on one expiry grid, as one group;
//! for each: workload
//! started and warmed up → tracer opened → probe threads started behind one
//! barrier → housekeeping: progress, a checkpoint into the [`Sink`] every
//! few seconds → final figures), and **stops** at the end, on a stop request
//! (SIGINT, SIGTERM, or [`Stop::request`]) or on a failure, keeping
//! everything measured. A sink that fails does not stop the measurement: the
//! engine keeps a complete copy in memory and returns it in the
//! [`RunOutcome`] with the sink's error, so the caller can write it
//! elsewhere.
//!
//! The engine never prints: notices and progress go to an [`Observer`].
//! Time on the housekeeping side comes from a [`Clock`], which tests
//! replace by a scripted one.

pub mod actions;
mod cell;
mod config;
mod cpus;
mod ctx;
mod error;
mod lifecycle;
mod load;
mod micro;
mod observer;
mod outcome;
mod planned;
pub mod request;
mod rescue;
mod run;
mod settings;
mod sink;
mod slack;
mod stop;
pub mod suite;
mod together;
mod trace_bpf;
mod trace_group;
mod trace_session;
mod workload_list;

pub use config::{
    BuildProbe, CellSpec, Guards, ProbeSpec, RunConfig, TraceBackend, TracePlan, TracePlanError,
};
pub use error::EngineError;
pub use lifecycle::running_meta;
pub use micro::{run_micro, MicroPlan};
pub use observer::{Observer, Quiet};
pub use outcome::{Env, LimitExceeded, Rescue, RunOutcome, SinkFailure};
pub use planned::{run_plan, PlanRun};
pub use request::{RequestError, RunPlan, RunRequest};
pub use rescue::write_rescue;
pub use run::run;
pub use sink::{CellKey, Checkpoint, MemorySink, Sink, SinkError};
pub use stop::Stop;

/// The probes' settings, for callers that build cells.
pub mod probes {
    pub use latscope_probes::app::{calibrate, AppConfig, Calibration, MAX_BUFFERS};
    pub use latscope_probes::noise::NoiseConfig;
    pub use latscope_probes::timer::{Phase, TimerApi, TimerConfig, MAX_PERIOD};
    pub use latscope_probes::udp::UdpConfig;
    pub use latscope_probes::{Clock, Probe, ProbeError, Progress, RealClock, SettingError};
}

/// What a caller needs of the machine to plan a run, and the checks of the
/// CPUs it names.
pub mod system {
    pub use crate::cpus::{
        cpus_in_order, housekeeping_cpus, measuring_pair, select_cpus, udp_cpus, CpuChoiceError,
        PairError,
    };
    pub use latscope_platform::{
        caps, monotonic_ns, online_cpus, procstat, realtime_ns, set_affinity_set, sysinfo,
        PlatformError, SchedPolicy, StopSignals,
    };
}

/// Workload names, for callers that check them.
pub mod workloads {
    pub use crate::workload_list::{split_workloads, WorkloadListError};
    pub use latscope_workloads::{helper_main, LoadLevel};
}
