//! latscope's measurement engines.
//!
//! A probe owns its recorders (allocated up front), starts one pinned
//! measuring thread per CPU, and lets the caller's housekeeping thread take
//! snapshots and drain timelines while it runs. Measuring threads never
//! allocate, lock, print or do I/O inside their loop: the only system calls
//! there are the timer service under test and clock reads.

pub mod clock;
pub mod noise;
mod probe;
mod recorder;
mod rng;
mod sample_ring;
mod setup;
pub mod timer;
pub mod udp;

pub use clock::{Clock, RealClock};
pub use probe::{Handoff, Probe, ProbeFinal, ProbeSnapshot, ProbeStats, RunningProbe};
pub use recorder::MetricRecorder;
pub use sample_ring::SampleRing;
