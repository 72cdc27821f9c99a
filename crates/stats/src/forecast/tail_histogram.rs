//! The tail fit of a histogram ([`TailFit::from_histogram`]): above the
//! threshold the options give, or above the one chosen by parameter
//! stability ([`Threshold::Auto`], [`super::stability::choose_threshold`]).
//! The ladder of that choice is itself made of fits at fixed quantiles
//! ([`TailFit::from_histogram_fixed`]); this file, apart from both, is where
//! the two meet, so that neither `tail.rs` nor `stability.rs` uses the other.

use crate::Histogram;

use super::stability::{choose_threshold, MIN_RUNG_EXCEEDANCES};
use super::tail::{Cut, TailFit, TailOptions, Threshold};
use super::ForecastError;

impl TailFit {
    /// Fits the tail of a histogram (the threshold and the grouped-data
    /// treatment are described at the top of `tail.rs`).
    pub fn from_histogram(h: &Histogram, options: &TailOptions) -> Result<TailFit, ForecastError> {
        if !matches!(options.threshold, Threshold::Auto) {
            return TailFit::from_histogram_fixed(h, options);
        }
        options.validate()?;
        h.max().ok_or(ForecastError::EmptyHistogram)?;
        let choice = choose_threshold(h, options.confidence)?;
        let u = choice.chosen().threshold_ns;
        let cut = Cut {
            u,
            k: h.count_above(u as u64),
            quantile: None,
            choice: Some(choice),
        };
        TailFit::above(h, cut, MIN_RUNG_EXCEEDANCES, options.confidence)
    }
}
