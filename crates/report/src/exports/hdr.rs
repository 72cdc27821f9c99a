//! An HdrHistogram interval log (format version 1.3), as Java's
//! `HistogramLogWriter` writes it and `HistogramLogProcessor` reads it: one
//! interval per checkpoint for the metrics whose checkpoint intervals the
//! store keeps (as jHiccup logs one per reporting interval), one per cell
//! for the others and for runs stored without them; each a base64 V2
//! deflate-compressed histogram tagged `metric/cpu`.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use latscope_stats::{CellResult, Histogram, IntervalSeries, RunResult};

use super::{cpu_label, ExportError};

/// The unit of the values in the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum HdrUnit {
    /// Nanoseconds.
    ///
    /// latscope's own unit (the HdrHistogram tools' default output ratio
    /// of 1e6 then prints milliseconds).
    #[default]
    #[cfg_attr(feature = "clap", value(name = "ns"))]
    Nanos,
    /// Microseconds.
    ///
    /// Whole microseconds (truncated).
    #[cfg_attr(feature = "clap", value(name = "us"))]
    Micros,
}

impl HdrUnit {
    fn divisor(self) -> u64 {
        match self {
            HdrUnit::Nanos => 1,
            HdrUnit::Micros => 1000,
        }
    }
    fn name(self) -> &'static str {
        match self {
            HdrUnit::Nanos => "nanoseconds",
            HdrUnit::Micros => "microseconds",
        }
    }
}

/// latscope's histogram as an `hdrhistogram` one: each recording bucket's
/// count at its lowest value (the layouts agree: 1 ns unit, 3 significant
/// digits), divided into `unit`.
pub fn to_hdr(h: &Histogram, unit: HdrUnit) -> Result<hdrhistogram::Histogram<u64>, ExportError> {
    let mut out =
        hdrhistogram::Histogram::<u64>::new(3).map_err(|e| ExportError::Hdr(e.to_string()))?;
    for (low, _high, count) in h.buckets() {
        out.record_n(low / unit.divisor(), count)
            .map_err(|e| ExportError::Hdr(e.to_string()))?;
    }
    Ok(out)
}

/// Replaces the characters an interval-log tag may not hold.
fn tag_text(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, ',' | ' ' | '\r' | '\n') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The run as an HdrHistogram interval log with one interval per cell and
/// metric: [`hdr_checkpoint_log`] without checkpoint intervals, for runs
/// stored before latscope kept them, and imported runs.
pub fn hdr_interval_log(run: &RunResult, unit: HdrUnit) -> Result<String, ExportError> {
    hdr_checkpoint_log(run, &[], unit)
}

/// One line of the log before it is written.
struct Line {
    /// From the first cell's start.
    start: Duration,
    length: Duration,
    tag: String,
    histogram: hdrhistogram::Histogram<u64>,
}

/// The run as an HdrHistogram interval log: `#[...]` comment lines, then
/// `#[StartTime: ...]` and `#[BaseTime: ...]` (the run's wall-clock start),
/// the legend line, and interval lines `Tag=metric/cpu,start,length,max,histogram`
/// (start and length in seconds, tags shared by the cells of a suite, a
/// `#[cell ...]` comment before each cell's lines).
///
/// A metric of a cell with checkpoint intervals in `intervals` (the
/// store's, [`IntervalSeries::cell`] naming the cell) gets one line per
/// interval, as jHiccup writes one per reporting interval: its start is
/// the cell's start relative to the first cell's plus the interval's start
/// in the cell's measured time, its length the interval's. Every other
/// metric with samples gets one line for the whole cell, starting at the
/// cell's start, lasting its measured duration. Within a cell, lines are in
/// time order; a series with samples writes its empty intervals too (a
/// reader sees the time without samples), a series without any is left out.
pub fn hdr_checkpoint_log(
    run: &RunResult,
    intervals: &[IntervalSeries],
    unit: HdrUnit,
) -> Result<String, ExportError> {
    let mut header = String::new();
    let _ = writeln!(
        header,
        "#[Logged with latscope {}: run {} on {}]",
        run.meta.tool_version, run.meta.id, run.meta.hostname
    );
    let _ = writeln!(header, "#[Histogram log format version 1.3]");
    let _ = writeln!(header, "#[Values in {}]", unit.name());
    let start_s = run.meta.started_unix_ns.as_secs_f64();
    let _ = writeln!(header, "#[StartTime: {start_s:.3} (seconds since epoch)]");
    let _ = writeln!(header, "#[BaseTime: {start_s:.3} (seconds since epoch)]");
    header.push_str(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    let mut bytes = header.into_bytes();
    let first = run
        .cells
        .iter()
        .map(|c| c.meta.monotonic_start_ns.as_u64())
        .min()
        .unwrap_or(0);
    let mut serializer = V2DeflateSerializer::new();
    let mut any = false;
    {
        let builder = IntervalLogWriterBuilder::new();
        let mut log = builder
            .begin_log_with(&mut bytes, &mut serializer)
            .map_err(|e| ExportError::Hdr(e.to_string()))?;
        for cell in &run.cells {
            let offset =
                Duration::from_nanos(cell.meta.monotonic_start_ns.as_u64().saturating_sub(first));
            let (lines, per_checkpoint) = cell_lines(cell, intervals, offset, unit)?;
            log.write_comment(&format!(
                "[cell {}: probe {}, workload {}]",
                cell.meta.index, cell.meta.probe, cell.meta.workload
            ))
            .map_err(|e| ExportError::Hdr(e.to_string()))?;
            if !per_checkpoint.is_empty() {
                log.write_comment(&format!(
                    "[cell {}: one interval per checkpoint for {}; one for the whole cell for the other metrics]",
                    cell.meta.index,
                    per_checkpoint.join(" ")
                ))
                .map_err(|e| ExportError::Hdr(e.to_string()))?;
            }
            for l in &lines {
                log.write_histogram(&l.histogram, l.start, l.length, Tag::new(&l.tag))
                    .map_err(|e| ExportError::Hdr(e.to_string()))?;
                any = true;
            }
        }
    }
    if !any {
        return Err(ExportError::NoData(format!(
            "run {} has no samples, so there is no HdrHistogram log to export",
            run.meta.id
        )));
    }
    String::from_utf8(bytes).map_err(|e| ExportError::Hdr(e.to_string()))
}

/// A cell's lines in time order, and the metrics written per checkpoint.
fn cell_lines(
    cell: &CellResult,
    intervals: &[IntervalSeries],
    offset: Duration,
    unit: HdrUnit,
) -> Result<(Vec<Line>, Vec<String>), ExportError> {
    let mut lines = Vec::new();
    let mut per_checkpoint: Vec<String> = Vec::new();
    for m in cell.metrics.iter().filter(|m| !m.histogram.is_empty()) {
        let tag = tag_text(&format!("{}/{}", m.name, cpu_label(m.cpu)));
        let series = intervals.iter().find(|s| {
            s.cell == cell.meta.index
                && s.metric == m.name
                && s.cpu == m.cpu
                && s.intervals.iter().any(|i| !i.histogram.is_empty())
        });
        match series {
            Some(s) => {
                if !per_checkpoint.contains(&m.name) {
                    per_checkpoint.push(m.name.clone());
                }
                for i in &s.intervals {
                    lines.push(Line {
                        start: offset + Duration::from_nanos(i.start.as_u64()),
                        length: Duration::from_nanos(i.length().as_u64()),
                        tag: tag.clone(),
                        histogram: to_hdr(&i.histogram, unit)?,
                    });
                }
            }
            None => lines.push(Line {
                start: offset,
                length: Duration::from_nanos(cell.meta.duration_ns.as_u64()),
                tag,
                histogram: to_hdr(&m.histogram, unit)?,
            }),
        }
    }
    // Stable: lines of the same start keep the metrics' order.
    lines.sort_by_key(|l| l.start);
    Ok((lines, per_checkpoint))
}
