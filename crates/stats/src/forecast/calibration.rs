//! Calibration: how often a forecast's stated intervals hold the future.
//!
//! A long recording is cut into many train/test windows: the forecast is
//! made from the training part alone (its exact histogram and its
//! per-second maxima), and its figures for a window as long as the test
//! part are compared with the test part's maximum. Over all cuts this gives
//! the empirical coverage of the stated intervals, their median width
//! relative to the point, and the share of forecasts refused
//! (docs/forecast-method.md, "Calibration").
//!
//! Two intervals are judged:
//!
//! * the **return level's** confidence interval (the latency exceeded on
//!   average once in a test window's samples, [`Measured::exceeded_once_in`]),
//!   which the forecast printed before prediction intervals existed;
//! * the **prediction interval** of the test window's maximum
//!   ([`Measured::predicted_max`]), which is what a future window's maximum
//!   should fall in with the stated probability.
//!
//! The input is any sequence of [`Block`]s, stretches of the recording whose
//! histogram is exact (a monitor's minute windows, or the differences of a
//! run's cumulative checkpoint histograms), and the per-second timeline of
//! the same cell (second 0 = the cell's start). Training parts are whole
//! blocks; test parts are read from the timeline, whose per-second maxima
//! give the exact maximum of any whole-second window.

use serde::Serialize;

use latscope_model::Nanos;

use super::limits::Rules;
use super::{ForecastError, Measured, PredictedMax, TailOptions};
use crate::Histogram;
use crate::SecondStats;

/// A stretch of the recording, seconds `[start_s, end_s)` of the cell, with
/// its exact histogram.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub start_s: u64,
    pub end_s: u64,
    pub histogram: Histogram,
}

/// How the recording is cut: `train_s` seconds to fit, the next `test_s`
/// to test, a new cut every `step_s` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub train_s: u64,
    pub test_s: u64,
    pub step_s: u64,
}

/// Why a recording cannot be calibrated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error("training and test parts and the step must be at least one second")]
    EmptyPlan,
    #[error("the blocks must be in time order and not overlap (block at {0} s)")]
    Unordered(u64),
}

/// Largest share of a test part's seconds that may hold no sample (the
/// recording paused): beyond it the cut is skipped, not judged.
pub const MAX_EMPTY_TEST_SHARE: f64 = 0.01;

/// What the forecast of one cut said.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// No figure, and why.
    Refused { reason: String },
    Forecast {
        /// The return level for the test window and its interval.
        point_ns: u64,
        low_ns: u64,
        high_ns: Option<u64>,
        /// Whether the return level was read from the data (the training
        /// part held at least as many samples as the test window).
        observed: bool,
        prediction: PredictedMax,
        /// The fit behind them: threshold, shape, clusters seen (`k θ`)
        /// and the between-window variance of the log cluster rate.
        threshold_ns: u64,
        shape: f64,
        clusters: f64,
        dispersion: Option<f64>,
        /// Whether the threshold ladder found two regimes.
        mixture: bool,
        /// The self-check's p-value ([`super::SelfCheck`]).
        self_check_p: Option<f64>,
    },
}

/// One train/test cut and its forecast.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Case {
    pub train_start_s: u64,
    pub train_end_s: u64,
    pub test_end_s: u64,
    /// The largest sample of the training part.
    pub train_max_ns: u64,
    /// The largest sample of the test part.
    pub observed_max_ns: u64,
    pub outcome: Outcome,
}

/// Where an observed value lies against an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Position {
    /// Below the interval: the forecast overestimated.
    Below,
    Inside,
    /// Above the interval: the forecast underestimated.
    Above,
}

/// Where `x` lies against `[low, high]` (`high: None` is unbounded).
pub fn position(x: u64, low: u64, high: Option<u64>) -> Position {
    if x < low {
        Position::Below
    } else if high.is_some_and(|h| x > h) {
        Position::Above
    } else {
        Position::Inside
    }
}

impl Case {
    /// The observed maximum against the return level's interval and the
    /// prediction interval; `None` when refused.
    pub fn positions(&self) -> Option<(Position, Position)> {
        match &self.outcome {
            Outcome::Refused { .. } => None,
            Outcome::Forecast {
                low_ns,
                high_ns,
                prediction,
                ..
            } => Some((
                position(self.observed_max_ns, *low_ns, *high_ns),
                position(self.observed_max_ns, prediction.low_ns, prediction.high_ns),
            )),
        }
    }
}

/// How one kind of interval fared over the cuts that were forecast.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Coverage {
    /// Forecasts judged.
    pub forecasts: usize,
    /// Test maxima inside the interval.
    pub held: usize,
    /// Test maxima below it (overestimates) and above it (underestimates).
    pub below: usize,
    pub above: usize,
    /// The median of `(high − low) / centre`, over intervals with an upper
    /// end (`centre`: the point for the return level, the median for the
    /// prediction).
    pub median_width: Option<f64>,
    /// Intervals without an upper end.
    pub unbounded: usize,
}

impl Coverage {
    /// `held / forecasts`, `None` without forecasts.
    pub fn share(&self) -> Option<f64> {
        (self.forecasts > 0).then(|| self.held as f64 / self.forecasts as f64)
    }
}

/// The result of a calibration: every cut and the summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub plan: Plan,
    pub rules: Rules,
    pub cases: Vec<Case>,
    /// Cuts skipped because their test part was incomplete.
    pub skipped: usize,
    pub refused: usize,
    /// The return level's confidence interval against the test maxima.
    pub return_level: Coverage,
    /// The prediction interval against the test maxima.
    pub prediction: Coverage,
}

impl Calibration {
    /// `refused / (refused + forecasts)`, `None` without cuts.
    pub fn refused_share(&self) -> Option<f64> {
        (!self.cases.is_empty()).then(|| self.refused as f64 / self.cases.len() as f64)
    }
}

/// The training blocks of the cut starting at block `i`: consecutive,
/// contiguous blocks from there until they span at least `train_s`;
/// `None` when the blocks end first or leave a gap.
fn training(blocks: &[Block], i: usize, train_s: u64) -> Option<&[Block]> {
    let start = blocks.get(i)?.start_s;
    let mut end = start;
    for (j, b) in blocks.iter().enumerate().skip(i) {
        if b.start_s != end {
            return None;
        }
        end = b.end_s;
        if end - start >= train_s {
            return Some(&blocks[i..=j]);
        }
    }
    None
}

/// Cuts the recording by `plan` and forecasts every cut from its training
/// part with `tail` options and `rules` (see the module documentation).
pub fn calibrate(
    blocks: &[Block],
    seconds: &[SecondStats],
    plan: &Plan,
    tail: &TailOptions,
    rules: &Rules,
) -> Result<Calibration, CalibrationError> {
    if plan.train_s == 0 || plan.test_s == 0 || plan.step_s == 0 {
        return Err(CalibrationError::EmptyPlan);
    }
    for w in blocks.windows(2) {
        if w[1].start_s < w[0].end_s {
            return Err(CalibrationError::Unordered(w[1].start_s));
        }
    }
    if let Some(b) = blocks.iter().find(|b| b.end_s <= b.start_s) {
        return Err(CalibrationError::Unordered(b.start_s));
    }
    let mut cases = Vec::new();
    let mut skipped = 0;
    let mut i = 0;
    while i < blocks.len() {
        let origin = blocks[i].start_s;
        let Some(train) = training(blocks, i, plan.train_s) else {
            i += 1;
            continue;
        };
        let end = train[train.len() - 1].end_s;
        let test_end = end + plan.test_s;
        let (Ok(te), Ok(ts), Ok(os)) = (
            usize::try_from(test_end),
            usize::try_from(end),
            usize::try_from(origin),
        ) else {
            break;
        };
        if te > seconds.len() {
            break;
        }
        let test = &seconds[ts..te];
        let empty = test.iter().filter(|s| s.count == 0).count();
        if empty as f64 > MAX_EMPTY_TEST_SHARE * test.len() as f64 {
            skipped += 1;
        } else {
            let observed_max_ns = test.iter().map(|s| s.max).max().unwrap_or(0);
            let mut h = Histogram::new();
            for b in train {
                h.merge(&b.histogram);
            }
            let outcome = forecast(&h, &seconds[os..ts], end - origin, plan.test_s, tail, rules);
            cases.push(Case {
                train_start_s: origin,
                train_end_s: end,
                test_end_s: test_end,
                train_max_ns: h.max().map_or(0, |m| m.0),
                observed_max_ns,
                outcome,
            });
        }
        // The next cut: the first block at least a step later.
        let next = origin + plan.step_s;
        i = match blocks.iter().position(|b| b.start_s >= next) {
            Some(j) => j,
            None => break,
        };
    }
    Ok(summarize(*plan, *rules, cases, skipped))
}

/// The forecast of one cut: the return level and the prediction interval
/// for a window of `test_s` seconds, from the training histogram `h` of
/// `train_s` seconds and its per-second maxima.
fn forecast(
    h: &Histogram,
    train: &[SecondStats],
    train_s: u64,
    test_s: u64,
    tail: &TailOptions,
    rules: &Rules,
) -> Outcome {
    let refused = |e: ForecastError| Outcome::Refused {
        reason: e.to_string(),
    };
    let m = match Measured::new(h, Nanos::from_secs(train_s), false, tail) {
        Ok(m) => m,
        Err(e) => return refused(e),
    };
    let maxima: Vec<u64> = train.iter().map(|s| s.max).collect();
    let m = m.with_timeline(&[&maxima]).with_rules(*rules);
    let events = m.rate_hz() * test_s as f64;
    let estimate = match m.exceeded_once_in(events) {
        Ok(e) => e,
        Err(e) => return refused(e),
    };
    let prediction = match m.predicted_max(test_s as f64) {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let (threshold_ns, shape) = m
        .tail()
        .map_or((0, f64::NAN), |t| (t.threshold_ns as u64, t.fit.gpd.shape));
    Outcome::Forecast {
        point_ns: estimate.latency_ns,
        low_ns: estimate.interval.low,
        high_ns: estimate.interval.high,
        observed: estimate.provenance == super::Provenance::Observed,
        prediction,
        threshold_ns,
        shape,
        clusters: m.clusters().unwrap_or(0.0),
        dispersion: m.rate_dispersion(),
        mixture: m
            .tail()
            .ok()
            .and_then(|t| t.choice.as_ref())
            .is_some_and(|c| c.mixture.is_some()),
        self_check_p: m.self_check().map(|s| s.p_value),
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn count(positions: &[Position], widths: Vec<f64>, unbounded: usize) -> Coverage {
    let of = |p: Position| positions.iter().filter(|&&x| x == p).count();
    Coverage {
        forecasts: positions.len(),
        held: of(Position::Inside),
        below: of(Position::Below),
        above: of(Position::Above),
        median_width: median(widths),
        unbounded,
    }
}

/// The coverage, widths and refusals of `cases`.
pub fn summarize(plan: Plan, rules: Rules, cases: Vec<Case>, skipped: usize) -> Calibration {
    let mut rl = Vec::new();
    let mut pi = Vec::new();
    let (mut rl_w, mut pi_w) = (Vec::new(), Vec::new());
    let (mut rl_unb, mut pi_unb) = (0, 0);
    let mut refused = 0;
    for c in &cases {
        match (&c.outcome, c.positions()) {
            (
                Outcome::Forecast {
                    point_ns,
                    low_ns,
                    high_ns,
                    prediction,
                    ..
                },
                Some((a, b)),
            ) => {
                rl.push(a);
                pi.push(b);
                match high_ns {
                    Some(h) if *point_ns > 0 => {
                        rl_w.push((*h as f64 - *low_ns as f64) / *point_ns as f64)
                    }
                    _ => rl_unb += 1,
                }
                match prediction.high_ns {
                    Some(h) if prediction.median_ns > 0 => pi_w
                        .push((h as f64 - prediction.low_ns as f64) / prediction.median_ns as f64),
                    _ => pi_unb += 1,
                }
            }
            _ => refused += 1,
        }
    }
    Calibration {
        plan,
        rules,
        skipped,
        refused,
        return_level: count(&rl, rl_w, rl_unb),
        prediction: count(&pi, pi_w, pi_unb),
        cases,
    }
}
