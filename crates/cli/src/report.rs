//! `latscope report RUN [--html FILE]`: the run as one self-contained HTML
//! page. This module loads the run and the per-second timelines of the
//! metrics the page plots ([`is_plotted`]), the histograms kept at the
//! cells' checkpoints and their checkpoint intervals from the store and
//! writes the page; `latscope_report` renders it.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use latscope_report::html::is_plotted;
use latscope_report::Timeline;
use latscope_stats::forecast::{CellSnapshot, FORECAST_METRICS};
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
    let cell_ids = store.cell_ids(id)?;
    let mut timelines = Vec::new();
    let mut snapshots = Vec::new();
    let mut intervals = Vec::new();
    for (cell, cell_id) in run.cells.iter().zip(cell_ids) {
        // The checkpoint intervals (percentiles over time); a cell stored
        // without them, or with unreadable ones, only lacks that plot.
        if let Ok(Some(series)) =
            store.load_intervals_merged(cell_id, latscope_report::INTERVAL_PLOT_POINTS)
        {
            intervals.extend(series);
        }
        // The histograms kept at the cell's checkpoints (for the forecast's
        // checks); unreadable ones only lose those checks.
        if let Ok(kept) = store.load_snapshots_of(cell_id, &FORECAST_METRICS) {
            snapshots.extend(kept.into_iter().map(|s| CellSnapshot {
                cell: cell.meta.index,
                at: s.at,
                metrics: s.metrics,
            }));
        }
        for m in cell.metrics.iter().filter(|m| is_plotted(&m.name)) {
            let seconds = store
                .load_timeline(cell_id, &m.name, m.cpu)
                .with_context(|| format!("cannot read the timeline of {}", m.name))?;
            if !seconds.is_empty() {
                timelines.push(Timeline {
                    cell: cell.meta.index,
                    metric: m.name.clone(),
                    cpu: m.cpu,
                    seconds,
                });
            }
        }
    }
    let observed = crate::observed::observed(&store, id)?;
    let page = latscope_report::html_report_full(
        &run,
        &timelines,
        &snapshots,
        observed.as_ref(),
        &intervals,
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
    if path.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        // A closed pipe (`| head`) is not an error worth a message.
        let _ = stdout.write_all(page.as_bytes());
    } else {
        std::fs::write(&path, page.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(exit::OK)
}
