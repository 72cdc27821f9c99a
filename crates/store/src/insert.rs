//! A whole run written at once: for runs measured elsewhere and read from a
//! file (`latscope import`), which arrive complete rather than checkpoint
//! by checkpoint.
//!
//! Everything is one transaction, so a run is stored whole or not at all:
//! a bad value in its last cell, a full disk or a killed process leaves no
//! partial run behind.

use crate::db::params;
use latscope_model::RunId;
use latscope_record::RunResult;

use crate::error::classify;
use crate::{insert_cell, insert_run_rows, to_sql, write_progress, Result, Store};

impl Store {
    /// Stores a complete run in one transaction and returns its id: the
    /// run with its source, notes, system snapshot and capabilities, then
    /// each cell with its metrics (raw and corrected histograms, counters),
    /// the probe's own figures (noise, early timer wake-ups, UDP counts),
    /// the workload's characterization, its episodes and the tracer's
    /// summary. `run.meta.id` is ignored: the store numbers runs. A
    /// [`RunResult`] holds no per-second timeline and no episode event
    /// windows, so none are stored; each cell's metrics are also kept as
    /// the snapshot at its duration, as a final checkpoint would keep them.
    ///
    /// Reading the run back with [`Store::load_run`] gives `run` again
    /// (with the new id). On any error nothing of it is stored.
    pub fn insert_run(&mut self, run: &RunResult) -> Result<RunId> {
        let path = self.path.as_path();
        let err = |action| move |e| classify(path, action, e);
        let tx = self.db.begin().map_err(err("starting a transaction"))?;
        let meta = &run.meta;
        let id = insert_run_rows(&tx, path, meta, &run.system, &run.capabilities)?;
        let at = meta
            .checkpoint_unix_ns
            .or(meta.ended_unix_ns)
            .unwrap_or(meta.started_unix_ns);
        for cell in &run.cells {
            let cell_id = insert_cell(&tx, path, id, &cell.meta)?;
            write_progress(
                &tx,
                path,
                id,
                cell_id,
                cell.meta.duration_ns,
                &cell.metrics,
                &[],
                at,
            )?;
            if !cell.noise.is_empty() {
                crate::noise::write_noise_stats(&tx, path, cell_id, &cell.noise)?;
            }
            if !cell.timer.is_empty() {
                crate::timer::write_timer_stats(&tx, path, cell_id, &cell.timer)?;
            }
            if let Some(u) = &cell.udp {
                crate::udp::write_udp_stats(&tx, path, cell_id, u)?;
            }
            if let Some(w) = &cell.workload_stats {
                crate::workload::write_workload_stats(&tx, path, cell_id, w)?;
            }
            if !cell.episodes.is_empty() {
                crate::trace::write_episodes(&tx, path, cell_id, &cell.episodes, &[])?;
            }
            if let Some(s) = &cell.trace {
                crate::trace::write_trace_summary(&tx, path, cell_id, s)?;
            }
        }
        // The cells' progress set the checkpoint time; the run's own wins.
        let checkpoint = meta
            .checkpoint_unix_ns
            .map(|n| to_sql(n.0, "the run's checkpoint time"))
            .transpose()?;
        tx.execute(
            "UPDATE runs SET checkpoint_unix_ns = ?2 WHERE id = ?1",
            params![id.0, checkpoint],
        )
        .map_err(err("recording the checkpoint time"))?;
        tx.commit().map_err(err("committing the run"))?;
        Ok(id)
    }
}
