//! What the noise probe found on one CPU, beside its `noise.gap` histogram:
//! the figures of Bernadat's "preemption and interrupt disturbance" test and
//! of osnoise's summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{CpuId, Nanos};

/// How the probe read time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseClock {
    /// The time stamp counter (`rdtsc`), constant and non-stop, calibrated
    /// against CLOCK_MONOTONIC.
    Tsc,
    /// CLOCK_MONOTONIC through the vDSO (the TSC was not reliable).
    Vdso,
}

/// Interruptions of one class (osnoise top's HW / NMI / IRQ / SIRQ /
/// THREAD), with `--trace`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseClass {
    pub count: u64,
    pub total_ns: Nanos,
    pub max_ns: Nanos,
}

/// Per-CPU results of the noise probe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseCpuStats {
    pub cpu: CpuId,
    pub clock: NoiseClock,
    /// TSC ticks per second from the calibration (0 with the vDSO clock).
    pub tsc_hz: u64,
    /// Drift between the start and end calibrations, parts per billion
    /// (end rate against start rate).
    pub calibration_drift_ppb: i64,
    /// Time spent in active (spinning) periods.
    pub active_ns: Nanos,
    pub iterations: u64,
    /// The shortest loop iteration (the study's base), picoseconds.
    pub base_iteration_ps: u64,
    /// Iterations at least this long count as interruptions.
    pub gap_threshold_ns: Nanos,
    pub interruptions: u64,
    /// Sum of the interruptions' lengths.
    pub noise_ns: Nanos,
    pub max_gap_ns: Nanos,
    /// Per class of cause, with `--trace` (`hw`, `nmi`, `irq`, `softirq`,
    /// `thread`); empty without.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub classes: BTreeMap<String, NoiseClass>,
    /// Steal time of this CPU over the run (/proc/stat), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<Nanos>,
    /// A recognised pattern, e.g. RT throttling.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

impl NoiseCpuStats {
    /// Noise as a share of active time, percent.
    pub fn noise_percent(&self) -> f64 {
        if self.active_ns.0 == 0 {
            return 0.0;
        }
        100.0 * self.noise_ns.0 as f64 / self.active_ns.0 as f64
    }

    /// Interruptions per second of active time.
    pub fn interruptions_per_second(&self) -> f64 {
        if self.active_ns.0 == 0 {
            return 0.0;
        }
        self.interruptions as f64 * 1e9 / self.active_ns.0 as f64
    }
}
