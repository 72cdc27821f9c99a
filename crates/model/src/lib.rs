//! Plain data types shared by every latscope crate.
//!
//! Nothing here measures, stores or prints: these are the nouns of the domain
//! (time in nanoseconds, CPUs, runs, cells, the system snapshot, the
//! capabilities a run obtained) with their parsers, so that the engine, the
//! store and the renderers agree on one vocabulary. Time is always
//! [`Nanos`], an integer count of nanoseconds; floating-point seconds never
//! appear in stored data.

mod common;
mod compute;
mod cpu;
mod episode;
mod granularity;
mod hazard;
mod held;
pub mod metric;
mod micro;
mod noise;
mod run;
mod setting;
mod settings;
mod source;
mod system;
mod time;
mod timer;
mod udp;
mod workload;

pub use common::{CommonSettings, DeadlineSettings, Policy, DEFAULT_PRIORITY};
pub use compute::Compute;
pub use cpu::{CpuId, CpuSet, CpuSetError};
pub use episode::RecurringCause;
pub use episode::StealSource;
pub use episode::{
    Breakdown, Cause, CauseKind, CausePart, CauseTotal, Episode, EpisodeWindow, StackCount,
    TraceSummary, WindowEvent,
};
pub use granularity::{TimerGranularity, TimerSlack};
pub use hazard::{Hazard, Severity, SeverityError};
pub use held::{frames_line, HeldCpu, HeldStack, HeldWhere, StackSite};
pub use micro::{CacheInfo, MicroContext, MicroCounter, MicroResult, MicroSettings};
pub use noise::{NoiseClass, NoiseClock, NoiseCpuStats};
pub use run::{CellMeta, RunId, RunMeta, RunStatus, RunStatusError};
pub use setting::{Namer, Neutral, Setting};
pub use settings::{
    AppSettings, CellSettings, NoiseDuty, NoiseSettings, PhaseName, SettingsError, SimSettings,
    TimerApiName, TimerSettings, UdpSettings, DEFAULT_PERIOD, DEFAULT_UDP_PERIOD,
};
pub use source::RunSource;
pub use system::{preempt_from_version, Capabilities, IdleState, SystemInfo};
pub use time::{Nanos, ParseDurationError};
pub use timer::TimerCpuStats;
pub use udp::{UdpPath, UdpStats};
pub use workload::{
    CpuPercent, DiskRates, InterruptSource, NetRates, RtLoadStats, WorkloadSecond, WorkloadStats,
};
