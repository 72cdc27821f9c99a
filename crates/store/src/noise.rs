//! The noise probe's per-CPU figures (schema version 3).
//!
//! One row per (cell, CPU), written with upserts: each checkpoint sends the
//! figures measured so far and replaces the stored ones CPU by CPU, so a run
//! killed between checkpoints keeps the last complete set.

use std::collections::BTreeSet;

use latscope_model::{NoiseCpuStats, RunId};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use crate::error::classify;
use crate::{CellId, Result, Store, StoreError};

impl Store {
    /// Stores the noise probe's figures for some CPUs of a cell, in one
    /// transaction. Idempotent per (cell, CPU): a CPU already stored is
    /// replaced by the figures given; CPUs not given keep what they have.
    /// Giving the same CPU twice in one call is refused (nothing is stored).
    pub fn set_noise_stats(&mut self, cell: CellId, stats: &[NoiseCpuStats]) -> Result<()> {
        let mut seen = BTreeSet::new();
        let mut rows = Vec::with_capacity(stats.len());
        for s in stats {
            if !seen.insert(s.cpu) {
                return Err(StoreError::InvalidNoiseStats {
                    cpu: s.cpu.0,
                    reason: "the CPU is given twice in one call".to_string(),
                });
            }
            rows.push((s.cpu.0, self.json(s, "the noise figures")?));
        }

        let path = self.path.as_path();
        let err = |action| move |e| classify(path, action, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err("starting a transaction"))?;
        let exists = tx
            .query_row("SELECT 1 FROM cells WHERE id = ?1", [cell.0], |_| Ok(()))
            .optional()
            .map_err(err("looking up the cell"))?;
        if exists.is_none() {
            return Err(StoreError::NoSuchCell(cell));
        }
        {
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO noise_stats (cell_id, cpu, stats) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (cell_id, cpu) DO UPDATE SET stats = excluded.stats",
                )
                .map_err(err("saving the noise figures"))?;
            for (cpu, json) in &rows {
                upsert
                    .execute(params![cell.0, cpu, json])
                    .map_err(err("saving the noise figures of a CPU"))?;
            }
        }
        tx.commit().map_err(err("committing the noise figures"))
    }

    /// A cell's noise figures, by CPU; empty for a cell of another probe.
    pub(crate) fn load_noise_stats(&self, cell: i64, run: RunId) -> Result<Vec<NoiseCpuStats>> {
        let rows: Vec<(i64, String)> = self
            .collect(
                "SELECT cpu, stats FROM noise_stats WHERE cell_id = ?1 ORDER BY cpu",
                [cell],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.sql("reading the noise figures", e))?;
        rows.into_iter()
            .map(|(cpu, text)| {
                let stats: NoiseCpuStats = self.parse_json(
                    &text,
                    &format!("noise figures of CPU {cpu} in cell {cell}"),
                    run,
                )?;
                // The column is what the rows are keyed and ordered by; a
                // disagreement means someone else wrote the row.
                if i64::from(stats.cpu.0) != cpu {
                    return Err(self.corrupt(format!(
                        "run {run}: the noise figures stored for CPU {cpu} in cell {cell} are those of CPU {}",
                        stats.cpu
                    )));
                }
                Ok(stats)
            })
            .collect()
    }
}
