//! The HTML page of a stored run: the run, the per-second timelines of the
//! metrics the page plots ([`is_plotted`]), the histograms kept at the
//! cells' checkpoints (both through [`forecast_input`], which fits a long
//! monitor's model to the part whose timeline is kept), their checkpoint
//! intervals and a monitor's observed blocks; a micro run's page from its
//! benchmarks.

use latscope_model::RunId;
use latscope_stats::forecast::is_forecast_metric;
use latscope_store::Store;

use super::{forecast_input, observed, StoredError};
use crate::html::{html_report_page, is_plotted, micro_html, report_forecast};

/// The page of run `id`.
pub fn html_page(store: &Store, id: RunId) -> Result<String, StoredError> {
    let run = store.load_run(id)?;
    if let Some(micro) = store.load_micro(id)? {
        let results = micro.results();
        return Ok(micro_html(&run, micro.context.as_ref(), &results));
    }
    let input = forecast_input(store, id, run, None, |name| {
        is_plotted(name) || is_forecast_metric(name)
    })?;
    let cells: Vec<_> = store
        .cell_ids(id)?
        .into_iter()
        .zip(input.whole.cells.iter().map(|c| c.meta.index))
        .collect();
    let intervals = store.plot_intervals(id, &cells, crate::html::INTERVAL_PLOT_POINTS);
    let timelines = input.timelines;
    // A cut cell's forecast reads its part's timeline from element 0,
    // which is where the part starts.
    let mut forecast = report_forecast(&input.run, &timelines, &input.snapshots);
    let notes: Vec<String> = crate::forecast::model_cuts_text(&input.cuts)
        .lines()
        .map(str::to_string)
        .collect();
    // A monitor's observed hours, days and weeks replace the model where
    // they cover a horizon.
    let observed = observed(store, id)?;
    if let (Some(f), Some(o)) = (&mut forecast, &observed) {
        f.observe(latscope_model::metric::TIMER_LATENCY, o);
    }
    Ok(html_report_page(
        &input.whole,
        &timelines,
        forecast.as_ref(),
        observed.as_ref(),
        &intervals,
        &notes,
    ))
}
