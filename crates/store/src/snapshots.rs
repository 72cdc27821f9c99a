//! The cumulative histograms kept at a cell's checkpoints (schema version
//! 8), so that the histogram of any part of a run between two checkpoints
//! is exact: the forecast refits its tail model to the first part of a run
//! and tests it on the rest, and forecasts a run that changed part by part.
//!
//! # How many are kept
//!
//! A snapshot at every checkpoint of a day-long run would be 8,640 per
//! metric and CPU. The latest checkpoint's histograms are always in
//! `metrics`, so the snapshots only have to place interior cuts, and a few
//! dozen evenly spaced ones are plenty for change points and a two-thirds
//! split. So at most [`MAX_SNAPSHOTS`] checkpoints are kept per cell, by
//! their number rather than their time (checkpoints come a little late, and
//! their lateness adds up):
//!
//! * every `every`-th checkpoint of the cell is kept (`every` starts at 1;
//!   table `snapshot_schedule` counts them);
//! * when more than [`MAX_SNAPSHOTS`] are kept, those of odd rank (the 1st,
//!   3rd, …) are dropped and `every` doubles: the ones left are exactly
//!   every `2 × every`-th.
//!
//! With checkpoints every 10 s this keeps every one for 21 minutes, then
//! every second one, and so on: the spacing stays even and the count
//! between 64 and 128 however long the run. A checkpoint written again at
//! the same (or an earlier) time is not a new one and keeps nothing.

use std::path::Path;

use crate::db::{params, Db, OptionalExt, Value};
use latscope_model::Nanos;
use latscope_record::MetricResult;

use crate::codec::cpu_to_sql;
use crate::error::classify;
use crate::error::{to_sql, Result};
use crate::ids::CellId;

/// Most checkpoint times kept per cell.
pub const MAX_SNAPSHOTS: usize = 128;

/// A cell's metrics as they were at one of its checkpoints: cumulative,
/// uncorrected histograms (`corrected` is `None`; the counters are not
/// kept).
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The cell's measured time at the checkpoint.
    pub at: Nanos,
    pub metrics: Vec<MetricResult>,
}

/// Stores `metrics` as the cell's snapshot at `at`, inside the caller's
/// transaction, by the rule of the module documentation.
pub(crate) fn write_snapshot(
    tx: &Db,
    path: &Path,
    cell: CellId,
    at: Nanos,
    metrics: &[MetricResult],
) -> Result<()> {
    if metrics.is_empty() || at == Nanos::ZERO {
        return Ok(());
    }
    let err = |action| move |e| classify(path, action, e);
    let at = to_sql(at.0, "a checkpoint's time")?;
    let newest: Option<i64> = tx
        .query_row(
            "SELECT MAX(at_ns) FROM metric_snapshots WHERE cell_id = ?1",
            [cell.0],
            |r| r.get(0),
        )
        .map_err(err("reading the snapshots"))?;
    if newest.is_some_and(|last| at <= last) {
        return Ok(());
    }
    let (seen, every): (i64, i64) = tx
        .query_row(
            "SELECT checkpoints, every FROM snapshot_schedule WHERE cell_id = ?1",
            [cell.0],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(err("reading the snapshot schedule"))?
        .unwrap_or((0, 1));
    let seen = seen + 1;
    let mut every = every.max(1);
    let keep = seen % every == 0;
    if keep {
        let mut rows = Vec::with_capacity(metrics.len() * 5);
        for m in metrics {
            rows.extend([
                Value::Int(cell.0),
                Value::Int(at),
                Value::Text(m.name.clone()),
                Value::Int(cpu_to_sql(m.cpu)),
                Value::Blob(crate::codec::encode_histogram(&m.histogram)),
            ]);
        }
        tx.insert_rows(
            "INSERT INTO metric_snapshots (cell_id, at_ns, name, cpu, histogram)",
            "",
            5,
            &rows,
        )
        .map_err(err("saving a snapshot"))?;
        let times: i64 = tx
            .query_row(
                "SELECT COUNT(DISTINCT at_ns) FROM metric_snapshots WHERE cell_id = ?1",
                [cell.0],
                |r| r.get(0),
            )
            .map_err(err("counting the snapshots"))?;
        if times > MAX_SNAPSHOTS as i64 {
            tx.execute(
                "DELETE FROM metric_snapshots WHERE cell_id = ?1 AND at_ns IN ( \
                     SELECT at_ns FROM ( \
                         SELECT at_ns, ROW_NUMBER() OVER (ORDER BY at_ns) AS rank \
                         FROM (SELECT DISTINCT at_ns FROM metric_snapshots WHERE cell_id = ?1) AS distinct_times) AS ranked \
                     WHERE rank % 2 = 1)",
                [cell.0],
            )
            .map_err(err("thinning the snapshots"))?;
            every *= 2;
        }
    }
    tx.execute(
        "INSERT INTO snapshot_schedule (cell_id, checkpoints, every) VALUES (?1, ?2, ?3) \
         ON CONFLICT (cell_id) DO UPDATE SET checkpoints = ?2, every = ?3",
        params![cell.0, seen, every],
    )
    .map_err(err("saving the snapshot schedule"))?;
    Ok(())
}
