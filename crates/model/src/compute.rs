//! An application's compute time per buffer: a fixed time or a share of
//! its period (the forecasts' buffering schemes and the app probe's
//! presets).

use serde::Serialize;

/// Compute time per buffer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compute {
    /// A fixed time in nanoseconds.
    Nanos(u64),
    /// A fraction of the period (the study's soft-modem datapump: 0.25).
    Fraction(f64),
}

impl Compute {
    /// Compute time for buffers of `period_ns`.
    pub fn nanos(&self, period_ns: u64) -> u64 {
        match *self {
            Compute::Nanos(c) => c,
            Compute::Fraction(f) => (f * period_ns as f64).round().max(0.0) as u64,
        }
    }
}
