//! The microbenchmarks' results (`latscope micro`): one cell per benchmark,
//! each with the statistics of its iterations, its counters per operation
//! and the interrupts it saw, and one context per run (the *Null* frame
//! that was subtracted, the caches sysfs lists).
//!
//! Times are `f64` nanoseconds here, unlike everywhere else in latscope
//! ([`crate::Nanos`]): a vDSO clock read costs a few tens of ns and a
//! `rdtsc` less than 20, and the per-operation figure of an iteration of
//! thousands of them has a meaningful fraction of a nanosecond.

use serde::{Deserialize, Serialize};

use crate::common::CommonSettings;

/// What one micro cell ran: a benchmark, where, and how often.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MicroSettings {
    /// `group.name`, e.g. `syscall.getppid`.
    #[serde(default)]
    pub bench: String,
    #[serde(default)]
    pub iterations: u32,
    #[serde(default)]
    pub warmup: u32,
    /// The CPU of the measuring thread.
    #[serde(default)]
    pub cpu: u32,
    /// The partner's CPU, for the benchmarks across two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_cpu: Option<u32>,
    /// `--quick`: fewer iterations and memory sizes.
    #[serde(default)]
    pub quick: bool,
    #[serde(flatten)]
    pub common: CommonSettings,
}

/// A counter's figure for one benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MicroCounter {
    /// The counter's name (`task-clock`, `context-switches`, `cycles`...).
    pub name: String,
    /// The median over iterations of its change per operation, less what
    /// the empty frame shows; `None` when it could not be read.
    pub per_op: Option<f64>,
    /// Why it could not be read (no hardware PMU, not permitted...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// One benchmark's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MicroResult {
    /// `group.name`.
    pub bench: String,
    pub group: String,
    pub name: String,
    /// What one operation is, in words.
    pub operation: String,
    pub cpu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_cpu: Option<u32>,
    /// Set instead of the figures when the benchmark could not run here
    /// (`needs Xvfb`, a second CPU...): the figures are then all 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub iterations: u32,
    pub ops_per_iteration: u64,
    /// The *Null* frame subtracted from every iteration (ns).
    pub overhead_ns: f64,
    /// Per operation, over iterations, after the correction (ns).
    pub min_ns: f64,
    pub median_ns: f64,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    pub max_ns: f64,
    /// The median without the correction.
    pub uncorrected_median_ns: f64,
    /// The correction as a share of the median iteration.
    pub overhead_share: f64,
    /// Each iteration's corrected time per operation, in the order they ran
    /// (what `compare` resamples).
    #[serde(default)]
    pub per_iteration_ns: Vec<f64>,
    #[serde(default)]
    pub counters: Vec<MicroCounter>,
    /// Interrupts on the benchmark's CPUs per iteration: all, all but the
    /// local timer (the study's "non-clock interrupts"), and softirqs;
    /// `None` where `/proc` could not be read.
    #[serde(default)]
    pub interrupts_per_iteration: Option<f64>,
    #[serde(default)]
    pub non_timer_interrupts_per_iteration: Option<f64>,
    #[serde(default)]
    pub softirqs_per_iteration: Option<f64>,
    /// The working set of a memory benchmark (bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// A cache as sysfs lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub bytes: u64,
}

/// What a whole micro run shares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MicroContext {
    /// The *Null* frame (two clock reads and two counter reads) in ns: the
    /// correction every figure had subtracted.
    pub null_ns: f64,
    /// The caches of the measuring CPU, from sysfs (empty where it lists
    /// none).
    #[serde(default)]
    pub caches: Vec<CacheInfo>,
    /// The counters and why each one the machine lacks is missing.
    #[serde(default)]
    pub counters: Vec<MicroCounter>,
    #[serde(default)]
    pub quick: bool,
}
