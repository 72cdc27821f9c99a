//! How far a forecast may reach beyond the data, and when a tail gives no
//! point forecast at all.
//!
//! **At most [`MAX_EXTRAPOLATION`] times the measured time.** The interval
//! of a return level widens only slowly with the horizon (like `ln r` for
//! ξ ≈ 0), so the interval alone does not warn about the real danger of a
//! long extrapolation: that the model itself (its threshold, its regime, its
//! independence) stops describing the machine. Practice in the fields that
//! live by return levels bounds the reach for that reason: flood frequency
//! analysis from a single record is trusted to about two to four times the
//! record length (the rule of thumb of the UK *Flood Estimation Handbook*,
//! 1999, vol. 3, for single-site estimates), while measurement-based
//! probabilistic timing analysis, which extrapolates execution times by
//! many orders of magnitude, is questioned for exactly that (Davis &
//! Cucu-Grosjean, "A survey of probabilistic timing analysis techniques for
//! real-time systems", *LITES* 6, 2019).
//! latscope allows one order of magnitude: a latency run is cheap to extend,
//! its samples are far more numerous than a flood record's years, and the
//! out-of-sample check beside every figure tests the model on the run's own
//! later part. Beyond the limit a forecast says how much more data it needs.
//!
//! **No point forecast from a tail whose shape may be 1 or more.** With
//! ξ ≥ 1 the tail has no mean, and return levels grow so fast with the
//! horizon that the point estimate says nothing (the issue that led to this
//! module quotes a forecast of 395 s for a timer on a machine whose worst
//! sample in two minutes was 5 ms). When the shape's interval admits ξ ≥ 1
//! the forecast gives the observed figures and the reason, not a number.

use serde::Serialize;

/// The longest horizon a forecast reaches, as a multiple of the time
/// measured (per CPU, CPUs pooled).
pub const MAX_EXTRAPOLATION: f64 = 10.0;

/// Why a forecast gives no number.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Refusal {
    /// The horizon is more than [`MAX_EXTRAPOLATION`] times the data.
    NeedsMoreData {
        /// Seconds measured.
        measured_s: f64,
        /// Further minutes of measurement that would reach the horizon.
        more_minutes: u64,
    },
    /// The tail's shape may be 1 or more.
    HeavyTail {
        shape: f64,
        /// The upper end of the shape's interval (`None`: unbounded).
        shape_high: Option<f64>,
    },
    /// The training data held too few clusters of exceedances above the
    /// threshold for an honest interval ([`Rules::min_clusters`]).
    TooFewClusters {
        /// Clusters seen (`k θ`).
        clusters: f64,
        needed: f64,
        /// Further minutes of measurement that would, at the rate seen,
        /// bring the clusters to `needed`.
        more_minutes: u64,
    },
    /// The model does not describe the run's own 10-second maxima: more
    /// of them lie outside its 95 % range than chance allows.
    Misfit {
        windows: usize,
        outside: usize,
        p_value: f64,
    },
    /// The tail has two regimes ([`Rules::refuse_mixture`]).
    TwoRegimes,
    /// A monitor measured the horizon itself: its blocks are the answer,
    /// and the model is kept for what lies beyond them.
    Observed {
        /// Complete blocks of the horizon measured.
        blocks: usize,
    },
}

impl Refusal {
    /// One phrase for the text output.
    pub fn describe(&self) -> String {
        match self {
            Refusal::NeedsMoreData { more_minutes, .. } => {
                format!("needs {more_minutes} more CPU-minutes of data")
            }
            Refusal::HeavyTail { shape, shape_high } => {
                let high = shape_high.map_or("unbounded".to_string(), |h| format!("{h:.2}"));
                format!(
                    "no forecast: the tail's shape {shape:.2} (interval up to {high}) may be 1 or more, where the mean is infinite"
                )
            }
            Refusal::TooFewClusters {
                clusters,
                needed,
                more_minutes,
            } => format!(
                "needs {more_minutes} more CPU-minutes of data ({clusters:.0} clusters above the threshold, {needed:.0} needed for a calibrated interval)"
            ),
            Refusal::Misfit {
                windows,
                outside,
                p_value,
            } => format!(
                "no forecast: {outside} of the run's {windows} 10-second maxima lie outside the model's 95 % range (about {:.0} expected, p = {p_value:.1e}); the tail changes within the run",
                *windows as f64 * 0.05
            ),
            Refusal::TwoRegimes => "no forecast: the tail has two regimes, and which one a future window meets is not in the data".to_string(),
            Refusal::Observed { blocks } => format!(
                "observed, not modelled: the monitor measured {blocks} whole ones (the model serves only longer horizons)"
            ),
        }
    }
}

/// Whether a horizon of `horizon_s` seconds is within reach of
/// `measured_s` seconds of data.
pub fn check_horizon(measured_s: f64, horizon_s: f64) -> Result<(), Refusal> {
    check_horizon_within(measured_s, horizon_s, MAX_EXTRAPOLATION)
}

/// [`check_horizon`] with a reach of `reach` times the data.
pub fn check_horizon_within(measured_s: f64, horizon_s: f64, reach: f64) -> Result<(), Refusal> {
    if horizon_s <= measured_s * reach {
        return Ok(());
    }
    let needed_s = horizon_s / reach - measured_s.max(0.0);
    Err(Refusal::NeedsMoreData {
        measured_s,
        more_minutes: (needed_s / 60.0).ceil().max(1.0) as u64,
    })
}

/// Whether a tail fit with `shape` and the upper end `shape_high` of its
/// interval may give a point forecast.
pub fn check_shape(shape: f64, shape_high: Option<f64>) -> Result<(), Refusal> {
    match shape_high {
        Some(h) if h < 1.0 => Ok(()),
        _ => Err(Refusal::HeavyTail { shape, shape_high }),
    }
}

/// The rules a forecast follows beyond the fit itself, set by what the
/// calibration showed (docs/forecast-method.md, "Calibration"):
/// [`Rules::STANDARD`] for every forecast, [`Rules::NONE`] for the
/// rules as they were before the calibration (to measure them).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rules {
    /// Fewest clusters of exceedances (`k θ`) above the fit's threshold
    /// for a model figure; 0: no minimum.
    pub min_clusters: f64,
    /// Whether the prediction interval widens by the variation of the
    /// cluster rate between the run's windows ([`super::predictive`]).
    pub rate_dispersion: bool,
    /// The reach, as a multiple of the data (10: [`MAX_EXTRAPOLATION`]).
    pub reach: f64,
    /// The reach of a prediction interval, as a multiple of the data.
    pub prediction_reach: f64,
    /// Whether a tail of two regimes (the threshold ladder's mixture)
    /// gives no prediction interval.
    pub refuse_mixture: bool,
    /// Whether a model figure needs the model to describe the run's own
    /// 10-second maxima ([`super::SelfCheck`]).
    pub self_check: bool,
    /// The lightest tail a prediction integrates over: shapes below it
    /// count as it (0: no bounded tail, whose end a longer window may
    /// pass); `None`: the fitted shapes as they are.
    pub shape_floor: Option<f64>,
}

impl Rules {
    /// Before calibration: the tenfold reach only.
    pub const NONE: Rules = Rules {
        min_clusters: 0.0,
        rate_dispersion: false,
        reach: MAX_EXTRAPOLATION,
        prediction_reach: MAX_EXTRAPOLATION,
        shape_floor: None,
        self_check: false,
        refuse_mixture: false,
    };
    /// What every forecast uses: of the rules the calibration judged
    /// (docs/forecast-method.md, "Calibration"), those that helped:
    /// the rate's variation between windows widens the prediction
    /// interval, and a tail of two regimes gives none. A minimum of
    /// clusters, the self-check and the shape floor did not help on the
    /// recording measured and are off.
    pub const STANDARD: Rules = Rules {
        min_clusters: 0.0,
        rate_dispersion: true,
        reach: MAX_EXTRAPOLATION,
        prediction_reach: MAX_EXTRAPOLATION,
        shape_floor: None,
        self_check: false,
        refuse_mixture: true,
    };
}

/// Whether `clusters` seen in `measured_s` seconds meet `needed`.
pub fn check_clusters(clusters: f64, needed: f64, measured_s: f64) -> Result<(), Refusal> {
    if clusters >= needed {
        return Ok(());
    }
    let rate = clusters.max(1.0) / measured_s.max(1.0);
    let more_s = (needed - clusters) / rate;
    Err(Refusal::TooFewClusters {
        clusters,
        needed,
        more_minutes: (more_s / 60.0).ceil().max(1.0) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn horizons_within_ten_times_the_data_are_allowed() {
        assert!(check_horizon(120.0, 1_200.0).is_ok());
        // An hour from two minutes: 6 minutes are needed, 4 more.
        assert_eq!(
            check_horizon(120.0, 3_600.0),
            Err(Refusal::NeedsMoreData {
                measured_s: 120.0,
                more_minutes: 4
            })
        );
        let week = check_horizon(1_200.0, 7.0 * 86_400.0).unwrap_err();
        assert_eq!(week.describe(), "needs 988 more CPU-minutes of data");
        // A fraction of a minute still asks for one.
        assert!(matches!(
            check_horizon(359.0, 3_600.0),
            Err(Refusal::NeedsMoreData {
                more_minutes: 1,
                ..
            })
        ));
    }

    #[test]
    fn too_few_clusters_ask_for_the_minutes_that_would_bring_them() {
        assert!(check_clusters(30.0, 30.0, 120.0).is_ok());
        // 10 clusters in 2 minutes: 20 more take 4 minutes.
        let r = check_clusters(10.0, 30.0, 120.0).unwrap_err();
        assert_eq!(
            r,
            Refusal::TooFewClusters {
                clusters: 10.0,
                needed: 30.0,
                more_minutes: 4
            }
        );
        assert!(r
            .describe()
            .starts_with("needs 4 more CPU-minutes of data (10 clusters"));
    }

    #[test]
    fn a_shape_that_may_reach_one_gives_no_point_forecast() {
        assert!(check_shape(0.2, Some(0.4)).is_ok());
        assert!(check_shape(0.7, Some(1.1)).is_err());
        let r = check_shape(1.56, None).unwrap_err();
        assert!(
            r.describe().contains("may be 1 or more"),
            "{}",
            r.describe()
        );
    }
}
