//! The noise probe's per-CPU figures (schema version 3).
//!
//! One row per (cell, CPU), written with upserts: each checkpoint sends the
//! figures measured so far and replaces the stored ones CPU by CPU, so a run
//! killed between checkpoints keeps the last complete set.

use std::collections::BTreeSet;

use crate::db::{params, Db};
use latscope_model::{NoiseCpuStats, RunId};

use crate::error::classify;
use crate::{encode_json, require_cell_in, CellId, Result, Store, StoreError};
use std::path::Path;

impl Store {
    /// Stores the noise probe's figures for some CPUs of a cell, in one
    /// transaction. Idempotent per (cell, CPU): a CPU already stored is
    /// replaced by the figures given; CPUs not given keep what they have.
    /// Giving the same CPU twice in one call is refused (nothing is stored).
    pub fn set_noise_stats(&mut self, cell: CellId, stats: &[NoiseCpuStats]) -> Result<()> {
        let path = self.path.as_path();
        let tx = self
            .db
            .begin()
            .map_err(|e| classify(path, "starting a transaction", e))?;
        write_noise_stats(&tx, path, cell, stats)?;
        tx.commit()
            .map_err(|e| classify(path, "committing the noise figures", e))
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

/// [`Store::set_noise_stats`] inside the caller's transaction.
pub(crate) fn write_noise_stats(
    tx: &Db,
    path: &Path,
    cell: CellId,
    stats: &[NoiseCpuStats],
) -> Result<()> {
    let mut seen = BTreeSet::new();
    let mut rows = Vec::with_capacity(stats.len());
    for s in stats {
        if !seen.insert(s.cpu) {
            return Err(StoreError::InvalidNoiseStats {
                cpu: s.cpu.0,
                reason: "the CPU is given twice in one call".to_string(),
            });
        }
        rows.push((s.cpu.0, encode_json(path, s, "the noise figures")?));
    }

    let err = |action| move |e| classify(path, action, e);
    require_cell_in(tx, path, cell)?;
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
    Ok(())
}
