//! Forecasts from long monitoring: where a monitor measured whole hours,
//! days or weeks, the worst case per horizon is what it observed (the
//! median, quartiles and worst of the block maxima, [`crate::blocks`]),
//! and the tail model answers only beyond the longest block observed.

use crate::blocks::{BlockStats, ObservedBlocks};

use super::limits::Refusal;
use super::report::ForecastReport;
use super::{ForecastError, Horizon, UsageModel};

impl ForecastReport {
    /// Puts the monitor's `blocks` of `metric` in place of the model at
    /// every horizon they cover ([`ObservedBlocks::for_horizon`]): the
    /// horizon keeps them as [`super::HorizonForecast::monitor`] and its
    /// estimate becomes [`Refusal::Observed`]. Horizons they do not cover
    /// keep the model.
    pub fn observe(&mut self, metric: &str, blocks: &ObservedBlocks) {
        let usage = self.usage.model;
        for cell in &mut self.cells {
            for m in cell.metrics.iter_mut().filter(|m| m.name == metric) {
                let w = &mut m.worst_case;
                for (horizon, h) in [
                    (Horizon::Hour, &mut w.hour),
                    (Horizon::Day, &mut w.day),
                    (Horizon::Week, &mut w.week),
                ] {
                    if let Some(b) = blocks.for_horizon(horizon, &usage) {
                        h.monitor = Some(b.clone());
                        h.estimate = Err(ForecastError::Refused(Refusal::Observed {
                            blocks: b.blocks,
                        }));
                        h.prediction = Err(ForecastError::Refused(Refusal::Observed {
                            blocks: b.blocks,
                        }));
                    }
                }
            }
        }
    }
}

// The forecast's side of the observed blocks: which of them answer a
// horizon (here, so that `blocks.rs` needs nothing of the forecasts).
impl ObservedBlocks {
    /// The observed blocks that are the forecast's `horizon` under
    /// `usage`: the hours always, the days and weeks when the usage model
    /// runs around the clock (a UTC day of monitoring is an office day
    /// only for the continuous model); `None` when no complete block of
    /// that length was measured. Where this answers, the forecast reports
    /// what was observed and leaves the model to longer horizons.
    pub fn for_horizon(&self, horizon: Horizon, usage: &UsageModel) -> Option<&BlockStats> {
        let (blocks, hours) = match horizon {
            Horizon::Hour => (&self.hour, 1.0),
            Horizon::Day => (&self.day, 24.0),
            Horizon::Week => (&self.week, 168.0),
            Horizon::Seconds(_) => return None,
        };
        (blocks.blocks > 0 && horizon.run_seconds(usage) == hours * 3600.0).then_some(blocks)
    }
}
