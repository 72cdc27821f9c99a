//! What the pages and the forecast read from a store: the forecast's input
//! (a long monitor's cells cut where their timeline is kept), a monitor's
//! observed blocks, the whole HTML page of a stored run, a stored run
//! exported or shown, the runs of `forecast --against` paired, and runs
//! compared.
//! The only part of this crate that reads; it never writes.

mod compare;
mod export;
mod forecast;
mod input;
mod observed;
mod page;
mod pairing;
mod show;

pub use compare::{stored_comparison, CompareRuns, StoredComparison};
pub use export::{export_run, Exported};
pub use forecast::{stored_forecast, StoredForecast};
pub use input::{forecast_input, ForecastInput};
pub use observed::{observed, observed_text};
pub use page::html_page;
pub use pairing::{stored_pairing, StoredPairing};
pub use show::{show_run, ShowAs};

use latscope_stats::forecast::pairing::PairingError;
use latscope_stats::forecast::ForecastError;

use crate::exports::ExportError;
use latscope_store::StoreError;

/// Why a stored run could not be read for a page or a forecast.
#[derive(Debug, thiserror::Error)]
pub enum StoredError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read the timeline of {metric}")]
    Timeline {
        metric: String,
        #[source]
        source: Box<StoreError>,
    },
    #[error("cannot forecast")]
    Forecast(#[source] ForecastError),
    #[error(transparent)]
    Export(#[from] ExportError),
    /// A run named twice in one list of runs.
    #[error("run {run} is named twice in '{spec}'")]
    NamedTwice { run: i64, spec: String },
    /// The cells of the timer runs and the app runs could not be paired:
    /// the line names the runs at fault ("run 1,3 has no timer cell ...").
    #[error("{}", refusal_line(error, timer_runs, app_runs))]
    Pairing {
        error: Box<PairingError>,
        timer_runs: Vec<i64>,
        app_runs: Vec<i64>,
    },
    /// Comparing the latest run of each host, with fewer than two hosts.
    #[error("the store has {hosts} host(s)")]
    FewHosts { hosts: usize },
    /// Micro runs and latency runs in one comparison.
    #[error("micro runs compare with micro runs, latency runs with latency runs")]
    MixedKinds,
    #[error("cannot encode JSON")]
    Json(#[source] serde_json::Error),
    /// A comparison of no runs.
    #[error("no runs to compare")]
    NoRuns,
}

/// A pairing refused, as one line naming the runs at fault ("run 1,3 has
/// no timer cell ...", the runs as the user lists them).
fn refusal_line(e: &PairingError, timer_runs: &[i64], app_runs: &[i64]) -> String {
    let names = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    match e {
        PairingError::NoTimerLatency | PairingError::NoTimerCell { .. } => {
            format!("run {} has {e}", names(timer_runs))
        }
        PairingError::NoAppCell => format!("run {} has {e}", names(app_runs)),
        PairingError::Scheme { .. } | PairingError::Forecast(_) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_pairing_names_the_runs_as_before() {
        let line = refusal_line(&PairingError::NoAppCell, &[1], &[2, 4]);
        assert_eq!(
            line,
            "run 2,4 has no app-probe cell with buffers: give a `latscope run --probe app` run"
        );
        let e = PairingError::NoTimerCell {
            workload: "io".into(),
            app_cell: 3,
        };
        assert_eq!(
            refusal_line(&e, &[1, 3], &[2]),
            "run 1,3 has no timer cell under workload 'io' for app cell 3"
        );
    }
}
