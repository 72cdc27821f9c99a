//! The monitor's rolling windows (schema version 10): one histogram per
//! minute and per hour for each metric and CPU of a monitor run, and the
//! retention that keeps a year of monitoring bounded.

use crate::db::{params, Value};
use latscope_model::{CpuId, Nanos, RunId};
use latscope_record::Histogram;

use crate::codec::{cpu_from_sql, cpu_to_sql};
use crate::{to_sql, Result, Store};

/// The length of a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Span {
    Minute,
    Hour,
}

impl Span {
    pub fn as_str(self) -> &'static str {
        match self {
            Span::Minute => "minute",
            Span::Hour => "hour",
        }
    }

    /// The window's length.
    pub fn length(self) -> Nanos {
        match self {
            Span::Minute => Nanos::from_secs(60),
            Span::Hour => Nanos::from_secs(3600),
        }
    }

    /// The start of the window holding `t` (Unix time, aligned to whole
    /// minutes or hours as the wall clock counts them).
    pub fn start_of(self, t: Nanos) -> Nanos {
        let len = self.length().0;
        Nanos(t.0 - t.0 % len)
    }
}

/// One stored window: what a metric on a CPU did in that minute or hour.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub span: Span,
    pub start_unix: Nanos,
    pub metric: String,
    pub cpu: Option<CpuId>,
    pub histogram: Histogram,
}

impl Store {
    /// Writes a window, replacing what was stored for the same run, span,
    /// start, metric and CPU (a window is written again at every
    /// checkpoint until it closes, so a crash loses at most one
    /// checkpoint interval of it).
    pub fn put_window(&mut self, run: RunId, w: &Window) -> Result<()> {
        let start = to_sql(w.start_unix.0, "a window's start")?;
        let samples = to_sql(w.histogram.count(), "a window's sample count")?;
        let max = w
            .histogram
            .max()
            .map(|m| to_sql(m.0, "a window's maximum"))
            .transpose()?;
        self.db
            .execute(
                "INSERT INTO monitor_windows \
                 (run_id, span, start_unix_ns, name, cpu, histogram, samples, max_ns) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                 ON CONFLICT (run_id, span, start_unix_ns, name, cpu) DO UPDATE SET \
                 histogram = excluded.histogram, samples = excluded.samples, \
                 max_ns = excluded.max_ns",
                params![
                    run.0,
                    w.span.as_str(),
                    start,
                    w.metric,
                    cpu_to_sql(w.cpu),
                    w.histogram.to_bytes(),
                    samples,
                    max
                ],
            )
            .map_err(|e| self.sql("writing a monitor window", e))?;
        Ok(())
    }

    /// [`Store::put_window`] for every window of a checkpoint in one
    /// statement (one round trip to a PostgreSQL server instead of one per
    /// window; a statement per 3,750 windows beyond). The windows must
    /// differ in span, start, metric or CPU.
    pub fn put_windows(&mut self, run: RunId, windows: &[Window]) -> Result<()> {
        if windows.is_empty() {
            return Ok(());
        }
        let mut values = Vec::with_capacity(windows.len() * 8);
        for w in windows {
            let max = w
                .histogram
                .max()
                .map(|m| to_sql(m.0, "a window's maximum"))
                .transpose()?;
            values.extend([
                Value::Int(run.0),
                Value::Text(w.span.as_str().to_string()),
                Value::Int(to_sql(w.start_unix.0, "a window's start")?),
                Value::Text(w.metric.clone()),
                Value::Int(cpu_to_sql(w.cpu)),
                Value::Blob(w.histogram.to_bytes()),
                Value::Int(to_sql(w.histogram.count(), "a window's sample count")?),
                max.map_or(Value::Null, Value::Int),
            ]);
        }
        self.db
            .insert_rows(
                "INSERT INTO monitor_windows \
                 (run_id, span, start_unix_ns, name, cpu, histogram, samples, max_ns)",
                "ON CONFLICT (run_id, span, start_unix_ns, name, cpu) DO UPDATE SET \
                 histogram = excluded.histogram, samples = excluded.samples, \
                 max_ns = excluded.max_ns",
                8,
                &values,
            )
            .map_err(|e| self.sql("writing the monitor windows", e))?;
        Ok(())
    }

    /// The start and largest value of every window of one span and metric
    /// (all CPUs), in time order, without decoding a histogram: what the
    /// worst case per hour, day and week needs. A window with no sample has
    /// no maximum and is left out.
    pub fn window_maxima(
        &self,
        run: RunId,
        span: Span,
        metric: &str,
    ) -> Result<Vec<(Nanos, Nanos)>> {
        let rows: Vec<(i64, i64)> = self
            .collect(
                "SELECT start_unix_ns, max_ns FROM monitor_windows \
                 WHERE run_id = ?1 AND span = ?2 AND name = ?3 AND max_ns IS NOT NULL \
                 ORDER BY start_unix_ns",
                params![run.0, span.as_str(), metric],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.sql("reading monitor windows", e))?;
        Ok(rows
            .into_iter()
            .map(|(s, m)| {
                (
                    Nanos(u64::try_from(s).unwrap_or(0)),
                    Nanos(u64::try_from(m).unwrap_or(0)),
                )
            })
            .collect())
    }

    /// The windows of a run of one span starting at or after `since`, in
    /// time order (then metric and CPU).
    pub fn windows(&self, run: RunId, span: Span, since: Nanos) -> Result<Vec<Window>> {
        let mut out = Vec::new();
        self.visit_windows(run, span, since, |w| out.push(w))?;
        Ok(out)
    }

    /// [`Store::windows`] one at a time, each decoded only when it is
    /// visited: a reader that merges them holds one at a time.
    pub fn visit_windows(
        &self,
        run: RunId,
        span: Span,
        since: Nanos,
        mut visit: impl FnMut(Window),
    ) -> Result<()> {
        let since = to_sql(since.0, "a window's start")?;
        let mut stmt = self
            .db
            .prepare(
                "SELECT start_unix_ns, name, cpu, histogram FROM monitor_windows \
                 WHERE run_id = ?1 AND span = ?2 AND start_unix_ns >= ?3 \
                 ORDER BY start_unix_ns, name, cpu",
            )
            .map_err(|e| self.sql("reading monitor windows", e))?;
        let rows = stmt
            .query_map(params![run.0, span.as_str(), since], |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<String>(1)?,
                    r.get::<i64>(2)?,
                    r.get::<Vec<u8>>(3)?,
                ))
            })
            .map_err(|e| self.sql("reading monitor windows", e))?;
        for row in rows {
            let (start, metric, cpu, blob) =
                row.map_err(|e| self.sql("reading monitor windows", e))?;
            let histogram = Histogram::from_bytes(&blob).map_err(|e| {
                self.corrupt(format!(
                    "the {} window of {metric} at {start}: {e}",
                    span.as_str()
                ))
            })?;
            visit(Window {
                span,
                start_unix: Nanos(u64::try_from(start).unwrap_or(0)),
                cpu: cpu_from_sql(cpu).ok_or_else(|| {
                    self.corrupt(format!(
                        "the {} window of {metric}: CPU {cpu}",
                        span.as_str()
                    ))
                })?,
                metric,
                histogram,
            });
        }
        Ok(())
    }

    /// The start of the run's latest window of `span`, if it has any.
    pub fn last_window_start(&self, run: RunId, span: Span) -> Result<Option<Nanos>> {
        let last: Option<i64> = self
            .db
            .query_row(
                "SELECT max(start_unix_ns) FROM monitor_windows WHERE run_id = ?1 AND span = ?2",
                params![run.0, span.as_str()],
                |r| r.get(0),
            )
            .map_err(|e| self.sql("reading monitor windows", e))?;
        Ok(last.map(|n| Nanos(u64::try_from(n).unwrap_or(0))))
    }

    /// Deletes every window of `span` (of any run) that started before
    /// `before`; returns how many.
    pub fn prune_windows(&mut self, span: Span, before: Nanos) -> Result<usize> {
        let before = to_sql(before.0, "a retention limit")?;
        self.db
            .execute(
                "DELETE FROM monitor_windows WHERE span = ?1 AND start_unix_ns < ?2",
                params![span.as_str(), before],
            )
            .map_err(|e| self.sql("deleting old monitor windows", e))
    }

    /// Deletes the timeline seconds of a cell that ended before second
    /// `before` of the cell (seconds count from the cell's start); returns
    /// how many chunks. Readers see the deleted seconds as empty ones.
    pub fn prune_timeline(&mut self, cell: crate::CellId, before_second: u64) -> Result<usize> {
        let before = to_sql(before_second, "a retention limit")?;
        self.db
            .execute(
                "DELETE FROM timeline_chunks WHERE cell_id = ?1 AND first_second + seconds <= ?2",
                params![cell.0, before],
            )
            .map_err(|e| self.sql("deleting old timeline seconds", e))
    }
}
