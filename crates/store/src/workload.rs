//! The workload characterization of a cell (schema version 4).
//!
//! A summary row per cell and a row per sample. Each call sends the whole
//! characterization so far and the store writes what differs: the summary,
//! the samples added since the last call (a stored sample that is unchanged
//! is left alone), and the removal of samples beyond the new end. All in one
//! transaction, so a run killed between checkpoints keeps the last complete
//! characterization.

use crate::db::{params, Db, OptionalExt};
use latscope_model::{RunId, WorkloadSecond, WorkloadStats};

use crate::error::classify;
use crate::{encode_json, require_cell_in};
use crate::{to_sql, CellId, Result, Store, StoreError};
use std::path::Path;

impl Store {
    /// Stores (or replaces) the characterization of a cell's workload.
    /// Called at each checkpoint and at the end of the cell.
    /// A figure that is not a finite number is refused (nothing is stored):
    /// JSON cannot hold it.
    pub fn set_workload_stats(&mut self, cell: CellId, stats: &WorkloadStats) -> Result<()> {
        let path = self.path.as_path();
        let tx = self
            .db
            .begin()
            .map_err(|e| classify(path, "starting a transaction", e))?;
        write_workload_stats(&tx, path, cell, stats)?;
        tx.commit()
            .map_err(|e| classify(path, "committing the workload characterization", e))
    }

    /// A cell's characterization; `None` when it has none (a cell stored by
    /// a version before 4, or not characterized).
    pub(crate) fn load_workload_stats(
        &self,
        cell: i64,
        run: RunId,
    ) -> Result<Option<WorkloadStats>> {
        let summary: Option<String> = self
            .db
            .query_row(
                "SELECT stats FROM workload_stats WHERE cell_id = ?1",
                [cell],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql("reading the workload characterization", e))?;
        let rows: Vec<(i64, String)> = self
            .collect(
                "SELECT idx, sample FROM workload_seconds WHERE cell_id = ?1 ORDER BY idx",
                [cell],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.sql("reading the workload samples", e))?;
        let Some(summary) = summary else {
            if rows.is_empty() {
                return Ok(None);
            }
            return Err(self.corrupt(format!(
                "run {run}: cell {cell} has workload samples but no characterization"
            )));
        };
        let mut stats: WorkloadStats = self.parse_json(
            &summary,
            &format!("workload characterization of cell {cell}"),
            run,
        )?;
        stats.seconds = Vec::with_capacity(rows.len());
        for (i, (idx, text)) in rows.into_iter().enumerate() {
            // Rows are written 0, 1, ... in one transaction; a gap means
            // someone else wrote or deleted rows.
            if idx != i as i64 {
                return Err(self.corrupt(format!(
                    "run {run}: workload sample {i} of cell {cell} is missing"
                )));
            }
            let second: WorkloadSecond =
                self.parse_json(&text, &format!("workload sample {idx} of cell {cell}"), run)?;
            stats.seconds.push(second);
        }
        Ok(Some(stats))
    }
}

/// [`Store::set_workload_stats`] inside the caller's transaction.
pub(crate) fn write_workload_stats(
    tx: &Db,
    path: &Path,
    cell: CellId,
    stats: &WorkloadStats,
) -> Result<()> {
    if let Some(field) = stats.non_finite() {
        return Err(StoreError::InvalidWorkloadStats {
            cell,
            reason: format!("{field} is not a finite number"),
        });
    }
    // The summary without its samples, which have rows of their own.
    let summary = WorkloadStats {
        workload: stats.workload.clone(),
        cpus: stats.cpus.clone(),
        start_ns: stats.start_ns,
        samples: stats.samples,
        mean: stats.mean.clone(),
        top_interrupts: stats.top_interrupts.clone(),
        softirqs_per_s: stats.softirqs_per_s.clone(),
        notes: stats.notes.clone(),
        pty_bytes_per_s: stats.pty_bytes_per_s,
        rt_load: stats.rt_load.clone(),
        seconds: Vec::new(),
    };
    let summary = encode_json(path, &summary, "the workload characterization")?;
    let seconds = stats
        .seconds
        .iter()
        .map(|s| encode_json(path, s, "a workload sample"))
        .collect::<Result<Vec<String>>>()?;
    let count = to_sql(stats.seconds.len() as u64, "a number of workload samples")?;

    let err = |action| move |e| classify(path, action, e);
    require_cell_in(tx, path, cell)?;
    tx.execute(
        "INSERT INTO workload_stats (cell_id, stats) VALUES (?1, ?2) \
             ON CONFLICT (cell_id) DO UPDATE SET stats = excluded.stats",
        params![cell.0, summary],
    )
    .map_err(err("saving the workload characterization"))?;
    {
        let mut upsert = tx
            .prepare_cached(
                "INSERT INTO workload_seconds (cell_id, idx, sample) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (cell_id, idx) DO UPDATE SET sample = excluded.sample \
                     WHERE workload_seconds.sample IS DISTINCT FROM excluded.sample",
            )
            .map_err(err("saving the workload samples"))?;
        for (idx, json) in seconds.iter().enumerate() {
            upsert
                .execute(params![cell.0, idx as i64, json])
                .map_err(err("saving a workload sample"))?;
        }
    }
    tx.execute(
        "DELETE FROM workload_seconds WHERE cell_id = ?1 AND idx >= ?2",
        params![cell.0, count],
    )
    .map_err(err("replacing the workload samples"))?;
    Ok(())
}
