//! Forecasts: what a measured latency distribution means for an application.
//!
//! This module turns a run's histograms and per-second timelines into the
//! answers Cota-Robles & Held's study computes from its latency tables:
//!
//! * the **exceedance curve** `P(latency > x)` ([`exceedance`], [`p_exceed`]);
//! * the **worst case per hour, day and week** under a usage model, from the
//!   observed per-window maxima and from the exceedance rate
//!   ([`Measured::worst_case`], [`window_maxima`], [`UsageModel`]);
//! * the **pseudo worst case** for a permissible miss rate, to feed a
//!   schedulability analysis ([`Measured::exceeded_once_per`]);
//! * the **mean time to buffer underrun** of a buffering scheme and its grid
//!   over buffer sizes and counts ([`Measured::mttf`], [`Measured::mttf_grid`]);
//! * **verdicts** for application presets ([`APP_PRESETS`], [`verdict`]).
//! * all of it for a stored run as one typed [`ForecastReport`]
//!   ([`forecast_report`]), which `latscope forecast` and the HTML report
//!   both render: one pooling of CPUs ([`pool_cpus`]), one MTTF grid
//!   ([`mttf_grid`], [`GridSpec::standard`]).
//!
//! Where a forecast needs rarer events than the run holds, it extrapolates
//! with a peaks-over-threshold generalized Pareto fit ([`TailFit`]). Every
//! number carries its [`Provenance`]: [`Provenance::Observed`] when read from
//! the data, [`Provenance::Extrapolated`] when it comes from the fitted tail.
//! An extrapolation is never labelled observed, and when the tail has too
//! few samples to fit, the answer is an error that says so, never a guess.
//!
//! The model is checked (docs/forecast-method.md): its threshold is chosen
//! by parameter stability ([`stability`]), clusters count once
//! ([`decluster`]), it reaches at most ten times the run and gives no figure
//! from a shape that may reach 1 ([`limits`]), and every forecast carries
//! its [`diagnostics`]: the threshold ladder, a second regime, independence
//! and stationarity ([`checks`]), a block-maxima model ([`gev`]) and an
//! out-of-sample test; where the store kept the run's checkpoints, the test
//! refits the model itself and a run that changed is forecast per part
//! ([`history`]).
//!
//! Everything here is pure and deterministic (no random numbers: intervals
//! come from profile likelihoods and exact Poisson limits).

pub mod against;
mod apps;
pub mod calibration;
#[cfg(test)]
mod calibration_tests;
pub mod checks;
pub mod decluster;
pub mod diagnostics;
mod exceedance;
mod excesses;
pub mod gev;
mod gpd;
pub mod history;
mod horizon;
mod ladder;
pub mod limits;
mod measured;
mod mttf;
mod observed;
pub mod pairing;
mod predictive;
mod pseudo;
mod report;
mod request;
pub mod retained;
mod self_check;
mod special;
pub mod stability;
mod tail;
mod tail_histogram;
mod text;
mod validation;
mod values;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod test_rng;
#[cfg(test)]
mod tests;

pub use against::{compare_underruns, Comparison, ObservedUnderruns, Rate, REFUTE_AT};
pub use apps::{verdict, AppPreset, Basis, Losses, Origin, TailSummary, Verdict, APP_PRESETS};
pub use exceedance::{exceedance, level_exceeded_at_most, observed_level, p_exceed};
pub use gpd::{fit_gpd, Gpd, GpdFit, SHAPE_MAX, SHAPE_MIN};
pub use horizon::{
    window_maxima, Horizon, HorizonForecast, UsageModel, UsagePreset, WindowMaxima, USAGE_PRESETS,
};
pub use measured::Measured;
pub use mttf::{mttf_observed, BufferScheme, Compute, Mttf, MttfGrid, MIN_OBSERVED_MISSES};
pub use predictive::{PredictedMax, NODES as PREDICTIVE_NODES};
pub use pseudo::PseudoWorstCases;
pub use report::{
    forecast_metrics_of, forecast_report, is_forecast_metric, mttf_grid, pool_cpus, CellForecast,
    CellSnapshot, CpuTimeline, ForecastOptions, ForecastReport, GridSpec, MetricForecast, Pooled,
    UsageReport, WorstCases, FORECAST_METRICS, FORECAST_SCHEMA,
};
pub use request::{ForecastRequest, ForecastRequestError};
pub use retained::{cell_since, CellPart};
pub use self_check::SelfCheck;
pub use tail::{
    TailFit, TailOptions, Threshold, AUTO_QUANTILES, MIN_EXCEEDANCES, PREFERRED_EXCEEDANCES,
};
pub(crate) use values::positive;
pub use values::{ForecastError, Interval, LatencyEstimate, Provenance};

/// Permissible miss intervals of the study (§5.2) for pseudo worst cases:
/// one miss per ten minutes (conferencing audio), per hour (soft modem), per
/// day (high-reliability devices); `(name, seconds)`.
pub const PERMISSIBLE_MISS_INTERVALS: [(&str, f64); 3] =
    [("10min", 600.0), ("hour", 3600.0), ("day", 86_400.0)];
