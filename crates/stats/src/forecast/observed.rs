//! Forecasts from long monitoring: where a monitor measured whole hours,
//! days or weeks, the worst case per horizon is what it observed (the
//! median, quartiles and worst of the block maxima, [`crate::blocks`]),
//! and the tail model answers only beyond the longest block observed.

use crate::blocks::ObservedBlocks;

use super::limits::Refusal;
use super::report::ForecastReport;
use super::{ForecastError, Horizon};

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
