//! What a forecast gives: a number's provenance and interval, a latency
//! estimate, and why there is none.

use serde::Serialize;

use super::limits::Refusal;

/// Where a number comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Read from the measured data.
    Observed,
    /// Computed from the generalized Pareto tail fitted to the data, beyond
    /// (or independently of) what the data show directly.
    Extrapolated,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Observed => "observed",
            Provenance::Extrapolated => "extrapolated",
        }
    }
}

/// A confidence interval; `high: None` means the data do not bound it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval<T> {
    pub low: T,
    pub high: Option<T>,
    /// The confidence level, e.g. 0.95.
    pub confidence: f64,
}

/// A latency exceeded on average once in `events` samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencyEstimate {
    pub latency_ns: u64,
    pub provenance: Provenance,
    pub interval: Interval<u64>,
    /// N: the latency is exceeded on average once in this many samples.
    pub events: f64,
    /// How many samples of the run are expected above it (`n / N`): at
    /// least 1 for observed estimates, below 1 for extrapolated ones.
    pub expected_in_run: f64,
}

/// Why a forecast could not be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error, Serialize)]
pub enum ForecastError {
    #[error("no samples")]
    EmptyHistogram,
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error(
        "too few samples in the tail to extrapolate: {exceedances} above {threshold_ns} ns, need {needed}"
    )]
    TooFewTailSamples {
        exceedances: u64,
        needed: u64,
        threshold_ns: u64,
    },
    #[error("cannot fit the tail: {0}")]
    DegenerateTail(String),
    /// The checked model declines to give a number (see [`super::limits`]).
    #[error("{}", .0.describe())]
    Refused(Refusal),
}

/// `x > 0`, false for NaN: spelled out so that NaN inputs are rejected
/// wherever a positive number is required.
pub(crate) fn positive(x: f64) -> bool {
    x > 0.0
}
