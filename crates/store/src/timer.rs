//! The timer probe's early wake-ups per CPU (schema version 6).
//!
//! One row per (cell, CPU), written with upserts: each checkpoint sends the
//! counts so far and replaces the stored ones CPU by CPU, so a run killed
//! between checkpoints keeps the last complete set. A timer cell stored
//! before version 6 has no rows and reads back as an empty list.

use std::collections::BTreeSet;

use crate::db::{params, Db};
use latscope_model::{CpuId, Nanos, TimerCpuStats};

use crate::error::classify;
use crate::{require_cell_in, to_sql, CellId, Result, Store, StoreError};
use std::path::Path;

impl Store {
    /// Stores the early wake-ups of some CPUs of a cell, in one transaction.
    /// Idempotent per (cell, CPU): a CPU already stored is replaced; CPUs not
    /// given keep what they have. Giving the same CPU twice in one call is
    /// refused (nothing is stored).
    pub fn set_timer_stats(&mut self, cell: CellId, stats: &[TimerCpuStats]) -> Result<()> {
        let path = self.path.as_path();
        let tx = self
            .db
            .begin()
            .map_err(|e| classify(path, "starting a transaction", e))?;
        write_timer_stats(&tx, path, cell, stats)?;
        tx.commit()
            .map_err(|e| classify(path, "committing the early wake-ups", e))
    }

    /// A cell's early wake-ups, by CPU; empty for a cell of another probe or
    /// one stored before schema version 6.
    pub(crate) fn load_timer_stats(&self, cell: i64) -> Result<Vec<TimerCpuStats>> {
        let rows: Vec<(i64, i64, i64)> = self
            .collect(
                "SELECT cpu, early_wakeups, max_early_ns FROM timer_stats \
                 WHERE cell_id = ?1 ORDER BY cpu",
                [cell],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(|e| self.sql("reading the early wake-ups", e))?;
        rows.into_iter()
            .map(|(cpu, early, max)| {
                // The table's CHECKs keep these non-negative; a row that is
                // not was written by someone else.
                let bad = || {
                    self.corrupt(format!(
                        "cell {cell}: the early wake-ups stored for CPU {cpu} are negative or out of range"
                    ))
                };
                Ok(TimerCpuStats {
                    cpu: CpuId(u32::try_from(cpu).map_err(|_| bad())?),
                    early_wakeups: u64::try_from(early).map_err(|_| bad())?,
                    max_early_ns: Nanos(u64::try_from(max).map_err(|_| bad())?),
                })
            })
            .collect()
    }
}

/// [`Store::set_timer_stats`] inside the caller's transaction.
pub(crate) fn write_timer_stats(
    tx: &Db,
    path: &Path,
    cell: CellId,
    stats: &[TimerCpuStats],
) -> Result<()> {
    let mut seen = BTreeSet::new();
    let mut rows = Vec::with_capacity(stats.len());
    for s in stats {
        if !seen.insert(s.cpu) {
            return Err(StoreError::InvalidTimerStats {
                cpu: s.cpu.0,
                reason: "the CPU is given twice in one call".to_string(),
            });
        }
        rows.push((
            s.cpu.0,
            to_sql(s.early_wakeups, "the count of early wake-ups")?,
            to_sql(s.max_early_ns.0, "the largest earliness of a wake-up")?,
        ));
    }

    let err = |action| move |e| classify(path, action, e);
    require_cell_in(tx, path, cell)?;
    {
        let mut upsert = tx
            .prepare_cached(
                "INSERT INTO timer_stats (cell_id, cpu, early_wakeups, max_early_ns) \
                     VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (cell_id, cpu) DO UPDATE SET \
                     early_wakeups = excluded.early_wakeups, \
                     max_early_ns = excluded.max_early_ns",
            )
            .map_err(err("saving the early wake-ups"))?;
        for (cpu, early, max) in &rows {
            upsert
                .execute(params![cell.0, cpu, early, max])
                .map_err(err("saving the early wake-ups of a CPU"))?;
        }
    }
    Ok(())
}
