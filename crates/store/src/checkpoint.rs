//! One checkpoint, one transaction.
//!
//! A checkpoint of a cell touches many tables: the metric rows (and the
//! interval each adds, for the metrics that keep one), the new
//! timeline chunks, the probe's own figures (noise, UDP, early timer
//! wake-ups), the
//! workload's characterization, the episodes found since the last one and
//! the tracer's summary. They are written together or not at all, so a
//! process killed at any instant (or a disk that fills up mid-way) leaves
//! the store at the last complete checkpoint, never at a mix of two.

use latscope_model::RunId;
pub use latscope_record::Checkpoint;

use crate::error::classify;
use crate::{CellId, Result, Store};

impl Store {
    /// Stores a whole checkpoint of `cell` in one transaction: on any error
    /// nothing of it is stored and the previous checkpoint stays intact.
    pub fn write_checkpoint(&mut self, run: RunId, cell: CellId, cp: &Checkpoint) -> Result<()> {
        let path = self.path.as_path();
        let err = |action| move |e| classify(path, action, e);
        let tx = self.db.begin().map_err(err("starting a checkpoint"))?;
        // Read before write_progress replaces the cumulative histograms
        // that each interval is the difference from.
        let before = crate::intervals::before(&tx, path, cell, &cp.metrics)?;
        crate::write_progress(
            &tx,
            path,
            run,
            cell,
            cp.duration,
            &cp.metrics,
            &cp.timeline,
            cp.now_unix,
        )?;
        if let Some(before) = before {
            crate::intervals::write_intervals(
                &tx,
                path,
                cell,
                before,
                cp.duration,
                cp.now_unix,
                &cp.metrics,
            )?;
        }
        if !cp.noise.is_empty() {
            crate::noise::write_noise_stats(&tx, path, cell, &cp.noise)?;
        }
        if !cp.timer.is_empty() {
            crate::timer::write_timer_stats(&tx, path, cell, &cp.timer)?;
        }
        if let Some(u) = &cp.udp {
            crate::udp::write_udp_stats(&tx, path, cell, u)?;
        }
        if let Some(w) = &cp.workload {
            crate::workload::write_workload_stats(&tx, path, cell, w)?;
        }
        if !cp.episodes.is_empty() || !cp.windows.is_empty() {
            crate::trace::write_episodes(&tx, path, cell, &cp.episodes, &cp.windows)?;
        }
        if let Some(s) = &cp.trace_summary {
            crate::trace::write_trace_summary(&tx, path, cell, s)?;
        }
        tx.commit().map_err(err("committing the checkpoint"))
    }
}
