//! One interval histogram per checkpoint (schema version 13): what each
//! stored checkpoint of a cell added to a metric on a CPU, so that an
//! HdrHistogram interval log has one interval per checkpoint (as jHiccup's
//! logs have one per reporting interval) and the report can show
//! percentiles over time.
//!
//! # What is kept
//!
//! Only the metrics that the log and the percentiles over time are for:
//! [`keeps_intervals`] (`timer.latency`, `noise.gap`, `udp.*`). The tracer's
//! per-source series (an interrupt line, a softirq vector: some 60 of them
//! here with `--trace`) stay cumulative, as in the monitor's windows.
//!
//! # How an interval is made
//!
//! Inside the checkpoint's transaction, before the `metrics` rows are
//! replaced, the cell's stored cumulative histograms are read: the new
//! cumulative one less the stored one ([`Histogram::since`]) is the
//! interval. A checkpoint the store refused leaves `metrics` as it was, so
//! the next one's interval spans both and the intervals still add up to the
//! cumulative histogram exactly. A checkpoint at the same measured time as
//! the one before (the final one of a cell whose last periodic checkpoint
//! came at its planned end) adds its samples to that interval instead of
//! making one of no length. A cumulative histogram that went backwards
//! (which no probe does) starts afresh, as a counter reset does in
//! Prometheus.
//!
//! # Encoding
//!
//! zlib over latscope's LSH1 form (`Histogram::to_bytes`, the non-empty
//! buckets as LEB128 (gap, count) pairs). LSH1 alone is compact in the
//! number of buckets, but an interval's pairs are mostly small gaps and
//! counts of 1 or 2, which deflate codes in a few bits: measured on this
//! VM's `timer.latency` intervals, zlib keeps 40 % of LSH1 for 1 s
//! intervals and 38 % for 10 s ones (docs/architecture.md has the
//! figures). A blob that starts with LSH1's magic is read as it is.

use std::path::Path;

use crate::db::{params, Db, OptionalExt};
use latscope_model::{metric, Nanos, RunId};
use latscope_record::{Histogram, Interval, IntervalSeries, MetricResult};

use crate::codec::{
    cpu_from_sql, cpu_to_sql, decode_histogram as decode, encode_histogram as encode, too_large,
    MAX_LSH1_BYTES,
};
use crate::error::classify;
use crate::{to_sql, CellId, Result, Store, StoreError};

/// Whether the checkpoints keep intervals of `metric`: the probes' own
/// latency figures, which the HdrHistogram log and the percentiles over
/// time are for.
pub fn keeps_intervals(name: &str) -> bool {
    name == metric::TIMER_LATENCY || name == metric::NOISE_GAP || name.starts_with("udp.")
}

/// Room left in the output before each step of [`Inflater::inflate`].
const MIN_ROOM: usize = 32 * 1024;

/// [`crate::codec::inflate_histogram`] for many blobs in a row: one
/// decompressor and one output buffer for all of them. A month-long
/// monitor's report inflates tens of thousands; a reader and a fresh
/// buffer each spent a tenth of its time allocating and copying.
struct Inflater {
    zlib: flate2::Decompress,
    out: Vec<u8>,
}

impl Inflater {
    fn new() -> Inflater {
        Inflater {
            zlib: flate2::Decompress::new(true),
            out: Vec::with_capacity(64 * 1024),
        }
    }

    /// `blob`'s LSH1 form, valid until the next call.
    fn inflate<'a>(&'a mut self, blob: &'a [u8]) -> Result<&'a [u8], String> {
        if blob.starts_with(b"LSH1") {
            return Ok(blob);
        }
        self.zlib.reset(true);
        self.out.clear();
        loop {
            let read = usize::try_from(self.zlib.total_in()).unwrap_or(usize::MAX);
            let before = (read, self.out.len());
            let status = self
                .zlib
                .decompress_vec(
                    blob.get(read..).unwrap_or_default(),
                    &mut self.out,
                    flate2::FlushDecompress::None,
                )
                .map_err(|e| format!("cannot inflate it ({e})"))?;
            if self.out.len() as u64 > MAX_LSH1_BYTES {
                return Err(too_large());
            }
            if status == flate2::Status::StreamEnd {
                return Ok(&self.out);
            }
            let now = usize::try_from(self.zlib.total_in()).unwrap_or(usize::MAX);
            let room = self.out.capacity() - self.out.len();
            if (now, self.out.len()) == before && room >= MIN_ROOM {
                return Err("cannot inflate it (the stream ends early)".to_string());
            }
            if room < MIN_ROOM {
                self.out.reserve(self.out.capacity().max(MIN_ROOM));
            }
        }
    }
}

/// A cell's latest interval bounds (`interval_marks`), as SQL integers.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    start: i64,
    end: i64,
    start_unix: i64,
    end_unix: i64,
}

/// What the store holds for a cell before a checkpoint replaces it: its
/// latest interval bounds and the cumulative histograms of the metrics
/// that keep intervals.
pub(crate) struct Before {
    mark: Option<Bounds>,
    /// The cell's stored measured time: where a cell without a mark but
    /// with stored metrics (checkpointed before schema version 13) starts
    /// its first interval.
    duration: i64,
    previous: Vec<(String, i64, Histogram)>,
}

/// Reads what [`write_intervals`] needs, inside the checkpoint's
/// transaction and before `metrics` is replaced; nothing when the
/// checkpoint has no metric that keeps intervals.
pub(crate) fn before(
    tx: &Db,
    path: &Path,
    cell: CellId,
    metrics: &[MetricResult],
) -> Result<Option<Before>> {
    if !metrics.iter().any(|m| keeps_intervals(&m.name)) {
        return Ok(None);
    }
    let err = |action| move |e| classify(path, action, e);
    let mark = tx
        .query_row(
            "SELECT start_ns, end_ns, start_unix_ns, end_unix_ns FROM interval_marks \
             WHERE cell_id = ?1",
            [cell.0],
            |r| {
                Ok(Bounds {
                    start: r.get(0)?,
                    end: r.get(1)?,
                    start_unix: r.get(2)?,
                    end_unix: r.get(3)?,
                })
            },
        )
        .optional()
        .map_err(err("reading the interval marks"))?;
    let duration: i64 = tx
        .query_row(
            "SELECT duration_ns FROM cells WHERE id = ?1",
            [cell.0],
            |r| r.get(0),
        )
        .optional()
        .map_err(err("looking up the cell"))?
        .ok_or(StoreError::NoSuchCell(cell))?;
    let mut stmt = tx
        .prepare_cached(
            "SELECT name, cpu, histogram FROM metrics WHERE cell_id = ?1 AND kind = 'raw'",
        )
        .map_err(err("reading the metrics"))?;
    let rows = stmt
        .query_map([cell.0], |r| {
            Ok((r.get::<String>(0)?, r.get::<i64>(1)?, r.get::<Vec<u8>>(2)?))
        })
        .map_err(err("reading the metrics"))?;
    let mut previous = Vec::new();
    for row in rows {
        let (name, cpu, blob) = row.map_err(err("reading the metrics"))?;
        if !keeps_intervals(&name) {
            continue;
        }
        let h = decode(&blob).map_err(|e| StoreError::Corrupt {
            path: path.to_path_buf(),
            what: format!("histogram of {name} in cell {}: {e}", cell.0),
        })?;
        previous.push((name, cpu, h));
    }
    Ok(Some(Before {
        mark,
        duration,
        previous,
    }))
}

/// Stores the interval of every metric of `metrics` that keeps intervals:
/// from the cell's previous stored checkpoint to `at` (the cell's measured
/// time) and `at_unix`, inside the checkpoint's transaction.
pub(crate) fn write_intervals(
    tx: &Db,
    path: &Path,
    cell: CellId,
    before: Before,
    at: Nanos,
    at_unix: Nanos,
    metrics: &[MetricResult],
) -> Result<()> {
    let err = |action| move |e| classify(path, action, e);
    let end = to_sql(at.0, "a checkpoint's time")?;
    let end_unix = to_sql(at_unix.0, "a checkpoint's time")?;
    let (bounds, again) = match before.mark {
        None => {
            let start = if before.previous.is_empty() {
                0
            } else {
                before.duration.clamp(0, end)
            };
            (
                Bounds {
                    start,
                    end,
                    start_unix: end_unix.saturating_sub(end - start).max(0),
                    end_unix,
                },
                false,
            )
        }
        // A wall clock stepped back must not fail the checkpoint: the
        // interval then starts where it ends.
        Some(m) if end > m.end => (
            Bounds {
                start: m.end,
                end,
                start_unix: m.end_unix.min(end_unix),
                end_unix,
            },
            false,
        ),
        Some(m) => (m, true),
    };
    for m in metrics.iter().filter(|m| keeps_intervals(&m.name)) {
        let cpu = cpu_to_sql(m.cpu);
        let stored = before
            .previous
            .iter()
            .find(|(n, c, _)| *n == m.name && *c == cpu)
            .map(|(_, _, h)| h);
        let mut delta = match stored {
            Some(p) => m.histogram.since(p).unwrap_or_else(|| m.histogram.clone()),
            None => m.histogram.clone(),
        };
        if again {
            if delta.is_empty() {
                continue;
            }
            let existing: Option<Vec<u8>> = tx
                .query_row(
                    "SELECT histogram FROM metric_intervals \
                     WHERE cell_id = ?1 AND name = ?2 AND cpu = ?3 AND end_ns = ?4",
                    params![cell.0, m.name, cpu, bounds.end],
                    |r| r.get(0),
                )
                .optional()
                .map_err(err("reading an interval"))?;
            if let Some(blob) = existing {
                let old = decode(&blob).map_err(|e| StoreError::Corrupt {
                    path: path.to_path_buf(),
                    what: format!("interval of {} in cell {}: {e}", m.name, cell.0),
                })?;
                delta.merge(&old);
            }
        }
        let samples = to_sql(delta.count(), "an interval's sample count")?;
        let blob = encode(&delta);
        let max = delta.max().map(|v| i64::try_from(v.0).unwrap_or(i64::MAX));
        tx.prepare_cached(
            "INSERT INTO metric_intervals (cell_id, name, cpu, start_ns, end_ns, start_unix_ns, \
                 end_unix_ns, samples, max_ns, histogram) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
             ON CONFLICT (cell_id, name, cpu, end_ns) DO UPDATE SET \
                 samples = excluded.samples, max_ns = excluded.max_ns, \
                 histogram = excluded.histogram",
        )
        .and_then(|mut s| {
            s.execute(params![
                cell.0,
                m.name,
                cpu,
                bounds.start,
                bounds.end,
                bounds.start_unix,
                bounds.end_unix,
                samples,
                max,
                blob,
            ])
        })
        .map_err(err("saving an interval"))?;
    }
    if !again {
        tx.execute(
            "INSERT INTO interval_marks (cell_id, start_ns, end_ns, start_unix_ns, end_unix_ns) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (cell_id) DO UPDATE SET start_ns = ?2, end_ns = ?3, \
                 start_unix_ns = ?4, end_unix_ns = ?5",
            params![
                cell.0,
                bounds.start,
                bounds.end,
                bounds.start_unix,
                bounds.end_unix
            ],
        )
        .map_err(err("saving the interval marks"))?;
    }
    Ok(())
}

/// A stored interval as read: metric, CPU, start and end (cell time, Unix
/// time), and the histogram's blob.
type IntervalRow = (String, i64, i64, i64, i64, i64, Vec<u8>);

/// An interval's bounds.
struct Span {
    start: Nanos,
    end: Nanos,
    start_unix: Nanos,
    end_unix: Nanos,
}

impl Span {
    fn with(self, histogram: Histogram) -> Interval {
        Interval {
            start: self.start,
            end: self.end,
            start_unix: self.start_unix,
            end_unix: self.end_unix,
            histogram,
        }
    }

    /// Widens `i` to hold this span too.
    fn widen(&self, i: &mut Interval) {
        i.start = i.start.min(self.start);
        i.end = i.end.max(self.end);
        i.start_unix = i.start_unix.min(self.start_unix);
        i.end_unix = i.end_unix.max(self.end_unix);
    }
}

/// Per metric: the stored interval ends in order, and so each interval's
/// group (its rank among them / the group size) when a series may hold at
/// most `max_points`.
struct Groups<'r> {
    ends: std::collections::BTreeMap<&'r str, Vec<i64>>,
    max_points: Option<usize>,
}

impl<'r> Groups<'r> {
    fn of(rows: &'r [IntervalRow], max_points: Option<usize>) -> Groups<'r> {
        let mut ends: std::collections::BTreeMap<&str, Vec<i64>> = Default::default();
        for (name, _, _, end, ..) in rows {
            ends.entry(name.as_str()).or_default().push(*end);
        }
        for e in ends.values_mut() {
            e.sort_unstable();
            e.dedup();
        }
        Groups { ends, max_points }
    }

    /// The group of the interval of `name` ending at `end`, and the size.
    fn group_of(&self, name: &str, end: i64) -> (usize, usize) {
        let Some(e) = self.ends.get(name) else {
            return (0, 1);
        };
        let size = self.max_points.map_or(1, |m| e.len().div_ceil(m).max(1));
        let rank = e.partition_point(|&x| x < end);
        (rank / size, size)
    }

    /// The checkpoints of `name` with an interval.
    fn stored(&self, name: &str) -> usize {
        self.ends.get(name).map_or(0, Vec::len)
    }
}

impl Store {
    /// The checkpoint intervals of `cell`: one series per metric and CPU
    /// (by name, then CPU with system-wide first), each in time order.
    /// `None` when the cell's checkpoints kept none: it was stored before
    /// schema version 13, or imported, or none of its metrics keeps
    /// intervals ([`keeps_intervals`]). A monitor's series start where its
    /// retention left them.
    pub fn load_intervals(&self, cell: CellId) -> Result<Option<Vec<IntervalSeries>>> {
        self.read_intervals(cell, None, false)
    }

    /// [`Store::load_intervals`] for a plot: each series at most
    /// `max_points` long, consecutive checkpoint intervals merged in groups
    /// of the smallest size that fits (the same groups on every CPU of the
    /// cell), read without building a histogram per stored interval. A
    /// 30-day monitor keeps tens of thousands of intervals per series; held
    /// whole they would take gigabytes.
    pub fn load_intervals_merged(
        &self,
        cell: CellId,
        max_points: usize,
    ) -> Result<Option<Vec<IntervalSeries>>> {
        self.read_intervals(cell, Some(max_points.max(1)), false)
    }

    /// The metrics with checkpoint intervals in `cell`, and the start of
    /// the earliest interval of the first of them (cell time, Unix time);
    /// `None` when the cell has none. Read from the key alone, without the
    /// histograms.
    pub fn interval_extent(&self, cell: CellId) -> Result<Option<(Vec<String>, Nanos, Nanos)>> {
        let names: Vec<String> = self
            .collect(
                "SELECT DISTINCT name FROM metric_intervals WHERE cell_id = ?1 ORDER BY name",
                [cell.0],
                |r| r.get(0),
            )
            .map_err(|e| self.sql("reading the interval names", e))?;
        let first: Option<(i64, i64)> = self
            .db
            .query_row(
                "SELECT start_ns, start_unix_ns FROM metric_intervals WHERE cell_id = ?1 \
                 ORDER BY name, cpu, end_ns LIMIT 1",
                [cell.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql("reading the first interval", e))?;
        let Some((start, start_unix)) = first else {
            return Ok(None);
        };
        Ok(Some((
            names,
            self.nanos(start, "an interval's start")?,
            self.nanos(start_unix, "an interval's start")?,
        )))
    }

    /// [`Store::load_intervals_merged`] with the CPUs of each metric pooled
    /// into one series (`cpu` is `None`), the intervals of one checkpoint
    /// merged as they are read: what the report's percentiles over time
    /// plot, in half the memory on two CPUs (a 30-day monitor's last day
    /// took 100 MB per CPU pair as separate series).
    pub fn load_intervals_pooled(
        &self,
        cell: CellId,
        max_points: usize,
    ) -> Result<Option<Vec<IntervalSeries>>> {
        self.read_intervals(cell, Some(max_points.max(1)), true)
    }

    fn read_intervals(
        &self,
        cell: CellId,
        max_points: Option<usize>,
        pool: bool,
    ) -> Result<Option<Vec<IntervalSeries>>> {
        let Some(index) = self.marked_cell(cell)? else {
            return Ok(None);
        };
        let rows = self.interval_rows(cell)?;
        let groups = Groups::of(&rows, max_points);
        let mut out: Vec<IntervalSeries> = Vec::new();
        // The group the last interval of `out` holds.
        let mut current_group = usize::MAX;
        // Pooled: where each group's interval is in the last series (the
        // CPUs come one after another, each from its first group).
        let mut pooled_at: std::collections::HashMap<usize, usize> = Default::default();
        let mut inflater = Inflater::new();
        for row in &rows {
            let (name, cpu, _, end, _, _, blob) = row;
            let damaged =
                |e: String| self.corrupt(format!("interval of {name} in cell {}: {e}", cell.0));
            let cpu_id = cpu_from_sql(*cpu).ok_or_else(|| {
                self.corrupt(format!(
                    "interval of {name} in cell {} has CPU {cpu}",
                    cell.0
                ))
            })?;
            let (group, size) = groups.group_of(name, *end);
            let span = self.span(row)?;
            let cpu_id = if pool { None } else { cpu_id };
            let new_series = !matches!(out.last(), Some(s) if s.metric == *name && s.cpu == cpu_id);
            if new_series {
                out.push(IntervalSeries {
                    cell: index,
                    metric: name.clone(),
                    cpu: cpu_id,
                    intervals: Vec::new(),
                    merged: size,
                    // Pooled, a checkpoint's intervals count once.
                    stored: if pool { groups.stored(name) } else { 0 },
                    window: None,
                });
                current_group = usize::MAX;
                pooled_at.clear();
            }
            let Some(series) = out.last_mut() else {
                continue;
            };
            if pool {
                let raw = inflater.inflate(blob).map_err(damaged)?;
                match pooled_at
                    .get(&group)
                    .and_then(|&i| series.intervals.get_mut(i))
                {
                    Some(i) => {
                        i.histogram
                            .merge_bytes(raw)
                            .map_err(|e| damaged(e.to_string()))?;
                        span.widen(i);
                    }
                    None => {
                        let histogram =
                            Histogram::from_bytes(raw).map_err(|e| damaged(e.to_string()))?;
                        pooled_at.insert(group, series.intervals.len());
                        series.intervals.push(span.with(histogram));
                    }
                }
                continue;
            }
            series.stored += 1;
            match series.intervals.last_mut() {
                Some(last) if group == current_group => {
                    let raw = inflater.inflate(blob).map_err(damaged)?;
                    last.histogram
                        .merge_bytes(raw)
                        .map_err(|e| damaged(e.to_string()))?;
                    last.end = span.end;
                    last.end_unix = span.end_unix;
                }
                _ => {
                    let histogram = decode(blob).map_err(damaged)?;
                    series.intervals.push(span.with(histogram));
                    current_group = group;
                }
            }
        }
        if pool {
            // A group only a later CPU had was appended after the others.
            for series in &mut out {
                series.intervals.sort_by_key(|i| i.start);
            }
        }
        Ok(Some(out))
    }

    /// The index of `cell` when it has interval marks (a cell stored
    /// before schema 13, or imported, has none: `None`).
    fn marked_cell(&self, cell: CellId) -> Result<Option<u32>> {
        let index: i64 = self
            .db
            .query_row("SELECT idx FROM cells WHERE id = ?1", [cell.0], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql("looking up the cell", e))?
            .ok_or(StoreError::NoSuchCell(cell))?;
        let index = u32::try_from(index)
            .map_err(|_| self.corrupt(format!("cell {} has index {index}", cell.0)))?;
        let marked = self
            .db
            .query_row(
                "SELECT 1 FROM interval_marks WHERE cell_id = ?1",
                [cell.0],
                |_| Ok(()),
            )
            .optional()
            .map_err(|e| self.sql("reading the interval marks", e))?
            .is_some();
        Ok(marked.then_some(index))
    }

    /// The stored intervals of `cell`, in the primary key's order: any
    /// other makes SQLite sort the blobs in a temporary tree.
    fn interval_rows(&self, cell: CellId) -> Result<Vec<IntervalRow>> {
        self.collect(
            "SELECT name, cpu, start_ns, end_ns, start_unix_ns, end_unix_ns, histogram \
             FROM metric_intervals WHERE cell_id = ?1 ORDER BY name, cpu, end_ns",
            [cell.0],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )
        .map_err(|e| self.sql("reading the intervals", e))
    }

    /// A row's bounds, checked.
    fn span(&self, row: &IntervalRow) -> Result<Span> {
        let (_, _, start, end, start_unix, end_unix, _) = row;
        Ok(Span {
            start: self.nanos(*start, "an interval's start")?,
            end: self.nanos(*end, "an interval's end")?,
            start_unix: self.nanos(*start_unix, "an interval's start")?,
            end_unix: self.nanos(*end_unix, "an interval's end")?,
        })
    }

    /// Deletes the intervals of `run` that ended before `before` (Unix
    /// time): the monitor's retention, as for its timeline seconds. Returns
    /// how many.
    pub fn prune_intervals(&mut self, run: RunId, before: Nanos) -> Result<usize> {
        let before = to_sql(before.0, "a retention limit")?;
        self.db
            .execute(
                "DELETE FROM metric_intervals WHERE end_unix_ns < ?2 \
                 AND cell_id IN (SELECT id FROM cells WHERE run_id = ?1)",
                params![run.0, before],
            )
            .map_err(|e| self.sql("deleting old intervals", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::ZlibEncoder;
    use flate2::Compression;
    use std::io::Write;

    #[test]
    fn blobs_round_trip_and_lsh1_reads_as_it_is() {
        let mut h = Histogram::new();
        for k in 0..5_000u64 {
            h.record(7_000 + (k * 7919) % 90_000);
        }
        let blob = encode(&h);
        assert!(blob.len() < h.to_bytes().len() / 2, "{}", blob.len());
        assert_eq!(decode(&blob).unwrap(), h);
        assert_eq!(decode(&h.to_bytes()).unwrap(), h);
        assert!(decode(b"not a histogram").is_err());
        // A blob that inflates past the bound is refused, not read whole.
        let mut enc = ZlibEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&vec![0u8; 2 << 20]).unwrap();
        let bomb = enc.finish().unwrap();
        assert!(decode(&bomb).unwrap_err().contains("more than 1 MiB"));
        // The same for the inflater of many blobs, one after another.
        let mut many = Inflater::new();
        assert_eq!(many.inflate(&blob).unwrap(), &h.to_bytes()[..]);
        let e = many.inflate(&bomb).unwrap_err();
        assert!(e.contains("more than 1 MiB"), "{e}");
        assert_eq!(many.inflate(&blob).unwrap(), &h.to_bytes()[..]);
        assert!(many.inflate(&blob[..blob.len() / 2]).is_err(), "truncated");
        assert!(many.inflate(b"not a histogram").is_err());
    }
}
