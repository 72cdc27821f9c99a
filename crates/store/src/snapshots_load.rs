//! Reading a cell's stored snapshots: the store's methods over
//! [`crate::snapshots`], apart from the writing its checkpoints use.

use latscope_record::MetricResult;

use crate::codec::cpu_from_sql;
use crate::error::Result;
use crate::ids::CellId;
use crate::snapshots::Snapshot;
use crate::Store;

impl Store {
    /// The snapshots of `cell`, oldest first; empty for a cell stored
    /// before schema version 8.
    pub fn load_snapshots(&self, cell: CellId) -> Result<Vec<Snapshot>> {
        self.load_snapshots_where(cell, |_| true)
    }

    /// The snapshots of `cell` holding only the metrics named in `names`,
    /// oldest first: the others are not decoded, which keeps a long run's
    /// 128 checkpoints of every metric out of memory when a reader needs
    /// one or two of them (the forecast).
    pub fn load_snapshots_of(&self, cell: CellId, names: &[&str]) -> Result<Vec<Snapshot>> {
        self.load_snapshots_where(cell, |name| names.contains(&name))
    }

    /// The snapshots of the metrics `wanted` accepts, as
    /// [`Store::load_snapshots_of`].
    pub fn load_snapshots_where(
        &self,
        cell: CellId,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<Vec<Snapshot>> {
        self.require_cell(cell)?;
        let rows: Vec<(i64, String, i64, Vec<u8>)> = self
            .collect(
                "SELECT at_ns, name, cpu, histogram FROM metric_snapshots \
                 WHERE cell_id = ?1 ORDER BY at_ns, name, cpu",
                [cell.0],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .map_err(|e| self.sql("reading the snapshots", e))?;
        let mut out: Vec<Snapshot> = Vec::new();
        for (at, name, cpu, blob) in rows.into_iter().filter(|r| wanted(&r.1)) {
            let at = self.nanos(at, "a snapshot's time")?;
            let cpu = cpu_from_sql(cpu).ok_or_else(|| {
                self.corrupt(format!(
                    "snapshot of {name} in cell {} has CPU {cpu}",
                    cell.0
                ))
            })?;
            let histogram = crate::codec::decode_histogram(&blob)
                .map_err(|e| self.corrupt(format!("snapshot of {name} in cell {}: {e}", cell.0)))?;
            let metric = MetricResult {
                histogram,
                ..MetricResult::new(&name, cpu)
            };
            match out.last_mut() {
                Some(s) if s.at == at => s.metrics.push(metric),
                _ => out.push(Snapshot {
                    at,
                    metrics: vec![metric],
                }),
            }
        }
        Ok(out)
    }
}
