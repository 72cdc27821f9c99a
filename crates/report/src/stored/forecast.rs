//! The forecast of a stored run: its input read ([`forecast_input`]), the
//! report computed (`latscope_stats::forecast`: the CPUs of a cell pooled
//! as one longer run of one CPU, the same report the HTML page shows) and a
//! monitor's real hours, days and weeks put in where they cover a horizon.

use latscope_model::{Nanos, RunId};
use latscope_stats::blocks::ObservedBlocks;
use latscope_stats::forecast::{
    forecast_report, is_forecast_metric, CpuTimeline, ForecastOptions, ForecastReport,
};
use latscope_store::Store;

use super::{forecast_input, observed, StoredError};
use crate::html::Timeline;

/// A stored run's forecast, with what its renderings add.
pub struct StoredForecast {
    pub report: ForecastReport,
    /// A monitor's observed blocks (`None` for other runs).
    pub observed: Option<ObservedBlocks>,
    /// `(cell index, cell time of the cut, the cell's duration)` of every
    /// cell cut where its timeline is kept.
    pub cuts: Vec<(u32, Nanos, Nanos)>,
}

/// The forecast of run `id` with `options`.
pub fn stored_forecast(
    store: &Store,
    id: RunId,
    options: &ForecastOptions,
) -> Result<StoredForecast, StoredError> {
    let run = store.load_run(id)?;
    let input = forecast_input(store, id, run, options.cells.as_deref(), is_forecast_metric)?;
    let timelines: Vec<CpuTimeline<'_>> = input
        .timelines
        .iter()
        .map(Timeline::as_cpu_timeline)
        .collect();
    let mut report = forecast_report(&input.run, &timelines, &input.snapshots, options)
        .map_err(StoredError::Forecast)?;
    let observed = observed(store, id)?;
    if let Some(o) = &observed {
        report.observe(latscope_model::metric::TIMER_LATENCY, o);
    }
    Ok(StoredForecast {
        report,
        observed,
        cuts: input.cuts,
    })
}
