//! The pseudo worst cases of a forecast: one latency per permissible miss
//! interval (its JSON form is written beside the report's others, in
//! `report.rs`).

use super::{ForecastError, LatencyEstimate};

/// The pseudo worst cases for the permissible miss intervals
/// ([`super::PERMISSIBLE_MISS_INTERVALS`]), in their order.
#[derive(Clone, Debug, PartialEq)]
pub struct PseudoWorstCases(pub Vec<(&'static str, Result<LatencyEstimate, ForecastError>)>);

impl PseudoWorstCases {
    pub fn get(&self, label: &str) -> Option<&Result<LatencyEstimate, ForecastError>> {
        self.0.iter().find(|(l, _)| *l == label).map(|(_, e)| e)
    }
}
