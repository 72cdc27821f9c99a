//! `latscope report RUN [--html FILE]`: the run as one self-contained HTML
//! page. This module loads the run and the per-second timelines of the
//! metrics the page plots ([`is_plotted`]), the histograms kept at the
//! cells' checkpoints (both through [`crate::forecast_input`], which fits a
//! long monitor's model to the part whose timeline is kept) and their
//! checkpoint intervals from the store and writes the page;
//! `latscope_report` renders it.

use std::path::PathBuf;

use latscope_report::html::is_plotted;
use latscope_stats::forecast::is_forecast_metric;
use latscope_store::Store;

use crate::args::ReportArgs;
use crate::exit::{self, Exit};

pub fn report(args: &ReportArgs) -> Result<i32, Exit> {
    let store = Store::open_existing(&args.store.store)?;
    let id = store.resolve(&args.run)?;
    let run = store.load_run(id)?;
    if let Some(micro) = store.load_micro(id)? {
        let results = micro.results();
        let page = latscope_report::micro_html(&run, micro.context.as_ref(), &results);
        return write_page(args, id.0, &page);
    }
    let input = crate::forecast_input::load(&store, id, run, None, |name| {
        is_plotted(name) || is_forecast_metric(name)
    })?;
    let cells: Vec<_> = store
        .cell_ids(id)?
        .into_iter()
        .zip(input.whole.cells.iter().map(|c| c.meta.index))
        .collect();
    let intervals = store.plot_intervals(id, &cells, latscope_report::INTERVAL_PLOT_POINTS);
    let timelines = input.timelines;
    // A cut cell's forecast reads its part's timeline from element 0,
    // which is where the part starts.
    let mut forecast =
        latscope_report::html::report_forecast(&input.run, &timelines, &input.snapshots);
    let notes: Vec<String> = latscope_report::model_cuts_text(&input.cuts)
        .lines()
        .map(str::to_string)
        .collect();
    // A monitor's observed hours, days and weeks replace the model where
    // they cover a horizon.
    let observed = crate::observed::observed(&store, id)?;
    if let (Some(f), Some(o)) = (&mut forecast, &observed) {
        f.observe(latscope_model::metric::TIMER_LATENCY, o);
    }
    let page = latscope_report::html_report_page(
        &input.whole,
        &timelines,
        forecast.as_ref(),
        observed.as_ref(),
        &intervals,
        &notes,
    );
    write_page(args, id.0, &page)
}

/// Writes the page where `--html` says (default `latscope-report-<id>.html`;
/// `-`: standard output).
fn write_page(args: &ReportArgs, id: i64, page: &str) -> Result<i32, Exit> {
    let path = args
        .html
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("latscope-report-{id}.html")));
    match crate::output::destination(Some(&path)) {
        None => crate::output::print(page),
        to => {
            crate::output::write(to, page.as_bytes(), crate::output::PUBLIC)?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(exit::OK)
}
