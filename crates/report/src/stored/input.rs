//! What `forecast` and `report` read from the store for a forecast: the
//! run, the per-second timelines and the histograms kept at checkpoints.
//!
//! A cell whose oldest seconds the retention deleted (a monitor that ran
//! longer than `retain_seconds`) is cut at its first checkpoint at or
//! after the oldest second still stored ([`cell_since`]): the tail model is
//! fitted to that part, whose timeline and histogram describe the same
//! seconds, and only that part's timeline is read. The whole run's
//! observed worst cases come from the monitor's windows
//! ([`super::observed`]). Any other cell is read whole, as before.

use latscope_model::{Nanos, RunId};
use latscope_stats::forecast::{cell_since, is_forecast_metric, CellSnapshot};
use latscope_stats::RunResult;
use latscope_store::{CellId, Store};

use super::StoredError;
use crate::html::Timeline;

/// A run ready for its forecast.
pub struct ForecastInput {
    /// The run as stored.
    pub whole: RunResult,
    /// The run with each cut cell replaced by its part (see the module
    /// documentation): what the forecast is computed from.
    pub run: RunResult,
    /// One metric's timeline on one CPU of one cell, from its
    /// `first_second` on.
    pub timelines: Vec<Timeline>,
    pub snapshots: Vec<CellSnapshot>,
    /// `(cell index, cell time of the cut, the cell's duration)` of every
    /// cut cell.
    pub cuts: Vec<(u32, Nanos, Nanos)>,
}

/// Reads what the forecast of run `id` (`whole`, as stored) needs, for the cells `cells` allows
/// (`None`: all), with the timelines of the metrics `wanted` accepts.
/// Unreadable timelines and checkpoints only lose the checks that need
/// them.
pub fn forecast_input(
    store: &Store,
    id: RunId,
    whole: RunResult,
    cells: Option<&[u32]>,
    wanted: impl Fn(&str) -> bool,
) -> Result<ForecastInput, StoredError> {
    let cell_ids = store.cell_ids(id)?;
    let mut run = whole.clone();
    let mut timelines = Vec::new();
    let mut snapshots = Vec::new();
    let mut cuts = Vec::new();
    for ((cell, cell_id), original) in run.cells.iter_mut().zip(cell_ids).zip(&whole.cells) {
        if cells.is_some_and(|w| !w.contains(&cell.meta.index)) {
            continue;
        }
        let kept: Vec<CellSnapshot> = store
            .load_snapshots_where(cell_id, is_forecast_metric)
            .map(|kept| {
                kept.into_iter()
                    .map(|s| CellSnapshot {
                        cell: cell.meta.index,
                        at: s.at,
                        metrics: s.metrics,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let start = store.timeline_start(cell_id).ok().flatten().unwrap_or(0);
        let mut from_second = 0;
        if start > 0 {
            // Without a checkpoint to cut at, the cell is forecast from its
            // histograms alone: no timeline, no checks that need one.
            let Some(part) = cell_since(cell, &kept, start) else {
                continue;
            };
            from_second = (part.from.0 as f64 / 1e9).round() as u64;
            cuts.push((cell.meta.index, part.from, cell.meta.duration_ns));
            *cell = part.cell;
            snapshots.extend(part.snapshots);
        } else {
            snapshots.extend(kept);
        }
        timelines.extend(read_timelines(
            store,
            cell_id,
            original,
            from_second,
            &wanted,
        )?);
    }
    Ok(ForecastInput {
        whole,
        run,
        timelines,
        snapshots,
        cuts,
    })
}

fn read_timelines(
    store: &Store,
    cell_id: CellId,
    cell: &latscope_stats::CellResult,
    from_second: u64,
    wanted: &impl Fn(&str) -> bool,
) -> Result<Vec<Timeline>, StoredError> {
    let mut out = Vec::new();
    for m in cell.metrics.iter().filter(|m| wanted(&m.name)) {
        let seconds = store
            .load_timeline_from(cell_id, &m.name, m.cpu, from_second)
            .map_err(|source| StoredError::Timeline {
                metric: m.name.clone(),
                source: Box::new(source),
            })?;
        if !seconds.is_empty() {
            out.push(Timeline {
                cell: cell.meta.index,
                metric: m.name.clone(),
                cpu: m.cpu,
                first_second: from_second,
                seconds,
            });
        }
    }
    Ok(out)
}
