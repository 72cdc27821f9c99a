//! Microbenchmark results (schema version 9): one cell per benchmark with
//! its [`MicroResult`] as JSON beside it, and one [`MicroContext`] per run.

use crate::db::{params, OptionalExt};
use latscope_model::{CellMeta, CellSettings, MicroContext, MicroResult, RunId};

use crate::error::StoreError;
use crate::{CellId, Result, Store};

/// A micro run's results as stored: the context and, in cell order, each
/// benchmark's settings and result.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroRun {
    pub context: Option<MicroContext>,
    pub cells: Vec<(CellMeta, MicroResult)>,
}

impl MicroRun {
    /// The benchmarks' results, in cell order.
    pub fn results(&self) -> Vec<MicroResult> {
        self.cells.iter().map(|(_, r)| r.clone()).collect()
    }
}

impl Store {
    /// Records the run's micro context (replacing an earlier one).
    pub fn set_micro_context(&mut self, run: RunId, context: &MicroContext) -> Result<()> {
        let text = self.json(context, "the micro context")?;
        self.require_run(run)?;
        self.db
            .execute(
                "INSERT INTO micro_context (run_id, context) VALUES (?1, ?2) \
                 ON CONFLICT (run_id) DO UPDATE SET context = excluded.context",
                params![run.0, text],
            )
            .map_err(|e| self.sql("recording the micro context", e))?;
        Ok(())
    }

    /// Adds a micro cell and its result in one transaction: a benchmark is
    /// stored whole or not at all. The cell's settings must be
    /// [`CellSettings::Micro`].
    pub fn add_micro_cell(
        &mut self,
        run: RunId,
        meta: &CellMeta,
        result: &MicroResult,
    ) -> Result<CellId> {
        if !matches!(meta.settings, CellSettings::Micro(_)) || meta.probe != "micro" {
            return Err(StoreError::MismatchedSettings {
                probe: meta.probe.clone(),
                settings: meta.settings.probe_name(),
            });
        }
        let text = self.json(result, "the micro result")?;
        // The cell and its result are one write.
        let path = self.path.as_path();
        let tx = self
            .db
            .begin()
            .map_err(|e| crate::error::classify(path, "starting a transaction", e))?;
        let cell = crate::insert_cell(&tx, path, run, meta)?;
        tx.execute(
            "INSERT INTO micro_results (cell_id, result) VALUES (?1, ?2)",
            params![cell.0, text],
        )
        .map_err(|e| crate::error::classify(path, "recording the micro result", e))?;
        tx.commit()
            .map_err(|e| crate::error::classify(path, "committing the micro result", e))?;
        Ok(cell)
    }

    /// The micro results of a run; `None` when it has no micro cell.
    pub fn load_micro(&self, run: RunId) -> Result<Option<MicroRun>> {
        let result = self.load_run(run)?;
        let mut cells = Vec::new();
        for (id, cell) in self.cell_ids(run)?.into_iter().zip(result.cells) {
            if cell.meta.probe != "micro" {
                continue;
            }
            let text: Option<String> = self
                .db
                .query_row(
                    "SELECT result FROM micro_results WHERE cell_id = ?1",
                    [id.0],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| self.sql("reading a micro result", e))?;
            let text = text.ok_or_else(|| {
                self.corrupt(format!(
                    "run {run}: micro cell {} has no result",
                    cell.meta.index
                ))
            })?;
            let r: MicroResult = serde_json::from_str(&text).map_err(|e| {
                self.corrupt(format!(
                    "run {run}: the result of micro cell {} is unreadable ({e})",
                    cell.meta.index
                ))
            })?;
            cells.push((cell.meta, r));
        }
        if cells.is_empty() {
            return Ok(None);
        }
        let context: Option<String> = self
            .db
            .query_row(
                "SELECT context FROM micro_context WHERE run_id = ?1",
                [run.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql("reading the micro context", e))?;
        let context = context
            .map(|t| self.parse_json(&t, "micro context", run))
            .transpose()?;
        Ok(Some(MicroRun { context, cells }))
    }
}
