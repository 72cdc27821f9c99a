//! Episodes, their event windows and the tracer's summary (schema version 2).
//!
//! Episodes and windows are keyed by (cell, seq) and written with upserts,
//! never delete-and-insert: a checkpoint that sends an episode again (with
//! stack counts filled in, say) updates it in place and keeps its window.

use crate::db::{params, Db, OptionalExt};
use latscope_model::{CpuId, Episode, EpisodeWindow, RunId, TraceSummary};

use crate::codec::{decode_window_events, encode_window_events};
use crate::error::classify;
use crate::{encode_json, require_cell_in};
use crate::{to_sql, CellId, Result, Store, StoreError};
use std::path::Path;

/// An `episodes` row as SQLite returns it.
struct RawEpisode {
    seq: i64,
    cpu: i64,
    expiry: i64,
    offset: i64,
    metric: String,
    latency: i64,
    breakdown: String,
    stacks: String,
}

impl Store {
    /// Stores a cell's episodes and the event windows kept for some of them,
    /// in one transaction. Idempotent per (cell, seq): an episode or window
    /// already stored is replaced by the one given. Every window must belong
    /// to an episode given here or stored before.
    pub fn add_episodes(
        &mut self,
        cell: CellId,
        episodes: &[Episode],
        windows: &[EpisodeWindow],
    ) -> Result<()> {
        let path = self.path.as_path();
        let tx = self
            .db
            .begin()
            .map_err(|e| classify(path, "starting a transaction", e))?;
        write_episodes(&tx, path, cell, episodes, windows)?;
        tx.commit()
            .map_err(|e| classify(path, "committing the episodes", e))
    }

    /// Sets (or replaces) the tracer's summary of a cell.
    pub fn set_trace_summary(&mut self, cell: CellId, summary: &TraceSummary) -> Result<()> {
        write_trace_summary(&self.db, &self.path, cell, summary)
    }

    /// The event window kept for episode `seq` of a run; `None` when the
    /// run has no such episode or its window was not kept (past the cap).
    /// Should two cells of the run both have a `seq` (they are numbered per
    /// run, so only a foreign writer would do that), the first cell's wins.
    pub fn load_episode_window(&self, run: RunId, seq: u32) -> Result<Option<EpisodeWindow>> {
        self.require_run(run)?;
        let row: Option<(i64, i64, Vec<u8>, i64)> = self
            .db
            .query_row(
                "SELECT c.id, w.cpu, w.events, w.truncated FROM episode_windows w \
                 JOIN cells c ON c.id = w.cell_id \
                 WHERE c.run_id = ?1 AND w.seq = ?2 ORDER BY c.idx LIMIT 1",
                params![run.0, seq],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(|e| self.sql("reading an event window", e))?;
        let Some((cell, cpu, blob, truncated)) = row else {
            return Ok(None);
        };
        let what = |reason: String| {
            self.corrupt(format!(
                "the event window of episode {seq} in cell {cell}: {reason}"
            ))
        };
        let cpu = u32::try_from(cpu).map_err(|_| what(format!("it has CPU {cpu}")))?;
        let events = decode_window_events(&blob).map_err(what)?;
        Ok(Some(EpisodeWindow {
            seq,
            cpu: CpuId(cpu),
            events,
            truncated: self.count(truncated, "a window's truncated count")?,
        }))
    }

    /// A cell's trace summary, if the cell was traced.
    pub(crate) fn load_trace_summary(&self, cell: i64, run: RunId) -> Result<Option<TraceSummary>> {
        let text: Option<String> = self
            .db
            .query_row(
                "SELECT summary FROM trace_summaries WHERE cell_id = ?1",
                [cell],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql("reading the trace summary", e))?;
        text.map(|t| self.parse_json(&t, "trace summary", run))
            .transpose()
    }

    /// A cell's episodes, by seq.
    pub(crate) fn load_episodes(&self, cell: i64, run: RunId) -> Result<Vec<Episode>> {
        let rows = self
            .collect(
                "SELECT seq, cpu, expiry_ns, offset_ns, metric, latency_ns, breakdown, stacks \
                 FROM episodes WHERE cell_id = ?1 ORDER BY seq",
                [cell],
                |r| {
                    Ok(RawEpisode {
                        seq: r.get(0)?,
                        cpu: r.get(1)?,
                        expiry: r.get(2)?,
                        offset: r.get(3)?,
                        metric: r.get(4)?,
                        latency: r.get(5)?,
                        breakdown: r.get(6)?,
                        stacks: r.get(7)?,
                    })
                },
            )
            .map_err(|e| self.sql("reading the episodes", e))?;
        rows.into_iter()
            .map(|raw| {
                let seq = u32::try_from(raw.seq).map_err(|_| {
                    self.corrupt(format!("cell {cell} has an episode numbered {}", raw.seq))
                })?;
                let cpu = u32::try_from(raw.cpu).map_err(|_| {
                    self.corrupt(format!("episode {seq} of cell {cell} has CPU {}", raw.cpu))
                })?;
                Ok(Episode {
                    seq,
                    cpu: CpuId(cpu),
                    metric: raw.metric,
                    expiry_ns: self.nanos(raw.expiry, "an episode's expiry")?,
                    offset_ns: self.nanos(raw.offset, "an episode's offset")?,
                    latency_ns: self.nanos(raw.latency, "an episode's latency")?,
                    breakdown: self.parse_json(
                        &raw.breakdown,
                        &format!("breakdown of episode {seq}"),
                        run,
                    )?,
                    stacks: self.parse_json(
                        &raw.stacks,
                        &format!("stack counts of episode {seq}"),
                        run,
                    )?,
                })
            })
            .collect()
    }
}

/// [`Store::add_episodes`] inside the caller's transaction.
pub(crate) fn write_episodes(
    tx: &Db,
    path: &Path,
    cell: CellId,
    episodes: &[Episode],
    windows: &[EpisodeWindow],
) -> Result<()> {
    let mut rows = Vec::with_capacity(episodes.len());
    for e in episodes {
        if e.seq == 0 {
            return Err(StoreError::InvalidEpisode {
                seq: 0,
                reason: "episodes are numbered from 1".to_string(),
            });
        }
        rows.push((
            e,
            to_sql(e.expiry_ns.0, "an episode's expiry")?,
            to_sql(e.offset_ns.0, "an episode's offset")?,
            to_sql(e.latency_ns.0, "an episode's latency")?,
            encode_json(path, &e.breakdown, "an episode's breakdown")?,
            encode_json(path, &e.stacks, "an episode's stack counts")?,
        ));
    }
    let mut blobs = Vec::with_capacity(windows.len());
    for w in windows {
        let blob =
            encode_window_events(&w.events).map_err(|reason| StoreError::InvalidEpisode {
                seq: w.seq,
                reason: format!("cannot encode its event window ({reason})"),
            })?;
        blobs.push((
            w,
            blob,
            to_sql(w.events.len() as u64, "a window's event count")?,
            to_sql(w.truncated, "a window's truncated count")?,
        ));
    }

    let err = |action| move |e| classify(path, action, e);
    require_cell_in(tx, path, cell)?;
    {
        let mut upsert = tx
            .prepare_cached(
                "INSERT INTO episodes (cell_id, seq, cpu, expiry_ns, offset_ns, metric, \
                     latency_ns, breakdown, stacks) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
                     ON CONFLICT (cell_id, seq) DO UPDATE SET cpu = excluded.cpu, \
                     expiry_ns = excluded.expiry_ns, offset_ns = excluded.offset_ns, \
                     metric = excluded.metric, latency_ns = excluded.latency_ns, \
                     breakdown = excluded.breakdown, stacks = excluded.stacks",
            )
            .map_err(err("saving the episodes"))?;
        for (e, expiry, offset, latency, breakdown, stacks) in &rows {
            upsert
                .execute(params![
                    cell.0, e.seq, e.cpu.0, expiry, offset, e.metric, latency, breakdown, stacks,
                ])
                .map_err(err("saving an episode"))?;
        }
        let mut has_episode = tx
            .prepare_cached("SELECT 1 FROM episodes WHERE cell_id = ?1 AND seq = ?2")
            .map_err(err("saving the event windows"))?;
        let mut upsert = tx
            .prepare_cached(
                "INSERT INTO episode_windows (cell_id, seq, cpu, event_count, events, \
                     truncated) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                     ON CONFLICT (cell_id, seq) DO UPDATE SET cpu = excluded.cpu, \
                     event_count = excluded.event_count, events = excluded.events, \
                     truncated = excluded.truncated",
            )
            .map_err(err("saving the event windows"))?;
        for (w, blob, count, truncated) in &blobs {
            let found = has_episode
                .query_row(params![cell.0, w.seq], |_| Ok(()))
                .optional()
                .map_err(err("looking up an episode"))?;
            if found.is_none() {
                return Err(StoreError::WindowWithoutEpisode { cell, seq: w.seq });
            }
            upsert
                .execute(params![cell.0, w.seq, w.cpu.0, count, blob, truncated])
                .map_err(err("saving an event window"))?;
        }
    }
    Ok(())
}

/// [`Store::set_trace_summary`] inside the caller's transaction (or on its own).
pub(crate) fn write_trace_summary(
    tx: &Db,
    path: &Path,
    cell: CellId,
    summary: &TraceSummary,
) -> Result<()> {
    let json = encode_json(path, summary, "the trace summary")?;
    require_cell_in(tx, path, cell)?;
    tx.execute(
        "INSERT INTO trace_summaries (cell_id, summary) VALUES (?1, ?2) \
         ON CONFLICT (cell_id) DO UPDATE SET summary = excluded.summary",
        params![cell.0, json],
    )
    .map_err(|e| classify(path, "saving the trace summary", e))?;
    Ok(())
}
