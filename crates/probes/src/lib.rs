//! latscope's measurement engines.
//!
//! Every probe follows one lifecycle ([`Probe`], [`RunningProbe`]): it owns
//! its recorders (allocated up front), starts its pinned measuring threads
//! behind one shared barrier, and lets the caller's housekeeping thread take
//! snapshots and drain timelines while it runs. Measuring threads never
//! allocate, lock, print or do I/O inside their loop: the only system calls
//! there are the service under test and clock reads.
//!
//! With the `sim` feature, [`sim`] adds a simulated probe without threads,
//! driven by a scripted clock, for testing the run lifecycle.

pub mod app;
pub mod clock;
mod error;
pub mod noise;
mod probe;
mod recorder;
mod rng;
mod sample_ring;
mod setup;
#[cfg(feature = "sim")]
pub mod sim;
mod threads;
pub mod timer;
pub mod udp;

pub use clock::{Clock, RealClock, ScriptedClock};
pub use error::{ProbeError, Progress, SettingError, ThreadSetup};
pub use probe::{Handoff, Probe, ProbeFinal, ProbeSnapshot, ProbeStats, RunningProbe};
pub use recorder::MetricRecorder;
pub use sample_ring::SampleRing;
pub use setup::effective_priority;
